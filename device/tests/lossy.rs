//! The interface quantizers (`zipcoll_device::lossy`) against their guarantees:
//!
//! | test | checks |
//! |------|--------|
//! | `error_bound_holds_for_every_16_bit_value` | every bf16 and f16 pattern under bounds from subnormal to huge: `|x - x'| <= eb` or an exact escape; NaN and infinities escape |
//! | `error_bound_holds_on_f32_edges_and_random_values` | f32 bucket edges (one ulp either side), subnormals, the largest values, NaN payloads, `-0.0`, and 10^6 random bit patterns and scaled normals |
//! | `error_bound_escapes_only_what_it_must` | f32 within 127 buckets of zero never escapes; one past does |
//! | `qsgd_is_unbiased_and_a_biased_rounding_is_caught` | the mean over 4000 seeds is within 5 standard errors of `x` on every element; the same statistic rejects deterministic rounding |
//! | `qsgd_is_deterministic_per_seed_and_escapes_non_finite` | same seed, same symbols; another seed, others; NaN and infinities escape and stay out of the norm |
//! | `levels_hold_the_bound_exactly_and_are_the_nearest` | the collectives' integer levels (`lossy::levels::bound_level`) against an exact integer computation: every level's edges (one ulp either side) up to `MAX_LEVEL`, and random values, under bounds from 1e-30 to 1e30; the nearest level; non-finite values and bad bounds have none |
//! | `bound_values_in_f32_equal_the_f64_values` | `lossy::levels::bound_value` (the dequantize kernel's `f32` path) equals `value` bit for bit for f32, bf16 and f16: every `i8` sum of up to 8 ranks and random sums past 2^24, bounds in every binade of f32 (where `2 eb` overflows too) and random ones |
//! | `integers_become_exact_f32s_without_a_conversion` | `lossy::exact::exact_f32` equals `as f32` for every integer of its bit trick, its edges and the extremes |
//! | `qsgd_levels_without_conversions_equal_the_floor_reference` | `qsgd::level_scaled` against `floor` and conversions at every integer and half of `a` (one ulp either side) and draws either side of the fraction, and random values; degenerate norms give level 0 |
//! | `norms_are_within_an_f32_ulp_of_the_square_root` | `qsgd::norm_from_squares` (five Newton steps in `f64`) against `f64::sqrt`, from the smallest `f32` square past `f32`'s largest norm |
//! | `qsgd_draws_are_the_top_23_bits_of_each_half` | every draw in `[0, 1)`, a multiple of 2^-23, the element's own (`uniform`); their mean is 1/2 |
//!
//! `ZIPCOLL_LOSSY_F32_SAMPLES` raises the random f32 samples of both (10^8 ran on the build machine in
//! release: see BENCHMARKS.md).

mod common;

use common::Rng;
use zipcoll_device::dtype::{Bf16, F32Exact, F16, F32};
use zipcoll_device::lossy::error_bound::{quantize, relative_to_range, value, ESCAPE, MAX_BUCKET};
use zipcoll_device::lossy::{qsgd, Quantizer};

/// Checks one element under the bound `eb`: an escape, or a value within `eb` (exactly, in
/// f64: both are f32 values). NaN and infinities must escape. Returns whether it escaped.
fn check_bound<T: F32Exact>(x: T::Bits, eb: f32) -> bool {
    let s = quantize::<T>(x, eb);
    let v = T::to_f32(x);
    if s == ESCAPE {
        return true;
    }
    assert!(v.is_finite(), "{:?} {v} (bits {x:?}) got symbol {s}", T::DTYPE);
    let r = T::to_f32(value::<T>(s, eb));
    let err = ((v as f64) - (r as f64)).abs();
    assert!(
        err <= eb as f64,
        "{:?}: x = {v:e} (bits {x:?}) -> symbol {s} -> {r:e}: error {err:e} > {eb:e}",
        T::DTYPE
    );
    false
}

/// Bounds across the range: subnormal, tiny, typical, large, and close to f32's largest.
const BOUNDS: [f32; 8] = [1e-40, 3e-8, 1e-3, 0.0625, 0.3, 1.0, 7.5e3, 1e37];

#[test]
fn error_bound_holds_for_every_16_bit_value() {
    for eb in BOUNDS {
        let mut kept = 0;
        for b in 0..=u16::MAX {
            kept += usize::from(!check_bound::<Bf16>(b, eb));
            check_bound::<F16>(b, eb);
        }
        // the 255 buckets around zero hold many bf16 values for every bound that bf16 can
        // express (the check cannot pass by escaping everything)
        assert!(kept > 255, "eb {eb:e}: only {kept} bf16 values quantized");
    }
    for nan_or_inf in [0x7F80u16, 0xFF80, 0x7FC0, 0x7F81, 0xFFFF] {
        assert_eq!(quantize::<Bf16>(nan_or_inf, 0.5), ESCAPE);
    }
    for bad in [0.0, -1.0, f32::NAN, f32::INFINITY] {
        assert_eq!(quantize::<Bf16>(0x3F80, bad), ESCAPE, "bound {bad}");
    }
}

#[test]
fn error_bound_holds_on_f32_edges_and_random_values() {
    let mut rng = Rng(0x10557);
    for eb in BOUNDS {
        let step = 2.0 * eb;
        // each bucket edge (k + 1/2) * step and one ulp either side, for every bucket and one
        // past the last
        for k in -(MAX_BUCKET + 1)..=MAX_BUCKET + 1 {
            let edge = (k as f32 + 0.5) * step;
            for x in [
                edge,
                f32::from_bits(edge.to_bits() + 1),
                f32::from_bits(edge.to_bits().wrapping_sub(1)),
            ] {
                check_bound::<F32>(x.to_bits(), eb);
                check_bound::<F32>((-x).to_bits(), eb);
            }
        }
        for special in [
            0u32,
            0x8000_0000,
            1,
            0x8000_0001,
            0x007F_FFFF,
            0x0080_0000,
            0x7F7F_FFFF,
            0xFF7F_FFFF,
        ] {
            check_bound::<F32>(special, eb);
        }
        for nan_or_inf in [0x7F80_0000u32, 0xFF80_0000, 0x7FC0_0000, 0x7F80_0001, 0xFFFF_FFFF] {
            assert_eq!(quantize::<F32>(nan_or_inf, eb), ESCAPE);
        }
    }
    let samples: u64 = std::env::var("ZIPCOLL_LOSSY_F32_SAMPLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let (mut escaped, mut quantized) = (0u64, 0u64);
    for i in 0..samples {
        let eb = BOUNDS[(i % BOUNDS.len() as u64) as usize];
        // half arbitrary bit patterns, half values at the bound's scale (mostly quantized)
        let x = if i % 2 == 0 {
            rng.next_u32()
        } else {
            ((rng.normal() * 100.0) as f32 * eb).to_bits()
        };
        if check_bound::<F32>(x, eb) {
            escaped += 1;
        } else {
            quantized += 1;
        }
    }
    assert!(
        quantized > samples / 3,
        "{quantized} of {samples} quantized, {escaped} escaped"
    );
}

#[test]
fn error_bound_escapes_only_what_it_must() {
    let eb = 0.01f32;
    let step = 2.0 * eb;
    for k in -MAX_BUCKET..=MAX_BUCKET {
        for frac in [-0.49f32, -0.25, 0.0, 0.25, 0.49] {
            let x = (k as f32 + frac) * step;
            let s = quantize::<F32>(x.to_bits(), eb);
            assert_eq!(s as i32 - 128, k, "x = {x}");
        }
    }
    let past = (MAX_BUCKET as f32 + 0.75) * step;
    assert_eq!(quantize::<F32>(past.to_bits(), eb), ESCAPE);
    assert_eq!(quantize::<F32>((-past).to_bits(), eb), ESCAPE);
    // -0.0 is bucket 0, whose value is +0.0
    assert_eq!(quantize::<F32>(0x8000_0000, eb), 128);
    assert_eq!(relative_to_range(1e-3, -2.0, 6.0), Some(1e-3 * 8.0));
    assert_eq!(relative_to_range(1e-3, 5.0, 5.0), Some(1e-3 * 5.0));
    assert_eq!(relative_to_range(1e-3, 0.0, 0.0), None);
}

/// Mean of the dequantized values of `x` over `seeds` seeds, and whether every element's mean
/// is within 5 standard errors of it (the standard error of one draw is at most
/// `norm / (2 levels)`).
fn unbiased(x: &[f32], levels: u32, seeds: u64, symbol: impl Fn(u32, f32, u64, u64) -> u8) -> bool {
    let bits: Vec<u32> = x.iter().map(|v| v.to_bits()).collect();
    let norm = qsgd::norm_of::<F32>(&bits);
    let sigma = norm as f64 / (2.0 * levels as f64) / (seeds as f64).sqrt();
    x.iter().enumerate().all(|(i, &v)| {
        let mean = (0..seeds)
            .map(|seed| {
                let s = symbol(bits[i], norm, seed, i as u64);
                F32::to_f32(qsgd::value::<F32>(s, norm, levels)) as f64
            })
            .sum::<f64>()
            / seeds as f64;
        (mean - v as f64).abs() <= 5.0 * sigma
    })
}

#[test]
fn qsgd_is_unbiased_and_a_biased_rounding_is_caught() {
    let mut rng = Rng(77);
    let x: Vec<f32> = (0..64).map(|_| rng.normal() as f32).collect();
    for levels in [1, 4, 127] {
        let draw = |b: u32, norm: f32, seed: u64, i: u64| qsgd::quantize::<F32>(b, norm, levels, seed, i);
        assert!(
            unbiased(&x, levels, 4000, draw),
            "QSGD with {levels} levels looks biased"
        );
        // the same statistic on deterministic rounding to the nearest level: biased, caught
        let nearest = |b: u32, norm: f32, _: u64, _: u64| {
            let v = f32::from_bits(b);
            let q = (v.abs() / norm * levels as f32).round() as i32;
            (128 + if v < 0.0 { -q } else { q }) as u8
        };
        assert!(
            !unbiased(&x, levels, 4000, nearest),
            "{levels} levels: rounding not caught"
        );
    }
}

#[test]
fn qsgd_is_deterministic_per_seed_and_escapes_non_finite() {
    let mut rng = Rng(5);
    let mut x: Vec<u16> = (0..4096).map(|_| Bf16::from_f32(rng.normal() as f32)).collect();
    let q = |seed| Quantizer::Qsgd {
        levels: 15,
        bucket: 512,
        seed,
    };
    let symbols = |quant: Quantizer, x: &[u16]| -> Vec<u8> {
        x.chunks(quant.bucket())
            .enumerate()
            .flat_map(|(b, chunk)| {
                let scale = quant.scale::<Bf16>(chunk);
                chunk
                    .iter()
                    .enumerate()
                    .map(move |(i, &e)| quant.symbol::<Bf16>(e, scale, (b * 512 + i) as u64))
                    .collect::<Vec<_>>()
            })
            .collect()
    };
    let a = symbols(q(1), &x);
    assert_eq!(a, symbols(q(1), &x));
    let b = symbols(q(2), &x);
    assert!(a.iter().zip(&b).filter(|(p, q)| p != q).count() > 100);
    assert!(a
        .iter()
        .all(|&s| s != ESCAPE && (128 - 15..=128 + 15).contains(&(s as i32))));
    let norm = qsgd::norm_of::<Bf16>(&x[..512]);
    x[3] = 0x7FC1; // a NaN payload
    x[9] = 0xFF80; // -inf
    assert_eq!(qsgd::norm_of::<Bf16>(&x[..512]).to_bits(), {
        let mut y = x[..512].to_vec();
        y[3] = 0;
        y[9] = 0;
        qsgd::norm_of::<Bf16>(&y).to_bits()
    });
    assert_ne!(qsgd::norm_of::<Bf16>(&x[..512]), norm);
    let s = symbols(q(1), &x);
    assert_eq!((s[3], s[9]), (ESCAPE, ESCAPE));
}

/// Whether `|x - 2 eb q| <= eb` (`|q| <= 2^27`) in exact integer arithmetic: both sides scaled
/// to `eb`'s and `x`'s smaller exponent, where the products fit `i128`; an `x` far below `eb`
/// is within exactly at level 0, one far above it at none.
fn exactly_within(x: f32, eb: f32, q: i32) -> bool {
    // (significand, exponent) with value = m * 2^e
    let parts = |v: f32| -> (i128, i32) {
        let b = v.to_bits();
        let (e, m) = (((b >> 23) & 0xFF) as i32, (b & 0x7F_FFFF) as i128);
        let (m, e) = if e == 0 { (m, -149) } else { (m | 0x80_0000, e - 150) };
        (if v < 0.0 { -m } else { m }, e)
    };
    let ((mx, ex), (me, ee)) = (parts(x), parts(eb));
    if ex < ee - 30 {
        return q == 0; // |x| < 2^(ex + 24) < eb
    }
    if ex > ee + 70 {
        return false; // |x| > 2^(ee + 70) > (2 |q| + 1) eb
    }
    let e0 = ex.min(ee);
    let (x, eb) = (mx << (ex - e0), me << (ee - e0));
    (x - 2 * eb * q as i128).abs() <= eb
}

#[test]
fn levels_hold_the_bound_exactly_and_are_the_nearest() {
    use zipcoll_device::lossy::levels::{bound_level, BoundLevels, FAST_LEVELS, MAX_LEVEL};
    let mut rng = Rng(17);
    let (mut checked, mut fast_checked) = (0usize, 0usize);
    // random values per bound and distribution: ZIPCOLL_LOSSY_F32_SAMPLES / 16 (8 bounds, 2 kinds)
    let per = std::env::var("ZIPCOLL_LOSSY_F32_SAMPLES")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .map_or(20_000, |n| n / 16);
    for eb in [1e-30f32, 3e-8, 1e-3, 0.0625, 0.3, 1.0, 7.5e3, 1e30] {
        let step = 2.0 * eb as f64;
        // each level's edges `(2q +- 1) eb`, one ulp either side, at small and huge levels
        let mut xs = Vec::new();
        for q in [
            0i64,
            1,
            -1,
            2,
            127,
            -128,
            1000,
            1023,
            -1024,
            1025,
            65_535,
            -(1 << 20),
            MAX_LEVEL as i64 - 1,
            MAX_LEVEL as i64,
        ] {
            for edge in [
                q as f64 * step - eb as f64,
                q as f64 * step + eb as f64,
                q as f64 * step,
            ] {
                let e = edge as f32;
                xs.extend([
                    e,
                    f32::from_bits(e.to_bits().wrapping_add(1)),
                    f32::from_bits(e.to_bits().wrapping_sub(1)),
                ]);
            }
        }
        // and values spread over the levels
        xs.extend((0..per).map(|_| {
            ((rng.next_u64() as i64 >> 11) as f64 / (1u64 << 53) as f64 * 2.0 * step * MAX_LEVEL as f64) as f32
        }));
        xs.extend(
            (0..per).map(|_| ((rng.next_u64() as i64 >> 11) as f64 / (1u64 << 53) as f64 * 300.0 * eb as f64) as f32),
        );
        // values within ~2100 levels of 0, where `BoundLevels` proves levels in f32
        xs.extend(
            (0..per).map(|_| ((rng.next_u64() as i64 >> 11) as f64 / (1u64 << 53) as f64 * 4200.0 * eb as f64) as f32),
        );
        // `BoundLevels` gives `bound_level`'s level (or none) for every value and limit
        let limits = [MAX_LEVEL, FAST_LEVELS + 1, FAST_LEVELS, 127, 9, 0, -1];
        let fast: Vec<BoundLevels> = limits.iter().map(|&qmax| BoundLevels::new(eb, qmax)).collect();
        for &x in xs
            .iter()
            .chain(&[f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0, f32::MIN_POSITIVE])
        {
            for (levels, &qmax) in fast.iter().zip(&limits) {
                let want = bound_level(x, eb, qmax);
                assert_eq!(levels.level(x), want, "{x:e} under {eb:e} within {qmax}");
                if let Some(q) = levels.proved(x) {
                    assert_eq!(Some(q), want, "{x:e} under {eb:e} within {qmax}: proved {q}");
                    fast_checked += 1;
                }
            }
        }
        for x in xs.into_iter().filter(|x| x.is_finite()) {
            let t = x as f64 / step;
            match bound_level(x, eb, MAX_LEVEL) {
                Some(q) => {
                    assert!(q.abs() <= MAX_LEVEL, "{x:e} / {eb:e}: level {q}");
                    assert!(
                        exactly_within(x, eb, q),
                        "{x:e} under {eb:e}: level {q} is not within the bound"
                    );
                    // the nearest level: no other is strictly closer
                    assert!((t - q as f64).abs() <= 0.5 + 1e-6, "{x:e} / {eb:e}: level {q} for {t}");
                    checked += 1;
                }
                None => assert!(t.abs() > MAX_LEVEL as f64 - 0.5, "{x:e} under {eb:e} has no level"),
            }
        }
        // a smaller limit refuses what lies beyond it
        assert_eq!(bound_level((10.0 * step) as f32, eb, 9), None);
        assert_eq!(bound_level((9.0 * step) as f32, eb, 9), Some(9));
    }
    assert!(checked > 300_000, "only {checked} levels checked");
    // the f32 proof holds for most values within its levels (all but those near an edge, and
    // the bounds outside 2^-100..=2^100)
    assert!(
        fast_checked > checked,
        "BoundLevels proved only {fast_checked} levels in f32"
    );
    for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        assert_eq!(bound_level(bad, 1.0, 100), None);
    }
    for eb in [0.0, -1.0, f32::NAN, f32::INFINITY] {
        assert_eq!(bound_level(1.0, eb, 100), None);
    }
    assert_eq!(bound_level(-0.0, 1.0, 100), Some(0));
}

#[test]
fn bound_values_in_f32_equal_the_f64_values() {
    use zipcoll_device::lossy::levels::{bound_value, value};
    let mut rng = Rng(31);
    // bounds: every binade of f32 (subnormal to the largest, where `2 eb` overflows), and
    // random finite bit patterns
    let mut ebs: Vec<f32> = (0..255u32).map(|e| f32::from_bits(e << 23 | 0x12_3457)).collect();
    ebs.extend([f32::from_bits(1), f32::MAX, f32::MAX / 2.0, 1e-3, 0.05]);
    ebs.extend((0..2000).map(|_| f32::from_bits(rng.next_u32() % 0x7F80_0000)));
    // sums: every i8 sum of up to 8 ranks, and random ones up to and past 2^24
    let mut sums: Vec<i32> = (-1016..=1016).collect();
    sums.extend((0..200).map(|_| rng.below(1 << 26) as i32 - (1 << 25)));
    sums.extend([1 << 24, -(1 << 24), (1 << 24) + 1, i32::MAX, i32::MIN + 1]);
    for &eb in &ebs {
        for &sum in &sums {
            let want = value::<F32>(sum, 2.0 * eb as f64, 1);
            assert_eq!(bound_value::<F32>(sum, eb), want, "f32: sum {sum}, eb {eb:e}");
            let want = value::<Bf16>(sum, 2.0 * eb as f64, 1);
            assert_eq!(bound_value::<Bf16>(sum, eb), want, "bf16: sum {sum}, eb {eb:e}");
            let want = value::<F16>(sum, 2.0 * eb as f64, 1);
            assert_eq!(bound_value::<F16>(sum, eb), want, "f16: sum {sum}, eb {eb:e}");
        }
    }
}

#[test]
fn integers_become_exact_f32s_without_a_conversion() {
    use zipcoll_device::lossy::exact::exact_f32;
    // every integer the bit trick builds, both sides of where it stops, and the extremes
    for l in -(1 << 22) - 3..=(1 << 22) + 3 {
        assert_eq!(exact_f32(l).to_bits(), (l as f32).to_bits(), "{l}");
    }
    for l in [i32::MIN, i32::MIN + 1, i32::MAX, 1 << 24, -(1 << 24) - 1] {
        assert_eq!(exact_f32(l).to_bits(), (l as f32).to_bits(), "{l}");
    }
}

/// QSGD's level of `x` by its definition, with `floor` and conversions: `floor(a)`, one more
/// where the draw `u` is below `a - floor(a)`, at most `levels`, with `x`'s sign.
fn qsgd_reference(x: f32, scale: f32, levels: u32, u: f32) -> i32 {
    let a = (x.abs() * scale).min(levels as f32);
    let low = a.floor();
    let q = (low as i32 + (u < a - low) as i32).min(levels as i32);
    if x < 0.0 {
        -q
    } else {
        q
    }
}

#[test]
fn qsgd_levels_without_conversions_equal_the_floor_reference() {
    let mut rng = Rng(17);
    let ulp = |a: f32, d: i32| f32::from_bits((a.to_bits() as i32 + d).max(0) as u32);
    for levels in [1u32, 2, 7, 15, 127] {
        // `a` at every integer and half up to `levels` and one ulp either side (the rounding's
        // ties and the floor's edges), then random values; draws at 0, near 1, and one
        // ulp either side of the fraction
        let mut aa: Vec<f32> = (0..=2 * levels)
            .flat_map(|h| [-1, 0, 1].map(|d| ulp(h as f32 / 2.0, d)))
            .collect();
        aa.extend((0..20_000).map(|_| rng.below(1 << 24) as f32 / (1 << 24) as f32 * levels as f32));
        for &a in &aa {
            let frac = a - a.floor();
            let draws = [
                0.0,
                1.0 - 1.0 / (1 << 23) as f32,
                0.5,
                ulp(frac, -1),
                frac,
                ulp(frac, 1),
            ];
            for u in draws {
                for x in [a, -a] {
                    let got = qsgd::level_scaled(x, 1.0, levels, u);
                    assert_eq!(got, qsgd_reference(x, 1.0, levels, u), "a {a}, u {u}, {levels} levels");
                }
            }
        }
        // through a bucket's scale: normals in a bucket of norm 1, beyond the norm, and zeros
        for _ in 0..20_000 {
            let (x, u) = (
                rng.normal() as f32 * 0.3,
                (rng.next_u32() >> 9) as f32 / (1 << 23) as f32,
            );
            let scale = qsgd::scale(1.0, levels);
            assert_eq!(
                qsgd::level_scaled(x, scale, levels, u),
                qsgd_reference(x, scale, levels, u)
            );
        }
    }
    // a norm that is zero, negative, not finite or so small that `levels / norm` overflows
    // gives every element level 0
    for norm in [0.0, -1.0, f32::NAN, f32::INFINITY, f32::from_bits(1), 1e-38] {
        assert_eq!(qsgd::scale(norm, 127), 0.0, "norm {norm:e}");
        assert_eq!(qsgd::level(0.0, norm, 127, 3, 9), 0);
        assert_eq!(qsgd::level(-1e-39, norm, 127, 3, 9), 0);
    }
    assert_eq!(qsgd::scale(2.0, 127), 63.5);
}

#[test]
fn qsgd_draws_are_the_top_23_bits_of_each_half() {
    let mut rng = Rng(23);
    let mut sum = 0.0f64;
    let pairs = 100_000;
    for _ in 0..pairs {
        let (seed, pair) = (rng.next_u64(), rng.next_u64() >> 1);
        let [u0, u1] = qsgd::uniforms(seed, pair);
        for (h, u) in [u0, u1].into_iter().enumerate() {
            assert!((0.0..1.0).contains(&u), "{u}");
            // a multiple of 2^-23, and the element's own draw
            assert_eq!((u * (1 << 23) as f32).fract(), 0.0, "{u}");
            assert_eq!(qsgd::uniform(seed, 2 * pair + h as u64), u);
            sum += u as f64;
        }
    }
    // the mean of 2 x 10^5 uniforms: within 5 standard errors (0.289 / sqrt(n)) of 1/2
    let mean = sum / (2 * pairs) as f64;
    assert!(
        (mean - 0.5).abs() < 5.0 * 0.2887 / ((2 * pairs) as f64).sqrt(),
        "mean {mean}"
    );
}

#[test]
fn norms_are_within_an_f32_ulp_of_the_square_root() {
    let mut rng = Rng(41);
    // sums of f32 squares: from the smallest subnormal's square (2e-90) past f32's largest
    // norm, at random and at powers of two (the guess's edges)
    let mut sums: Vec<f64> = (-298..256).map(|e| 2f64.powi(e)).collect();
    sums.extend((0..100_000).map(|_| 2f64.powf(rng.below(554_000) as f64 / 1000.0 - 298.0)));
    sums.extend([4.0, 2.0, 1.0, 9.0, 1e-89, f32::MAX as f64 * f32::MAX as f64]);
    for s in sums {
        let (got, want) = (qsgd::norm_from_squares(s) as f64, s.sqrt());
        // one rounding to f32 (2^-24, or half the smallest subnormal) and the root's own
        // error (below 2^-45)
        let ulp = (want * (1.0 / (1u64 << 23) as f64)).max(f32::from_bits(1) as f64);
        assert!((got - want).abs() <= ulp, "sqrt({s:e}): {got:e}");
    }
    assert_eq!(qsgd::norm_from_squares(0.0), 0.0);
    assert_eq!(qsgd::norm_from_squares(f64::INFINITY), f32::INFINITY);
}
