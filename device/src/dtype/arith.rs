//! The reductions' arithmetic per type family, which each type's [`Elem`] impl names:
//!
//! | family                         | `add`, `mul`                         | `min`, `max`                      | `scale(x, s)`        |
//! |--------------------------------|--------------------------------------|-----------------------------------|----------------------|
//! | [`F32Exact`] ([`f32_arith!`])  | in f32, rounded back to nearest even | compared in f32 (exact)           | `x * f32(s)` in f32  |
//! | f64 ([`min_f64`], [`max_f64`]) | native                               | native                            | `x * f64(s)`         |
//! | integers (`int.rs`)            | wrapping                             | signed or unsigned as the type    | `x * s`, wrapping    |
//!
//! Float results that are NaN are the type's canonical NaN (all bits set but the sign), and
//! `min(-0, +0) = -0`, `max(-0, +0) = +0` in either order, so that every operation is
//! commutative bit for bit and gives the same bits on every machine ([`crate::reduce`]).

use super::F32Exact;

/// `T::from_f32(r)`, or `T::CANONICAL_NAN` when `r` is NaN.
#[inline(always)]
pub(super) fn round_to<T: F32Exact>(r: f32) -> T::Bits {
    if r.is_nan() {
        T::CANONICAL_NAN
    } else {
        T::from_f32(r)
    }
}

/// `f` applied to the f32 values of `a` and `b`, rounded back to `T`.
#[inline(always)]
pub(super) fn through_f32<T: F32Exact>(a: T::Bits, b: T::Bits, f: impl FnOnce(f32, f32) -> f32) -> T::Bits {
    round_to::<T>(f(T::to_f32(a), T::to_f32(b)))
}

/// The smaller of `a` and `b`; `-0` for `±0`; some NaN if either is NaN.
#[inline(always)]
pub(super) fn min_f32(a: f32, b: f32) -> f32 {
    if a < b {
        a
    } else if b < a {
        b
    } else {
        // Equal (the same bits, or ±0: OR keeps the minus sign) or unordered (OR keeps a NaN
        // a NaN, since it only sets bits).
        f32::from_bits(a.to_bits() | b.to_bits())
    }
}

/// The larger of `a` and `b`; `+0` for `±0`; some NaN if either is NaN.
#[inline(always)]
pub(super) fn max_f32(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else if a > b {
        a
    } else if b > a {
        b
    } else {
        // Equal: the same bits, or ±0, where AND clears the minus sign.
        f32::from_bits(a.to_bits() & b.to_bits())
    }
}

/// [`min_f32`] for f64.
#[inline(always)]
pub(super) fn min_f64(a: f64, b: f64) -> f64 {
    if a < b {
        a
    } else if b < a {
        b
    } else {
        f64::from_bits(a.to_bits() | b.to_bits())
    }
}

/// [`max_f32`] for f64.
#[inline(always)]
pub(super) fn max_f64(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if a > b {
        a
    } else if b > a {
        b
    } else {
        f64::from_bits(a.to_bits() & b.to_bits())
    }
}

/// The [`Elem`](super::Elem) arithmetic of a [`F32Exact`] type: every operation in f32, rounded
/// back with [`round_to`]. Expands to the five methods inside the type's `impl Elem`.
macro_rules! f32_arith {
    () => {
        #[inline(always)]
        fn add(a: Self::Bits, b: Self::Bits) -> Self::Bits {
            $crate::dtype::arith::through_f32::<Self>(a, b, |a, b| a + b)
        }
        #[inline(always)]
        fn mul(a: Self::Bits, b: Self::Bits) -> Self::Bits {
            $crate::dtype::arith::through_f32::<Self>(a, b, |a, b| a * b)
        }
        #[inline(always)]
        fn min(a: Self::Bits, b: Self::Bits) -> Self::Bits {
            $crate::dtype::arith::through_f32::<Self>(a, b, $crate::dtype::arith::min_f32)
        }
        #[inline(always)]
        fn max(a: Self::Bits, b: Self::Bits) -> Self::Bits {
            $crate::dtype::arith::through_f32::<Self>(a, b, $crate::dtype::arith::max_f32)
        }
        #[inline(always)]
        fn scale(x: Self::Bits, scalar: u64) -> Self::Bits {
            let s = f32::from_bits(scalar as u32);
            $crate::dtype::arith::round_to::<Self>(<Self as $crate::dtype::F32Exact>::to_f32(x) * s)
        }
        #[inline(always)]
        fn scalar_of(x: Self::Bits) -> u64 {
            u64::from(<Self as $crate::dtype::F32Exact>::to_f32(x).to_bits())
        }
    };
}
pub(super) use f32_arith;
