//! Reductions with NCCL's semantics: 16- and 8-bit floats are reduced through `f32` and rounded
//! back with round-to-nearest-even; NaN propagates; -0.0 is kept where IEEE keeps it.
//!
//! | op       | `combine(a, b)`                 | `pre(x)` (once per input)            |
//! |----------|---------------------------------|--------------------------------------|
//! | [`Sum`]  | `a + b`                         | `x`                                  |
//! | [`Prod`] | `a * b`                         | `x`                                  |
//! | [`Min`]  | the smaller, NaN if either is   | `x`                                  |
//! | [`Max`]  | the larger, NaN if either is    | `x`                                  |
//! | [`Avg`]  | `a + b`                         | `x * (1 / nranks)` (NCCL's PreMulSum) |

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

/// A reduction operator. Values of it carry the launch's scalar state (Avg's `1/nranks`).
pub trait RedOp: Copy {
    /// This operator as a runtime value.
    const OP: ReduceOp;
    /// The operator for a reduction over `nranks` contributions (only Avg uses it).
    fn new(nranks: u32) -> Self;
    /// Applied once to each contribution before it is combined (identity except for Avg).
    fn pre<T: Elem>(self, x: T::Bits) -> T::Bits;
    /// Combines two (pre-processed) contributions.
    fn combine<T: Elem>(self, a: T::Bits, b: T::Bits) -> T::Bits;
}
