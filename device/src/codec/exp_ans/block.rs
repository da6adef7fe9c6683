//! [`ExpAns`] as a [`BlockCoder`]: interleaved rANS over segments of [`SEGMENT_WORDS`]
//! symbols, one warp per segment, with the tables in block-shared memory.
//!
//! Coded section (`K` used symbols, `S = ceil(words / SEGMENT_WORDS)` segments; little-endian):
//!
//! | offset            | size       | content                                                        |
//! |-------------------|------------|----------------------------------------------------------------|
//! | 0                 | `3K + 3`   | the table, as in version 1: `K - 1`, the used symbols ascending, `cum[0..=K]` (u16) |
//! | `3K + 3`          | to `A`     | zero up to `A`, the next multiple of 4                         |
//! | `A`               | `4S`       | `words[s]`: the 16-bit words of segment `s`'s stream (u32)      |
//! | `A + 4S`          | `128S`     | segment `s`'s 32 final states (u32), stream 0 first, each in `[2^16, 2^32)` |
//! | `A + 132S`        | `2 x sum`  | the segments' word streams, segment 0 first                     |
//!
//! Header: `params` = `p` = 11 (the only value the decoder accepts), `params2` = the total of `words[s]`.
//!
//! **Table.** Every symbol of the frame is counted in the encoder's pass over the input (four
//! histograms in shared memory, warp `w` counting into copy `w % 4` to spread the atomics);
//! the normalization is version 1's (1 for each used symbol, the rest in proportion, the
//! deficit to the most frequent symbol, the lowest one on a tie), computed by the block: a
//! symbol per thread, block sums and maxima, and one block scan in symbol order that gives
//! every used symbol its `cum` and its rank. The encoder's table is 256 entries of two u32 in
//! shared memory: a Granlund-Montgomery reciprocal of `freq`, and `freq | cum << 12 | l << 24`
//! with `l = ceil(log2 freq)`, so `x / freq` is a multiply-high, a subtract and two shifts. The
//! decoder's table is `2^p` u32, slot -> `symbol | freq << 8 | cum << 20`: one shared load
//! per symbol.
//!
//! **Segments.** Symbol `i` of segment `s` (`i` counted from the segment's start) belongs to
//! stream `i % 32`, coded by lane `i % 32` of the warp that takes the segment (warps take
//! segments `warp, warp + warps, ..`; lanes 32.. of a 64-lane warp idle), with version 1's
//! state machine: 32-bit states in `[2^16, 2^32)`, one 16-bit word out per renormalization,
//! the rounds of 32 symbols coded last to first, in batches of 8 rounds whose symbols the
//! frame layer reads with 16-byte loads one batch ahead and a warp-shared buffer hands to
//! the lanes (see [`code_segment`]). A round's words are appended in lane order
//! to the warp's staging buffer in shared memory (`SEGMENT_WORDS / 2` words: a segment whose
//! stream needs more, over 8 bits a symbol, never pays, and makes the frame RAW); after each
//! batch of segments a barrier, a prefix over the batch's lengths, and each warp copies its
//! stream to its place. The decoder runs each segment's rounds first to last and reads its
//! stream from the end back, as version 1, checking that the words run out exactly at the last
//! symbol and that every state ends at `2^16`.
//!
//! **Bounds.** Every read of the decoder is inside `coded` (slices); table entries, segment
//! lengths (at most one word per symbol) and their total are checked before any symbol is
//! decoded; an error found by one warp is reported by every thread, the one of the lowest
//! segment when several warps find one.

use super::{ExpAns, PROB_BITS, STATE_LOW, WORD_BITS};
use crate::bits::lanes_below;
use crate::block::{block_exclusive_scan, block_max, block_sum, shared_u8, Region, Scratch, REDUCE_WORDS};
use crate::codec::block_frame::{BlockCoder, MAX_FRAME_WORDS};
use crate::codec::{CodecId, Coded, LaneOut, OutOfSpace};
use crate::divisor::{quotient, reciprocal};
use crate::frame::FrameError;
use zipcoll_targets::{AtomicOrder, Scope, Warp};

/// Symbols of a segment: 256 rounds of 32 (128 bytes of states per 8192 symbols).
pub const SEGMENT_WORDS: usize = 8192;
/// Streams (states) per segment.
const STREAMS: usize = 32;
/// Histogram copies in the encoder's shared memory.
const HIST_COPIES: usize = 4;
/// Symbols a table can hold.
const SYMBOLS: usize = 256;
/// 16-bit words of a warp's staging buffer.
const STAGE_WORDS: usize = SEGMENT_WORDS / 2;
/// Symbols the decoder stages per warp before the frame layer joins them (64 rounds).
const RUN_WORDS: usize = 2048;
/// Rounds whose symbols the encoder loads at once (8 symbols per lane).
const BATCH_ROUNDS: usize = 8;
/// u32 words of a warp's flip buffer: a batch's symbols, one byte each.
const FLIP_WORDS: usize = BATCH_ROUNDS * STREAMS / 4;
/// Segments in a frame at most.
const MAX_SEGMENTS: usize = MAX_FRAME_WORDS / SEGMENT_WORDS;

/// A [`FrameError::Corrupt`] of this codec.
fn corrupt(offset: usize, reason: &'static str) -> FrameError {
    CodecId::ExpAns.corrupt(offset, reason)
}

/// Warps a block of `block_dim` threads can have at most (as 32-lane warps): what the shared
/// regions per warp are sized for.
fn warps_of(block_dim: u32) -> usize {
    (block_dim as usize).div_ceil(32).min(REDUCE_WORDS)
}

/// The encoder's shared memory.
#[derive(Clone, Copy, Debug)]
pub struct Encoder {
    /// `HIST_COPIES x SYMBOLS` counts; after the table is built copy 0 holds the totals.
    hist: Region<u32>,
    /// Per symbol: `[reciprocal, freq | cum << 12 | l << 24]` (zero for unused symbols).
    table: Region<[u32; 2]>,
    /// The reductions' words.
    tmp: Region<u32>,
    /// Per warp: `STAGE_WORDS` words of staging.
    staging: Region<u16>,
    /// Per warp: the stream length of its segment in the current batch, and a flag word
    /// (nonzero: some stream overflowed its staging or met an unseen symbol).
    lens: Region<u32>,
    /// Per warp: `FLIP_WORDS` words, the symbols of a batch of rounds (see [`code_segment`]).
    flip: Region<u32>,
}

/// Bytes of a table of `k` used symbols, and the offset of the segment directory after it.
const fn table_bytes(k: usize) -> (usize, usize) {
    let t = 3 * k + 3;
    (t, t.div_ceil(4) * 4)
}

/// Shared atomic add of 1 (block scope).
#[inline(always)]
fn bump<W: Warp>(w: W, p: *mut u32) {
    // SAFETY: `p` is a count in the encoder's shared histogram, only accessed atomically
    // between `begin`'s barrier and `encode`'s.
    unsafe { w.atomic_add(p, 1, AtomicOrder::Relaxed, Scope::Block) };
}

impl BlockCoder for ExpAns {
    const ID: CodecId = CodecId::ExpAns;
    type Encoder = Encoder;

    fn encode_scratch_bytes(block_dim: u32) -> usize {
        let warps = warps_of(block_dim);
        4 * HIST_COPIES * SYMBOLS
            + 8 * SYMBOLS
            + 4 * REDUCE_WORDS
            + 2 * STAGE_WORDS * warps
            + 4 * (REDUCE_WORDS + 1)
            + 4 * FLIP_WORDS * warps
            + 32
    }

    fn decode_scratch_bytes(block_dim: u32) -> usize {
        let warps = warps_of(block_dim);
        4 * (1 << PROB_BITS)
            + 4 * (MAX_SEGMENTS + 1)
            + 4 * REDUCE_WORDS
            + error_slot_bytes() * warps
            + RUN_WORDS * warps
            + 32
    }

    fn begin<W: Warp>(w: W, scratch: &mut Scratch) -> Result<Encoder, FrameError> {
        let warps = warps_of(w.block_dim());
        let have = scratch.len();
        let mut take = || -> Option<Encoder> {
            Some(Encoder {
                hist: scratch.region::<u32>(HIST_COPIES * SYMBOLS)?,
                table: scratch.region::<[u32; 2]>(SYMBOLS)?,
                tmp: scratch.region::<u32>(REDUCE_WORDS)?,
                staging: scratch.region::<u16>(STAGE_WORDS * warps)?,
                lens: scratch.region::<u32>(REDUCE_WORDS + 1)?,
                flip: scratch.region::<u32>(FLIP_WORDS * warps)?,
            })
        };
        let enc = take().ok_or(FrameError::ScratchTooSmall {
            need: Self::encode_scratch_bytes(w.block_dim()),
            have,
        })?;
        let mut k = w.thread_idx() as usize;
        while k < HIST_COPIES * SYMBOLS {
            // SAFETY: inside the histogram; entry `k` is this thread's until the barrier.
            unsafe { enc.hist.set(k, 0) };
            if k < SYMBOLS {
                // SAFETY: inside the table; as above.
                unsafe { enc.table.set(k, [0, 0]) };
            }
            if k <= REDUCE_WORDS {
                // SAFETY: inside `lens`; as above.
                unsafe { enc.lens.set(k, 0) };
            }
            k += w.block_dim() as usize;
        }
        w.block_sync();
        Ok(enc)
    }

    #[inline(always)]
    fn count<W: Warp>(w: W, enc: Encoder, symbol: u8) {
        let copy = w.warp_idx() as usize % HIST_COPIES;
        // SAFETY: `copy * SYMBOLS + symbol` is inside the histogram.
        bump(w, unsafe { enc.hist.at(copy * SYMBOLS + symbol as usize) });
    }

    fn encode<W: Warp>(
        w: W,
        enc: Encoder,
        words: usize,
        symbol_bits: u32,
        symbols: impl Fn(usize) -> u64,
        out: LaneOut<'_>,
    ) -> Result<Coded, OutOfSpace> {
        if words == 0 {
            return Ok(Coded {
                len: 0,
                params: PROB_BITS as u16,
                params2: 0,
            });
        }
        let k = build_table(w, enc, words, symbol_bits.min(8), out)?;
        let segments = words.div_ceil(SEGMENT_WORDS);
        let (_, dir_at) = table_bytes(k);
        let states_at = dir_at + 4 * segments;
        let streams_at = states_at + 4 * STREAMS * segments;
        if streams_at > out.len() {
            return Err(OutOfSpace { offset: streams_at });
        }
        let warps = (w.warps_per_block() as usize).min(REDUCE_WORDS);
        let warp = w.warp_idx() as usize;
        let lane = w.lane_id() as usize;
        let mut written = 0usize;
        let mut batch = 0;
        while batch < segments {
            let seg = batch + warp;
            if warp < warps && seg < segments {
                code_segment(w, enc, seg, words, &symbols, out, states_at);
            }
            w.block_sync();
            // every thread: the batch's stream lengths are in `lens`, the flag in `lens[32]`
            let mut before = 0usize;
            let mut total = 0usize;
            for k in 0..warps.min(segments - batch) {
                // SAFETY: written before the barrier; read only until the next barrier.
                let len = unsafe { enc.lens.get(k) } as usize;
                if k < warp {
                    before += len;
                }
                total += len;
            }
            // SAFETY: as above.
            let flag = unsafe { enc.lens.get(REDUCE_WORDS) };
            let end = streams_at + 2 * (written + total);
            if flag != 0 || end > out.len() {
                return Err(OutOfSpace { offset: end });
            }
            if warp < warps && seg < segments {
                // SAFETY: as above.
                let len = unsafe { enc.lens.get(warp) } as usize;
                let at = streams_at + 2 * (written + before);
                if lane == 0 {
                    // SAFETY: directory entry `seg` is this warp's.
                    let _ = unsafe { out.put_le(dir_at + 4 * seg, len as u32, 4) };
                }
                let mut j = lane;
                while j < len {
                    // SAFETY: the warp's staging word `j < len <= STAGE_WORDS`.
                    let v = unsafe { enc.staging.get(warp * STAGE_WORDS + j) };
                    // SAFETY: `at + 2 * len <= end <= out.len()`; this warp's stream, word `j`
                    // by lane `j % WIDTH`.
                    let _ = unsafe { out.put_le(at + 2 * j, v as u32, 2) };
                    j += W::WIDTH as usize;
                }
            }
            written += total;
            batch += warps;
            // every thread: the staging buffers are copied out before the next batch codes
            w.block_sync();
        }
        Ok(Coded {
            len: streams_at + 2 * written,
            params: PROB_BITS as u16,
            params2: written as u32,
        })
    }

    fn decode<W: Warp>(
        w: W,
        scratch: Scratch,
        words: usize,
        symbol_bits: u32,
        params: u16,
        params2: u32,
        coded: &[u8],
        join: impl FnMut(usize, usize, *const u8),
    ) -> Result<(), FrameError> {
        let p = params as u32;
        if p != PROB_BITS {
            return Err(corrupt(0, "probability bits (params) are not the encoder's 11"));
        }
        if words == 0 {
            return match (coded.is_empty(), params2) {
                (true, 0) => Ok(()),
                _ => Err(corrupt(0, "an empty frame with coded bytes or words")),
            };
        }
        let warps = warps_of(w.block_dim());
        let mut scratch = scratch;
        let have = scratch.len();
        let mut take = || {
            Some((
                scratch.region::<u32>(1 << PROB_BITS)?,
                scratch.region::<u32>(MAX_SEGMENTS + 1)?,
                scratch.region::<u32>(REDUCE_WORDS)?,
                scratch.region::<Option<(u32, FrameError)>>(warps)?,
                scratch.region::<u32>(warps * RUN_WORDS / 4)?,
            ))
        };
        let (slots, offsets, tmp, errors, staging) = take().ok_or(FrameError::ScratchTooSmall {
            need: Self::decode_scratch_bytes(w.block_dim()),
            have,
        })?;
        let layout = parse_layout(w, tmp.as_ptr(), coded, words, symbol_bits.min(8), p, params2)?;
        // SAFETY: the regions were taken from this block's scratch for this call.
        unsafe { fill_tables(w, tmp.as_ptr(), slots, offsets, coded, &layout, p) }?;
        // every thread: the slot table and the segments' stream offsets (in words) are ready
        if w.warp_idx() < w.warps_per_block().min(REDUCE_WORDS as u32) {
            // this warp's staging: RUN_WORDS symbols
            let staged = staging
                .as_ptr()
                .wrapping_add(w.warp_idx() as usize * RUN_WORDS / 4)
                .cast::<u8>();
            let found = decode_segments(w, slots, offsets, coded, &layout, p, staged, join);
            if w.lane_id() == 0 {
                // SAFETY: slot `warp` is this warp's.
                unsafe { errors.set(w.warp_idx() as usize, found) };
            }
        }
        w.block_sync();
        let mut first: Option<(u32, FrameError)> = None;
        for k in 0..(w.warps_per_block() as usize).min(warps) {
            // SAFETY: written before the barrier.
            if let Some((seg, e)) = unsafe { errors.get(k) } {
                if first.is_none_or(|(s, _)| seg < s) {
                    first = Some((seg, e));
                }
            }
        }
        match first {
            Some((_, e)) => Err(e),
            None => Ok(()),
        }
    }
}

/// Bytes of one warp's error slot.
const fn error_slot_bytes() -> usize {
    core::mem::size_of::<Option<(u32, FrameError)>>()
}

/// Builds the table from the histogram: the shared encoder entries and the table's bytes at
/// the start of `out`. Returns `K`.
fn build_table<W: Warp>(w: W, enc: Encoder, words: usize, bits: u32, out: LaneOut<'_>) -> Result<usize, OutOfSpace> {
    let tid = w.thread_idx() as usize;
    let step = w.block_dim() as usize;
    let symbols = 1usize << bits;
    w.block_sync();
    // every thread: the counts of the pass over the input are complete
    let (mut used, mut top) = (0u32, 0u32);
    let mut t = tid;
    while t < SYMBOLS {
        let mut c = 0u32;
        for copy in 0..HIST_COPIES {
            // SAFETY: inside the histogram; symbol `t`'s counts are read and written by this
            // thread only (the atomics ended at the barrier).
            c += unsafe { enc.hist.get(copy * SYMBOLS + t) };
        }
        // SAFETY: as above.
        unsafe { enc.hist.set(t, c) };
        if c > 0 {
            used += 1;
            top = top.max(c << 8 | (255 - t as u32));
        }
        t += step;
    }
    // SAFETY: `tmp` is the encoder's.
    let (k, top) = unsafe {
        (
            block_sum(w, enc.tmp.as_ptr(), used),
            block_max(w, enc.tmp.as_ptr(), top),
        )
    };
    let top = 255 - (top & 0xFF) as usize;
    let (table_end, dir_at) = table_bytes(k as usize);
    if k as usize > symbols {
        return Err(OutOfSpace { offset: 0 });
    }
    if dir_at > out.len() {
        return Err(OutOfSpace { offset: dir_at });
    }
    let total = 1u32 << PROB_BITS;
    let spare = (total - k) as u64;
    let freq_of = |c: u32| -> u32 {
        match c {
            0 => 0,
            _ => 1 + (c as u64 * spare / words as u64) as u32,
        }
    };
    let mut sum = 0u32;
    let mut t = tid;
    while t < SYMBOLS {
        // SAFETY: symbol `t`'s total, written by this thread.
        sum += freq_of(unsafe { enc.hist.get(t) });
        t += step;
    }
    // SAFETY: as above.
    let deficit = total - unsafe { block_sum(w, enc.tmp.as_ptr(), sum) };
    let mut carry = 0u32;
    let mut round = 0;
    while round < SYMBOLS {
        let t = round + tid;
        // SAFETY: symbol `t`'s total, written by this thread (the same `t` as above).
        let c = if t < SYMBOLS { unsafe { enc.hist.get(t) } } else { 0 };
        let freq = freq_of(c) + if t == top { deficit } else { 0 };
        let packed = freq | ((c > 0) as u32) << 16;
        // SAFETY: as above.
        let (before, all) = unsafe { block_exclusive_scan(w, enc.tmp.as_ptr(), packed) };
        let at = carry.wrapping_add(before);
        let (cum, rank) = (at & 0xFFFF, (at >> 16) as usize);
        if c > 0 {
            let (m, l) = reciprocal(freq);
            // SAFETY: symbol `t`'s entry, written by this thread only.
            unsafe { enc.table.set(t, [m, freq | cum << 12 | l << 24]) };
            // SAFETY: byte `1 + rank` and u16 `cum[rank]` belong to the symbol of that rank.
            unsafe {
                let _ = out.put_u8(1 + rank, t as u8);
                let _ = out.put_le(1 + k as usize + 2 * rank, cum, 2);
            }
        }
        carry = carry.wrapping_add(all);
        round += step;
    }
    if tid == 0 {
        // SAFETY: the first byte, `cum[K]` and the padding belong to thread 0.
        unsafe {
            let _ = out.put_u8(0, (k - 1) as u8);
            let _ = out.put_le(1 + 3 * k as usize, total, 2);
            for b in table_end..dir_at {
                let _ = out.put_u8(b, 0);
            }
        }
    }
    // every thread: the table is in shared memory (published by the next barrier)
    w.block_sync();
    Ok(k as usize)
}

/// Codes segment `seg` with this warp into its staging buffer; writes its final states to
/// `out` and its length to `lens[warp]`, and raises the flag on overflow or an unseen symbol.
///
/// The rounds run in batches of [`BATCH_ROUNDS`], last to first. A batch's 256 symbols reach
/// the lanes through the warp's `flip` buffer: lane `l` gets symbols `8l .. 8l + 8` of the batch
/// from `symbols` (contiguous input, 16-byte loads) and writes them there; in round `k` of the
/// batch it reads byte `32k + l`, the symbol of its stream. The next batch's loads are issued
/// before this batch's rounds run, so they are in flight while it codes.
fn code_segment<W: Warp>(
    w: W,
    enc: Encoder,
    seg: usize,
    words: usize,
    symbols: &impl Fn(usize) -> u64,
    out: LaneOut<'_>,
    states_at: usize,
) {
    let warp = w.warp_idx() as usize;
    let lane = w.lane_id() as usize;
    let coder = lane < STREAMS;
    let start = seg * SEGMENT_WORDS;
    let end = (start + SEGMENT_WORDS).min(words);
    let staging = warp * STAGE_WORDS;
    let flip = warp * FLIP_WORDS;
    let batch_words = BATCH_ROUNDS * STREAMS;
    let load = |b: usize| {
        if coder {
            symbols(start + b * batch_words + 8 * lane)
        } else {
            0
        }
    };
    let mut x = STATE_LOW;
    let mut cursor = 0u32;
    let mut bad = false;
    let rounds = (end - start).div_ceil(STREAMS);
    let batches = rounds.div_ceil(BATCH_ROUNDS);
    // (u32: segment-relative values, below SEGMENT_WORDS)
    let (len, below) = ((end - start) as u32, lanes_below(w));
    // SAFETY: byte `lane % 32` of this warp's flip buffer; `32k` further is inside it (k < 8).
    let mine = unsafe { enc.flip.at(flip).cast::<u8>().add(lane % STREAMS) };
    let mut next = load(batches - 1);
    for b in (0..batches).rev() {
        // every lane: the last batch's reads of `flip` are done
        w.sync(W::FULL);
        if coder {
            // SAFETY: words `2 lane`, `2 lane + 1` of this warp's flip buffer are this lane's
            // until the warp barrier below.
            unsafe {
                enc.flip.set(flip + 2 * lane, next as u32);
                enc.flip.set(flip + 2 * lane + 1, (next >> 32) as u32);
            }
        }
        // every lane: byte `32k + l` of the warp's flip buffer is stream l's symbol of round
        // `b * BATCH_ROUNDS + k`
        w.sync(W::FULL);
        if b > 0 {
            next = load(b - 1);
        }
        for k in (0..BATCH_ROUNDS).rev() {
            let round = b * BATCH_ROUNDS + k;
            if round >= rounds {
                continue;
            }
            // Every lane runs the same instructions up to the ballot (a symbol past the end
            // reads as 0, every symbol has a table entry), so no lane gets its own copy of the
            // ballot.
            let active = coder & (((round * STREAMS + lane) as u32) < len);
            // SAFETY: byte `32k + lane % 32` of this warp's flip buffer, written before the
            // barrier above (lanes past 32 read a coder lane's byte and ignore it).
            let s = unsafe { shared_u8(mine.add(STREAMS * k)) };
            // SAFETY: a symbol's entry (symbols are bytes; the table has 256).
            let [m, e] = unsafe { enc.table.get(s as usize) };
            let (freq, cum, l) = (e & 0xFFF, (e >> 12) & 0xFFF, e >> 24);
            bad |= active & (freq == 0);
            let freq = freq.max(1);
            let emit = active & (x as u64 >= (freq as u64) << (32 - PROB_BITS));
            let mask = w.ballot(W::FULL, emit);
            if emit {
                let at = cursor + (mask & below).count_ones();
                if (at as usize) < STAGE_WORDS {
                    // SAFETY: inside this warp's staging; slot `at` is this lane's.
                    unsafe { enc.staging.set(staging + at as usize, x as u16) };
                }
                x >>= WORD_BITS;
            }
            cursor += mask.count_ones();
            let q = quotient(x, w.mul_hi(m, x), l);
            let coded = (q << PROB_BITS).wrapping_add(x - q * freq).wrapping_add(cum);
            x = if active { coded } else { x };
            // lane l < 32: the state of stream l with the symbols of rounds `round..` coded
        }
    }
    if coder {
        // SAFETY: the states of segment `seg` are this warp's, word `lane` this lane's.
        let _ = unsafe { out.put_le(states_at + 4 * (STREAMS * seg + lane), x, 4) };
    }
    let overflow = cursor as usize > STAGE_WORDS;
    if w.any(W::FULL, bad || overflow) && lane == 0 {
        // SAFETY: the flag word; every writer writes 1.
        unsafe { w.store_relaxed(enc.lens.at(REDUCE_WORDS), 1, Scope::Block) };
    }
    if lane == 0 {
        // SAFETY: `lens[warp]` is this warp's.
        unsafe { enc.lens.set(warp, cursor.min(STAGE_WORDS as u32)) };
    }
}

/// Where the parts of a validated coded section are.
struct Layout {
    /// `K`.
    k: usize,
    /// `words`.
    words: usize,
    /// Segments.
    segments: usize,
    /// Offset of the segment directory.
    dir_at: usize,
    /// Offset of the states.
    states_at: usize,
    /// Offset of the streams.
    streams_at: usize,
}

/// The little-endian u16 at `at` of `buf`, or 0 past its end.
#[inline(always)]
fn u16_at(buf: &[u8], at: usize) -> u32 {
    match at.checked_add(2).and_then(|end| buf.get(at..end)) {
        Some(&[lo, hi]) => u16::from_le_bytes([lo, hi]) as u32,
        _ => 0,
    }
}

/// The little-endian u32 at `at` of `buf`, or 0 past its end.
#[inline(always)]
fn u32_at(buf: &[u8], at: usize) -> u32 {
    crate::codec::get_u32(buf, at).unwrap_or(0)
}

/// Checks the section's size and the table; every thread gets the same result.
fn parse_layout<W: Warp>(
    w: W,
    tmp: *mut u32,
    coded: &[u8],
    words: usize,
    bits: u32,
    p: u32,
    total_words: u32,
) -> Result<Layout, FrameError> {
    let k = match coded.first() {
        Some(&b) => b as usize + 1,
        None => return Err(corrupt(0, "section shorter than its table")),
    };
    if k > words.min(1 << bits) {
        return Err(corrupt(0, "more used symbols than symbols or possible values"));
    }
    let (table_end, dir_at) = table_bytes(k);
    let segments = words.div_ceil(SEGMENT_WORDS);
    let states_at = dir_at + 4 * segments;
    let streams_at = states_at + 4 * STREAMS * segments;
    let expected = streams_at + 2 * total_words as usize;
    if coded.len() != expected {
        return Err(corrupt(
            coded.len().min(expected),
            "section length is not table + segments + words",
        ));
    }
    let cum_at = 1 + k;
    // thread t checks entries t, t + B, .. ; the lowest bad offset wins (largest key)
    let mut key = 0u32;
    let mut note = |offset: usize, reason: u32| key = key.max(((0x3F_FFFF - offset as u32) << 8) | reason);
    let mut j = w.thread_idx() as usize;
    while j <= k {
        if j < k {
            let s = coded[1 + j] as u32;
            if s >= 1 << bits {
                note(1 + j, 1);
            }
            if j + 1 < k && coded[2 + j] as u32 <= s {
                note(2 + j, 2);
            }
            if u16_at(coded, cum_at + 2 * j) >= u16_at(coded, cum_at + 2 * j + 2) {
                note(cum_at + 2 * j + 2, 3);
            }
        }
        if j == 0 && u16_at(coded, cum_at) != 0 {
            note(cum_at, 4);
        }
        if j == k && u16_at(coded, cum_at + 2 * k) != 1 << p {
            note(cum_at + 2 * k, 5);
        }
        if j == 0 && coded[table_end..dir_at].iter().any(|&b| b != 0) {
            note(table_end, 6);
        }
        j += w.block_dim() as usize;
    }
    let mut s = w.thread_idx() as usize;
    while s < segments {
        if u32_at(coded, dir_at + 4 * s) as usize > SEGMENT_WORDS {
            note(dir_at + 4 * s, 7);
        }
        s += w.block_dim() as usize;
    }
    // SAFETY: `tmp` is this call's reduction scratch.
    let key = unsafe { block_max(w, tmp, key) };
    if key != 0 {
        let offset = 0x3F_FFFF - (key >> 8) as usize;
        let reason = match key & 0xFF {
            1 => "a table symbol has more bits than the dtype's symbols",
            2 => "table symbols not strictly ascending",
            3 => "cumulative frequencies not strictly ascending",
            4 => "cumulative frequencies do not start at 0",
            5 => "cumulative frequencies do not end at 2^params",
            6 => "padding after the table is not zero",
            _ => "a segment has more words than symbols",
        };
        return Err(corrupt(offset, reason));
    }
    Ok(Layout {
        k,
        words,
        segments,
        dir_at,
        states_at,
        streams_at,
    })
}

/// Fills the slot table and the segments' stream offsets (in words, with the total last) in
/// shared memory; checks the total against the header.
///
/// # Safety
/// `slots`, `offsets` and `tmp` are this call's shared regions (`2^11`, `MAX_SEGMENTS + 1`
/// and `REDUCE_WORDS` u32).
unsafe fn fill_tables<W: Warp>(
    w: W,
    tmp: *mut u32,
    slots: Region<u32>,
    offsets: Region<u32>,
    coded: &[u8],
    layout: &Layout,
    p: u32,
) -> Result<(), FrameError> {
    let tid = w.thread_idx() as usize;
    let step = w.block_dim() as usize;
    let cum_at = 1 + layout.k;
    let mut slot = tid;
    while slot < 1 << p {
        // the used symbol whose range holds `slot`: cum[lo] <= slot < cum[lo + 1]
        let (mut lo, mut hi) = (0usize, layout.k);
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            if u16_at(coded, cum_at + 2 * mid) as usize <= slot {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let cum = u16_at(coded, cum_at + 2 * lo);
        let freq = u16_at(coded, cum_at + 2 * lo + 2) - cum;
        let symbol = coded[1 + lo] as u32;
        // SAFETY: `slot < 2^p <= 2^11` (the caller's region); one writer per slot.
        unsafe { slots.set(slot, symbol | freq << 8 | cum << 20) };
        slot += step;
    }
    let mut carry = 0u32;
    let mut base = 0;
    while base < layout.segments {
        let s = base + tid;
        let len = if s < layout.segments {
            u32_at(coded, layout.dir_at + 4 * s)
        } else {
            0
        };
        // SAFETY: the caller's region.
        let (before, total) = unsafe { block_exclusive_scan(w, tmp, len) };
        if s < layout.segments {
            // SAFETY: `s < segments <= MAX_SEGMENTS`; one writer per entry.
            unsafe { offsets.set(s, carry + before) };
        }
        carry += total;
        base += step;
    }
    w.block_sync();
    // every thread: the slot table and the offsets are published
    if carry as usize != (coded.len() - layout.streams_at) / 2 {
        return Err(corrupt(
            layout.dir_at,
            "segment lengths do not add up to the header's words",
        ));
    }
    Ok(())
}

/// Decodes this warp's segments (`warp, warp + warps, ..`) into `staged` ([`RUN_WORDS`]
/// symbols of shared memory, this warp's), handing each run of `RUN_WORDS` (the segment's last:
/// what is left) to `join`; the first error with its segment.
#[allow(clippy::too_many_arguments)]
fn decode_segments<W: Warp>(
    w: W,
    slots: Region<u32>,
    offsets: Region<u32>,
    coded: &[u8],
    layout: &Layout,
    p: u32,
    staged: *mut u8,
    mut join: impl FnMut(usize, usize, *const u8),
) -> Option<(u32, FrameError)> {
    let lane = w.lane_id() as usize;
    let coder = lane < STREAMS;
    let slot_mask = (1u32 << p) - 1;
    let mut seg = w.warp_idx() as usize;
    while seg < layout.segments {
        let start = seg * SEGMENT_WORDS;
        let end = (start + SEGMENT_WORDS).min(layout.words);
        let states = layout.states_at + 4 * STREAMS * seg;
        let mut x = if coder {
            u32_at(coded, states + 4 * lane)
        } else {
            STATE_LOW
        };
        let low = w.ballot(W::FULL, x < STATE_LOW);
        if low != 0 {
            let at = states + 4 * low.trailing_zeros() as usize;
            return Some((seg as u32, corrupt(at, "stored rANS state below 2^16")));
        }
        // SAFETY: `seg < segments`: written by `fill_tables`.
        let stream_at = layout.streams_at + 2 * unsafe { offsets.get(seg) } as usize;
        // (u32: segment-relative values, below SEGMENT_WORDS; `left` is checked below it)
        let mut left = u32_at(coded, layout.dir_at + 4 * seg);
        let (len, below) = ((end - start) as u32, lanes_below(w));
        for round in 0..(end - start).div_ceil(STREAMS) {
            // Every lane runs the same instructions up to the ballot (selects, no branches on its
            // own state), so the compiler cannot give the lanes different copies of the ballot.
            let active = coder & (((round * STREAMS + lane) as u32) < len);
            let slot = x & slot_mask;
            // SAFETY: `slot < 2^p`: inside the table `fill_tables` wrote.
            let e = unsafe { slots.get(slot as usize) };
            let (symbol, freq, cum) = (e as u8, (e >> 8) & 0xFFF, e >> 20);
            let stepped = freq.wrapping_mul(x >> p).wrapping_add(slot.wrapping_sub(cum));
            x = if active { stepped } else { x };
            // lane l < 32: the state after symbol i; below 2^16 if it needs a word
            let need = active & (x < STATE_LOW);
            let needy = w.ballot(W::FULL, need);
            let count = needy.count_ones();
            if count > left {
                return Some((
                    seg as u32,
                    corrupt(stream_at, "word stream ends before the last symbol"),
                ));
            }
            left -= count;
            let at = stream_at + 2 * (left + (needy & below).count_ones()) as usize;
            let word = u16_at(coded, at);
            x = if need { (x << WORD_BITS) | word } else { x };
            // lane l < 32: the state of stream l before its next symbol
            let base = round * STREAMS;
            if active {
                // SAFETY: `base % RUN_WORDS + lane < RUN_WORDS` (RUN_WORDS is a multiple of
                // 32): inside this warp's staging; one lane per byte.
                unsafe { staged.add(base % RUN_WORDS + lane).write(symbol) };
            }
            // (uniform) a run is staged: the warp joins it, every lane, after a warp barrier;
            // the staging is free again after a second one
            let next = base + STREAMS;
            if next.is_multiple_of(RUN_WORDS) || start + next >= end {
                w.sync(W::FULL);
                join(start + base / RUN_WORDS * RUN_WORDS, (start + next).min(end), staged);
                w.sync(W::FULL);
            }
        }
        if left != 0 {
            return Some((seg as u32, corrupt(stream_at, "words left over after the last symbol")));
        }
        let off = w.ballot(W::FULL, coder && x != STATE_LOW);
        if off != 0 {
            let at = states + 4 * off.trailing_zeros() as usize;
            return Some((seg as u32, corrupt(at, "final rANS state is not the initial state")));
        }
        seg += w.warps_per_block() as usize;
    }
    None
}
