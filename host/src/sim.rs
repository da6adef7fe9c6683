//! The kernels on the CPU simulator: the same generic functions the GPU entry points are built
//! from, instantiated with `SimWarp<W>` and launched with `zipcoll_targets::sim::launch::<W>`.
//!
//! | kernel            | geometry (n elements, `W` lanes per warp)             |
//! |-------------------|--------------------------------------------------------|
//! | `reduce_copy`     | blocks of `4 * W` threads, at most 8 blocks, grid-stride |
//! | `warp_all_reduce` | the same; every warp walks its groups of `W` elements  |
//! | `encode_frames`, `encode_raw_frames`, `decode_frames` | one warp per frame: blocks of `4 * W` threads, at most 8 blocks, warp-stride over frames |
//! | `decode_one_frame` | one warp, one frame (the exact [`FrameError`] of a frame a kernel rejected) |
//!
//! A panic inside a simulated kernel (a broken warp rule) and every simulator error come back as
//! [`Error::Sim`]. Arguments are checked by the caller ([`crate::ops`]).

use crate::codec::Slots;
use crate::dispatch::{dispatch_coder, words_from_le, words_to_le};
use crate::error::{Error, Result};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;
use zipcoll_device::codec::{self, CodecId, LaneOut, SymbolCoder};
use zipcoll_device::dtype::{Elem, Split};
use zipcoll_device::frame::FrameError;
use zipcoll_device::reduce::RedOp;
use zipcoll_primitives::kernels;
use zipcoll_primitives::kernels::codec::STATUS_WORDS;
use zipcoll_targets::sim::{launch, LaunchConfig, SimWarp};

/// Most blocks a simulated launch uses (the grid-stride loops cover the rest).
const MAX_BLOCKS: u32 = 8;

/// A raw pointer that simulated threads share.
///
/// The kernels only use it for accesses that no two threads make to the same location (each
/// index belongs to one thread of the grid-stride loop; each frame's bytes to one warp, whose
/// lanes write disjoint bytes), so sharing it races on nothing.
pub(crate) struct SharedPtr<T>(pub(crate) *mut T);

// SAFETY: see the type's docs: accesses through the pointer by different threads are to
// disjoint elements, and the pointee outlives the launch (`launch` joins every thread).
unsafe impl<T> Sync for SharedPtr<T> {}

impl<T> SharedPtr<T> {
    /// The pointer (a method, so closures capture the whole `Sync` wrapper).
    pub(crate) fn get(&self) -> *mut T {
        self.0
    }
}

/// The geometry for `n` elements on warps of `W` lanes.
pub(crate) fn config<const W: u32>(n: usize) -> LaunchConfig {
    let block = 4 * W;
    let blocks = n.div_ceil(block as usize).clamp(1, MAX_BLOCKS as usize) as u32;
    LaunchConfig::new(blocks, block)
}

/// Runs `kernel` on the simulator, turning its errors and panics into [`Error::Sim`].
pub(crate) fn run<const W: u32>(cfg: LaunchConfig, kernel: impl Fn(SimWarp<W>) + Sync) -> Result<()> {
    match catch_unwind(AssertUnwindSafe(|| launch::<W>(cfg, kernel))) {
        Ok(r) => r.map_err(|e| Error::Sim(e.to_string())),
        Err(panic) => {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_else(|| "a simulated thread panicked".to_owned());
            Err(Error::Sim(msg))
        }
    }
}

/// `reduce_copy` of two equal-length element buffers with warps of `W` lanes.
pub(crate) fn reduce_copy<const W: u32, T: Elem, O: RedOp>(src0: &[u8], src1: &[u8], nranks: u32) -> Result<Vec<u8>> {
    let a: Vec<T::Bits> = words_from_le(src0);
    let b: Vec<T::Bits> = words_from_le(src1);
    let n = a.len().min(b.len());
    let mut out = vec![T::Bits::default(); n];
    let (pa, pb, pd) = (
        SharedPtr(a.as_ptr().cast_mut()),
        SharedPtr(b.as_ptr().cast_mut()),
        SharedPtr(out.as_mut_ptr()),
    );
    run::<W>(config::<W>(n), |w| {
        // SAFETY: `a` and `b` hold at least `n` elements and `out` exactly `n`; all three live
        // until `run` returns; `out` does not overlap the sources; the kernel reads and
        // writes index `i` from one thread only.
        unsafe { kernels::reduce_copy::<SimWarp<W>, T, O>(w, pa.get(), pb.get(), pd.get(), n, nranks) }
    })?;
    Ok(words_to_le(&out))
}

/// `warp_all_reduce` of an element buffer whose length is a multiple of `W`, with warps of `W`
/// lanes.
pub(crate) fn warp_all_reduce<const W: u32, T: Elem, O: RedOp>(src: &[u8], nranks: u32) -> Result<Vec<u8>> {
    let s: Vec<T::Bits> = words_from_le(src);
    let n = s.len();
    let mut out = vec![T::Bits::default(); n];
    let (ps, pd) = (SharedPtr(s.as_ptr().cast_mut()), SharedPtr(out.as_mut_ptr()));
    run::<W>(config::<W>(n), |w| {
        // SAFETY: `s` and `out` hold `n` elements, live until `run` returns and do not overlap;
        // the block size is a multiple of `W` (whole warps); lane `l` of the warp that owns
        // group `g` is the only thread touching index `g * W + l`.
        unsafe { kernels::warp_all_reduce::<SimWarp<W>, T, O>(w, ps.get(), pd.get(), n, nranks) }
    })?;
    Ok(words_to_le(&out))
}

/// The geometry for one warp per frame: [`config`] over `nframes` warps' worth of threads.
fn frames_config<const W: u32>(nframes: usize) -> LaunchConfig {
    config::<W>(nframes.saturating_mul(W as usize))
}

/// Which encoder [`encode_slots`] runs.
type Encoder<const W: u32, B> = unsafe fn(SimWarp<W>, *const B, usize, usize, *mut u8, usize, *mut u32);

/// Runs `encoder` over `data` (whole elements of `T`) cut into frames of `frame_elems`
/// (`>= 1`) elements, into slots of `slot_bytes` bytes, with the geometry `geometry` gives for
/// the number of frames ([`frames_config`]: a warp per frame; [`block_frames_config`]: a block).
fn encode_slots<const W: u32, T: Elem>(
    data: &[u8],
    frame_elems: usize,
    slot_bytes: usize,
    encoder: Encoder<W, T::Bits>,
    geometry: impl FnOnce(usize) -> LaunchConfig,
) -> Result<Slots> {
    let input: Vec<T::Bits> = words_from_le(data);
    let n = input.len();
    let nframes = n.div_ceil(frame_elems);
    let mut bytes = vec![0u8; nframes * slot_bytes];
    let mut frame_bytes = vec![0u32; nframes];
    let (pi, po, pl) = (
        SharedPtr(input.as_ptr().cast_mut()),
        SharedPtr(bytes.as_mut_ptr()),
        SharedPtr(frame_bytes.as_mut_ptr()),
    );
    run::<W>(geometry(nframes), |w| {
        // SAFETY: `input` holds `n` elements, `bytes` `nframes * slot_bytes` bytes and
        // `frame_bytes` `nframes` entries, all alive until `run` returns and not overlapping;
        // blocks are whole warps; each frame's slot and entry are written by its own warp (or
        // block, with the shared memory the launch gives it) only, whose lanes write disjoint
        // bytes through `LaneOut`.
        unsafe { encoder(w, pi.get(), n, frame_elems, po.get(), slot_bytes, pl.get()) }
    })?;
    Ok(Slots { bytes, frame_bytes })
}

/// `encode_frames` with `codec`'s coder, or `encode_raw_frames` for [`CodecId::Raw`], on warps of
/// `W` lanes (see [`encode_slots`]).
pub(crate) fn encode_frames<const W: u32, T: Split>(
    codec: CodecId,
    data: &[u8],
    frame_elems: usize,
    slot_bytes: usize,
) -> Result<Slots> {
    let encoder: Encoder<W, T::Bits> = dispatch_coder!(
        codec,
        |C| kernels::encode_frames::<SimWarp<W>, T, C>,
        raw => kernels::encode_raw_frames::<SimWarp<W>, T>
    );
    encode_slots::<W, T>(data, frame_elems, slot_bytes, encoder, frames_config::<W>)
}

/// Which decoder [`decode_slots`] runs.
type Decoder<const W: u32, B> =
    unsafe fn(SimWarp<W>, *const u8, *const u64, *const u32, usize, *mut B, usize, usize, *mut u32);

/// Runs `decoder` over the frames of `frames` (one `(offset, len)` each) with the geometry
/// `geometry` gives for the number of frames: the `n` decoded elements' bytes and one status
/// record per frame. The caller checked that every `(offset, len)` lies inside `frames` and
/// that there is one of each per frame.
fn decode_slots<const W: u32, T: Split>(
    frames: &[u8],
    offsets: &[u64],
    lens: &[u32],
    frame_elems: usize,
    n: usize,
    decoder: Decoder<W, T::Bits>,
    geometry: impl FnOnce(usize) -> LaunchConfig,
) -> Result<(Vec<u8>, Vec<u32>)> {
    let nframes = offsets.len().min(lens.len());
    let mut out = vec![T::Bits::default(); n];
    let mut status = vec![0u32; nframes * STATUS_WORDS];
    let (pf, po, pl, pd, ps) = (
        SharedPtr(frames.as_ptr().cast_mut()),
        SharedPtr(offsets.as_ptr().cast_mut()),
        SharedPtr(lens.as_ptr().cast_mut()),
        SharedPtr(out.as_mut_ptr()),
        SharedPtr(status.as_mut_ptr()),
    );
    run::<W>(geometry(nframes), |w| {
        // SAFETY: every frame's `(offset, len)` lies inside `frames` (the caller checked);
        // `offsets` and `lens` hold `nframes` entries, `out` `n` elements and `status`
        // `nframes * STATUS_WORDS` words, all alive until `run` returns; the outputs overlap
        // nothing else; blocks are whole warps; each frame's elements and record are written by
        // its own warp (or block) only.
        unsafe {
            decoder(
                w,
                pf.get(),
                po.get(),
                pl.get(),
                nframes,
                pd.get(),
                frame_elems,
                n,
                ps.get(),
            )
        }
    })?;
    Ok((words_to_le(&out), status))
}

/// `decode_frames` on warps of `W` lanes, a warp per frame ([`decode_slots`]).
pub(crate) fn decode_frames<const W: u32, T: Split>(
    frames: &[u8],
    offsets: &[u64],
    lens: &[u32],
    frame_elems: usize,
    n: usize,
) -> Result<(Vec<u8>, Vec<u32>)> {
    let decoder: Decoder<W, T::Bits> = kernels::decode_frames::<SimWarp<W>, T>;
    decode_slots::<W, T>(frames, offsets, lens, frame_elems, n, decoder, frames_config::<W>)
}

/// Decodes the one frame `frame` with a single warp of `W` lanes into room for `capacity`
/// elements: the frame codec's own result, with a `Corrupt` error's reason (which a status
/// record cannot carry).
pub(crate) fn decode_one_frame<const W: u32, T: Split>(
    frame: &[u8],
    capacity: usize,
) -> Result<Result<usize, FrameError>> {
    decode_one::<W, T>(capacity, LaunchConfig::new(1, W), |w, dst| {
        codec::decode_frame::<SimWarp<W>, T>(w, frame, dst)
    })
}

/// Runs `f` on every thread `cfg` launches and returns what thread 0 returned (`what` names the
/// launch in the error when it returned nothing).
fn thread_0<const W: u32, R: Send>(cfg: LaunchConfig, what: &str, f: impl Fn(SimWarp<W>) -> R + Sync) -> Result<R> {
    let result = Mutex::new(None);
    run::<W>(cfg, |w| {
        let r = f(w);
        if zipcoll_targets::Grid::thread_idx(w) == 0 {
            // A poisoned lock only means another thread panicked; `run` reports that panic.
            if let Ok(mut slot) = result.lock() {
                *slot = Some(r);
            }
        }
    })?;
    result
        .into_inner()
        .ok()
        .flatten()
        .ok_or_else(|| Error::Sim(format!("thread 0 of the {what} returned no result")))
}

/// Runs `decode` with every thread of the one block `cfg` launches, into room for `capacity`
/// elements, and returns what thread 0 got.
fn decode_one<const W: u32, T: Split>(
    capacity: usize,
    cfg: LaunchConfig,
    decode: impl Fn(SimWarp<W>, LaneOut<'_>) -> std::result::Result<usize, FrameError> + Sync,
) -> Result<Result<usize, FrameError>> {
    let mut out = vec![0u8; capacity * T::DTYPE.size_bytes()];
    let (po, len) = (SharedPtr(out.as_mut_ptr()), out.len());
    thread_0::<W, _>(cfg, "decoding launch", |w| {
        // SAFETY: `out` is valid for `len` bytes until the launch returns and only its threads
        // write it, through `LaneOut` (disjoint bytes).
        let dst = unsafe { LaneOut::from_raw(po.get(), len) };
        decode(w, dst)
    })
}

/// The geometry of the block codec kernels: one block of `BLOCK_THREADS` threads per frame (at
/// most [`MAX_BLOCKS`], block-stride), `shared` bytes of shared memory each.
fn block_frames_config(nframes: usize, shared: usize) -> LaunchConfig {
    let blocks = nframes.clamp(1, MAX_BLOCKS as usize) as u32;
    LaunchConfig::new(blocks, kernels::block_codec::BLOCK_THREADS).with_shared_bytes(shared as u32)
}

/// `encode_block_frames` with `codec`'s block coder, or `encode_block_raw_frames` for
/// [`CodecId::Raw`], on 32-lane warps. A codec without a block coder is
/// [`Error::InvalidArgument`].
pub(crate) fn encode_block_frames<T: Split>(
    codec: CodecId,
    data: &[u8],
    frame_elems: usize,
    slot_bytes: usize,
) -> Result<Slots> {
    let encoder: Encoder<32, T::Bits> = match codec {
        CodecId::Raw => kernels::encode_block_raw_frames::<SimWarp<32>, T>,
        CodecId::ExpAns => kernels::encode_block_frames::<SimWarp<32>, T, codec::ExpAns>,
        other => {
            return Err(Error::InvalidArgument(format!(
                "{} has no block coder yet",
                other.name()
            )))
        }
    };
    encode_slots::<32, T>(data, frame_elems, slot_bytes, encoder, |nframes| {
        block_frames_config(nframes, kernels::block_codec::encode_shared_bytes())
    })
}

/// `decode_block_frames` on 32-lane warps, a block per frame ([`decode_slots`]).
pub(crate) fn decode_block_frames<T: Split>(
    frames: &[u8],
    offsets: &[u64],
    lens: &[u32],
    frame_elems: usize,
    n: usize,
) -> Result<(Vec<u8>, Vec<u32>)> {
    let decoder: Decoder<32, T::Bits> = kernels::decode_block_frames::<SimWarp<32>, T>;
    decode_slots::<32, T>(frames, offsets, lens, frame_elems, n, decoder, |nframes| {
        block_frames_config(nframes, kernels::block_codec::decode_shared_bytes())
    })
}

/// [`decode_one_frame`] for a block frame, by one block of `BLOCK_THREADS` threads.
pub(crate) fn decode_one_block_frame<T: Split>(frame: &[u8], capacity: usize) -> Result<Result<usize, FrameError>> {
    let cfg = block_frames_config(1, kernels::block_codec::decode_shared_bytes());
    decode_one::<32, T>(capacity, cfg, |w, dst| {
        let (base, bytes) = zipcoll_targets::SharedMem::shared_mem(w);
        // SAFETY: the block's shared memory, alive for the launch.
        let scratch = unsafe { zipcoll_device::block::Scratch::new(base, bytes as usize) };
        codec::block_frame::decode_block_frame::<SimWarp<32>, T>(w, scratch, frame, dst)
    })
}

/// The coded section of `symbols` (each below `2^bits`) by `codec`'s symbol coder on one
/// simulated warp of 32 lanes, and its parameters; `Ok(None)` when the coder gave up (the
/// section would not fit `max_coded_len`). RAW has no coder: [`Error::InvalidArgument`].
pub(crate) fn code_symbols(codec: CodecId, symbols: &[u8], bits: u32) -> Result<Option<(Vec<u8>, codec::Coded)>> {
    let no_coder = || Error::InvalidArgument("RAW has no symbol coder".into());
    let cap = dispatch_coder!(codec, |C| <C as SymbolCoder>::max_coded_len(symbols.len(), bits), raw => return Err(no_coder()));
    let mut out = vec![0u8; cap];
    let (po, len) = (SharedPtr(out.as_mut_ptr()), out.len());
    let coded = thread_0::<32, _>(LaunchConfig::new(1, 32), "symbol coder", |w| {
        // SAFETY: `out` is valid for `len` bytes until the launch returns; only this warp writes
        // it, through `LaneOut`, with the coder's lanes converged.
        let dst = unsafe { LaneOut::from_raw(po.get(), len) };
        dispatch_coder!(codec, |C| C::encode(w, symbols.len(), bits, |i| symbols[i], dst).ok(), raw => unreachable!("checked above"))
    })?;
    Ok(coded.map(|c| {
        out.truncate(c.len);
        (out, c)
    }))
}

/// The `n` symbols of `bits` bits that `codec`'s coder decodes from exactly `coded` with the
/// parameters it wrote, on one simulated warp of 32 lanes; the coder's [`FrameError`] if the
/// section is not one it writes.
pub(crate) fn decode_symbols(
    codec: CodecId,
    coded: &[u8],
    n: usize,
    bits: u32,
    params: (u16, u32),
) -> Result<std::result::Result<Vec<u8>, FrameError>> {
    if codec == CodecId::Raw {
        return Err(Error::InvalidArgument("RAW has no symbol coder".into()));
    }
    let mut out = vec![0u8; n];
    let po = SharedPtr(out.as_mut_ptr());
    let r = thread_0::<32, _>(LaunchConfig::new(1, 32), "symbol decoder", |w| {
        let put = |i: usize, s: u8| {
            if i < n {
                // SAFETY: `i < n`, inside `out` (alive until the launch returns); the coder puts
                // each symbol once, on one lane.
                unsafe { po.get().add(i).write(s) };
            }
        };
        dispatch_coder!(codec, |C| C::decode(w, n, bits, params.0, params.1, coded, put), raw => unreachable!("checked above"))
    })?;
    Ok(r.map(|()| out))
}
