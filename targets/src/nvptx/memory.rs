//! Ordered loads, stores and fences: `ld/st.{volatile,relaxed,acquire,release}[.scope]`,
//! `fence.acq_rel.scope`, and read-modify-write atomics `atom{.sem}{.scope}.{add,cas}`.

use super::{asm_scoped, NvptxWarp};
use crate::{Atom, AtomKind, AtomicOrder, Memory, Scope};
use core::arch::asm;

/// Loads `*p` with the instruction `$pre{.scope}.u32/.u64`.
macro_rules! load {
    ($p:expr, $scope:expr, $pre:literal) => {{
        let p = $p;
        match T::KIND {
            AtomKind::U32 => {
                let r: u32;
                asm_scoped!($scope, $pre, ".u32 {r}, [{p}];", r = out(reg32) r, p = in(reg64) p);
                T::from_u64(r as u64)
            }
            AtomKind::U64 => {
                let r: u64;
                asm_scoped!($scope, $pre, ".u64 {r}, [{p}];", r = out(reg64) r, p = in(reg64) p);
                T::from_u64(r)
            }
        }
    }};
}

/// Stores `v` to `*p` with the instruction `$pre{.scope}.u32/.u64`.
macro_rules! store {
    ($p:expr, $v:expr, $scope:expr, $pre:literal) => {{
        let (p, v) = ($p, $v.to_u64());
        match T::KIND {
            AtomKind::U32 => asm_scoped!($scope, $pre, ".u32 [{p}], {v};", p = in(reg64) p, v = in(reg32) v as u32),
            AtomKind::U64 => asm_scoped!($scope, $pre, ".u64 [{p}], {v};", p = in(reg64) p, v = in(reg64) v),
        }
    }};
}

impl Memory for NvptxWarp {
    const POLLS_PER_CHECK: u32 = 256;
    #[inline(always)]
    unsafe fn load_volatile<T: Atom>(self, p: *const T) -> T {
        let p = p as u64;
        match T::KIND {
            AtomKind::U32 => {
                let r: u32;
                asm!("ld.volatile.u32 {r}, [{p}];", r = out(reg32) r, p = in(reg64) p);
                T::from_u64(r as u64)
            }
            AtomKind::U64 => {
                let r: u64;
                asm!("ld.volatile.u64 {r}, [{p}];", r = out(reg64) r, p = in(reg64) p);
                T::from_u64(r)
            }
        }
    }
    #[inline(always)]
    unsafe fn load_relaxed<T: Atom>(self, p: *const T, scope: Scope) -> T {
        load!(p as u64, scope, "ld.relaxed")
    }
    #[inline(always)]
    unsafe fn load_acquire<T: Atom>(self, p: *const T, scope: Scope) -> T {
        load!(p as u64, scope, "ld.acquire")
    }
    #[inline(always)]
    unsafe fn store_volatile<T: Atom>(self, p: *mut T, v: T) {
        let (p, v) = (p as u64, v.to_u64());
        match T::KIND {
            AtomKind::U32 => asm!("st.volatile.u32 [{p}], {v};", p = in(reg64) p, v = in(reg32) v as u32),
            AtomKind::U64 => asm!("st.volatile.u64 [{p}], {v};", p = in(reg64) p, v = in(reg64) v),
        }
    }
    #[inline(always)]
    unsafe fn store_relaxed<T: Atom>(self, p: *mut T, v: T, scope: Scope) {
        store!(p as u64, v, scope, "st.relaxed")
    }
    #[inline(always)]
    unsafe fn store_release<T: Atom>(self, p: *mut T, v: T, scope: Scope) {
        store!(p as u64, v, scope, "st.release")
    }
    #[inline(always)]
    fn fence_acq_rel(self, scope: Scope) {
        // SAFETY: a fence has no operands.
        unsafe { asm_scoped!(scope, "fence.acq_rel", ";",) }
    }
    #[inline(always)]
    unsafe fn atomic_add<T: Atom>(self, p: *mut T, v: T, order: AtomicOrder, scope: Scope) -> T {
        T::from_u64(atom_add(T::KIND, p as u64, v.to_u64(), order, scope))
    }
    #[inline(always)]
    unsafe fn atomic_cas<T: Atom>(self, p: *mut T, current: T, new: T, order: AtomicOrder, scope: Scope) -> T {
        T::from_u64(atom_cas(
            T::KIND,
            p as u64,
            current.to_u64(),
            new.to_u64(),
            order,
            scope,
        ))
    }
}

// Read-modify-write atomics. Values travel as `u64` and are narrowed for 32-bit operations.

/// Expands to a `match` on an [`AtomicOrder`] and a [`crate::Scope`] that picks the `asm!` with
/// `atom.{relaxed,acquire,release,acq_rel}.{cta,gpu,sys}$post`.
macro_rules! asm_atom {
    ($order:expr, $scope:expr, $post:literal, $($operands:tt)*) => {
        match $order {
            AtomicOrder::Relaxed => asm_scoped!($scope, "atom.relaxed", $post, $($operands)*),
            AtomicOrder::Acquire => asm_scoped!($scope, "atom.acquire", $post, $($operands)*),
            AtomicOrder::Release => asm_scoped!($scope, "atom.release", $post, $($operands)*),
            AtomicOrder::AcqRel => asm_scoped!($scope, "atom.acq_rel", $post, $($operands)*),
        }
    };
}

/// `*p += v` on the word at generic address `p`; returns the old value.
///
/// # Safety
/// `p` addresses a valid, aligned word of `kind` that is only accessed atomically meanwhile.
#[inline(always)]
unsafe fn atom_add(kind: AtomKind, p: u64, v: u64, order: AtomicOrder, scope: crate::Scope) -> u64 {
    match kind {
        AtomKind::U32 => {
            let r: u32;
            asm_atom!(order, scope, ".add.u32 {r}, [{p}], {v};", r = out(reg32) r, p = in(reg64) p, v = in(reg32) v as u32);
            r as u64
        }
        AtomKind::U64 => {
            let r: u64;
            asm_atom!(order, scope, ".add.u64 {r}, [{p}], {v};", r = out(reg64) r, p = in(reg64) p, v = in(reg64) v);
            r
        }
    }
}

/// If `*p == current` then `*p = new`; returns the old value.
///
/// # Safety
/// As [`atom_add`].
#[inline(always)]
unsafe fn atom_cas(kind: AtomKind, p: u64, current: u64, new: u64, order: AtomicOrder, scope: crate::Scope) -> u64 {
    match kind {
        AtomKind::U32 => {
            let r: u32;
            asm_atom!(order, scope, ".cas.b32 {r}, [{p}], {c}, {n};",
                r = out(reg32) r, p = in(reg64) p, c = in(reg32) current as u32, n = in(reg32) new as u32);
            r as u64
        }
        AtomKind::U64 => {
            let r: u64;
            asm_atom!(order, scope, ".cas.b64 {r}, [{p}], {c}, {n};",
                r = out(reg64) r, p = in(reg64) p, c = in(reg64) current, n = in(reg64) new);
            r
        }
    }
}
