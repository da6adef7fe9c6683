//! Code lengths and canonical code words. [`code_lengths`] gives an optimal prefix code whose
//! lengths are at most [`MAX_LEN`] for a histogram (package-merge); [`canonical_codes`] gives
//! the canonical code words of a length table. Scalar code: every lane of a warp runs it on the
//! same histogram and gets the same table, on every backend (integer arithmetic only, and a
//! total order on symbols, so there are no ties left to chance).
//!
//! | step          | what                                                             | per-lane memory |
//! |---------------|------------------------------------------------------------------|-----------------|
//! | scale         | counts divided by `2^k` (rounded up) to sum below 2^26 + 256      | —               |
//! | sort          | used symbols by (scaled count, symbol) ascending, heapsort       | 256 B           |
//! | package-merge | 16 lists, denominations 2^-16 .. 2^-1: leaves + packages          | 2 KiB + 960 B   |
//! | select        | the first `2m - 2` items of the 2^-1 list, expanded down         | —               |
//!
//! Package-merge (Larmore and Hirschberg) solves the coin collector's problem: every used
//! symbol has one coin of each denomination 2^-1 .. 2^-16, worth its count; the cheapest set of
//! coins of total denomination `m - 1` takes, for each symbol, its coins 2^-1 .. 2^-len, and
//! those `len` are an optimal length-limited code (Kraft sum exactly 1).

/// The longest code word, in bits.
pub(crate) const MAX_LEN: u32 = 16;
/// Symbols of the largest alphabet (8-bit symbols).
pub(crate) const ALPHABET: usize = 256;
/// Package-merge lists: one per denomination 2^-16 .. 2^-1.
const LEVELS: usize = MAX_LEN as usize;
/// Capacity of a package-merge list: `m + floor(previous / 2) < 2m` items.
const LIST: usize = 2 * ALPHABET;
/// Counts are scaled until their sum is below this (then at most 256 more from rounding up), so
/// that every package-merge item (at most one coin of each symbol per denomination, so at most
/// [`LEVELS`] times the sum) stays below 2^31 and the sum of two fits a u32.
const SCALED_TOTAL: u64 = 1 << 26;

/// An optimal prefix code for `counts` (`counts[s]` = occurrences of symbol `s`) with every
/// length at most [`MAX_LEN`]: `lens[s]` in `1..=16` for every symbol with a nonzero count, 0
/// for the others. All zero when fewer than two symbols occur (no code is needed).
///
/// Counts whose sum reaches 2^26 are first divided by the same power of two, rounding up (so a
/// used symbol stays used); below that the code is exactly optimal.
pub(crate) fn code_lengths(counts: &[u32; ALPHABET]) -> [u8; ALPHABET] {
    let mut lens = [0u8; ALPHABET];
    let total: u64 = counts.iter().map(|&c| c as u64).sum();
    let mut shift = 0;
    while total >> shift >= SCALED_TOTAL {
        shift += 1;
    }
    let weight = |s: u8| ((counts[s as usize] as u64 + (1 << shift) - 1) >> shift) as u32;
    // syms[..m]: the used symbols, ascending
    let mut syms = [0u8; ALPHABET];
    let mut m = 0;
    for (s, &c) in counts.iter().enumerate() {
        if c > 0 {
            syms[m] = s as u8;
            m += 1;
        }
    }
    if m < 2 {
        return lens;
    }
    let syms = &mut syms[..m];
    heapsort(syms, |a, b| (weight(a), a) < (weight(b), b));
    // syms: the used symbols by (weight, symbol) ascending, so the rarest first
    package_merge(
        m,
        |i| weight(syms[i]),
        |leaves| {
            for &s in syms.iter().take(leaves) {
                lens[s as usize] += 1;
            }
        },
    );
    lens
}

/// Package-merge over `m >= 2` leaves whose weights `leaf(0) <= leaf(1) <= ..` sum below
/// 2^26 + 256: calls `deeper(k)` once per denomination with the number `k` of leaves that take
/// a coin of it (always the first `k`), so leaf `i`'s code length is the number of calls with
/// `k > i`.
fn package_merge(m: usize, leaf: impl Fn(usize) -> u32, mut deeper: impl FnMut(usize)) {
    let mut items = [0u32; LIST];
    // flags[d - 1] bit k: item k of the list of level d is a package (level 0 has only leaves)
    let mut flags = [[0u32; LIST / 32]; LEVELS - 1];
    for (i, item) in items.iter_mut().take(m).enumerate() {
        *item = leaf(i);
    }
    let mut len = m;
    // items[..len]: the list of level 0 (denomination 2^-16), the leaves ascending
    for f in flags.iter_mut() {
        let packages = len / 2;
        for k in 0..packages {
            items[k] = items[2 * k] + items[2 * k + 1];
        }
        // items[..packages]: the previous list's pairs, packaged, ascending
        let (mut l, mut p) = (m, packages);
        for o in (0..m + packages).rev() {
            // merge from the back (o >= p, so unread packages stay intact); on equal weights the
            // leaf comes first in the list, so the package is taken first here
            if p > 0 && (l == 0 || items[p - 1] >= leaf(l - 1)) {
                p -= 1;
                items[o] = items[p];
                f[o / 32] |= 1 << (o % 32);
            } else {
                l -= 1;
                items[o] = leaf(l);
            }
        }
        len = m + packages;
        // items[..len]: this level's list (one denomination up), ascending; `f` marks packages
    }
    // the cheapest 2m - 2 items of denomination 2^-1 (total m - 1), expanded level by level
    let mut take = 2 * m - 2;
    for f in flags.iter().rev() {
        let packages = ones_below(f, take);
        deeper(take - packages);
        take = 2 * packages;
    }
    deeper(take);
}

/// Set bits among the first `n` bits of `words` (bit `k` = bit `k % 32` of word `k / 32`).
fn ones_below(words: &[u32], n: usize) -> usize {
    let mut ones = 0;
    for (j, &word) in words.iter().enumerate() {
        let bits = n.saturating_sub(32 * j).min(32);
        if bits == 0 {
            break;
        }
        let mask = if bits == 32 { u32::MAX } else { (1u32 << bits) - 1 };
        ones += (word & mask).count_ones() as usize;
    }
    ones
}

/// Sorts `a` ascending by the strict order `less` (a heapsort: no allocation, no recursion).
fn heapsort(a: &mut [u8], less: impl Fn(u8, u8) -> bool) {
    let n = a.len();
    for root in (0..n / 2).rev() {
        sift_down(a, root, n, &less);
    }
    // a: a max-heap
    for end in (1..n).rev() {
        a.swap(0, end);
        sift_down(a, 0, end, &less);
        // a[end..]: the largest elements, sorted; a[..end]: a max-heap of the rest
    }
}

/// Restores the max-heap property of `a[..end]` below `root`.
fn sift_down(a: &mut [u8], mut root: usize, end: usize, less: &impl Fn(u8, u8) -> bool) {
    loop {
        let mut child = 2 * root + 1;
        if child >= end {
            return;
        }
        if child + 1 < end && less(a[child], a[child + 1]) {
            child += 1;
        }
        if !less(a[root], a[child]) {
            return;
        }
        a.swap(root, child);
        root = child;
    }
}

/// The canonical code of `lens` (a complete code, lengths `0..=16`, 0 = unused): `out[s]` =
/// `code << 16 | len`, 0 for unused symbols. Codes of each length are consecutive in symbol
/// order; all codes of length `l` are below (as `l`-bit prefixes) those of length `l+1`.
pub(crate) fn canonical_codes(lens: &[u8; ALPHABET], out: &mut [u32; ALPHABET]) {
    // count[l - 1]: symbols with code length l
    let mut count = [0u32; LEVELS];
    for &l in lens.iter().filter(|&&l| l > 0) {
        count[(l as usize - 1) & (LEVELS - 1)] += 1;
    }
    // next[l - 1]: the next code word of length l (the first, for now)
    let mut next = [0u32; LEVELS];
    let mut code = 0u32;
    for (nx, &c) in next.iter_mut().zip(&count) {
        *nx = code;
        code = (code + c) << 1;
    }
    for (o, &l) in out.iter_mut().zip(lens) {
        *o = 0;
        if l > 0 {
            let nx = &mut next[(l as usize - 1) & (LEVELS - 1)];
            *o = *nx << 16 | l as u32;
            *nx += 1;
        }
    }
}
