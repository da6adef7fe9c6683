//! [`Huffman`]: exponent symbols coded with a canonical Huffman code of at most 16 bits per
//! symbol, optimal for the frame's histogram (package-merge), in 32 interleaved substreams
//! decoded in parallel by table lookup.
//!
//! Coded section layout (`n` symbols, `N = 2^symbol_bits` (at most 256), `m` used symbols;
//! `params = m`):
//!
//! | `m`   | `params2` | coded section                                                          |
//! |-------|-----------|------------------------------------------------------------------------|
//! | 0     | 0         | empty (`n = 0`)                                                        |
//! | 1     | the symbol| empty: every symbol is `params2` (a zero-entropy block costs nothing)  |
//! | `>= 2`| 0         | the code-length table, then the substream words, as below              |
//!
//! | u32 word          | words            | content                                                          |
//! |-------------------|------------------|------------------------------------------------------------------|
//! | `0`               | `T = ceil(N/32) + ceil(m/8)` | used-symbol bitmap + 4-bit code lengths (`table.rs`) |
//! | `T + p`           | one per load     | the `p`-th word loaded by the decoder, in load order (below)     |
//!
//! The section ends exactly after the last loaded word: at most `T + sum_s ceil(n_s / 2)` words
//! for `n_s` symbols in substream `s` ([`SymbolCoder::max_coded_len`]).
//!
//! **Substreams.** Symbol `i` belongs to substream `s = i % 32` (a fixed [`Huffman::SUBSTREAMS`],
//! so the bytes do not depend on the warp width); lane `s` codes and decodes substream `s`; on
//! a 64-lane warp lanes 32..63 only take part in the ballots. Step `t` handles symbols
//! `32t .. 32t + 32`, one per substream. A substream is a sequence of 32-bit words holding its
//! code words back to back, most significant bit first; its last word is padded with zeros.
//!
//! **Load order (the invariant).** The decoder of substream `s` keeps `have` loaded bits it has
//! not consumed (`0 <= have < 48`). At step `t` it needs a new word exactly when the code word
//! of its symbol is longer than `have`; it decodes the 16-bit window (valid bits, zeros past
//! them) first: a decoded length `<= have` is the true one (a prefix code: the valid bits
//! already hold a whole code word), and a longer one means the true length is longer than
//! `have` too. At each step the substreams that need a word take the next words of the section
//! in substream order: one ballot, and lane `s` takes word `T + base + popcount(needing lanes
//! below s)`. The decision depends only on the substream's own code lengths, so the encoder
//! makes the same decisions from the lengths it writes: at step `t` it reserves a position for
//! each substream whose code word does not fit in the free bits of its current word, fills the
//! current word with the code word's leading bits, writes it at its reserved position, and
//! starts the new one with the rest (one pending word per lane; a word that fills up exactly is
//! written at once). One ballot per step on either side, words written once, no atomics, and
//! no per-substream length table: the only overhead is the zero padding of each substream's
//! last word (16 bits per substream on average).
//!
//! Decoding rejects, as [`FrameError::Corrupt`] with the byte offset in the coded section: a
//! table that is not a complete prefix code or disagrees with `params` (`table.rs`), a
//! substream that needs a word past the section's end, words left over after the last step,
//! nonzero padding bits, and `params`/`params2` that do not fit the layout. Every error is
//! decided the same on all lanes (uniform values or a ballot), so lanes never diverge.
//! Decoding is canonical: the lanes count the symbols they decode, and a table that is not
//! the one the encoder builds from those counts (lengths of [`Huffman::code_lengths`], so no
//! unused symbol and no other complete code) is rejected too; with the encoder's code, the
//! load order and zero padding fix every word, so a section that decodes is the encoder's.
//!
//! **Table.** The histogram is exact (every symbol counted, no sampling, no escapes): lane `l`
//! counts symbols `l, l + W, ..`; one shuffle per bin and lane sums each bin on its owner lane
//! (a rotation: lane `l` owns bins `l, l + W, ..`), one more per bin broadcasts the totals
//! (blocks of at most `2N` symbols: every lane counts them all instead). Every lane then builds
//! the same code from the same counts (`lengths.rs`: package-merge, deterministic), so the
//! table is the same on every backend and warp width. Per-lane local memory (no shared memory,
//! which AMD lacks): about 4.7 KiB while encoding (counts, then codes, 1 KiB; package-merge
//! lists 3 KiB), 0.5 KiB while decoding (the sorted symbols and 16 limits).
//!
//! On N(0,1) bf16 exponents (14 used symbols of 256, entropy 2.54 bits) 16384 symbols take
//! 2.63 bits each, table and padding included.

mod lengths;
mod table;

use self::lengths::{canonical_codes, code_lengths, ALPHABET, MAX_LEN};
use self::table::{check_table, corrupt, table_word, table_words, DecodeTable};
use super::{get_u32, CodecId, Coded, LaneOut, OutOfSpace, SymbolCoder};
use crate::bits::lanes_below;
use crate::frame::FrameError;
use zipcoll_targets::Warp;

/// Substreams (and symbols per step).
const S: usize = 32;

/// The Huffman coder (see the module docs for the layout).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Huffman;

impl Huffman {
    /// Interleaved substreams: symbol `i` is in substream `i % SUBSTREAMS`.
    pub const SUBSTREAMS: usize = S;
    /// The longest code word, in bits.
    pub const MAX_CODE_LEN: u32 = MAX_LEN;

    /// The code lengths this codec uses for a histogram (`counts[s]` = occurrences of symbol
    /// `s`): an optimal prefix code with lengths `1..=16` for the symbols that occur, 0 for the
    /// others; all 0 when fewer than two symbols occur. Counts summing to 2^26 or more are
    /// first divided by a power of two (rounded up).
    pub fn code_lengths(counts: &[u32; 256]) -> [u8; 256] {
        code_lengths(counts)
    }
}

/// Symbols of the alphabet of `symbol_bits`-bit symbols (at most 8 bits).
#[inline(always)]
fn alphabet(symbol_bits: u32) -> usize {
    1 << symbol_bits.min(8)
}

/// Every lane: the count of each symbol among `sym(0..n)` (`sym` below `nsym`, `n < 2^32`).
/// Up to `2 * nsym` symbols every lane counts them all (no warp operation: fewer loads than the
/// shuffles below); the counts are the same either way.
fn histogram<W: Warp>(w: W, n: usize, nsym: usize, sym: &impl Fn(usize) -> u8) -> [u32; ALPHABET] {
    let width = W::WIDTH as usize;
    let lane = w.lane_id() as usize;
    let mut mine = [0u32; ALPHABET];
    if n <= 2 * nsym {
        for i in 0..n {
            mine[sym(i) as usize] += 1;
        }
        return mine;
    }
    for i in (lane..n).step_by(width) {
        mine[sym(i) as usize] += 1;
    }
    // lane l: counts of its symbols l, l + W, ..
    warp_totals(w, mine, nsym)
}

/// Every lane: the warp's total of each lane's `mine` (counts of symbols below `nsym`).
fn warp_totals<W: Warp>(w: W, mut mine: [u32; ALPHABET], nsym: usize) -> [u32; ALPHABET] {
    let width = W::WIDTH as usize;
    let lane = w.lane_id() as usize;
    let mut own = [0u32; ALPHABET / 32];
    for (k, total) in own.iter_mut().enumerate().take(nsym.div_ceil(width)) {
        let bin = |lane: usize| mine[(k * width + lane) & (ALPHABET - 1)];
        *total = bin(lane);
        for j in 1..width {
            // every lane sends its count of bin k*W + (lane - j) and receives, from lane
            // lane + j, that lane's count of bin k*W + lane
            let got = w.shfl_idx_u32(W::FULL, bin((lane + width - j) % width), ((lane + j) % width) as u32);
            *total += got;
        }
    }
    // lane l: own[k] = total count of symbol k*W + l; `mine` is no longer needed
    for (b, c) in mine.iter_mut().enumerate().take(nsym) {
        *c = w.shfl_idx_u32(W::FULL, own[(b / width) & (ALPHABET / 32 - 1)], (b % width) as u32);
    }
    mine
}

/// The low `bits` (`0..32`) bits of `v`.
#[inline(always)]
fn low(v: u32, bits: u32) -> u32 {
    v & ((1u32 << bits) - 1)
}

impl SymbolCoder for Huffman {
    const ID: CodecId = CodecId::Huffman;

    fn max_coded_len(n: usize, symbol_bits: u32) -> usize {
        if n == 0 {
            return 0;
        }
        let nsym = alphabet(symbol_bits);
        // substreams: r of q + 1 symbols, the rest of q; at most 16 bits (half a word) each
        let (q, r) = (n / S, n % S);
        let words = r * (q + 1).div_ceil(2) + (S - r) * q.div_ceil(2);
        words.saturating_add(table_words(nsym, nsym)).saturating_mul(4)
    }

    fn encode<W: Warp>(
        w: W,
        n: usize,
        symbol_bits: u32,
        sym: impl Fn(usize) -> u8,
        out: LaneOut<'_>,
    ) -> Result<Coded, OutOfSpace> {
        let nsym = alphabet(symbol_bits);
        let sym = |i: usize| sym(i) & (nsym - 1) as u8;
        if n == 0 {
            return Ok(Coded::default());
        }
        if n > u32::MAX as usize {
            // counts would not fit; no frame holds that many symbols
            return Err(OutOfSpace { offset: 0 });
        }
        let mut counts = histogram(w, n, nsym, &sym);
        // every lane: the whole histogram
        let m = counts.iter().filter(|&&c| c > 0).count();
        if let (1, Some(s)) = (m, counts.iter().position(|&c| c > 0)) {
            return Ok(Coded {
                len: 0,
                params: 1,
                params2: s as u32,
            });
        }
        let lens = code_lengths(&counts);
        let table = table_words(nsym, m);
        let bits: u64 = counts.iter().zip(&lens).map(|(&c, &l)| c as u64 * l as u64).sum();
        // the counts are no longer needed: their memory takes the codes
        let codes = &mut counts;
        canonical_codes(&lens, codes);
        // every lane: the same code, codes[s] = code << 16 | length
        if 4 * (table as u64 + bits.div_ceil(32)) > out.len() as u64 {
            // not even the code words without padding fit
            return Err(OutOfSpace { offset: 4 * table });
        }
        let width = W::WIDTH as usize;
        let lane = w.lane_id() as usize;
        for j in (lane..table).step_by(width) {
            // SAFETY: lane `lane` writes table words `lane, lane + WIDTH, ..` only; the coder runs on every lane, converged, with the same arguments (`LaneOut::from_raw`'s contract for `out`).
            unsafe { out.put_u32(4 * j, table_word(&lens, nsym, j)) }?;
        }
        // the substreams, lane s < 32 coding substream s (see the module docs)
        let below = lanes_below(w);
        let mut base = table; // word index of the next unreserved word (uniform)
        let mut cur = 0u32; // the current word's bits so far, right-aligned
        let mut free = 0u32; // free bits in the current word; 0: no word pending
        let mut at = 0usize; // the current word's reserved word index
        for t in 0..n.div_ceil(S) {
            let i = t * S + lane;
            let active = lane < S && i < n;
            let c = if active { codes[sym(i) as usize] } else { 0 };
            let (code, len) = (c >> 16, c & 0xFFFF);
            let need = active && len > free;
            let loads = w.ballot(W::FULL, need);
            // every lane: the substreams that start a word at this step
            let step_start = base;
            base += loads.count_ones() as usize;
            if 4 * base > out.len() {
                return Err(OutOfSpace { offset: 4 * step_start });
            }
            if need {
                let rest = len - free;
                if free > 0 {
                    // SAFETY: word `at` was reserved for this lane's substream alone (the ballot
                    // ranks above); the coder runs on every lane, converged, with the same arguments (`LaneOut::from_raw`'s contract for `out`).
                    unsafe { out.put_u32(4 * at, cur << free | code >> rest) }?;
                }
                at = step_start + (loads & below).count_ones() as usize;
                cur = low(code, rest);
                free = 32 - rest;
            } else if active {
                cur = cur << len | code;
                free -= len;
                if free == 0 {
                    // SAFETY: as above, word `at` is this lane's.
                    unsafe { out.put_u32(4 * at, cur) }?;
                }
            }
            // lane s < 32: every earlier word of its substream written; the current one
            // (reserved at word `at`) holds `32 - free` bits, in `cur`
        }
        if free > 0 {
            // SAFETY: as above, word `at` is this lane's.
            unsafe { out.put_u32(4 * at, cur << free) }?;
        }
        Ok(Coded {
            len: 4 * base,
            params: m as u16,
            params2: 0,
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
        let nsym = alphabet(symbol_bits);
        let m = params as usize;
        let width = W::WIDTH as usize;
        let lane = w.lane_id() as usize;
        if m > nsym || m > n || (n > 0 && m == 0) {
            return Err(corrupt(0, "used-symbol count does not fit the alphabet and length"));
        }
        if m < 2 {
            if !coded.is_empty() {
                return Err(corrupt(0, "coded bytes after a block of one symbol"));
            }
            if params2 as usize >= if m == 1 { nsym } else { 1 } {
                return Err(corrupt(0, "single symbol outside the alphabet"));
            }
            for i in (lane..n).step_by(width) {
                put(i, params2 as u8);
            }
            return Ok(());
        }
        if params2 != 0 {
            return Err(corrupt(0, "params2 set with two or more used symbols"));
        }
        let mut table = DecodeTable::new();
        let start = table.read(coded, nsym, m)?;
        // every lane: the same decode table; the substream words start at byte `start`
        let words = coded.len().saturating_sub(start) / 4;
        if start + 4 * words != coded.len() {
            return Err(corrupt(start + 4 * words, "coded section does not end on a word"));
        }
        if n.div_ceil(S) > words {
            return Err(corrupt(coded.len(), "fewer substream bits than symbols"));
        }
        let below = lanes_below(w);
        let mut base = 0usize; // substream words loaded by all lanes so far (uniform)
        let mut buf = 0u64; // loaded bits not consumed, left-aligned; zeros below them
        let mut have = 0u32; // their number, < 48
        let mut at = 0usize; // byte offset of the last word this lane loaded
        let mut mine = [0u32; ALPHABET]; // counts of the symbols this lane decoded
        for t in 0..n.div_ceil(S) {
            let i = t * S + lane;
            let active = lane < S && i < n;
            let (mut len, mut s) = table.decode((buf >> 48) as u32);
            let need = active && len > have;
            let loads = w.ballot(W::FULL, need);
            // every lane: the substreams that load a word at this step
            let step_start = base;
            base += loads.count_ones() as usize;
            if base > words {
                return Err(corrupt(coded.len(), "a substream runs past the coded section"));
            }
            if need {
                at = start + 4 * (step_start + (loads & below).count_ones() as usize);
                // in range: base <= words, checked above for the whole warp
                let word = get_u32(coded, at).unwrap_or(0);
                buf |= (word as u64) << (32 - have);
                have += 32;
                (len, s) = table.decode((buf >> 48) as u32);
            }
            if active {
                buf <<= len;
                have -= len;
                put(i, s);
                mine[s as usize] += 1;
            }
            // lane s < 32: symbols up to i of its substream decoded; `have` bits left in `buf`
        }
        if base != words {
            return Err(corrupt(start + 4 * base, "words after the end of the substreams"));
        }
        let bad = w.ballot(W::FULL, buf != 0);
        // every lane: the lanes whose last word has nonzero padding
        if bad != 0 {
            let offset = w.shfl_idx_u32(W::FULL, at as u32, bad.trailing_zeros());
            return Err(corrupt(
                offset as usize,
                "nonzero padding after a substream's last code word",
            ));
        }
        // every lane: the same counts, so the same verdict
        check_table(coded, &warp_totals(w, mine, nsym), nsym, m)
    }
}
