//! Warp operations: `shfl.sync`, `vote.sync`, `match.any.sync`, `activemask`, `bar.warp.sync`.

use super::NvptxWarp;
use crate::{LaneMask, Lanes};
use core::arch::asm;

impl Lanes for NvptxWarp {
    const WIDTH: u32 = 32;

    #[inline(always)]
    fn lane_id(self) -> u32 {
        let r: u32;
        // SAFETY: reads %laneid.
        unsafe { asm!("mov.u32 {r}, %laneid;", r = out(reg32) r) };
        r
    }
    #[inline(always)]
    fn active_mask(self) -> LaneMask {
        let r: u32;
        // SAFETY: reads the mask of converged lanes.
        unsafe { asm!("activemask.b32 {r};", r = out(reg32) r) };
        r as LaneMask
    }
    #[inline(always)]
    fn sync(self, mask: LaneMask) {
        // SAFETY: every lane in `mask` executes the same sync (the trait's contract).
        unsafe { asm!("bar.warp.sync {m};", m = in(reg32) mask as u32) };
    }
    #[inline(always)]
    fn shfl_idx_u32(self, mask: LaneMask, v: u32, src: u32) -> u32 {
        let r: u32;
        // SAFETY: as `sync`.
        unsafe {
            asm!("shfl.sync.idx.b32 {r}, {v}, {s}, 0x1f, {m};",
                 r = out(reg32) r, v = in(reg32) v, s = in(reg32) src, m = in(reg32) mask as u32)
        };
        r
    }
    #[inline(always)]
    fn shfl_xor_u32(self, mask: LaneMask, v: u32, lane_mask: u32) -> u32 {
        let r: u32;
        // SAFETY: as `sync`.
        unsafe {
            asm!("shfl.sync.bfly.b32 {r}, {v}, {s}, 0x1f, {m};",
                 r = out(reg32) r, v = in(reg32) v, s = in(reg32) lane_mask, m = in(reg32) mask as u32)
        };
        r
    }
    #[inline(always)]
    fn shfl_up_u32(self, mask: LaneMask, v: u32, delta: u32) -> u32 {
        let r: u32;
        // SAFETY: as `sync`.
        unsafe {
            asm!("shfl.sync.up.b32 {r}, {v}, {s}, 0x0, {m};",
                 r = out(reg32) r, v = in(reg32) v, s = in(reg32) delta, m = in(reg32) mask as u32)
        };
        r
    }
    #[inline(always)]
    fn shfl_down_u32(self, mask: LaneMask, v: u32, delta: u32) -> u32 {
        let r: u32;
        // SAFETY: as `sync`.
        unsafe {
            asm!("shfl.sync.down.b32 {r}, {v}, {s}, 0x1f, {m};",
                 r = out(reg32) r, v = in(reg32) v, s = in(reg32) delta, m = in(reg32) mask as u32)
        };
        r
    }
    #[inline(always)]
    fn ballot(self, mask: LaneMask, pred: bool) -> LaneMask {
        let r: u32;
        // SAFETY: as `sync`.
        unsafe {
            asm!("{{ .reg .pred p; setp.ne.u32 p, {x}, 0; vote.sync.ballot.b32 {r}, p, {m}; }}",
                 r = out(reg32) r, x = in(reg32) pred as u32, m = in(reg32) mask as u32)
        };
        r as LaneMask
    }
    #[inline(always)]
    fn match_any_u32(self, mask: LaneMask, v: u32) -> LaneMask {
        let r: u32;
        // SAFETY: as `sync`.
        unsafe {
            asm!("match.any.sync.b32 {r}, {v}, {m};", r = out(reg32) r, v = in(reg32) v, m = in(reg32) mask as u32)
        };
        r as LaneMask
    }
}
