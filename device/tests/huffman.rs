//! Tests of the Huffman symbol coder (`zipcoll_device::codec::Huffman`) on the CPU simulator,
//! 32- and 64-lane warps.
//!
//! | test                         | checks                                                                |
//! |------------------------------|-----------------------------------------------------------------------|
//! | `lengths_*`                  | `Huffman::code_lengths`: Kraft sum 1, lengths <= 16, optimal (against an independent package-merge and unlimited Huffman), the 30-symbol Fibonacci histogram |
//! | `roundtrip_*`                | encode on 32 and 64 lanes (byte-identical), decode on both, symbol for symbol, each put exactly once, size <= `max_coded_len` |
//! | `single_symbol_and_empty`    | the `m <= 1` layouts: nothing coded                                   |
//! | `out_of_space`               | too small an output: the same `Err` on every lane, and exactly enough is enough |
//! | `truncation_every_length`    | every prefix of a coded section is rejected                           |
//! | `bit_flips`                  | every single-bit flip of a coded section: no panic, `Err` or symbols  |
//! | `random_streams_*`           | random, all-ones and all-zero substream words: no panic, same on both widths |
//! | `corrupt_*`                  | each rejection reason, with its offset                                |
//! | `normal_bf16_exponents`      | prints the coded bytes per symbol on N(0,1) bf16 exponents            |

mod common;

use common::{Rng, SharedBuf};
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Mutex;
use zipcoll_device::codec::{Coded, Huffman, OutOfSpace, SymbolCoder};
use zipcoll_device::dtype::{Bf16, F32Exact, Split};
use zipcoll_device::frame::FrameError;
use zipcoll_targets::sim::{launch, LaunchConfig, SimWarp};
use zipcoll_targets::{Grid, Lanes};

// ---------------------------------------------------------------------------------------------
// Plumbing

/// Runs `f(w, &items[i])` on warp `i` of a launch (one warp per block, so blocks spread over
/// the host's threads); returns each warp's result after checking that all its lanes agree.
fn per_warp<const W: u32, I: Sync, R: Clone + PartialEq + std::fmt::Debug + Send>(
    items: &[I],
    f: impl Fn(SimWarp<W>, &I) -> R + Sync,
) -> Vec<R> {
    if items.is_empty() {
        return Vec::new();
    }
    let results: Mutex<Vec<Vec<Option<R>>>> = Mutex::new(vec![vec![None; W as usize]; items.len()]);
    launch::<W>(LaunchConfig::new(items.len() as u32, W), |w| {
        let warp = w.block_idx() as usize;
        let r = f(w, &items[warp]);
        results.lock().unwrap()[warp][w.lane_id() as usize] = Some(r);
    })
    .unwrap();
    let results = results.into_inner().unwrap();
    results
        .into_iter()
        .enumerate()
        .map(|(i, lanes)| {
            let first = lanes[0].clone().unwrap();
            for (l, r) in lanes.iter().enumerate() {
                assert_eq!(
                    r.as_ref(),
                    Some(&first),
                    "W={W} item {i}: lane {l} disagrees with lane 0"
                );
            }
            first
        })
        .collect()
}

/// One block of symbols to code.
struct Case {
    name: String,
    symbol_bits: u32,
    syms: Vec<u8>,
}

impl Case {
    fn new(name: impl Into<String>, symbol_bits: u32, syms: Vec<u8>) -> Self {
        Case {
            name: name.into(),
            symbol_bits,
            syms,
        }
    }
}

/// What an encode returned, with the coded bytes.
type Encoded = Result<(Coded, Vec<u8>), OutOfSpace>;

/// Encodes case `i` on a `W`-lane warp into a buffer of `capacities[i]` bytes.
fn encode_all<const W: u32>(cases: &[Case], capacities: &[usize]) -> Vec<Encoded> {
    let bufs: Vec<SharedBuf> = capacities.iter().map(|&c| SharedBuf::new(c, 0xA5)).collect();
    let items: Vec<(&Case, &SharedBuf)> = cases.iter().zip(&bufs).collect();
    let results = per_warp::<W, _, _>(&items, |w, (c, buf)| {
        Huffman::encode(w, c.syms.len(), c.symbol_bits, |i| c.syms[i], buf.out())
    });
    results
        .into_iter()
        .zip(bufs)
        .map(|(r, buf)| r.map(|coded| (coded, buf.into_vec()[..coded.len].to_vec())))
        .collect()
}

/// A coded block to decode.
struct Frame {
    n: usize,
    symbol_bits: u32,
    params: u16,
    params2: u32,
    coded: Vec<u8>,
}

/// Where a decode puts its symbols: the values, and how many times each was put.
type Sink = (Vec<AtomicU8>, Vec<AtomicU8>);

/// Decodes every frame on `W`-lane warps. On success also checks that every symbol was put
/// exactly once and returns the symbols.
fn decode_all<const W: u32>(frames: &[Frame]) -> Vec<Result<Vec<u8>, FrameError>> {
    let outs: Vec<Sink> = frames
        .iter()
        .map(|f| {
            (
                (0..f.n).map(|_| AtomicU8::new(0)).collect(),
                (0..f.n).map(|_| AtomicU8::new(0)).collect(),
            )
        })
        .collect();
    let items: Vec<(&Frame, &Sink)> = frames.iter().zip(&outs).collect();
    let results = per_warp::<W, _, _>(&items, |w, (f, (vals, puts))| {
        Huffman::decode(w, f.n, f.symbol_bits, f.params, f.params2, &f.coded, |i, s| {
            vals[i].store(s, Ordering::Relaxed);
            puts[i].fetch_add(1, Ordering::Relaxed);
        })
    });
    results
        .into_iter()
        .zip(outs)
        .map(|(r, (vals, puts))| {
            r?;
            for (i, p) in puts.iter().enumerate() {
                assert_eq!(
                    p.load(Ordering::Relaxed),
                    1,
                    "W={W}: symbol {i} put {} times",
                    p.load(Ordering::Relaxed)
                );
            }
            Ok(vals.into_iter().map(AtomicU8::into_inner).collect())
        })
        .collect()
}

fn frame(case: &Case, coded: &Coded, bytes: &[u8]) -> Frame {
    Frame {
        n: case.syms.len(),
        symbol_bits: case.symbol_bits,
        params: coded.params,
        params2: coded.params2,
        coded: bytes.to_vec(),
    }
}

/// Encodes every case on 32 and 64 lanes (byte-identical), checks the size bound, decodes on
/// 32 and 64 lanes and compares with the input. Returns the encodings.
fn roundtrip(cases: &[Case]) -> Vec<(Coded, Vec<u8>)> {
    let bound = |c: &Case| Huffman::max_coded_len(c.syms.len(), c.symbol_bits);
    let caps: Vec<usize> = cases.iter().map(bound).collect();
    let e32 = encode_all::<32>(cases, &caps);
    let e64 = encode_all::<64>(cases, &caps);
    let mut frames = Vec::new();
    let mut encoded = Vec::new();
    for ((c, a), b) in cases.iter().zip(e32).zip(e64) {
        let a = a.unwrap_or_else(|e| panic!("{}: encode failed within max_coded_len: {e:?}", c.name));
        assert_eq!(Ok(&a), b.as_ref(), "{}: 32- and 64-lane encodings differ", c.name);
        assert!(
            a.1.len() <= bound(c),
            "{}: {} bytes > max_coded_len {}",
            c.name,
            a.1.len(),
            bound(c)
        );
        frames.push(frame(c, &a.0, &a.1));
        encoded.push(a);
    }
    let d32 = decode_all::<32>(&frames);
    let d64 = decode_all::<64>(&frames);
    for ((c, x), y) in cases.iter().zip(d32).zip(d64) {
        for (lanes, d) in [(32, x), (64, y)] {
            let got = d.unwrap_or_else(|e| panic!("{} on {lanes} lanes: {e}", c.name));
            if got != c.syms {
                let at = got.iter().zip(&c.syms).position(|(a, b)| a != b);
                panic!("{} on {lanes} lanes: first difference at {at:?}", c.name);
            }
        }
    }
    encoded
}

/// `n` symbols drawn from the distribution `weights` (symbol `s` with weight `weights[s]`).
fn draw(rng: &mut Rng, n: usize, weights: &[f64]) -> Vec<u8> {
    let total: f64 = weights.iter().sum();
    (0..n)
        .map(|_| {
            let mut x = rng.unit() * total;
            for (s, &wt) in weights.iter().enumerate() {
                if x <= wt {
                    return s as u8;
                }
                x -= wt;
            }
            (weights.len() - 1) as u8
        })
        .collect()
}

/// `n` exponent symbols of N(0,1) samples rounded to bf16.
fn normal_exponents(rng: &mut Rng, n: usize) -> Vec<u8> {
    (0..n)
        .map(|_| <Bf16 as Split>::split(Bf16::from_f32(rng.normal() as f32)).0)
        .collect()
}

/// A random permutation of `counts[s]` copies of each symbol `s`.
fn shuffled(rng: &mut Rng, counts: &[u64]) -> Vec<u8> {
    let mut v: Vec<u8> = counts
        .iter()
        .enumerate()
        .flat_map(|(s, &c)| std::iter::repeat_n(s as u8, c as usize))
        .collect();
    for i in (1..v.len()).rev() {
        v.swap(i, rng.below(i as u64 + 1) as usize);
    }
    v
}

/// Fibonacci numbers 1, 1, 2, 3, .. (`k` of them).
fn fibonacci(k: usize) -> Vec<u64> {
    let mut f = vec![1u64, 1];
    while f.len() < k {
        f.push(f[f.len() - 1] + f[f.len() - 2]);
    }
    f.truncate(k);
    f
}

// ---------------------------------------------------------------------------------------------
// Code lengths

/// Σ count x length.
fn cost(counts: &[u32; 256], lens: &[u8; 256]) -> u64 {
    counts.iter().zip(lens).map(|(&c, &l)| c as u64 * l as u64).sum()
}

/// Checks the lengths form a complete prefix code of <= 16 bits over exactly the used symbols.
fn check_lengths(counts: &[u32; 256], lens: &[u8; 256]) {
    let used = counts.iter().filter(|&&c| c > 0).count();
    if used < 2 {
        assert!(lens.iter().all(|&l| l == 0), "fewer than two symbols need no code");
        return;
    }
    let mut kraft = 0u64;
    for (s, (&c, &l)) in counts.iter().zip(lens).enumerate() {
        assert_eq!(c > 0, l > 0, "symbol {s}: count {c}, length {l}");
        assert!(l as u32 <= Huffman::MAX_CODE_LEN, "symbol {s}: length {l}");
        if l > 0 {
            kraft += 1 << (16 - l);
        }
    }
    assert_eq!(kraft, 1 << 16, "Kraft sum of {lens:?}");
}

/// Package-merge the slow way: every item carries its coins per symbol.
fn reference_limited(counts: &[u32; 256], limit: usize) -> [u8; 256] {
    let leaves: Vec<(u64, Vec<u8>)> = counts
        .iter()
        .enumerate()
        .filter(|(_, &c)| c > 0)
        .map(|(s, &c)| {
            let mut coins = vec![0u8; 256];
            coins[s] = 1;
            (c as u64, coins)
        })
        .collect();
    let m = leaves.len();
    let mut list = leaves.clone();
    list.sort_by_key(|x| x.0);
    for _ in 1..limit {
        let mut next = leaves.clone();
        for pair in list.chunks_exact(2) {
            let coins = pair[0].1.iter().zip(&pair[1].1).map(|(a, b)| a + b).collect();
            next.push((pair[0].0 + pair[1].0, coins));
        }
        next.sort_by_key(|x| x.0);
        list = next;
    }
    let mut lens = [0u8; 256];
    for (_, coins) in &list[..2 * m - 2] {
        for (l, c) in lens.iter_mut().zip(coins) {
            *l += c;
        }
    }
    lens
}

/// The cost and longest length of an unlimited Huffman code.
fn reference_huffman(counts: &[u32; 256]) -> (u64, u32) {
    // (Reverse(weight), depth of the deepest leaf below)
    let mut heap: BinaryHeap<(std::cmp::Reverse<u64>, u32)> = counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| (std::cmp::Reverse(c as u64), 0))
        .collect();
    let mut total = 0;
    while heap.len() > 1 {
        let (std::cmp::Reverse(a), da) = heap.pop().unwrap();
        let (std::cmp::Reverse(b), db) = heap.pop().unwrap();
        total += a + b;
        heap.push((std::cmp::Reverse(a + b), da.max(db) + 1));
    }
    (total, heap.pop().map_or(0, |x| x.1))
}

fn counts_of(syms: &[u8]) -> [u32; 256] {
    let mut c = [0u32; 256];
    for &s in syms {
        c[s as usize] += 1;
    }
    c
}

#[test]
fn lengths_optimal_on_random_histograms() {
    let mut rng = Rng(1);
    let mut limited = 0;
    for round in 0..300 {
        let used = [2, 3, 5, 17, 40, 256][round % 6];
        let mut counts = [0u32; 256];
        for _ in 0..used {
            let s = rng.below(256) as usize;
            // a spread of magnitudes, so that some codes want more than 16 bits
            counts[s] = 1 + (rng.next_u64() >> (64 - 1 - rng.below(24))) as u32;
        }
        let lens = Huffman::code_lengths(&counts);
        check_lengths(&counts, &lens);
        if counts.iter().filter(|&&c| c > 0).count() < 2 {
            continue;
        }
        let want = reference_limited(&counts, 16);
        assert_eq!(cost(&counts, &lens), cost(&counts, &want), "round {round}: {counts:?}");
        let (huffman, depth) = reference_huffman(&counts);
        if depth <= 16 {
            assert_eq!(
                cost(&counts, &lens),
                huffman,
                "round {round}: limit not binding, must equal Huffman"
            );
        } else {
            limited += 1;
            assert!(cost(&counts, &lens) > huffman);
        }
    }
    assert!(limited > 10, "only {limited} histograms exercised the length limit");
}

#[test]
fn lengths_fibonacci_30() {
    let mut counts = [0u32; 256];
    for (s, f) in fibonacci(30).into_iter().enumerate() {
        counts[3 * s] = f as u32;
    }
    let (_, depth) = reference_huffman(&counts);
    assert_eq!(depth, 29, "unlimited Huffman of 30 Fibonacci counts is a chain");
    let lens = Huffman::code_lengths(&counts);
    check_lengths(&counts, &lens);
    assert_eq!(*lens.iter().max().unwrap(), 16);
    assert_eq!(cost(&counts, &lens), cost(&counts, &reference_limited(&counts, 16)));
}

#[test]
fn lengths_edge_histograms() {
    let mut counts = [0u32; 256];
    check_lengths(&counts, &Huffman::code_lengths(&counts));
    counts[7] = 5;
    check_lengths(&counts, &Huffman::code_lengths(&counts));
    counts[200] = 1;
    assert_eq!(Huffman::code_lengths(&counts)[7], 1);
    // all 256 equal: 8 bits each
    let lens = Huffman::code_lengths(&[9; 256]);
    assert!(lens.iter().all(|&l| l == 8));
    // counts near u32::MAX (scaled down first): still a valid code over the same symbols
    let mut rng = Rng(2);
    let big: [u32; 256] = std::array::from_fn(|_| (rng.next_u64() as u32) | 1);
    check_lengths(&big, &Huffman::code_lengths(&big));
    let mut skew = [0u32; 256];
    skew[0] = u32::MAX;
    skew[1..40].iter_mut().for_each(|c| *c = 1);
    check_lengths(&skew, &Huffman::code_lengths(&skew));
}

// ---------------------------------------------------------------------------------------------
// Round trips

#[test]
fn roundtrip_all_symbols_every_substream() {
    // block b of 256 holds every symbol once, rotated by b: every symbol visits every substream
    let rotated = |n: usize| (0..n).map(|i| ((i + i / 256) % 256) as u8).collect::<Vec<u8>>();
    let mut rng = Rng(3);
    let mut skewed = rotated(256 * 33 + 7);
    // plus a skewed tail so lengths vary: symbol 0 takes a third of the positions
    for s in skewed.iter_mut() {
        if rng.below(3) == 0 {
            *s = 0;
        }
    }
    let cases = [
        Case::new("uniform 256, rotated", 8, rotated(256 * 32)),
        Case::new("256 + skew", 8, skewed),
        Case::new("every symbol once", 8, (0..=255).collect()),
    ];
    let enc = roundtrip(&cases);
    assert_eq!(enc[0].0.params, 256);
    // 256 equally likely symbols: 8-bit codes, 1 byte per symbol plus the table
    assert_eq!(enc[0].1.len(), 4 * (8 + 32) + 256 * 32);
}

#[test]
fn roundtrip_lengths_of_block() {
    let mut rng = Rng(4);
    let geometric: Vec<f64> = (0..40).map(|k| 0.5f64.powi(k)).collect();
    let mut cases = Vec::new();
    for n in [0usize, 1, 2, 31, 32, 33, 63, 64, 65, 100, 1000, 4095] {
        cases.push(Case::new(format!("geometric n={n}"), 8, draw(&mut rng, n, &geometric)));
        cases.push(Case::new(format!("normal n={n}"), 8, normal_exponents(&mut rng, n)));
        cases.push(Case::new(
            format!("uniform n={n}"),
            8,
            (0..n).map(|_| rng.below(256) as u8).collect(),
        ));
        cases.push(Case::new(
            format!("f16 5-bit n={n}"),
            5,
            (0..n).map(|_| rng.below(3) as u8 * 7).collect(),
        ));
    }
    roundtrip(&cases);
}

#[test]
fn roundtrip_65537() {
    let mut rng = Rng(5);
    let mut two = vec![9u8; 65537];
    two[40_000] = 3;
    let cases = [
        Case::new("normal n=65537", 8, normal_exponents(&mut rng, 65537)),
        Case::new("two symbols, one rare, n=65537", 8, two),
    ];
    let enc = roundtrip(&cases);
    println!(
        "N(0,1) bf16 exponents, n = 65537: {} bytes = {:.4} bytes/symbol",
        enc[0].1.len(),
        enc[0].1.len() as f64 / 65537.0
    );
    // one bit per symbol plus the padding of the last word of each substream
    assert!(enc[1].1.len() <= 4 * (8 + 1) + 65537 / 8 + 4 * Huffman::SUBSTREAMS);
}

#[test]
fn roundtrip_length_limited() {
    let mut rng = Rng(6);
    // Fibonacci counts over 20 symbols: unlimited Huffman wants 19 bits; fp8-style 8-bit symbols
    let fib = shuffled(&mut rng, &fibonacci(20));
    let counts = counts_of(&fib);
    assert!(reference_huffman(&counts).1 > 16);
    assert_eq!(*Huffman::code_lengths(&counts).iter().max().unwrap(), 16);
    // the same counts on other symbols, in order (runs of one symbol)
    let mut runs: Vec<u8> = fib.iter().map(|&s| 255 - s).collect();
    runs.sort_unstable();
    roundtrip(&[
        Case::new("fibonacci 20", 8, fib),
        Case::new("fibonacci 20, sorted", 8, runs),
    ]);
}

#[test]
fn single_symbol_and_empty() {
    let mut cases = vec![Case::new("n=0", 8, vec![])];
    for n in [1usize, 31, 32, 33, 4095, 65537] {
        cases.push(Case::new(format!("constant n={n}"), 8, vec![(n % 251) as u8; n]));
    }
    cases.push(Case::new("0-bit symbols", 0, vec![0; 77]));
    let enc = roundtrip(&cases);
    for (c, (coded, bytes)) in cases.iter().zip(&enc) {
        assert!(bytes.is_empty(), "{}: {} bytes", c.name, bytes.len());
        let m = (!c.syms.is_empty()) as u16;
        assert_eq!(
            (coded.params, coded.params2),
            (m, c.syms.first().map_or(0, |&s| s as u32))
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Output space

#[test]
fn out_of_space() {
    let mut rng = Rng(7);
    let case = Case::new("normal", 8, normal_exponents(&mut rng, 3000));
    let full = encode_all::<32>(std::slice::from_ref(&case), &[1 << 16])
        .remove(0)
        .unwrap();
    let len = full.1.len();
    let caps = [0, 1, 4, 40, len / 2, len - 4, len - 1, len, len + 3];
    let cases: Vec<Case> = caps.iter().map(|_| Case::new("normal", 8, case.syms.clone())).collect();
    // per_warp checks that all lanes return the same
    for enc in [encode_all::<32>(&cases, &caps), encode_all::<64>(&cases, &caps)] {
        for (cap, r) in caps.iter().zip(enc) {
            match r {
                Ok(got) => {
                    assert!(*cap >= len);
                    assert_eq!(got, full);
                }
                Err(OutOfSpace { offset }) => assert!(*cap < len && offset <= len, "cap {cap}: offset {offset}"),
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Corruption

/// A small coded section with varied lengths: 150 geometric symbols (two partial steps).
fn small_frame() -> (Case, Frame) {
    let mut rng = Rng(8);
    let weights: Vec<f64> = (0..12).map(|k| 0.6f64.powi(k)).collect();
    let case = Case::new("small", 8, draw(&mut rng, 150, &weights));
    let (coded, bytes) = encode_all::<32>(std::slice::from_ref(&case), &[Huffman::max_coded_len(150, 8)])
        .remove(0)
        .unwrap();
    let f = frame(&case, &coded, &bytes);
    (case, f)
}

#[test]
fn truncation_every_length() {
    let (case, f) = small_frame();
    assert!(f.coded.len() > 40, "{} bytes", f.coded.len());
    let cut: Vec<Frame> = (0..f.coded.len())
        .map(|k| Frame {
            coded: f.coded[..k].to_vec(),
            ..frame_like(&f)
        })
        .collect();
    for (k, r) in decode_all::<32>(&cut).into_iter().enumerate() {
        assert!(
            matches!(r, Err(FrameError::Corrupt { .. })),
            "{}: prefix of {k} bytes decoded: {r:?}",
            case.name
        );
    }
    // and one word too many
    let mut long = frame_like(&f);
    long.coded.extend_from_slice(&[0; 4]);
    assert_eq!(
        decode_all::<64>(&[long]).remove(0),
        Err(corrupt(f.coded.len(), "words after the end of the substreams"))
    );
}

fn frame_like(f: &Frame) -> Frame {
    Frame {
        n: f.n,
        symbol_bits: f.symbol_bits,
        params: f.params,
        params2: f.params2,
        coded: f.coded.clone(),
    }
}

#[test]
fn bit_flips() {
    let (case, f) = small_frame();
    let mut flipped = Vec::new();
    for bit in 0..8 * f.coded.len() {
        let mut g = frame_like(&f);
        g.coded[bit / 8] ^= 1 << (bit % 8);
        flipped.push(g);
    }
    for p in 0..16 {
        flipped.push(Frame {
            params: f.params ^ (1 << p),
            ..frame_like(&f)
        });
    }
    for p in [0, 1, 7, 31] {
        flipped.push(Frame {
            params2: f.params2 ^ (1 << p),
            ..frame_like(&f)
        });
    }
    let (mut errors, mut wrong) = (0, 0);
    for r in decode_all::<32>(&flipped) {
        match r {
            Err(FrameError::Corrupt { offset, .. }) => {
                assert!(offset <= f.coded.len());
                errors += 1;
            }
            Err(e) => panic!("unexpected error {e:?}"),
            Ok(syms) => wrong += (syms != case.syms) as usize,
        }
    }
    println!(
        "{} flips of {} coded bytes: {errors} rejected, {wrong} decoded to other symbols",
        flipped.len(),
        f.coded.len()
    );
    assert!(errors > flipped.len() / 2);
}

#[test]
fn random_streams_after_a_valid_table() {
    let (_, f) = small_frame();
    let table = 4 * (8 + (f.params as usize).div_ceil(8));
    let mut rng = Rng(10);
    let mut frames = Vec::new();
    for k in 0..48 {
        let mut g = frame_like(&f);
        g.coded.truncate(table);
        let words = [0, 1, 5, 31, 32, 40, 64, 100][k % 8];
        for _ in 0..words {
            let word = match k % 3 {
                0 => rng.next_u64() as u32,
                1 => u32::MAX,
                _ => 0,
            };
            g.coded.extend_from_slice(&word.to_le_bytes());
        }
        g.n = rng.below(4 * words as u64 + 40) as usize;
        frames.push(g);
    }
    for (r32, r64) in decode_all::<32>(&frames).into_iter().zip(decode_all::<64>(&frames)) {
        assert_eq!(r32, r64);
        if let Err(FrameError::Corrupt { offset, .. }) = r32 {
            assert!(offset <= table + 400);
        }
    }
}

fn corrupt(offset: usize, reason: &'static str) -> FrameError {
    FrameError::Corrupt {
        codec: zipcoll_device::codec::CodecId::Huffman,
        offset,
        reason,
    }
}

#[test]
fn corrupt_reasons() {
    let (_, f) = small_frame();
    // the table: bitmap (8 words) and the nibbles of the used symbols
    assert!(f.params >= 5);
    let table = 4 * (8 + (f.params as usize).div_ceil(8));
    let mut cases = Vec::new();
    let mut want = Vec::new();
    let mut add = |g: Frame, e: FrameError| {
        cases.push(g);
        want.push(e);
    };
    add(
        Frame {
            params: 257,
            ..frame_like(&f)
        },
        corrupt(0, "used-symbol count does not fit the alphabet and length"),
    );
    add(
        Frame { n: 3, ..frame_like(&f) },
        corrupt(0, "used-symbol count does not fit the alphabet and length"),
    );
    add(
        Frame {
            params: 0,
            ..frame_like(&f)
        },
        corrupt(0, "used-symbol count does not fit the alphabet and length"),
    );
    add(
        Frame {
            params: 1,
            ..frame_like(&f)
        },
        corrupt(0, "coded bytes after a block of one symbol"),
    );
    add(
        Frame {
            params: 1,
            params2: 300,
            coded: vec![],
            ..frame_like(&f)
        },
        corrupt(0, "single symbol outside the alphabet"),
    );
    add(
        Frame {
            params2: 1,
            ..frame_like(&f)
        },
        corrupt(0, "params2 set with two or more used symbols"),
    );
    add(
        Frame {
            params: f.params - 1,
            ..frame_like(&f)
        },
        corrupt(0, "bitmap disagrees with the used-symbol count"),
    );
    let mut g = frame_like(&f);
    g.coded[4 * 8] ^= 1; // first code length one off: Kraft sum no longer 1
    add(g, corrupt(32, "code lengths are not a complete prefix code"));
    let mut g = frame_like(&f);
    g.coded.truncate(table + 2);
    add(g, corrupt(table, "coded section does not end on a word"));
    let mut g = frame_like(&f);
    g.coded.truncate(table + 4);
    add(g, corrupt(table + 4, "fewer substream bits than symbols"));
    let n5 = Frame {
        n: 5,
        symbol_bits: 5,
        params: 2,
        params2: 0,
        coded: vec![],
    };
    let mut g = Frame {
        symbol_bits: 4,
        coded: [0x8000_0001u32, 0].iter().flat_map(|w| w.to_le_bytes()).collect(),
        ..n5
    };
    add(g, corrupt(0, "bitmap names a symbol outside the alphabet"));
    g = Frame {
        n: 5,
        symbol_bits: 5,
        params: 2,
        params2: 0,
        coded: vec![],
    };
    // symbols 0 and 1, both length 1 (nibbles 0), a padding nibble set
    g.coded = [0b11u32, 0x100].iter().flat_map(|w| w.to_le_bytes()).collect();
    add(g, corrupt(4, "nonzero padding in the code-length table"));
    // symbols 0 and 1 with 1-bit codes: 5 symbols in substreams 0..5, one word each
    let good: Vec<u8> = [0b11u32, 0, 0, 0, 1 << 31, 0, 1 << 31]
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .collect();
    add(
        Frame {
            n: 5,
            symbol_bits: 5,
            params: 2,
            params2: 0,
            coded: good.clone(),
        },
        corrupt(usize::MAX, "ok"),
    );
    let mut g = Frame {
        n: 5,
        symbol_bits: 5,
        params: 2,
        params2: 0,
        coded: good.clone(),
    };
    g.coded[4 * 4] = 1; // substream 2's word: padding bit set
    add(g, corrupt(16, "nonzero padding after a substream's last code word"));
    let g = Frame {
        n: 6,
        symbol_bits: 5,
        params: 2,
        params2: 0,
        coded: good.clone(),
    };
    add(g, corrupt(28, "a substream runs past the coded section"));
    let got32 = decode_all::<32>(&cases);
    let got64 = decode_all::<64>(&cases);
    for (i, ((a, b), e)) in got32.into_iter().zip(got64).zip(want).enumerate() {
        if e == corrupt(usize::MAX, "ok") {
            assert_eq!(a, Ok(vec![0, 0, 1, 0, 1]), "case {i}");
        } else {
            assert_eq!(a, Err(e), "case {i}");
        }
        assert_eq!(a, b, "case {i}: 32 and 64 lanes differ");
    }
}

// ---------------------------------------------------------------------------------------------
// Compression

#[test]
fn normal_bf16_exponents() {
    let mut rng = Rng(9);
    let n = 16384;
    let syms = normal_exponents(&mut rng, n);
    let counts = counts_of(&syms);
    let entropy: f64 = counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = c as f64 / n as f64;
            -p * p.log2()
        })
        .sum();
    let enc = roundtrip(&[Case::new("normal bf16 exponents", 8, syms)]);
    let (coded, bytes) = &enc[0];
    let per_symbol = bytes.len() as f64 / n as f64;
    println!(
        "N(0,1) bf16 exponents, n = {n}: {} used symbols, entropy {entropy:.3} bits; Huffman {} bytes = {per_symbol:.4} bytes/symbol ({:.3} bits), table {} bytes",
        coded.params,
        bytes.len(),
        8.0 * per_symbol,
        4 * (8 + (coded.params as usize).div_ceil(8)),
    );
    assert!(8.0 * per_symbol < entropy + 0.15);
}
