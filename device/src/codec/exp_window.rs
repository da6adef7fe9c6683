//! [`ExpWindow`] (ZipCCL's exponent window): the `2^k - 1` most useful consecutive exponent
//! symbols get a `k`-bit code (`sym - base`); every other symbol gets the escape code `2^k - 1`
//! and its full value goes to an escape list after the codes.
//!
//! Coded section layout (`n` symbols, `B = ceil(n / 32)` groups of 32 codes; `E` escapes):
//!
//! | offset         | size    | content                                                                        |
//! |----------------|---------|--------------------------------------------------------------------------------|
//! | `4 k g`        | `4 k`   | group `g`'s bit planes: u32 word `b` holds bit `b` of the codes of symbols `32g .. 32g + 32` (symbol `32g + i` in bit `i`; past `n`: 0) |
//! | `4 k B`        | `E`     | the escaped symbols, one byte each, in symbol order                            |
//!
//! | header field | value                                   |
//! |--------------|-----------------------------------------|
//! | `params`     | `base` (low byte) \| `k << 8`, `1 <= k <=` [`MAX_K`], `base + 2^k - 1 <= 2^symbol_bits` (`base = 0` for a window wider than the symbols) |
//! | `params2`    | `E`                                     |
//!
//! Decoding is canonical: it rejects what the encoder never writes (a `k` above [`MAX_K`], a
//! window past the symbols, a nonzero code past the last symbol, a code or an escape of a
//! symbol wider than `symbol_bits`, an escaped symbol inside the window, and a window other
//! than the one [`choose_window`] picks for the decoded symbols: the lanes count the symbols
//! they decode, 1 KiB of counts per lane, and choose again).
//!
//! Choosing the window ([`choose_window`], which the arbitration's prediction calls too, on a
//! sample's histogram), without a sort or a full histogram: for symbols wider than 5 bits, one
//! pass counts the symbols in 32 coarse bins (`symbol >> (symbol_bits - 5)`: binades in groups
//! of 8 for bf16/f32) and keeps the run of bins spanning 32 symbols that holds the most; a second
//! pass counts each of those 32 symbols (5-bit symbols, as f16's, are counted directly). Counts
//! stay in registers, then one warp sum per two bins. Every `k` in `1..=4` and every window
//! `[base, base + 2^k - 2]` inside the 32 symbols is then costed exactly (`4kB + E` bytes) and
//! the cheapest kept (ties: the smaller `k`, then the lower base). The search follows the
//! bulk of the data, so zeros (symbol 0), infinities and NaNs (the top symbol) and outlier
//! channels only cost their escapes, where an anchor at the largest symbol or at the mean would
//! be dragged away from the bulk. On N(0,1) bf16 it picks `k = 3` with 2-3% escapes: about 3.3
//! bits per symbol (11.25 bits per bf16 value with the 8-bit raw plane).
//!
//! Codes are bit planes per 32 symbols ([`put_bit_planes`]): `k` ballots per group, one group
//! per 32-lane half of the warp, so warps of 32 and 64 lanes write the same bytes. Escapes are
//! compacted in order with a ballot and a popcount ([`append_u8`]); no atomics.

use super::{CodecId, Coded, LaneOut, OutOfSpace, SymbolCoder};
use crate::bits::{append_u8, get_bit_planes, lanes_below, put_bit_planes, warp_sum_u32};
use crate::frame::FrameError;
use zipcoll_targets::Warp;

/// Codes per bit-plane group.
const GROUP: usize = 32;
/// Bins of the histograms [`choose_window`] asks for: coarse (32 ranges of symbols) and fine
/// (32 consecutive symbols).
pub const BINS: usize = 32;
/// The largest `k` the encoder tries.
pub const MAX_K: u32 = 4;

/// The ExpWindow coder (see the module docs for the layout and the window choice).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExpWindow;

/// Bytes of the codes of `n` symbols at `k` bits.
#[inline(always)]
pub const fn codes_bytes(n: usize, k: u32) -> usize {
    n.div_ceil(GROUP) * 4 * k as usize
}

/// A `Corrupt` error of this codec.
#[inline(always)]
fn corrupt(offset: usize, reason: &'static str) -> FrameError {
    CodecId::ExpWindow.corrupt(offset, reason)
}

/// A window: symbols `base ..= base + 2^k - 2` get `k`-bit codes, the others escape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// Bits per code, `1..=MAX_K`.
    pub k: u32,
    /// The first symbol of the window.
    pub base: u32,
    /// The symbols outside the window, among those the window was chosen for.
    pub escapes: usize,
}

impl Window {
    /// Bytes of the coded section of the `n` symbols the window was chosen for.
    #[inline(always)]
    pub const fn coded_bytes(&self, n: usize) -> usize {
        codes_bytes(n, self.k) + self.escapes
    }
}

/// The bin of symbol `s` in a histogram of [`BINS`] bins of `2^shift` symbols from symbol `lo`
/// (`None`: outside all of them).
#[inline(always)]
pub fn window_bin(s: u32, lo: u32, shift: u32) -> Option<usize> {
    s.checked_sub(lo).map(|d| (d >> shift) as usize).filter(|d| *d < BINS)
}

/// The window ExpWindow codes `n` symbols of `symbol_bits` bits with (the module docs' rule),
/// from their histograms: `histogram(lo, shift)` counts the symbols by [`window_bin`]`(s, lo,
/// shift)`. For symbols wider than 5 bits it is asked for the coarse bins (`lo = 0`, `shift =
/// symbol_bits - 5`), whose run of 32 symbols with the most symbols (the first on ties) places
/// the fine bins; then always for the fine bins (`shift = 0`). The encoder counts a frame's
/// symbols on the warp; the arbitration counts a sample's on the host (`arbitrate::predict`),
/// so the prediction takes exactly the encoder's window for the sampled symbols. Every window
/// of `k` in `1..=MAX_K` inside the fine bins is costed exactly ([`Window::coded_bytes`]) and
/// the cheapest kept; ties go to the smaller `k`, then the lower base. `n` is the number of
/// symbols counted (the escapes are `n` minus those inside the window).
#[inline(always)]
pub fn choose_window(n: usize, symbol_bits: u32, mut histogram: impl FnMut(u32, u32) -> [u32; BINS]) -> Window {
    let shift = symbol_bits.clamp(5, 8) - 5;
    let lo = if shift == 0 {
        0
    } else {
        let coarse = histogram(0, shift);
        // the run of 32 symbols (span coarse bins) with the most symbols; the first on ties
        let span = BINS >> shift;
        let mut best = (0, 0);
        for start in 0..=(BINS - span) {
            let sum: u32 = coarse[start..start + span].iter().sum();
            if sum > best.1 {
                best = (start, sum);
            }
        }
        (best.0 << shift) as u32
    };
    let bins = histogram(lo, 0);
    cheapest(n, lo, &bins)
}

/// The cheapest window for `n` symbols, from the counts of the symbols `lo + d` in `bins[d]`
/// (ties: the smaller `k`, then the lower base; a pure function of uniform values, so the same
/// on every lane). Kept out of the `inline(always)`
/// [`choose_window`]: written inside it, the search took the encoder from 64 to 80 registers on
/// sm_90.
fn cheapest(n: usize, lo: u32, bins: &[u32; BINS]) -> Window {
    let mut best = Window {
        k: 1,
        base: lo,
        escapes: n,
    };
    let mut best_cost = usize::MAX;
    for k in 1..=MAX_K {
        let win = (1usize << k) - 1;
        for start in 0..=(BINS - win) {
            let cover: usize = bins[start..start + win].iter().map(|c| *c as usize).sum();
            let escapes = n - cover;
            let cost = codes_bytes(n, k) + escapes;
            if cost < best_cost {
                best = Window {
                    k,
                    base: lo + start as u32,
                    escapes,
                };
                best_cost = cost;
            }
        }
    }
    best
}

/// Sums `counts` (one per lane, each at most `n`) over the warp, bin by bin: two bins per warp
/// sum (in 16-bit halves) when no total can exceed 16 bits.
fn warp_bins<W: Warp>(w: W, n: usize, counts: &[u32; BINS]) -> [u32; BINS] {
    let mut bins = [0u32; BINS];
    if n <= 0xFFFF {
        for d in (0..BINS).step_by(2) {
            let t = warp_sum_u32(w, counts[d] | counts[d + 1] << 16);
            bins[d] = t & 0xFFFF;
            bins[d + 1] = t >> 16;
        }
    } else {
        for d in 0..BINS {
            bins[d] = warp_sum_u32(w, counts[d]);
        }
    }
    // every lane: the frame's counts
    bins
}

/// Counts, per lane, the symbols `l, l + WIDTH, ..` by `bin(symbol)` (`None`: not counted),
/// and sums them over the warp.
fn histogram<W: Warp>(w: W, n: usize, s_at: impl Fn(usize) -> u32, bin: impl Fn(u32) -> Option<usize>) -> [u32; BINS] {
    let mut counts = [0u32; BINS];
    let mut i = w.lane_id() as usize;
    while i < n {
        if let Some(b) = bin(s_at(i)) {
            counts[b] += 1;
        }
        i += W::WIDTH as usize;
    }
    // lane l: the counts of its symbols
    warp_bins(w, n, &counts)
}

impl SymbolCoder for ExpWindow {
    const ID: CodecId = CodecId::ExpWindow;

    fn max_coded_len(n: usize, _symbol_bits: u32) -> usize {
        // the chosen window costs at most what k = 1 with every symbol escaped costs
        codes_bytes(n, 1) + n
    }

    fn encode<W: Warp>(
        w: W,
        n: usize,
        symbol_bits: u32,
        sym: impl Fn(usize) -> u8,
        out: LaneOut<'_>,
    ) -> Result<Coded, OutOfSpace> {
        let lane = w.lane_id() as usize;
        let step = W::WIDTH as usize;
        let mask = ((1u32 << symbol_bits.min(8)) - 1) as u8;
        let s_at = |i: usize| (sym(i) & mask) as u32;
        // every lane: the same window, from the same warp-summed histograms
        let Window { k, base, escapes } = choose_window(n, symbol_bits, |lo, shift| {
            histogram(w, n, s_at, |s| window_bin(s, lo, shift))
        });
        let win = (1u32 << k) - 1;
        let esc_at = codes_bytes(n, k);
        if esc_at + escapes > out.len() {
            return Err(OutOfSpace { offset: out.len() });
        }
        // Codes and escapes, WIDTH symbols (WIDTH / 32 groups) per step.
        let mut cursor = esc_at;
        let mut c = 0;
        while c < n {
            let i = c + lane;
            let valid = i < n;
            let s = if valid { s_at(i) } else { 0 };
            let in_window = s.wrapping_sub(base) < win;
            let code = if !valid {
                0
            } else if in_window {
                s - base
            } else {
                win
            };
            // lane l: the code of symbol c + l; its group of 32 is group (c + l) / 32 of the frame
            let g = (c + lane - lane % GROUP) / GROUP;
            // SAFETY: the coder runs on every lane, converged, with the same arguments (`LaneOut::from_raw`'s contract for `out`), so `k`, `cursor` and each group's `g` are uniform;
            // the groups' planes (before `esc_at`) and the escapes (from it) are disjoint.
            unsafe { put_bit_planes(w, code, k, k, g * GROUP < n, out, 4 * k as usize * g) }?;
            // SAFETY: as above.
            unsafe { append_u8(w, valid && !in_window, s as u8, out, &mut cursor) }?;
            // every lane: the escapes so far end at `cursor`
            c += step;
        }
        Ok(Coded {
            len: cursor,
            params: base as u16 | (k as u16) << 8,
            params2: escapes as u32,
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
        let base = (params & 0xFF) as u32;
        let k = (params >> 8) as u32;
        let symbols = 1u32 << symbol_bits.min(8);
        let win = (1u32 << k.min(MAX_K)) - 1;
        // the encoder's windows: `k <= MAX_K`, inside the symbols of `symbol_bits` bits, or
        // from 0 when the window is wider than all of them
        if !(1..=MAX_K).contains(&k) || base > symbols.saturating_sub(win) {
            return Err(corrupt(0, "bad window parameters"));
        }
        let esc_at = codes_bytes(n, k);
        let escapes = params2 as usize;
        if esc_at.checked_add(escapes) != Some(coded.len()) {
            return Err(corrupt(
                esc_at.min(coded.len()),
                "codes and escapes do not fill the section",
            ));
        }
        let lane = w.lane_id() as usize;
        let step = W::WIDTH as usize;
        let mut cursor = 0usize;
        // lane l: how often it decoded each symbol
        let mut mine = [0u32; 256];
        let mut c = 0;
        while c < n {
            let i = c + lane;
            let valid = i < n;
            let g = (c + lane - lane % GROUP) / GROUP;
            // Inside `coded`: the codes' length was checked above. The codes past `n` in the
            // last group are read too: the encoder writes them 0.
            let code = if g * GROUP < n {
                get_bit_planes(coded, 4 * k as usize * g, k, (lane % GROUP) as u32).unwrap_or(0)
            } else {
                0
            };
            let esc = valid && code == win;
            let voters = w.ballot(W::FULL, esc);
            // every lane: the escaping lanes; lane l: its escape is number cursor + rank
            let count = voters.count_ones() as usize;
            if cursor + count > escapes {
                return Err(corrupt(coded.len(), "more escape codes than escapes"));
            }
            let s = if esc {
                // Inside `coded`: cursor + rank < escapes, and the escapes end the section.
                let rank = (voters & lanes_below(w)).count_ones() as usize;
                coded.get(esc_at + cursor + rank).copied().unwrap_or(0)
            } else {
                (base + code) as u8
            };
            // what the encoder never writes: a padding code, a code or an escape of a symbol of
            // more than `symbol_bits` bits, an escaped symbol that has a code (in the window)
            let padding = !valid && code != 0;
            let wide = valid && s as u32 >= symbols;
            let needless = wide || esc && (s as u32).wrapping_sub(base) < win;
            if w.ballot(W::FULL, padding || needless) != 0 {
                // every lane: the same error (a second vote only on this path)
                return Err(if w.any(W::FULL, padding) {
                    corrupt(4 * k as usize * (n / GROUP), "nonzero code past the last symbol")
                } else {
                    corrupt(esc_at + cursor, "an escape the encoder would have coded")
                });
            }
            if valid {
                put(i, s);
                mine[s as usize] += 1;
            }
            cursor += count;
            c += step;
        }
        if cursor != escapes {
            return Err(corrupt(esc_at + cursor, "fewer escape codes than escapes"));
        }
        // the window the encoder picks for these symbols, from the same warp-summed histograms
        let chosen = choose_window(n, symbol_bits, |lo, shift| {
            let mut counts = [0u32; BINS];
            for (s, &m) in mine.iter().enumerate().take(symbols as usize) {
                if let Some(b) = window_bin(s as u32, lo, shift) {
                    counts[b] += m;
                }
            }
            warp_bins(w, n, &counts)
        });
        if chosen != (Window { k, base, escapes }) {
            return Err(corrupt(0, "not the window the encoder picks for these symbols"));
        }
        Ok(())
    }
}
