//! Thread position and the workgroup barrier.

use super::Wave;
use crate::Grid;
use core::arch::amdgpu;
use core::sync::atomic::{fence, Ordering};

impl<const W: u32> Grid for Wave<W> {
    #[inline(always)]
    fn thread_idx(self) -> u32 {
        amdgpu::workitem_id_x()
    }
    #[inline(always)]
    fn block_dim(self) -> u32 {
        self.block_dim
    }
    #[inline(always)]
    fn block_idx(self) -> u32 {
        amdgpu::workgroup_id_x()
    }
    #[inline(always)]
    fn grid_dim(self) -> u32 {
        self.grid_dim
    }
    #[inline(always)]
    fn block_sync(self) {
        fence(Ordering::Release);
        amdgpu::s_barrier();
        fence(Ordering::Acquire);
    }
    #[inline(always)]
    fn clock_ns(self) -> u64 {
        // the constant 100 MHz real-time counter of gfx9 and later
        amdgpu::s_memrealtime() * 10
    }
}

impl<const W: u32> crate::Thread for Wave<W> {}
