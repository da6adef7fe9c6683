//! Reductions with NCCL's semantics: 16- and 8-bit floats are reduced through `f32` and rounded
//! back with round-to-nearest-even, f32 and f64 natively; NaN propagates; -0.0 is kept where
//! IEEE keeps it; integers wrap (sum, product) and compare signed or unsigned as their type.
//!
//! | op       | `combine(a, b)`                 | `pre(x)` (once per input)            |
//! |----------|---------------------------------|--------------------------------------|
//! | [`Sum`]  | `a + b`                         | `x`                                  |
//! | [`Prod`] | `a * b`                         | `x`                                  |
//! | [`Min`]  | the smaller, NaN if either is   | `x`                                  |
//! | [`Max`]  | the larger, NaN if either is    | `x`                                  |
//! | [`Avg`]  | `a + b`                         | `x * scale` (NCCL's PreMulSum)       |
//!
//! [`Avg`]'s scalar is `1 / nranks` for an average ([`RedOp::new`]) or the caller's scalar for
//! NCCL's `ncclRedOpCreatePreMulSum` ([`RedOp::scaled`]); a collective's descriptor carries it.
//! Integers average as NCCL does (its SumPostDiv): the [`Sum`] kernels run, with the
//! descriptor's scalar set to `nranks`, and the schedules divide each element of the result
//! once, rounding toward zero ([`post_divisor`], [`Elem::div_toward_zero`]). Their [`Avg`]
//! kernels are PreMulSum with an integer scalar (wrapping).
//!
//! Each operation is the element type's ([`Elem::add`], ..): for bf16, f16 and fp8 "widen
//! exactly to f32, one f32 operation, round to nearest even"; for f32 and f64 the native
//! operation. Two rules make the float bits the same on every machine:
//!
//! | case                 | result                                                          |
//! |----------------------|-----------------------------------------------------------------|
//! | any NaN result       | the canonical NaN (all bits set but the sign), whatever the operands' payloads: hardware differs in which NaN an `add` returns, and PTX `min.NaN`/`max.NaN` return the canonical NaN too |
//! | `Min`/`Max` of ±0    | `min(-0, +0) = -0`, `max(-0, +0) = +0` in either order (as PTX `min`/`max`) |
//!
//! So every `combine` is commutative bit for bit. It is not associative: the order of a
//! reduction is part of its result ([`crate::warp_reduce`] fixes one).
//!
//! `Min`/`Max` propagate NaN, unlike NCCL's `fminf`/`fmaxf`, which drop it.

mod ops;

pub use ops::{Avg, Max, Min, Prod, Sum};

use crate::dtype::Elem;

/// The reductions, as a runtime value (host API, kernel manifest).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum ReduceOp {
    Sum = 0,
    Prod = 1,
    Min = 2,
    Max = 3,
    Avg = 4,
}

impl ReduceOp {
    /// Every reduction, in discriminant order.
    pub const ALL: [ReduceOp; 5] = [
        ReduceOp::Sum,
        ReduceOp::Prod,
        ReduceOp::Min,
        ReduceOp::Max,
        ReduceOp::Avg,
    ];
}

/// The divisor of NCCL's SumPostDiv for a kernel of operator `O` on `T` whose descriptor holds
/// `scalar`: `Some(scalar)` for the integer [`Sum`] kernels when `scalar > 1` (an average over
/// `scalar` ranks: each element of the result is divided once, after the last combine),
/// `None` otherwise (every float kernel, and an integer sum's scalar of 1).
#[inline(always)]
pub fn post_divisor<T: Elem, O: RedOp>(scalar: u64) -> Option<u64> {
    (T::DTYPE.is_integer() && matches!(O::OP, ReduceOp::Sum) && scalar > 1).then_some(scalar)
}

/// A reduction operator. Values of it carry the launch's scalar state (Avg's `scale`).
pub trait RedOp: Copy {
    /// This operator as a runtime value.
    const OP: ReduceOp;
    /// The operator whose `pre` multiplies each contribution by the scalar whose bits are
    /// `scalar` ([`crate::dtype::DType::scalar_bits`]; Avg: NCCL's PreMulSum with that scalar); every other
    /// operator ignores it.
    fn scaled(scalar: u64) -> Self;
    /// The operator for a reduction of `T` over `nranks` contributions: [`RedOp::scaled`] with
    /// [`crate::dtype::DType::avg_scalar`], Avg's factor (1 for integers, whose average is a sum divided
    /// afterwards: [`post_divisor`]).
    #[inline(always)]
    fn new<T: Elem>(nranks: u32) -> Self {
        Self::scaled(T::DTYPE.avg_scalar(nranks).unwrap_or(1))
    }
    /// Applied once to each contribution before it is combined (identity except for Avg).
    fn pre<T: Elem>(self, x: T::Bits) -> T::Bits;
    /// Combines two (pre-processed) contributions.
    fn combine<T: Elem>(self, a: T::Bits, b: T::Bits) -> T::Bits;
    /// Whether `pre` is the identity (every operator but Avg).
    const PRE_IS_IDENTITY: bool;
    /// The operator that combines as this one does, with the identity as `pre` (Avg's is Sum,
    /// every other's itself): code that only combines is generic over it, so that it is
    /// instantiated once for operators that combine alike.
    type Combine: RedOp;
    /// This operator's [`Self::Combine`].
    fn combiner(self) -> Self::Combine;
}
