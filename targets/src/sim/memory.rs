//! Ordered memory operations of the simulator: host atomics (every scope is the host's).
//!
//! Loads also yield the lane to the scheduler, so that a lane spinning on a flag lets the
//! lane that will set it run (lanes of a block share one OS thread).

use super::scheduler::{park, Park};
use super::SimWarp;
use crate::{Atom, AtomKind, AtomicOrder, Memory, Scope};
use core::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

fn rmw_ordering(o: AtomicOrder) -> Ordering {
    match o {
        AtomicOrder::Relaxed => Ordering::Relaxed,
        AtomicOrder::Acquire => Ordering::Acquire,
        AtomicOrder::Release => Ordering::Release,
        AtomicOrder::AcqRel => Ordering::AcqRel,
    }
}

/// The failure ordering that goes with `o` in a compare-exchange.
fn cas_failure_ordering(o: AtomicOrder) -> Ordering {
    match o {
        AtomicOrder::Relaxed | AtomicOrder::Release => Ordering::Relaxed,
        AtomicOrder::Acquire | AtomicOrder::AcqRel => Ordering::Acquire,
    }
}

/// Runs `f32`/`f64` on the atomic view of `p` that matches `T`.
///
/// # Safety
/// `p` is valid, aligned and only accessed atomically while the reference lives.
#[inline(always)]
unsafe fn with_atomic<T: Atom>(
    p: *const T,
    f32: impl FnOnce(&AtomicU32) -> u32,
    f64: impl FnOnce(&AtomicU64) -> u64,
) -> T {
    match T::KIND {
        AtomKind::U32 => T::from_u64(f32(AtomicU32::from_ptr(p as *mut u32)) as u64),
        AtomKind::U64 => T::from_u64(f64(AtomicU64::from_ptr(p as *mut u64))),
    }
}

unsafe fn load<T: Atom>(p: *const T, o: Ordering) -> T {
    let v = with_atomic(p, |a| a.load(o), |a| a.load(o));
    park(Park::Poll);
    v
}

unsafe fn store<T: Atom>(p: *mut T, v: T, o: Ordering) {
    let x = v.to_u64();
    with_atomic(p, |a| {
        a.store(x as u32, o);
        0
    }, |a| {
        a.store(x, o);
        0
    });
}

impl<const W: u32> Memory for SimWarp<W> {
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
    fn fence_sc(self, _scope: Scope) {
        fence(Ordering::SeqCst)
    }
    unsafe fn atomic_add<T: Atom>(self, p: *mut T, v: T, order: AtomicOrder, _scope: Scope) -> T {
        let (o, x) = (rmw_ordering(order), v.to_u64());
        with_atomic(p, |a| a.fetch_add(x as u32, o), |a| a.fetch_add(x, o))
    }
    unsafe fn atomic_cas<T: Atom>(self, p: *mut T, current: T, new: T, order: AtomicOrder, _scope: Scope) -> T {
        let (o, f) = (rmw_ordering(order), cas_failure_ordering(order));
        let (c, n) = (current.to_u64(), new.to_u64());
        with_atomic(
            p,
            |a| a.compare_exchange(c as u32, n as u32, o, f).unwrap_or_else(|old| old),
            |a| a.compare_exchange(c, n, o, f).unwrap_or_else(|old| old),
        )
    }
    unsafe fn atomic_exch<T: Atom>(self, p: *mut T, v: T, order: AtomicOrder, _scope: Scope) -> T {
        let (o, x) = (rmw_ordering(order), v.to_u64());
        with_atomic(p, |a| a.swap(x as u32, o), |a| a.swap(x, o))
    }
}
