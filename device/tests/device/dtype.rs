//! dtype conversions and splits: exhaustive over every 8- and 16-bit pattern (and every fp8
//! pair), property-based over f32 inputs, against the first-principles [`Format`] reference and
//! the `half` crate.

use crate::reference::{canonical_nan, Format, FMT_BF16, FMT_E4M3, FMT_E5M2, FMT_F16};
use proptest::prelude::*;
use zipcoll_device::dtype::{pack_pair, unpack_pair, Bf16, DType, F32Exact, Split, F16, F32, F8E4M3, F8E5M2};
use zipcoll_targets::Word;

fn bits<T: F32Exact>(b: u32) -> T::Bits {
    T::Bits::from_bits64(b as u64)
}

fn raw<B: Word>(b: B) -> u32 {
    b.to_bits64() as u32
}

/// Runs a generic check for every narrow dtype.
macro_rules! for_narrow {
    ($check:ident) => {
        $check::<Bf16>();
        $check::<F16>();
        $check::<F8E4M3>();
        $check::<F8E5M2>();
    };
}

/// `from_f32(x)` as the reference says: the nearest value, or the canonical NaN.
fn expected_from_f32(f: &Format, x: f32) -> u32 {
    if x.is_nan() {
        (1 << (f.exp + f.man)) - 1
    } else {
        f.round(x as f64)
    }
}

#[test]
fn to_f32_is_exact_for_every_pattern() {
    fn check<T: F32Exact>() {
        let f = Format::of(T::DTYPE);
        for b in 0..f.words() {
            let got = T::to_f32(bits::<T>(b)).to_bits();
            assert_eq!(got, f.expected_to_f32(b), "{:?} {b:#x}", T::DTYPE);
        }
    }
    for_narrow!(check);
}

#[test]
fn to_f32_matches_half_crate() {
    for b in 0..=u16::MAX {
        let (h, bh) = (half::f16::from_bits(b), half::bf16::from_bits(b));
        if !h.is_nan() {
            assert_eq!(F16::to_f32(b).to_bits(), h.to_f32().to_bits(), "f16 {b:#06x}");
        }
        if !bh.is_nan() {
            assert_eq!(Bf16::to_f32(b).to_bits(), bh.to_f32().to_bits(), "bf16 {b:#06x}");
        }
    }
}

#[test]
fn from_f32_inverts_to_f32_for_every_non_nan_pattern() {
    fn check<T: F32Exact>() {
        let f = Format::of(T::DTYPE);
        for b in (0..f.words()).filter(|&b| !f.is_nan(b)) {
            assert_eq!(raw(T::from_f32(T::to_f32(bits::<T>(b)))), b, "{:?} {b:#x}", T::DTYPE);
        }
    }
    for_narrow!(check);
}

/// Between every two neighbouring non-negative values (and between the largest finite one and
/// the overflow step): the midpoint rounds to the even pattern, one f32 ulp below it to the
/// lower, one above to the upper; the same for negative inputs.
#[test]
fn from_f32_at_every_rounding_boundary() {
    fn check<T: F32Exact>() {
        let f = Format::of(T::DTYPE);
        for p in 0..=f.max_finite() {
            let lo = f.value(p);
            let hi = if p == f.max_finite() {
                lo + (lo - f.value(p - 1))
            } else {
                f.value(p + 1)
            };
            let mid = (lo + hi) / 2.0;
            assert_eq!(mid as f32 as f64, mid, "midpoint not an f32");
            let m = (mid as f32).to_bits();
            let even = if p % 2 == 0 { p } else { p + 1 };
            for sign in [0, 1u32] {
                for (x, want) in [(m, even), (m - 1, p), (m + 1, p + 1)] {
                    let x = f32::from_bits(sign << 31 | x);
                    let want = (sign * f.sign_bit()) | want;
                    assert_eq!(raw(T::from_f32(x)), want, "{:?} from_f32({x:e})", T::DTYPE);
                }
            }
        }
    }
    for_narrow!(check);
}

#[test]
fn from_f32_specials() {
    fn check<T: F32Exact>(cases: &[(u32, u32)]) {
        for &(x, want) in cases {
            let got = raw(T::from_f32(f32::from_bits(x)));
            assert_eq!(
                got,
                want,
                "{:?} from_f32({x:#010x} = {:e})",
                T::DTYPE,
                f32::from_bits(x)
            );
        }
    }
    let b = |x: f32| x.to_bits();
    let (inf, nan) = (f32::INFINITY.to_bits(), 0x7FC0_0000);
    check::<Bf16>(&[
        (0, 0x0000),
        (b(-0.0), 0x8000),
        (inf, 0x7F80),
        (b(-f32::INFINITY), 0xFF80),
        (nan, 0x7FFF),
        (0xFFC0_0001, 0x7FFF),
        (0x7F80_0001, 0x7FFF),
        (b(f32::MAX), 0x7F80),
        (0x7F7F_7FFF, 0x7F7F),
        (0x7F7F_8000, 0x7F80),
        (b(1.0), 0x3F80),
        (0x0000_0001, 0x0000),
        (0x0000_8000, 0x0000),
        (0x0000_8001, 0x0001),
        (0x0001_8000, 0x0002),
        (0x8000_8001, 0x8001),
    ]);
    check::<F16>(&[
        (0, 0x0000),
        (b(-0.0), 0x8000),
        (inf, 0x7C00),
        (b(-f32::INFINITY), 0xFC00),
        (nan, 0x7FFF),
        (0xFFC0_0000, 0x7FFF),
        (0x7F80_0001, 0x7FFF),
        (b(65504.0), 0x7BFF),
        (b(65520.0) - 1, 0x7BFF),
        (b(65520.0), 0x7C00),
        (b(-65520.0), 0xFC00),
        (b(2f32.powi(-24)), 0x0001),
        (b(2f32.powi(-25)), 0x0000),
        (b(2f32.powi(-25)) + 1, 0x0001),
        (b(-(2f32.powi(-25))), 0x8000),
        (b(3.0 * 2f32.powi(-25)), 0x0002),
        (b(2f32.powi(-14)), 0x0400),
        (b(1.0 + 2f32.powi(-11)), 0x3C00),
        (b(1.0 + 3.0 * 2f32.powi(-11)), 0x3C02),
    ]);
    check::<F8E4M3>(&[
        (0, 0x00),
        (b(-0.0), 0x80),
        (b(448.0), 0x7E),
        (b(464.0), 0x7E),
        (b(464.0) + 1, 0x7F),
        (b(-500.0), 0xFF),
        (inf, 0x7F),
        (b(-f32::INFINITY), 0xFF),
        (nan, 0x7F),
        (0xFFC0_0000, 0x7F),
        (b(240.0), 0x77),
        (b(2f32.powi(-9)), 0x01),
        (b(2f32.powi(-10)), 0x00),
        (b(2f32.powi(-10)) + 1, 0x01),
        (b(-(2f32.powi(-10))), 0x80),
        (b(2f32.powi(-6)), 0x08),
    ]);
    check::<F8E5M2>(&[
        (0, 0x00),
        (b(-0.0), 0x80),
        (b(57344.0), 0x7B),
        (b(61440.0) - 1, 0x7B),
        (b(61440.0), 0x7C),
        (inf, 0x7C),
        (b(-f32::INFINITY), 0xFC),
        (nan, 0x7F),
        (0x7FE0_0000, 0x7F),
        (0xFFC0_0000, 0x7F),
        (0x7F80_0001, 0x7F),
        (b(2f32.powi(-16)), 0x01),
        (b(2f32.powi(-17)), 0x00),
        (b(2f32.powi(-14)), 0x04),
    ]);
}

#[test]
fn canonical_nan_is_from_f32_of_f32_canonical_nan() {
    fn check<T: F32Exact>() {
        assert_eq!(raw(T::CANONICAL_NAN), canonical_nan(T::DTYPE), "{:?}", T::DTYPE);
        assert_eq!(
            T::from_f32(f32::from_bits(0x7FFF_FFFF)),
            T::CANONICAL_NAN,
            "{:?}",
            T::DTYPE
        );
        assert!(T::to_f32(T::CANONICAL_NAN).is_nan(), "{:?}", T::DTYPE);
        assert_eq!(T::DTYPE.size_bytes(), core::mem::size_of::<T::Bits>(), "{:?}", T::DTYPE);
    }
    for_narrow!(check);
    check::<F32>();
    assert_eq!(DType::ALL.map(|d| d as u8), core::array::from_fn(|i| i as u8));
}

/// The symbol and raw bits each layout table promises, computed field by field.
fn expected_split(d: DType, w: u32) -> (u32, u32) {
    let nibbles = |exp_of: fn(u32) -> (u32, u32), w: u32| {
        let (lo, hi) = (w & 0xFF, w >> 8);
        let ((sym_lo, rest_lo), (sym_hi, rest_hi)) = (exp_of(lo), exp_of(hi));
        (
            sym_hi << 4 | sym_lo,
            ((hi >> 7) << 3 | rest_hi) << 4 | (lo >> 7) << 3 | rest_lo,
        )
    };
    match d {
        DType::Bf16 => ((w >> 7) & 0xFF, (w >> 15) << 7 | (w & 0x7F)),
        DType::F16 => ((w >> 10) & 0x1F, (w >> 15) << 10 | (w & 0x3FF)),
        DType::F32 => ((w >> 23) & 0xFF, (w >> 31) << 23 | (w & 0x7F_FFFF)),
        // symbol nibble: the 4-bit exponent; raw nibble: sign, 3 mantissa bits
        DType::F8E4M3 => nibbles(|v| ((v >> 3) & 0xF, v & 0x7), w),
        // symbol nibble: exponent bits 4..1; raw nibble: sign, exponent bit 0, 2 mantissa bits
        DType::F8E5M2 => nibbles(|v| (((v >> 2) & 0x1F) >> 1, ((v >> 2) & 1) << 2 | (v & 0x3)), w),
        other => panic!("{other:?} is not a float type reduced through f32"),
    }
}

#[test]
fn split_join_every_16_bit_word() {
    fn check<T: Split>() {
        for w in 0..=u16::MAX as u32 {
            let word = T::Word::from_bits64(w as u64);
            let (s, r) = T::split(word);
            assert_eq!(
                (s as u32, raw(r)),
                expected_split(T::DTYPE, w),
                "{:?} split({w:#06x})",
                T::DTYPE
            );
            assert!((s as u32) < 1 << T::SYMBOL_BITS && raw(r) < 1 << T::RAW_BITS);
            assert_eq!(T::join(s, r), word, "{:?} join(split({w:#06x}))", T::DTYPE);
        }
    }
    for_narrow!(check);
    assert_eq!((Bf16::ELEMS_PER_WORD, F16::ELEMS_PER_WORD), (1, 1));
    assert_eq!((F8E4M3::ELEMS_PER_WORD, F8E5M2::ELEMS_PER_WORD), (2, 2));
}

#[test]
fn join_split_every_symbol_and_raw() {
    fn check<T: Split>() {
        let (sym_mask, raw_mask) = ((1u32 << T::SYMBOL_BITS) - 1, (1u32 << T::RAW_BITS) - 1);
        for s in 0..=sym_mask {
            for r in 0..=raw_mask {
                let rr = T::Raw::from_bits64(r as u64);
                let w = T::join(s as u8, rr);
                assert_eq!(T::split(w), (s as u8, rr), "{:?} split(join({s:#x}, {r:#x}))", T::DTYPE);
                // Bits above the widths are ignored.
                let (s_hi, r_hi) = (s | (0xFF & !sym_mask), r | (0xFFFF & !raw_mask));
                assert_eq!(T::join(s_hi as u8, T::Raw::from_bits64(r_hi as u64)), w);
            }
        }
    }
    for_narrow!(check);
}

#[test]
fn fp8_pairs_pack_low_byte_first() {
    for w in 0..=u16::MAX {
        let (lo, hi) = unpack_pair(w);
        assert_eq!(w.to_le_bytes(), [lo, hi]);
        assert_eq!(pack_pair(lo, hi), w);
    }
}

/// Inputs dense around a format's range: any sign and mantissa, exponents from below half the
/// smallest subnormal to above the overflow threshold.
fn near(f: &'static Format) -> impl Strategy<Value = u32> {
    let bias = (1u32 << (f.exp - 1)) - 1;
    let lo = 126u32.saturating_sub(bias + f.man);
    let hi = (127 + bias + 2).min(255);
    (any::<bool>(), lo..=hi, 0u32..1 << 23).prop_map(|(s, e, m)| (s as u32) << 31 | e << 23 | m)
}

proptest! {
    #[test]
    fn from_f32_matches_reference_on_any_bits(x in any::<u32>()) {
        let x = f32::from_bits(x);
        prop_assert_eq!(Bf16::from_f32(x) as u32, expected_from_f32(&FMT_BF16, x));
        prop_assert_eq!(F16::from_f32(x) as u32, expected_from_f32(&FMT_F16, x));
        prop_assert_eq!(F8E4M3::from_f32(x) as u32, expected_from_f32(&FMT_E4M3, x));
        prop_assert_eq!(F8E5M2::from_f32(x) as u32, expected_from_f32(&FMT_E5M2, x));
    }

    #[test]
    fn bf16_from_f32_matches_reference_near_its_range(x in near(&FMT_BF16)) {
        prop_assert_eq!(Bf16::from_f32(f32::from_bits(x)) as u32, expected_from_f32(&FMT_BF16, f32::from_bits(x)));
    }

    #[test]
    fn f16_from_f32_matches_reference_near_its_range(x in near(&FMT_F16)) {
        prop_assert_eq!(F16::from_f32(f32::from_bits(x)) as u32, expected_from_f32(&FMT_F16, f32::from_bits(x)));
    }

    #[test]
    fn e4m3_from_f32_matches_reference_near_its_range(x in near(&FMT_E4M3)) {
        prop_assert_eq!(F8E4M3::from_f32(f32::from_bits(x)) as u32, expected_from_f32(&FMT_E4M3, f32::from_bits(x)));
    }

    #[test]
    fn e5m2_from_f32_matches_reference_near_its_range(x in near(&FMT_E5M2)) {
        prop_assert_eq!(F8E5M2::from_f32(f32::from_bits(x)) as u32, expected_from_f32(&FMT_E5M2, f32::from_bits(x)));
    }

    #[test]
    fn from_f32_matches_half_crate(x in prop_oneof![any::<u32>(), near(&FMT_F16), near(&FMT_BF16)]) {
        let x = f32::from_bits(x);
        prop_assume!(!x.is_nan());
        prop_assert_eq!(F16::from_f32(x), half::f16::from_f32(x).to_bits());
        prop_assert_eq!(Bf16::from_f32(x), half::bf16::from_f32(x).to_bits());
    }

    #[test]
    fn f32_conversions_are_identity_and_split_is_exact(w in any::<u32>()) {
        prop_assert_eq!(F32::to_f32(w).to_bits(), w);
        prop_assert_eq!(F32::from_f32(f32::from_bits(w)), w);
        let (s, r) = F32::split(w);
        prop_assert_eq!((s as u32, r), expected_split(DType::F32, w));
        prop_assert_eq!(F32::join(s, r), w);
        prop_assert_eq!(F32::split(F32::join(s, r | 0xFF00_0000)), (s, r));
    }
}
