//! Coded sections built by one thread from the layouts in the coders' module docs, with the
//! choices each encoder makes left to the caller (FixedLen's bases and widths, ExpWindow's
//! codes and escapes, ExpAns's
//! frequency table and total, Huffman's code lengths, padding), so tests can compare the
//! encoders with a reference and build sections that the encoders never write.

use zipcoll_device::codec::exp_ans::STREAMS;

/// Symbols per FixedLen sub-block, per Huffman step.
const SUB: usize = 32;

/// FixedLen's section of `syms`: sub-block `b` coded at `(base, width) = choose(b, min, max)`
/// (its smallest and largest symbol), `pad` in the header padding (if there is any), and the
/// planes' bits of the positions past the last symbol from the value `past`.
pub fn fixed_len(syms: &[u8], choose: impl Fn(usize, u32, u32) -> (u32, u32), pad: u16, past: u32) -> Vec<u8> {
    let mut headers = Vec::new();
    let mut planes = Vec::new();
    for (b, block) in syms.chunks(SUB).enumerate() {
        let min = *block.iter().min().unwrap() as u32;
        let max = *block.iter().max().unwrap() as u32;
        let (base, width) = choose(b, min, max);
        headers.extend_from_slice(&(base as u16 | (width as u16) << 8).to_le_bytes());
        for bit in 0..width {
            let mut word = 0u32;
            for i in 0..SUB {
                let v = block.get(i).map_or(past, |s| (*s as u32).wrapping_sub(base));
                word |= (v >> bit & 1) << i;
            }
            planes.extend_from_slice(&word.to_le_bytes());
        }
    }
    if headers.len() % 4 != 0 {
        headers.extend_from_slice(&pad.to_le_bytes());
    }
    headers.extend(planes);
    headers
}

/// FixedLen's own choice: the sub-block's minimum and the bits of its range.
pub fn fixed_len_minimal(_block: usize, min: u32, max: u32) -> (u32, u32) {
    (min, 32 - (max - min).leading_zeros())
}

/// An ExpWindow coded section by hand: `codes` (one per symbol, padded with `pad` to whole
/// groups of 32) as `k` bit planes per group, then `escapes`.
pub fn exp_window(codes: &[u32], pad: u32, k: u32, escapes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for g in 0..codes.len().div_ceil(32) {
        for b in 0..k {
            let mut word = 0u32;
            for i in 0..32 {
                let code = codes.get(32 * g + i).copied().unwrap_or(pad);
                word |= (code >> b & 1) << i;
            }
            out.extend_from_slice(&word.to_le_bytes());
        }
    }
    out.extend_from_slice(escapes);
    out
}

/// ExpAns's normalization of the counts of `syms` (not empty) to a total of `2^p`: 1 for each
/// used symbol plus its share of the rest (rounded down), the deficit to the most frequent
/// (the smallest on a tie).
pub fn exp_ans_freqs(syms: &[u8], p: u32) -> [u64; 256] {
    let n = syms.len() as u64;
    let mut counts = [0u64; 256];
    syms.iter().for_each(|s| counts[*s as usize] += 1);
    let used: Vec<usize> = (0..256).filter(|s| counts[*s] > 0).collect();
    let total = 1u64 << p;
    let mut freq = [0u64; 256];
    for &s in &used {
        freq[s] = 1 + counts[s] * (total - used.len() as u64) / n;
    }
    let most = *used
        .iter()
        .max_by_key(|s| (counts[**s], std::cmp::Reverse(**s)))
        .unwrap();
    freq[most] += total - freq.iter().sum::<u64>();
    freq
}

/// ExpAns's section of `syms` (not empty) under the table `freq` (summing to `2^p`, nonzero
/// for every symbol of `syms`; every symbol with a nonzero frequency is in the table): the
/// bytes and the number of renormalization words (`params2`).
pub fn exp_ans(syms: &[u8], p: u32, freq: &[u64; 256]) -> (Vec<u8>, u32) {
    let used: Vec<usize> = (0..256).filter(|s| freq[*s] > 0).collect();
    let mut cum = [0u64; 257];
    (0..256).for_each(|s| cum[s + 1] = cum[s] + freq[s]);
    let mut out = vec![(used.len() - 1) as u8];
    out.extend(used.iter().map(|s| *s as u8));
    used.iter().for_each(|s| out.extend((cum[*s] as u16).to_le_bytes()));
    out.extend(((1u64 << p) as u16).to_le_bytes());
    let mut x = [1u64 << 16; STREAMS];
    let mut words = Vec::new();
    for round in (0..syms.len().div_ceil(STREAMS)).rev() {
        for (lane, x) in x.iter_mut().enumerate() {
            let Some(&s) = syms.get(round * STREAMS + lane) else {
                continue;
            };
            let (f, c) = (freq[s as usize], cum[s as usize]);
            if *x >= f << (32 - p) {
                words.push(*x as u16);
                *x >>= 16;
            }
            *x = ((*x / f) << p) + *x % f + c;
        }
    }
    x.iter().for_each(|x| out.extend((*x as u32).to_le_bytes()));
    words.iter().for_each(|w| out.extend(w.to_le_bytes()));
    (out, words.len() as u32)
}

/// Huffman's section of `syms` under the code lengths `lens` (a complete prefix code of at
/// least two symbols, 0 = no code; every symbol of `syms` has one) for an alphabet of `nsym`
/// symbols: the table, then the substreams' words in load order. `params` is the number of
/// symbols with a code.
pub fn huffman(syms: &[u8], lens: &[u8; 256], nsym: usize) -> Vec<u8> {
    // the canonical code: consecutive codes per length in symbol order, shorter lengths first
    let mut codes = [(0u32, 0u32); 256];
    let mut code = 0u32;
    for len in 1..=16u8 {
        for s in (0..256).filter(|s| lens[*s] == len) {
            codes[s] = (code, len as u32);
            code += 1;
        }
        code <<= 1;
    }
    let mut out = Vec::new();
    for j in 0..nsym.div_ceil(32) {
        let word = (0..32)
            .filter(|b| 32 * j + b < nsym && lens[32 * j + b] > 0)
            .fold(0u32, |w, b| w | 1 << b);
        out.extend(word.to_le_bytes());
    }
    let used: Vec<u8> = (0..nsym).filter(|s| lens[*s] > 0).map(|s| lens[s]).collect();
    for chunk in used.chunks(8) {
        let word = chunk
            .iter()
            .enumerate()
            .fold(0u32, |w, (k, l)| w | (*l as u32 - 1) << (4 * k));
        out.extend(word.to_le_bytes());
    }
    // each substream: its current word's bits (right-aligned), its free bits, its position
    let mut words: Vec<u32> = Vec::new();
    let mut cur = [(0u32, 0u32, 0usize); SUB];
    for t in 0..syms.len().div_ceil(SUB) {
        let mut loads = 0;
        for (lane, (bits, free, at)) in cur.iter_mut().enumerate() {
            let Some(&s) = syms.get(t * SUB + lane) else {
                continue;
            };
            let (code, len) = codes[s as usize];
            if len > *free {
                let rest = len - *free;
                if *free > 0 {
                    words[*at] = *bits << *free | code >> rest;
                }
                // the next word of the section, in substream order within the step
                *at = words.len() + loads;
                loads += 1;
                *bits = code & ((1u32 << rest) - 1);
                *free = 32 - rest;
            } else {
                *bits = *bits << len | code;
                *free -= len;
                if *free == 0 {
                    words[*at] = *bits;
                }
            }
        }
        words.resize(words.len() + loads, 0);
    }
    for (bits, free, at) in cur {
        if free > 0 {
            words[at] = bits << free;
        }
    }
    words.iter().for_each(|w| out.extend(w.to_le_bytes()));
    out
}
