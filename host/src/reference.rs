//! Scalar references for the kernels, computed by one host thread from the device crate's
//! operator definitions: what every backend's result must equal bit for bit.
//!
//! | function              | element `i` of the result                                         |
//! |-----------------------|-------------------------------------------------------------------|
//! | [`reduce_copy`]       | `combine(pre(src0[i]), pre(src1[i]))` with the op for `nranks`    |
//! | [`warp_all_reduce`]   | `warp_all_reduce_reference` of the `width`-element group holding `i` |
//!
//! ```
//! use zipcoll_host::{reference, DType, ReduceOp};
//! let one = 1.0f32.to_le_bytes();
//! let two = 2.0f32.to_le_bytes();
//! let sum = reference::reduce_copy(DType::F32, ReduceOp::Sum, &one, &two, 2).unwrap();
//! assert_eq!(sum, 3.0f32.to_le_bytes());
//! ```
//!
//! Arguments are checked as the kernels check them ([`crate::reduce_copy`],
//! [`crate::warp_all_reduce`]).

use crate::comm::Reduction;
use crate::dispatch::{dispatch, words_from_le, words_to_le};
use crate::error::{Error, Result};
use crate::ops::{check_reduce_copy, check_warp_all_reduce};
use zipcoll_device::dtype::{DType, Elem};
use zipcoll_device::reduce::{RedOp, ReduceOp};
use zipcoll_device::warp_reduce::warp_all_reduce_reference;

/// The reference result of `reduce_copy` (see the module table).
pub fn reduce_copy(dtype: DType, op: ReduceOp, src0: &[u8], src1: &[u8], nranks: u32) -> Result<Vec<u8>> {
    check_reduce_copy(dtype, op, src0, src1, nranks)?;
    Ok(dispatch!(dtype, op, |T, O| reduce_copy_typed::<T, O>(
        src0, src1, nranks
    )))
}

fn reduce_copy_typed<T: Elem, O: RedOp>(src0: &[u8], src1: &[u8], nranks: u32) -> Vec<u8> {
    let op = O::new::<T>(nranks);
    let a: Vec<T::Bits> = words_from_le(src0);
    let b: Vec<T::Bits> = words_from_le(src1);
    let out: Vec<T::Bits> = a
        .iter()
        .zip(&b)
        .map(|(&x, &y)| op.combine::<T>(op.pre::<T>(x), op.pre::<T>(y)))
        .collect();
    words_to_le(&out)
}

/// The reference result of `warp_all_reduce` with warps of `width` lanes (see the module table).
pub fn warp_all_reduce(dtype: DType, op: ReduceOp, width: u32, src: &[u8], nranks: u32) -> Result<Vec<u8>> {
    check_warp_all_reduce(dtype, op, width, src, nranks)?;
    dispatch!(dtype, op, |T, O| warp_all_reduce_typed::<T, O>(
        width as usize,
        src,
        nranks
    ))
}

fn warp_all_reduce_typed<T: Elem, O: RedOp>(width: usize, src: &[u8], nranks: u32) -> Result<Vec<u8>> {
    let op = O::new::<T>(nranks);
    let s: Vec<T::Bits> = words_from_le(src);
    let mut out = Vec::with_capacity(s.len());
    for group in s.chunks_exact(width) {
        let r = warp_all_reduce_reference::<T, O>(group, op)
            .ok_or_else(|| Error::InvalidArgument("a warp of zero lanes".into()))?;
        out.extend(std::iter::repeat_n(r, width));
    }
    Ok(words_to_le(&out))
}

/// Which collective [`collective`] computes, with its parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CollRef {
    /// Ring all_reduce, cut into frames of `frame_elems` elements.
    RingAllReduce { frame_elems: usize },
    /// Two-shot all_reduce, cut into frames of `frame_elems` elements.
    TwoShotAllReduce { frame_elems: usize },
    /// All_gather (each input is one block).
    AllGather,
    /// Reduce_scatter: rank `rank`'s block.
    ReduceScatter { rank: usize },
    /// Reduce to `root` (the root's output).
    Reduce { root: usize },
    /// Broadcast from `root`.
    Broadcast { root: usize },
    /// All_to_all: rank `rank`'s output.
    AllToAll { rank: usize },
}

/// The output a rank of a collective must hold, bit for bit, given every rank's input (element
/// bytes, little-endian, all of one length): the scalar reference of
/// `zipcoll_primitives::collectives`, which follows each schedule's reduction order.
pub fn collective(c: CollRef, dtype: DType, op: impl Into<Reduction>, inputs: &[Vec<u8>]) -> Result<Vec<u8>> {
    let op = op.into();
    let size = dtype.size_bytes();
    let Some(first) = inputs.first() else {
        return Err(Error::InvalidArgument("no inputs".into()));
    };
    if inputs.iter().any(|i| i.len() != first.len() || i.len() % size != 0) {
        return Err(Error::InvalidArgument("inputs of different or partial lengths".into()));
    }
    let k = inputs.len();
    let rank_ok = |r: usize| {
        if r < k {
            Ok(())
        } else {
            Err(Error::InvalidArgument(format!("rank {r} of {k}")))
        }
    };
    match c {
        CollRef::ReduceScatter { rank: r } | CollRef::Reduce { root: r } | CollRef::AllToAll { rank: r } => rank_ok(r)?,
        CollRef::Broadcast { root } => {
            rank_ok(root)?;
            return Ok(inputs[root].clone());
        }
        CollRef::RingAllReduce { frame_elems } | CollRef::TwoShotAllReduce { frame_elems } if frame_elems == 0 => {
            return Err(Error::InvalidArgument("frame_elems is 0".into()));
        }
        _ => {}
    }
    if matches!(c, CollRef::ReduceScatter { .. } | CollRef::AllToAll { .. }) && first.len() % (k * size) != 0 {
        return Err(Error::InvalidArgument(format!("inputs are not {k} equal blocks")));
    }
    let kernel = op.kernel(dtype, k)?;
    if kernel.scalar_at.is_some() {
        return Err(Error::InvalidArgument(
            "the reference takes a scalar's value (PreMulSumBits), not its place in device memory".into(),
        ));
    }
    let (kernel_op, scalar) = (kernel.op, kernel.scalar);
    Ok(dispatch!(dtype, kernel_op, |T, O| collective_typed::<T, O>(
        scalar, c, inputs
    )))
}

fn collective_typed<T: zipcoll_device::dtype::Split, O: RedOp>(scalar: u64, c: CollRef, inputs: &[Vec<u8>]) -> Vec<u8> {
    let op = O::scaled(scalar);
    use zipcoll_primitives::collectives as co;
    let words: Vec<Vec<T::Bits>> = inputs.iter().map(|i| words_from_le(i)).collect();
    let views: Vec<&[T::Bits]> = words.iter().map(Vec::as_slice).collect();
    let (n, k) = (views[0].len(), views.len());
    let mut out = vec![T::Bits::default(); n];
    match c {
        CollRef::RingAllReduce { frame_elems } => {
            co::ring_all_reduce_reference::<T, O>(op, &views, &mut out, frame_elems)
        }
        CollRef::TwoShotAllReduce { frame_elems } => {
            co::two_shot_all_reduce_reference::<T, O>(op, &views, &mut out, frame_elems)
        }
        CollRef::AllGather => {
            out = vec![T::Bits::default(); n * k];
            co::all_gather_reference::<T>(&views, &mut out);
        }
        CollRef::ReduceScatter { rank } => {
            out = vec![T::Bits::default(); n / k];
            co::reduce_scatter_reference::<T, O>(op, &views, rank, &mut out);
        }
        CollRef::Reduce { root } => co::reduce_reference::<T, O>(op, &views, root, &mut out),
        CollRef::AllToAll { rank } => co::all_to_all_reference::<T>(&views, rank, &mut out),
        CollRef::Broadcast { root } => out.copy_from_slice(views[root]),
    }
    if matches!(
        c,
        CollRef::RingAllReduce { .. }
            | CollRef::TwoShotAllReduce { .. }
            | CollRef::ReduceScatter { .. }
            | CollRef::Reduce { .. }
    ) {
        co::post_divide_reference::<T, O>(scalar, &mut out);
    }
    words_to_le(&out)
}
