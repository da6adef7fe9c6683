//! The bounded sample of a batch and its statistics: the exponent-symbol histogram, the same
//! per region of the batch, and the FixedLen sub-block widths.
//!
//! | item                  | what it is                                                        |
//! |-----------------------|-------------------------------------------------------------------|
//! | [`SAMPLE_MAX_BYTES`]  | the most batch bytes a sample reads (64 KiB)                      |
//! | [`CHUNK_WORDS`]       | split words per sampled chunk (8 FixedLen sub-blocks of 32)       |
//! | [`REGIONS`]           | equal parts of the batch with a histogram each (16)               |
//! | [`Sample::of`]        | strided chunks over the batch, or the whole batch when it is small |
//! | [`Sample::of_compact`] | the same from a copy of the sampled ranges alone                |
//! | [`Sample::add_words`] | adds a run of split words (for callers that sample on their own)  |
//!
//! Chunks start at multiples of 32 split words, so their sub-blocks are the frames' sub-blocks
//! whenever frames hold a multiple of 32 words.
//!
//! Why regions: ExpWindow, ExpAns and Huffman choose their window or table per frame, so a batch
//! whose parts differ in scale (a model's parameters, layer after layer) codes better than one
//! histogram of the whole batch says. The region histograms let [`super::predict()`] estimate
//! per part of the batch: per frame where frames are longer than regions, else per region (see
//! its docs). A region holds about `1/REGIONS` of the sample (2048 bf16 symbols), enough for an
//! order-0 estimate within a fraction of a percent. The region histograms make a [`Sample`]
//! about 17 KiB: a value for the host or for memory, not for a GPU lane's registers.

use crate::dtype::Split;
use zipcoll_targets::Word;

/// The most bytes of a batch that [`Sample::of`] reads.
pub const SAMPLE_MAX_BYTES: usize = 64 * 1024;
/// Split words per sampled chunk: 8 sub-blocks of 32.
pub const CHUNK_WORDS: usize = 256;
/// Symbols per FixedLen sub-block (and per bit-plane group of ExpWindow).
pub const SUB_BLOCK: usize = 32;
/// Equal parts of a batch (by split words) that a [`Sample`] keeps a histogram of each.
pub const REGIONS: usize = 16;

/// What a sample saw (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sample {
    /// How often each exponent symbol occurred.
    pub counts: [u32; 256],
    /// Symbols seen (the sum of `counts`).
    pub symbols: u32,
    /// Sub-blocks of up to 32 symbols seen.
    pub sub_blocks: u32,
    /// Sum over those sub-blocks of FixedLen's width: the bits of `max - min` of its symbols.
    pub width_sum: u32,
    /// Split words of the batch (what the regions divide).
    pub batch_words: u64,
    /// `region_counts[r]`: how often each symbol occurred among the sampled words of region `r`
    /// (the split words `i` of the batch with `i * REGIONS / batch_words == r`,
    /// [`Sample::region_of`]). They sum to `counts`.
    pub region_counts: [[u32; 256]; REGIONS],
}

impl Default for Sample {
    fn default() -> Self {
        Sample {
            counts: [0; 256],
            symbols: 0,
            sub_blocks: 0,
            width_sum: 0,
            batch_words: 0,
            region_counts: [[0; 256]; REGIONS],
        }
    }
}

/// Split word `i` of `data` as the frame codec forms it: its elements' bits in order (element
/// `i * ELEMS_PER_WORD + k` in byte lane `k`), the missing ones zero.
#[inline(always)]
pub fn split_word<T: Split>(data: &[T::Bits], i: usize) -> T::Word {
    let size = T::DTYPE.size_bytes();
    let mut v = 0u64;
    for k in 0..T::ELEMS_PER_WORD {
        let bits = data.get(i * T::ELEMS_PER_WORD + k).map_or(0, |e| e.to_bits64());
        v |= bits << (8 * size * k);
    }
    T::Word::from_bits64(v)
}

/// Split words in `n` elements of `T`.
#[inline(always)]
pub const fn words_of<T: Split>(n: usize) -> usize {
    n.div_ceil(T::ELEMS_PER_WORD)
}

/// Bytes of one split word of `T`.
#[inline(always)]
pub const fn word_bytes<T: Split>() -> usize {
    T::DTYPE.size_bytes() * T::ELEMS_PER_WORD
}

/// The split words [`Sample::of`] reads of a batch of `n` elements, as `(start, len)` ranges
/// in ascending order: the whole batch if it holds at most [`SAMPLE_MAX_BYTES`], else that many
/// bytes in chunks of [`CHUNK_WORDS`] words spread evenly over the batch. (A caller whose batch
/// is in device memory copies just these ranges.)
pub fn sampled_words<T: Split>(n: usize) -> impl Iterator<Item = (usize, usize)> {
    let words = words_of::<T>(n);
    let max_words = SAMPLE_MAX_BYTES / word_bytes::<T>();
    let (chunks, whole) = if words <= max_words {
        (usize::from(words > 0), true)
    } else {
        (max_words / CHUNK_WORDS, false)
    };
    // chunk c starts at c * words / chunks, rounded down to a sub-block; chunks never overlap
    // because words / chunks > CHUNK_WORDS
    (0..chunks).map(move |c| {
        if whole {
            (0, words)
        } else {
            let start = (c * words / chunks) / SUB_BLOCK * SUB_BLOCK;
            (start, (words - start).min(CHUNK_WORDS))
        }
    })
}

/// The elements of split words `start .. start + len` of a batch of `n` elements of `T`, as
/// a range of the batch's elements (the last word as far as the batch goes).
pub fn sampled_elems<T: Split>(n: usize, start: usize, len: usize) -> core::ops::Range<usize> {
    let from = (start * T::ELEMS_PER_WORD).min(n);
    from..((start + len) * T::ELEMS_PER_WORD).min(n)
}

impl Sample {
    /// The sample of `data` (elements of `T`): the whole batch if it holds at most
    /// [`SAMPLE_MAX_BYTES`], else that many bytes in chunks of [`CHUNK_WORDS`] words spread
    /// evenly over the batch.
    pub fn of<T: Split>(data: &[T::Bits]) -> Sample {
        let mut s = Sample::default();
        for (start, len) in sampled_words::<T>(data.len()) {
            s.add_words::<T>(data, start, len);
        }
        s
    }

    /// The sample of a batch of `n` elements of `T` from `compact`, the elements of the ranges
    /// [`sampled_words`] names for `n`, one after the other (the last word of the batch as far
    /// as the batch goes): the same [`Sample`] as [`Sample::of`] of the whole batch, for a
    /// caller that copied only those ranges (at most [`SAMPLE_MAX_BYTES`]). A `compact` shorter
    /// than that leaves the ranges it lacks out of the sample.
    pub fn of_compact<T: Split>(n: usize, compact: &[T::Bits]) -> Sample {
        let mut s = Sample {
            batch_words: words_of::<T>(n) as u64,
            ..Sample::default()
        };
        let mut rest = compact;
        for (start, len) in sampled_words::<T>(n) {
            let elems = sampled_elems::<T>(n, start, len).len();
            let (run, after) = rest.split_at(elems.min(rest.len()));
            s.add_run::<T>(run, start, run.len().div_ceil(T::ELEMS_PER_WORD));
            rest = after;
        }
        s
    }

    /// Adds split words `start .. start + len` of `data` (the batch, elements of `T`): their
    /// symbols to the histograms (the batch's and their regions') and their sub-blocks of 32 (the
    /// last one possibly shorter) to the widths.
    pub fn add_words<T: Split>(&mut self, data: &[T::Bits], start: usize, len: usize) {
        self.batch_words = words_of::<T>(data.len()) as u64;
        let elems = sampled_elems::<T>(data.len(), start, len);
        self.add_run::<T>(&data[elems], start, len);
    }

    /// [`Sample::add_words`] where `run` holds the batch's elements from split word `start` on
    /// (elements past its end count as zero, as past the batch's) and `batch_words` is set.
    fn add_run<T: Split>(&mut self, run: &[T::Bits], start: usize, len: usize) {
        let mut region = self.region_of(start as u64);
        let mut next = self.region_start(region + 1);
        let mut at = start;
        let end = start + len;
        while at < end {
            let stop = (at + SUB_BLOCK).min(end);
            let (mut min, mut max) = (u8::MAX, 0u8);
            for i in at..stop {
                while i as u64 >= next {
                    region += 1;
                    next = self.region_start(region + 1);
                }
                let s = T::split(split_word::<T>(run, i - start)).0;
                self.counts[s as usize] += 1;
                self.region_counts[region][s as usize] += 1;
                min = min.min(s);
                max = max.max(s);
            }
            self.symbols += (stop - at) as u32;
            self.sub_blocks += 1;
            self.width_sum += 8 - (max - min).leading_zeros();
            at = stop;
        }
    }

    /// The region of split word `i` of the batch: `i * REGIONS / batch_words` (at most the last).
    pub fn region_of(&self, i: u64) -> usize {
        let r = i as u128 * REGIONS as u128 / self.batch_words.max(1) as u128;
        (r as usize).min(REGIONS - 1)
    }

    /// The first split word of region `r` (`u64::MAX` for `r >= REGIONS`).
    fn region_start(&self, r: usize) -> u64 {
        match r {
            r if r >= REGIONS => u64::MAX,
            r => (r as u128 * self.batch_words as u128).div_ceil(REGIONS as u128) as u64,
        }
    }

    /// Distinct symbols seen.
    pub fn used_symbols(&self) -> usize {
        self.counts.iter().filter(|&&c| c != 0).count()
    }

    /// The largest symbol seen (0 for an empty sample).
    pub fn max_symbol(&self) -> u32 {
        self.counts.iter().rposition(|&c| c != 0).unwrap_or(0) as u32
    }
}
