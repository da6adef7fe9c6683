//! Ordered memory operations of the simulator: host atomics (every scope is the host's).
//!
//! Loads also yield the lane to the scheduler, so that a lane spinning on a flag lets the
//! lane that will set it run (lanes of a block share one OS thread).

use super::scheduler::{park, Park};
use super::SimWarp;
use crate::memory::{impl_core_atomics, with_core_atomic};
use crate::{Atom, AtomicOrder, Memory, Scope};
use core::sync::atomic::{fence, Ordering};

/// Atomic load of `*p`, then a yield to the other lanes.
///
/// # Safety
/// As [`Memory::load_acquire`].
unsafe fn load<T: Atom>(p: *const T, o: Ordering) -> T {
    let v = with_core_atomic(p, |a| a.load(o), |a| a.load(o));
    park(Park::Poll);
    v
}

/// Atomic store of `v` to `*p`.
///
/// # Safety
/// As [`Memory::store_release`].
unsafe fn store<T: Atom>(p: *mut T, v: T, o: Ordering) {
    let x = v.to_u64();
    with_core_atomic(
        p,
        |a| {
            a.store(x as u32, o);
            0
        },
        |a| {
            a.store(x, o);
            0
        },
    );
}

impl<const W: u32> Memory for SimWarp<W> {
    const POLLS_PER_CHECK: u32 = 1;
    unsafe fn load_volatile<T: Atom>(self, p: *const T) -> T {
        load(p, Ordering::Relaxed)
    }
    unsafe fn load_relaxed<T: Atom>(self, p: *const T, _scope: Scope) -> T {
        load(p, Ordering::Relaxed)
    }
    unsafe fn load_acquire<T: Atom>(self, p: *const T, _scope: Scope) -> T {
        load(p, Ordering::Acquire)
    }
    unsafe fn store_volatile<T: Atom>(self, p: *mut T, v: T) {
        store(p, v, Ordering::Relaxed)
    }
    unsafe fn store_relaxed<T: Atom>(self, p: *mut T, v: T, _scope: Scope) {
        store(p, v, Ordering::Relaxed)
    }
    unsafe fn store_release<T: Atom>(self, p: *mut T, v: T, _scope: Scope) {
        store(p, v, Ordering::Release)
    }
    fn fence_acq_rel(self, _scope: Scope) {
        fence(Ordering::AcqRel)
    }
    impl_core_atomics!();
}
