//! The code-length table that opens a Huffman coded section with two or more used symbols, and
//! the canonical decode table built from it. All u32 words, little-endian (`N` = alphabet size
//! `2^symbol_bits`, `m` = used symbols):
//!
//! | word                | words              | content                                                        |
//! |---------------------|--------------------|----------------------------------------------------------------|
//! | `0`                 | `B = ceil(N / 32)` | used-symbol bitmap: bit `s % 32` of word `s / 32` set iff `s` has a code; bits `>= N` zero |
//! | `B`                 | `ceil(m / 8)`      | code length - 1 of the `k`-th used symbol (ascending), 4 bits at bit `4 * (k % 8)` of word `B + k / 8`; the nibbles past `m` zero |
//!
//! A table is accepted only if the bitmap holds exactly `m` symbols of the alphabet, the
//! padding nibbles are zero, and the lengths form a complete prefix code (Kraft sum exactly 1,
//! as every Huffman code of two or more symbols is): then every 16-bit window starts with
//! exactly one code word, so decoding cannot meet a window that matches nothing.
//!
//! The decode table, one copy per lane (no shared memory on AMD): for each length `l`, the
//! 16-bit-aligned end `limit[l]` of the windows that start with a code of length `<= l`, and
//! the offset of its first code word in the list of symbols sorted by (length, symbol). A
//! window's code length is one more than the number of limits `<= window` (15 compares, no
//! branches), its symbol a lookup in that list.

use super::lengths::{code_lengths, ALPHABET, MAX_LEN};
use crate::codec::{get_u32, CodecId};
use crate::frame::FrameError;

/// Code lengths `1..=16` (index `l - 1`).
const LENS: usize = MAX_LEN as usize;

/// A `Corrupt` error of the Huffman codec.
#[inline(always)]
pub(crate) fn corrupt(offset: usize, reason: &'static str) -> FrameError {
    CodecId::Huffman.corrupt(offset, reason)
}

/// Words of the used-symbol bitmap for an alphabet of `nsym` symbols.
#[inline(always)]
const fn bitmap_words(nsym: usize) -> usize {
    nsym.div_ceil(32)
}

/// Words of the whole table for `m` used symbols of an alphabet of `nsym`.
#[inline(always)]
pub(crate) const fn table_words(nsym: usize, m: usize) -> usize {
    bitmap_words(nsym) + m.div_ceil(8)
}

/// Table word `j` (`< table_words`) for the code lengths `lens` (0 = unused) of an alphabet of
/// `nsym` symbols.
pub(crate) fn table_word(lens: &[u8; ALPHABET], nsym: usize, j: usize) -> u32 {
    let bitmap = bitmap_words(nsym);
    let mut word = 0u32;
    if j < bitmap {
        for (b, &l) in lens.iter().take(nsym).skip(32 * j).take(32).enumerate() {
            word |= ((l > 0) as u32) << b;
        }
    } else {
        let first = 8 * (j - bitmap);
        // k: rank of each used symbol; those of rank first .. first + 8 fill this word
        for (k, &l) in lens.iter().take(nsym).filter(|&&l| l > 0).enumerate() {
            if (first..first + 8).contains(&k) {
                word |= (l as u32 - 1) << (4 * (k - first));
            }
        }
    }
    word
}

/// Checks that the table at the start of `coded` (`m >= 2` used symbols of an alphabet of
/// `nsym`, already read by [`DecodeTable::read`]) is the one the encoder writes for a block
/// whose symbol counts are `counts`: the words of [`table_word`] for the lengths of
/// [`code_lengths`].
pub(crate) fn check_table(coded: &[u8], counts: &[u32; ALPHABET], nsym: usize, m: usize) -> Result<(), FrameError> {
    let lens = code_lengths(counts);
    for j in 0..table_words(nsym, m) {
        if word_at(coded, j)? != table_word(&lens, nsym, j) {
            return Err(corrupt(
                4 * j,
                "the code is not the encoder's for the decoded symbols (an unused symbol or other lengths)",
            ));
        }
    }
    Ok(())
}

/// The canonical decode table of a coded section (see the module docs).
pub(crate) struct DecodeTable {
    /// `limit[l - 1]`: windows below it start with a code of length `<= l` (`limit[15]` = 2^16).
    limit: [u32; LENS],
    /// `delta[l - 1]`: (offset of the first length-`l` symbol in `syms`) - (first length-`l` code).
    delta: [u32; LENS],
    /// The used symbols by (code length, symbol).
    syms: [u8; ALPHABET],
}

/// Table word `j` of `coded`, or `Corrupt` past its end.
#[inline(always)]
fn word_at(coded: &[u8], j: usize) -> Result<u32, FrameError> {
    get_u32(coded, 4 * j).ok_or(corrupt(coded.len(), "code-length table truncated"))
}

impl DecodeTable {
    /// An empty table, to [`DecodeTable::read`] into.
    pub(crate) fn new() -> Self {
        DecodeTable {
            limit: [0; LENS],
            delta: [0; LENS],
            syms: [0; ALPHABET],
        }
    }

    /// Reads and validates the table at the start of `coded` for `m` (`2..=nsym`) used symbols
    /// of an alphabet of `nsym` (`<= 256`) into `self`; returns its size in bytes.
    pub(crate) fn read(&mut self, coded: &[u8], nsym: usize, m: usize) -> Result<usize, FrameError> {
        let bitmap = bitmap_words(nsym);
        let words = table_words(nsym, m);
        if coded.len() < 4 * words {
            return Err(corrupt(coded.len(), "code-length table truncated"));
        }
        let mut used = 0;
        for j in 0..bitmap {
            let word = word_at(coded, j)?;
            let outside = nsym.saturating_sub(32 * j) < 32 && word >> (nsym - 32 * j) != 0;
            if outside {
                return Err(corrupt(4 * j, "bitmap names a symbol outside the alphabet"));
            }
            used += word.count_ones() as usize;
        }
        if used != m {
            return Err(corrupt(0, "bitmap disagrees with the used-symbol count"));
        }
        // count[l - 1]: used symbols with code length l
        let mut count = [0u32; LENS];
        for j in bitmap..words {
            let word = word_at(coded, j)?;
            for r in 0..8 {
                let nibble = (word >> (4 * r)) & 15;
                if 8 * (j - bitmap) + r < m {
                    count[nibble as usize] += 1;
                } else if nibble != 0 {
                    return Err(corrupt(4 * j, "nonzero padding in the code-length table"));
                }
            }
        }
        let kraft: u32 = (0..LENS).map(|i| count[i] << (LENS - 1 - i)).sum();
        if kraft != 1 << MAX_LEN {
            return Err(corrupt(4 * bitmap, "code lengths are not a complete prefix code"));
        }
        // next[l - 1]: where the next length-l symbol goes in `syms` (the first, for now)
        let mut next = [0u32; LENS];
        let (mut first, mut offset) = (0u32, 0u32);
        for i in 0..LENS {
            self.limit[i] = (first + count[i]) << (LENS - 1 - i);
            self.delta[i] = offset.wrapping_sub(first);
            next[i] = offset;
            offset += count[i];
            first = (first + count[i]) << 1;
        }
        // every lane: limit and delta complete; now the symbols, by (length, symbol)
        let mut k = 0;
        for j in 0..bitmap {
            let mut bits = word_at(coded, j)?;
            while bits != 0 {
                let s = 32 * j + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let nibble = (word_at(coded, bitmap + k / 8)? >> (4 * (k % 8))) & 15;
                let slot = &mut next[nibble as usize];
                self.syms[*slot as usize & (ALPHABET - 1)] = s as u8;
                *slot += 1;
                k += 1;
            }
        }
        Ok(4 * words)
    }

    /// The code length and symbol of the code word at the top of the 16-bit `window`.
    #[inline(always)]
    pub(crate) fn decode(&self, window: u32) -> (u32, u8) {
        let mut l = 0;
        for &lim in &self.limit[..LENS - 1] {
            l += (window >= lim) as usize;
        }
        // l = code length - 1, in 0..16 (every window is below limit[15] = 2^16)
        let l = l & (LENS - 1);
        let index = (window >> (LENS - 1 - l)).wrapping_add(self.delta[l]);
        (l as u32 + 1, self.syms[index as usize & (ALPHABET - 1)])
    }
}
