//! Runs a [`Plan`] on a CUDA GPU: the plan's channels, works and warp starts are copied into
//! device scratch memory, every warp's status record (pinned host memory) is zeroed, the
//! manifest's `collective` entry point for the call's dtype and op (each channel names its
//! codec) is launched with one block of one warp per plan warp, and the stream is synchronized.
//!
//! | scratch offset            | holds                                 |
//! |---------------------------|---------------------------------------|
//! | 0                         | the plan's `ChannelDesc`s             |
//! | `channels` (8-aligned)    | its `WorkDesc`s                       |
//! | after the works           | `warps + 1` `u32` warp starts          |

use super::connect::MAX_WARPS;
use super::plan::Plan;
use crate::cuda::{cuda_error, CudaGpu};
use crate::cuda_mem::{DeviceAlloc, PinnedHost};
use crate::dispatch::dispatch_dtype;
use crate::error::{Error, Result};
use cudarc::driver::{LaunchConfig, PushKernelArg};
use std::sync::{Mutex, PoisonError};
use zipcoll_device::arbitrate::{sampled_words, word_bytes};
use zipcoll_device::dtype::DType;
use zipcoll_device::reduce::ReduceOp;
use zipcoll_primitives::collectives::WorkDesc;
use zipcoll_primitives::conn::{ChannelDesc, STATUS_WORDS};
use zipcoll_primitives::kernels::Collective;

/// The bytes of a slice of plain `#[repr(C)]` records.
fn bytes_of<T: Copy>(v: &[T]) -> &[u8] {
    // SAFETY: `T` is a `Copy` `#[repr(C)]` record (ChannelDesc, WorkDesc, u32) whose bytes are
    // all initialized (8-byte fields, no padding); the slice is borrowed for the result's life.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast(), std::mem::size_of_val(v)) }
}

/// Runs `plan` on `gpu` (see the module docs); each warp's status record.
pub(crate) fn run(
    gpu: &CudaGpu,
    words: &PinnedHost,
    scratch: &Mutex<Option<DeviceAlloc>>,
    plan: &mut Plan,
    dtype: DType,
    op: ReduceOp,
) -> Result<Vec<[u32; STATUS_WORDS]>> {
    let warps = plan.warps();
    if warps == 0 {
        return Ok(Vec::new());
    }
    if warps > MAX_WARPS {
        return Err(Error::InvalidArgument(format!(
            "{warps} warps in one launch, at most {MAX_WARPS}"
        )));
    }
    let f = gpu.registry().function::<Collective>(Some(dtype), Some(op))?;
    let channels_bytes = std::mem::size_of_val(plan.channels.as_slice());
    let works_at = channels_bytes.next_multiple_of(8);
    let starts_at = works_at + std::mem::size_of_val(plan.works.as_slice());
    let total = starts_at + 4 * plan.warp_starts.len();
    let mut scratch = scratch.lock().unwrap_or_else(PoisonError::into_inner);
    if scratch.as_ref().is_none_or(|s| s.bytes() < total) {
        *scratch = Some(DeviceAlloc::zeroed(gpu.context(), total.next_power_of_two())?);
    }
    let base = scratch.as_ref().map_or(0, DeviceAlloc::ptr);
    // the status records follow the abort word
    let status_host = words.host().wrapping_add(4).cast::<u32>();
    let status_dev = (words.device() + 4) as *mut u32;
    plan.bind(base as *const ChannelDesc, status_dev);
    let mut image = vec![0u8; total];
    image[..channels_bytes].copy_from_slice(bytes_of(&plan.channels));
    image[works_at..starts_at].copy_from_slice(bytes_of::<WorkDesc>(&plan.works));
    image[starts_at..].copy_from_slice(bytes_of(&plan.warp_starts));
    // SAFETY: `warps * STATUS_WORDS` words after the abort word lie in `words` (MAX_WARPS
    // records were allocated); no kernel runs (calls are ordered and synchronized).
    unsafe { std::ptr::write_bytes(status_host, 0, warps * STATUS_WORDS) };
    let stream = gpu.stream();
    gpu.context().bind_to_thread().map_err(cuda_error("cuCtxSetCurrent"))?;
    // SAFETY: `total` bytes fit the scratch allocation; synchronous copy.
    let r = unsafe { cudarc::driver::sys::cuMemcpyHtoD_v2(base, image.as_ptr().cast(), total) };
    if r != cudarc::driver::sys::CUresult::CUDA_SUCCESS {
        return Err(Error::Cuda {
            call: "cuMemcpyHtoD",
            message: format!("{r:?}"),
        });
    }
    let (works_ptr, starts_ptr) = (base + works_at as u64, base + starts_at as u64);
    let cfg = LaunchConfig {
        grid_dim: (warps as u32, 1, 1),
        block_dim: (32, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut launch = stream.launch_builder(&f);
    launch.arg(&works_ptr).arg(&starts_ptr);
    // SAFETY: the entry point takes `(works: *const u8, starts: *const u32)`; `starts` holds
    // `warps + 1` ascending indices into the works, whose pointers (buffers checked by the
    // call, FIFOs, staging buffers, status records) are live device or mapped memory.
    unsafe { launch.launch(cfg) }.map_err(cuda_error("cuLaunchKernel"))?;
    gpu.synchronize()?;
    let mut records = Vec::with_capacity(warps);
    for w in 0..warps {
        let mut r = [0u32; STATUS_WORDS];
        for (i, word) in r.iter_mut().enumerate() {
            // SAFETY: inside the records zeroed above; the kernel has finished (synchronized).
            *word = unsafe { status_host.add(w * STATUS_WORDS + i).read_volatile() };
        }
        records.push(r);
    }
    Ok(records)
}

/// A host image of the `n` elements of `dtype` at device address `src` in which only the
/// ranges the arbitration's sampler reads (at most 64 KiB) are copied; the rest stays zero
/// (and, being `calloc`ed, is never touched).
pub(crate) fn sample(gpu: &CudaGpu, dtype: DType, src: u64, n: usize) -> Result<Vec<u64>> {
    let bytes = n * dtype.size_bytes();
    let mut image = vec![0u64; bytes.div_ceil(8)];
    let (ranges, word) = dispatch_dtype!(dtype, |T| (
        sampled_words::<T>(n).collect::<Vec<_>>(),
        word_bytes::<T>()
    ));
    gpu.context().bind_to_thread().map_err(cuda_error("cuCtxSetCurrent"))?;
    gpu.synchronize()?;
    for (start, len) in ranges {
        let (at, len) = (start * word, (len * word).min(bytes - (start * word).min(bytes)));
        // SAFETY: `at + len <= bytes`: inside the call's input on the device and inside the
        // image on the host.
        let r = unsafe {
            cudarc::driver::sys::cuMemcpyDtoH_v2(image.as_mut_ptr().cast::<u8>().add(at).cast(), src + at as u64, len)
        };
        if r != cudarc::driver::sys::CUresult::CUDA_SUCCESS {
            return Err(Error::Cuda {
                call: "cuMemcpyDtoH",
                message: format!("{r:?}"),
            });
        }
    }
    Ok(image)
}
