//! Predicted encoded size of a batch for every codec, from a [`Sample`]: each frame's header,
//! raw plane and coded section, with the frame codec's fallback to a RAW frame when a split
//! frame would not be smaller.
//!
//! | codec       | coded section of a frame of `m` split words (`B = ceil(m / 32)` sub-blocks)      |
//! |-------------|----------------------------------------------------------------------------------|
//! | `Raw`       | no frames: the batch as it is (`n x size`)                                       |
//! | `FixedLen`  | `4 ceil(2B / 4)` sub-block headers + `4 B x` the sampled mean width (bits of max - min) |
//! | `ExpWindow` | the encoder's own window choice ([`choose_window`]) on the sampled histogram: `4 k B` + `m x` the sampled escape rate |
//! | `ExpAns`    | table `3K + 3` + 32 states (128) + 16-bit words for `m x` the cross-entropy of the sampled histogram under ExpAns's normalized 11-bit table |
//! | `Huffman`   | table (used-symbol bitmap + 4-bit lengths) + 32-bit words for `m x` the mean length of the Huffman codec's own code for the sampled histogram ([`Huffman::code_lengths`]), + half a word of padding per substream; nothing for one used symbol |
//!
//! A split frame costs `32 + min(P + coded, raw)` bytes, `P` the raw plane
//! (`packed_bytes(m, RAW_BITS)`). Bit rates are kept in Q16 fixed point so that predictions are
//! integers and the same on every target.
//!
//! **Which histogram.** ExpWindow, ExpAns and Huffman fit their window or table to each frame,
//! so a batch whose parts differ (a model's parameters: embeddings at scale 1, then layers at
//! scale 0.03) codes better per frame than one histogram of the whole batch says: the order-0
//! rate of a mixture exceeds the mean rate of its parts. So the table above is applied per group
//! of the sample's [`REGIONS`] regions: the regions whose middle word lies in the same frame form
//! one group (so frames longer than a region are estimated from their own symbols, and a batch
//! of one frame from all of them), and the groups' predictions are averaged, weighted by their
//! sampled symbols. Where frames are shorter than a region, a group still mixes the frames of
//! its region: data whose scale changes from frame to frame faster than from region to region
//! (every other frame, say) is predicted from the mixture, larger than it codes, which is the
//! safe side (it may miss a codec that would win; a codec it picks still wins). A region holds
//! about 2048 sampled bf16 symbols (1/16 of 64 KiB), so the order-0 estimate of a group is
//! biased low by well under a percent of a frame; FixedLen codes per sub-block and needs no
//! groups.

use super::entropy::{log2_q16, Q16_ONE};
use super::model::CODECS;
use super::sample::{words_of, Sample, REGIONS, SUB_BLOCK};
use crate::bits::packed_bytes;
use crate::codec::exp_ans::{PROB_BITS, STREAMS};
use crate::codec::exp_window::{choose_window, codes_bytes, window_bin, Window, BINS};
use crate::codec::{CodecId, Huffman};
use crate::dtype::Split;
use crate::frame::HEADER_BYTES;

/// Predicted bytes of a batch for each codec, indexed by `CodecId as usize` (frames included).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Predictions {
    /// Bytes the batch takes coded with each codec.
    pub bytes: [u64; CODECS],
}

impl Predictions {
    /// The prediction for `codec`.
    pub fn get(&self, codec: CodecId) -> u64 {
        self.bytes[codec as usize]
    }
}

/// The per-symbol statistics a prediction needs, derived from one histogram (a group's, see
/// the module docs) and the sample's sub-block widths.
struct Rates {
    /// Symbols in the histogram (at least 1).
    symbols: u64,
    /// FixedLen: sub-blocks sampled and the sum of their widths.
    sub_blocks: u64,
    width_sum: u64,
    /// ExpWindow: the encoder's window for the histogram's symbols.
    window: Window,
    /// ExpAns: distinct symbols, and Q16 bits per symbol under the normalized table.
    used: u64,
    ans_bits_q16: u64,
    /// Huffman: Q16 bits per symbol.
    huffman_bits_q16: u64,
}

/// ExpWindow's window ([`choose_window`]) for the `total` symbols counted in `counts`.
fn window_of(counts: &[u32; 256], total: u64, symbol_bits: u32) -> Window {
    choose_window(total as usize, symbol_bits, |lo, shift| {
        let mut bins = [0u32; BINS];
        for (s, &c) in counts.iter().enumerate() {
            if let Some(d) = window_bin(s as u32, lo, shift) {
                bins[d] += c;
            }
        }
        bins
    })
}

/// Q16 bits per symbol of `counts` coded under ExpAns's table: every used symbol gets 1 of
/// `2^PROB_BITS`, the rest is shared in proportion to the counts (rounded down), the rounding
/// deficit goes to the most frequent symbol; symbol `s` then costs `PROB_BITS - log2 f_s`.
fn ans_bits_q16(counts: &[u32; 256], total: u64, used: u64) -> u64 {
    let scale = 1u64 << PROB_BITS;
    let spare = scale.saturating_sub(used);
    let mut freq = [0u64; 256];
    let mut sum = 0u64;
    let mut top = 0usize;
    for (s, &c) in counts.iter().enumerate() {
        if c != 0 {
            freq[s] = 1 + spare * c as u64 / total;
            sum += freq[s];
            if c > counts[top] {
                top = s;
            }
        }
    }
    freq[top] += scale.saturating_sub(sum);
    let bits: u64 = counts
        .iter()
        .zip(freq.iter())
        .filter(|(&c, _)| c != 0)
        .map(|(&c, &f)| c as u64 * ((PROB_BITS as u64) * Q16_ONE - log2_q16(f)))
        .sum();
    bits / total
}

/// Q16 bits per symbol of `counts` under the Huffman codec's own code
/// ([`Huffman::code_lengths`]: optimal, at most 16 bits); 0 when one symbol is used.
fn huffman_bits_q16(counts: &[u32; 256], total: u64) -> u64 {
    let lens = Huffman::code_lengths(counts);
    let bits: u64 = counts.iter().zip(lens.iter()).map(|(&c, &l)| c as u64 * l as u64).sum();
    bits * Q16_ONE / total
}

impl Rates {
    /// The rates of the symbols counted in `counts` (of `symbol_bits` bits), with `sample`'s
    /// sub-block widths.
    fn of(counts: &[u32; 256], sample: &Sample, symbol_bits: u32) -> Rates {
        let total: u64 = counts.iter().map(|&c| c as u64).sum();
        let symbols = total.max(1);
        let used = counts.iter().filter(|&&c| c != 0).count() as u64;
        Rates {
            symbols,
            sub_blocks: (sample.sub_blocks as u64).max(1),
            width_sum: sample.width_sum as u64,
            window: window_of(counts, total, symbol_bits),
            used,
            ans_bits_q16: if used == 0 {
                0
            } else {
                ans_bits_q16(counts, symbols, used)
            },
            huffman_bits_q16: huffman_bits_q16(counts, symbols),
        }
    }

    /// Predicted bytes of the coded section of a frame of `m` split words.
    fn coded_bytes(&self, codec: CodecId, m: u64, symbol_bits: u32) -> u64 {
        let blocks = m.div_ceil(SUB_BLOCK as u64);
        match codec {
            CodecId::Raw => 0,
            CodecId::FixedLen => (2 * blocks).div_ceil(4) * 4 + (4 * blocks * self.width_sum).div_ceil(self.sub_blocks),
            CodecId::ExpWindow => {
                codes_bytes(m as usize, self.window.k) as u64 + (self.window.escapes as u64 * m).div_ceil(self.symbols)
            }
            CodecId::ExpAns => {
                let words = (m * self.ans_bits_q16).div_ceil(16 * Q16_ONE);
                3 * self.used + 3 + 4 * STREAMS as u64 + 2 * words
            }
            CodecId::Huffman if self.used < 2 => 0,
            CodecId::Huffman => {
                let substreams = Huffman::SUBSTREAMS as u64;
                let table_words = (1u64 << symbol_bits).div_ceil(32) + self.used.div_ceil(8);
                // each active substream pads its last word: half a word on average
                let words = (m * self.huffman_bits_q16).div_ceil(32 * Q16_ONE) + m.min(substreams) / 2;
                4 * (table_words + words)
            }
        }
    }
}

/// Bytes of one frame of `elems` elements of `T` coded with `codec` (split codecs fall back to
/// a RAW frame when they would not be smaller, as the frame codec does).
fn frame_bytes<T: Split>(rates: &Rates, codec: CodecId, elems: u64) -> u64 {
    let raw = elems * T::DTYPE.size_bytes() as u64;
    let m = words_of::<T>(elems as usize) as u64;
    let plane = packed_bytes(m as usize, T::RAW_BITS) as u64;
    let split = plane + rates.coded_bytes(codec, m, T::SYMBOL_BITS.min(8));
    HEADER_BYTES as u64 + if split < raw { split } else { raw }
}

/// The smallest a batch of `n` elements in frames of `frame_elems` can be with any split codec:
/// the headers and the raw planes alone, known without a sample.
pub fn lower_bound_bytes<T: Split>(n: usize, frame_elems: usize) -> u64 {
    each_frame(n, frame_elems, |elems| {
        let raw = elems * T::DTYPE.size_bytes() as u64;
        let plane = packed_bytes(words_of::<T>(elems as usize), T::RAW_BITS) as u64;
        HEADER_BYTES as u64 + plane.min(raw)
    })
}

/// The sum of `bytes(elems)` over the frames of a batch of `n` elements in frames of
/// `frame_elems` (`0`: one frame), in constant time.
fn each_frame(n: usize, frame_elems: usize, bytes: impl Fn(u64) -> u64) -> u64 {
    let f = if frame_elems == 0 { n.max(1) } else { frame_elems } as u64;
    let n = n as u64;
    let (full, rest) = (n / f, n % f);
    full * bytes(f) + if rest != 0 { bytes(rest) } else { 0 }
}

/// Predicted bytes of a batch of `n` elements of `T` in frames of `frame_elems` (`0`: one frame)
/// for every codec, from `sample` (see the module docs: per group of regions, averaged).
pub fn predict<T: Split>(sample: &Sample, n: usize, frame_elems: usize) -> Predictions {
    let symbol_bits = T::SYMBOL_BITS;
    // the sums over the groups of each codec's prediction times the group's symbols
    let mut sums = [0u128; CODECS];
    let mut weight = 0u128;
    let mut add = |counts: &[u32; 256]| {
        let symbols: u64 = counts.iter().map(|&c| c as u64).sum();
        let rates = Rates::of(counts, sample, symbol_bits);
        for codec in CodecId::ALL {
            let bytes = match codec {
                CodecId::Raw => (n * T::DTYPE.size_bytes()) as u64,
                _ => each_frame(n, frame_elems, |elems| frame_bytes::<T>(&rates, codec, elems)),
            };
            sums[codec as usize] += bytes as u128 * symbols.max(1) as u128;
        }
        weight += symbols.max(1) as u128;
    };
    let batch_words = sample.batch_words.max(1);
    let frame_words = match frame_elems {
        0 => batch_words,
        f => words_of::<T>(f).max(1) as u64,
    };
    // the frame holding region r's middle word
    let frame_of = |r: u64| (2 * r + 1) * batch_words / (2 * REGIONS as u64) / frame_words;
    let mut group = [0u32; 256];
    let mut group_symbols = 0u64;
    let mut flushed = false;
    for r in 0..REGIONS {
        let counts = &sample.region_counts[r];
        if group_symbols != 0 && frame_of(r as u64) != frame_of(r as u64 - 1) {
            add(&group);
            flushed = true;
            group = [0; 256];
            group_symbols = 0;
        }
        for (g, &c) in group.iter_mut().zip(counts.iter()) {
            *g += c;
            group_symbols += c as u64;
        }
    }
    // the last group; an empty sample predicts from no symbols
    if group_symbols != 0 || !flushed {
        add(&group);
    }
    let mut bytes = [0u64; CODECS];
    for (b, s) in bytes.iter_mut().zip(sums) {
        *b = s.div_ceil(weight) as u64;
    }
    Predictions { bytes }
}
