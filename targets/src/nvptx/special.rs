//! Special registers, the block barrier and dynamic shared memory.

use super::NvptxWarp;
use crate::{Grid, SharedMem};
use core::arch::{asm, global_asm, nvptx};

// The launch-sized shared buffer: one `.extern .shared` array at module scope.
global_asm!(".extern .shared .align 16 .b8 zc_dynamic_smem[];");

impl Grid for NvptxWarp {
    #[inline(always)]
    fn thread_idx(self) -> u32 {
        // SAFETY: reading a special register has no preconditions inside a kernel.
        unsafe { nvptx::_thread_idx_x() as u32 }
    }
    #[inline(always)]
    fn block_dim(self) -> u32 {
        // SAFETY: as above.
        unsafe { nvptx::_block_dim_x() as u32 }
    }
    #[inline(always)]
    fn block_idx(self) -> u32 {
        // SAFETY: as above.
        unsafe { nvptx::_block_idx_x() as u32 }
    }
    #[inline(always)]
    fn grid_dim(self) -> u32 {
        // SAFETY: as above.
        unsafe { nvptx::_grid_dim_x() as u32 }
    }
    #[inline(always)]
    fn block_sync(self) {
        // SAFETY: a barrier; every non-exited thread of the block must reach it (caller's contract
        // for block_sync, as in CUDA).
        unsafe { nvptx::_syncthreads() }
    }
    #[inline(always)]
    fn clock_ns(self) -> u64 {
        let t: u64;
        // SAFETY: reads the %globaltimer special register; no memory is accessed.
        unsafe { asm!("mov.u64 {t}, %globaltimer;", t = out(reg64) t, options(nomem, nostack)) };
        t
    }
}

impl SharedMem for NvptxWarp {
    #[inline(always)]
    fn shared_mem(self) -> (*mut u8, u32) {
        let (size, base): (u32, u64);
        // SAFETY: reads %dynamic_smem_size and converts the shared-window address of the
        // module's extern shared array to a generic pointer; no memory is accessed.
        unsafe {
            asm!("mov.u32 {s}, %dynamic_smem_size;", s = out(reg32) size, options(pure, nomem, nostack));
            asm!("cvta.shared.u64 {p}, zc_dynamic_smem;", p = out(reg64) base, options(pure, nomem, nostack));
        }
        (base as *mut u8, size)
    }
}

impl crate::Thread for NvptxWarp {
    #[inline(always)]
    fn mul_hi(self, a: u32, b: u32) -> u32 {
        let r: u32;
        // SAFETY: arithmetic on registers only.
        unsafe {
            asm!("mul.hi.u32 {r}, {a}, {b};", r = out(reg32) r, a = in(reg32) a, b = in(reg32) b, options(pure, nomem, nostack))
        };
        r
    }
    #[inline(always)]
    fn byte_perm(self, a: u32, b: u32, sel: u32) -> u32 {
        let r: u32;
        // SAFETY: arithmetic on registers only. `sel & 0x7777` keeps PTX's sign-replicate bits off.
        unsafe {
            asm!("prmt.b32 {r}, {a}, {b}, {s};", r = out(reg32) r, a = in(reg32) a, b = in(reg32) b,
                 s = in(reg32) sel & 0x7777, options(pure, nomem, nostack))
        };
        r
    }
}
