//! The five [`RedOp`]s: each one of the element type's operations ([`Elem`]).
//!
//! | op       | state          | `pre`                  | `combine`          |
//! |----------|----------------|------------------------|--------------------|
//! | [`Sum`]  | none           | identity               | [`Elem::add`]      |
//! | [`Prod`] | none           | identity               | [`Elem::mul`]      |
//! | [`Min`]  | none           | identity               | [`Elem::min`]      |
//! | [`Max`]  | none           | identity               | [`Elem::max`]      |
//! | [`Avg`]  | `scalar`       | [`Elem::scale`]        | [`Elem::add`]      |

use super::{RedOp, ReduceOp};
use crate::dtype::Elem;

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
    fn scaled(_scalar: u64) -> Self {
        Sum
    }
    #[inline(always)]
    fn pre<T: Elem>(self, x: T::Bits) -> T::Bits {
        x
    }
    #[inline(always)]
    fn combine<T: Elem>(self, a: T::Bits, b: T::Bits) -> T::Bits {
        T::add(a, b)
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
    fn scaled(_scalar: u64) -> Self {
        Prod
    }
    #[inline(always)]
    fn pre<T: Elem>(self, x: T::Bits) -> T::Bits {
        x
    }
    #[inline(always)]
    fn combine<T: Elem>(self, a: T::Bits, b: T::Bits) -> T::Bits {
        T::mul(a, b)
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
    fn scaled(_scalar: u64) -> Self {
        Min
    }
    #[inline(always)]
    fn pre<T: Elem>(self, x: T::Bits) -> T::Bits {
        x
    }
    #[inline(always)]
    fn combine<T: Elem>(self, a: T::Bits, b: T::Bits) -> T::Bits {
        T::min(a, b)
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
    fn scaled(_scalar: u64) -> Self {
        Max
    }
    #[inline(always)]
    fn pre<T: Elem>(self, x: T::Bits) -> T::Bits {
        x
    }
    #[inline(always)]
    fn combine<T: Elem>(self, a: T::Bits, b: T::Bits) -> T::Bits {
        T::max(a, b)
    }
}

/// NCCL's PreMulSum: each contribution is multiplied by the operator scalar ([`Elem::scale`]),
/// then summed. An average over `nranks` contributions has the scalar `1 / nranks`
/// ([`RedOp::new`]); a caller's scalar is [`RedOp::scaled`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Avg {
    /// The bits of the factor of every contribution ([`crate::dtype::DType::scalar_bits`]).
    pub scalar: u64,
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
    fn scaled(scalar: u64) -> Self {
        Avg { scalar }
    }
    #[inline(always)]
    fn pre<T: Elem>(self, x: T::Bits) -> T::Bits {
        T::scale(x, self.scalar)
    }
    #[inline(always)]
    fn combine<T: Elem>(self, a: T::Bits, b: T::Bits) -> T::Bits {
        T::add(a, b)
    }
}
