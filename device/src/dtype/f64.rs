//! [`F64`]: IEEE 754 binary64, reduced natively.
//!
//! | bits      | 63   | 62..55             | 54..52            | 51..0    |
//! |-----------|------|--------------------|-------------------|----------|
//! | value     | sign | exponent 10..3     | exponent 2..0     | mantissa |
//! | split     | raw bit 55 | symbol       | raw bits 54..52   | raw bits 51..0 |
//!
//! The exponent has 11 bits, too many for a byte: the symbol is its top eight, and the three
//! below travel in the raw part (as e5m2's least significant exponent bit does).

use super::arith::{max_f64, min_f64};
use super::{DType, Elem, Split};

/// IEEE binary64. Results that are NaN are `0x7FFF_FFFF_FFFF_FFFF` (all bits set but the sign).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct F64;

/// f64's canonical NaN: all bits set but the sign.
const CANONICAL_NAN: u64 = 0x7FFF_FFFF_FFFF_FFFF;

/// The bits of `r`, or the canonical NaN when `r` is NaN.
#[inline(always)]
fn canonical(r: f64) -> u64 {
    if r.is_nan() {
        CANONICAL_NAN
    } else {
        r.to_bits()
    }
}

/// `f` applied to the values of `a` and `b`.
#[inline(always)]
fn native(a: u64, b: u64, f: impl FnOnce(f64, f64) -> f64) -> u64 {
    canonical(f(f64::from_bits(a), f64::from_bits(b)))
}

impl Elem for F64 {
    type Bits = u64;
    const DTYPE: DType = DType::F64;

    #[inline(always)]
    fn add(a: u64, b: u64) -> u64 {
        native(a, b, |a, b| a + b)
    }
    #[inline(always)]
    fn mul(a: u64, b: u64) -> u64 {
        native(a, b, |a, b| a * b)
    }
    #[inline(always)]
    fn min(a: u64, b: u64) -> u64 {
        native(a, b, min_f64)
    }
    #[inline(always)]
    fn max(a: u64, b: u64) -> u64 {
        native(a, b, max_f64)
    }
    #[inline(always)]
    fn scale(x: u64, scalar: u64) -> u64 {
        native(x, scalar, |x, s| x * s)
    }
    #[inline(always)]
    fn scalar_of(x: u64) -> u64 {
        x
    }
}

/// Bits 54..0: the raw part's bits below the sign.
const LOW: u64 = (1 << 55) - 1;

impl Split for F64 {
    type Word = u64;
    type Raw = u64;
    const ELEMS_PER_WORD: usize = 1;
    const SYMBOL_BITS: u32 = 8;
    const RAW_BITS: u32 = 56;

    #[inline(always)]
    fn split(w: u64) -> (u8, u64) {
        ((w >> 55) as u8, ((w >> 8) & (1 << 55)) | (w & LOW))
    }

    #[inline(always)]
    fn join(symbol: u8, raw: u64) -> u64 {
        ((raw & (1 << 55)) << 8) | ((symbol as u64) << 55) | (raw & LOW)
    }
}
