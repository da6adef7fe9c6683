//! Symbol coders on their own (no frame): symbols of 1, 3, 5 and 8 bits and assorted
//! distributions round-trip on 32 and 64 lanes with the same bytes, `max_coded_len` is a true
//! bound, every symbol is handed to `put` exactly once, and a buffer one byte short of what
//! the coder needs gives `OutOfSpace` on every lane.

use crate::harness::per_warp;
use crate::util::{Rng, SharedBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use zipcoll_device::codec::{Coded, SymbolCoder};
use zipcoll_device::frame::FrameError;
use zipcoll_targets::Warp;

/// Symbols of `bits` bits: `kind` 0 uniform, 1 constant, 2 N(0,1)-like exponents, 3 mostly
/// one value with rare outliers.
fn symbols(bits: u32, kind: u32, n: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng(seed);
    let top = (1u32 << bits) - 1;
    let c = rng.below(top as u64 + 1) as u32;
    (0..n)
        .map(|_| {
            let s = match kind {
                0 => rng.next_u32() & top,
                1 => c,
                2 => {
                    let x = rng.normal().abs().max(1e-30);
                    (top as f64 * 0.6 + x.log2().floor()).clamp(0.0, top as f64) as u32
                }
                _ => {
                    if rng.below(40) == 0 {
                        rng.next_u32() & top
                    } else {
                        c
                    }
                }
            };
            s as u8
        })
        .collect()
}

struct Case {
    bits: u32,
    syms: Vec<u8>,
}

fn encode_cases<const W: u32, C: SymbolCoder>(cases: &[Case], lens: &[usize]) -> Vec<(Result<Coded, ()>, Vec<u8>)> {
    let bufs: Vec<SharedBuf> = lens.iter().map(|l| SharedBuf::new(*l, 0xA5)).collect();
    let items: Vec<(&Case, &SharedBuf)> = cases.iter().zip(&bufs).collect();
    let r = per_warp::<W, _, _>(&items, |w, (c, b)| {
        C::encode(w, c.syms.len(), c.bits, |i| c.syms[i], b.out()).map_err(|_| ())
    });
    r.into_iter().zip(bufs).map(|(r, b)| (r, b.into_vec())).collect()
}

/// A case to decode: the symbols, what the encoder wrote, and per symbol `256 x puts + symbol`.
type DecodeItem<'a> = (&'a Case, &'a (Coded, Vec<u8>), Vec<AtomicU32>);

fn decode_case<C: SymbolCoder, W: Warp>(w: W, (c, (k, bytes), seen): &DecodeItem<'_>) -> Result<(), FrameError> {
    C::decode(w, c.syms.len(), c.bits, k.params, k.params2, bytes, |i, s| {
        seen[i].fetch_add(256 + s as u32, Ordering::Relaxed);
    })
}

pub fn bound_and_roundtrip<C: SymbolCoder>() {
    let mut cases = Vec::new();
    for bits in 1..=8u32 {
        for (k, n) in [0usize, 1, 31, 32, 33, 63, 64, 65, 100, 1000, 4097]
            .into_iter()
            .enumerate()
        {
            for kind in 0..4 {
                cases.push(Case {
                    bits,
                    syms: symbols(bits, kind, n, (bits * 100 + kind) as u64 + k as u64 * 7),
                });
            }
        }
    }
    let max: Vec<usize> = cases.iter().map(|c| C::max_coded_len(c.syms.len(), c.bits)).collect();
    let e32 = encode_cases::<32, C>(&cases, &max);
    let e64 = encode_cases::<64, C>(&cases, &max);
    let mut coded = Vec::new();
    for (i, ((a, b), c)) in e32.iter().zip(&e64).zip(&cases).enumerate() {
        let ca =
            a.0.unwrap_or_else(|_| panic!("{:?} case {i}: OutOfSpace within max_coded_len", C::ID));
        assert_eq!(a.0, b.0, "{:?} case {i}: 32 and 64 lanes disagree", C::ID);
        assert!(
            ca.len <= max[i],
            "{:?} case {i}: {} bytes > max_coded_len {}",
            C::ID,
            ca.len,
            max[i]
        );
        assert_eq!(
            a.1[..ca.len],
            b.1[..ca.len],
            "{:?} case {i} (bits {}): bytes differ",
            C::ID,
            c.bits
        );
        coded.push((ca, a.1[..ca.len].to_vec()));
    }
    // Decode on both widths: every symbol exactly once, equal to the input.
    let items: Vec<DecodeItem<'_>> = cases
        .iter()
        .zip(&coded)
        .map(|(c, k)| (c, k, (0..c.syms.len()).map(|_| AtomicU32::new(0)).collect()))
        .collect();
    let check = |lanes: u32, results: Vec<Result<(), FrameError>>| {
        for (i, (r, (c, _, seen))) in results.iter().zip(&items).enumerate() {
            assert_eq!(*r, Ok(()), "{:?} case {i} decode on {lanes} lanes", C::ID);
            for (j, s) in seen.iter().enumerate() {
                let v = s.swap(0, Ordering::Relaxed);
                assert_eq!(v >> 8, 1, "{:?} case {i}: symbol {j} put {} times", C::ID, v >> 8);
                assert_eq!(v as u8, c.syms[j], "{:?} case {i} (bits {}): symbol {j}", C::ID, c.bits);
            }
        }
    };
    check(32, per_warp::<32, _, _>(&items, decode_case::<C, _>));
    check(64, per_warp::<64, _, _>(&items, decode_case::<C, _>));
    // One byte short of what was needed: OutOfSpace on every lane.
    let short: Vec<usize> = coded.iter().map(|(c, _)| c.len.saturating_sub(1)).collect();
    for (i, (r, _)) in encode_cases::<32, C>(&cases, &short).iter().enumerate() {
        if coded[i].0.len > 0 {
            assert_eq!(
                *r,
                Err(()),
                "{:?} case {i}: fits in {} bytes, less than it used",
                C::ID,
                short[i]
            );
        }
    }
}

/// ExpWindow decodes only what its encoder writes: a section laid out exactly as the format
/// says but with a `k` above `MAX_K`, a window past the symbols, a nonzero padding code, an
/// escaped symbol that has a code, or one wider than the symbols is `Corrupt` on every lane
/// (32 and 64), never a second encoding of the same symbols; the same layout within the
/// encoder's rules decodes.
#[test]
fn exp_window_rejects_what_the_encoder_never_writes() {
    use zipcoll_device::codec::exp_window::MAX_K;
    use zipcoll_device::codec::{CodecId, ExpWindow};
    // (what, symbol bits, symbols, k, base, codes, padding code, escapes, decodes)
    type Crafted = (&'static str, u32, usize, u32, u32, Vec<u32>, u32, Vec<u8>, bool);
    let n = 40;
    // symbols 10 + (i % 3), and symbol 3 (escaped) at 7
    let mut codes: Vec<u32> = (0..n).map(|i| (i % 3) as u32).collect();
    codes[7] = 3;
    let cases: Vec<Crafted> = vec![
        ("within the rules", 5, n, 2, 10, codes.clone(), 0, vec![3], true),
        (
            "k above MAX_K",
            5,
            n,
            MAX_K + 1,
            0,
            (0..n as u32).map(|i| i % 31).collect(),
            0,
            vec![],
            false,
        ),
        ("k of 200", 5, n, 200, 0, vec![0; n], 0, vec![], false),
        ("window past the symbols", 5, n, 2, 30, vec![0; n], 0, vec![], false),
        ("nonzero padding code", 5, n, 2, 10, codes.clone(), 1, vec![3], false),
        (
            "escape inside the window",
            5,
            n,
            2,
            10,
            codes.clone(),
            0,
            vec![11],
            false,
        ),
        (
            "escape wider than the symbols",
            5,
            n,
            2,
            10,
            codes.clone(),
            0,
            vec![40],
            false,
        ),
        (
            "1-bit symbols, a window wider",
            1,
            n,
            2,
            0,
            (0..n as u32).map(|i| i % 2).collect(),
            0,
            vec![],
            true,
        ),
        (
            "1-bit symbols, a code of 2",
            1,
            n,
            2,
            0,
            (0..n as u32).map(|i| i % 3).collect(),
            0,
            vec![],
            false,
        ),
        ("1-bit symbols, window from 1", 1, n, 2, 1, vec![0; n], 0, vec![], false),
    ];
    let items: Vec<(Crafted, Vec<u8>)> = cases
        .into_iter()
        .map(|c| {
            let bytes = crate::common::sections::exp_window(&c.5, c.6, c.3.min(8), &c.7);
            (c, bytes)
        })
        .collect();
    let decode = |w: zipcoll_targets::sim::SimWarp<32>, (c, bytes): &(Crafted, Vec<u8>)| {
        let params = (c.4 as u16) | ((c.3 as u16) << 8);
        ExpWindow::decode(w, c.2, c.1, params, c.7.len() as u32, bytes, |_, _| {})
    };
    let decode64 = |w: zipcoll_targets::sim::SimWarp<64>, (c, bytes): &(Crafted, Vec<u8>)| {
        let params = (c.4 as u16) | ((c.3 as u16) << 8);
        ExpWindow::decode(w, c.2, c.1, params, c.7.len() as u32, bytes, |_, _| {})
    };
    let r32 = per_warp::<32, _, _>(&items, decode);
    let r64 = per_warp::<64, _, _>(&items, decode64);
    for ((c, _), (a, b)) in items.iter().zip(r32.iter().zip(&r64)) {
        assert_eq!(a, b, "{}: 32 and 64 lanes disagree", c.0);
        if c.8 {
            assert_eq!(*a, Ok(()), "{}", c.0);
        } else {
            assert!(
                matches!(
                    a,
                    Err(FrameError::Corrupt {
                        codec: CodecId::ExpWindow,
                        ..
                    })
                ),
                "{}: {a:?}",
                c.0
            );
        }
    }
}
