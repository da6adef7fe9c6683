//! f64 and the integer types: every operation against native Rust arithmetic (exhaustive over
//! every pair of the 8-bit types, property-based for the wider ones, special values of f64
//! against each other), every split exact, and the `DType` helpers they use.

use proptest::prelude::*;
use zipcoll_device::dtype::{pack_pair, DType, Elem, Split, F64, I32, I64, I8, U32, U64, U8};
use zipcoll_device::reduce::{Avg, Max, Min, Prod, RedOp, Sum};

/// Every operation of `T` on `(a, b)` against `want` (native arithmetic of the same width),
/// both operand orders (every operation is commutative bit for bit).
fn check_ops<T: Elem>(a: T::Bits, b: T::Bits, want: [T::Bits; 4]) {
    let got = [
        Sum.combine::<T>(a, b),
        Prod.combine::<T>(a, b),
        Min.combine::<T>(a, b),
        Max.combine::<T>(a, b),
    ];
    assert_eq!(got, want, "{:?} sum, prod, min, max of ({a:?}, {b:?})", T::DTYPE);
    let swapped = [
        Sum.combine::<T>(b, a),
        Prod.combine::<T>(b, a),
        Min.combine::<T>(b, a),
        Max.combine::<T>(b, a),
    ];
    assert_eq!(swapped, got, "{:?}: not commutative", T::DTYPE);
}

#[test]
fn every_pair_of_bytes() {
    for a in 0..=u8::MAX {
        for b in 0..=u8::MAX {
            let (sa, sb) = (a as i8, b as i8);
            check_ops::<I8>(
                a,
                b,
                [
                    sa.wrapping_add(sb) as u8,
                    sa.wrapping_mul(sb) as u8,
                    sa.min(sb) as u8,
                    sa.max(sb) as u8,
                ],
            );
            check_ops::<U8>(a, b, [a.wrapping_add(b), a.wrapping_mul(b), a.min(b), a.max(b)]);
            // PreMulSum's pre on integers: a wrapping product with the scalar
            assert_eq!(Avg::scaled(u64::from(b)).pre::<I8>(a), sa.wrapping_mul(sb) as u8);
        }
    }
}

proptest! {
    #[test]
    fn ints_of_32_and_64_bits_match_native(a in any::<u64>(), b in any::<u64>()) {
        let (a32, b32) = (a as u32, b as u32);
        let (s32, t32) = (a32 as i32, b32 as i32);
        check_ops::<I32>(a32, b32, [
            s32.wrapping_add(t32) as u32, s32.wrapping_mul(t32) as u32, s32.min(t32) as u32, s32.max(t32) as u32,
        ]);
        check_ops::<U32>(a32, b32, [a32.wrapping_add(b32), a32.wrapping_mul(b32), a32.min(b32), a32.max(b32)]);
        let (s64, t64) = (a as i64, b as i64);
        check_ops::<I64>(a, b, [
            s64.wrapping_add(t64) as u64, s64.wrapping_mul(t64) as u64, s64.min(t64) as u64, s64.max(t64) as u64,
        ]);
        check_ops::<U64>(a, b, [a.wrapping_add(b), a.wrapping_mul(b), a.min(b), a.max(b)]);
    }

    #[test]
    fn f64_ops_match_native_on_any_bits(a in any::<u64>(), b in any::<u64>(), n in 1u32..2000) {
        let (x, y) = (f64::from_bits(a), f64::from_bits(b));
        check_ops::<F64>(a, b, [f64_ref(x + y), f64_ref(x * y), min_ref(a, b), max_ref(a, b)]);
        prop_assert_eq!(Avg::new::<F64>(n).pre::<F64>(a), f64_ref(x * (1.0 / f64::from(n))));
        prop_assert_eq!(Avg::scaled(b).pre::<F64>(a), f64_ref(x * y));
    }

    #[test]
    fn wide_splits_are_exact(w in any::<u64>(), s in any::<u8>(), r in any::<u64>()) {
        check_split::<I32>(w as u32, s, r as u32 & 0xFF_FFFF);
        check_split::<U32>(w as u32, s, r as u32 & 0xFF_FFFF);
        check_split::<I64>(w, s, r & ((1 << 56) - 1));
        check_split::<U64>(w, s, r & ((1 << 56) - 1));
        check_split::<F64>(w, s, r & ((1 << 56) - 1));
        // the fields each layout table promises
        prop_assert_eq!(U32::split(w as u32), ((w >> 24) as u8, w as u32 & 0xFF_FFFF));
        prop_assert_eq!(U64::split(w), ((w >> 56) as u8, w & ((1 << 56) - 1)));
        let exponent = (w >> 52) & 0x7FF;
        let f64_raw = (w >> 63) << 55 | (exponent & 7) << 52 | (w & ((1 << 52) - 1));
        prop_assert_eq!(F64::split(w), ((exponent >> 3) as u8, f64_raw));
    }
}

/// `join(split(w)) == w`, and `split(join(s, r)) == (s, r)` for a symbol `s` and raw `r` of the
/// declared widths.
fn check_split<T: Split>(w: T::Word, s: u8, r: T::Raw) {
    let (symbol, raw) = T::split(w);
    assert_eq!(T::join(symbol, raw), w, "{:?}: join(split({w:?}))", T::DTYPE);
    assert_eq!(
        T::split(T::join(s, r)),
        (s, r),
        "{:?}: split(join({s}, {r:?}))",
        T::DTYPE
    );
}

#[test]
fn byte_splits_are_exact_for_every_pair() {
    fn check<T: Split<Word = u16, Raw = u8>>() {
        for w in 0..=u16::MAX {
            let (lo, hi) = (w as u8, (w >> 8) as u8);
            let want = ((hi & 0xF0) | (lo >> 4), (hi & 0xF) << 4 | (lo & 0xF));
            assert_eq!(T::split(w), want, "{:?} split({w:#06x})", T::DTYPE);
            assert_eq!(T::join(want.0, want.1), w);
            assert_eq!(T::split(T::join(w as u8, (w >> 8) as u8)), (w as u8, (w >> 8) as u8));
        }
        assert_eq!((T::ELEMS_PER_WORD, T::SYMBOL_BITS, T::RAW_BITS), (2, 8, 8));
        assert_eq!(T::split(pack_pair(0x12, 0x34)), (0x31, 0x42));
    }
    check::<I8>();
    check::<U8>();
}

/// f64's canonical NaN for a NaN result, the value's bits otherwise.
fn f64_ref(r: f64) -> u64 {
    if r.is_nan() {
        0x7FFF_FFFF_FFFF_FFFF
    } else {
        r.to_bits()
    }
}

/// min with the table's rules: NaN if either is, `min(-0, +0) = -0`.
fn min_ref(a: u64, b: u64) -> u64 {
    let (x, y) = (f64::from_bits(a), f64::from_bits(b));
    if x.is_nan() || y.is_nan() {
        0x7FFF_FFFF_FFFF_FFFF
    } else if x == 0.0 && y == 0.0 {
        if x.is_sign_negative() || y.is_sign_negative() {
            (-0.0f64).to_bits()
        } else {
            0
        }
    } else {
        x.min(y).to_bits()
    }
}

/// max with the table's rules: NaN if either is, `max(-0, +0) = +0`.
fn max_ref(a: u64, b: u64) -> u64 {
    let (x, y) = (f64::from_bits(a), f64::from_bits(b));
    if x.is_nan() || y.is_nan() {
        0x7FFF_FFFF_FFFF_FFFF
    } else if x == 0.0 && y == 0.0 {
        if x.is_sign_positive() || y.is_sign_positive() {
            0
        } else {
            (-0.0f64).to_bits()
        }
    } else {
        x.max(y).to_bits()
    }
}

#[test]
fn f64_specials_against_specials() {
    let specials: Vec<u64> = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::MAX,
        f64::MIN_POSITIVE,
        5e-324,
        -5e-324,
        1e300,
    ]
    .iter()
    .map(|x: &f64| x.to_bits())
    .chain([0x7FF8_0000_0000_0000, 0xFFF8_0000_0000_0001, 0x7FF0_0000_0000_0001])
    .collect();
    for &a in &specials {
        for &b in &specials {
            let (x, y) = (f64::from_bits(a), f64::from_bits(b));
            check_ops::<F64>(a, b, [f64_ref(x + y), f64_ref(x * y), min_ref(a, b), max_ref(a, b)]);
        }
    }
    // the cases the rules single out, as literal bits
    assert_eq!(Min.combine::<F64>(0, 1 << 63), 1 << 63);
    assert_eq!(Max.combine::<F64>(1 << 63, 0), 0);
    assert_eq!(Sum.combine::<F64>(0xFFF8_0000_0000_1234, 0), 0x7FFF_FFFF_FFFF_FFFF);
}

#[test]
fn dtype_helpers_of_the_new_types() {
    for d in DType::ALL {
        assert_eq!(DType::from_u8(d as u8), Some(d));
        assert_eq!(d.coded(), DType::CODED.contains(&d), "{d:?}");
        assert_eq!(d.avg_scalar(4).is_none(), d.is_integer(), "{d:?}");
        assert_eq!(d.scalar_bits(0.5).is_none(), d.is_integer(), "{d:?}");
        assert_eq!(d.float_value(0).is_none(), d.is_integer(), "{d:?}");
    }
    fn size<T: Elem>() -> (usize, usize) {
        (T::DTYPE.size_bytes(), core::mem::size_of::<T::Bits>())
    }
    for (declared, stored) in [
        size::<I8>(),
        size::<U8>(),
        size::<I32>(),
        size::<U32>(),
        size::<I64>(),
        size::<U64>(),
        size::<F64>(),
    ] {
        assert_eq!(declared, stored);
    }
    assert_eq!(DType::F64.avg_scalar(3), Some((1.0f64 / 3.0).to_bits()));
    assert_eq!(DType::F32.avg_scalar(3), Some(u64::from((1.0f32 / 3.0).to_bits())));
    assert_eq!(DType::Bf16.scalar_bits(0.1), Some(u64::from(0.1f32.to_bits())));
    assert_eq!(DType::F64.float_value(2.5f64.to_bits()), Some(2.5));
    assert_eq!(DType::Bf16.float_value(0x3F80), Some(1.0));
    assert_eq!(DType::from_u8(12), None);
}

/// NCCL's SumPostDiv post-operation (`Elem::div_toward_zero`): every 8-bit value by every
/// divisor up to 300 (past the type's range) and by 2^63, against i128 division, which rounds
/// toward zero; a zero divisor leaves the value.
#[test]
fn integer_division_rounds_toward_zero() {
    for x in 0..=u8::MAX {
        for d in (0..=300u64).chain([1 << 63]) {
            let (signed, unsigned) = if d == 0 {
                (x, x)
            } else {
                (
                    (i128::from(x as i8) / i128::from(d)) as i8 as u8,
                    (u64::from(x) / d) as u8,
                )
            };
            assert_eq!(I8::div_toward_zero(x, d), signed, "i8 {} / {d}", x as i8);
            assert_eq!(U8::div_toward_zero(x, d), unsigned, "u8 {x} / {d}");
        }
    }
    assert_eq!(I64::div_toward_zero(i64::MIN as u64, 1), i64::MIN as u64);
    assert_eq!(I64::div_toward_zero(i64::MIN as u64, 2), (i64::MIN / 2) as u64);
    assert_eq!(I32::div_toward_zero(-7i32 as u32, 2), -3i32 as u32);
    assert_eq!(U32::div_toward_zero(u32::MAX, 2), u32::MAX / 2);
    // floats average through the factor and never divide
    assert_eq!(F64::div_toward_zero(3.0f64.to_bits(), 2), 3.0f64.to_bits());
}

proptest! {
    #[test]
    fn wide_integer_division_rounds_toward_zero(a: u64, d in 1u64..) {
        let q = |x: i128| x / i128::from(d);
        prop_assert_eq!(I32::div_toward_zero(a as u32, d), q(i128::from(a as u32 as i32)) as u32);
        prop_assert_eq!(U32::div_toward_zero(a as u32, d), q(i128::from(a as u32)) as u32);
        prop_assert_eq!(I64::div_toward_zero(a, d), q(i128::from(a as i64)) as u64);
        prop_assert_eq!(U64::div_toward_zero(a, d), q(i128::from(a)) as u64);
    }
}

/// Which kernels divide their result ([`post_divisor`]): the integer Sum kernels with a
/// descriptor scalar above 1, nothing else.
#[test]
fn only_integer_sums_divide_their_result() {
    use zipcoll_device::dtype::F32;
    use zipcoll_device::reduce::post_divisor;
    assert_eq!(post_divisor::<I32, Sum>(4), Some(4));
    assert_eq!(post_divisor::<U8, Sum>(300), Some(300));
    assert_eq!(post_divisor::<I64, Sum>(1), None);
    assert_eq!(post_divisor::<I64, Sum>(0), None);
    assert_eq!(post_divisor::<I32, Avg>(4), None);
    assert_eq!(post_divisor::<I32, Prod>(4), None);
    assert_eq!(post_divisor::<I32, Max>(4), None);
    assert_eq!(post_divisor::<F32, Sum>(4), None);
    assert_eq!(post_divisor::<F64, Sum>(4), None);
}

/// PreMulSum's scalar for the integer types: from an `f64` only when it is a value of the type,
/// from a value's bits always (sign-extended for the signed types, bits above the width
/// ignored), and the wrapping product with it.
#[test]
fn integer_pre_mul_sum_scalars() {
    assert_eq!(DType::I8.scalar_bits(-128.0), Some(-128i64 as u64));
    assert_eq!(DType::I8.scalar_bits(127.0), Some(127));
    assert_eq!(DType::U8.scalar_bits(255.0), Some(255));
    assert_eq!(
        DType::U64.scalar_bits(18446744073709549568.0),
        Some(18446744073709549568)
    );
    assert_eq!(DType::I64.scalar_bits(-9223372036854775808.0), Some(i64::MIN as u64));
    for (d, s) in [
        (DType::I8, -129.0),
        (DType::I8, 128.0),
        (DType::U8, 256.0),
        (DType::U8, -1.0),
        (DType::I32, 2.5),
        (DType::U32, 4294967296.0),
        (DType::I64, 9223372036854775808.0),
        (DType::U64, 18446744073709551616.0),
        (DType::U64, f64::NAN),
        (DType::I32, f64::INFINITY),
    ] {
        assert_eq!(d.scalar_bits(s), None, "{d:?} {s}");
    }
    assert_eq!(DType::I8.scalar_of_value(0x00AB_CDFF), u64::MAX);
    assert_eq!(DType::U8.scalar_of_value(0x00AB_CDFF), 0xFF);
    assert_eq!(DType::I32.scalar_of_value(0x1_8000_0000), i64::from(i32::MIN) as u64);
    assert_eq!(DType::U32.scalar_of_value(0x1_8000_0000), 0x8000_0000);
    assert_eq!(
        DType::I64.scalar_of_value(i64::MIN as u64 + 12345),
        i64::MIN as u64 + 12345
    );
    assert_eq!(DType::Bf16.scalar_of_value(0x3F80), u64::from(1.0f32.to_bits()));
    // a signaling NaN's payload is kept (as the kernel widens it), not quieted through f64
    assert_eq!(DType::Bf16.scalar_of_value(0x7FA8), 0x7FA8_0000);
    assert_eq!(DType::F8E4M3.scalar_of_value(0x38), u64::from(1.0f32.to_bits()));
    assert_eq!(DType::F64.scalar_of_value(2.5f64.to_bits()), 2.5f64.to_bits());
    // the product wraps in the type whatever the scalar's high bits
    let minus_one = DType::I32.scalar_of_value(u64::from(u32::MAX));
    assert_eq!(Avg::scaled(minus_one).pre::<I32>(5), -5i32 as u32);
    assert_eq!(Avg::scaled(DType::U8.scalar_of_value(3)).pre::<U8>(100), 44);
}
