//! The frame codec as kernels: a buffer cut into frames of `frame_elems` elements, one warp per
//! frame (warp-stride, so any geometry covers any number of frames), each frame encoded into a
//! fixed-size slot or decoded from anywhere in a stream.
//!
//! | kernel                 | warp `g` (for every frame `g < nframes`)                              | writes per frame                    |
//! |------------------------|------------------------------------------------------------------------|-------------------------------------|
//! | [`encode_frames`]      | encodes elements `[g * frame_elems, min(n, (g + 1) * frame_elems))` with coder `C` (RAW if not smaller) into slot `g` | `frame_bytes[g]`: its length, or [`ENCODE_FAILED`] and a status record at the slot's start |
//! | [`encode_raw_frames`]  | the same as RAW frames                                                 | the same                            |
//! | [`decode_frames`]      | decodes frame `g` (`frame_lens[g]` bytes at `frame_offsets[g]`) into elements from `g * frame_elems`, at most `frame_elems`, never past `n` | a status record: `status[4g .. 4g + 4]` |
//!
//! `nframes` of the encoders is `ceil(n / frame_elems)`. Slot `g` starts at `out + g *
//! slot_bytes`; with `slot_bytes >= max_encoded_len(frame_elems)` every frame fits (the host
//! rounds it up to 16 bytes, so frames start 16-byte aligned).
//!
//! # Status records
//!
//! A status record is [`STATUS_WORDS`] `u32`s: `[code, a, b, elements]`: the first three are
//! [`zipcoll_device::frame::status`]'s (its table lists the codes); `elements` is the number of
//! elements a decoded frame held (0 on errors and for the encoders).

use core::slice;
use zipcoll_codegen::kernel;
use zipcoll_device::codec::{decode_frame, encode_frame, encode_raw_frame, LaneOut, SymbolCoder};
use zipcoll_device::dtype::{Elem, Split};
use zipcoll_device::frame::FrameError;
use zipcoll_targets::Warp;

/// `u32` words of one frame's status record: `[code, a, b, elements]`.
pub const STATUS_WORDS: usize = 4;

/// `frame_bytes[g]` of a frame that could not be encoded (its slot starts with a status record).
pub const ENCODE_FAILED: u32 = u32::MAX;

pub use zipcoll_device::frame::status::{code, error_record, frame_error, sat};

/// Calls `f(g)` for every frame `g < nframes` that this thread's warp owns (warp-stride over
/// the grid's warps). `g` is the same on every lane of a warp, so whole warps stay converged.
#[inline(always)]
fn for_each_frame<W: Warp>(w: W, nframes: usize, mut f: impl FnMut(usize)) {
    let width = W::WIDTH as usize;
    let warps = w.global_threads() / width;
    let mut g = w.global_idx() / width;
    while g < nframes {
        f(g);
        g += warps;
    }
}

/// The shared body of the encoders: frame `g` of `input` goes to slot `g` through `encode`.
///
/// # Safety
/// As [`encode_frames`].
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn encode_each<W: Warp, T: Elem>(
    w: W,
    input: *const T::Bits,
    n: usize,
    frame_elems: usize,
    out: *mut u8,
    slot_bytes: usize,
    frame_bytes: *mut u32,
    encode: impl Fn(W, &[T::Bits], LaneOut<'_>) -> Result<usize, FrameError>,
) {
    if frame_elems == 0 {
        return;
    }
    for_each_frame(w, n.div_ceil(frame_elems), |g| {
        let start = g * frame_elems;
        let len = frame_elems.min(n - start);
        // SAFETY: `start + len <= n` and `input` is valid for `n` reads (the caller's contract);
        // nothing writes the input during the launch.
        let frame = unsafe { slice::from_raw_parts(input.add(start), len) };
        // SAFETY: slot `g < nframes` lies inside `out` (valid for `nframes * slot_bytes` bytes);
        // only this warp writes it, through `LaneOut`.
        let slot = unsafe { LaneOut::from_raw(out.add(g * slot_bytes), slot_bytes) };
        let result = encode(w, frame, slot).and_then(|bytes| {
            u32::try_from(bytes)
                .ok()
                .filter(|&b| b != ENCODE_FAILED)
                .ok_or(FrameError::InputTooLarge { bytes })
        });
        // every lane has finished writing the slot before lane 0 may overwrite its start
        w.sync(W::FULL);
        if w.lane_id() == 0 {
            let len = match result {
                Ok(bytes) => bytes,
                Err(e) => {
                    let [c, a, b] = error_record(&e);
                    let record = [c, a, b, 0];
                    for (i, word) in record.iter().enumerate() {
                        // `put_u32` is bounds-checked: a slot too small for the record keeps only
                        // `frame_bytes[g] == ENCODE_FAILED`.
                        // SAFETY: only lane 0 writes, after the warp's sync above: no other lane
                        // accesses the slot meanwhile.
                        let _ = unsafe { slot.put_u32(i * 4, *word) };
                    }
                    ENCODE_FAILED
                }
            };
            // SAFETY: `frame_bytes` is valid for `nframes` writes; lane 0 of frame `g`'s warp is
            // the only writer of entry `g`.
            unsafe { frame_bytes.add(g).write(len) };
        }
    });
}

/// Encodes the `n` elements at `input` as frames of `frame_elems` elements with coder `C`
/// (each frame RAW where that is not smaller): the frame of warp `g` goes to
/// `out + g * slot_bytes`, its length to `frame_bytes[g]` (see the module docs, also for
/// failures). Nothing happens when `frame_elems` is 0.
///
/// # Safety
/// With `nframes = ceil(n / frame_elems)`: `input` is valid for `n` reads, `out` for
/// `nframes * slot_bytes` writes and `frame_bytes` for `nframes` writes, none overlapping.
/// Launch with a block size that is a multiple of the warp width (whole warps).
#[kernel(dtype = [bf16, f16, f32, f8e4m3, f8e5m2, i8, u8, i32, u32], codec = [fixedlen, expwindow, expans, huffman], vendor = [nvptx, amdgpu])]
pub unsafe fn encode_frames<W: Warp, T: Split, C: SymbolCoder>(
    w: W,
    input: *const T::Bits,
    n: usize,
    frame_elems: usize,
    out: *mut u8,
    slot_bytes: usize,
    frame_bytes: *mut u32,
) {
    // SAFETY: forwarded to the caller.
    unsafe {
        encode_each::<W, T>(
            w,
            input,
            n,
            frame_elems,
            out,
            slot_bytes,
            frame_bytes,
            encode_frame::<W, T, C>,
        )
    }
}

/// [`encode_frames`] with RAW frames (header + the elements as they are).
///
/// # Safety
/// As [`encode_frames`].
#[kernel(dtype = [bf16, f16, f32, f8e4m3, f8e5m2, i8, u8, i32, u32], vendor = [nvptx, amdgpu])]
pub unsafe fn encode_raw_frames<W: Warp, T: Elem>(
    w: W,
    input: *const T::Bits,
    n: usize,
    frame_elems: usize,
    out: *mut u8,
    slot_bytes: usize,
    frame_bytes: *mut u32,
) {
    // SAFETY: forwarded to the caller.
    unsafe {
        encode_each::<W, T>(
            w,
            input,
            n,
            frame_elems,
            out,
            slot_bytes,
            frame_bytes,
            encode_raw_frame::<W, T>,
        )
    }
}

/// Decodes frame `g < nframes` (`frame_lens[g]` bytes at `frames + frame_offsets[g]`, any
/// codec) into `out` from element `g * frame_elems`, at most `frame_elems` elements and never
/// past element `n` (a frame holding more is `BadRawLength`); writes its status record to
/// `status[4g .. 4g + 4]` (see the module docs). Whatever the frames' bytes say, reads stay in
/// each frame and writes in each frame's part of `out`.
///
/// # Safety
/// For every `g < nframes`, `frames + frame_offsets[g]` is valid for `frame_lens[g]` reads;
/// `frame_offsets` and `frame_lens` are valid for `nframes` reads, `out` for `n` writes and
/// `status` for `4 * nframes` writes; `out` and `status` overlap nothing else. Launch with a
/// block size that is a multiple of the warp width (whole warps).
#[kernel(dtype = [bf16, f16, f32, f8e4m3, f8e5m2, i8, u8, i32, u32], vendor = [nvptx, amdgpu])]
#[allow(clippy::too_many_arguments)]
pub unsafe fn decode_frames<W: Warp, T: Split>(
    w: W,
    frames: *const u8,
    frame_offsets: *const u64,
    frame_lens: *const u32,
    nframes: usize,
    out: *mut T::Bits,
    frame_elems: usize,
    n: usize,
    status: *mut u32,
) {
    for_each_frame(w, nframes, |g| {
        // SAFETY: `g < nframes`: both arrays are valid for `nframes` reads.
        let (offset, len) = unsafe { (frame_offsets.add(g).read(), frame_lens.add(g).read()) };
        // SAFETY: the caller guarantees `frames + offset` is valid for `len` reads; nothing
        // writes the frames during the launch.
        let frame = unsafe { slice::from_raw_parts(frames.add(offset as usize), len as usize) };
        let start = g.saturating_mul(frame_elems).min(n);
        let elems = frame_elems.min(n - start);
        // SAFETY: elements `start .. start + elems` lie inside `out` (valid for `n` writes), and
        // only this warp writes them (frames own disjoint element ranges).
        let dst = unsafe { LaneOut::from_raw(out.add(start).cast::<u8>(), elems * T::DTYPE.size_bytes()) };
        let record = match decode_frame::<W, T>(w, frame, dst) {
            Ok(decoded) => [code::OK, 0, 0, sat(decoded)],
            Err(e) => {
                let [c, a, b] = error_record(&e);
                [c, a, b, 0]
            }
        };
        if w.lane_id() == 0 {
            for (i, word) in record.into_iter().enumerate() {
                // SAFETY: `status` is valid for `STATUS_WORDS * nframes` writes; lane 0 of frame
                // `g`'s warp is the only writer of record `g`.
                unsafe { status.add(g * STATUS_WORDS + i).write(word) };
            }
        }
    });
}
