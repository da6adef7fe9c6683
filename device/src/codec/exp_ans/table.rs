//! The frequency table of [`super::ExpAns`]: built, normalized and written by the encoding warp
//! ([`EncTable`]), read back and validated by the decoder ([`DecTable`]). Layout in the parent's
//! module docs: `K - 1`, the `K` used symbols, then `cum[0..=K]` as u16.
//!
//! Symbols live in two index spaces. In *symbol space* lane `l`'s register `j` is about symbol
//! `j x WIDTH + l`: the histogram, the normalization and the exclusive scan (in lane order over
//! the registers in turn, i.e. in ascending symbol order) that gives `cum`. In *rank space* it
//! is about the used symbol of rank `k = j x WIDTH + l` (the `k`-th in ascending order): the
//! encoder's lookup table, `ceil(K / WIDTH)` registers (one or two for exponents) instead of
//! `2^bits / WIDTH` (eight for bytes on 32 lanes), so a lookup is one or two shuffles. A uniform
//! 256-bit bitmap of the used symbols maps symbols to ranks (a popcount) and ranks to symbols
//! (a select).
//!
//! Register arrays are indexed only inside [`unroll8`], whose indices are constants once it is
//! inlined, so they stay in registers on a GPU instead of going to local memory.

use super::{corrupt, PROB_BITS};
use crate::bits::{warp_exclusive_scan, warp_max_u32, warp_min_u32, warp_sum_u32};
use crate::codec::{LaneOut, OutOfSpace};
use crate::frame::FrameError;
use zipcoll_targets::Warp;

/// Symbols a table can hold (symbols are bytes).
const MAX_SYMBOLS: usize = 256;
/// Registers per lane for `MAX_SYMBOLS` values spread over the narrowest (32-lane) warp; also
/// the u32 words of the used-symbol bitmap.
pub(super) const REGS: usize = MAX_SYMBOLS / 32;

/// Calls `f(0), f(1), .., f(7)` (`REGS` times): a loop over an array's registers, unrolled by
/// hand so every index is a constant.
#[inline(always)]
fn unroll8(mut f: impl FnMut(usize)) {
    f(0);
    f(1);
    f(2);
    f(3);
    f(4);
    f(5);
    f(6);
    f(7);
}

/// Bytes of a table of `k` used symbols.
pub(super) const fn table_bytes(k: usize) -> usize {
    3 * k + 3
}

/// Byte offset of `cum[0]` in a table of `k` used symbols.
const fn cum_at(k: usize) -> usize {
    1 + k
}

/// The rank of symbol `s` (the set bits of `bitmap` below bit `s`), if `s` is set.
#[inline(always)]
fn rank(bitmap: &[u32; REGS], s: u32) -> Option<u32> {
    let (word, bit) = (s as usize / 32, s % 32);
    let mut r = 0;
    let mut hit = false;
    unroll8(|i| {
        if i < word {
            r += bitmap[i].count_ones();
        } else if i == word {
            r += (bitmap[i] & ((1u32 << bit) - 1)).count_ones();
            hit = (bitmap[i] >> bit) & 1 != 0;
        }
    });
    hit.then_some(r)
}

/// The position of the `k`-th set bit of `bitmap` (the symbol of rank `k`); 0 if there is none.
#[inline(always)]
fn select(bitmap: &[u32; REGS], k: u32) -> u32 {
    let mut left = k;
    let mut found = None;
    unroll8(|i| {
        let ones = bitmap[i].count_ones();
        if found.is_none() {
            if left < ones {
                let mut bits = bitmap[i];
                for _ in 0..left {
                    bits &= bits - 1;
                }
                found = Some(32 * i as u32 + bits.trailing_zeros());
            } else {
                left -= ones;
            }
        }
    });
    found.unwrap_or(0)
}

/// Symbol-space registers for symbols of `bits` (`<= 8`) bits: `ceil(2^bits / WIDTH)`.
#[inline(always)]
fn sym_regs<W: Warp>(bits: u32) -> usize {
    (1usize << bits).div_ceil(W::WIDTH as usize)
}

/// Adds one round of symbols to the symbol-space `counts` (register `j`: occurrences of symbol
/// `j x WIDTH + lane`): lane `l`'s symbol `s` (of `bits <= 8` bits) if bit `l` of `valid` is
/// set. All lanes call it together, with the same `valid` and `bits`.
#[inline(always)]
pub(super) fn count_round<W: Warp>(w: W, counts: &mut [u32; REGS], s: u32, valid: u64, bits: u32) {
    let width = W::WIDTH as usize;
    let lane = w.lane_id() as usize;
    let sym_regs = sym_regs::<W>(bits);
    let mut planes = [0u64; REGS];
    unroll8(|q| {
        if (q as u32) < bits {
            planes[q] = w.ballot(W::FULL, (s >> q) & 1 != 0);
        }
    });
    // every lane: planes[q] = bit q of every lane's symbol (a transpose of the round)
    unroll8(|j| {
        let v = j * width + lane;
        let mut same = valid;
        unroll8(|q| {
            if (q as u32) < bits {
                same &= if (v >> q) & 1 != 0 { planes[q] } else { !planes[q] };
            }
        });
        if j < sym_regs && v >> bits == 0 {
            counts[j] += same.count_ones();
        }
    });
}

/// The frequencies (symbol space, as `counts`) of the `used` symbols counted in `counts`, `n`
/// in all, normalized to `2^PROB_BITS`: 1 for each used symbol plus its share of the rest
/// (rounded down), the rounding deficit to the (smallest) most frequent symbol. All lanes call
/// it together.
#[inline(always)]
pub(super) fn normalize<W: Warp>(w: W, counts: &[u32; REGS], n: usize, used: u32) -> [u32; REGS] {
    let width = W::WIDTH as usize;
    let lane = w.lane_id() as usize;
    let total = 1u32 << PROB_BITS;
    let spare = total.saturating_sub(used) as u64;
    let mut freqs = [0u32; REGS];
    let (mut sum, mut most) = (0u32, 0u32);
    unroll8(|j| {
        if counts[j] > 0 {
            freqs[j] = 1 + (counts[j] as u64 * spare / n.max(1) as u64) as u32;
        }
        sum += freqs[j];
        most = most.max(counts[j]);
    });
    let deficit = total.wrapping_sub(warp_sum_u32(w, sum));
    let most = warp_max_u32(w, most);
    let mut first = u32::MAX;
    unroll8(|j| {
        if counts[j] == most {
            first = first.min((j * width + lane) as u32);
        }
    });
    let first = warp_min_u32(w, first);
    // every lane: the rounding deficit and the (smallest) most frequent symbol
    unroll8(|j| {
        if (j * width + lane) as u32 == first {
            freqs[j] = freqs[j].wrapping_add(deficit);
        }
    });
    freqs
}

/// The encoder's table: the used-symbol bitmap (uniform) and the entries `cum << 16 | freq`,
/// per lane in symbol space (to write the table) and in rank space (to look symbols up).
pub(super) struct EncTable {
    /// Bit `s` set if symbol `s` occurs (the same on every lane).
    bitmap: [u32; REGS],
    /// `K`, the number of used symbols.
    used: u32,
    /// Symbol-space registers in use: [`sym_regs`].
    sym_regs: usize,
    /// Register `j`: the entry of symbol `j x WIDTH + lane` (0 if unused).
    by_symbol: [u32; REGS],
    /// Rank-space registers in use: `ceil(K / WIDTH)`.
    regs: usize,
    /// Register `r`: the entry of the used symbol of rank `r x WIDTH + lane` (0 past `K`).
    entries: [u32; REGS],
}

impl EncTable {
    /// Counts the `n >= 1` symbols `sym(0..n)` (all lanes) and normalizes the counts to
    /// `2^PROB_BITS`. `Err` on every lane if a symbol has bits at or above `bits` (`<= 8`): it
    /// could not be decoded.
    #[inline(always)]
    pub(super) fn build<W: Warp>(w: W, n: usize, bits: u32, sym: &impl Fn(usize) -> u8) -> Result<Self, OutOfSpace> {
        let width = W::WIDTH as usize;
        let lane = w.lane_id() as usize;
        let sym_regs = sym_regs::<W>(bits);
        let mut counts = [0u32; REGS];
        let mut too_wide = false;
        let mut base = 0;
        while base < n {
            let valid_lanes = (n - base).min(width);
            let valid = if valid_lanes >= 64 {
                u64::MAX
            } else {
                (1u64 << valid_lanes) - 1
            };
            let s = if lane < valid_lanes { sym(base + lane) as u32 } else { 0 };
            too_wide |= s >> bits != 0;
            count_round(w, &mut counts, s, valid, bits);
            // lane l: counts[j] = occurrences of symbol j x WIDTH + l in symbols 0..base + WIDTH
            base += width;
        }
        if w.any(W::FULL, too_wide) {
            return Err(OutOfSpace { offset: 0 });
        }

        let mut used_lanes = [0u64; REGS];
        unroll8(|j| {
            if j < sym_regs {
                used_lanes[j] = w.ballot(W::FULL, counts[j] > 0);
            }
        });
        let mut bitmap = [0u32; REGS];
        // symbols 32i .. 32i + 32 are lanes 32i % WIDTH .. of register 32i / WIDTH
        unroll8(|i| bitmap[i] = (used_lanes[32 * i / width] >> (32 * i % width)) as u32);
        let used: u32 = bitmap.iter().map(|b| b.count_ones()).sum();
        let regs = (used as usize).div_ceil(width);
        // every lane: the bitmap of used symbols and their number K (>= 1)

        let freqs = normalize(w, &counts, n, used);
        // lane l: freqs[j] = normalized frequency of symbol j x WIDTH + l; they sum to 2^PROB_BITS

        let mut by_symbol = [0u32; REGS];
        let mut below = 0u32;
        unroll8(|j| {
            if j < sym_regs {
                let (pre, all) = warp_exclusive_scan(w, freqs[j]);
                if freqs[j] > 0 {
                    by_symbol[j] = (below + pre) << 16 | freqs[j];
                }
                below += all;
            }
        });
        // lane l: by_symbol[j] = cum << 16 | freq of symbol j x WIDTH + l (0 if unused)

        let mut entries = [0u32; REGS];
        unroll8(|r| {
            if r < regs {
                let v = select(&bitmap, (r * width + lane) as u32);
                let mut e = 0;
                unroll8(|j| {
                    if j < sym_regs {
                        let t = w.shfl_idx_u32(W::FULL, by_symbol[j], v % W::WIDTH);
                        if (v / W::WIDTH) as usize == j {
                            e = t;
                        }
                    }
                });
                entries[r] = e;
            }
        });
        // lane l: entries[r] = by_symbol of the used symbol of rank r x WIDTH + l (0 past K)
        Ok(EncTable {
            bitmap,
            used,
            sym_regs,
            by_symbol,
            regs,
            entries,
        })
    }

    /// Writes the table at the start of `out`; returns its length in bytes. `Err` on every lane
    /// if it does not fit.
    #[inline(always)]
    pub(super) fn write<W: Warp>(&self, w: W, out: LaneOut<'_>) -> Result<usize, OutOfSpace> {
        let k = self.used as usize;
        let bytes = table_bytes(k);
        if bytes > out.len() {
            return Err(OutOfSpace { offset: bytes });
        }
        let lane = w.lane_id() as usize;
        let mut written = Ok(());
        // SAFETY (every write below): the coder runs on every lane, converged, with the same arguments (`LaneOut::from_raw`'s contract for `out`); lane 0 writes byte 0 and the total, and the
        // lane holding symbol `v` (each symbol on one lane) writes its rank's byte and entry.
        if lane == 0 {
            written = written.and(unsafe { out.put_u8(0, (k - 1) as u8) });
            written = written.and(unsafe { out.put_u16(cum_at(k) + 2 * k, 1 << PROB_BITS) });
        }
        unroll8(|j| {
            let v = (j * W::WIDTH as usize + lane) as u32;
            if let (true, Some(r)) = (j < self.sym_regs, rank(&self.bitmap, v)) {
                let r = r as usize;
                written = written.and(unsafe { out.put_u8(1 + r, v as u8) });
                written = written.and(unsafe { out.put_u16(cum_at(k) + 2 * r, (self.by_symbol[j] >> 16) as u16) });
            }
        });
        // every write is inside `bytes`, which fits: `written` is Ok on every lane
        written.map(|()| bytes)
    }

    /// `(cum, freq)` of symbol `s` on every lane (each with its own `s`); `(0, 0)` for a symbol
    /// that is not in the table. All lanes call it together.
    #[inline(always)]
    pub(super) fn lookup<W: Warp>(&self, w: W, s: u8) -> (u32, u32) {
        let k = rank(&self.bitmap, s as u32);
        let at = k.unwrap_or(0);
        let mut e = 0;
        unroll8(|j| {
            if j < self.regs {
                let t = w.shfl_idx_u32(W::FULL, self.entries[j], at % W::WIDTH);
                if (at / W::WIDTH) as usize == j {
                    e = t;
                }
            }
        });
        match k {
            Some(_) => (e >> 16, e & 0xFFFF),
            None => (0, 0),
        }
    }
}

/// The decoder's view of a validated table: the table's bytes at the start of the section.
pub(super) struct DecTable<'a> {
    /// The table's bytes (`table_bytes(used)` of them).
    table: &'a [u8],
    /// `K`, the number of used symbols.
    used: usize,
    /// log2 of the frequency total.
    prob_bits: u32,
}

impl<'a> DecTable<'a> {
    /// Reads and validates the table at the start of `coded` for `n >= 1` symbols of `bits`
    /// bits and a frequency total of `2^prob_bits` (every lane alike; no warp operation).
    pub(super) fn parse(coded: &'a [u8], n: usize, bits: u32, prob_bits: u32) -> Result<Self, FrameError> {
        let used = *coded.first().ok_or(corrupt(0, "no table"))? as usize + 1;
        if used > n {
            return Err(corrupt(0, "more table symbols than symbols"));
        }
        let table = coded
            .get(..table_bytes(used))
            .ok_or(corrupt(coded.len(), "section ends inside the table"))?;
        let t = DecTable { table, used, prob_bits };
        let mut prev = 0u32;
        for k in 0..used {
            let s = t.symbol(k) as u32;
            if s >> bits != 0 {
                return Err(corrupt(1 + k, "table symbol wider than symbol_bits"));
            }
            if k > 0 && s <= prev {
                return Err(corrupt(1 + k, "table symbols not strictly ascending"));
            }
            prev = s;
        }
        if t.cum(0) != 0 {
            return Err(corrupt(cum_at(used), "cumulative frequencies do not start at 0"));
        }
        for k in 1..=used {
            if t.cum(k) <= t.cum(k - 1) {
                return Err(corrupt(cum_at(used) + 2 * k, "a zero or negative frequency"));
            }
        }
        if t.cum(used) != 1 << prob_bits {
            return Err(corrupt(cum_at(used) + 2 * used, "frequencies do not sum to 2^params"));
        }
        Ok(t)
    }

    /// Checks that the table is the one the encoder builds for the decoded symbols, whose
    /// counts (`n` in all) are `counts` (symbol space, as [`count_round`] adds them up): every
    /// symbol's frequency is its normalized count ([`normalize`]), 0 for a symbol that does not
    /// occur. All lanes call it together; the result is the same on every lane.
    pub(super) fn check_counts<W: Warp>(
        &self,
        w: W,
        counts: &[u32; REGS],
        n: usize,
        bits: u32,
    ) -> Result<(), FrameError> {
        let freqs = normalize(w, counts, n, self.used as u32);
        let sym_regs = sym_regs::<W>(bits);
        let lane = w.lane_id() as usize;
        let (mut unused, mut wrong) = (false, false);
        unroll8(|j| {
            let v = (j * W::WIDTH as usize + lane) as u32;
            if j < sym_regs && v >> bits == 0 {
                let f = self.freq_of(v);
                unused |= counts[j] == 0 && f != 0;
                wrong |= f != freqs[j];
            }
        });
        if w.any(W::FULL, unused) {
            return Err(corrupt(1, "a table symbol that no symbol uses"));
        }
        if w.any(W::FULL, wrong) {
            return Err(corrupt(
                cum_at(self.used),
                "frequencies are not the normalized counts of the symbols",
            ));
        }
        Ok(())
    }

    /// The frequency of symbol `s` in the table, 0 if it is not there (a binary search of the
    /// ascending symbols).
    #[inline(always)]
    fn freq_of(&self, s: u32) -> u32 {
        let (mut lo, mut hi) = (0, self.used);
        while lo < hi {
            let mid = (lo + hi) / 2;
            match (self.symbol(mid) as u32).cmp(&s) {
                core::cmp::Ordering::Less => lo = mid + 1,
                core::cmp::Ordering::Greater => hi = mid,
                core::cmp::Ordering::Equal => return self.cum(mid + 1).wrapping_sub(self.cum(mid)),
            }
        }
        0
    }

    /// Bytes of the table.
    pub(super) fn bytes(&self) -> usize {
        table_bytes(self.used)
    }

    /// `cum[k]`, `k <= K` (0 past the table, which only a bad `k` reaches).
    #[inline(always)]
    fn cum(&self, k: usize) -> u32 {
        let at = cum_at(self.used) + 2 * k;
        match self.table.get(at..at + 2) {
            Some(&[lo, hi]) => u16::from_le_bytes([lo, hi]) as u32,
            _ => 0,
        }
    }

    /// The used symbol of rank `k < K` (0 past the table, which only a bad `k` reaches).
    #[inline(always)]
    fn symbol(&self, k: usize) -> u8 {
        self.table.get(1 + k).copied().unwrap_or(0)
    }

    /// The entry `k` in `lo..=hi` with `cum[k] <= slot < cum[k + 1]`, given that one exists
    /// there (binary search).
    #[inline(always)]
    fn search(&self, slot: u32, mut lo: usize, mut hi: usize) -> usize {
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            if self.cum(mid) <= slot {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        lo
    }

    /// log2 of the slots per bucket: `WIDTH` buckets cover the `2^p` slots.
    #[inline(always)]
    fn bucket_shift<W: Warp>(&self) -> u32 {
        self.prob_bits - W::WIDTH.trailing_zeros()
    }

    /// Lane `b`'s bucket: `first | last << 16`, the first and last entries that slots
    /// `b << shift ..= ((b + 1) << shift) - 1` fall in (two binary searches, once per frame).
    pub(super) fn buckets<W: Warp>(&self, w: W) -> u32 {
        let shift = self.bucket_shift::<W>();
        let b = w.lane_id();
        let first = self.search(b << shift, 0, self.used - 1);
        let last = self.search(((b + 1) << shift) - 1, first, self.used - 1);
        first as u32 | (last as u32) << 16
    }

    /// The bucket of `slot` (each lane its own), from the lanes' `buckets`. All lanes call it
    /// together.
    #[inline(always)]
    pub(super) fn bucket_of<W: Warp>(&self, w: W, buckets: u32, slot: u32) -> u32 {
        w.shfl_idx_u32(W::FULL, buckets, slot >> self.bucket_shift::<W>())
    }

    /// `(symbol, cum, freq)` of the entry that `slot` falls in, searched within `bucket`.
    #[inline(always)]
    pub(super) fn find(&self, slot: u32, bucket: u32) -> (u8, u32, u32) {
        let k = self.search(slot, (bucket & 0xFFFF) as usize, (bucket >> 16) as usize);
        let start = self.cum(k);
        (self.symbol(k), start, self.cum(k + 1).wrapping_sub(start))
    }
}
