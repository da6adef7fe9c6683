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
//! A status record is [`STATUS_WORDS`] `u32`s: `[code, a, b, elements]`. `code` is 0 when the
//! frame was encoded or decoded, otherwise a stable number per [`FrameError`] variant (ABI
//! between the kernels and the host: never renumber, only append); `a` and `b` carry the
//! variant's fields (saturated to `u32`); `elements` is the number of elements a decoded frame
//! held (0 on errors and for the encoders). [`error_record`] writes them, [`frame_error`] reads
//! them back.
//!
//! | code | [`FrameError`] variant  | `a`                  | `b`          |
//! |------|-------------------------|----------------------|--------------|
//! | 0    | none: the frame is fine | 0                    | 0            |
//! | 1    | `Truncated`             | `need`               | `have`       |
//! | 2    | `BadMagic`              | `found`              | 0            |
//! | 3    | `UnsupportedVersion`    | `found`              | 0            |
//! | 4    | `UnknownCodec`          | `found`              | 0            |
//! | 5    | `UnknownDType`          | `found`              | 0            |
//! | 6    | `Reserved`              | 0                    | 0            |
//! | 7    | `HeaderChecksum`        | `stored`             | `computed`   |
//! | 8    | `BadRawLength`          | `raw_bytes`          | `capacity`   |
//! | 9    | `Corrupt`               | `codec` (`CodecId`)  | `offset`     |
//! | 10   | `RawChecksum`           | `stored`             | `computed`   |
//! | 11   | `OutputTooSmall`        | `need`               | `have`       |
//! | 12   | `WrongDType`            | `frame` (`DType`)    | `expected`   |
//! | 13   | `InputTooLarge`         | `bytes`              | 0            |
//! | 14   | `ScratchTooSmall`       | `need`               | `have`       |
//! | 15   | `CodecNotBuilt`         | `codec` (`CodecId`)  | 0            |
//!
//! A `Corrupt` record cannot carry its `reason` (a string in the device's memory);
//! [`frame_error`] takes the reason from its caller (the host re-decodes the one failing frame
//! on the simulator to recover it).

use core::slice;
use zipcoll_codegen::kernel;
use zipcoll_device::codec::{decode_frame, encode_frame, encode_raw_frame, CodecId, LaneOut, SymbolCoder};
use zipcoll_device::dtype::{DType, Elem, Split};
use zipcoll_device::frame::FrameError;
use zipcoll_targets::Warp;

/// `u32` words of one frame's status record: `[code, a, b, elements]`.
pub const STATUS_WORDS: usize = 4;

/// `frame_bytes[g]` of a frame that could not be encoded (its slot starts with a status record).
pub const ENCODE_FAILED: u32 = u32::MAX;

/// The status codes (see the module table). Stable: never renumber, only append.
pub mod code {
    /// The frame was encoded or decoded.
    pub const OK: u32 = 0;
    /// `FrameError::Truncated`.
    pub const TRUNCATED: u32 = 1;
    /// `FrameError::BadMagic`.
    pub const BAD_MAGIC: u32 = 2;
    /// `FrameError::UnsupportedVersion`.
    pub const UNSUPPORTED_VERSION: u32 = 3;
    /// `FrameError::UnknownCodec`.
    pub const UNKNOWN_CODEC: u32 = 4;
    /// `FrameError::UnknownDType`.
    pub const UNKNOWN_DTYPE: u32 = 5;
    /// `FrameError::Reserved`.
    pub const RESERVED: u32 = 6;
    /// `FrameError::HeaderChecksum`.
    pub const HEADER_CHECKSUM: u32 = 7;
    /// `FrameError::BadRawLength`.
    pub const BAD_RAW_LENGTH: u32 = 8;
    /// `FrameError::Corrupt`.
    pub const CORRUPT: u32 = 9;
    /// `FrameError::RawChecksum`.
    pub const RAW_CHECKSUM: u32 = 10;
    /// `FrameError::OutputTooSmall`.
    pub const OUTPUT_TOO_SMALL: u32 = 11;
    /// `FrameError::WrongDType`.
    pub const WRONG_DTYPE: u32 = 12;
    /// `FrameError::InputTooLarge`.
    pub const INPUT_TOO_LARGE: u32 = 13;
    /// `FrameError::ScratchTooSmall`.
    pub const SCRATCH_TOO_SMALL: u32 = 14;
    /// `FrameError::CodecNotBuilt`.
    pub const CODEC_NOT_BUILT: u32 = 15;
}

/// `v` as a `u32`, saturated.
#[inline(always)]
fn sat(v: usize) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

/// The first three words of `e`'s status record: `[code, a, b]` (see the module table).
pub fn error_record(e: &FrameError) -> [u32; 3] {
    match *e {
        FrameError::Truncated { need, have } => [code::TRUNCATED, sat(need), sat(have)],
        FrameError::BadMagic { found } => [code::BAD_MAGIC, found.into(), 0],
        FrameError::UnsupportedVersion { found } => [code::UNSUPPORTED_VERSION, found.into(), 0],
        FrameError::UnknownCodec { found } => [code::UNKNOWN_CODEC, found.into(), 0],
        FrameError::UnknownDType { found } => [code::UNKNOWN_DTYPE, found.into(), 0],
        FrameError::Reserved => [code::RESERVED, 0, 0],
        FrameError::HeaderChecksum { stored, computed } => [code::HEADER_CHECKSUM, stored, computed],
        FrameError::BadRawLength { raw_bytes, capacity } => [code::BAD_RAW_LENGTH, raw_bytes, sat(capacity)],
        FrameError::Corrupt { codec, offset, .. } => [code::CORRUPT, codec as u32, sat(offset)],
        FrameError::RawChecksum { stored, computed } => [code::RAW_CHECKSUM, stored, computed],
        FrameError::OutputTooSmall { need, have } => [code::OUTPUT_TOO_SMALL, sat(need), sat(have)],
        FrameError::WrongDType { frame, expected } => [code::WRONG_DTYPE, frame as u32, expected as u32],
        FrameError::InputTooLarge { bytes } => [code::INPUT_TOO_LARGE, sat(bytes), 0],
        FrameError::ScratchTooSmall { need, have } => [code::SCRATCH_TOO_SMALL, sat(need), sat(have)],
        FrameError::CodecNotBuilt { codec } => [code::CODEC_NOT_BUILT, codec as u32, 0],
    }
}

/// The [`FrameError`] of a status record `[code, a, b, ..]`; `reason` becomes a `Corrupt`
/// error's reason. `None` for [`code::OK`] and for records no variant writes (an unknown code,
/// or fields out of their types' range).
pub fn frame_error(code: u32, a: u32, b: u32, reason: &'static str) -> Option<FrameError> {
    let byte = |v: u32| u8::try_from(v).ok();
    Some(match code {
        code::TRUNCATED => FrameError::Truncated {
            need: a as usize,
            have: b as usize,
        },
        code::BAD_MAGIC => FrameError::BadMagic {
            found: u16::try_from(a).ok()?,
        },
        code::UNSUPPORTED_VERSION => FrameError::UnsupportedVersion { found: byte(a)? },
        code::UNKNOWN_CODEC => FrameError::UnknownCodec { found: byte(a)? },
        code::UNKNOWN_DTYPE => FrameError::UnknownDType { found: byte(a)? },
        code::RESERVED => FrameError::Reserved,
        code::HEADER_CHECKSUM => FrameError::HeaderChecksum { stored: a, computed: b },
        code::BAD_RAW_LENGTH => FrameError::BadRawLength {
            raw_bytes: a,
            capacity: b as usize,
        },
        code::CORRUPT => FrameError::Corrupt {
            codec: CodecId::from_u8(byte(a)?)?,
            offset: b as usize,
            reason,
        },
        code::RAW_CHECKSUM => FrameError::RawChecksum { stored: a, computed: b },
        code::OUTPUT_TOO_SMALL => FrameError::OutputTooSmall {
            need: a as usize,
            have: b as usize,
        },
        code::WRONG_DTYPE => FrameError::WrongDType {
            frame: DType::from_u8(byte(a)?)?,
            expected: DType::from_u8(byte(b)?)?,
        },
        code::INPUT_TOO_LARGE => FrameError::InputTooLarge { bytes: a as usize },
        code::SCRATCH_TOO_SMALL => FrameError::ScratchTooSmall {
            need: a as usize,
            have: b as usize,
        },
        code::CODEC_NOT_BUILT if b == 0 => FrameError::CodecNotBuilt {
            codec: CodecId::from_u8(byte(a)?)?,
        },
        _ => return None,
    })
}

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
#[kernel(dtype = [bf16, f16, f32, f8e4m3, f8e5m2], codec = [fixedlen, expwindow, expans, huffman], vendor = [nvptx, amdgpu])]
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
#[kernel(dtype = [bf16, f16, f32, f8e4m3, f8e5m2], vendor = [nvptx, amdgpu])]
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
#[kernel(dtype = [bf16, f16, f32, f8e4m3, f8e5m2], vendor = [nvptx, amdgpu])]
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

#[cfg(test)]
mod tests {
    use super::*;

    /// One error of every variant, with fields that fit their record words.
    const ERRORS: [FrameError; 15] = [
        FrameError::Truncated { need: 64, have: 40 },
        FrameError::BadMagic { found: 0x1234 },
        FrameError::UnsupportedVersion { found: 9 },
        FrameError::UnknownCodec { found: 77 },
        FrameError::UnknownDType { found: 200 },
        FrameError::Reserved,
        FrameError::HeaderChecksum {
            stored: 0xdead_beef,
            computed: 7,
        },
        FrameError::BadRawLength {
            raw_bytes: 3,
            capacity: 2,
        },
        FrameError::Corrupt {
            codec: CodecId::Huffman,
            offset: 12,
            reason: "test",
        },
        FrameError::RawChecksum { stored: 1, computed: 2 },
        FrameError::OutputTooSmall { need: 100, have: 99 },
        FrameError::WrongDType {
            frame: DType::F16,
            expected: DType::Bf16,
        },
        FrameError::InputTooLarge { bytes: 5 },
        FrameError::ScratchTooSmall { need: 7, have: 6 },
        FrameError::CodecNotBuilt { codec: CodecId::ExpAns },
    ];

    #[test]
    fn records_map_back_to_the_error() {
        let mut codes: [u32; 15] = [0; 15];
        for (e, c) in ERRORS.iter().zip(&mut codes) {
            let [code, a, b] = error_record(e);
            assert_eq!(frame_error(code, a, b, "test"), Some(*e));
            *c = code;
        }
        assert_eq!(
            codes,
            core::array::from_fn(|i| i as u32 + 1),
            "codes are 1..=15 in table order"
        );
    }

    #[test]
    fn unknown_records_are_none() {
        assert_eq!(frame_error(code::OK, 0, 0, ""), None);
        assert_eq!(frame_error(16, 0, 0, ""), None);
        assert_eq!(frame_error(code::CODEC_NOT_BUILT, 9, 0, ""), None);
        assert_eq!(frame_error(code::CODEC_NOT_BUILT, 1, 1, ""), None);
        assert_eq!(frame_error(code::UNKNOWN_CODEC, 256, 0, ""), None);
        assert_eq!(frame_error(code::CORRUPT, 99, 0, ""), None);
        assert_eq!(frame_error(code::WRONG_DTYPE, 0, 200, ""), None);
    }

    #[test]
    fn large_fields_saturate() {
        let e = FrameError::OutputTooSmall {
            need: usize::MAX,
            have: 1,
        };
        assert_eq!(error_record(&e), [code::OUTPUT_TOO_SMALL, u32::MAX, 1]);
    }
}
