//! Lossy calls (`zipcoll_host::comm::Lossy`) on the simulator, ranks as threads: the bound
//! each guarantees, element by element, against the exact result computed in `f64`, and
//! `Communicator::lossy_counts` saying whether each call quantized.
//!
//! | test | ranks | checks |
//! |------|-------|--------|
//! | `error_bounded_all_reduce_stays_within_k_eb_on_2_to_8_ranks` | 2..=8 | sum (ring and two-shot, in place and out of place), f32 / bf16 / f16, abs and rel bounds: `|y - S| <= k eb + ulp(y)`, quantized (counted, and some error > eb / 16) |
//! | `averages_maxima_minima_and_reduce_scatter_within_eb` | 3, 5 | avg, max, min within `eb + ulp`; reduce_scatter within `k eb`; reduce leaves non-root outputs untouched |
//! | `moves_carry_each_source_ranks_scale` | 4 | all_gather (in place too), broadcast, all_to_all under `rel`: each source's block within `rel x` its own range (ranks of magnitudes 10^r) |
//! | `nan_infinity_or_a_too_fine_bound_travel_exactly` | 3 | a NaN or an infinity on one rank, a bound too fine for the 8-bit levels, or a QSGD bucket whose norm is past `f32` or too small for its levels: the result is bit-identical to the exact call's, and counted as such |
//! | `an_absolute_bound_quantizes_while_every_level_fits` | 2 | an absolute bound (one pass, no statistics): a largest level of exactly 127 / k (sum) or 127 (max) quantizes within the bound, one more travels exactly |
//! | `qsgd_all_reduce_is_unbiased_and_reproducible` | 4 | the mean of 300 calls within 5 standard errors of the exact sum on every element, and not for a shifted target; each call within `k x norm / s`; the same seed gives the same bytes on a new communicator |
//! | `policies_a_call_cannot_serve` | 2 | a call's own lossy policy on i32, with prod, QSGD with max, QSGD whose sum of levels exceeds 127: `InvalidArgument`, the communicator still usable; the communicator's policy leaves such calls exact |

use zipcoll_device::dtype::{Bf16, F32Exact, F16};
use zipcoll_host::comm::{run_sim, Algorithm, Bound, Communicator, Config, Data, Lossy, LossyCounts, Options};
use zipcoll_host::{testdata, DType, Error, ReduceOp, Result};

/// `f32` values of `dtype` bytes.
fn values(dtype: DType, bytes: &[u8]) -> Vec<f32> {
    match dtype {
        DType::F32 => bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
            .collect(),
        DType::Bf16 => bytes
            .chunks_exact(2)
            .map(|b| Bf16::to_f32(u16::from_le_bytes([b[0], b[1]])))
            .collect(),
        DType::F16 => bytes
            .chunks_exact(2)
            .map(|b| F16::to_f32(u16::from_le_bytes([b[0], b[1]])))
            .collect(),
        other => panic!("{other:?}"),
    }
}

/// One unit in the last place of `y` in `dtype`.
fn ulp(dtype: DType, y: f32) -> f64 {
    let up = match dtype {
        DType::F32 => f32::from_bits(y.abs().to_bits() + 1),
        DType::Bf16 => Bf16::to_f32(Bf16::from_f32(y.abs()) + 1),
        DType::F16 => F16::to_f32(F16::from_f32(y.abs()) + 1),
        other => panic!("{other:?}"),
    };
    (up as f64 - y.abs() as f64).abs()
}

/// The bytes of `v` rounded to `dtype`.
fn bytes_of(dtype: DType, v: &[f32]) -> Vec<u8> {
    v.iter()
        .flat_map(|&x| match dtype {
            DType::F32 => x.to_le_bytes().to_vec(),
            DType::Bf16 => Bf16::from_f32(x).to_le_bytes().to_vec(),
            DType::F16 => F16::from_f32(x).to_le_bytes().to_vec(),
            other => panic!("{other:?}"),
        })
        .collect()
}

/// Rank `r`'s input: `n` normal values of `dtype` times `scale`, with a -0.0 and a subnormal
/// among them.
fn input(dtype: DType, n: usize, r: usize, scale: f32, seed: u64) -> Vec<u8> {
    let mut v = values(dtype, &testdata::normal(dtype, n, seed * 131 + r as u64));
    for x in &mut v {
        *x *= scale;
    }
    if n > 3 {
        v[1] = -0.0;
        v[2] = f32::from_bits(5); // a subnormal (flushed to 0 by bf16 / f16's rounding)
    }
    bytes_of(dtype, &v)
}

/// The largest magnitude among `xs`.
fn biggest(xs: &[Vec<f32>]) -> f32 {
    xs.iter().flatten().fold(0.0f32, |m, &v| m.max(v.abs()))
}

/// A call, the same on every rank, on its data.
type Call<'a> = &'a (dyn Fn(&Communicator, Data<'_>) -> Result<()> + Sync + 'a);

/// Runs `call` on every rank of a simulated communicator of `k` ranks, rank `r` with
/// `inputs[r]` and an output of `out_len` bytes (in place when `in_place` gives the input's
/// byte offset in it); each rank's output bytes and rank 0's [`LossyCounts`] after the call.
fn run(
    k: usize,
    config: Config,
    inputs: &[Vec<u8>],
    out_len: usize,
    in_place: Option<&(dyn Fn(usize) -> usize + Sync)>,
    call: Call<'_>,
) -> (Vec<Vec<u8>>, LossyCounts) {
    let outs = run_sim(k, config, |comm| {
        let mine = &inputs[comm.rank()];
        let out = match in_place {
            Some(at) => {
                let at = at(comm.rank());
                let mut all = vec![0xA5; out_len.max(at + mine.len())];
                all[at..at + mine.len()].copy_from_slice(mine);
                let mut buf = comm.alloc(all.len())?;
                buf.copy_from_host(&all)?;
                call(&comm, Data::InPlace(&mut buf))?;
                comm.synchronize()?;
                buf.to_host()?[..out_len].to_vec()
            }
            None => {
                let mut src = comm.alloc(mine.len())?;
                src.copy_from_host(mine)?;
                let mut dst = comm.alloc(out_len)?;
                dst.copy_from_host(&vec![0xA5; out_len])?;
                call(
                    &comm,
                    Data::OutOfPlace {
                        src: &src,
                        dst: &mut dst,
                    },
                )?;
                comm.synchronize()?;
                dst.to_host()?
            }
        };
        Ok((out, comm.lossy_counts()))
    })
    .unwrap();
    let counts = outs[0].1;
    (outs.into_iter().map(|o| o.0).collect(), counts)
}

/// The counts after one call that quantized.
const QUANTIZED: LossyCounts = LossyCounts {
    quantized: 1,
    not_finite: 0,
    too_fine: 0,
    escaped: 0,
};

/// The counts after one call that quantized with `escaped` buckets escaping.
fn escaping(escaped: u64) -> LossyCounts {
    LossyCounts { escaped, ..QUANTIZED }
}

fn opts(lossy: Lossy) -> Options {
    Options {
        lossy: Some(lossy),
        ..Options::default()
    }
}

/// Checks `got` against `want` (exact, f64) within `allow + ulp` per element; the largest
/// error.
fn check_within(dtype: DType, got: &[f32], want: &[f64], allow: f64, what: &str) -> f64 {
    assert_eq!(got.len(), want.len(), "{what}");
    let mut worst = 0.0f64;
    for (i, (&y, &s)) in got.iter().zip(want).enumerate() {
        let err = (y as f64 - s).abs();
        assert!(
            err <= allow + ulp(dtype, y),
            "{what}: element {i}: {y:e} for {s:e}, error {err:e} > {allow:e} + ulp"
        );
        worst = worst.max(err);
    }
    worst
}

#[test]
fn error_bounded_all_reduce_stays_within_k_eb_on_2_to_8_ranks() {
    let n = 3000;
    for k in 2..=8 {
        for (dtype, relative) in [
            (DType::F32, false),
            (DType::F32, true),
            (DType::Bf16, false),
            (DType::F16, true),
        ] {
            let inputs: Vec<Vec<u8>> = (0..k).map(|r| input(dtype, n, r, 3.0, k as u64)).collect();
            let xs: Vec<Vec<f32>> = inputs.iter().map(|b| values(dtype, b)).collect();
            let exact: Vec<f64> = (0..n).map(|i| xs.iter().map(|x| x[i] as f64).sum()).collect();
            // bounds coarse enough that a sum of k levels fits the 8-bit levels (|q| <= 127 / k)
            let (lo, hi) = xs
                .iter()
                .flatten()
                .fold((f32::MAX, f32::MIN), |(l, h), &v| (l.min(v), h.max(v)));
            let (bound, eb) = match relative {
                false => {
                    let eb = biggest(&xs) * k as f32 / 200.0;
                    (Bound::Abs(eb), eb as f64)
                }
                true => {
                    let rel = k as f32 / 100.0;
                    (Bound::Rel(rel), (rel * (hi - lo)) as f64)
                }
            };
            for (algorithm, in_place) in [
                (Algorithm::Ring, false),
                (Algorithm::TwoShot, true),
                (Algorithm::Ring, true),
            ] {
                let o = Options {
                    algorithm,
                    ..opts(Lossy::ErrorBound(bound))
                };
                let at = |_: usize| 0;
                let (outs, counts) = run(
                    k,
                    Config::sim(),
                    &inputs,
                    n * dtype.size_bytes(),
                    in_place.then_some(&at),
                    &|c, d| c.all_reduce(d, n, dtype, ReduceOp::Sum, o),
                );
                let what = format!("{k} ranks {dtype:?} {bound:?} {algorithm:?} in place {in_place}");
                assert_eq!(counts, QUANTIZED, "{what}");
                let mut worst = 0.0;
                for out in &outs {
                    worst = check_within(dtype, &values(dtype, out), &exact, k as f64 * eb, &what);
                }
                assert!(outs.iter().all(|o| o == &outs[0]), "{what}: ranks differ");
                assert!(
                    worst > eb / 16.0,
                    "{what}: largest error {worst:e}, bound {eb:e}: was it quantized?"
                );
            }
        }
    }
}

#[test]
fn averages_maxima_minima_and_reduce_scatter_within_eb() {
    let n = 2000;
    let dtype = DType::F32;
    for k in [3, 5] {
        let inputs: Vec<Vec<u8>> = (0..k).map(|r| input(dtype, n, r, 2.0, 7)).collect();
        let xs: Vec<Vec<f32>> = inputs.iter().map(|b| values(dtype, b)).collect();
        let eb = biggest(&xs) * k as f32 / 200.0;
        let column = |i: usize| xs.iter().map(move |x| x[i] as f64);
        let o = opts(Lossy::ErrorBound(Bound::Abs(eb)));
        let sums: Vec<f64> = (0..n).map(|i| column(i).sum()).collect();
        for (op, want) in [
            (ReduceOp::Avg, sums.iter().map(|s| s / k as f64).collect::<Vec<_>>()),
            (
                ReduceOp::Max,
                (0..n).map(|i| column(i).fold(f64::MIN, f64::max)).collect(),
            ),
            (
                ReduceOp::Min,
                (0..n).map(|i| column(i).fold(f64::MAX, f64::min)).collect(),
            ),
        ] {
            let (outs, counts) = run(k, Config::sim(), &inputs, n * 4, None, &|c, d| {
                c.all_reduce(d, n, dtype, op, o)
            });
            assert_eq!(counts, QUANTIZED, "{k} ranks {op:?}");
            for out in &outs {
                check_within(
                    dtype,
                    &values(dtype, out),
                    &want,
                    eb as f64,
                    &format!("{k} ranks {op:?}"),
                );
            }
        }
        // reduce_scatter: rank r's block r of the sum
        let m = n / k;
        let (outs, counts) = run(k, Config::sim(), &inputs, m * 4, None, &|c, d| {
            c.reduce_scatter(d, m, dtype, ReduceOp::Sum, o)
        });
        assert_eq!(counts, QUANTIZED, "reduce_scatter");
        for (r, out) in outs.iter().enumerate() {
            let what = format!("{k} ranks reduce_scatter");
            check_within(
                dtype,
                &values(dtype, out),
                &sums[r * m..(r + 1) * m],
                k as f64 * eb as f64,
                &what,
            );
        }
        // reduce to root 1: the others' outputs keep their bytes
        let (outs, counts) = run(k, Config::sim(), &inputs, n * 4, None, &|c, d| {
            c.reduce(d, n, dtype, ReduceOp::Sum, 1, o)
        });
        assert_eq!(counts, QUANTIZED, "reduce");
        check_within(dtype, &values(dtype, &outs[1]), &sums, k as f64 * eb as f64, "reduce");
        for (r, out) in outs.iter().enumerate().filter(|(r, _)| *r != 1) {
            assert!(out.iter().all(|&b| b == 0xA5), "reduce: rank {r}'s output was written");
        }
    }
}

#[test]
fn moves_carry_each_source_ranks_scale() {
    let (k, n, rel) = (4, 1500, 1e-2f32);
    let dtype = DType::F32;
    // rank r's values ~ 10^r: one scale for all would give rank 0 an error of ~ 1000 x its own bound
    let inputs: Vec<Vec<u8>> = (0..k).map(|r| input(dtype, n, r, 10f32.powi(r as i32), 3)).collect();
    let xs: Vec<Vec<f32>> = inputs.iter().map(|b| values(dtype, b)).collect();
    let eb_of = |x: &[f32]| {
        let (lo, hi) = x
            .iter()
            .fold((f32::INFINITY, f32::NEG_INFINITY), |(l, h), &v| (l.min(v), h.max(v)));
        (rel * (hi - lo)) as f64
    };
    let o = opts(Lossy::ErrorBound(Bound::Rel(rel)));
    // all_gather: block r from rank r
    let (outs, counts) = run(k, Config::sim(), &inputs, k * n * 4, None, &|c, d| {
        c.all_gather(d, n, dtype, o)
    });
    assert_eq!(counts, QUANTIZED, "all_gather");
    for out in &outs {
        let got = values(dtype, out);
        for (r, x) in xs.iter().enumerate() {
            let want: Vec<f64> = x.iter().map(|&v| v as f64).collect();
            let worst = check_within(
                dtype,
                &got[r * n..(r + 1) * n],
                &want,
                eb_of(x),
                &format!("all_gather block {r}"),
            );
            assert!(worst > eb_of(x) / 16.0, "all_gather block {r}: not quantized");
        }
    }
    // in place too: rank r's contribution at block r
    let at = |r: usize| r * n * 4;
    let (in_place, _) = run(k, Config::sim(), &inputs, k * n * 4, Some(&at), &|c, d| {
        c.all_gather(d, n, dtype, o)
    });
    assert_eq!(in_place, outs, "all_gather in place");
    // broadcast from root 2
    let (outs, counts) = run(k, Config::sim(), &inputs, n * 4, None, &|c, d| {
        c.broadcast(d, n, dtype, 2, o)
    });
    assert_eq!(counts, QUANTIZED, "broadcast");
    let want: Vec<f64> = xs[2].iter().map(|&v| v as f64).collect();
    for out in &outs {
        check_within(dtype, &values(dtype, out), &want, eb_of(&xs[2]), "broadcast");
    }
    // all_to_all: rank q's block r is rank r's block q
    let m = n / k;
    let blocks: Vec<Vec<u8>> = inputs.iter().map(|b| b[..k * m * 4].to_vec()).collect();
    let (outs, counts) = run(k, Config::sim(), &blocks, k * m * 4, None, &|c, d| {
        c.all_to_all(d, m, dtype, o)
    });
    assert_eq!(counts, QUANTIZED, "all_to_all");
    for (q, out) in outs.iter().enumerate() {
        let got = values(dtype, out);
        for (r, x) in xs.iter().enumerate() {
            let want: Vec<f64> = x[q * m..(q + 1) * m].iter().map(|&v| v as f64).collect();
            let what = format!("all_to_all {r} -> {q}");
            check_within(dtype, &got[r * m..(r + 1) * m], &want, eb_of(&x[..k * m]), &what);
        }
    }
}

#[test]
fn a_too_fine_bound_travels_exactly() {
    let (k, n) = (3, 1000);
    let dtype = DType::F32;
    let clean: Vec<Vec<u8>> = (0..k).map(|r| input(dtype, n, r, 1.0, 11)).collect();
    let with = |r: usize, at: usize, v: f32| {
        let mut inputs = clean.clone();
        inputs[r][4 * at..4 * at + 4].copy_from_slice(&v.to_le_bytes());
        inputs
    };
    let too_fine = LossyCounts {
        too_fine: 1,
        ..LossyCounts::default()
    };
    let qsgd = Lossy::Qsgd {
        bits: 4,
        bucket: 64,
        seed: 1,
    };
    // two elements of 3e38 in a bucket: a norm of 4.2e38, past f32 (the exact sum overflows)
    let huge = {
        let mut inputs = with(1, 70, 3e38);
        inputs[1][4 * 71..4 * 72].copy_from_slice(&(-3e38f32).to_le_bytes());
        inputs
    };
    // a bucket of the smallest subnormals on every rank: `levels / norm` overflows
    let tiny = {
        let mut inputs = clean.clone();
        for input in &mut inputs {
            for i in 128..192 {
                input[4 * i..4 * i + 4].copy_from_slice(&(i as u32 - 127).to_le_bytes());
            }
        }
        inputs
    };
    for (what, inputs, lossy, counted) in [
        (
            "a bound too fine for the range",
            clean.clone(),
            Lossy::ErrorBound(Bound::Abs(1e-3)),
            too_fine,
        ),
        (
            "a relative bound too fine",
            clean.clone(),
            Lossy::ErrorBound(Bound::Rel(1e-4)),
            too_fine,
        ),
        ("a QSGD norm past f32", huge, qsgd, too_fine),
        ("a QSGD norm too small for its levels", tiny, qsgd, too_fine),
    ] {
        let sum = |lossy: Lossy| {
            run(k, Config::sim(), &inputs, n * 4, None, &|c, d| {
                c.all_reduce(d, n, dtype, ReduceOp::Sum, opts(lossy))
            })
        };
        let (got, counts) = sum(lossy);
        assert_eq!(counts, counted, "{what}");
        assert_eq!(got, sum(Lossy::Exact).0, "{what}");
        let gather = |lossy: Lossy| {
            run(k, Config::sim(), &inputs, k * n * 4, None, &|c, d| {
                c.all_gather(d, n, dtype, opts(lossy))
            })
        };
        let (g, counts) = gather(lossy);
        assert_eq!(counts, counted, "{what}: all_gather");
        assert_eq!(g[0], inputs.concat(), "{what}: all_gather is the inputs");
    }
}

/// Whether `y` is `e` where `e` is not finite (the same NaN bits under `bitwise`, else any
/// NaN; the same infinity), else within `allow` plus two ulps of it.
fn matches_exact(y: f32, e: f32, allow: f64, bitwise: bool) -> bool {
    match (e.is_nan(), e.is_infinite()) {
        (true, _) if bitwise => y.to_bits() == e.to_bits(),
        (true, _) => y.is_nan(),
        (false, true) => y == e,
        _ => (y as f64 - e as f64).abs() <= allow + 2.0 * ulp(DType::F32, e),
    }
}

#[test]
fn nan_infinity_and_huge_values_escape_their_buckets() {
    // 8 buckets of 4096 (the bounds' statistics buckets) and a part: one escaping bucket is
    // an eighth of the elements
    let (k, n) = (3, 8 * 4096 + 100);
    let dtype = DType::F32;
    let clean: Vec<Vec<u8>> = (0..k).map(|r| input(dtype, n, r, 1.0, 13)).collect();
    let nan = f32::from_bits(0x7FC0_1234);
    let put = |inputs: &mut [Vec<u8>], r: usize, at: usize, v: f32| {
        inputs[r][4 * at..4 * at + 4].copy_from_slice(&v.to_le_bytes());
    };
    let qsgd = Lossy::Qsgd {
        bits: 4,
        bucket: 64,
        seed: 1,
    };
    let abs = Lossy::ErrorBound(Bound::Abs(0.1));
    let rel = Lossy::ErrorBound(Bound::Rel(0.01));
    // (what, policy, the values put in (rank, element, value), and the escaping buckets of
    // each source rank)
    type Case<'a> = (&'a str, Lossy, Vec<(usize, usize, f32)>, [&'a [usize]; 3]);
    let cases: [Case<'_>; 4] = [
        (
            "abs: a NaN, an infinity in the last part, a value beyond the levels",
            abs,
            vec![(1, 4096 + 17, nan), (2, n - 1, f32::INFINITY), (0, 2 * 4096 + 5, 1e30)],
            [&[2], &[1], &[8]],
        ),
        (
            "rel: an infinity",
            rel,
            vec![(2, 3, f32::NEG_INFINITY)],
            [&[], &[], &[0]],
        ),
        (
            "QSGD: NaNs on two ranks",
            qsgd,
            vec![(0, 0, nan), (1, 64 * 100 + 1, -nan)],
            [&[0], &[100], &[]],
        ),
        (
            "abs: a NaN and an infinity in one bucket on two ranks",
            abs,
            vec![(0, 5, nan), (1, 6, f32::NEG_INFINITY)],
            [&[0], &[0], &[]],
        ),
    ];
    for (what, lossy, puts, escapes) in cases {
        let mut inputs = clean.clone();
        for &(r, at, v) in &puts {
            put(&mut inputs, r, at, v);
        }
        let finite: Vec<f32> = inputs
            .iter()
            .flat_map(|b| values(dtype, b))
            .filter(|v| v.is_finite() && v.abs() < 1e20)
            .collect();
        let (lo, hi) = finite
            .iter()
            .fold((f32::MAX, f32::MIN), |(l, h), &v| (l.min(v), h.max(v)));
        // the error an element may have: the bound (a sum's, `k` of them), QSGD's `norm / s`
        // per rank with a norm below the largest bucket's (under 64 |x|)
        let bound = |terms: usize| {
            terms as f64
                * match lossy {
                    Lossy::ErrorBound(Bound::Abs(eb)) => eb as f64,
                    Lossy::ErrorBound(Bound::Rel(r)) => r as f64 * (hi - lo) as f64,
                    _ => 64.0 * biggest(std::slice::from_ref(&finite)) as f64 / 7.0,
                }
        };
        let union = |buckets: [&[usize]; 3]| {
            let mut u: Vec<usize> = buckets.concat();
            u.sort();
            u.dedup();
            u.len() as u64
        };
        let check = |name: &str, got: &[Vec<u8>], exact: &[Vec<u8>], allow: f64, bitwise: bool| {
            for (r, (g, e)) in got.iter().zip(exact).enumerate() {
                for (i, (&y, &x)) in values(dtype, g).iter().zip(&values(dtype, e)).enumerate() {
                    assert!(
                        matches_exact(y, x, allow, bitwise),
                        "{what}: {name}: rank {r} element {i}: {y:e} ({:#x}) for {x:e} ({:#x})",
                        y.to_bits(),
                        x.to_bits()
                    );
                }
            }
        };
        let reductions: [(&str, usize, Call<'_>, usize); 4] = [
            (
                "all_reduce",
                n,
                &|c, d| c.all_reduce(d, n, dtype, ReduceOp::Sum, opts(lossy)),
                k,
            ),
            (
                "reduce to 1",
                n,
                &|c, d| c.reduce(d, n, dtype, ReduceOp::Sum, 1, opts(lossy)),
                k,
            ),
            (
                "reduce_scatter",
                n / k,
                &|c, d| c.reduce_scatter(d, n / k, dtype, ReduceOp::Sum, opts(lossy)),
                k,
            ),
            (
                "all_reduce max",
                n,
                &|c, d| c.all_reduce(d, n, dtype, ReduceOp::Max, opts(lossy)),
                1,
            ),
        ];
        for (name, out_elems, call, terms) in reductions {
            if name.ends_with("max") && matches!(lossy, Lossy::Qsgd { .. }) {
                continue;
            }
            let (got, counts) = run(k, Config::sim(), &inputs, out_elems * 4, None, call);
            let exact_opts = |c: &Communicator, d: Data<'_>| -> Result<()> {
                let o = opts(Lossy::Exact);
                match name {
                    "all_reduce" => c.all_reduce(d, n, dtype, ReduceOp::Sum, o),
                    "reduce to 1" => c.reduce(d, n, dtype, ReduceOp::Sum, 1, o),
                    "reduce_scatter" => c.reduce_scatter(d, n / k, dtype, ReduceOp::Sum, o),
                    _ => c.all_reduce(d, n, dtype, ReduceOp::Max, o),
                }
            };
            let (exact, _) = run(k, Config::sim(), &inputs, out_elems * 4, None, &exact_opts);
            assert_eq!(counts, escaping(union(escapes)), "{what}: {name}");
            check(name, &got, &exact, bound(terms), false);
        }
        // the moves: each source's escaping buckets arrive bit for bit, NaN payloads included
        let m = n / k;
        for (name, out_elems) in [("all_gather", k * n), ("broadcast from 1", n), ("all_to_all", k * m)] {
            let call = |lossy: Lossy| {
                move |c: &Communicator, d: Data<'_>| -> Result<()> {
                    match name {
                        "all_gather" => c.all_gather(d, n, dtype, opts(lossy)),
                        "broadcast from 1" => c.broadcast(d, n, dtype, 1, opts(lossy)),
                        _ => c.all_to_all(d, m, dtype, opts(lossy)),
                    }
                }
            };
            let ins: Vec<Vec<u8>> = match name {
                "all_to_all" => inputs.iter().map(|b| b[..4 * k * m].to_vec()).collect(),
                _ => inputs.clone(),
            };
            let (got, counts) = run(k, Config::sim(), &ins, out_elems * 4, None, &call(lossy));
            let (exact, _) = run(k, Config::sim(), &ins, out_elems * 4, None, &call(Lossy::Exact));
            let escaped: u64 = match name {
                "broadcast from 1" => escapes[1].len() as u64,
                _ => escapes.iter().map(|b| b.len() as u64).sum(),
            };
            assert_eq!(counts, escaping(escaped), "{what}: {name}");
            check(name, &got, &exact, bound(1), true);
        }
    }
}

#[test]
fn an_absolute_bound_quantizes_while_every_level_fits() {
    // eb 0.5: an element's level is its value rounded; a sum of 2 ranks has levels up to 63
    let (k, n, dtype) = (2, 300, DType::F32);
    let lossy = Lossy::ErrorBound(Bound::Abs(0.5));
    let too_fine = LossyCounts {
        too_fine: 1,
        ..LossyCounts::default()
    };
    let with = |big: f32| -> Vec<Vec<u8>> {
        (0..k)
            .map(|r| {
                let mut v = values(dtype, &input(dtype, n, r, 4.0, 3));
                v[n - 1 - r] = big;
                bytes_of(dtype, &v)
            })
            .collect()
    };
    let call = |inputs: &[Vec<u8>], op: ReduceOp, lossy: Lossy| {
        run(k, Config::sim(), inputs, n * 4, None, &|c, d| {
            c.all_reduce(d, n, dtype, op, opts(lossy))
        })
    };
    for (big, op, counted) in [
        (63.2, ReduceOp::Sum, QUANTIZED),
        (-63.4, ReduceOp::Sum, QUANTIZED),
        (63.6, ReduceOp::Sum, too_fine),
        (126.9, ReduceOp::Max, QUANTIZED),
        (127.6, ReduceOp::Max, too_fine),
    ] {
        let what = format!("{big} under {op:?}");
        let inputs = with(big);
        let (got, counts) = call(&inputs, op, lossy);
        assert_eq!(counts, counted, "{what}");
        let (exact, _) = call(&inputs, op, Lossy::Exact);
        if counted == too_fine {
            assert_eq!(got, exact, "{what}: travels exactly");
            continue;
        }
        let want: Vec<f64> = values(dtype, &exact[0]).iter().map(|&v| v as f64).collect();
        let terms = if op == ReduceOp::Sum { k } else { 1 };
        for out in &got {
            check_within(dtype, &values(dtype, out), &want, terms as f64 * 0.5, &what);
        }
    }
}

#[test]
fn qsgd_all_reduce_is_unbiased_and_reproducible() {
    let (k, n, bucket, calls) = (4, 256, 64, 300);
    let dtype = DType::F32;
    let lossy = Lossy::Qsgd {
        bits: 4,
        bucket: bucket as u32,
        seed: 42,
    };
    let levels = 7.0;
    let inputs: Vec<Vec<u8>> = (0..k).map(|r| input(dtype, n, r, 1.0, 5)).collect();
    let xs: Vec<Vec<f32>> = inputs.iter().map(|b| values(dtype, b)).collect();
    let exact: Vec<f64> = (0..n).map(|i| xs.iter().map(|x| x[i] as f64).sum()).collect();
    // the largest bucket norm of any rank, per bucket: each rank's error is below norm / s
    let norm = |b: usize| {
        xs.iter()
            .map(|x| {
                x[b * bucket..(b + 1) * bucket]
                    .iter()
                    .map(|&v| (v as f64).powi(2))
                    .sum::<f64>()
                    .sqrt()
            })
            .fold(0.0, f64::max)
    };
    let runs = |calls: usize| {
        run_sim(k, Config::sim(), |comm| {
            let mut src = comm.alloc(n * 4)?;
            src.copy_from_host(&inputs[comm.rank()])?;
            let mut out = comm.alloc(n * 4)?;
            let mut all = Vec::new();
            for _ in 0..calls {
                comm.all_reduce(
                    Data::OutOfPlace {
                        src: &src,
                        dst: &mut out,
                    },
                    n,
                    dtype,
                    ReduceOp::Sum,
                    opts(lossy),
                )?;
                all.push(values(dtype, &out.to_host()?));
            }
            assert_eq!(comm.lossy_counts().quantized, calls as u64);
            Ok(all)
        })
        .unwrap()
    };
    let results = runs(calls);
    let (mut sum, mut squares) = (vec![0.0f64; n], vec![0.0f64; n]);
    for call in &results[0] {
        for i in 0..n {
            let y = call[i] as f64;
            let allow = k as f64 * norm(i / bucket) / levels * 1.0001 + 1e-6;
            assert!((y - exact[i]).abs() <= allow, "element {i}: {y} for {}", exact[i]);
            sum[i] += y;
            squares[i] += y * y;
        }
    }
    assert!(results.iter().all(|r| r == &results[0]), "ranks differ");
    let c = calls as f64;
    let z = |i: usize, target: f64| {
        let mean = sum[i] / c;
        let se = ((squares[i] / c - mean * mean).max(0.0) / c).sqrt().max(1e-9);
        (mean - target).abs() / se
    };
    let worst = (0..n).map(|i| z(i, exact[i])).fold(0.0, f64::max);
    assert!(worst < 5.0, "mean off the exact sum by {worst:.1} standard errors");
    // the statistic can fail: a target off by a tenth of a level is rejected somewhere
    let shifted = (0..n)
        .map(|i| z(i, exact[i] + norm(i / bucket) / levels / 10.0))
        .fold(0.0, f64::max);
    assert!(
        shifted > 5.0,
        "a shifted target passes ({shifted:.1} standard errors): the test is too weak"
    );
    // a new communicator with the same seed and call sequence: the same bytes
    assert_eq!(runs(3)[0], results[0][..3], "not reproducible");
    assert_ne!(results[0][0], results[0][1], "two calls drew alike");
}

#[test]
fn policies_a_call_cannot_serve() {
    let (k, n) = (2, 64);
    let ints: Vec<Vec<u8>> = (0..k)
        .map(|r| (0..n as i32).flat_map(|v| (v * (r as i32 + 1)).to_le_bytes()).collect())
        .collect();
    let out = run_sim(k, Config::sim(), |comm| {
        let mut buf = comm.alloc(n * 4)?;
        buf.copy_from_host(&ints[comm.rank()])?;
        let eb = opts(Lossy::ErrorBound(Bound::Abs(0.1)));
        let qsgd = |bits| {
            opts(Lossy::Qsgd {
                bits,
                bucket: 16,
                seed: 0,
            })
        };
        let bad_bound = opts(Lossy::ErrorBound(Bound::Abs(-1.0)));
        for (what, e) in [
            (
                "i32",
                comm.all_reduce(Data::InPlace(&mut buf), n, DType::I32, ReduceOp::Sum, eb),
            ),
            (
                "prod",
                comm.all_reduce(Data::InPlace(&mut buf), n, DType::F32, ReduceOp::Prod, eb),
            ),
            (
                "qsgd max",
                comm.all_reduce(Data::InPlace(&mut buf), n, DType::F32, ReduceOp::Max, qsgd(4)),
            ),
            (
                "qsgd 127 levels x 2 ranks",
                comm.all_reduce(Data::InPlace(&mut buf), n, DType::F32, ReduceOp::Sum, qsgd(8)),
            ),
            (
                "a bad bound",
                comm.all_reduce(Data::InPlace(&mut buf), n, DType::F32, ReduceOp::Sum, bad_bound),
            ),
        ] {
            assert!(matches!(e, Err(Error::InvalidArgument(_))), "{what}: {e:?}");
        }
        comm.all_reduce(
            Data::InPlace(&mut buf),
            n,
            DType::I32,
            ReduceOp::Sum,
            Options::default(),
        )?;
        comm.synchronize()?;
        assert_eq!(comm.lossy_counts(), LossyCounts::default());
        buf.to_host()
    })
    .unwrap();
    let want: Vec<u8> = (0..n as i32).flat_map(|v| (3 * v).to_le_bytes()).collect();
    assert!(
        out.iter().all(|o| o == &want),
        "the communicator stopped working after argument errors"
    );
    // the communicator's policy leaves an i32 call exact, and QSGD of 8 bits moves data (one
    // level per element) but does not sum it over 2 ranks
    let config = |lossy| Config { lossy, ..Config::sim() };
    let (outs, counts) = run(
        k,
        config(Lossy::ErrorBound(Bound::Abs(1.0))),
        &ints,
        n * 4,
        None,
        &|c, d| c.all_reduce(d, n, DType::I32, ReduceOp::Sum, Options::default()),
    );
    assert!(
        outs.iter().all(|o| o == &want),
        "an i32 call under the communicator's lossy policy"
    );
    assert_eq!(counts, LossyCounts::default());
    let floats: Vec<Vec<u8>> = (0..k).map(|r| input(DType::F32, n, r, 1.0, 9)).collect();
    let qsgd8 = config(Lossy::Qsgd {
        bits: 8,
        bucket: 16,
        seed: 0,
    });
    let (_, counts) = run(k, qsgd8.clone(), &floats, n * 4, None, &|c, d| {
        c.all_reduce(d, n, DType::F32, ReduceOp::Sum, Options::default())
    });
    assert_eq!(counts, LossyCounts::default(), "a sum of 2 x 127 levels");
    let (_, counts) = run(k, qsgd8, &floats, k * n * 4, None, &|c, d| {
        c.all_gather(d, n, DType::F32, Options::default())
    });
    assert_eq!(counts, QUANTIZED, "all_gather of 127 levels");
}
