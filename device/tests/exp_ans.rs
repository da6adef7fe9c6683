//! `ExpAns` (exponent-split rANS) on the CPU simulator, 32- and 64-lane warps.
//!
//! | test                                      | checks                                                            |
//! |-------------------------------------------|-------------------------------------------------------------------|
//! | `every_symbol_at_every_stream`            | all 256 values in all 32 streams round-trip                       |
//! | `sizes_and_distributions`                 | n = 0, 1, 31, 32, 33, 4095, 65537; geometric, N(0,1), 5-bit       |
//! | `single_symbol_blocks`                    | one used symbol: no words, table + states only                    |
//! | `matches_a_one_thread_reference`          | the section equals a one-thread encoder's, byte for byte          |
//! | `smaller_probability_bits_decode`         | the reference's sections with `p` = 9 and 10 decode               |
//! | `bf16_normal_ratio`                       | prints and bounds the frame ratio on N(0,1) bf16                  |
//! | `incompressible_input_respects_the_bound` | `max_coded_len` holds on uniform bytes; too small: `OutOfSpace`   |
//! | `symbols_wider_than_symbol_bits`          | the encoder refuses them (`OutOfSpace`)                           |
//! | `truncation_is_an_error_at_every_length`  | every prefix of a section is `Corrupt`                            |
//! | `bit_flips_never_panic`                   | every single-bit flip: no panic, `Corrupt` or (table symbols only) other symbols |
//! | `inconsistent_sections_are_corrupt`       | bad params, tables, states: `Corrupt` with the right offset       |
//!
//! Every round trip encodes on both widths (the bytes must be identical) and decodes the
//! section on both widths, so frames cross warp widths both ways.

mod common;

use common::{one_warp, Rng, SharedBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::Instant;
use zipcoll_device::codec::exp_ans::{PROB_BITS, STREAMS};
use zipcoll_device::codec::{CodecId, Coded, ExpAns, OutOfSpace, SymbolCoder};
use zipcoll_device::frame::{FrameError, HEADER_BYTES};
use zipcoll_targets::sim::{launch, LaunchConfig};
use zipcoll_targets::{Grid, Lanes};

/// The exponent symbols of `n` N(0,1) samples rounded to bf16.
fn bf16_normal_exponents(n: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng(seed);
    (0..n)
        .map(|_| (half::bf16::from_f64(rng.normal()).to_bits() >> 7) as u8)
        .collect()
}

/// `n` symbols with P(s) = 2^-(s+1) (geometric), capped at 255.
fn geometric(n: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng(seed);
    (0..n)
        .map(|_| (rng.next_u64() | 1 << 63).trailing_zeros().min(255) as u8)
        .collect()
}

/// Encodes `syms` on one `W`-lane warp into a buffer of `cap` bytes (0xEE-filled): the whole
/// buffer afterwards and the result.
fn encode_into<const W: u32>(syms: &[u8], bits: u32, cap: usize) -> (Vec<u8>, Result<Coded, OutOfSpace>) {
    let buf = SharedBuf::new(cap, 0xEE);
    let r = one_warp::<W, _>(|w| ExpAns::encode(w, syms.len(), bits, |i| syms[i], buf.out()));
    (buf.into_vec(), r)
}

/// Encodes `syms` on one `W`-lane warp into exactly `max_coded_len` bytes; the coded section.
fn encode<const W: u32>(syms: &[u8], bits: u32) -> Result<(Vec<u8>, Coded), OutOfSpace> {
    let (mut bytes, r) = encode_into::<W>(syms, bits, ExpAns::max_coded_len(syms.len(), bits));
    let coded = r?;
    bytes.truncate(coded.len);
    Ok((bytes, coded))
}

/// One section to decode: `n` symbols of `bits` bits with the header's `params`, `params2`.
#[derive(Clone)]
struct Case {
    n: usize,
    bits: u32,
    params: u16,
    params2: u32,
    coded: Vec<u8>,
}

impl Case {
    fn of(n: usize, bits: u32, coded: &Coded, bytes: &[u8]) -> Case {
        Case {
            n,
            bits,
            params: coded.params,
            params2: coded.params2,
            coded: bytes.to_vec(),
        }
    }
}

/// Every lane's result of one decode (`None` until it returns).
type LaneResults = Vec<Option<Result<(), FrameError>>>;

/// Decodes every case on `W`-lane warps (two blocks of one warp share them): per case, the
/// symbols, or the error every lane returned. Checks that the lanes agree and, on success,
/// that every index was put exactly once.
fn decode_all<const W: u32>(cases: &[Case]) -> Vec<Result<Vec<u8>, FrameError>> {
    let puts: Vec<Vec<AtomicU32>> = cases
        .iter()
        .map(|c| (0..c.n).map(|_| AtomicU32::new(0)).collect())
        .collect();
    let results: Mutex<Vec<LaneResults>> = Mutex::new(vec![vec![None; W as usize]; cases.len()]);
    launch::<W>(LaunchConfig::new(2, W), |w| {
        for (k, case) in cases.iter().enumerate().skip(w.block_idx() as usize).step_by(2) {
            let r = ExpAns::decode(w, case.n, case.bits, case.params, case.params2, &case.coded, |i, s| {
                // count in the high bits, the symbol in the low byte
                puts[k][i].fetch_add(0x100 | s as u32, Ordering::Relaxed);
            });
            results.lock().unwrap()[k][w.lane_id() as usize] = Some(r);
        }
    })
    .unwrap();
    let results = results.into_inner().unwrap();
    results
        .into_iter()
        .zip(puts)
        .map(|(lanes, put)| {
            for r in &lanes {
                assert_eq!(r, &lanes[0], "lanes disagree");
            }
            lanes[0].unwrap().map(|()| {
                put.iter()
                    .enumerate()
                    .map(|(i, p)| {
                        let p = p.load(Ordering::Relaxed);
                        assert_eq!(p >> 8, 1, "symbol {i} put {} times", p >> 8);
                        p as u8
                    })
                    .collect()
            })
        })
        .collect()
}

/// Encodes `syms` on 32 and on 64 lanes (identical bytes), decodes on both; returns the section.
fn round_trip(syms: &[u8], bits: u32) -> (Vec<u8>, Coded) {
    let (bytes, coded) = encode::<32>(syms, bits).unwrap();
    let (bytes64, coded64) = encode::<64>(syms, bits).unwrap();
    assert_eq!(
        coded,
        coded64,
        "n = {}: Coded differs between 32 and 64 lanes",
        syms.len()
    );
    assert!(
        bytes == bytes64,
        "n = {}: sections differ between 32 and 64 lanes",
        syms.len()
    );
    assert!(coded.len <= ExpAns::max_coded_len(syms.len(), bits));
    assert_eq!(coded.params, PROB_BITS as u16);
    let case = Case::of(syms.len(), bits, &coded, &bytes);
    for r in [
        decode_all::<32>(std::slice::from_ref(&case)),
        decode_all::<64>(std::slice::from_ref(&case)),
    ] {
        assert!(
            r[0].as_deref() == Ok(syms),
            "n = {}: decoded {:?}",
            syms.len(),
            r[0].as_ref().err()
        );
    }
    (bytes, coded)
}

#[test]
fn every_symbol_at_every_stream() {
    // value (i % 256 + i / 256) % 256: block b shifts the values by b, so over 33 blocks every
    // value lands in every residue mod 32, i.e. in every stream
    let n = 256 * 33;
    let syms: Vec<u8> = (0..n).map(|i| ((i % 256 + i / 256) % 256) as u8).collect();
    let mut seen = vec![false; 256 * STREAMS];
    for (i, s) in syms.iter().enumerate() {
        seen[*s as usize * STREAMS + i % STREAMS] = true;
    }
    assert!(seen.iter().all(|s| *s));
    let (bytes, coded) = round_trip(&syms, 8);
    // uniform counts normalize to frequency 8 each: exactly 8 bits per symbol
    assert_eq!(bytes[0], 255);
    assert!(coded.params2 as usize <= n / 2, "{} words", coded.params2);
}

#[test]
fn sizes_and_distributions() {
    let t = Instant::now();
    for n in [0, 1, 31, 32, 33, 4095] {
        round_trip(&bf16_normal_exponents(n, n as u64), 8);
        round_trip(&geometric(n, 7 + n as u64), 8);
        // f16-like: 5-bit symbols, skewed
        let f16ish: Vec<u8> = geometric(n, 9 + n as u64)
            .iter()
            .map(|s| (15u8.saturating_sub(*s)) & 31)
            .collect();
        round_trip(&f16ish, 5);
    }
    let syms = bf16_normal_exponents(65537, 65537);
    let (_, coded) = round_trip(&syms, 8);
    println!(
        "n = 65537 N(0,1) bf16 exponents: {} coded bytes, {:.3} bits/symbol; all sizes in {:?}",
        coded.len,
        coded.len as f64 * 8.0 / 65537.0,
        t.elapsed()
    );
}

#[test]
fn single_symbol_blocks() {
    for (s, n) in [(0u8, 1usize), (1, 33), (127, 1000), (128, 31), (255, 4095)] {
        let (bytes, coded) = round_trip(&vec![s; n], 8);
        // table of K = 1 (6 bytes), 32 states at L = 2^16, no words
        assert_eq!(coded.params2, 0);
        assert_eq!(bytes.len(), 6 + 4 * STREAMS);
        assert_eq!(bytes[..6], [0, s, 0, 0, 0, 1 << (PROB_BITS - 8)]);
        assert!(bytes[6..].chunks(4).all(|c| c == [0, 0, 1, 0]));
    }
    // 0-bit symbols: only symbol 0 exists
    round_trip(&[0; 100], 0);
}

/// The coded section of `syms` by the module docs' rules with a frequency total of `2^p`,
/// computed by one thread: the bytes and the number of words.
fn reference_encode(syms: &[u8], p: u32) -> (Vec<u8>, u32) {
    common::sections::exp_ans(syms, p, &common::sections::exp_ans_freqs(syms, p))
}

/// Inputs of every kind for the reference comparisons.
fn reference_inputs() -> Vec<(Vec<u8>, u32)> {
    vec![
        (bf16_normal_exponents(4095, 1), 8),
        (geometric(1000, 2), 8),
        ((0..2 * 256 + 3).map(|i| (i * 7 % 256) as u8).collect(), 8),
        (geometric(333, 3).iter().map(|s| 31 - s.min(&31)).collect(), 5),
        (vec![200; 65], 8),
        (vec![1], 1),
    ]
}

#[test]
fn matches_a_one_thread_reference() {
    for (syms, bits) in reference_inputs() {
        let (want, words) = reference_encode(&syms, PROB_BITS);
        let (bytes, coded) = encode::<32>(&syms, bits).unwrap();
        assert!(
            bytes == want,
            "n = {}: the section differs from the reference",
            syms.len()
        );
        assert_eq!(coded.params2, words);
    }
}

/// Sections coded exactly by the layout but with a frequency total of 2^9 or 2^10 decode to
/// the right symbols under an unchecked decoder; the encoder never writes them (it always uses
/// `PROB_BITS`), so they are `Corrupt`.
#[test]
fn smaller_probability_bits_are_rejected() {
    let mut cases = Vec::new();
    for (syms, bits) in reference_inputs() {
        for p in [9, 10] {
            let (coded, words) = reference_encode(&syms, p);
            cases.push(Case {
                n: syms.len(),
                bits,
                params: p as u16,
                params2: words,
                coded,
            });
        }
    }
    for r in [decode_all::<32>(&cases), decode_all::<64>(&cases)] {
        for (k, r) in r.into_iter().enumerate() {
            assert_eq!(
                r.err(),
                Some(FrameError::Corrupt {
                    codec: CodecId::ExpAns,
                    offset: 0,
                    reason: "probability bits (params) are not 11",
                }),
                "case {k}"
            );
        }
    }
}

#[test]
fn bf16_normal_ratio() {
    for n in [32768, 131072] {
        let syms = bf16_normal_exponents(n, 42);
        let (bytes, coded) = encode::<32>(&syms, 8).unwrap();
        let case = Case::of(n, 8, &coded, &bytes);
        assert!(decode_all::<32>(&[case])[0].as_deref() == Ok(&syms[..]));
        let mut counts = [0usize; 256];
        syms.iter().for_each(|s| counts[*s as usize] += 1);
        let entropy: f64 = counts
            .iter()
            .filter(|c| **c > 0)
            .map(|c| {
                let p = *c as f64 / n as f64;
                -p * p.log2()
            })
            .sum();
        // a bf16 frame: header, raw plane of 8 bits per value, the coded exponents
        let frame = HEADER_BYTES + n + coded.len;
        let ratio = frame as f64 / (2 * n) as f64;
        println!(
            "N(0,1) bf16, {} KiB: {} used symbols, entropy {entropy:.3} bits, coded {:.3} bits/symbol \
             ({} bytes), frame ratio {ratio:.4}",
            2 * n / 1024,
            bytes[0] as usize + 1,
            coded.len as f64 * 8.0 / n as f64,
            coded.len
        );
        assert!(ratio <= 0.675, "ratio {ratio}");
        assert!(coded.len as f64 * 8.0 / n as f64 <= entropy * 1.01 + 0.05);
    }
}

#[test]
fn incompressible_input_respects_the_bound() {
    let mut rng = Rng(5);
    for n in [33, 4095] {
        let syms: Vec<u8> = (0..n).map(|_| rng.next_u64() as u8).collect();
        let bound = ExpAns::max_coded_len(n, 8);
        // a larger buffer: the encoder stays within the bound, and succeeds there
        let (bytes, r) = encode_into::<32>(&syms, 8, bound + 64);
        assert!(bytes[bound..].iter().all(|b| *b == 0xEE), "wrote past max_coded_len");
        let coded = r.unwrap();
        assert!(coded.len <= bound);
        println!("n = {n} uniform bytes: {} coded bytes, bound {bound}", coded.len);
        round_trip(&syms, 8);
        // skewed data into too-small buffers: OutOfSpace on every lane, no panic
        let syms = bf16_normal_exponents(n, 3);
        let (_, coded) = encode::<32>(&syms, 8).unwrap();
        let (bytes, _) = encode::<32>(&syms, 8).unwrap();
        let table = 3 * (bytes[0] as usize + 1) + 3;
        // nothing, inside the table, inside the states, one byte short of the words
        for cap in [0, 1, table - 1, table + 4 * STREAMS - 1, coded.len - 1] {
            let (_, r) = encode_into::<64>(&syms, 8, cap);
            assert!(r.is_err(), "n = {n}, {cap} bytes");
        }
    }
}

#[test]
fn symbols_wider_than_symbol_bits() {
    let syms: Vec<u8> = (0..100).map(|i| if i == 77 { 32 } else { (i % 7) as u8 }).collect();
    assert_eq!(encode::<32>(&syms, 5).unwrap_err(), OutOfSpace { offset: 0 });
    assert_eq!(encode::<64>(&syms, 5).unwrap_err(), OutOfSpace { offset: 0 });
    round_trip(&syms, 6);
}

/// A 300-symbol N(0,1)-exponent section and a single-symbol one.
fn small_cases() -> Vec<Case> {
    [bf16_normal_exponents(300, 11), vec![9u8; 40]]
        .iter()
        .map(|syms| {
            let (bytes, coded) = encode::<32>(syms, 8).unwrap();
            Case::of(syms.len(), 8, &coded, &bytes)
        })
        .collect()
}

#[test]
fn truncation_is_an_error_at_every_length() {
    for case in small_cases() {
        let cut: Vec<Case> = (0..case.coded.len())
            .map(|len| Case {
                coded: case.coded[..len].to_vec(),
                ..case.clone()
            })
            .collect();
        for (len, r) in decode_all::<32>(&cut).into_iter().enumerate() {
            match r {
                Err(FrameError::Corrupt {
                    codec: CodecId::ExpAns,
                    offset,
                    ..
                }) => assert!(offset <= len),
                other => panic!("{len} of {} bytes: {other:?}", case.coded.len()),
            }
        }
    }
}

#[test]
fn bit_flips_never_panic() {
    for case in small_cases() {
        let syms = decode_all::<32>(std::slice::from_ref(&case)).remove(0).unwrap();
        let flipped: Vec<Case> = (0..8 * case.coded.len())
            .map(|bit| {
                let mut c = case.clone();
                c.coded[bit / 8] ^= 1 << (bit % 8);
                c
            })
            .collect();
        let (mut errors, mut same, mut other) = (0, 0, 0);
        // every flip on 32 lanes, every fifth on 64
        let r32 = decode_all::<32>(&flipped);
        let some: Vec<Case> = flipped.iter().step_by(5).cloned().collect();
        let r64 = decode_all::<64>(&some);
        for (k, r) in r64.iter().enumerate() {
            assert_eq!(r, &r32[5 * k], "widths disagree on flip {}", 5 * k);
        }
        let symbol_bytes = 1..2 + case.coded[0] as usize;
        for (bit, (r, c)) in r32.iter().zip(&flipped).enumerate() {
            match r {
                Err(FrameError::Corrupt { offset, .. }) => {
                    assert!(*offset <= c.coded.len());
                    errors += 1;
                }
                Err(e) => panic!("{e:?}"),
                Ok(s) if *s == syms => same += 1,
                Ok(_) => {
                    // a table symbol changed to another valid one: left to the frame checksum
                    assert!(
                        symbol_bytes.contains(&(bit / 8)),
                        "flip of bit {bit} decoded to other symbols"
                    );
                    other += 1;
                }
            }
        }
        println!(
            "{} flips of a {}-byte section: {errors} corrupt, {same} identical, {other} other symbols",
            flipped.len(),
            case.coded.len()
        );
    }
}

#[test]
fn inconsistent_sections_are_corrupt() {
    let case = small_cases().remove(0);
    let k = case.coded[0] as usize + 1;
    let cum = 1 + k;
    let states = 3 * k + 3;
    let with = |f: &dyn Fn(&mut Case)| {
        let mut c = case.clone();
        f(&mut c);
        c
    };
    let bad: Vec<(Case, usize, &str)> = vec![
        (with(&|c| c.params = 8), 0, "probability bits"),
        (with(&|c| c.params = 12), 0, "probability bits"),
        (with(&|c| c.params2 += 1), case.coded.len(), "section length"),
        (with(&|c| c.n = k - 1), 0, "more table symbols"),
        (with(&|c| c.bits = 6), 1, "wider than symbol_bits"),
        (with(&|c| c.coded[2] = c.coded[1]), 2, "not strictly ascending"),
        (with(&|c| c.coded[cum] = 1), cum, "start at 0"),
        (with(&|c| c.coded[cum + 2 * k] ^= 1), cum + 2 * k, "sum to 2^params"),
        (
            with(&|c| c.coded[cum + 2..cum + 4].copy_from_slice(&[0, 0])),
            cum + 2,
            "zero or negative",
        ),
        (
            with(&|c| c.coded[states + 4 * 3 + 2..states + 4 * 3 + 4].copy_from_slice(&[0, 0])),
            states + 12,
            "below",
        ),
        (
            Case {
                n: 0,
                bits: 8,
                params: PROB_BITS as u16,
                params2: 0,
                coded: vec![0],
            },
            0,
            "an empty frame",
        ),
    ];
    let cases: Vec<Case> = bad.iter().map(|b| b.0.clone()).collect();
    for (r, (_, offset, reason)) in decode_all::<32>(&cases).into_iter().zip(&bad) {
        match r {
            Err(FrameError::Corrupt {
                codec: CodecId::ExpAns,
                offset: o,
                reason: why,
            }) => {
                assert!(why.contains(reason), "{why:?} for {reason:?}");
                assert_eq!(o, *offset, "{why}");
            }
            other => panic!("{reason}: {other:?}"),
        }
    }
}
