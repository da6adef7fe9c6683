//! Loads, stores, fences and atomics through core atomics and volatile accesses (system scope).

use super::Wave;
use crate::memory::{impl_core_atomics, with_core_atomic};
use crate::{Atom, AtomicOrder, Memory, Scope};
use core::sync::atomic::{fence, Ordering};

impl<const W: u32> Memory for Wave<W> {
    const POLLS_PER_CHECK: u32 = 256;
    #[inline(always)]
    unsafe fn load_volatile<T: Atom>(self, p: *const T) -> T {
        p.read_volatile()
    }
    #[inline(always)]
    unsafe fn load_relaxed<T: Atom>(self, p: *const T, _scope: Scope) -> T {
        with_core_atomic(p, |a| a.load(Ordering::Relaxed), |a| a.load(Ordering::Relaxed))
    }
    #[inline(always)]
    unsafe fn load_acquire<T: Atom>(self, p: *const T, _scope: Scope) -> T {
        with_core_atomic(p, |a| a.load(Ordering::Acquire), |a| a.load(Ordering::Acquire))
    }
    #[inline(always)]
    unsafe fn store_volatile<T: Atom>(self, p: *mut T, v: T) {
        p.write_volatile(v)
    }
    #[inline(always)]
    unsafe fn store_relaxed<T: Atom>(self, p: *mut T, v: T, _scope: Scope) {
        let x = v.to_u64();
        with_core_atomic(
            p,
            |a| {
                a.store(x as u32, Ordering::Relaxed);
                0
            },
            |a| {
                a.store(x, Ordering::Relaxed);
                0
            },
        );
    }
    #[inline(always)]
    unsafe fn store_release<T: Atom>(self, p: *mut T, v: T, _scope: Scope) {
        let x = v.to_u64();
        with_core_atomic(
            p,
            |a| {
                a.store(x as u32, Ordering::Release);
                0
            },
            |a| {
                a.store(x, Ordering::Release);
                0
            },
        );
    }
    #[inline(always)]
    fn fence_acq_rel(self, _scope: Scope) {
        fence(Ordering::AcqRel)
    }
    impl_core_atomics!();
}
