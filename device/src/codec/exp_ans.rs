//! [`ExpAns`]: the exponent symbols coded with interleaved rANS (range asymmetric numeral
//! systems) under a frequency table built from the frame itself, in the style of DietGPU and
//! UCCL-Zip, by one warp.
//!
//! Coded section (`K` used symbols, `WORDS` renormalization words; little-endian; empty when
//! `n = 0`):
//!
//! | offset        | size  | content                                                              |
//! |---------------|-------|----------------------------------------------------------------------|
//! | 0             | 1     | `K - 1`                                                              |
//! | 1             | `K`   | the used symbols, strictly ascending, each `< 2^symbol_bits`         |
//! | `1 + K`       | `2K + 2` | `cum[0..=K]` as u16: `cum[0] = 0`, strictly ascending, `cum[K] = 2^p`; symbol `k` has frequency `cum[k+1] - cum[k]` |
//! | `T = 3K + 3`  | 128   | the 32 final encoder states (u32), stream 0 first, each in `[2^16, 2^32)` |
//! | `T + 128`     | `2 x WORDS` | the 16-bit renormalization words (u16)                         |
//!
//! Header fields: `params` = `p`, log2 of the frequency total, always [`PROB_BITS`] = 11;
//! `params2` = `WORDS`.
//!
//! **Table.** The "sample" is the whole frame: every symbol is counted, so every symbol that
//! occurs has a frequency and no escape is needed. The histogram is warp-cooperative and kept in
//! registers (`symbol_bits` ballots per `WIDTH` symbols give every lane all the symbols' bits;
//! lane `l` counts symbols `l, l + WIDTH, ..`). Normalization reserves 1 for each of the `K`
//! used symbols and shares the other `2^p - K` in proportion to the counts (rounded down); the
//! rounding deficit (`< K`) goes to the most frequent symbol. `2^p >= 512 > 256 >= K`, so every
//! used symbol gets `>= 1` and the sum is exactly `2^p`. `p = 11` because the quantized table
//! costs about 0.1% over the order-0 entropy on N(0,1) bf16 exponents (about 20 used symbols),
//! against 0.3% at `p = 10` and 0.8% at `p = 9`.
//!
//! **Canonical decoding.** The decoder accepts only the encoder's sections: `p` must be
//! [`PROB_BITS`], and the table must be the normalization above of the decoded symbols'
//! counts (the decoder counts them as it goes, with the encoder's code), so no table symbol is
//! unused and no frequency differs. With the encoder's table, stored states in `[L, 2^32)`,
//! every word consumed and every state ending at `L`, rANS is a bijection: the encoder writes
//! the same states and words for the decoded symbols.
//!
//! **Streams.** There are always [`STREAMS`] = 32 interleaved rANS states, whatever the warp
//! width: symbol `i` belongs to stream `i % 32`, and stream `s` is coded by lane `s`. A 64-lane
//! warp leaves lanes 32..64 idle while coding (they still count the histogram), so the bytes do
//! not depend on the warp width; 64 streams would keep a whole AMD wavefront busy but double the
//! 128 bytes of states per frame (0.2% of a 64 KiB bf16 frame). States are 32-bit in `[L, 2^32)` with `L = 2^16`; a
//! renormalization moves one 16-bit word (at most one per symbol). The encoder starts every
//! state at `L` and runs over rounds of 32 symbols from the last round to the first (rANS is
//! LIFO), appending the words emitted in a round in stream order ([`append_u16`]); the final
//! states are stored after the table. The decoder starts from the stored states, runs forwards,
//! and reads the word stream from its end back: a round's words are the block just below the
//! previous round's, in stream order. It checks that the words run out exactly at the last
//! symbol and that every state ends at `L`, the state the encoder started from.
//!
//! **Decode lookup.** There is no scratch memory for a `2^p`-entry slot-to-symbol table (no
//! shared memory on AMD, and 2^p entries per lane do not fit in registers), so the decoder
//! searches `cum` where it is, in the coded section (a few hundred bytes read by every lane, so
//! it stays in cache). To make the search short, lane `b` holds, for the `b`-th of `WIDTH`
//! equal slot ranges (buckets), the first and last table entries it overlaps; a lane decoding
//! slot `x mod 2^p` fetches its bucket's pair with one shuffle and binary-searches only between
//! them: zero or one probe for the frequent symbols (a bucket is 64 slots for 32 lanes and
//! `p = 11`), `log2 K` at worst. The trade-off: every decoded symbol costs a shuffle, a ballot
//! and three cached loads (`cum[k]`, `cum[k + 1]`, the symbol) plus the probes, where DietGPU
//! does one shared-memory load.
//!
//! **Bounds.** A renormalization moves at most one word per symbol, so the section is at most
//! `3 x min(n, 2^symbol_bits) + 3 + 128 + 2n` bytes ([`ExpAns::max_coded_len`], a true bound:
//! the encoder always succeeds in that many bytes). [`OutOfSpace`] means a smaller `out` was too
//! small (or `sym` gave a symbol of more than `symbol_bits` bits, which no table can hold); the
//! frame codec's budget makes a section that does not pay off a RAW frame.

mod block;
mod table;

use self::table::{DecTable, EncTable};
use super::{CodecId, Coded, LaneOut, OutOfSpace, SymbolCoder};
use crate::bits::{append_u16, lanes_below};
use crate::frame::FrameError;
use zipcoll_targets::Warp;

/// log2 of the frequency total the encoder normalizes the table to (`params`).
pub const PROB_BITS: u32 = 11;
/// Interleaved rANS streams, independent of the warp width.
pub const STREAMS: usize = 32;
/// The lower end `L` of the states' interval `[L, 2^32)`; every state starts and ends here.
pub(super) const STATE_LOW: u32 = 1 << 16;
/// Bits of a renormalization word.
pub(super) const WORD_BITS: u32 = 16;
/// Bytes of the stored states.
const STATES_BYTES: usize = 4 * STREAMS;

/// The exponent-split rANS coder ([`CodecId::ExpAns`]); see the module docs.
#[derive(Clone, Copy, Debug, Default)]
pub struct ExpAns;

/// A [`FrameError::Corrupt`] of this codec.
fn corrupt(offset: usize, reason: &'static str) -> FrameError {
    CodecId::ExpAns.corrupt(offset, reason)
}

/// Byte offset of the state of the lowest lane in `lanes` (a non-empty mask of coder lanes).
fn state_offset(states_at: usize, lanes: u64) -> usize {
    states_at + 4 * lanes.trailing_zeros() as usize
}

impl SymbolCoder for ExpAns {
    const ID: CodecId = CodecId::ExpAns;

    fn max_coded_len(n: usize, symbol_bits: u32) -> usize {
        if n == 0 {
            return 0;
        }
        // at most one word per symbol
        let used = n.min(1 << symbol_bits.min(8));
        table::table_bytes(used) + STATES_BYTES + 2 * n
    }

    fn encode<W: Warp>(
        w: W,
        n: usize,
        symbol_bits: u32,
        sym: impl Fn(usize) -> u8,
        out: LaneOut<'_>,
    ) -> Result<Coded, OutOfSpace> {
        if n == 0 {
            return Ok(Coded {
                len: 0,
                params: PROB_BITS as u16,
                params2: 0,
            });
        }
        let bits = symbol_bits.min(8);
        let table = EncTable::build(w, n, bits, &sym)?;
        // every lane: the same table (K, bitmap); lane l holds the entries of ranks l, l + WIDTH, ..
        let states_at = table.write(w, out)?;
        let words_at = states_at + STATES_BYTES;
        if words_at > out.len() {
            return Err(OutOfSpace { offset: words_at });
        }
        let lane = w.lane_id() as usize;
        let coder = lane < STREAMS;
        let mut x = STATE_LOW;
        let mut cursor = words_at;
        // set if `sym` returned a symbol the histogram did not see (an inconsistent `sym`)
        let mut unseen = false;
        for round in (0..n.div_ceil(STREAMS)).rev() {
            let i = round * STREAMS + lane;
            let active = coder && i < n;
            let s = if active { sym(i) } else { 0 };
            let (start, freq) = table.lookup(w, s);
            // lane l < 32: the table entry of its symbol (meaningless on inactive lanes)
            unseen |= active && freq == 0;
            let freq = freq.max(1);
            let emit = active && x as u64 >= (freq as u64) << (32 - PROB_BITS);
            // SAFETY: the coder runs on every lane, converged, with the same arguments (`LaneOut::from_raw`'s contract for `out`), so `cursor` is uniform; nothing else writes `out`.
            unsafe { append_u16(w, emit, x as u16, out, &mut cursor) }?;
            // every lane: cursor past this round's words, which are in stream order
            if emit {
                x >>= WORD_BITS;
            }
            if active {
                x = ((x / freq) << PROB_BITS) + x % freq + start;
            }
            // lane l < 32: the state of stream l with symbols i..n of the stream coded
        }
        if w.any(W::FULL, unseen) {
            return Err(OutOfSpace { offset: states_at });
        }
        if coder {
            // SAFETY: lane `lane` writes state word `lane` only; the coder runs on every lane, converged, with the same arguments (`LaneOut::from_raw`'s contract for `out`).
            unsafe { out.put_u32(states_at + 4 * lane, x) }?;
        }
        let words = (cursor - words_at) / 2;
        Ok(Coded {
            len: cursor,
            params: PROB_BITS as u16,
            params2: words as u32,
        })
    }

    fn decode<W: Warp>(
        w: W,
        n: usize,
        symbol_bits: u32,
        params: u16,
        params2: u32,
        coded: &[u8],
        mut put: impl FnMut(usize, u8),
    ) -> Result<(), FrameError> {
        let p = params as u32;
        if p != PROB_BITS {
            return Err(corrupt(0, "probability bits (params) are not 11"));
        }
        if n == 0 {
            return match (coded.is_empty(), params2) {
                (true, 0) => Ok(()),
                _ => Err(corrupt(0, "an empty frame with coded bytes or words")),
            };
        }
        let bits = symbol_bits.min(8);
        let table = DecTable::parse(coded, n, bits, p)?;
        // every lane: the same validated table
        let states_at = table.bytes();
        let words_at = states_at + STATES_BYTES;
        let words = params2 as usize;
        let expected = words.saturating_mul(2).saturating_add(words_at);
        if coded.len() != expected {
            return Err(corrupt(
                coded.len().min(expected),
                "section length is not table + states + words",
            ));
        }
        let buckets = table.buckets(w);
        // lane b: the first and last table entries that slot range b overlaps
        let lane = w.lane_id() as usize;
        let coder = lane < STREAMS;
        let mut x = match coder {
            true => get_u32_or_zero(coded, states_at + 4 * lane),
            false => STATE_LOW,
        };
        let low = w.ballot(W::FULL, x < STATE_LOW);
        if low != 0 {
            return Err(corrupt(state_offset(states_at, low), "stored rANS state below 2^16"));
        }
        // lane l < 32: the state of stream l before its first symbol
        let slot_mask = (1u32 << p) - 1;
        let mut left = words;
        // lane l: counts[j] = occurrences of symbol j x WIDTH + l among the decoded symbols
        let mut counts = [0u32; table::REGS];
        for round in 0..n.div_ceil(STREAMS) {
            let i = round * STREAMS + lane;
            let active = coder && i < n;
            let slot = x & slot_mask;
            let range = table.bucket_of(w, buckets, slot);
            let mut sym = 0;
            if active {
                let (s, start, freq) = table.find(slot, range);
                x = freq.wrapping_mul(x >> p).wrapping_add(slot.wrapping_sub(start));
                put(i, s);
                sym = s as u32;
            }
            // the round's symbols are those of lanes 0 .. live (live <= 32)
            let live = (n - round * STREAMS).min(STREAMS);
            table::count_round(w, &mut counts, sym, (1u64 << live) - 1, bits);
            // lane l < 32: the state after decoding symbol i; below L if it needs a word
            let need = active && x < STATE_LOW;
            let needy = w.ballot(W::FULL, need);
            let count = needy.count_ones() as usize;
            if count > left {
                return Err(corrupt(words_at, "word stream ends before the last symbol"));
            }
            left -= count;
            if need {
                let at = words_at + 2 * (left + (needy & lanes_below(w)).count_ones() as usize);
                x = (x << WORD_BITS) | get_u16_or_zero(coded, at);
            }
            // lane l < 32: the state of stream l before its next symbol
        }
        if left != 0 {
            return Err(corrupt(words_at, "words left over after the last symbol"));
        }
        let off = w.ballot(W::FULL, coder && x != STATE_LOW);
        if off != 0 {
            return Err(corrupt(
                state_offset(states_at, off),
                "final rANS state is not the initial state",
            ));
        }
        table.check_counts(w, &counts, n, bits)
    }
}

/// The little-endian u16 at `at` of `buf`, or 0 past its end.
#[inline(always)]
fn get_u16_or_zero(buf: &[u8], at: usize) -> u32 {
    match at.checked_add(2).and_then(|end| buf.get(at..end)) {
        Some(&[lo, hi]) => u16::from_le_bytes([lo, hi]) as u32,
        _ => 0,
    }
}

/// The little-endian u32 at `at` of `buf`, or 0 past its end.
#[inline(always)]
fn get_u32_or_zero(buf: &[u8], at: usize) -> u32 {
    super::get_u32(buf, at).unwrap_or(0)
}
