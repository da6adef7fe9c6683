//! Predicted encoded size of a batch for every codec, from a [`Sample`]: each frame's header,
//! raw plane and coded section, with the frame codec's fallback to a RAW frame when a split
//! frame would not be smaller.
//!
//! | codec       | coded section of a frame of `m` split words (`B = ceil(m / 32)` sub-blocks)      |
//! |-------------|----------------------------------------------------------------------------------|
//! | `Raw`       | no frames: the batch as it is (`n x size`)                                       |
//! | `FixedLen`  | `4 ceil(2B / 4)` sub-block headers + `4 B x` the sampled mean width (bits of max - min) |
//! | `ExpWindow` | ExpWindow's own window rule on the sampled histogram: `min_{k, window} 4 k B + escapes` |
//! | `ExpAns`    | table `3K + 3` + 32 states (128) + 16-bit words for `m x` the cross-entropy of the sampled histogram under ExpAns's normalized 11-bit table |
//! | `Huffman`   | table (used-symbol bitmap + 4-bit lengths) + 32-bit words for `m x` the mean length of the Huffman codec's own code for the sampled histogram ([`Huffman::code_lengths`]), + half a word of padding per substream; nothing for one used symbol |
//!
//! A split frame costs `32 + min(P + coded, raw)` bytes, `P` the raw plane
//! (`packed_bytes(m, RAW_BITS)`). Bit rates are kept in Q16 fixed point so that predictions are
//! integers and the same on every target.

use super::entropy::{log2_q16, Q16_ONE};
use super::model::CODECS;
use super::sample::{words_of, Sample, SUB_BLOCK};
use crate::bits::packed_bytes;
use crate::codec::exp_ans::{PROB_BITS, STREAMS};
use crate::codec::{CodecId, Huffman};
use crate::dtype::Split;
use crate::frame::HEADER_BYTES;

/// ExpWindow's largest `k`.
const WINDOW_MAX_K: u32 = 4;
/// The bins below the largest symbol that ExpWindow's window search covers.
const WINDOW_BINS: u32 = 32;

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

/// The per-symbol statistics a prediction needs, derived once from a sample.
struct Rates {
    /// Symbols in the sample (at least 1).
    symbols: u64,
    /// FixedLen: sub-blocks sampled and the sum of their widths.
    sub_blocks: u64,
    width_sum: u64,
    /// ExpWindow: for each `k` in `1..=4`, the fewest sampled symbols outside a window.
    window_escapes: [u64; WINDOW_MAX_K as usize],
    /// ExpAns: distinct symbols, and Q16 bits per symbol under the normalized table.
    used: u64,
    ans_bits_q16: u64,
    /// Huffman: Q16 bits per symbol.
    huffman_bits_q16: u64,
}

/// The fewest symbols of `counts` outside a window of `2^k - 1` consecutive symbols, for each
/// `k` in `1..=4`, where windows end at most 31 below the largest symbol (ExpWindow's rule).
fn window_escapes(counts: &[u32; 256], e_max: u32, total: u64) -> [u64; WINDOW_MAX_K as usize] {
    let mut best = [total; WINDOW_MAX_K as usize];
    for k in 1..=WINDOW_MAX_K {
        let win = (1u32 << k) - 1;
        for top in 0..=(WINDOW_BINS - win) {
            let base = e_max.saturating_sub(top + win - 1);
            let end = (base + win).min(e_max + 1);
            let cover: u64 = counts[base as usize..end as usize].iter().map(|&c| c as u64).sum();
            let slot = &mut best[k as usize - 1];
            *slot = (*slot).min(total - cover);
            if base == 0 {
                break;
            }
        }
    }
    best
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
    fn of(sample: &Sample) -> Rates {
        let symbols = (sample.symbols as u64).max(1);
        let used = sample.used_symbols() as u64;
        Rates {
            symbols,
            sub_blocks: (sample.sub_blocks as u64).max(1),
            width_sum: sample.width_sum as u64,
            window_escapes: window_escapes(&sample.counts, sample.max_symbol(), sample.symbols as u64),
            used,
            ans_bits_q16: if used == 0 {
                0
            } else {
                ans_bits_q16(&sample.counts, symbols, used)
            },
            huffman_bits_q16: huffman_bits_q16(&sample.counts, symbols),
        }
    }

    /// Predicted bytes of the coded section of a frame of `m` split words.
    fn coded_bytes(&self, codec: CodecId, m: u64, symbol_bits: u32) -> u64 {
        let blocks = m.div_ceil(SUB_BLOCK as u64);
        match codec {
            CodecId::Raw => 0,
            CodecId::FixedLen => (2 * blocks).div_ceil(4) * 4 + (4 * blocks * self.width_sum).div_ceil(self.sub_blocks),
            CodecId::ExpWindow => (1..=WINDOW_MAX_K as u64)
                .map(|k| 4 * k * blocks + (self.window_escapes[k as usize - 1] * m).div_ceil(self.symbols))
                .min()
                .unwrap_or(0),
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
/// for every codec, from `sample` (see the module table).
pub fn predict<T: Split>(sample: &Sample, n: usize, frame_elems: usize) -> Predictions {
    let rates = Rates::of(sample);
    let mut bytes = [0u64; CODECS];
    for codec in CodecId::ALL {
        bytes[codec as usize] = match codec {
            CodecId::Raw => (n * T::DTYPE.size_bytes()) as u64,
            _ => each_frame(n, frame_elems, |elems| frame_bytes::<T>(&rates, codec, elems)),
        };
    }
    Predictions { bytes }
}
