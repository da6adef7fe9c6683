//! What a step computes per element, as a type: the primitives' out-of-line step functions are
//! generic over it rather than over the operator, so that steps that compute alike share one
//! instance whatever the kernel's operator (moving steps do not depend on it at all; combining
//! steps depend only on how it combines, unless its `pre` scales, as Avg's does).
//!
//! | [`StepValue`]     | steps (flags)                        | element                            |
//! |-------------------|--------------------------------------|------------------------------------|
//! | [`Combined`]`(o)` | `RECV` and `REDUCE`                  | `o.combine(received, o.pre(mine))`; `o` is the operator's [`RedOp::Combine`] when its `pre` is the identity |
//! | [`Forwarded`]     | `RECV` without `REDUCE`              | `received`                         |
//! | [`Moved`]         | no `RECV`, `pre` the identity        | `mine`                             |
//! | [`Scaled`]`(o)`   | no `RECV`, `o.pre` scales (Avg)      | `o.pre(mine)`                      |
//!
//! [`with_step_value`] picks the value for an operator and flags and calls a [`StepFn`] with it.

use zipcoll_device::dtype::Elem;
use zipcoll_device::reduce::RedOp;

/// What a step computes per element from the received element (if it receives) and the local
/// one (if it reads `src`).
pub trait StepValue: Copy {
    /// Whether the value combines the received element with the local one.
    const REDUCE: bool;
    /// Whether the value is computed (combined or scaled), not only moved.
    const ARITHMETIC: bool;
    /// The element.
    fn of<T: Elem>(self, received: T::Bits, mine: T::Bits) -> T::Bits;
}

/// `o.combine(received, o.pre(mine))`.
#[derive(Clone, Copy)]
pub struct Combined<O>(pub O);
/// The received element.
#[derive(Clone, Copy)]
pub struct Forwarded;
/// The local element as it is.
#[derive(Clone, Copy)]
pub struct Moved;
/// `o.pre(mine)`.
#[derive(Clone, Copy)]
pub struct Scaled<O>(pub O);

impl<O: RedOp> StepValue for Combined<O> {
    const REDUCE: bool = true;
    const ARITHMETIC: bool = true;
    #[inline(always)]
    fn of<T: Elem>(self, received: T::Bits, mine: T::Bits) -> T::Bits {
        self.0.combine::<T>(received, self.0.pre::<T>(mine))
    }
}
impl StepValue for Forwarded {
    const REDUCE: bool = false;
    const ARITHMETIC: bool = false;
    #[inline(always)]
    fn of<T: Elem>(self, received: T::Bits, _mine: T::Bits) -> T::Bits {
        received
    }
}
impl StepValue for Moved {
    const REDUCE: bool = false;
    const ARITHMETIC: bool = false;
    #[inline(always)]
    fn of<T: Elem>(self, _received: T::Bits, mine: T::Bits) -> T::Bits {
        mine
    }
}
impl<O: RedOp> StepValue for Scaled<O> {
    const REDUCE: bool = false;
    const ARITHMETIC: bool = true;
    #[inline(always)]
    fn of<T: Elem>(self, _received: T::Bits, mine: T::Bits) -> T::Bits {
        self.0.pre::<T>(mine)
    }
}

/// A step function generic over its [`StepValue`], called by [`with_step_value`].
pub trait StepFn {
    /// What the step returns.
    type Output;
    /// Runs the step with value `v`.
    ///
    /// # Safety
    /// As the implementation's step function says.
    unsafe fn call<V: StepValue>(self, v: V) -> Self::Output;
}

/// Calls `f` with the value of a step of operator `op` with flags `RECV` and `REDUCE` (the
/// module table).
///
/// # Safety
/// As `F::call`.
#[inline(always)]
pub unsafe fn with_step_value<O: RedOp, const RECV: bool, const REDUCE: bool, F: StepFn>(op: O, f: F) -> F::Output {
    // SAFETY: forwarded from the caller.
    unsafe {
        match (REDUCE, RECV, O::PRE_IS_IDENTITY) {
            (true, _, true) => f.call(Combined(op.combiner())),
            (true, _, false) => f.call(Combined(op)),
            (false, true, _) => f.call(Forwarded),
            (false, false, true) => f.call(Moved),
            (false, false, false) => f.call(Scaled(op)),
        }
    }
}
