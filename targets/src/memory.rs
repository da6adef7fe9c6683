//! [`Memory`]: loads, stores, fences and atomics with explicit ordering and scope, the
//! vocabulary of the FIFO protocols between GPUs (and between a GPU and a host proxy).
//!
//! | call                          | PTX (nvptx backend)              | meaning                               |
//! |-------------------------------|----------------------------------|---------------------------------------|
//! | `load_volatile(p)`            | `ld.volatile.u32`                | a fresh read, no ordering             |
//! | `load_relaxed(p, s)`          | `ld.relaxed.{s}.u32`             | atomic read, no ordering              |
//! | `load_acquire(p, s)`          | `ld.acquire.{s}.u32`             | later accesses stay after it          |
//! | `store_release(p, v, s)`      | `st.release.{s}.u32`             | earlier accesses stay before it       |
//! | `fence_acq_rel(s)`            | `fence.acq_rel.{s}`              | acquire + release fence               |
//! | `atomic_add/cas(.., o, s)`    | `atom.{o}.{s}.add/cas`           | read-modify-write                     |
//!
//! `s` is a [`Scope`]: which threads the ordering is promised to (`Block`: `cta`, `Gpu`: `gpu`,
//! `System`: `sys`, which includes peer GPUs and the host). The amdgpu backend implements every
//! scope with system scope (stronger, never weaker); the simulator with host atomics.
//!
//! All pointer arguments are generic addresses. Every function is `unsafe`: the caller promises
//! that `p` is valid for the access, aligned to `size_of::<T>()`, and that every concurrent access
//! to the location is atomic or volatile.

/// Which threads an ordering is promised to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Threads of the same block (`.cta`).
    Block,
    /// Threads of the same GPU (`.gpu`).
    Gpu,
    /// All threads of the system: peer GPUs and host threads (`.sys`).
    System,
}

/// Memory ordering of a read-modify-write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomicOrder {
    /// No ordering beyond atomicity.
    Relaxed,
    /// Later accesses stay after it.
    Acquire,
    /// Earlier accesses stay before it.
    Release,
    /// Both.
    AcqRel,
}

/// The machine type of an [`Atom`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomKind {
    /// 32-bit.
    U32,
    /// 64-bit.
    U64,
}

/// Types that ordered memory operations act on: `u32` and `u64`.
pub trait Atom: Copy + sealed::Sealed {
    /// Which machine type this is.
    const KIND: AtomKind;
    /// The bits, zero-extended.
    fn to_u64(self) -> u64;
    /// The value from the low bits (the inverse of [`Atom::to_u64`]).
    fn from_u64(v: u64) -> Self;
}
mod sealed {
    pub trait Sealed {}
    impl Sealed for u32 {}
    impl Sealed for u64 {}
}
impl Atom for u32 {
    const KIND: AtomKind = AtomKind::U32;
    #[inline(always)]
    fn to_u64(self) -> u64 {
        self as u64
    }
    #[inline(always)]
    fn from_u64(v: u64) -> Self {
        v as u32
    }
}
impl Atom for u64 {
    const KIND: AtomKind = AtomKind::U64;
    #[inline(always)]
    fn to_u64(self) -> u64 {
        self
    }
    #[inline(always)]
    fn from_u64(v: u64) -> Self {
        v
    }
}

/// Ordered memory operations (see the module table).
pub trait Memory: Copy {
    /// How many polls of a flag a spinning thread makes between reads of the words that change
    /// once in a long while (an abort word, the clock). On a GPU a poll is one load, and a remote
    /// word read on every poll doubles a spinner's traffic: 256. On the simulator a poll that
    /// finds nothing is a trip through the lane scheduler and an OS yield (milliseconds on a busy
    /// machine), so the extra reads cost nothing and every poll checks: 1.
    const POLLS_PER_CHECK: u32;
    /// Volatile read.
    ///
    /// # Safety
    /// `p` is valid for reads and aligned; concurrent writers use atomic or volatile stores.
    unsafe fn load_volatile<T: Atom>(self, p: *const T) -> T;
    /// Relaxed atomic read at `scope`.
    ///
    /// # Safety
    /// As [`Memory::load_volatile`].
    unsafe fn load_relaxed<T: Atom>(self, p: *const T, scope: Scope) -> T;
    /// Acquire read at `scope`.
    ///
    /// # Safety
    /// As [`Memory::load_volatile`].
    unsafe fn load_acquire<T: Atom>(self, p: *const T, scope: Scope) -> T;
    /// Volatile write.
    ///
    /// # Safety
    /// `p` is valid for writes and aligned; concurrent accesses are atomic or volatile.
    unsafe fn store_volatile<T: Atom>(self, p: *mut T, v: T);
    /// Relaxed atomic write at `scope`.
    ///
    /// # Safety
    /// As [`Memory::store_volatile`].
    unsafe fn store_relaxed<T: Atom>(self, p: *mut T, v: T, scope: Scope);
    /// Release write at `scope`.
    ///
    /// # Safety
    /// As [`Memory::store_volatile`].
    unsafe fn store_release<T: Atom>(self, p: *mut T, v: T, scope: Scope);
    /// Acquire-release fence at `scope`.
    fn fence_acq_rel(self, scope: Scope);
    /// `*p += v`, returning the old value.
    ///
    /// # Safety
    /// As [`Memory::store_volatile`], and every concurrent access is atomic.
    unsafe fn atomic_add<T: Atom>(self, p: *mut T, v: T, order: AtomicOrder, scope: Scope) -> T;
    /// If `*p == current` then `*p = new`; returns the old value either way.
    ///
    /// # Safety
    /// As [`Memory::atomic_add`].
    unsafe fn atomic_cas<T: Atom>(self, p: *mut T, current: T, new: T, order: AtomicOrder, scope: Scope) -> T;
}

impl AtomicOrder {
    /// The core ordering of a read-modify-write with this order.
    pub fn to_core(self) -> core::sync::atomic::Ordering {
        use core::sync::atomic::Ordering;
        match self {
            AtomicOrder::Relaxed => Ordering::Relaxed,
            AtomicOrder::Acquire => Ordering::Acquire,
            AtomicOrder::Release => Ordering::Release,
            AtomicOrder::AcqRel => Ordering::AcqRel,
        }
    }
    /// The core ordering of a failed compare-exchange with this order (no release part).
    pub fn to_core_failure(self) -> core::sync::atomic::Ordering {
        use core::sync::atomic::Ordering;
        match self {
            AtomicOrder::Relaxed | AtomicOrder::Release => Ordering::Relaxed,
            AtomicOrder::Acquire | AtomicOrder::AcqRel => Ordering::Acquire,
        }
    }
}

/// Runs `on32` or `on64` on the core atomic that views `*p`, by `T`'s kind: the shared core of
/// the backends that implement [`Memory`] with core atomics (amdgpu, sim).
///
/// # Safety
/// `p` is valid, aligned, and only accessed atomically while the closure runs.
#[cfg(any(feature = "sim", target_arch = "amdgpu"))]
#[inline(always)]
pub(crate) unsafe fn with_core_atomic<T: Atom>(
    p: *const T,
    on32: impl FnOnce(&core::sync::atomic::AtomicU32) -> u32,
    on64: impl FnOnce(&core::sync::atomic::AtomicU64) -> u64,
) -> T {
    use core::sync::atomic::{AtomicU32, AtomicU64};
    match T::KIND {
        AtomKind::U32 => T::from_u64(on32(AtomicU32::from_ptr(p as *mut u32)) as u64),
        AtomKind::U64 => T::from_u64(on64(AtomicU64::from_ptr(p as *mut u64))),
    }
}

/// [`Memory`]'s atomic operations on core atomics: `impl_core_atomics!()` inside an
/// `impl Memory for X` block (amdgpu, sim).
#[cfg(any(feature = "sim", target_arch = "amdgpu"))]
macro_rules! impl_core_atomics {
    () => {
        unsafe fn atomic_add<T: Atom>(self, p: *mut T, v: T, order: AtomicOrder, _scope: Scope) -> T {
            let (o, x) = (order.to_core(), v.to_u64());
            $crate::memory::with_core_atomic(p, |a| a.fetch_add(x as u32, o), |a| a.fetch_add(x, o))
        }
        unsafe fn atomic_cas<T: Atom>(self, p: *mut T, current: T, new: T, order: AtomicOrder, _scope: Scope) -> T {
            let (o, f) = (order.to_core(), order.to_core_failure());
            let (c, n) = (current.to_u64(), new.to_u64());
            $crate::memory::with_core_atomic(
                p,
                |a| {
                    a.compare_exchange(c as u32, n as u32, o, f)
                        .unwrap_or_else(|old| old)
                },
                |a| a.compare_exchange(c, n, o, f).unwrap_or_else(|old| old),
            )
        }
    };
}
#[cfg(any(feature = "sim", target_arch = "amdgpu"))]
pub(crate) use impl_core_atomics;
