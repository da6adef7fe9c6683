//! The five [`RedOp`]s: each a one-line `f32` operation, lifted to every [`Elem`] by
//! [`through_f32`].
//!
//! | op       | state          | `pre`              | `combine` in f32                       |
//! |----------|----------------|--------------------|----------------------------------------|
//! | [`Sum`]  | none           | identity           | `a + b`                                |
//! | [`Prod`] | none           | identity           | `a * b`                                |
//! | [`Min`]  | none           | identity           | [`min_f32`]                            |
//! | [`Max`]  | none           | identity           | [`max_f32`]                            |
//! | [`Avg`]  | `scale`        | `x * scale`        | `a + b`                                |

use super::{RedOp, ReduceOp};
use crate::dtype::Elem;

/// `T::from_f32(r)`, or `T::CANONICAL_NAN` when `r` is NaN.
#[inline(always)]
fn round_to<T: Elem>(r: f32) -> T::Bits {
    if r.is_nan() {
        T::CANONICAL_NAN
    } else {
        T::from_f32(r)
    }
}

/// `f` applied to the f32 values of `a` and `b`, rounded back to `T`.
#[inline(always)]
fn through_f32<T: Elem>(a: T::Bits, b: T::Bits, f: impl FnOnce(f32, f32) -> f32) -> T::Bits {
    round_to::<T>(f(T::to_f32(a), T::to_f32(b)))
}

/// The smaller of `a` and `b`; `-0` for `±0`; some NaN if either is NaN.
#[inline(always)]
fn min_f32(a: f32, b: f32) -> f32 {
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
fn max_f32(a: f32, b: f32) -> f32 {
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

/// Sum: `a + b`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Sum;

impl RedOp for Sum {
    const OP: ReduceOp = ReduceOp::Sum;
    const PRE_IS_IDENTITY: bool = true;
    type Combine = Sum;
    #[inline(always)]
    fn combiner(self) -> Sum {
        self
    }
    #[inline(always)]
    fn scaled(_scale: f32) -> Self {
        Sum
    }
    #[inline(always)]
    fn pre<T: Elem>(self, x: T::Bits) -> T::Bits {
        x
    }
    #[inline(always)]
    fn combine<T: Elem>(self, a: T::Bits, b: T::Bits) -> T::Bits {
        through_f32::<T>(a, b, |a, b| a + b)
    }
}

/// Product: `a * b`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Prod;

impl RedOp for Prod {
    const OP: ReduceOp = ReduceOp::Prod;
    const PRE_IS_IDENTITY: bool = true;
    type Combine = Prod;
    #[inline(always)]
    fn combiner(self) -> Prod {
        self
    }
    #[inline(always)]
    fn scaled(_scale: f32) -> Self {
        Prod
    }
    #[inline(always)]
    fn pre<T: Elem>(self, x: T::Bits) -> T::Bits {
        x
    }
    #[inline(always)]
    fn combine<T: Elem>(self, a: T::Bits, b: T::Bits) -> T::Bits {
        through_f32::<T>(a, b, |a, b| a * b)
    }
}

/// Minimum; NaN if either operand is NaN; `min(-0, +0) = -0`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Min;

impl RedOp for Min {
    const OP: ReduceOp = ReduceOp::Min;
    const PRE_IS_IDENTITY: bool = true;
    type Combine = Min;
    #[inline(always)]
    fn combiner(self) -> Min {
        self
    }
    #[inline(always)]
    fn scaled(_scale: f32) -> Self {
        Min
    }
    #[inline(always)]
    fn pre<T: Elem>(self, x: T::Bits) -> T::Bits {
        x
    }
    #[inline(always)]
    fn combine<T: Elem>(self, a: T::Bits, b: T::Bits) -> T::Bits {
        through_f32::<T>(a, b, min_f32)
    }
}

/// Maximum; NaN if either operand is NaN; `max(-0, +0) = +0`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Max;

impl RedOp for Max {
    const OP: ReduceOp = ReduceOp::Max;
    const PRE_IS_IDENTITY: bool = true;
    type Combine = Max;
    #[inline(always)]
    fn combiner(self) -> Max {
        self
    }
    #[inline(always)]
    fn scaled(_scale: f32) -> Self {
        Max
    }
    #[inline(always)]
    fn pre<T: Elem>(self, x: T::Bits) -> T::Bits {
        x
    }
    #[inline(always)]
    fn combine<T: Elem>(self, a: T::Bits, b: T::Bits) -> T::Bits {
        through_f32::<T>(a, b, max_f32)
    }
}

/// NCCL's PreMulSum: each contribution is multiplied by `scale` (in f32, rounded back to `T`),
/// then summed. An average over `nranks` contributions is `scale = 1.0f32 / nranks as f32`
/// ([`RedOp::new`]; `nranks = 0` gives `+inf`, no panic); a caller's scalar is
/// [`RedOp::scaled`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Avg {
    /// The factor of every contribution.
    pub scale: f32,
}

impl RedOp for Avg {
    const OP: ReduceOp = ReduceOp::Avg;
    const PRE_IS_IDENTITY: bool = false;
    type Combine = Sum;
    #[inline(always)]
    fn combiner(self) -> Sum {
        Sum
    }
    #[inline(always)]
    fn scaled(scale: f32) -> Self {
        Avg { scale }
    }
    #[inline(always)]
    fn pre<T: Elem>(self, x: T::Bits) -> T::Bits {
        round_to::<T>(T::to_f32(x) * self.scale)
    }
    #[inline(always)]
    fn combine<T: Elem>(self, a: T::Bits, b: T::Bits) -> T::Bits {
        through_f32::<T>(a, b, |a, b| a + b)
    }
}
