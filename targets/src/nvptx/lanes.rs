//! Warp operations: `shfl.sync`, `vote.sync`, `match.any.sync` and `bar.warp.sync` through LLVM's
//! NVPTX intrinsics (see `intrinsics`), `%laneid` and `activemask` through `asm!`.

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
        // SAFETY: every lane in `mask` executes a sync with the same mask (the trait's contract).
        unsafe { intrinsics::bar_warp_sync(mask as u32) }
    }
    #[inline(always)]
    fn shfl_idx_u32(self, mask: LaneMask, v: u32, src: u32) -> u32 {
        // SAFETY: as `sync`.
        unsafe { intrinsics::shfl_idx(mask as u32, v, src, 0x1f) }
    }
    #[inline(always)]
    fn shfl_xor_u32(self, mask: LaneMask, v: u32, lane_mask: u32) -> u32 {
        // SAFETY: as `sync`.
        unsafe { intrinsics::shfl_bfly(mask as u32, v, lane_mask, 0x1f) }
    }
    #[inline(always)]
    fn shfl_up_u32(self, mask: LaneMask, v: u32, delta: u32) -> u32 {
        // SAFETY: as `sync`.
        unsafe { intrinsics::shfl_up(mask as u32, v, delta, 0) }
    }
    #[inline(always)]
    fn ballot(self, mask: LaneMask, pred: bool) -> LaneMask {
        // SAFETY: as `sync`.
        unsafe { intrinsics::vote_ballot(mask as u32, pred) as LaneMask }
    }
}

/// The warp operations as LLVM's NVPTX intrinsics rather than `asm!`: LLVM knows them as
/// `convergent`, so it never duplicates one into divergent paths. With `asm!` it did: the block
/// ExpAns decoder got two copies of one `vote.sync`, one for the lanes that held a symbol and
/// one for those that did not, and hung on the H200 (lanes of one warp at different warp
/// operations).
mod intrinsics {
    unsafe extern "C" {
        /// `shfl.sync.idx.b32`.
        #[link_name = "llvm.nvvm.shfl.sync.idx.i32"]
        pub fn shfl_idx(mask: u32, v: u32, src: u32, clamp: u32) -> u32;
        /// `shfl.sync.bfly.b32`.
        #[link_name = "llvm.nvvm.shfl.sync.bfly.i32"]
        pub fn shfl_bfly(mask: u32, v: u32, lane_mask: u32, clamp: u32) -> u32;
        /// `shfl.sync.up.b32`.
        #[link_name = "llvm.nvvm.shfl.sync.up.i32"]
        pub fn shfl_up(mask: u32, v: u32, delta: u32, clamp: u32) -> u32;
        /// `vote.sync.ballot.b32`.
        #[link_name = "llvm.nvvm.vote.ballot.sync"]
        pub fn vote_ballot(mask: u32, pred: bool) -> u32;
        /// `bar.warp.sync`.
        #[link_name = "llvm.nvvm.bar.warp.sync"]
        pub fn bar_warp_sync(mask: u32);
    }
}
