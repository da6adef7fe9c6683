//! Warp-level all-reduce of one register per lane, with a fixed reduction order so that every
//! lane, every run and every machine get the same bits.
//!
//! | function                        | runs on        | returns                                        |
//! |---------------------------------|----------------|------------------------------------------------|
//! | [`warp_all_reduce`]             | every lane of a full warp | the reduction of all lanes' values, on every lane |
//! | [`warp_all_reduce_reference`]   | the host (or anywhere), one thread | the same bits, from a slice of the lanes' values |
//!
//! The order is a butterfly: `pre` once per lane, then at step `m = 1, 2, 4, .. WIDTH/2` every
//! lane combines its value with lane `lane ^ m`'s as `combine(lower group's, upper group's)`.
//! Both partners compute the identical expression, so after the step each aligned group of
//! `2m` lanes holds one value. For 8 lanes:
//!
//! | after step | each lane holds                                       |
//! |------------|-------------------------------------------------------|
//! | pre        | `x_l`                                                 |
//! | `m = 1`    | `(x0 x1)`, `(x2 x3)`, `(x4 x5)`, `(x6 x7)` for its pair |
//! | `m = 2`    | `((x0 x1) (x2 x3))` or `((x4 x5) (x6 x7))`            |
//! | `m = 4`    | `(((x0 x1) (x2 x3)) ((x4 x5) (x6 x7)))` on all lanes   |
//!
//! where `(a b)` is `combine(a, b)`: a balanced binary tree over the lanes in index order,
//! which [`warp_all_reduce_reference`] evaluates recursively.
//!
//! `warp_all_reduce` needs the whole warp: every lane `0..WIDTH` calls it (the shuffles use
//! `W::FULL`), so a block whose size is not a multiple of `WIDTH` must not call it from its last,
//! partial warp.

use crate::dtype::Elem;
use crate::reduce::RedOp;
use zipcoll_targets::Warp;

/// One butterfly step: combine with lane `lane ^ m`, the lower lane group's value first.
#[inline(always)]
fn step<W: Warp, T: Elem, O: RedOp>(w: W, op: O, acc: T::Bits, m: u32) -> T::Bits {
    let other = w.shfl_xor(W::FULL, acc, m);
    if w.lane_id() & m == 0 {
        op.combine::<T>(acc, other)
    } else {
        op.combine::<T>(other, acc)
    }
}

/// The reduction with `op` of `v` over every lane of the warp, returned on every lane (the same
/// bits everywhere, equal to [`warp_all_reduce_reference`] of the lanes' values in lane order).
///
/// Every lane of the warp must call it together (a full warp; see the module docs).
#[inline(always)]
pub fn warp_all_reduce<W: Warp, T: Elem, O: RedOp>(w: W, op: O, v: T::Bits) -> T::Bits {
    let acc = op.pre::<T>(v);
    // lane l: its own contribution, pre-processed
    let acc = step::<W, T, O>(w, op, acc, 1);
    // lane l: its aligned group of 2 lanes, (x[2k] x[2k+1])
    let acc = step::<W, T, O>(w, op, acc, 2);
    // lane l: its aligned group of 4 lanes
    let acc = step::<W, T, O>(w, op, acc, 4);
    // lane l: its aligned group of 8 lanes
    let acc = step::<W, T, O>(w, op, acc, 8);
    // lane l: its aligned group of 16 lanes
    let acc = step::<W, T, O>(w, op, acc, 16);
    // lane l: its aligned group of 32 lanes: the whole warp when WIDTH = 32
    if W::WIDTH == 32 {
        return acc;
    }
    let acc = step::<W, T, O>(w, op, acc, 32);
    // lane l: all 64 lanes
    acc
}

/// The value [`warp_all_reduce`] returns when lane `l` holds `values[l]`, computed by one
/// thread: `pre` on each value, then the balanced tree `combine(tree(lower half), tree(upper
/// half))`. `values.len()` is the warp width (for other lengths the halves split at
/// `len / 2`). `None` for an empty slice.
pub fn warp_all_reduce_reference<T: Elem, O: RedOp>(values: &[T::Bits], op: O) -> Option<T::Bits> {
    match values {
        [] => None,
        [x] => Some(op.pre::<T>(*x)),
        _ => {
            let (lo, hi) = values.split_at(values.len() / 2);
            let a = warp_all_reduce_reference::<T, O>(lo, op)?;
            let b = warp_all_reduce_reference::<T, O>(hi, op)?;
            Some(op.combine::<T>(a, b))
        }
    }
}
