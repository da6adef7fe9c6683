//! The first kernels behind one backend-neutral call each, on raw little-endian element bytes.
//!
//! | call                  | checks                                                            | result              |
//! |-----------------------|-------------------------------------------------------------------|---------------------|
//! | [`reduce_copy`]       | equal lengths, whole elements, `nranks >= 1`                      | `op(src0, src1)`    |
//! | [`warp_all_reduce`]   | whole elements, a whole number of warps, `nranks >= 1`            | each warp's group all-reduced |
//!
//! On [`Backend::Sim`] / [`Backend::Sim64`] the generic kernel runs on the simulator; on
//! [`Backend::Cuda`] / [`Backend::Hip`] the manifest's entry point for (dtype, op) is launched
//! from the embedded module, on `GPU_BLOCK`-thread blocks.
//!
//! ```
//! use zipcoll_host::{reduce_copy, Backend, DType, ReduceOp};
//! let a: Vec<u8> = [1.5f32, -2.0].iter().flat_map(|x| x.to_le_bytes()).collect();
//! let b: Vec<u8> = [0.5f32, 8.0].iter().flat_map(|x| x.to_le_bytes()).collect();
//! let out = reduce_copy(Backend::Sim, DType::F32, ReduceOp::Max, &a, &b, 2).unwrap();
//! let want: Vec<u8> = [1.5f32, 8.0].iter().flat_map(|x| x.to_le_bytes()).collect();
//! assert_eq!(out, want);
//! ```

use crate::backend::Backend;
use crate::cuda::CudaGpu;
use crate::dispatch::dispatch;
use crate::error::{Error, Result};
use crate::hip::HipGpu;
use crate::launch::{Buf, Launch, Param};
use crate::sim;
use zipcoll_device::dtype::DType;
use zipcoll_device::reduce::ReduceOp;
use zipcoll_primitives::kernels::{ReduceCopy, WarpAllReduce};
use zipcoll_primitives::manifest::Kernel;

/// Threads per block of GPU launches (a multiple of both warp widths).
pub(crate) const GPU_BLOCK: u32 = 256;
/// Most blocks of a GPU launch; the kernels' grid-stride loops cover larger inputs.
pub(crate) const GPU_MAX_BLOCKS: usize = 4096;

/// The number of whole `dtype` elements in `bytes`, or why it is not whole.
fn elements(dtype: DType, what: &str, bytes: &[u8]) -> Result<usize> {
    let size = dtype.size_bytes();
    let (n, partial) = (bytes.len() / size, bytes.len() % size);
    if partial != 0 {
        return Err(Error::InvalidArgument(format!(
            "{what} has {} bytes, not a whole number of {dtype:?} elements ({size} bytes each)",
            bytes.len()
        )));
    }
    Ok(n)
}

fn check_nranks(nranks: u32) -> Result<()> {
    if nranks == 0 {
        return Err(Error::InvalidArgument("nranks must be at least 1".into()));
    }
    Ok(())
}

/// Checks `reduce_copy`'s arguments; returns the element count.
pub(crate) fn check_reduce_copy(dtype: DType, op: ReduceOp, src0: &[u8], src1: &[u8], nranks: u32) -> Result<usize> {
    check_op(dtype, op)?;
    let n = elements(dtype, "src0", src0)?;
    let n1 = elements(dtype, "src1", src1)?;
    if n != n1 {
        return Err(Error::InvalidArgument(format!(
            "src0 has {n} elements but src1 has {n1}"
        )));
    }
    check_nranks(nranks)?;
    Ok(n)
}

/// `InvalidArgument` for Avg of an integer dtype: these kernels combine elements without
/// dividing, and an integer average divides the sum once at the end (NCCL's SumPostDiv, which
/// the collectives run).
fn check_op(dtype: DType, op: ReduceOp) -> Result<()> {
    if dtype.is_integer() && op == ReduceOp::Avg {
        return Err(Error::InvalidArgument(format!(
            "Avg of the integer dtype {dtype:?} divides the sum once at the end, which reduce_copy and \
             warp_all_reduce do not; the collectives average integers"
        )));
    }
    Ok(())
}

/// Checks `warp_all_reduce`'s arguments for warps of `width` lanes; returns the element count.
pub(crate) fn check_warp_all_reduce(dtype: DType, op: ReduceOp, width: u32, src: &[u8], nranks: u32) -> Result<usize> {
    check_op(dtype, op)?;
    let n = elements(dtype, "src", src)?;
    if width == 0 {
        return Err(Error::InvalidArgument("the warp width must be at least 1".into()));
    }
    if n % width as usize != 0 {
        return Err(Error::InvalidArgument(format!(
            "warp_all_reduce needs a multiple of the warp width ({width}) elements, got {n}"
        )));
    }
    check_nranks(nranks)?;
    Ok(n)
}

/// `dst[i] = combine(pre(src0[i]), pre(src1[i]))` with `op` over `nranks` contributions (Avg
/// scales each input by `1 / nranks`), on `backend`. `src0` and `src1` hold the same number of
/// little-endian `dtype` elements.
pub fn reduce_copy(
    backend: Backend,
    dtype: DType,
    op: ReduceOp,
    src0: &[u8],
    src1: &[u8],
    nranks: u32,
) -> Result<Vec<u8>> {
    let n = check_reduce_copy(dtype, op, src0, src1, nranks)?;
    if n == 0 {
        return Ok(Vec::new());
    }
    match backend {
        Backend::Sim => dispatch!(dtype, op, |T, O| sim::reduce_copy::<32, T, O>(src0, src1, nranks)),
        Backend::Sim64 => dispatch!(dtype, op, |T, O| sim::reduce_copy::<64, T, O>(src0, src1, nranks)),
        Backend::Cuda { .. } | Backend::Hip { .. } => {
            let bufs = [Buf::In(src0), Buf::In(src1), Buf::Out(src0.len())];
            let params = [
                Param::Buf(0),
                Param::Buf(1),
                Param::Buf(2),
                Param::U64(n as u64),
                Param::U32(nranks),
            ];
            // SAFETY: every ReduceCopy entry point takes (src0: *const Bits, src1: *const Bits,
            // dst: *mut Bits, n: usize, nranks: u32) after the AMD geometry parameters, as
            // `params` lists; the three buffers hold `n` elements of the dtype whose entry point
            // is looked up, do not overlap, and the grid-stride kernel touches only `i < n`.
            unsafe { run_gpu::<ReduceCopy>(backend, dtype, op, n, &bufs, &params) }
        }
    }
}

/// For every group of `backend.warp_width()` consecutive elements of `src`, every element of the
/// result is the group's all-reduce with `op` over `nranks` contributions (Avg scales each input
/// by `1 / nranks`), computed by one warp in the butterfly order of
/// [`zipcoll_device::warp_reduce`]. `src` holds a multiple of the warp width of little-endian
/// `dtype` elements.
pub fn warp_all_reduce(backend: Backend, dtype: DType, op: ReduceOp, src: &[u8], nranks: u32) -> Result<Vec<u8>> {
    let n = check_warp_all_reduce(dtype, op, backend.warp_width(), src, nranks)?;
    if n == 0 {
        return Ok(Vec::new());
    }
    match backend {
        Backend::Sim => dispatch!(dtype, op, |T, O| sim::warp_all_reduce::<32, T, O>(src, nranks)),
        Backend::Sim64 => dispatch!(dtype, op, |T, O| sim::warp_all_reduce::<64, T, O>(src, nranks)),
        Backend::Cuda { .. } | Backend::Hip { .. } => {
            let bufs = [Buf::In(src), Buf::Out(src.len())];
            let params = [Param::Buf(0), Param::Buf(1), Param::U64(n as u64), Param::U32(nranks)];
            // SAFETY: every WarpAllReduce entry point takes (src: *const Bits, dst: *mut Bits,
            // n: usize, nranks: u32) after the AMD geometry parameters, as `params` lists; both
            // buffers hold `n` elements of the looked-up dtype and do not overlap; the block
            // size (GPU_BLOCK) is a multiple of the warp width, and the kernel touches only
            // `i < n`.
            unsafe { run_gpu::<WarpAllReduce>(backend, dtype, op, n, &bufs, &params) }
        }
    }
}

/// Launches kernel `K`'s entry point for (`dtype`, `op`) on a GPU backend over `n` elements and
/// returns its one output buffer.
///
/// # Safety
/// `params` match the parameters of every entry point of `K` (after the AMD geometry
/// parameters), and with any grid of `GPU_BLOCK`-thread blocks the kernel accesses only the
/// given buffers, within their sizes.
unsafe fn run_gpu<K: Kernel>(
    backend: Backend,
    dtype: DType,
    op: ReduceOp,
    n: usize,
    bufs: &[Buf<'_>],
    params: &[Param],
) -> Result<Vec<u8>> {
    let launch = Launch {
        grid_dim: n.div_ceil(GPU_BLOCK as usize).clamp(1, GPU_MAX_BLOCKS) as u32,
        block_dim: GPU_BLOCK,
        shared_bytes: 0,
        bufs,
        params,
    };
    let mut outputs = match backend {
        Backend::Cuda { ordinal } => {
            let gpu = CudaGpu::get(ordinal)?;
            let f = gpu.registry().function::<K>(Some(dtype), Some(op))?;
            // SAFETY: forwarded to the caller.
            unsafe { gpu.run(&f, &launch) }?
        }
        Backend::Hip { ordinal } => {
            let gpu = HipGpu::get(ordinal)?;
            let f = gpu.registry().function::<K>(Some(dtype), Some(op))?;
            // SAFETY: forwarded to the caller.
            unsafe { gpu.run(&f, &launch) }?
        }
        Backend::Sim | Backend::Sim64 => {
            return Err(Error::InvalidArgument(format!("{backend} is not a GPU backend")));
        }
    };
    outputs
        .pop()
        .ok_or_else(|| Error::InvalidArgument("the launch has no output buffer".into()))
}
