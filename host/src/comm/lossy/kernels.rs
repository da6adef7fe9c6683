//! The lossy calls' three kernels (`zipcoll_primitives::kernels::lossy`) launched on a
//! communicator's engine: on the simulator at once with the backend's warp width, on a GPU on
//! the communicator's stream (ordered with its calls) in blocks of `GPU_BLOCK` threads.
//!
//! | launch        | grid (GPU)                                 | simulator                |
//! |---------------|--------------------------------------------|--------------------------|
//! | [`stats`]     | one warp per bucket, at most `GPU_MAX_BLOCKS` blocks (warp-stride) | `sim::config` over the buckets' warps |
//! | [`quantize`] | one thread per `QUANTIZE_UNIT` (8) elements, at most `GPU_MAX_BLOCKS` blocks (grid-stride) | `sim::config` over the units |
//! | [`dequantize`] | one thread per 16 bytes of elements, at most `GPU_MAX_BLOCKS` blocks (grid-stride) | `sim::config` over the vectors |
//!
//! Every pointer is an address in the engine's memory (host memory on the simulator).

use crate::backend::Backend;
use crate::comm::connect::Engine;
use crate::cuda::cuda_error;
use crate::error::{Error, Result};
use crate::ops::{GPU_BLOCK, GPU_MAX_BLOCKS};
use crate::sim::{config, run, SharedPtr};
use cudarc::driver::{LaunchConfig, PushKernelArg};
use zipcoll_device::dtype::{Bf16, DType, F32Exact, F16, F32};
use zipcoll_primitives::kernels::lossy::{self, QUANTIZE_UNIT};
use zipcoll_primitives::kernels::{Dequantize, LossyStats, Quantize};
use zipcoll_targets::sim::SimWarp;

/// [`quantize`]'s and [`dequantize`]'s quantizer: the error bound (`levels == 0`) or QSGD's
/// levels, with what each needs.
#[derive(Clone, Copy, Debug)]
pub(super) struct Levels {
    /// QSGD's levels `s`; 0: the error bound.
    pub levels: u32,
    /// Elements per statistics record.
    pub bucket: usize,
    /// QSGD's draws.
    pub seed: u64,
}

/// The GPU grid for `threads` threads of work.
fn grid(threads: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (
            threads.div_ceil(GPU_BLOCK as usize).clamp(1, GPU_MAX_BLOCKS) as u32,
            1,
            1,
        ),
        block_dim: (GPU_BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// The threads of [`dequantize`] on `n` elements: one per 16 bytes.
fn vectors(dtype: DType, n: usize) -> usize {
    (n * dtype.size_bytes()).div_ceil(16)
}

/// `InvalidArgument` for a dtype the lossy kernels are not built for.
fn not_lossy(dtype: DType) -> Error {
    Error::InvalidArgument(format!("lossy calls quantize f32, bf16 and f16, not {dtype:?}"))
}

/// Calls `$f::<W, T>(args)` with `T` the `F32Exact` type of `$dtype` (f32, bf16, f16) and `W`
/// the simulator's warp width of `$backend`.
macro_rules! on_sim {
    ($dtype:expr, $backend:expr, $f:ident($($arg:expr),*)) => {
        match ($dtype, $backend) {
            (DType::F32, Backend::Sim64) => $f::<64, F32>($($arg),*),
            (DType::F32, _) => $f::<32, F32>($($arg),*),
            (DType::Bf16, Backend::Sim64) => $f::<64, Bf16>($($arg),*),
            (DType::Bf16, _) => $f::<32, Bf16>($($arg),*),
            (DType::F16, Backend::Sim64) => $f::<64, F16>($($arg),*),
            (DType::F16, _) => $f::<32, F16>($($arg),*),
            (other, _) => Err(not_lossy(other)),
        }
    };
}

/// Where a launch goes: the engine's GPU (its registry and stream) or the simulator.
fn gpu(
    engine: &Engine,
) -> Option<(
    &std::sync::Arc<crate::cuda::CudaGpu>,
    &std::sync::Arc<cudarc::driver::CudaStream>,
)> {
    match engine {
        Engine::Cuda { gpu, stream, .. } => Some((gpu, stream)),
        Engine::Sim { .. } => None,
    }
}

/// The statistics records of the buckets of `bucket` elements of the `n` `dtype` elements at
/// `input`, into `stats` ([`lossy::STAT_WORDS`] `f32`s per bucket).
///
/// # Safety
/// `input` holds `n` elements and `stats` room for `ceil(n / bucket)` records, in the engine's
/// memory, alive and untouched by others until the launch has run; `bucket >= 1`.
pub(super) unsafe fn stats(
    (engine, backend): (&Engine, Backend),
    dtype: DType,
    input: *const u8,
    n: usize,
    bucket: usize,
    stats: *mut u8,
) -> Result<()> {
    let warps = n.div_ceil(bucket);
    let Some((gpu, stream)) = gpu(engine) else {
        /// The simulator's launch.
        unsafe fn sim<const W: u32, T: F32Exact>(
            input: *const u8,
            n: usize,
            bucket: usize,
            stats: *mut u8,
            warps: usize,
        ) -> Result<()> {
            let (pi, ps) = (
                SharedPtr(input.cast_mut().cast::<T::Bits>()),
                SharedPtr(stats.cast::<f32>()),
            );
            run::<W>(config::<W>(warps * W as usize), |w| {
                // SAFETY: the caller's contract; `config` launches whole warps.
                unsafe { lossy::lossy_stats::<SimWarp<W>, T>(w, pi.get(), n, bucket, ps.get()) }
            })
        }
        // SAFETY: forwarded.
        return unsafe { on_sim!(dtype, backend, sim(input, n, bucket, stats, warps)) };
    };
    let f = gpu.registry().function::<LossyStats>(Some(dtype), None)?;
    let (input, stats) = (input as u64, stats as u64);
    let mut launch = stream.launch_builder(&f);
    launch.arg(&input).arg(&n).arg(&bucket).arg(&stats);
    // SAFETY: the entry point takes `(input, n, bucket, stats)` as above (the caller's
    // contract); `GPU_BLOCK` is whole warps.
    unsafe { launch.launch(grid(warps * 32)) }.map_err(cuda_error("cuLaunchKernel"))?;
    Ok(())
}

/// One launch of `kernels::lossy::quantize`: the `n` elements at `input` into `i8` levels at
/// `out`, under the bound `eb` within `qmax`, or QSGD with the norms of `stats`' records; a
/// bucket's rejection words at `rejected` (`lossy::REJECTED_WORDS` `u32`s per bucket of
/// `how.bucket` elements) set to 1 where an element of it has no level.
#[derive(Clone, Copy, Debug)]
pub(super) struct Quantizing {
    pub input: *const u8,
    pub n: usize,
    pub stats: *const u8,
    pub how: Levels,
    pub eb: f32,
    pub qmax: u32,
    pub out: *mut u8,
    pub rejected: *mut u8,
}

/// Runs `q` on `dtype` elements.
///
/// # Safety
/// `q.input` holds `n` elements, `q.out` room for `n` levels, `q.rejected` the rejection words
/// and (QSGD) `q.stats` the records of `ceil(n / bucket)` buckets, in the engine's memory,
/// alive and untouched by others until the launch has run.
pub(super) unsafe fn quantize((engine, backend): (&Engine, Backend), dtype: DType, q: Quantizing) -> Result<()> {
    let threads = q.n.div_ceil(QUANTIZE_UNIT);
    let Some((gpu, stream)) = gpu(engine) else {
        /// The simulator's launch.
        unsafe fn sim<const W: u32, T: F32Exact>(q: Quantizing, threads: usize) -> Result<()> {
            let pi = SharedPtr(q.input.cast_mut().cast::<T::Bits>());
            let ps = SharedPtr(q.stats.cast_mut().cast::<f32>());
            let (po, pr) = (SharedPtr(q.out.cast::<i8>()), SharedPtr(q.rejected.cast::<u32>()));
            let Levels { levels, bucket, seed } = q.how;
            run::<W>(config::<W>(threads), |w| {
                let (i, s, o, r) = (pi.get(), ps.get(), po.get(), pr.get());
                // SAFETY: the caller's contract; each element is one thread's, `rejected` is
                // stored atomically.
                unsafe { lossy::quantize::<SimWarp<W>, T>(w, i, q.n, s, bucket, q.eb, q.qmax, levels, seed, o, r) }
            })
        }
        // SAFETY: forwarded.
        return unsafe { on_sim!(dtype, backend, sim(q, threads)) };
    };
    let f = gpu.registry().function::<Quantize>(Some(dtype), None)?;
    let (input, stats, out, rejected) = (q.input as u64, q.stats as u64, q.out as u64, q.rejected as u64);
    let Levels { levels, bucket, seed } = q.how;
    let mut launch = stream.launch_builder(&f);
    launch
        .arg(&input)
        .arg(&q.n)
        .arg(&stats)
        .arg(&bucket)
        .arg(&q.eb)
        .arg(&q.qmax);
    launch.arg(&levels).arg(&seed).arg(&out).arg(&rejected);
    // SAFETY: the entry point's parameters in this order, as the caller's contract describes.
    unsafe { launch.launch(grid(threads)) }.map_err(cuda_error("cuLaunchKernel"))?;
    Ok(())
}

/// One launch of `kernels::lossy::dequantize`: the `n` combined `i8` levels at `input` scaled
/// back into elements at `out`, divided by `divisor`. Element `i` comes from source
/// `i / block`, at position `first + i % block` of that source's input; each source has
/// `records` statistics records in `stats` (QSGD) and an entry of `ebs` (the error bound).
#[derive(Clone, Copy, Debug)]
pub(super) struct Dequantizing {
    pub input: *const u8,
    pub n: usize,
    pub block: usize,
    pub first: usize,
    pub stats: *const u8,
    pub records: usize,
    pub how: Levels,
    pub ebs: *const u8,
    pub divisor: u32,
    pub out: *mut u8,
}

/// Runs `d` into `dtype` elements.
///
/// # Safety
/// `d.input` holds `n` levels, `d.out` room for `n` elements, `d.ebs` an entry per source (the
/// error bound) or `d.stats` every source's records (QSGD), in the engine's memory, alive and
/// untouched by others until the launch has run; `block`, `bucket >= 1`.
pub(super) unsafe fn dequantize((engine, backend): (&Engine, Backend), dtype: DType, d: Dequantizing) -> Result<()> {
    let threads = vectors(dtype, d.n);
    let Some((gpu, stream)) = gpu(engine) else {
        /// The simulator's launch.
        unsafe fn sim<const W: u32, T: F32Exact>(d: Dequantizing, threads: usize) -> Result<()> {
            let (pi, ps) = (
                SharedPtr(d.input.cast_mut().cast::<i8>()),
                SharedPtr(d.stats.cast_mut().cast::<f32>()),
            );
            let (pe, po) = (
                SharedPtr(d.ebs.cast_mut().cast::<f32>()),
                SharedPtr(d.out.cast::<T::Bits>()),
            );
            let Levels { levels, bucket, .. } = d.how;
            run::<W>(config::<W>(threads), |w| {
                let (i, s, e, o) = (pi.get(), ps.get(), pe.get(), po.get());
                // SAFETY: the caller's contract; each element is one thread's.
                unsafe {
                    lossy::dequantize::<SimWarp<W>, T>(
                        w, i, d.n, d.block, d.first, s, d.records, bucket, e, levels, d.divisor, o,
                    )
                }
            })
        }
        // SAFETY: forwarded.
        return unsafe { on_sim!(dtype, backend, sim(d, threads)) };
    };
    let f = gpu.registry().function::<Dequantize>(Some(dtype), None)?;
    let (input, stats, ebs, out) = (d.input as u64, d.stats as u64, d.ebs as u64, d.out as u64);
    let Levels { levels, bucket, .. } = d.how;
    let mut launch = stream.launch_builder(&f);
    launch
        .arg(&input)
        .arg(&d.n)
        .arg(&d.block)
        .arg(&d.first)
        .arg(&stats)
        .arg(&d.records);
    launch.arg(&bucket).arg(&ebs).arg(&levels).arg(&d.divisor).arg(&out);
    // SAFETY: the entry point's parameters in this order, as the caller's contract describes.
    unsafe { launch.launch(grid(threads)) }.map_err(cuda_error("cuLaunchKernel"))?;
    Ok(())
}
