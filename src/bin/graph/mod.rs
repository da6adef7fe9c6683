//! zipcoll-comm's `graph` check (GPU only): collectives captured into a CUDA graph on the
//! caller's stream, then the graph replayed with new inputs, uncaptured calls between replays,
//! every output checked element by element.
//!
//! | per compression (off, expans, auto) | what                                                 |
//! |-------------------------------------|------------------------------------------------------|
//! | capture                             | all_reduce (sum), all_gather, a ring shift (send to the next rank, receive from the previous) of f32 on the caller's stream |
//! | each replay                         | new inputs copied in, the graph launched, on odd replays an uncaptured all_reduce after it, outputs copied out |
//! | check                               | every element equals the exact result (small integers: sums are exact in f32) |

use crate::common::say;
use std::sync::Arc;
use zipcoll::comm::{CallStream, Communicator, Compression, Data, DeviceSlice, Lossless, Options};
use zipcoll::cudarc::driver::{result, sys, CudaSlice, CudaStream, DevicePtr};
use zipcoll::{CodecId, DType, Error, ReduceOp};

/// Elements per rank: several frames per channel, so each replay moves many steps.
const N: usize = 1 << 20;

/// Rank `rank`'s input element `i` in replay `r`: a small integer, so that sums are exact.
fn value(rank: usize, r: u32, i: usize) -> f32 {
    ((i * 7 + r as usize * 13 + rank * 5) % 251) as f32 - 125.0
}

fn cuda(call: &'static str) -> impl Fn(result::DriverError) -> Error {
    move |e| Error::Cuda {
        call,
        message: format!("{e:?}"),
    }
}

/// Device memory of `n` f32 on `stream` and its address.
fn buffer(stream: &Arc<CudaStream>, n: usize) -> Result<(CudaSlice<f32>, u64), Error> {
    let s = stream.alloc_zeros::<f32>(n).map_err(cuda("cuMemAlloc"))?;
    let ptr = {
        let (ptr, _record) = s.device_ptr(stream);
        ptr
    };
    Ok((s, ptr))
}

/// The check on one rank: `replays` replays under each compression; `true` when every output
/// of every replay was right.
pub fn graph(comm: Communicator, replays: u32) -> Result<bool, Error> {
    let Some(own) = comm.cuda_stream() else {
        return Err(Error::InvalidArgument(
            "graph: CUDA graphs need a GPU communicator".into(),
        ));
    };
    let stream = own.context().new_stream().map_err(cuda("cuStreamCreate"))?;
    let (me, k) = (comm.rank(), comm.nranks());
    let (next, prev) = ((me + 1) % k, (me + k - 1) % k);
    let (_src, src) = buffer(&stream, N)?;
    let (_sum, sum) = buffer(&stream, N)?;
    let (_gathered, gathered) = buffer(&stream, N * k)?;
    let (_shifted, shifted) = buffer(&stream, N)?;
    let (_plain, plain) = buffer(&stream, N)?;
    stream.synchronize().map_err(cuda("cuStreamSynchronize"))?;
    // SAFETY: each address holds the f32s named, allocated above and alive to the end of this
    // function (the `_` bindings), after the last replay and the final synchronize.
    let view = |ptr: u64, n: usize| unsafe { DeviceSlice::cuda_raw(ptr, n * 4) };
    let (src_v, mut sum_v, mut gathered_v) = (view(src, N), view(sum, N), view(gathered, N * k));
    let (mut shifted_v, mut plain_v) = (view(shifted, N), view(plain, N));
    let mut all_ok = true;
    for compression in [
        Compression::Off,
        Compression::Lossless(Lossless::Force(CodecId::ExpAns)),
        Compression::Lossless(Lossless::Auto),
    ] {
        let opts = Options {
            // SAFETY: a live stream of the communicator's context, alive to the end of this
            // function, after every call
            stream: Some(unsafe { CallStream::from_raw(stream.cu_stream()) }),
            compression: Some(compression),
            ..Options::default()
        };
        stream
            .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL)
            .map_err(cuda("cuStreamBeginCapture"))?;
        let captured = (|| {
            let data = Data::OutOfPlace {
                src: &src_v,
                dst: &mut sum_v,
            };
            comm.all_reduce(data, N, DType::F32, ReduceOp::Sum, opts)?;
            let data = Data::OutOfPlace {
                src: &src_v,
                dst: &mut gathered_v,
            };
            comm.all_gather(data, N, DType::F32, opts)?;
            let mut g = comm.group();
            g.send(&src_v, N, DType::F32, next)?;
            g.recv(&mut shifted_v, N, DType::F32, prev)?;
            g.launch(opts)
        })();
        // the capture ends whatever happened, so that the stream is usable again
        let ended = stream.end_capture(sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH);
        captured?;
        let graph = ended
            .map_err(cuda("cuStreamEndCapture"))?
            .ok_or_else(|| Error::InvalidArgument("graph: the capture recorded nothing".into()))?;
        let mut wrong = 0usize;
        for r in 0..replays {
            let input: Vec<f32> = (0..N).map(|i| value(me, r, i)).collect();
            // SAFETY: `src` holds N f32; `input` lives until the synchronize below.
            unsafe { result::memcpy_htod_async(src, &input, stream.cu_stream()) }.map_err(cuda("cuMemcpyHtoDAsync"))?;
            graph.launch().map_err(cuda("cuGraphLaunch"))?;
            if r % 2 == 1 {
                let data = Data::OutOfPlace {
                    src: &src_v,
                    dst: &mut plain_v,
                };
                comm.all_reduce(data, N, DType::F32, ReduceOp::Sum, opts)?;
            }
            let mut out = vec![0f32; N * (3 + k)];
            let (sum_h, rest) = out.split_at_mut(N);
            let (shifted_h, rest) = rest.split_at_mut(N);
            let (plain_h, gathered_h) = rest.split_at_mut(N);
            // SAFETY: each source holds the f32s of its destination; the host buffers live
            // until the synchronize below.
            unsafe {
                result::memcpy_dtoh_async(sum_h, sum, stream.cu_stream()).map_err(cuda("cuMemcpyDtoHAsync"))?;
                result::memcpy_dtoh_async(shifted_h, shifted, stream.cu_stream()).map_err(cuda("cuMemcpyDtoHAsync"))?;
                result::memcpy_dtoh_async(plain_h, plain, stream.cu_stream()).map_err(cuda("cuMemcpyDtoHAsync"))?;
                result::memcpy_dtoh_async(gathered_h, gathered, stream.cu_stream())
                    .map_err(cuda("cuMemcpyDtoHAsync"))?;
            }
            stream.synchronize().map_err(cuda("cuStreamSynchronize"))?;
            let want_sum = |i: usize| (0..k).map(|q| value(q, r, i)).sum::<f32>();
            wrong += (0..N).filter(|&i| sum_h[i] != want_sum(i)).count();
            wrong += (0..N).filter(|&i| shifted_h[i] != value(prev, r, i)).count();
            wrong += (0..N * k).filter(|&j| gathered_h[j] != value(j / N, r, j % N)).count();
            if r % 2 == 1 {
                wrong += (0..N).filter(|&i| plain_h[i] != want_sum(i)).count();
            }
        }
        // the uncaptured calls' outcomes (a replay's are not reported)
        comm.synchronize()?;
        let ok = wrong == 0 && replays > 0;
        all_ok &= ok;
        say!(
            "graph over {:?}: rank {me} compression {compression:?}: {replays} replays of all_reduce + all_gather + \
             ring shift ({N} f32 per rank), an uncaptured all_reduce after every second one: {wrong} elements wrong: {}",
            comm.transport(),
            if ok { "ok" } else { "FAILED" }
        );
    }
    Ok(all_ok)
}
