//! The frame codec: turns a slice of elements into one self-describing frame and back, with
//! one warp, using a [`SymbolCoder`] for the exponent symbols.
//!
//! Frame layout (all offsets in bytes, little-endian):
//!
//! | offset                | size                      | content                                                   |
//! |-----------------------|---------------------------|-----------------------------------------------------------|
//! | 0                     | 32                        | [`FrameHeader`] (`raw_bytes` = n x element size)          |
//! | 32                    | `P = packed_bytes(m, R)`  | split codecs: the raw plane (below)                        |
//! | 32 + P                | `payload_bytes - P`       | split codecs: the coder's coded section (4-byte aligned)  |
//! | 32                    | `raw_bytes`               | RAW: the elements as they are                              |
//!
//! `m` is the number of split words ([`Split::Word`]): `n`, or `ceil(n / 2)` for fp8, whose
//! words hold two elements (element `2i` in the low byte, `2i + 1` in the high byte; an odd `n`
//! pads the last word's high byte with 0, and the decoder writes only `n` elements). `R` is
//! [`Split::RAW_BITS`].
//!
//! The raw plane is a plain little-endian bit stream of `m x R` bits: word `i`'s raw part at bit
//! `i x R`, zero-padded to a multiple of 4 bytes ([`packed_bytes`]). A warp packs it
//! `WIDTH` words at a time with [`pack_fixed_prefix`]; because `32 x R` bits are whole u32
//! words, a 64-lane step writes exactly the bytes of two 32-lane steps, so the frame does not
//! depend on the warp width (nor does any coder's section: every coder writes width-independent
//! bytes).
//!
//! A split frame is emitted only if it is smaller than the data (`payload_bytes < raw_bytes`);
//! otherwise, or if the coder runs out of room, the frame is RAW. Frames of a dtype without
//! coders (`DType::coded`: f64 and the 64-bit integers) are always RAW, and a coded frame of one is
//! [`FrameError::CodecNotBuilt`] to the decoder. So a frame is never longer than
//! [`max_encoded_len`]. The header's `raw_checksum` is [`crate::frame::checksum`] of the
//! elements' bytes, computed by the warp ([`warp_checksum_words`]); the decoder recomputes it
//! over what it wrote.
//!
//! Decoding ([`decode_frame`]) checks, in order: the header ([`FrameHeader::parse`]), the dtype
//! ([`FrameError::WrongDType`]), `raw_bytes` (whole elements that fit the output:
//! [`FrameError::BadRawLength`]), the payload's structure (the coder's
//! [`FrameError::Corrupt`]), and the data's checksum ([`FrameError::RawChecksum`]). Whatever the
//! bytes say, it reads only inside `frame` and writes only inside `out`.
//!
//! Decoding is canonical: a frame that decodes to `x` is the frame the encoder writes for `x`
//! (`encode_raw_frame` for a RAW frame, `encode_frame` with the header's coder otherwise). Besides
//! each coder's own checks, a split frame is rejected if its payload is not smaller than the
//! data (the encoder writes RAW then), if the raw plane's padding bits are not zero, or (fp8,
//! odd `n`) if the last word's missing element is not zero.
//!
//! | codec id     | decoded by                                                        |
//! |--------------|-------------------------------------------------------------------|
//! | `Raw`        | a copy of the payload                                             |
//! | `FixedLen`   | [`FixedLen`] symbols joined with the raw plane                    |
//! | `ExpWindow`  | [`ExpWindow`] symbols joined with the raw plane                   |
//! | `ExpAns`     | [`ExpAns`] symbols joined with the raw plane                      |
//! | `Huffman`    | [`Huffman`] symbols joined with the raw plane                     |

use super::{CodecId, Coded, LaneOut, SymbolCoder};
use crate::bits::{pack_fixed_prefix, packed_bytes, read_bits, warp_checksum_words};
use crate::dtype::{Elem, Split};
use crate::frame::{FrameError, FrameHeader, FRAME_VERSION, HEADER_BYTES};
use zipcoll_targets::{Warp, Word};

/// The largest frame [`encode_frame`] writes for `n` elements of `T`: the header plus the data
/// as they are (a true upper bound: a frame that would not be smaller is emitted RAW).
pub const fn max_encoded_len<T: Elem>(n: usize) -> usize {
    HEADER_BYTES + n * T::DTYPE.size_bytes()
}

/// Element `k` of `input`'s bits, zero past its end.
#[inline(always)]
fn elem_bits<T: Elem>(input: &[T::Bits], k: usize) -> u64 {
    input.get(k).map_or(0, |e| e.to_bits64())
}

/// Little-endian u32 word `j` of `input`'s bytes (zero-padded): what [`crate::frame::checksum`]
/// sees of the elements.
#[inline(always)]
fn input_le_word<T: Elem>(input: &[T::Bits], j: usize) -> u32 {
    let size = T::DTYPE.size_bytes();
    if size > 4 {
        // half of one element: its low word for even `j`, its high word for odd
        return (elem_bits::<T>(input, 4 * j / size) >> (8 * (4 * j % size))) as u32;
    }
    let per = 4 / size;
    let mut v = 0u32;
    for k in 0..per {
        v |= (elem_bits::<T>(input, j * per + k) as u32) << (8 * size * k);
    }
    v
}

/// Split word `i` of `input`: its elements' bytes in order, the missing ones zero.
#[inline(always)]
fn input_word<T: Split>(input: &[T::Bits], i: usize) -> T::Word {
    let size = T::DTYPE.size_bytes();
    let mut v = 0u64;
    for k in 0..T::ELEMS_PER_WORD {
        v |= elem_bits::<T>(input, i * T::ELEMS_PER_WORD + k) << (8 * size * k);
    }
    T::Word::from_bits64(v)
}

/// The byte at `offset` of `out`, which every lane has finished writing (0 past its end).
#[inline(always)]
fn out_byte(out: &LaneOut<'_>, offset: usize) -> u8 {
    if offset < out.len {
        // SAFETY: in bounds (checked); the buffer is valid for `out.len` bytes and, after the
        // warp's `sync`, no lane writes it any more while it is read.
        unsafe { out.ptr.add(offset).read() }
    } else {
        0
    }
}

/// `len` bytes of `out` from `offset`, as a buffer of their own (clamped to `out`).
#[inline(always)]
pub(super) fn window<'a>(out: LaneOut<'a>, offset: usize, len: usize) -> LaneOut<'a> {
    let offset = offset.min(out.len);
    let len = len.min(out.len - offset);
    // SAFETY: `offset + len <= out.len`: a sub-range of the buffer `out` covers, used only through
    // `LaneOut` copies as `out` is.
    unsafe { LaneOut::from_raw(out.ptr.add(offset), len) }
}

/// Checks of an encoder's arguments: the output fits any frame, `raw_bytes` fits a u32.
pub(super) fn check_encode_args<T: Elem>(n: usize, out: &LaneOut<'_>) -> Result<u32, FrameError> {
    let raw_bytes = n
        .checked_mul(T::DTYPE.size_bytes())
        .ok_or(FrameError::InputTooLarge { bytes: usize::MAX })?;
    let raw_bytes = u32::try_from(raw_bytes).map_err(|_| FrameError::InputTooLarge { bytes: raw_bytes })?;
    let need = HEADER_BYTES + raw_bytes as usize;
    if out.len() < need {
        return Err(FrameError::OutputTooSmall { need, have: out.len() });
    }
    Ok(raw_bytes)
}

/// Writes the RAW payload (the elements' bytes) after the header: lane `l` copies words
/// `l, l + WIDTH, ..`. `out` holds at least the header and the data.
fn put_raw_payload<W: Warp, T: Elem>(w: W, input: &[T::Bits], raw_bytes: usize, out: LaneOut<'_>) {
    let mut j = w.lane_id() as usize;
    while j * 4 < raw_bytes {
        let word = input_le_word::<T>(input, j).to_le_bytes();
        let len = (raw_bytes - j * 4).min(4);
        // In bounds: the caller checked `out` holds HEADER_BYTES + raw_bytes.
        // SAFETY: lane `l` writes words `l, l + WIDTH, ..` only; the frame coder runs on every lane, converged, with the same arguments (`LaneOut::from_raw`'s contract for `out`).
        let _ = unsafe { out.put(HEADER_BYTES + j * 4, &word[..len]) };
        j += W::WIDTH as usize;
    }
}

/// Lane 0 writes `header`; `out` holds at least [`HEADER_BYTES`].
fn put_header<W: Warp>(w: W, header: &FrameHeader, out: LaneOut<'_>) {
    if w.lane_id() == 0 {
        // In bounds: every caller checked `out` holds a whole frame.
        // SAFETY: only lane 0 writes the header; the frame coder runs on every lane, converged, with the same arguments (`LaneOut::from_raw`'s contract for `out`).
        let _ = unsafe { out.put(0, &header.to_bytes()) };
    }
}

/// The RAW frame of `input` with its checksum already computed: header and data.
fn raw_frame<W: Warp, T: Elem>(w: W, input: &[T::Bits], raw_bytes: u32, checksum: u32, out: LaneOut<'_>) -> usize {
    put_raw_payload::<W, T>(w, input, raw_bytes as usize, out);
    let h = FrameHeader::new(CodecId::Raw, T::DTYPE, 0, 0, raw_bytes, raw_bytes, checksum);
    put_header(w, &h, out);
    HEADER_BYTES + raw_bytes as usize
}

/// The checksum of `input`'s bytes, by the warp.
#[inline(always)]
fn input_checksum<W: Warp, T: Elem>(w: W, input: &[T::Bits], raw_bytes: u32) -> u32 {
    warp_checksum_words(w, raw_bytes as usize, |j| input_le_word::<T>(input, j))
}

/// Encodes `input` as a RAW frame (header + the elements' bytes) into `out`; returns the frame's
/// bytes. Called by every lane of the warp with the same arguments.
///
/// `Err(OutputTooSmall)` if `out` is shorter than [`max_encoded_len`], `Err(InputTooLarge)` if
/// the data's bytes do not fit a u32.
pub fn encode_raw_frame<W: Warp, T: Elem>(w: W, input: &[T::Bits], out: LaneOut<'_>) -> Result<usize, FrameError> {
    let raw_bytes = check_encode_args::<T>(input.len(), &out)?;
    let checksum = input_checksum::<W, T>(w, input, raw_bytes);
    Ok(raw_frame::<W, T>(w, input, raw_bytes, checksum, out))
}

/// Encodes `input` into one frame in `out` with coder `C` (RAW when that is not smaller; see
/// the module docs); returns the frame's bytes, at most [`max_encoded_len`]`::<T>(input.len())`.
/// Called by every lane of the warp with the same arguments; the bytes are the same for warps
/// of 32 and 64 lanes.
///
/// `Err(OutputTooSmall)` if `out` is shorter than [`max_encoded_len`], `Err(InputTooLarge)` if
/// the data's bytes do not fit a u32.
pub fn encode_frame<W: Warp, T: Split, C: SymbolCoder>(
    w: W,
    input: &[T::Bits],
    out: LaneOut<'_>,
) -> Result<usize, FrameError> {
    let raw_bytes = check_encode_args::<T>(input.len(), &out)?;
    let checksum = input_checksum::<W, T>(w, input, raw_bytes);
    // every lane: raw_bytes and checksum of the whole input
    let words = input.len().div_ceil(T::ELEMS_PER_WORD);
    let plane_bytes = packed_bytes(words, T::RAW_BITS);
    if plane_bytes >= raw_bytes as usize || !T::DTYPE.coded() {
        // nothing to gain (also n == 0), or no coder for the dtype (`DType::coded`)
        return Ok(raw_frame::<W, T>(w, input, raw_bytes, checksum, out));
    }
    let lane = w.lane_id() as usize;
    let step = W::WIDTH as usize;
    let mut g = 0;
    while g < words {
        let i = g + lane;
        let raw = if i < words {
            T::split(input_word::<T>(input, i)).1.to_bits64() as u32
        } else {
            0
        };
        // lane l: the raw part of word g + l; the group's stream starts at bit g * R (a whole byte)
        let at = HEADER_BYTES + g * T::RAW_BITS as usize / 8;
        let lanes = (words - g).min(step) as u32;
        // In bounds: the plane is shorter than the data, and `out` holds the header and the data.
        // SAFETY: the frame coder runs on every lane, converged, with the same arguments (`LaneOut::from_raw`'s contract for `out`), so `at` and `lanes` are uniform; the groups' streams are disjoint.
        let _ = unsafe { pack_fixed_prefix(w, raw, T::RAW_BITS, lanes, out, at) };
        g += step;
    }
    // out[32 .. 32 + plane_bytes]: the raw plane. The coded section must leave the payload
    // smaller than the data.
    let budget = raw_bytes as usize - plane_bytes - 1;
    let coded_out = window(out, HEADER_BYTES + plane_bytes, budget);
    let sym = |i: usize| T::split(input_word::<T>(input, i)).0;
    match C::encode(w, words, T::SYMBOL_BITS, sym, coded_out) {
        Ok(Coded { len, params, params2 }) if len <= budget => {
            let payload = (plane_bytes + len) as u32;
            let h = FrameHeader::new(C::ID, T::DTYPE, params, params2, raw_bytes, payload, checksum);
            put_header(w, &h, out);
            Ok(HEADER_BYTES + payload as usize)
        }
        _ => {
            // every lane: the coder gave up; the lanes' writes so far are ordered before the copy
            w.sync(W::FULL);
            Ok(raw_frame::<W, T>(w, input, raw_bytes, checksum, out))
        }
    }
}

/// The raw plane and the coded section of a split payload of `n` elements of `T` coded by
/// `codec` (in either frame format), after the checks that make its layout canonical: the
/// payload is smaller than the data (the encoder writes RAW otherwise), holds the whole plane,
/// and the plane's padding bits are zero.
pub(super) fn split_payload<T: Split>(codec: CodecId, n: usize, payload: &[u8]) -> Result<(&[u8], &[u8]), FrameError> {
    if payload.len() >= n * T::DTYPE.size_bytes() {
        return Err(codec.corrupt(12, "payload not smaller than the data (the encoder writes RAW)"));
    }
    let words = n.div_ceil(T::ELEMS_PER_WORD);
    let plane_bytes = packed_bytes(words, T::RAW_BITS);
    let (plane, coded) = match (payload.get(..plane_bytes), payload.get(plane_bytes..)) {
        (Some(p), Some(c)) => (p, c),
        _ => return Err(codec.corrupt(HEADER_BYTES, "raw plane truncated")),
    };
    let plane_bits = words * T::RAW_BITS as usize;
    // fewer than 32 padding bits: the plane is padded to whole u32 words
    if read_bits(plane, plane_bits, (8 * plane_bytes - plane_bits) as u32) != Some(0) {
        return Err(codec.corrupt(HEADER_BYTES + plane_bits / 8, "nonzero raw plane padding"));
    }
    Ok((plane, coded))
}

/// Decodes the split payload (raw plane + coded section of coder `C`) of a frame of `n`
/// elements into `out` (which holds `n` elements).
fn decode_split<W: Warp, T: Split, C: SymbolCoder>(
    w: W,
    h: &FrameHeader,
    n: usize,
    payload: &[u8],
    out: LaneOut<'_>,
) -> Result<(), FrameError> {
    let size = T::DTYPE.size_bytes();
    let raw_bytes = n * size;
    let words = n.div_ceil(T::ELEMS_PER_WORD);
    let (plane, coded) = split_payload::<T>(C::ID, n, payload)?;
    let word_bytes = size * T::ELEMS_PER_WORD;
    // set on the lane that decodes a last word (fp8, odd n) whose missing element is not zero
    let mut pad = false;
    let put = |i: usize, s: u8| {
        if i >= words {
            return;
        }
        // Inside the plane: its length was checked above.
        let raw = read_bits(plane, i * T::RAW_BITS as usize, T::RAW_BITS).unwrap_or(0);
        let word = T::join(s, T::Raw::from_bits64(raw as u64)).to_bits64().to_le_bytes();
        let at = i * word_bytes;
        let len = (raw_bytes - at).min(word_bytes);
        pad |= word[len..word_bytes].iter().any(|b| *b != 0);
        // In bounds: `at + len <= raw_bytes <= out.len()` (checked by the caller).
        // SAFETY: `put(i, _)` is called once per word `i`, on one lane (the `SymbolCoder`
        // contract), and word `i` owns bytes `at .. at + len`; the frame coder runs on every lane, converged, with the same arguments (`LaneOut::from_raw`'s contract for `out`).
        let _ = unsafe { out.put(at, &word[..len]) };
    };
    C::decode(w, words, T::SYMBOL_BITS, h.params, h.params2, coded, put)?;
    if w.any(W::FULL, pad) {
        return Err(C::ID.corrupt(HEADER_BYTES, "the last word's missing element is not zero"));
    }
    Ok(())
}

/// Decodes the RAW payload: lane `l` copies words `l, l + WIDTH, ..`.
fn decode_raw<W: Warp>(w: W, h: &FrameHeader, payload: &[u8], out: LaneOut<'_>) -> Result<(), FrameError> {
    if payload.len() != h.raw_bytes as usize {
        return Err(CodecId::Raw.corrupt(HEADER_BYTES, "payload length is not the raw length"));
    }
    if h.params != 0 || h.params2 != 0 {
        return Err(CodecId::Raw.corrupt(6, "parameters are not zero"));
    }
    let mut at = w.lane_id() as usize * 4;
    while at < payload.len() {
        let chunk = payload.get(at..(at + 4).min(payload.len())).unwrap_or(&[]);
        // In bounds: `payload.len() == raw_bytes <= out.len()` (checked by the caller).
        // SAFETY: lane `l` writes words `l, l + WIDTH, ..` only; the frame coder runs on every lane, converged, with the same arguments (`LaneOut::from_raw`'s contract for `out`).
        let _ = unsafe { out.put(at, chunk) };
        at += W::WIDTH as usize * 4;
    }
    Ok(())
}

/// The header of a frame of `version` holding `T` data that fits `capacity` bytes of output,
/// the number of elements and the payload: the checks before any payload byte is read, in the
/// order of the module docs (header, dtype, raw length, payload inside `frame`).
pub(super) fn parse_for<T: Split>(
    frame: &[u8],
    version: u8,
    capacity: usize,
) -> Result<(FrameHeader, usize, &[u8]), FrameError> {
    let h = FrameHeader::parse_version(frame, version)?;
    let dtype = h.dtype_id().ok_or(FrameError::UnknownDType { found: h.dtype })?;
    if dtype != T::DTYPE {
        return Err(FrameError::WrongDType {
            frame: dtype,
            expected: T::DTYPE,
        });
    }
    let size = T::DTYPE.size_bytes();
    let raw_bytes = h.raw_bytes as usize;
    if !raw_bytes.is_multiple_of(size) || raw_bytes > capacity {
        return Err(FrameError::BadRawLength {
            raw_bytes: h.raw_bytes,
            capacity,
        });
    }
    let need = HEADER_BYTES + h.payload_bytes as usize;
    let payload = frame.get(HEADER_BYTES..need).ok_or(FrameError::Truncated {
        need,
        have: frame.len(),
    })?;
    Ok((h, raw_bytes / size, payload))
}

/// Decodes one frame of `T` elements from `frame` into `out` (the elements' bytes,
/// little-endian); returns the number of elements. Called by every lane of the warp with the
/// same arguments. Checks and errors are listed in the module docs; on `Err`, `out` may have
/// been partly written. Bytes of `frame` past the frame's end are ignored.
pub fn decode_frame<W: Warp, T: Split>(w: W, frame: &[u8], out: LaneOut<'_>) -> Result<usize, FrameError> {
    decode_frame_of::<W, T, true>(w, frame, out)
}

/// [`decode_frame`] for RAW frames only: a valid frame of another codec is
/// [`FrameError::CodecNotBuilt`], and no symbol coder is in the code (for kernels that must stay
/// small: the block-channel kernel).
pub fn decode_raw_frame<W: Warp, T: Split>(w: W, frame: &[u8], out: LaneOut<'_>) -> Result<usize, FrameError> {
    decode_frame_of::<W, T, false>(w, frame, out)
}

/// [`decode_frame`], with the symbol coders' decoders when `CODED`.
fn decode_frame_of<W: Warp, T: Split, const CODED: bool>(
    w: W,
    frame: &[u8],
    out: LaneOut<'_>,
) -> Result<usize, FrameError> {
    let (h, n, payload) = parse_for::<T>(frame, FRAME_VERSION, out.len())?;
    let raw_bytes = h.raw_bytes as usize;
    let codec = h.codec_id().ok_or(FrameError::UnknownCodec { found: h.codec })?;
    if codec != CodecId::Raw && !(CODED && T::DTYPE.coded()) {
        return Err(FrameError::CodecNotBuilt { codec });
    }
    crate::with_symbol_coder!(codec, |C| decode_split::<W, T, C>(w, &h, n, payload, out)?, raw => decode_raw(w, &h, payload, out)?);
    // every lane: its writes are done; after the sync, every lane sees every lane's writes
    w.sync(W::FULL);
    let computed = warp_checksum_words(w, raw_bytes, |j| {
        u32::from_le_bytes(core::array::from_fn(|k| {
            if j * 4 + k < raw_bytes {
                out_byte(&out, j * 4 + k)
            } else {
                0
            }
        }))
    });
    if computed != h.raw_checksum {
        return Err(FrameError::RawChecksum {
            stored: h.raw_checksum,
            computed,
        });
    }
    Ok(n)
}
