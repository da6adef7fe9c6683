//! CUDA memory the communicator shares (`zipcoll_host::cuda_mem`) and the stream it runs on, on
//! a GPU. Without one these tests say so and pass, unless `ZIPCOLL_REQUIRE_GPU=1` (the GPU
//! machine's runs), where a missing GPU path fails them.

use zipcoll_host::cuda::{self, CudaGpu};
use zipcoll_host::cuda_mem::{copy_to_host_async, DeviceAlloc};

/// The GPU to test on; `None` (the test passes) only without a GPU and without
/// `ZIPCOLL_REQUIRE_GPU=1`.
fn gpu() -> Option<std::sync::Arc<CudaGpu>> {
    let required = std::env::var("ZIPCOLL_REQUIRE_GPU").is_ok_and(|v| v == "1");
    match cuda::device_count() {
        Ok(n) if n > 0 => Some(CudaGpu::get(0).expect("CUDA device 0 opens")),
        other => {
            assert!(!required, "ZIPCOLL_REQUIRE_GPU=1 but no CUDA GPU: {other:?}");
            eprintln!("skipped: no CUDA GPU ({other:?})");
            None
        }
    }
}

/// A FIFO region is zero when `DeviceAlloc::zeroed` returns, as seen from a stream that does
/// not wait for the default stream (a peer mapping it by IPC is another context altogether):
/// 1 GiB is first filled with 0xFF and freed, so the next allocation (the driver reuses the
/// range) whose memset had not finished shows 0xFF bytes at its end.
#[test]
fn device_alloc_is_zero_when_zeroed_returns() {
    let Some(gpu) = gpu() else { return };
    let ctx = gpu.context();
    let len = 1 << 30;
    {
        let dirty = DeviceAlloc::zeroed(ctx, len).unwrap();
        // 0xFF everywhere, copied synchronously
        let pattern = vec![0xFFu8; 1 << 24];
        for at in (0..len).step_by(pattern.len()) {
            // SAFETY: `at + pattern.len() <= len` bytes of `dirty`, a live allocation of this
            // context (current: `zeroed` bound it); `pattern` is readable for its length.
            let r = unsafe {
                zipcoll_host::cudarc::driver::sys::cuMemcpyHtoD_v2(
                    dirty.ptr() + at as u64,
                    pattern.as_ptr().cast(),
                    pattern.len(),
                )
            };
            assert_eq!(r, zipcoll_host::cudarc::driver::sys::CUresult::CUDA_SUCCESS);
        }
    }
    let fresh = DeviceAlloc::zeroed(ctx, len).unwrap();
    let side = ctx.new_stream().unwrap();
    let mut tail = vec![0xAAu8; 1 << 20];
    // SAFETY: the last MiB of `fresh`, alive until after the stream is synchronized below.
    unsafe { copy_to_host_async(&side, fresh.ptr() + (len - tail.len()) as u64, &mut tail) }.unwrap();
    side.synchronize().unwrap();
    let nonzero = tail.iter().filter(|b| **b != 0).count();
    assert_eq!(nonzero, 0, "{nonzero} bytes of the last MiB were not zero yet");
}

/// A communicator enqueues on a non-blocking stream of its own (not the legacy default stream,
/// the null handle): its calls and copies run there, in order, and its buffers read back what
/// its calls wrote.
#[test]
fn a_communicator_runs_on_a_non_blocking_stream_of_its_own() {
    use zipcoll_host::comm::{Communicator, Config, Data, Options};
    use zipcoll_host::cudarc::driver::sys;
    use zipcoll_host::{Backend, DType, ReduceOp};
    let Some(_gpu) = gpu() else { return };
    let comm = Communicator::init_all(&[Backend::Cuda { ordinal: 0 }], Config::gpu())
        .unwrap()
        .remove(0);
    let stream = comm.cuda_stream().expect("a CUDA communicator has a stream");
    let handle = stream.cu_stream();
    assert!(!handle.is_null(), "the legacy default stream");
    let mut flags = 0u32;
    // SAFETY: `handle` is a live stream of the communicator's context; `flags` is writable.
    let r = unsafe { sys::cuStreamGetFlags(handle, &mut flags) };
    assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
    assert_eq!(flags, sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32);
    let other = Communicator::init_all(&[Backend::Cuda { ordinal: 0 }], Config::gpu())
        .unwrap()
        .remove(0);
    assert_ne!(
        other.cuda_stream().unwrap().cu_stream(),
        handle,
        "each communicator its own"
    );
    let x: Vec<u8> = (0..4096u32).flat_map(|i| (i as f32).to_le_bytes()).collect();
    let mut buf = comm.alloc(x.len()).unwrap();
    buf.copy_from_host(&x).unwrap();
    comm.all_reduce(
        Data::InPlace(&mut buf),
        4096,
        DType::F32,
        ReduceOp::Sum,
        Options::default(),
    )
    .unwrap();
    assert_eq!(buf.to_host().unwrap(), x, "one rank's sum is its input");
    comm.synchronize().unwrap();
}

/// A call given the caller's stream (`Options::stream`) is ordered with it both ways, as
/// NCCL's: it reads its input after the caller's fill, enqueued behind a gigabyte of memsets
/// on that stream, and the caller's read of the output, enqueued on that stream right after the
/// call (without the communicator's synchronize), sees the sum. Either join missing reads
/// zeros.
#[test]
fn a_call_is_ordered_with_the_callers_stream() {
    use zipcoll_host::comm::{CallStream, Communicator, Config, Data, DeviceSlice, Options};
    use zipcoll_host::cudarc::driver::{sys, CudaContext, DevicePtr};
    use zipcoll_host::{Backend, DType, ReduceOp};
    let Some(_gpu) = gpu() else { return };
    let comm = Communicator::init_all(&[Backend::Cuda { ordinal: 0 }], Config::gpu())
        .unwrap()
        .remove(0);
    let caller = CudaContext::new(0).unwrap().new_stream().unwrap();
    let n = 1 << 22;
    let mut src = caller.alloc_zeros::<f32>(n).unwrap();
    let mut dst = caller.alloc_zeros::<f32>(n).unwrap();
    let mut busy = caller.alloc_zeros::<u8>(1 << 30).unwrap();
    caller.synchronize().unwrap();
    for _ in 0..8 {
        caller.memset_zeros(&mut busy).unwrap();
    }
    {
        let (ptr, _record) = src.device_ptr(&caller);
        // SAFETY: `ptr` holds `n` f32 of the caller's stream's context, alive past the memset.
        let r = unsafe { sys::cuMemsetD32Async(ptr, 1.0f32.to_bits(), n, caller.cu_stream()) };
        assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
    }
    let opts = Options {
        // SAFETY: a live stream of the communicator's context (device 0's primary context),
        // alive until the end of the test
        stream: Some(unsafe { CallStream::from_raw(caller.cu_stream()) }),
        ..Options::default()
    };
    {
        let src_view = DeviceSlice::cuda(&mut src);
        let mut dst_view = DeviceSlice::cuda(&mut dst);
        let data = Data::OutOfPlace {
            src: &src_view,
            dst: &mut dst_view,
        };
        comm.all_reduce(data, n, DType::F32, ReduceOp::Sum, opts).unwrap();
    }
    let got = caller.clone_dtoh(&dst).unwrap();
    let wrong = got.iter().filter(|&&x| x != 1.0).count();
    assert_eq!(wrong, 0, "{wrong} of {n} elements are not the one rank's 1.0");
    comm.synchronize().unwrap();
}

/// Ranks of one process on one GPU are refused at init, as NCCL refuses them: their kernels
/// wait for each other, but the device may queue both ranks' streams on one hardware queue, and
/// then the second never starts (3 such ranks timed out at step 0 on an H100, 2026-12-06). The
/// error names the ranks and says what to do instead.
#[test]
fn ranks_of_one_process_on_one_gpu_are_refused() {
    use zipcoll_host::comm::{Communicator, Config, TransportKind};
    use zipcoll_host::{Backend, Error};
    let Some(_gpu) = gpu() else { return };
    for transport in [TransportKind::Auto, TransportKind::P2p, TransportKind::Net] {
        let config = Config {
            transport,
            ..Config::gpu()
        };
        match Communicator::init_all(&[Backend::Cuda { ordinal: 0 }; 2], config) {
            Err(Error::InvalidArgument(why)) => {
                assert!(why.contains("ranks 0 and 1") && why.contains("same GPU"), "{why}")
            }
            other => panic!("{transport:?}: {:?}", other.map(|c| c.len())),
        }
    }
}
