//! Block frames (format version [`BLOCK_FRAME_VERSION`]): a frame coded by every thread of one
//! block, with its tables in block-shared memory, for codec kernels that give a frame a whole
//! block. The header is [`FrameHeader`]'s; the payload is laid out as in version 1
//! (`frame_codec`: RAW, or the raw plane then the coder's section), and the coder's section is
//! the [`BlockCoder`]'s own.
//!
//! | codec id | payload                                                          | coded by            |
//! |----------|------------------------------------------------------------------|---------------------|
//! | `Raw`    | the data as is                                                   | 16-byte copies      |
//! | `ExpAns` | raw plane, then [`ExpAns`]'s block section (segments of 8192 words) | `exp_ans::block` |
//!
//! Other codec ids are `UnknownCodec` in a block frame until they have a block coder; the warp
//! frame codec (`frame_codec`, version 1) still serves the communication kernels, whose channel
//! is one warp, and rejects these frames as `UnsupportedVersion` (as this codec rejects its).
//!
//! **Encoding** makes one pass over the input: thread `t` takes chunks `t, t + B, ..` of 32
//! split words (16-byte loads when aligned, every value in registers), adds their checksum
//! terms, writes their part of the raw plane (32 words x `R` bits are `R` whole u32) and lets
//! the coder count their symbols; then the coder codes the symbols, reading them again eight
//! at a time ([`BlockCoder::encode`]'s `symbols`, 16-byte loads), and the header goes last.
//! A frame that would not be smaller than the data is RAW, as in version 1.
//!
//! **Decoding** checks what `frame_codec` checks, in the same order, and is canonical as
//! version 1 is (a frame that decodes to `x` is the frame the encoder writes for `x`); the coder hands each
//! decoded symbol to the frame layer, which joins it with its raw bits, stores the word and
//! adds its checksum term in the same step, so the output is never read back.
//!
//! The bytes do not depend on the block size or the warp width. `scratch` is the block's
//! shared memory: at least [`encode_scratch_bytes`] / [`decode_scratch_bytes`].

use super::frame_codec::{check_encode_args, parse_for, split_payload, window};
use super::{CodecId, Coded, ExpAns, LaneOut, OutOfSpace};
use crate::bits::{le_word, packed_bytes, read_bits};
use crate::block::{block_any, block_sum, shared_u32, shared_u8, Scratch, REDUCE_WORDS};
use crate::dtype::{elem_bytes, Split};
use crate::frame::{checksum_term, FrameError, FrameHeader, BLOCK_FRAME_VERSION, HEADER_BYTES};
use zipcoll_targets::{Warp, Word, V4};

/// Split words of a block frame at most: 2^20 (2 MiB of bf16, 4 MiB of f32).
pub const MAX_FRAME_WORDS: usize = 1 << 20;
/// Split words per thread per step of the encoder's pass over the input.
const CHUNK: usize = 32;

/// Bytes of one split word: 4 for f32, 2 for the others (an fp8 word holds two elements).
const fn word_bytes<T: Split>() -> usize {
    T::DTYPE.size_bytes() * T::ELEMS_PER_WORD
}

/// Codes a frame's exponent symbols with every thread of a block (see the module docs).
///
/// All functions are called by every thread of the block, converged, with the same arguments.
pub trait BlockCoder {
    /// This coder's id in frame headers.
    const ID: CodecId;
    /// What the encoder keeps in shared memory between counting and coding.
    type Encoder: Copy;
    /// Shared-memory bytes the encoder takes from the scratch for a block of `block_dim` threads.
    fn encode_scratch_bytes(block_dim: u32) -> usize;
    /// Shared-memory bytes the decoder takes.
    fn decode_scratch_bytes(block_dim: u32) -> usize;
    /// Takes and initializes the encoder's shared memory (ends with a block barrier).
    fn begin<W: Warp>(w: W, scratch: &mut Scratch) -> Result<Self::Encoder, FrameError>;
    /// Counts one symbol (any thread, any number of times, between `begin` and `encode`).
    fn count<W: Warp>(w: W, enc: Self::Encoder, symbol: u8);
    /// Codes the `words` symbols (each `< 2^symbol_bits`) into `out`, from its start.
    /// `symbols(i)`, for `i` a multiple of 8, gives symbols `i .. i + 8` (byte `k` is symbol
    /// `i + k`; zero past `words`), read from the input with 16-byte loads where they can be.
    /// `Err(OutOfSpace)` (on every thread) when they do not fit: the frame is then RAW.
    fn encode<W: Warp>(
        w: W,
        enc: Self::Encoder,
        words: usize,
        symbol_bits: u32,
        symbols: impl Fn(usize) -> u64,
        out: LaneOut<'_>,
    ) -> Result<Coded, OutOfSpace>;
    /// Decodes `words` symbols from exactly `coded` in runs: the warp that has decoded symbols
    /// `start..end` into shared memory calls `join(start, end, staged)` with every lane,
    /// converged, where byte `k` at `staged` (4-byte aligned) is symbol `start + k`, readable by
    /// every lane of the warp until `join` returns. Runs start at multiples of 32, are disjoint
    /// and cover `0..words` when the result is `Ok`. Reads stay in `coded`; the result is the
    /// same on every thread.
    #[allow(clippy::too_many_arguments)]
    fn decode<W: Warp>(
        w: W,
        scratch: Scratch,
        words: usize,
        symbol_bits: u32,
        params: u16,
        params2: u32,
        coded: &[u8],
        join: impl FnMut(usize, usize, *const u8),
    ) -> Result<(), FrameError>;
}

/// Shared-memory bytes [`encode_block_frame`] needs with coder `C` for `block_dim` threads.
pub fn encode_scratch_bytes<C: BlockCoder>(block_dim: u32) -> usize {
    4 * REDUCE_WORDS + 16 + C::encode_scratch_bytes(block_dim)
}

/// Shared-memory bytes [`decode_block_frame`] needs for `block_dim` threads (any codec).
pub fn decode_scratch_bytes(block_dim: u32) -> usize {
    4 * REDUCE_WORDS + 16 + ExpAns::decode_scratch_bytes(block_dim)
}

/// Shared-memory bytes that any block coder needs to encode or decode with `block_dim`
/// threads: the scratch a communication kernel reserves for its channel's block frames.
pub fn coder_scratch_bytes(block_dim: u32) -> usize {
    encode_scratch_bytes::<ExpAns>(block_dim).max(decode_scratch_bytes(block_dim))
}

/// [`encode_block_frame`] with the block coder of codec `id`; `None` when `id` has none (RAW
/// included: its frames are written by the communication kernels' RAW pass). The one list of
/// block coders on the encode side; [`decode_block_frame`] holds the decode side's.
pub fn encode_block_frame_with<W: Warp, T: Split>(
    w: W,
    scratch: Scratch,
    id: CodecId,
    input: &[T::Bits],
    out: LaneOut<'_>,
) -> Option<Result<usize, FrameError>> {
    match id {
        CodecId::ExpAns if T::DTYPE.coded() => Some(encode_block_frame::<W, T, ExpAns>(w, scratch, input, out)),
        _ => None,
    }
}

/// Split word `i` of the elements' bytes (little-endian, zero past the end), read as whole
/// elements (naturally aligned loads).
#[inline(always)]
fn split_word<T: Split>(input: &[T::Bits], i: usize) -> u32 {
    let bits = 8 * T::DTYPE.size_bytes();
    let mut v = 0u32;
    for k in 0..T::ELEMS_PER_WORD {
        let e = input.get(i * T::ELEMS_PER_WORD + k).map_or(0, |e| e.to_bits64() as u32);
        v |= e << (bits * k);
    }
    v
}

/// The exponent symbol of split word `i`.
#[inline(always)]
fn symbol_of<T: Split>(input: &[T::Bits], i: usize) -> u8 {
    T::split(T::Word::from_bits64(split_word::<T>(input, i) as u64)).0
}

/// The exponent symbols of split words `i .. i + 8` (`i` a multiple of 8), byte `k` the symbol
/// of word `i + k` (zero past the end): one or two 16-byte loads when the words are whole and
/// aligned.
#[inline(always)]
fn symbols8<W: Warp, T: Split>(w: W, input: &[T::Bits], i: usize) -> u64 {
    let bytes = elem_bytes::<T>(input);
    let wb = word_bytes::<T>();
    let halves = 4 / wb;
    let at = i * wb;
    if at + 8 * wb > bytes.len() || !(bytes.as_ptr() as usize + at).is_multiple_of(16) {
        return (0..8).fold(0, |v, k| v | (symbol_of::<T>(input, i + k) as u64) << (8 * k));
    }
    let mut v = 0u64;
    for q in 0..wb / 2 {
        // this thread: split words i + 4q * halves .. as four u32
        each_word(load_quad(w, bytes, at / 16 + q), |e, value| {
            for h in 0..halves {
                let split = if halves == 2 {
                    (value >> (16 * h)) & 0xFFFF
                } else {
                    value
                };
                let s = T::split(T::Word::from_bits64(split as u64)).0;
                v |= (s as u64) << (8 * ((4 * q + e) * halves + h));
            }
        });
    }
    v
}

/// Calls `f(e, quad[e])` for `e` in `0..4` with constant indices, so that the quad stays in
/// registers (a loop over it may index a local-memory copy).
#[inline(always)]
fn each_word(quad: [u32; 4], mut f: impl FnMut(usize, u32)) {
    f(0, quad[0]);
    f(1, quad[1]);
    f(2, quad[2]);
    f(3, quad[3]);
}

/// The four little-endian u32 words `4q .. 4q + 4` of `bytes` (zero past the end): one
/// 16-byte load when they are whole and 16-byte aligned.
#[inline(always)]
fn load_quad<W: Warp>(w: W, bytes: &[u8], q: usize) -> [u32; 4] {
    let at = 16 * q;
    let p = bytes.as_ptr();
    if at + 16 <= bytes.len() && (p as usize + at).is_multiple_of(16) {
        // SAFETY: 16 bytes inside `bytes` (checked above), 16-byte aligned (checked).
        unsafe { w.load_v4(p.add(at).cast::<V4>()) }.0
    } else {
        [0, 1, 2, 3].map(|k| le_word(bytes, 4 * q + k))
    }
}

/// The encoder's pass over the input: chunks `tid, tid + B, ..` of 32 split words, each read
/// as `U / 4` quads of u32 words ([`load_quad`], `U = 8 x word_bytes`), every value in
/// registers. Returns this thread's share of the checksum; writes the raw plane (when `coder`
/// is given) and counts the symbols.
fn first_pass<W: Warp, T: Split, C: BlockCoder>(
    w: W,
    bytes: &[u8],
    words: usize,
    coder: Option<C::Encoder>,
    out: LaneOut<'_>,
) -> u32 {
    let r = T::RAW_BITS as usize;
    let units = 8 * word_bytes::<T>();
    // split words per u32 word: 2 (2-byte words) or 1
    let halves = 4 / word_bytes::<T>();
    let plane_words = packed_bytes(words, T::RAW_BITS) / 4;
    let mut acc = 0u32;
    let mut c = w.thread_idx() as usize;
    while c * CHUNK < words {
        // this thread: the raw bits of the chunk's split words so far, `nbits` of them in
        // `bitbuf`, and `k` plane words written
        let (mut bitbuf, mut nbits, mut k) = (0u64, 0usize, 0usize);
        for q in 0..units / 4 {
            let quad = load_quad(w, bytes, c * units / 4 + q);
            each_word(quad, |e, value| {
                let j = c * units + 4 * q + e;
                if j * 4 < bytes.len() {
                    acc = acc.wrapping_add(checksum_term(value, j as u32));
                }
                let Some(enc) = coder else { return };
                for h in 0..halves {
                    let i = j * halves + h;
                    let split = if halves == 2 {
                        (value >> (16 * h)) & 0xFFFF
                    } else {
                        value
                    };
                    let (s, raw) = T::split(T::Word::from_bits64(split as u64));
                    let raw = if i < words {
                        C::count(w, enc, s);
                        raw.to_bits64()
                    } else {
                        0
                    };
                    bitbuf |= raw << nbits;
                    nbits += r;
                    // (R <= 32, so at most one plane word is complete)
                    if nbits >= 32 {
                        let at = c * r + k;
                        if at < plane_words {
                            // In bounds: the plane is shorter than the data, which `out` holds.
                            // SAFETY: plane words `c * R .. (c + 1) * R` belong to chunk `c`,
                            // which only this thread handles.
                            let _ = unsafe { out.put_le(HEADER_BYTES + 4 * at, bitbuf as u32, 4) };
                        }
                        bitbuf >>= 32;
                        nbits -= 32;
                        k += 1;
                    }
                }
            });
        }
        c += w.block_dim() as usize;
    }
    acc
}

/// Copies `len` bytes of `src` to `dst` from `dst_at` (16 bytes at a time when both are
/// aligned), thread-stride over the block; returns this thread's share of their checksum.
fn copy_summed<W: Warp>(w: W, src: &[u8], dst: LaneOut<'_>, dst_at: usize, len: usize) -> u32 {
    let tid = w.thread_idx() as usize;
    let step = w.block_dim() as usize;
    let mut acc = 0u32;
    let fast = (src.as_ptr() as usize).is_multiple_of(16)
        && (dst.as_mut_ptr() as usize + dst_at).is_multiple_of(16)
        && src.len() >= len
        && dst.len() >= dst_at + len;
    let whole = if fast { len / 16 } else { 0 };
    let mut q = tid;
    while q < whole {
        // SAFETY: bytes `16q .. 16q + 16 <= len <= src.len()`, 16-byte aligned (checked).
        let v = unsafe { w.load_v4(src.as_ptr().add(16 * q).cast::<V4>()) };
        // SAFETY: `dst_at + 16q + 16 <= dst.len()`, aligned (checked); block `q` is this thread's.
        unsafe { w.store_v4(dst.as_mut_ptr().add(dst_at + 16 * q).cast::<V4>(), v) };
        for (k, word) in v.0.iter().enumerate() {
            acc = acc.wrapping_add(checksum_term(*word, (4 * q + k) as u32));
        }
        q += step;
    }
    let mut j = whole * 4 + tid;
    while j * 4 < len {
        let word = le_word(&src[..len.min(src.len())], j);
        let n = (len - j * 4).min(4);
        // SAFETY: word `j` is this thread's; `put_le` checks the bounds.
        let _ = unsafe { dst.put_le(dst_at + 4 * j, word, n) };
        acc = acc.wrapping_add(checksum_term(word, j as u32));
        j += step;
    }
    acc
}

/// Writes `header` (thread 0) after a block barrier, so every thread's payload writes are done.
fn finish<W: Warp>(w: W, header: FrameHeader, out: LaneOut<'_>) -> usize {
    w.block_sync();
    if w.thread_idx() == 0 {
        // In bounds: every caller checked `out` holds a whole frame.
        // SAFETY: only thread 0 writes the header.
        let _ = unsafe { out.put(0, &header.to_bytes()) };
    }
    HEADER_BYTES + header.payload_bytes as usize
}

/// A version-2 header.
fn header<T: Split>(
    codec: CodecId,
    params: u16,
    params2: u32,
    raw_bytes: u32,
    payload: u32,
    checksum: u32,
) -> FrameHeader {
    FrameHeader::new(codec, T::DTYPE, params, params2, raw_bytes, payload, checksum).with_version(BLOCK_FRAME_VERSION)
}

/// The frame layer's scratch: the reductions' words (`need` names what the caller needs).
fn frame_tmp(scratch: &mut Scratch, need: usize) -> Result<*mut u32, FrameError> {
    let have = scratch.len();
    scratch
        .take::<u32>(REDUCE_WORDS)
        .ok_or(FrameError::ScratchTooSmall { need, have })
}

/// Encodes `input` into one block frame in `out` with coder `C` (RAW when that is not
/// smaller); returns the frame's bytes, at most `max_encoded_len::<T>(input.len())`. Called by
/// every thread of the block with the same arguments.
///
/// `Err(OutputTooSmall)` if `out` is shorter than `max_encoded_len`, `Err(InputTooLarge)` past
/// [`MAX_FRAME_WORDS`], `Err(ScratchTooSmall)` if `scratch` is smaller than
/// [`encode_scratch_bytes`].
pub fn encode_block_frame<W: Warp, T: Split, C: BlockCoder>(
    w: W,
    scratch: Scratch,
    input: &[T::Bits],
    out: LaneOut<'_>,
) -> Result<usize, FrameError> {
    let raw_bytes = check_encode_args::<T>(input.len(), &out)?;
    let words = input.len().div_ceil(T::ELEMS_PER_WORD);
    if words > MAX_FRAME_WORDS {
        return Err(FrameError::InputTooLarge {
            bytes: raw_bytes as usize,
        });
    }
    let mut scratch = scratch;
    let have = scratch.len();
    let too_small = FrameError::ScratchTooSmall {
        need: encode_scratch_bytes::<C>(w.block_dim()),
        have,
    };
    let tmp = scratch.take::<u32>(REDUCE_WORDS).ok_or(too_small)?;
    let bytes = elem_bytes::<T>(input);
    let plane_bytes = packed_bytes(words, T::RAW_BITS);
    let coder = if plane_bytes < raw_bytes as usize {
        Some(C::begin(w, &mut scratch).map_err(|_| too_small)?)
    } else {
        None
    };
    let acc = first_pass::<W, T, C>(w, bytes, words, coder, out);
    // SAFETY: `tmp` is this call's; the block has at most REDUCE_WORDS warps (1024 threads).
    let checksum = unsafe { block_sum(w, tmp, acc) }.wrapping_add(raw_bytes);
    // every thread: the checksum of the whole input; the plane and the counts are complete
    if let Some(enc) = coder {
        let budget = raw_bytes as usize - plane_bytes - 1;
        let coded_out = window(out, HEADER_BYTES + plane_bytes, budget);
        let symbols = |i: usize| symbols8::<W, T>(w, input, i);
        if let Ok(Coded { len, params, params2 }) = C::encode(w, enc, words, T::SYMBOL_BITS, symbols, coded_out) {
            if len <= budget {
                let payload = (plane_bytes + len) as u32;
                let h = header::<T>(C::ID, params, params2, raw_bytes, payload, checksum);
                return Ok(finish(w, h, out));
            }
        }
        // every thread: the coder gave up; the plane's bytes are overwritten below
        w.block_sync();
    }
    copy_summed(w, bytes, out, HEADER_BYTES, raw_bytes as usize);
    let h = header::<T>(CodecId::Raw, 0, 0, raw_bytes, raw_bytes, checksum);
    Ok(finish(w, h, out))
}

/// Encodes `input` as a RAW block frame (header + the elements' bytes, one pass): as
/// [`encode_block_frame`] without a coder.
pub fn encode_block_raw_frame<W: Warp, T: Split>(
    w: W,
    scratch: Scratch,
    input: &[T::Bits],
    out: LaneOut<'_>,
) -> Result<usize, FrameError> {
    let raw_bytes = check_encode_args::<T>(input.len(), &out)?;
    let mut scratch = scratch;
    let tmp = frame_tmp(&mut scratch, 4 * REDUCE_WORDS)?;
    let acc = copy_summed(w, elem_bytes::<T>(input), out, HEADER_BYTES, raw_bytes as usize);
    // SAFETY: `tmp` is this call's; at most REDUCE_WORDS warps.
    let checksum = unsafe { block_sum(w, tmp, acc) }.wrapping_add(raw_bytes);
    let h = header::<T>(CodecId::Raw, 0, 0, raw_bytes, raw_bytes, checksum);
    Ok(finish(w, h, out))
}

/// Decodes one block frame of `T` elements from `frame` into `out` (the elements' bytes,
/// little-endian); returns the number of elements. Called by every thread of the block with the
/// same arguments; the checks and errors are `decode_frame`'s (version 1 frames are
/// `UnsupportedVersion`), plus `ScratchTooSmall`. On `Err`, `out` may have been partly written.
pub fn decode_block_frame<W: Warp, T: Split>(
    w: W,
    scratch: Scratch,
    frame: &[u8],
    out: LaneOut<'_>,
) -> Result<usize, FrameError> {
    let (h, n, payload) = parse_for::<T>(frame, BLOCK_FRAME_VERSION, out.len())?;
    let raw_bytes = h.raw_bytes as usize;
    let words = n.div_ceil(T::ELEMS_PER_WORD);
    if words > MAX_FRAME_WORDS {
        return Err(FrameError::BadRawLength {
            raw_bytes: h.raw_bytes,
            capacity: MAX_FRAME_WORDS * word_bytes::<T>(),
        });
    }
    let mut scratch = scratch;
    let tmp = frame_tmp(&mut scratch, decode_scratch_bytes(w.block_dim()))?;
    let acc = match h.codec_id() {
        Some(CodecId::Raw) => {
            if payload.len() != raw_bytes {
                return Err(CodecId::Raw.corrupt(HEADER_BYTES, "payload length is not the raw length"));
            }
            if h.params != 0 || h.params2 != 0 {
                return Err(CodecId::Raw.corrupt(6, "parameters are not zero"));
            }
            copy_summed(w, payload, out, 0, raw_bytes)
        }
        Some(CodecId::ExpAns) if T::DTYPE.coded() => {
            decode_split::<W, T, ExpAns>(w, scratch, tmp, &h, n, payload, out)?
        }
        Some(codec @ CodecId::ExpAns) => return Err(FrameError::CodecNotBuilt { codec }),
        _ => return Err(FrameError::UnknownCodec { found: h.codec }),
    };
    // SAFETY: `tmp` is this call's; at most REDUCE_WORDS warps.
    let computed = unsafe { block_sum(w, tmp, acc) }.wrapping_add(raw_bytes as u32);
    if computed != h.raw_checksum {
        return Err(FrameError::RawChecksum {
            stored: h.raw_checksum,
            computed,
        });
    }
    Ok(n)
}

/// Decodes a split payload of `n` elements with coder `C`: joins each run of symbols the coder
/// stages with its raw bits, stores the words and adds their checksum terms ([`join_run`]).
/// Returns this thread's share of the checksum. Canonical as `frame_codec`'s: the payload's
/// layout is checked first ([`split_payload`]), and a last word (fp8, odd `n`) whose missing
/// element is not zero is `Corrupt` once every run is joined.
#[allow(clippy::too_many_arguments)]
fn decode_split<W: Warp, T: Split, C: BlockCoder>(
    w: W,
    scratch: Scratch,
    tmp: *mut u32,
    h: &FrameHeader,
    n: usize,
    payload: &[u8],
    out: LaneOut<'_>,
) -> Result<u32, FrameError> {
    let (plane, coded) = split_payload::<T>(C::ID, n, payload)?;
    let raw_bytes = n * T::DTYPE.size_bytes();
    let (mut acc, mut pad) = (0u32, false);
    let join = |start: usize, end: usize, staged: *const u8| {
        // SAFETY: the `BlockCoder::decode` contract: this warp's run, staged for its lanes.
        let (part, bad) = unsafe { join_run::<W, T>(w, plane, out, raw_bytes, start, end, staged) };
        acc = acc.wrapping_add(part);
        pad |= bad;
    };
    C::decode(
        w,
        scratch,
        n.div_ceil(T::ELEMS_PER_WORD),
        T::SYMBOL_BITS,
        h.params,
        h.params2,
        coded,
        join,
    )?;
    // SAFETY: `tmp` is the caller's reduction words, unused during this call; at most
    // REDUCE_WORDS warps.
    if unsafe { block_any(w, tmp, pad) } {
        return Err(C::ID.corrupt(HEADER_BYTES, "the last word's missing element is not zero"));
    }
    Ok(acc)
}

/// Joins the run `start..end` of a frame's split words with their raw bits and stores them,
/// with every lane of the warp: lane `l` takes chunks `l, l + WIDTH, ..` of 32 words. A whole
/// chunk with `out` 16-byte aligned is joined in registers: its `R` plane words loaded once
/// into a bit buffer, four symbols per shared load, the words stored 16 bytes at a time, each
/// stored u32 added to the checksum. A partial chunk (the frame's last) or an unaligned `out`
/// goes word by word. Returns this lane's share of the checksum, and whether it joined a last
/// word (fp8, odd element count) whose missing element is not zero.
///
/// # Safety
/// Byte `k` at `staged` is symbol `start + k` for `k < end - start`, 4-byte aligned and
/// readable; `start` is a multiple of 32, `end <= words`, and no other lane or warp writes
/// words `start..end` of `out` meanwhile.
#[inline(always)]
unsafe fn join_run<W: Warp, T: Split>(
    w: W,
    plane: &[u8],
    out: LaneOut<'_>,
    raw_bytes: usize,
    start: usize,
    end: usize,
    staged: *const u8,
) -> (u32, bool) {
    let r = T::RAW_BITS;
    let wb = word_bytes::<T>();
    let mask = if r == 32 { u32::MAX } else { (1u32 << r) - 1 };
    // words per 16-byte store: 8 (2-byte words) or 4
    let per_v4 = 16 / wb;
    let vectors =
        (out.as_mut_ptr() as usize + start * wb).is_multiple_of(16) && (plane.as_ptr() as usize).is_multiple_of(4);
    let word_of = |s: u8, raw: u32| T::join(s, T::Raw::from_bits64(raw as u64)).to_bits64() as u32;
    let (mut acc, mut pad) = (0u32, false);
    let mut c = w.lane_id() as usize;
    while start + CHUNK * c < end {
        let i0 = start + CHUNK * c;
        let sym = staged.wrapping_add(CHUNK * c);
        if vectors && i0 + CHUNK <= end && (i0 + CHUNK) * wb <= raw_bytes {
            // this lane: words i0 .. i0 + 32, whole; their plane is R u32 from word (i0/32) * R
            let mut next = 4 * (i0 / CHUNK) * r as usize;
            let (mut buf, mut have) = (0u64, 0u32);
            for v in 0..CHUNK / per_v4 {
                let mut q = [0u32; 4];
                // SAFETY: symbols `CHUNK * c + v * per_v4 ..` of the run, 4-aligned (the
                // caller's contract; `per_v4` is 4 or 8).
                let syms = unsafe {
                    let p = sym.add(v * per_v4).cast::<u32>();
                    let hi = if per_v4 == 8 { shared_u32(p.add(1)) } else { 0 };
                    (shared_u32(p) as u64) | (hi as u64) << 32
                };
                for m in 0..per_v4 {
                    if have < r {
                        // the chunk's R plane words lie inside `plane` (a whole chunk below
                        // `words`; the plane holds `ceil(words * R / 32)` words); read through
                        // the slice, as all decoder input is (a short plane would read zeros)
                        let w = plane
                            .get(next..next + 4)
                            .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
                        buf |= (w as u64) << have;
                        next += 4;
                        have += 32;
                    }
                    let word = word_of((syms >> (8 * m)) as u8, buf as u32 & mask);
                    buf >>= r;
                    have -= r;
                    if wb == 4 {
                        q[m] = word;
                    } else {
                        q[m / 2] |= word << (16 * (m % 2));
                    }
                }
                // this lane: the 16 output bytes of words i0 + v * per_v4 .., as u32 words j
                let j = (i0 * wb) / 4 + 4 * v;
                for (k, x) in q.iter().enumerate() {
                    acc = acc.wrapping_add(checksum_term(*x, (j + k) as u32));
                }
                // SAFETY: bytes `i0 * wb + 16 v ..` + 16 <= `raw_bytes <= out.len()` (checked),
                // 16-byte aligned (checked), words of this lane's chunk.
                unsafe { w.store_v4(out.as_mut_ptr().add(i0 * wb + 16 * v).cast::<V4>(), V4(q)) };
            }
        } else {
            let (part, bad) = join_words::<T>(plane, out, raw_bytes, i0, (i0 + CHUNK).min(end), sym);
            acc = acc.wrapping_add(part);
            pad |= bad;
        }
        c += W::WIDTH as usize;
    }
    (acc, pad)
}

/// [`join_run`] word by word for words `i0..end` of one chunk (`i0` even): the checksum pairs
/// 2-byte words `(i, i + 1)` into one u32 (the high half zero past `end`) and masks bytes past
/// `raw_bytes`, as the encoder counted them. Also returns whether a word reaching past
/// `raw_bytes` (fp8's last, odd `n`) has a nonzero byte there (the encoder writes zero).
///
/// # Safety
/// Byte `k` at `sym` is symbol `i0 + k` for `k < end - i0`; the caller owns words `i0..end` of
/// `out`.
#[inline(always)]
unsafe fn join_words<T: Split>(
    plane: &[u8],
    out: LaneOut<'_>,
    raw_bytes: usize,
    i0: usize,
    end: usize,
    sym: *const u8,
) -> (u32, bool) {
    let r = T::RAW_BITS;
    let wb = word_bytes::<T>();
    let (mut acc, mut pad) = (0u32, false);
    let mut pending = 0u32;
    for i in i0..end {
        let raw = read_bits(plane, i * r as usize, r).unwrap_or(0);
        // SAFETY: `i - i0 < end - i0` (the caller's contract).
        let s = unsafe { shared_u8(sym.add(i - i0)) };
        let word = T::join(s, T::Raw::from_bits64(raw as u64)).to_bits64() as u32;
        let at = i * wb;
        let len = raw_bytes.saturating_sub(at).min(wb);
        pad |= len < wb && word >> (8 * len) != 0;
        // In bounds: `put_le` checks; `at < raw_bytes <= out.len()` for every `i < words`.
        // SAFETY: word `i` is the caller's.
        let _ = unsafe { out.put_le(at, word, len) };
        // the checksum word that ends here (or is cut off by `end`), and its index
        let (value, j) = match wb {
            4 => (word, i),
            _ if i % 2 == 0 && i + 1 < end => {
                pending = word;
                continue;
            }
            _ if i % 2 == 0 => (word, i / 2),
            _ => (pending | word << 16, i / 2),
        };
        if j * 4 < raw_bytes {
            let keep = raw_bytes - j * 4;
            let value = if keep < 4 {
                value & ((1u32 << (8 * keep)) - 1)
            } else {
                value
            };
            acc = acc.wrapping_add(checksum_term(value, j as u32));
        }
    }
    (acc, pad)
}
