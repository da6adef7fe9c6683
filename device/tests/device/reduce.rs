//! Reduction operators against a scalar reference written independently: conversions from the
//! `half` crate (bf16, f16) or the first-principles [`Format`] (fp8), the operation in `f32`,
//! NaN results mapped to the canonical NaN written out in [`canonical_nan`].

use crate::reference::{canonical_nan, specials, Format, Rng};
use proptest::prelude::*;
use zipcoll_device::dtype::{Bf16, DType, F32Exact, F16, F32, F8E4M3, F8E5M2};
use zipcoll_device::reduce::{Avg, Max, Min, Prod, RedOp, ReduceOp, Sum};
use zipcoll_targets::Word;

/// The f32 value of pattern `b` of dtype `d`.
pub fn ref_to_f32(d: DType, b: u32) -> f32 {
    match d {
        DType::Bf16 => half::bf16::from_bits(b as u16).to_f32(),
        DType::F16 => half::f16::from_bits(b as u16).to_f32(),
        DType::F32 => f32::from_bits(b),
        DType::F8E4M3 | DType::F8E5M2 => {
            let f = Format::of(d);
            if f.is_nan(b) {
                f32::NAN
            } else {
                f.value(b) as f32
            }
        }
        other => panic!("{other:?} is not a float type reduced through f32"),
    }
}

/// `x` rounded to dtype `d` to nearest even; the canonical NaN for any NaN.
pub fn ref_round(d: DType, x: f32) -> u32 {
    if x.is_nan() {
        return canonical_nan(d);
    }
    match d {
        DType::Bf16 => half::bf16::from_f32(x).to_bits() as u32,
        DType::F16 => half::f16::from_f32(x).to_bits() as u32,
        DType::F32 => x.to_bits(),
        DType::F8E4M3 | DType::F8E5M2 => Format::of(d).round(x as f64),
        other => panic!("{other:?} is not a float type reduced through f32"),
    }
}

/// The f32 operation of `op`'s combine, NaN-propagating, with `min(-0, +0) = -0` and
/// `max(-0, +0) = +0`.
pub fn ref_op(op: ReduceOp, x: f32, y: f32) -> f32 {
    let zeros = x == 0.0 && y == 0.0;
    match op {
        ReduceOp::Sum | ReduceOp::Avg => x + y,
        ReduceOp::Prod => x * y,
        _ if x.is_nan() || y.is_nan() => f32::NAN,
        ReduceOp::Min if zeros => {
            if x.is_sign_negative() || y.is_sign_negative() {
                -0.0
            } else {
                0.0
            }
        }
        ReduceOp::Max if zeros => {
            if x.is_sign_negative() && y.is_sign_negative() {
                -0.0
            } else {
                0.0
            }
        }
        ReduceOp::Min => x.min(y),
        ReduceOp::Max => x.max(y),
    }
}

/// The reference `combine(a, b)` of `op` on dtype `d`.
pub fn ref_combine(d: DType, op: ReduceOp, a: u32, b: u32) -> u32 {
    ref_round(d, ref_op(op, ref_to_f32(d, a), ref_to_f32(d, b)))
}

/// The reference `pre(x)` of `op` over `nranks` on dtype `d`.
pub fn ref_pre(d: DType, op: ReduceOp, nranks: u32, x: u32) -> u32 {
    match op {
        ReduceOp::Avg => ref_round(d, ref_to_f32(d, x) * (1.0f32 / nranks as f32)),
        _ => x,
    }
}

fn bits<T: F32Exact>(b: u32) -> T::Bits {
    T::Bits::from_bits64(b as u64)
}

fn raw<B: Word>(b: B) -> u32 {
    b.to_bits64() as u32
}

/// `combine(a, b)` of every op against the reference, and `combine(b, a)` equal to it, for
/// every `a` in `xs` and `b` in `ys`.
fn check_pairs<T: F32Exact>(xs: impl Iterator<Item = u32> + Clone, ys: &[u32]) {
    fn one<T: F32Exact, O: RedOp>(xs: impl Iterator<Item = u32>, ys: &[u32]) {
        let op = O::new::<T>(3);
        for a in xs {
            for &b in ys {
                let got = raw(op.combine::<T>(bits::<T>(a), bits::<T>(b)));
                let want = ref_combine(T::DTYPE, O::OP, a, b);
                assert_eq!(got, want, "{:?} {:?}.combine({a:#x}, {b:#x})", T::DTYPE, O::OP);
                assert_eq!(raw(op.combine::<T>(bits::<T>(b), bits::<T>(a))), got, "not commutative");
            }
        }
    }
    one::<T, Sum>(xs.clone(), ys);
    one::<T, Prod>(xs.clone(), ys);
    one::<T, Min>(xs.clone(), ys);
    one::<T, Max>(xs.clone(), ys);
    one::<T, Avg>(xs, ys);
}

/// The specials of `d` and `n` random patterns below `2^width`.
fn sample(d: DType, n: usize, width: u32, seed: u64) -> Vec<u32> {
    let mut rng = Rng(seed);
    let mut v = specials(d);
    v.extend((0..n).map(|_| rng.below(1 << width) as u32));
    v
}

#[test]
fn fp8_every_pair_every_op() {
    let all: Vec<u32> = (0..256).collect();
    check_pairs::<F8E4M3>(0..256, &all);
    check_pairs::<F8E5M2>(0..256, &all);
}

#[test]
fn bf16_every_value_against_sampled_values() {
    check_pairs::<Bf16>(0..1 << 16, &sample(DType::Bf16, 24, 16, 1));
}

#[test]
fn f16_every_value_against_sampled_values() {
    check_pairs::<F16>(0..1 << 16, &sample(DType::F16, 24, 16, 2));
}

#[test]
fn f32_specials_against_specials() {
    let s = specials(DType::F32);
    check_pairs::<F32>(s.iter().copied(), &s);
}

#[test]
fn avg_pre_on_every_narrow_value() {
    fn check<T: F32Exact>(nranks: u32) {
        let op = Avg::new::<T>(nranks);
        for x in 0..1u32 << (8 * core::mem::size_of::<T::Bits>()) {
            let want = ref_pre(T::DTYPE, ReduceOp::Avg, nranks, x);
            assert_eq!(
                raw(op.pre::<T>(bits::<T>(x))),
                want,
                "{:?} Avg({nranks}).pre({x:#x})",
                T::DTYPE
            );
        }
    }
    for n in [1, 2, 3, 5, 7, 8, 24, 1000] {
        check::<Bf16>(n);
        check::<F16>(n);
        check::<F8E4M3>(n);
        check::<F8E5M2>(n);
    }
}

/// PreMulSum's `pre` (`Avg::scaled`): `x * scale` in f32, rounded once, for every value of the
/// narrow types and scales no narrow type holds (0.1), negative, tiny, huge, zero and NaN.
#[test]
fn pre_mul_sum_pre_on_every_narrow_value() {
    fn check<T: F32Exact>(scale: f32) {
        let op = Avg::scaled(u64::from(scale.to_bits()));
        let d = T::DTYPE;
        for x in 0..1u32 << (8 * core::mem::size_of::<T::Bits>()) {
            let want = ref_round(d, ref_to_f32(d, x) * scale);
            assert_eq!(
                raw(op.pre::<T>(bits::<T>(x))),
                want,
                "{d:?} PreMulSum({scale}).pre({x:#x})"
            );
            // the value, and NaN for NaN (the table lets the payload differ by dtype)
            let (want, got) = (ref_to_f32(d, x), d.float_value(u64::from(x)).unwrap());
            assert!(
                f64::from(want).to_bits() == got.to_bits() || (want.is_nan() && got.is_nan()),
                "{d:?} to_f32({x:#x}): {got} for {want}"
            );
        }
    }
    for s in [0.1, -3.0, 1.0e-30, 3.0e38, 0.0, -0.0, f32::NAN, f32::INFINITY] {
        check::<Bf16>(s);
        check::<F16>(s);
        check::<F8E4M3>(s);
        check::<F8E5M2>(s);
    }
}

#[test]
fn pre_is_identity_except_for_avg() {
    fn check<T: F32Exact, O: RedOp>() {
        for x in sample(T::DTYPE, 64, 8 * core::mem::size_of::<T::Bits>() as u32, 3) {
            assert_eq!(
                raw(O::new::<T>(4).pre::<T>(bits::<T>(x))),
                x,
                "{:?} {:?}",
                T::DTYPE,
                O::OP
            );
        }
    }
    fn each_op<T: F32Exact>() {
        check::<T, Sum>();
        check::<T, Prod>();
        check::<T, Min>();
        check::<T, Max>();
    }
    each_op::<Bf16>();
    each_op::<F16>();
    each_op::<F32>();
    each_op::<F8E4M3>();
    each_op::<F8E5M2>();
    assert_eq!(Avg::new::<F32>(4).scalar, u64::from(0.25f32.to_bits()));
    assert_eq!([Sum::OP, Prod::OP, Min::OP, Max::OP, Avg::OP], ReduceOp::ALL);
}

/// The cases the semantics single out, written as literal bits.
#[test]
fn signed_zeros_infinities_and_nan_payloads() {
    let (pz, nz) = (0x0000u16, 0x8000u16);
    for (a, b) in [(pz, nz), (nz, pz)] {
        assert_eq!(Min.combine::<Bf16>(a, b), nz);
        assert_eq!(Max.combine::<Bf16>(a, b), pz);
        assert_eq!(Sum.combine::<Bf16>(a, b), pz);
        assert_eq!(Min.combine::<F16>(a, b), nz);
        assert_eq!(Max.combine::<F16>(a, b), pz);
    }
    assert_eq!(Sum.combine::<Bf16>(nz, nz), nz);
    assert_eq!(Min.combine::<F32>(0x8000_0000, 0), 0x8000_0000);
    assert_eq!(Max.combine::<F32>(0x8000_0000, 0), 0);
    assert_eq!(Min.combine::<F8E4M3>(0x80, 0x00), 0x80);
    assert_eq!(Max.combine::<F8E5M2>(0x80, 0x00), 0x00);
    // NaN propagates through every op, with the canonical bits whatever the payload and sign.
    assert_eq!(Min.combine::<Bf16>(0xFFA5, 0xFF80), 0x7FFF);
    assert_eq!(Max.combine::<F16>(0x7C00, 0xFE01), 0x7FFF);
    assert_eq!(Sum.combine::<F32>(0xFFC0_1234, 0x3F80_0000), 0x7FFF_FFFF);
    assert_eq!(Prod.combine::<F32>(0, 0x7F80_0000), 0x7FFF_FFFF);
    assert_eq!(Max.combine::<F8E4M3>(0xFF, 0x7E), 0x7F);
    assert_eq!(Min.combine::<F8E5M2>(0x7D, 0xFC), 0x7F);
    assert_eq!(Avg::new::<F32>(2).pre::<F32>(0xFFC0_0001), 0x7FFF_FFFF);
    // inf - inf
    assert_eq!(Sum.combine::<F16>(0x7C00, 0xFC00), 0x7FFF);
    // Overflow: to inf for bf16/f16/e5m2, to NaN for e4m3.
    assert_eq!(Sum.combine::<F16>(0x7BFF, 0x7BFF), 0x7C00);
    assert_eq!(Sum.combine::<F8E5M2>(0xFB, 0xFB), 0xFC);
    assert_eq!(Sum.combine::<F8E4M3>(0xFE, 0xFE), 0xFF);
}

/// For sums, one f32 addition then rounding equals rounding the exact (f64) sum once: the f32
/// step never double-rounds for these formats.
#[test]
fn narrow_sums_through_f32_are_correctly_rounded() {
    fn check<T: F32Exact>(xs: &[u32], ys: &[u32]) {
        let f = Format::of(T::DTYPE);
        for &a in xs {
            for &b in ys {
                if f.is_nan(a) || f.is_nan(b) {
                    continue;
                }
                let exact = f.value(a) + f.value(b);
                if !exact.is_nan() {
                    assert_eq!(
                        raw(Sum.combine::<T>(bits::<T>(a), bits::<T>(b))),
                        f.round(exact),
                        "{a:#x} + {b:#x}"
                    );
                }
            }
        }
    }
    let all8: Vec<u32> = (0..256).collect();
    check::<F8E4M3>(&all8, &all8);
    check::<F8E5M2>(&all8, &all8);
    let all16: Vec<u32> = (0..1 << 16).collect();
    check::<Bf16>(&all16, &sample(DType::Bf16, 8, 16, 4));
    check::<F16>(&all16, &sample(DType::F16, 8, 16, 5));
}

proptest! {
    #[test]
    fn f32_ops_match_native_f32_on_any_bits(a in any::<u32>(), b in any::<u32>(), n in 1u32..2000) {
        let d = DType::F32;
        prop_assert_eq!(Sum.combine::<F32>(a, b), ref_combine(d, ReduceOp::Sum, a, b));
        prop_assert_eq!(Prod.combine::<F32>(a, b), ref_combine(d, ReduceOp::Prod, a, b));
        prop_assert_eq!(Min.combine::<F32>(a, b), ref_combine(d, ReduceOp::Min, a, b));
        prop_assert_eq!(Max.combine::<F32>(a, b), ref_combine(d, ReduceOp::Max, a, b));
        prop_assert_eq!(Avg::new::<F32>(n).pre::<F32>(a), ref_pre(d, ReduceOp::Avg, n, a));
        let scale = f32::from_bits(b);
        prop_assert_eq!(Avg::scaled(u64::from(b)).pre::<F32>(a), ref_round(d, f32::from_bits(a) * scale));
        let (v, x) = (d.float_value(u64::from(a)).unwrap(), f32::from_bits(a));
        prop_assert!(v == f64::from(x) || (v.is_nan() && x.is_nan()));
    }
}
