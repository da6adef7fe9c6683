//! The block frame codec (`zipcoll_device::codec::block_frame`) as kernels: one block per frame
//! (block-stride, so any grid covers any number of frames), the block's dynamic shared memory
//! as the coder's scratch. The parameters, slots, lengths and status records are
//! [`super::codec`]'s, so the host launches either family the same way; only the geometry
//! differs (whole blocks of [`BLOCK_THREADS`] threads, and [`encode_shared_bytes`] /
//! [`decode_shared_bytes`] of dynamic shared memory).
//!
//! | kernel                      | block `g` (for every frame `g < nframes`)                      |
//! |-----------------------------|-----------------------------------------------------------------|
//! | [`encode_block_frames`]     | encodes frame `g` with coder `C` (RAW if not smaller) into slot `g` |
//! | [`encode_block_raw_frames`] | the same as RAW frames                                          |
//! | [`decode_block_frames`]     | decodes frame `g` into its elements; a status record            |
//!
//! NVIDIA only: the AMD backend has no launch-sized shared memory yet (`SharedMem`).

use super::codec::{code, error_record, sat, ENCODE_FAILED, STATUS_WORDS};
use core::slice;
use zipcoll_codegen::kernel;
use zipcoll_device::block::Scratch;
use zipcoll_device::codec::block_frame::{
    decode_block_frame, encode_block_frame, encode_block_raw_frame, encode_scratch_bytes, BlockCoder,
};
use zipcoll_device::codec::{ExpAns, LaneOut};
use zipcoll_device::dtype::Split;
use zipcoll_device::frame::FrameError;
use zipcoll_targets::{SharedMem, Warp};

/// Threads per block of the host's launches: four warps, one per segment of a 32768-word frame.
pub const BLOCK_THREADS: u32 = 128;

/// Dynamic shared memory of an encoder launch with `BLOCK_THREADS` threads (the largest coder's
/// need; RAW needs less).
pub fn encode_shared_bytes() -> usize {
    encode_scratch_bytes::<ExpAns>(BLOCK_THREADS)
}

/// Dynamic shared memory of a decoder launch with `BLOCK_THREADS` threads.
pub fn decode_shared_bytes() -> usize {
    zipcoll_device::codec::block_frame::decode_scratch_bytes(BLOCK_THREADS)
}

/// The block's shared memory as scratch.
#[inline(always)]
fn scratch<W: SharedMem>(w: W) -> Scratch {
    let (base, len) = w.shared_mem();
    // SAFETY: the block's dynamic shared memory, valid for the whole launch.
    unsafe { Scratch::new(base, len as usize) }
}

/// Calls `f(g)` for every frame `g < nframes` this block owns (block-stride over the grid).
#[inline(always)]
fn for_each_frame<W: Warp>(w: W, nframes: usize, mut f: impl FnMut(usize)) {
    let mut g = w.block_idx() as usize;
    while g < nframes {
        f(g);
        g += w.grid_dim() as usize;
    }
}

/// The shared body of the encoders: frame `g` of `input` goes to slot `g` through `encode`.
///
/// # Safety
/// As [`encode_block_frames`].
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn encode_each<W: Warp + SharedMem, T: Split>(
    w: W,
    input: *const T::Bits,
    n: usize,
    frame_elems: usize,
    out: *mut u8,
    slot_bytes: usize,
    frame_bytes: *mut u32,
    encode: impl Fn(W, Scratch, &[T::Bits], LaneOut<'_>) -> Result<usize, FrameError>,
) {
    if frame_elems == 0 {
        return;
    }
    for_each_frame(w, n.div_ceil(frame_elems), |g| {
        let start = g * frame_elems;
        let len = frame_elems.min(n - start);
        // SAFETY: `start + len <= n`; `input` is valid for `n` reads (contract) and read only.
        let frame = unsafe { slice::from_raw_parts(input.add(start), len) };
        // SAFETY: slot `g < nframes` lies inside `out`; only this block writes it.
        let slot = unsafe { LaneOut::from_raw(out.add(g * slot_bytes), slot_bytes) };
        let result = encode(w, scratch(w), frame, slot).and_then(|bytes| {
            u32::try_from(bytes)
                .ok()
                .filter(|&b| b != ENCODE_FAILED)
                .ok_or(FrameError::InputTooLarge { bytes })
        });
        // every thread has finished with the slot (and the scratch) before thread 0 writes
        w.block_sync();
        if w.thread_idx() == 0 {
            let len = match result {
                Ok(bytes) => bytes,
                Err(e) => {
                    let [c, a, b] = error_record(&e);
                    for (i, word) in [c, a, b, 0].iter().enumerate() {
                        // SAFETY: only thread 0 writes, after the barrier; bounds-checked.
                        let _ = unsafe { slot.put_u32(i * 4, *word) };
                    }
                    ENCODE_FAILED
                }
            };
            // SAFETY: `frame_bytes` holds `nframes` entries; entry `g` is this block's.
            unsafe { frame_bytes.add(g).write(len) };
        }
    });
}

/// Encodes the `n` elements at `input` as block frames of `frame_elems` elements with coder `C`:
/// `encode_frames`'s contract and outputs, one block per frame.
///
/// # Safety
/// As `encode_frames`; launched with whole warps and at least [`encode_shared_bytes`] of
/// dynamic shared memory for `BLOCK_THREADS` threads (less makes frames fail with
/// `ScratchTooSmall`, never access outside it).
#[kernel(dtype = [bf16, f16, f32, f8e4m3, f8e5m2, i8, u8, i32, u32], codec = [expans], vendor = [nvptx])]
pub unsafe fn encode_block_frames<W: Warp + SharedMem, T: Split, C: BlockCoder>(
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
            encode_block_frame::<W, T, C>,
        )
    }
}

/// [`encode_block_frames`] with RAW block frames.
///
/// # Safety
/// As [`encode_block_frames`].
#[kernel(dtype = [bf16, f16, f32, f8e4m3, f8e5m2, i8, u8, i32, u32], vendor = [nvptx])]
pub unsafe fn encode_block_raw_frames<W: Warp + SharedMem, T: Split>(
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
            encode_block_raw_frame::<W, T>,
        )
    }
}

/// Decodes block frames: `decode_frames`'s contract and outputs, one block per frame.
///
/// # Safety
/// As `decode_frames`; launched with whole warps and at least [`decode_shared_bytes`] of
/// dynamic shared memory for `BLOCK_THREADS` threads.
#[kernel(dtype = [bf16, f16, f32, f8e4m3, f8e5m2, i8, u8, i32, u32], vendor = [nvptx])]
#[allow(clippy::too_many_arguments)]
pub unsafe fn decode_block_frames<W: Warp + SharedMem, T: Split>(
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
        // SAFETY: `g < nframes`: both arrays hold `nframes` entries.
        let (offset, len) = unsafe { (frame_offsets.add(g).read(), frame_lens.add(g).read()) };
        // SAFETY: the caller guarantees the frame's bytes are valid for reads, read only.
        let frame = unsafe { slice::from_raw_parts(frames.add(offset as usize), len as usize) };
        let start = g.saturating_mul(frame_elems).min(n);
        let elems = frame_elems.min(n - start);
        // SAFETY: elements `start .. start + elems` lie inside `out`; frames own disjoint ranges.
        let dst = unsafe { LaneOut::from_raw(out.add(start).cast::<u8>(), elems * T::DTYPE.size_bytes()) };
        let record = match decode_block_frame::<W, T>(w, scratch(w), frame, dst) {
            Ok(decoded) => [code::OK, 0, 0, sat(decoded)],
            Err(e) => {
                let [c, a, b] = error_record(&e);
                [c, a, b, 0]
            }
        };
        if w.thread_idx() == 0 {
            for (i, word) in record.into_iter().enumerate() {
                // SAFETY: `status` holds `STATUS_WORDS * nframes` words; record `g` is this block's.
                unsafe { status.add(g * STATUS_WORDS + i).write(word) };
            }
        }
        // every thread is done with the scratch before the next frame's decode takes it
        w.block_sync();
    });
}
