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

use crate::dispatch::{dispatch, words_from_le, words_to_le};
use crate::error::{Error, Result};
use crate::ops::{check_reduce_copy, check_warp_all_reduce};
use zipcoll_device::dtype::{DType, Elem};
use zipcoll_device::reduce::{RedOp, ReduceOp};
use zipcoll_device::warp_reduce::warp_all_reduce_reference;

/// The reference result of `reduce_copy` (see the module table).
pub fn reduce_copy(dtype: DType, op: ReduceOp, src0: &[u8], src1: &[u8], nranks: u32) -> Result<Vec<u8>> {
    check_reduce_copy(dtype, src0, src1, nranks)?;
    Ok(dispatch!(dtype, op, |T, O| reduce_copy_typed::<T, O>(
        src0, src1, nranks
    )))
}

fn reduce_copy_typed<T: Elem, O: RedOp>(src0: &[u8], src1: &[u8], nranks: u32) -> Vec<u8> {
    let op = O::new(nranks);
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
    check_warp_all_reduce(dtype, width, src, nranks)?;
    dispatch!(dtype, op, |T, O| warp_all_reduce_typed::<T, O>(
        width as usize,
        src,
        nranks
    ))
}

fn warp_all_reduce_typed<T: Elem, O: RedOp>(width: usize, src: &[u8], nranks: u32) -> Result<Vec<u8>> {
    let op = O::new(nranks);
    let s: Vec<T::Bits> = words_from_le(src);
    let mut out = Vec::with_capacity(s.len());
    for group in s.chunks_exact(width) {
        let r = warp_all_reduce_reference::<T, O>(group, op)
            .ok_or_else(|| Error::InvalidArgument("a warp of zero lanes".into()))?;
        out.extend(std::iter::repeat_n(r, width));
    }
    Ok(words_to_le(&out))
}
