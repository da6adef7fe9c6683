//! The device-function library's bodies: what `device/fns` exports as `extern "C"` device
//! functions (one per dtype, `zc_<name>_<dtype>`) for CUDA C++ kernels to call, declared in
//! `device/fns/include/zipcoll_device_fns.h`. Raw pointers and lengths in, an `i64` out: the
//! result (bytes, elements) when it is `>= 0`, else minus a status code ([`status_of`]).
//!
//! | function              | who calls it                     | result                                   |
//! |-----------------------|----------------------------------|------------------------------------------|
//! | [`encode`]            | every thread of a block          | the block frame's bytes                  |
//! | [`decode`]            | every thread of a block          | the elements decoded                     |
//! | [`check_frame`]        | any one thread                   | the frame's bytes; its header fields     |
//! | [`predict`]           | any one thread                   | 0; each codec's predicted bytes          |
//! | [`encode_scratch_bytes`], [`decode_scratch_bytes`] | anyone | shared memory a block needs        |
//!
//! The block functions are [`block_frame`]'s: the same bytes as zipcoll's own block codec
//! kernels for any block size, their tables in the `scratch` the caller passes (its shared
//! memory). They take the block as it is: one-dimensional, a whole number of warps, every
//! thread calling with the same arguments, converged (they end with a block barrier, so the
//! caller may reuse `scratch` and read `out` after them).
//!
//! [`block_frame`]: crate::codec::block_frame

use crate::arbitrate::sample::sampled_words;
use crate::arbitrate::{predict as predict_bytes, Sample};
use crate::block::Scratch;
use crate::codec::block_frame::{self, decode_block_frame, encode_block_frame_with, encode_block_raw_frame};
use crate::codec::{CodecId, ExpAns, LaneOut};
use crate::dtype::Split;
use crate::frame::status::error_record;
use crate::frame::{FrameError, FrameHeader, BLOCK_FRAME_VERSION, HEADER_BYTES};
use core::{mem, ptr, slice};
use zipcoll_targets::Warp;

/// The result of a pointer argument that is null (with a non-zero length) or not aligned for
/// its type, or of a block that is not a whole number of warps: not a frame's status (those are
/// `-1 ..= -15`, [`crate::frame::status::code`]).
pub const INVALID_ARGUMENT: i64 = -64;

/// What [`check_frame`] reads of a block frame's header, as `zc_frame_info` in C.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct FrameInfo {
    /// Header plus payload: where the next frame of a stream starts.
    pub frame_bytes: u32,
    /// Bytes of the elements the frame decodes to.
    pub raw_bytes: u32,
    /// Elements the frame decodes to.
    pub elements: u32,
    /// The codec ([`CodecId`]) of the payload.
    pub codec: u32,
    /// The elements' [`DType`] id.
    pub dtype: u32,
    /// The format version ([`BLOCK_FRAME_VERSION`]).
    pub version: u32,
}
const _: () = assert!(mem::size_of::<FrameInfo>() == 24);

/// Bytes of the caller's memory that [`predict`] works in (`ZC_SAMPLE_BYTES`): a [`Sample`].
pub const SAMPLE_BYTES: usize = mem::size_of::<Sample>();
/// The alignment that memory needs.
pub const SAMPLE_ALIGN: usize = mem::align_of::<Sample>();

/// Minus the status code of `e`: what the library returns for a rejected call.
pub fn status_of(e: &FrameError) -> i64 {
    -(error_record(e)[0] as i64)
}

/// `Ok(v)` as `v` (saturated to `i64::MAX`), `Err(e)` as [`status_of`].
fn result(r: Result<usize, FrameError>) -> i64 {
    match r {
        Ok(v) => i64::try_from(v).unwrap_or(i64::MAX),
        Err(e) => status_of(&e),
    }
}

/// A slice of `len` values at `p`, or `None` when `p` is null with `len > 0`, not aligned for
/// `E`, or the bytes overflow.
///
/// # Safety
/// A non-null `p` is valid for reads of `len` values of `E` for `'a`.
unsafe fn slice_at<'a, E>(p: *const E, len: u64) -> Option<&'a [E]> {
    let len = usize::try_from(len).ok()?;
    len.checked_mul(mem::size_of::<E>())?;
    if len == 0 {
        return Some(&[]);
    }
    if p.is_null() || !p.is_aligned() {
        return None;
    }
    // SAFETY: non-null, aligned, and valid for `len` reads (the caller's contract).
    Some(unsafe { slice::from_raw_parts(p, len) })
}

/// `bytes` at `p` as an output buffer (see [`slice_at`]).
///
/// # Safety
/// A non-null `p` is valid for writes of `bytes` bytes, which nothing else accesses during the
/// call; every thread of the block passes the same `p` and `bytes`.
unsafe fn out_at<'a>(p: *mut u8, bytes: u64, align: usize) -> Option<LaneOut<'a>> {
    let bytes = usize::try_from(bytes).ok()?;
    if bytes == 0 {
        return Some(LaneOut::new(&mut []));
    }
    if p.is_null() || !(p as usize).is_multiple_of(align) {
        return None;
    }
    // SAFETY: valid for `bytes` writes; the block's threads write it through the coders,
    // converged and with the same arguments (the caller's contract).
    Some(unsafe { LaneOut::from_raw(p, bytes) })
}

/// The caller's shared memory as the coders' scratch; `None` when null with a non-zero size.
///
/// # Safety
/// A non-null `p` is valid for `bytes` bytes that only this block's threads use during the call.
unsafe fn scratch_at(p: *mut u8, bytes: u32) -> Option<Scratch> {
    if p.is_null() && bytes != 0 {
        return None;
    }
    // SAFETY: the caller's contract.
    Some(unsafe { Scratch::new(p, bytes as usize) })
}

/// Whether the block is one `zc_*` block functions take: a whole number of warps.
fn whole_warps<W: Warp>(w: W) -> bool {
    w.block_dim() != 0 && w.block_dim().is_multiple_of(W::WIDTH)
}

/// Encodes the `n` elements at `input` as one block frame at `out` (`out_bytes` bytes, at least
/// `32 + n x size`: [`max_frame_bytes`]) with `codec`, RAW where the codec does not make it
/// smaller; returns the frame's bytes. `codec` is a [`CodecId`] with a block coder for `T`
/// (RAW and ExpAns): another id is `-UNKNOWN_CODEC` or `-CODEC_NOT_BUILT`. `scratch` holds
/// [`encode_scratch_bytes`] of the block's shared memory (less: `-SCRATCH_TOO_SMALL`).
///
/// # Safety
/// Called by every thread of the block, converged, with the same arguments. `input` is valid
/// for `n` reads and `out` for `out_bytes` writes (16-byte aligned for the fastest stores; any
/// alignment works), disjoint, and nothing else writes them meanwhile; `scratch` is the block's
/// shared memory, `scratch_bytes` of it, used by nothing else during the call.
#[allow(clippy::too_many_arguments)]
pub unsafe fn encode<W: Warp, T: Split>(
    w: W,
    input: *const T::Bits,
    n: u64,
    codec: u32,
    out: *mut u8,
    out_bytes: u64,
    scratch: *mut u8,
    scratch_bytes: u32,
) -> i64 {
    // SAFETY: forwarded from the caller.
    let args = unsafe {
        (
            slice_at(input, n),
            out_at(out, out_bytes, 1),
            scratch_at(scratch, scratch_bytes),
        )
    };
    let (Some(input), Some(out), Some(scratch)) = args else {
        return INVALID_ARGUMENT;
    };
    if !whole_warps(w) {
        return INVALID_ARGUMENT;
    }
    let id = match u8::try_from(codec).ok().and_then(CodecId::from_u8) {
        Some(id) => id,
        None => {
            let found = u8::try_from(codec).unwrap_or(u8::MAX);
            return status_of(&FrameError::UnknownCodec { found });
        }
    };
    let r = match id {
        CodecId::Raw => encode_block_raw_frame::<W, T>(w, scratch, input, out),
        _ => encode_block_frame_with::<W, T>(w, scratch, id, input, out)
            .unwrap_or(Err(FrameError::CodecNotBuilt { codec: id })),
    };
    // every thread is done with `scratch` and `out`
    w.block_sync();
    result(r)
}

/// Decodes the block frame at `frame` (`frame_bytes` bytes, at least the whole frame) into at
/// most `out_elems` elements at `out`; returns the elements decoded. Every check of zipcoll's
/// own decoder runs (header, lengths, the coded section's bounds, the checksum over the
/// output), so a frame it rejects returns minus its status code and never makes the decoder
/// read outside `frame`, `scratch` or write outside `out`; on a rejection `out` may hold part
/// of the frame's elements. `scratch`: [`decode_scratch_bytes`] of shared memory.
///
/// # Safety
/// As [`encode`]: every thread of the block, converged, the same arguments; `frame` valid for
/// `frame_bytes` reads, `out` for `out_elems` writes of `T`, disjoint; `scratch` the block's.
pub unsafe fn decode<W: Warp, T: Split>(
    w: W,
    frame: *const u8,
    frame_bytes: u64,
    out: *mut T::Bits,
    out_elems: u64,
    scratch: *mut u8,
    scratch_bytes: u32,
) -> i64 {
    let out_bytes = out_elems.checked_mul(T::DTYPE.size_bytes() as u64);
    // SAFETY: forwarded from the caller.
    let args = unsafe {
        (
            slice_at(frame, frame_bytes),
            out_bytes.and_then(|b| out_at(out.cast(), b, mem::align_of::<T::Bits>())),
            scratch_at(scratch, scratch_bytes),
        )
    };
    let (Some(frame), Some(out), Some(scratch)) = args else {
        return INVALID_ARGUMENT;
    };
    if !whole_warps(w) {
        return INVALID_ARGUMENT;
    }
    let r = decode_block_frame::<W, T>(w, scratch, frame, out);
    // every thread is done with `scratch` and `out`
    w.block_sync();
    result(r)
}

/// Validates the header of the block frame at `frame` (magic, version, ids, reserved fields,
/// the header's checksum, a payload inside `frame_bytes` and a raw length that is whole
/// elements of its dtype), writes its fields to `info` and returns the frame's bytes. The
/// payload is checked by [`decode`] (its checksum covers the decoded elements).
///
/// # Safety
/// `frame` is valid for `frame_bytes` reads, `info` for one write (or null: not written).
pub unsafe fn check_frame(frame: *const u8, frame_bytes: u64, info: *mut FrameInfo) -> i64 {
    // SAFETY: forwarded from the caller.
    let Some(frame) = (unsafe { slice_at(frame, frame_bytes) }) else {
        return INVALID_ARGUMENT;
    };
    let h = match FrameHeader::parse_version(frame, BLOCK_FRAME_VERSION) {
        Ok(h) => h,
        Err(e) => return status_of(&e),
    };
    // `parse_version` validated both ids
    let (Some(codec), Some(dtype)) = (h.codec_id(), h.dtype_id()) else {
        return status_of(&FrameError::Reserved);
    };
    let size = dtype.size_bytes() as u32;
    if !h.raw_bytes.is_multiple_of(size) {
        return status_of(&FrameError::BadRawLength {
            raw_bytes: h.raw_bytes,
            capacity: h.raw_bytes as usize / size as usize * size as usize,
        });
    }
    let frame_len = HEADER_BYTES + h.payload_bytes as usize;
    if !info.is_null() {
        let fields = FrameInfo {
            frame_bytes: frame_len as u32,
            raw_bytes: h.raw_bytes,
            elements: h.raw_bytes / size,
            codec: codec as u32,
            dtype: dtype as u32,
            version: h.version.into(),
        };
        // SAFETY: non-null: valid for one write (the caller's contract).
        unsafe { info.write_unaligned(fields) };
    }
    frame_len as i64
}

/// Auto's prediction for the `n` elements at `input` coded in frames of `frame_elems` elements
/// (0: one frame): writes the predicted bytes of the whole batch, frames included, for every
/// codec to `bytes[id]` (`CodecId::ALL.len()` entries, RAW's the batch itself), sampling at most
/// 64 KiB of the batch as zipcoll's own arbitration does, into `sample` ([`SAMPLE_BYTES`]
/// bytes, aligned to [`SAMPLE_ALIGN`]). Returns 0.
///
/// # Safety
/// `input` is valid for `n` reads; `sample` for [`SAMPLE_BYTES`] bytes of reads and writes and
/// `bytes` for `CodecId::ALL.len()` writes of `u64`, used by nothing else during the call.
pub unsafe fn predict<T: Split>(
    input: *const T::Bits,
    n: u64,
    frame_elems: u64,
    sample: *mut u8,
    bytes: *mut u64,
) -> i64 {
    // SAFETY: forwarded from the caller.
    let Some(data) = (unsafe { slice_at(input, n) }) else {
        return INVALID_ARGUMENT;
    };
    let sample = sample.cast::<Sample>();
    let Ok(frame_elems) = usize::try_from(frame_elems) else {
        return INVALID_ARGUMENT;
    };
    if sample.is_null() || !sample.is_aligned() || bytes.is_null() || !bytes.is_aligned() {
        return INVALID_ARGUMENT;
    }
    // SAFETY: valid and aligned (checked; the caller's contract); every field of a `Sample` is
    // an integer or an array of them, for which zero is [`Sample::default`]'s value. Zeroing in
    // place keeps the 17 KiB off the thread's stack.
    let sample = unsafe {
        ptr::write_bytes(sample, 0, 1);
        &mut *sample
    };
    for (start, len) in sampled_words::<T>(data.len()) {
        sample.add_words::<T>(data, start, len);
    }
    let predicted = predict_bytes::<T>(sample, data.len(), frame_elems);
    for (id, b) in predicted.bytes.iter().enumerate() {
        // SAFETY: `bytes` holds `CodecId::ALL.len()` entries (the caller's contract).
        unsafe { bytes.add(id).write(*b) };
    }
    0
}

/// Shared-memory bytes [`encode`] needs for a block of `block_dim` threads (any codec).
pub fn encode_scratch_bytes(block_dim: u32) -> usize {
    block_frame::encode_scratch_bytes::<ExpAns>(block_dim)
}

/// Shared-memory bytes [`decode`] needs for a block of `block_dim` threads (any codec).
pub fn decode_scratch_bytes(block_dim: u32) -> usize {
    block_frame::decode_scratch_bytes(block_dim)
}

/// The largest frame [`encode`] writes for `n` elements of `T`: the header and the data as is
/// (`u64::MAX` when that overflows).
pub fn max_frame_bytes<T: Split>(n: u64) -> u64 {
    n.checked_mul(T::DTYPE.size_bytes() as u64)
        .and_then(|b| b.checked_add(HEADER_BYTES as u64))
        .unwrap_or(u64::MAX)
}

/// The dtypes of the library, each with the suffix of its functions' names (`zc_encode_bf16`):
/// `for_each_device_fn_dtype!((m) { args })` expands to `m! { args [Bf16, bf16] .. }`, so this
/// one list makes `device/fns`'s exports and the tests' list of them. Every [`Split`] dtype
/// with block frames.
#[macro_export]
macro_rules! for_each_device_fn_dtype {
    (($($m:tt)+) { $($args:tt)* }) => {
        $($m)+! { $($args)*
            [Bf16, bf16]
            [F16, f16]
            [F32, f32]
            [F8E4M3, f8e4m3]
            [F8E5M2, f8e5m2]
        }
    };
}
