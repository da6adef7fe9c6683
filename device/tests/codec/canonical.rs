//! Canonical decoding: a frame that decodes to `x` is the frame the encoder writes for `x`.
//! Sections and frames laid out exactly as the formats say but with a choice the encoder never
//! makes (a wider width or a lower base than FixedLen's, another window than ExpWindow's,
//! another frequency total or table than ExpAns's, other code lengths than Huffman's, an unused table symbol, nonzero padding, a
//! split frame no smaller than its data) decode to the right data under a decoder that checks
//! only the layout; each must be `Corrupt`, naming why, on 32 and 64 lanes. Then a property:
//! random frames built with the encoders' choices or others, of which every one that decodes
//! re-encodes to the same bytes. The sections are built by one thread (`common::sections`).

use crate::common::sections;
use crate::data::normal_elems;
use crate::harness::{decode_all, encode_all, per_warp, Ty, With};
use crate::util::{ref_pack, Rng, SharedBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use zipcoll_device::codec::exp_ans::PROB_BITS;
use zipcoll_device::codec::exp_window::MAX_K;
use zipcoll_device::codec::{CodecId, Coded, ExpAns, ExpWindow, FixedLen, Huffman, SymbolCoder};
use zipcoll_device::dtype::{Bf16, Elem, Split, F16, F8E4M3};
use zipcoll_device::frame::{checksum, FrameError, FrameHeader, HEADER_BYTES};
use zipcoll_targets::Word;

/// A coded section to decode, what it is, and the reason its decoder must give (`None`: it
/// must decode to `syms`, and be the encoder's section).
struct Section {
    what: &'static str,
    bits: u32,
    syms: Vec<u8>,
    params: u16,
    params2: u32,
    bytes: Vec<u8>,
    reason: Option<&'static str>,
}

/// Decodes every section with `C` on `W`-lane warps: the symbols put, or the error.
fn decode<C: SymbolCoder, const W: u32>(cases: &[Section]) -> Vec<Result<Vec<u8>, FrameError>> {
    let items: Vec<(&Section, Vec<AtomicU32>)> = cases
        .iter()
        .map(|c| (c, (0..c.syms.len()).map(|_| AtomicU32::new(0)).collect()))
        .collect();
    let results = per_warp::<W, _, _>(&items, |w, (c, seen)| {
        C::decode(w, c.syms.len(), c.bits, c.params, c.params2, &c.bytes, |i, s| {
            seen[i].store(s as u32, Ordering::Relaxed);
        })
    });
    results
        .into_iter()
        .zip(&items)
        .map(|(r, (_, seen))| r.map(|()| seen.iter().map(|s| s.load(Ordering::Relaxed) as u8).collect()))
        .collect()
}

/// What `C`'s encoder writes for `syms` (32 lanes).
fn encode<C: SymbolCoder>(syms: &[u8], bits: u32) -> (Coded, Vec<u8>) {
    let buf = SharedBuf::new(C::max_coded_len(syms.len(), bits), 0xA5);
    let coded = crate::util::one_warp::<32, _>(|w| C::encode(w, syms.len(), bits, |i| syms[i], buf.out()).ok());
    let coded = coded.expect("the encoder fits max_coded_len");
    (coded, buf.into_vec()[..coded.len].to_vec())
}

/// Decodes the cases on 32 and 64 lanes: each gives its reason as `Corrupt` of `C`, or
/// decodes to its symbols and is what the encoder writes for them.
fn check<C: SymbolCoder>(cases: &[Section]) {
    let r32 = decode::<C, 32>(cases);
    let r64 = decode::<C, 64>(cases);
    for (c, (a, b)) in cases.iter().zip(r32.iter().zip(&r64)) {
        assert_eq!(a, b, "{}: 32 and 64 lanes disagree", c.what);
        match c.reason {
            None => {
                assert_eq!(a.as_ref(), Ok(&c.syms), "{}", c.what);
                let (coded, bytes) = encode::<C>(&c.syms, c.bits);
                assert_eq!((coded.params, coded.params2), (c.params, c.params2), "{}", c.what);
                assert!(bytes == c.bytes, "{}: not the encoder's section", c.what);
            }
            Some(reason) => match a {
                Err(FrameError::Corrupt { codec, reason: r, .. }) if *codec == C::ID => {
                    assert_eq!(*r, reason, "{}", c.what)
                }
                Ok(_) => panic!("{}: decoded, want Corrupt ({reason})", c.what),
                Err(e) => panic!("{}: {e}, want Corrupt ({reason})", c.what),
            },
        }
    }
}

/// `n` symbols: a few values around `center`, each `< 2^bits`.
fn bulk(n: usize, bits: u32, center: u32, seed: u64) -> Vec<u8> {
    let mut rng = Rng(seed);
    let top = (1u32 << bits) - 1;
    (0..n)
        .map(|_| {
            let x = rng.normal().abs().max(1e-30);
            (center as f64 + x.log2().floor()).clamp(0.0, top as f64) as u8
        })
        .collect()
}

#[test]
fn fixed_len_rejects_what_the_encoder_never_writes() {
    // 77 symbols: three sub-blocks (header padding), the last one partial
    let syms = bulk(77, 8, 120, 1);
    let mut small: Vec<u8> = (0..77).map(|i| (i % 4) as u8).collect();
    small[40] = 20;
    let section =
        |what, syms: &[u8], bits, reason, choose: &dyn Fn(usize, u32, u32) -> (u32, u32), pad, past| Section {
            what,
            bits,
            syms: syms.to_vec(),
            params: 0,
            params2: 0,
            bytes: sections::fixed_len(syms, choose, pad, past),
            reason,
        };
    let minimal = &sections::fixed_len_minimal;
    let cases = vec![
        section("the encoder's choice", &syms, 8, None, minimal, 0, 0),
        section("5-bit symbols, the encoder's choice", &small, 5, None, minimal, 0, 0),
        section(
            "a width one wider",
            &syms,
            8,
            Some("sub-block width is not the bits of its range"),
            &|b, min, max| {
                let (base, width) = sections::fixed_len_minimal(b, min, max);
                (base, width + (b == 1) as u32)
            },
            0,
            0,
        ),
        section(
            "a base below the minimum",
            &syms,
            8,
            Some("sub-block base is not its minimum"),
            &|b, min, max| match b {
                2 => sections::fixed_len_minimal(b, min - 1, max),
                _ => sections::fixed_len_minimal(b, min, max),
            },
            0,
            0,
        ),
        section(
            "nonzero header padding",
            &syms,
            8,
            Some("nonzero header padding"),
            minimal,
            1,
            0,
        ),
        section(
            "plane bits past the last symbol",
            &syms,
            8,
            Some("nonzero plane bits past the last symbol"),
            minimal,
            0,
            1,
        ),
        section(
            "symbols wider than symbol_bits (a base above the minimum)",
            &small,
            5,
            Some("a symbol wider than symbol_bits"),
            &|b, min, max| match b {
                0 => (30, 2),
                _ => sections::fixed_len_minimal(b, min, max),
            },
            0,
            0,
        ),
    ];
    check::<FixedLen>(&cases);
}

#[test]
fn exp_ans_rejects_what_the_encoder_never_writes() {
    let syms = bulk(300, 8, 120, 2);
    let freq = sections::exp_ans_freqs(&syms, PROB_BITS);
    let most = (0..256).max_by_key(|s| freq[*s]).unwrap();
    let other = (0..256).find(|s| freq[*s] > 0 && *s != most).unwrap();
    let unused = (0..256).find(|s| freq[*s] == 0).unwrap();
    let mut moved = freq;
    moved[most] -= 1;
    moved[other] += 1;
    let mut extra = freq;
    extra[most] -= 1;
    extra[unused] = 1;
    let section = |what, p: u32, freq: &[u64; 256], reason| {
        let (bytes, words) = sections::exp_ans(&syms, p, freq);
        Section {
            what,
            bits: 8,
            syms: syms.clone(),
            params: p as u16,
            params2: words,
            bytes,
            reason,
        }
    };
    let cases = vec![
        section("the encoder's table", PROB_BITS, &freq, None),
        section(
            "a total of 2^10",
            10,
            &sections::exp_ans_freqs(&syms, 10),
            Some("probability bits (params) are not 11"),
        ),
        section(
            "one frequency moved to another symbol",
            PROB_BITS,
            &moved,
            Some("frequencies are not the normalized counts of the symbols"),
        ),
        section(
            "a table symbol no symbol uses",
            PROB_BITS,
            &extra,
            Some("a table symbol that no symbol uses"),
        ),
    ];
    check::<ExpAns>(&cases);
}

/// ExpWindow's section of `syms` with the window (`k`, `base`): its bytes, `params`, `params2`.
fn exp_window_section(syms: &[u8], k: u32, base: u32) -> (Vec<u8>, u16, u32) {
    let win = (1u32 << k) - 1;
    let code = |s: u8| (s as u32).wrapping_sub(base).min(win);
    let codes: Vec<u32> = syms.iter().map(|s| code(*s)).collect();
    let escapes: Vec<u8> = syms.iter().copied().filter(|s| code(*s) == win).collect();
    let bytes = sections::exp_window(&codes, 0, k, &escapes);
    (bytes, base as u16 | (k as u16) << 8, escapes.len() as u32)
}

#[test]
fn exp_window_rejects_a_window_the_encoder_does_not_pick() {
    let syms = bulk(300, 8, 120, 4);
    let (coded, _) = encode::<ExpWindow>(&syms, 8);
    let (k, base) = ((coded.params >> 8) as u32, (coded.params & 0xFF) as u32);
    let section = |what, k, base, reason| {
        let (bytes, params, params2) = exp_window_section(&syms, k, base);
        Section {
            what,
            bits: 8,
            syms: syms.clone(),
            params,
            params2,
            bytes,
            reason,
        }
    };
    let other = "not the window the encoder picks for these symbols";
    let cases = vec![
        section("the encoder's window", k, base, None),
        section("the window one lower", k, base - 1, Some(other)),
        section("a k one larger", k % MAX_K + 1, base, Some(other)),
    ];
    check::<ExpWindow>(&cases);
}

/// Occurrences of each symbol of `syms`.
fn counts_of(syms: &[u8]) -> [u32; 256] {
    let mut counts = [0u32; 256];
    syms.iter().for_each(|s| counts[*s as usize] += 1);
    counts
}

#[test]
fn huffman_rejects_what_the_encoder_never_writes() {
    let syms = bulk(300, 8, 120, 3);
    let lens = Huffman::code_lengths(&counts_of(&syms));
    let used: Vec<usize> = (0..256).filter(|s| lens[*s] > 0).collect();
    assert!(used.len() >= 3);
    let shortest = *used.iter().min_by_key(|s| lens[**s]).unwrap();
    let longest = *used.iter().max_by_key(|s| lens[**s]).unwrap();
    let mut swapped = lens;
    swapped.swap(shortest, longest);
    // the longest code split in two: itself and a symbol that does not occur
    let unused = (0..256).find(|s| lens[*s] == 0).unwrap();
    let mut extra = lens;
    extra[longest] += 1;
    extra[unused] = extra[longest];
    let reason = "the code is not the encoder's for the decoded symbols (an unused symbol or other lengths)";
    let section = |what, lens: &[u8; 256], reason| Section {
        what,
        bits: 8,
        syms: syms.clone(),
        params: lens.iter().filter(|l| **l > 0).count() as u16,
        params2: 0,
        bytes: sections::huffman(&syms, lens, 256),
        reason,
    };
    let cases = vec![
        section("the encoder's code", &lens, None),
        section("the shortest and longest lengths swapped", &swapped, Some(reason)),
        section("a code for a symbol that does not occur", &extra, Some(reason)),
    ];
    check::<Huffman>(&cases);
}

/// A frame of `T` with `C`'s id around the raw plane of `input` and the coded section
/// `section` (its `params`, `params2`).
fn split_frame<T: Split, C: SymbolCoder>(input: &[T::Bits], section: &[u8], params: u16, params2: u32) -> Vec<u8> {
    let raws: Vec<u32> = words::<T>(input)
        .iter()
        .map(|w| T::split(*w).1.to_bits64() as u32)
        .collect();
    let payload = [ref_pack(&raws, T::RAW_BITS), section.to_vec()].concat();
    let data: Vec<u8> = input
        .iter()
        .flat_map(|e| e.to_bits64().to_le_bytes()[..T::DTYPE.size_bytes()].to_vec())
        .collect();
    let h = FrameHeader::new(
        C::ID,
        T::DTYPE,
        params,
        params2,
        data.len() as u32,
        payload.len() as u32,
        checksum(&data),
    );
    [h.to_bytes().to_vec(), payload].concat()
}

/// The split words of `input` (fp8: two elements each, the missing one zero).
fn words<T: Split>(input: &[T::Bits]) -> Vec<T::Word> {
    let size = 8 * T::DTYPE.size_bytes();
    input
        .chunks(T::ELEMS_PER_WORD)
        .map(|c| {
            let v = c
                .iter()
                .enumerate()
                .fold(0u64, |v, (k, e)| v | e.to_bits64() << (size * k));
            T::Word::from_bits64(v)
        })
        .collect()
}

/// The exponent symbols of `input`'s words.
fn symbols<T: Split>(input: &[T::Bits]) -> Vec<u8> {
    words::<T>(input).iter().map(|w| T::split(*w).0).collect()
}

/// Decodes `frame` (capacity: the data) on 32 and 64 lanes; the error both give.
fn frame_error<T: Ty>(frame: &[u8], raw_bytes: usize) -> Option<FrameError> {
    let a = decode_all::<32, T>(&[frame], &[raw_bytes]).remove(0);
    let b = decode_all::<64, T>(&[frame], &[raw_bytes]).remove(0);
    assert_eq!(a, b, "32 and 64 lanes disagree");
    a.err()
}

/// `Corrupt` of FixedLen for `reason`, at any offset.
fn is_fixed_len_corrupt(e: Option<FrameError>, reason: &str) -> bool {
    matches!(e, Some(FrameError::Corrupt { codec: CodecId::FixedLen, reason: r, .. }) if r == reason)
}

#[test]
fn split_frames_the_encoder_never_writes_are_rejected() {
    // bf16: 77 words of 8 raw bits, 24 bits of padding
    let input = normal_elems::<Bf16>(101, 77, 1.0);
    let frame = encode_all::<32, With<FixedLen>, Bf16>(std::slice::from_ref(&input)).remove(0);
    assert_eq!(frame[3], CodecId::FixedLen as u8);
    assert_eq!(frame_error::<Bf16>(&frame, 154), None);
    let mut padded = frame.clone();
    padded[HEADER_BYTES + 78] |= 0x10;
    assert!(
        is_fixed_len_corrupt(frame_error::<Bf16>(&padded, 154), "nonzero raw plane padding"),
        "raw plane padding"
    );
    // every sub-block at the full width: a valid layout, but larger than the data
    let syms = symbols::<Bf16>(&input);
    let wide = sections::fixed_len(&syms, |_, min, _| (min, 8), 0, 0);
    let wide = split_frame::<Bf16, FixedLen>(&input, &wide, 0, 0);
    assert!(wide.len() >= HEADER_BYTES + 154);
    assert!(
        is_fixed_len_corrupt(
            frame_error::<Bf16>(&wide, 154),
            "payload not smaller than the data (the encoder writes RAW)"
        ),
        "a split frame larger than the data"
    );
    // e4m3: 77 elements of one exponent (so FixedLen pays off) in 39 words, the last one's
    // high element missing (bit 4 of its raw byte is that element's lowest mantissa bit)
    let input: Vec<<F8E4M3 as Elem>::Bits> = (0..77u64)
        .map(|i| <F8E4M3 as Elem>::Bits::from_bits64(0x38 | (i % 8) | ((i % 3 == 0) as u64 * 0x80)))
        .collect();
    let frame = encode_all::<32, With<FixedLen>, F8E4M3>(std::slice::from_ref(&input)).remove(0);
    assert_eq!(frame[3], CodecId::FixedLen as u8);
    assert_eq!(frame_error::<F8E4M3>(&frame, 77), None);
    let mut missing = frame.clone();
    missing[HEADER_BYTES + 38] |= 0x10;
    assert!(
        is_fixed_len_corrupt(
            frame_error::<F8E4M3>(&missing, 77),
            "the last word's missing element is not zero"
        ),
        "the missing element of the last word"
    );
}

/// Whether to make a choice the encoder does not make: with probability 1/`one_in`.
fn deviate(rng: &mut Rng, one_in: u64) -> bool {
    rng.below(one_in) == 0
}

/// A coded section of `syms` by `C`'s layout, with the encoder's choices or (at random) others:
/// the section, `params`, `params2`, and whether every choice was the encoder's.
fn random_section(id: CodecId, syms: &[u8], bits: u32, rng: &mut Rng) -> (Vec<u8>, u16, u32, bool) {
    let mut canonical = true;
    match id {
        CodecId::FixedLen => {
            let blocks = syms.len().div_ceil(32);
            // one sub-block, now and then, with a lower base (0) or a wider width (1)
            let odd = (deviate(rng, 3), rng.below(blocks as u64) as usize, rng.below(2));
            let choices: Vec<(u32, u32)> = (0..blocks)
                .map(|b| {
                    let block = &syms[32 * b..(32 * b + 32).min(syms.len())];
                    let min = *block.iter().min().unwrap() as u32;
                    let max = *block.iter().max().unwrap() as u32;
                    let base = match odd == (true, b, 0) && min > 0 {
                        true => min - 1,
                        false => min,
                    };
                    let (_, mut width) = sections::fixed_len_minimal(b, base, max);
                    if odd == (true, b, 1) && width < bits {
                        width += 1;
                    }
                    canonical &= (base, width) == sections::fixed_len_minimal(b, min, max);
                    (base, width)
                })
                .collect();
            let pad = match blocks % 2 == 1 && deviate(rng, 10) {
                true => 1 << rng.below(16),
                false => 0,
            };
            // a bit past the last symbol exists only in a last sub-block with planes
            let last_width = choices[blocks - 1].1;
            let past = match !syms.len().is_multiple_of(32) && last_width > 0 && deviate(rng, 10) {
                true => 1 << rng.below(last_width as u64),
                false => 0,
            };
            canonical &= pad == 0 && past == 0;
            let bytes = sections::fixed_len(syms, |b, _, _| choices[b], pad, past);
            (bytes, 0, 0, canonical)
        }
        CodecId::ExpWindow => {
            let (coded, _) = encode::<ExpWindow>(syms, bits);
            let (mut k, mut base) = ((coded.params >> 8) as u32, (coded.params & 0xFF) as u32);
            if deviate(rng, 3) {
                k = 1 + rng.below(MAX_K as u64) as u32;
                let last = (1u32 << bits.min(8)).saturating_sub((1 << k) - 1);
                base = rng.below(last as u64 + 1) as u32;
                canonical &= (k as u16) << 8 | base as u16 == coded.params;
            }
            let (bytes, params, params2) = exp_window_section(syms, k, base);
            (bytes, params, params2, canonical)
        }
        CodecId::ExpAns => {
            let p = match deviate(rng, 8) {
                true => 9 + rng.below(2) as u32,
                false => PROB_BITS,
            };
            let mut freq = sections::exp_ans_freqs(syms, p);
            canonical &= p == PROB_BITS;
            let used: Vec<usize> = (0..256).filter(|s| freq[*s] > 0).collect();
            let donor = used[rng.below(used.len() as u64) as usize];
            if freq[donor] > 1 && deviate(rng, 4) {
                let unused: Vec<usize> = (0..1usize << bits).filter(|s| freq[*s] == 0).collect();
                let to = match (unused.is_empty(), rng.below(2)) {
                    (false, 0) => unused[rng.below(unused.len() as u64) as usize],
                    _ => used[rng.below(used.len() as u64) as usize],
                };
                freq[donor] -= 1;
                freq[to] += 1;
                canonical &= to == donor;
            }
            let (bytes, words) = sections::exp_ans(syms, p, &freq);
            (bytes, p as u16, words, canonical)
        }
        _ => {
            let counts = counts_of(syms);
            let mut lens = Huffman::code_lengths(&counts);
            let used: Vec<usize> = (0..256).filter(|s| counts[*s] > 0).collect();
            let unused: Vec<usize> = (0..1usize << bits).filter(|s| counts[*s] == 0).collect();
            if used.len() == 1 {
                if unused.is_empty() || !deviate(rng, 4) {
                    return (Vec::new(), 1, used[0] as u32, true);
                }
                // a 1-bit code with a second symbol that does not occur
                lens[used[0]] = 1;
                lens[unused[rng.below(unused.len() as u64) as usize]] = 1;
                canonical = false;
            } else if deviate(rng, 4) {
                let (a, b) = (
                    used[rng.below(used.len() as u64) as usize],
                    used[rng.below(used.len() as u64) as usize],
                );
                canonical &= lens[a] == lens[b];
                lens.swap(a, b);
            } else if !unused.is_empty() && deviate(rng, 6) {
                let longest = *used.iter().max_by_key(|s| lens[**s]).unwrap();
                if lens[longest] < 16 {
                    lens[longest] += 1;
                    lens[unused[rng.below(unused.len() as u64) as usize]] = lens[longest];
                    canonical = false;
                }
            }
            let m = lens.iter().filter(|l| **l > 0).count() as u16;
            (sections::huffman(syms, &lens, 1 << bits), m, 0, canonical)
        }
    }
}

/// Random frames of `T` with coder `C` (N(0,1) data at assorted scales, 1 to 3000 elements),
/// built with the encoder's choices or others and now and then a nonzero padding bit of the
/// raw plane or (fp8) of the last word's missing element: every frame that decodes decodes to
/// its data and is the encoder's frame of it; those with only the encoder's choices decode.
/// Returns how many frames deviated, how many were rejected and how many decoded.
fn accepted_frames_reencode<T: Ty, C: SymbolCoder>(seed: u64, frames: usize) -> (usize, usize, usize) {
    let mut rng = Rng(seed);
    let mut cases = Vec::new();
    for k in 0..frames {
        // small frames, and large ones (a table and 32 streams pay off only there)
        let n = 1 + rng.below([200, 3000][k % 2]) as usize;
        let sigma = [1e-3, 1.0, 30.0, 1e6][k % 4];
        let input = T::typical(seed * 1000 + k as u64, n, sigma);
        let syms = symbols::<T>(&input);
        let (section, params, params2, mut canonical) = random_section(C::ID, &syms, T::SYMBOL_BITS, &mut rng);
        let mut frame = split_frame::<T, C>(&input, &section, params, params2);
        let raw_bytes = n * T::DTYPE.size_bytes();
        canonical &= frame.len() - HEADER_BYTES < raw_bytes;
        let plane_bits = syms.len() * T::RAW_BITS as usize;
        let plane_bytes = plane_bits.div_ceil(32) * 4;
        if plane_bits < 8 * plane_bytes && deviate(&mut rng, 10) {
            let bit = plane_bits + rng.below((8 * plane_bytes - plane_bits) as u64) as usize;
            frame[HEADER_BYTES + bit / 8] |= 1 << (bit % 8);
            canonical = false;
        }
        if T::ELEMS_PER_WORD == 2 && n % 2 == 1 && deviate(&mut rng, 10) {
            // bits 4..8 of the last word's raw byte belong to its missing element
            frame[HEADER_BYTES + syms.len() - 1] |= 0x10 << rng.below(4);
            canonical = false;
        }
        cases.push((input, frame, raw_bytes, canonical));
    }
    let frames: Vec<&[u8]> = cases.iter().map(|c| c.1.as_slice()).collect();
    let caps: Vec<usize> = cases.iter().map(|c| c.2).collect();
    let decoded = decode_all::<32, T>(&frames, &caps);
    let accepted: Vec<Vec<T::Bits>> = decoded.iter().filter_map(|r| r.as_ref().ok().cloned()).collect();
    let mut reencoded = encode_all::<32, With<C>, T>(&accepted).into_iter();
    let (mut deviating, mut rejected) = (0, 0);
    for (k, ((input, frame, _, canonical), r)) in cases.iter().zip(&decoded).enumerate() {
        deviating += !canonical as usize;
        match r {
            Ok(x) => {
                assert_eq!(x, input, "{:?} {:?} frame {k}: decoded other data", C::ID, T::DTYPE);
                let again = reencoded.next().unwrap();
                assert!(
                    again == *frame,
                    "{:?} {:?} frame {k} (n = {}, the encoder's choices: {canonical}) decodes but is not the encoder's frame",
                    C::ID,
                    T::DTYPE,
                    input.len()
                );
            }
            Err(e) => {
                assert!(
                    !canonical,
                    "{:?} {:?} frame {k}: the encoder's choices rejected: {e}",
                    C::ID,
                    T::DTYPE
                );
                rejected += 1;
            }
        }
    }
    (deviating, rejected, accepted.len())
}

/// [`accepted_frames_reencode`] for bf16, f16 (5-bit symbols) and e4m3 (two elements a word).
fn accepted_frames_reencode_all<C: SymbolCoder>(seed: u64) {
    let (mut deviating, mut decoded) = (0, 0);
    for (d, r, a) in [
        accepted_frames_reencode::<Bf16, C>(seed, 120),
        accepted_frames_reencode::<F16, C>(seed + 1, 120),
        accepted_frames_reencode::<F8E4M3, C>(seed + 2, 120),
    ] {
        assert_eq!(d, r, "{:?}: a deviating frame was accepted", C::ID);
        deviating += d;
        decoded += a;
    }
    // the property is only as strong as the deviations tried and the frames that decode
    assert!(deviating >= 60, "{:?}: only {deviating} deviating frames", C::ID);
    assert!(decoded >= 60, "{:?}: only {decoded} frames decoded", C::ID);
}

#[test]
fn accepted_fixed_len_frames_reencode_to_the_same_bytes() {
    accepted_frames_reencode_all::<FixedLen>(10);
}

#[test]
fn accepted_exp_window_frames_reencode_to_the_same_bytes() {
    accepted_frames_reencode_all::<ExpWindow>(40);
}

#[test]
fn accepted_exp_ans_frames_reencode_to_the_same_bytes() {
    accepted_frames_reencode_all::<ExpAns>(20);
}

#[test]
fn accepted_huffman_frames_reencode_to_the_same_bytes() {
    accepted_frames_reencode_all::<Huffman>(30);
}
