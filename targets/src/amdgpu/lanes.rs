//! Wavefront operations: shuffles through `ds_bpermute`, votes through `ballot`.

use super::Wave;
use crate::{LaneMask, Lanes};
use core::arch::amdgpu;
use core::sync::atomic::{fence, Ordering};

impl<const W: u32> Wave<W> {
    /// `v` from lane `src` (`src < W`) of the wavefront.
    #[inline(always)]
    fn permute(self, v: u32, src: u32) -> u32 {
        // SAFETY: ds_bpermute reads lane `src` of the wavefront; `src < W` by the callers.
        unsafe { amdgpu::ds_bpermute(src << 2, v) }
    }
}

impl<const W: u32> Lanes for Wave<W> {
    const WIDTH: u32 = {
        assert!(W == 32 || W == 64, "AMD wavefronts have 32 or 64 lanes");
        W
    };
    #[inline(always)]
    fn lane_id(self) -> u32 {
        let lo = amdgpu::mbcnt_lo(u32::MAX, 0);
        if W == 64 {
            amdgpu::mbcnt_hi(u32::MAX, lo)
        } else {
            lo
        }
    }
    #[inline(always)]
    fn active_mask(self) -> LaneMask {
        amdgpu::ballot(true)
    }
    #[inline(always)]
    fn sync(self, _mask: LaneMask) {
        fence(Ordering::Release);
        amdgpu::wave_barrier();
        fence(Ordering::Acquire);
    }
    #[inline(always)]
    fn shfl_idx_u32(self, _mask: LaneMask, v: u32, src: u32) -> u32 {
        self.permute(v, src % W)
    }
    #[inline(always)]
    fn shfl_xor_u32(self, _mask: LaneMask, v: u32, lane_mask: u32) -> u32 {
        let lane = self.lane_id();
        let src = lane ^ lane_mask;
        self.permute(v, if src < W { src } else { lane })
    }
    #[inline(always)]
    fn shfl_up_u32(self, _mask: LaneMask, v: u32, delta: u32) -> u32 {
        let lane = self.lane_id();
        self.permute(v, if lane >= delta { lane - delta } else { lane })
    }
    #[inline(always)]
    fn ballot(self, mask: LaneMask, pred: bool) -> LaneMask {
        amdgpu::ballot(pred) & mask
    }
}
