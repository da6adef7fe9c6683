//! [`F16`]: IEEE 754 binary16 (1 sign, 5 exponent, 10 mantissa bits, bias 15).
//!
//! | bits      | 15   | 14..10   | 9..0     |
//! |-----------|------|----------|----------|
//! | value     | sign | exponent | mantissa |
//! | split     | raw bit 10 | symbol (5 bits) | raw bits 9..0 |

use super::arith::f32_arith;
use super::round::{narrow_magnitude, widen_magnitude};
use super::{DType, Elem, F32Exact, Split, F32_CANONICAL_NAN};

/// IEEE binary16. `to_f32` is exact, subnormals included, and maps every NaN to f32's canonical
/// `0x7FFF_FFFF` (as `cvt.f32.f16` does); `from_f32` rounds to nearest even, overflows to ±inf,
/// and maps every NaN to `0x7FFF` (as `__float2half_rn` and `cvt.rn.f16.f32` do).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct F16;

impl Elem for F16 {
    type Bits = u16;
    const DTYPE: DType = DType::F16;
    f32_arith!();
}

impl F32Exact for F16 {
    const CANONICAL_NAN: u16 = 0x7FFF;

    #[inline(always)]
    fn to_f32(b: u16) -> f32 {
        let sign = ((b & 0x8000) as u32) << 16;
        let mag = (b & 0x7FFF) as u32;
        let bits = if mag < 0x7C00 {
            widen_magnitude(mag, 5, 10)
        } else if mag == 0x7C00 {
            0x7F80_0000
        } else {
            return f32::from_bits(F32_CANONICAL_NAN);
        };
        f32::from_bits(sign | bits)
    }

    #[inline(always)]
    fn from_f32(x: f32) -> u16 {
        let bits = x.to_bits();
        let a = bits & 0x7FFF_FFFF;
        if a > 0x7F80_0000 {
            return Self::CANONICAL_NAN;
        }
        let r = narrow_magnitude(a, 5, 10);
        ((bits >> 16) & 0x8000) as u16 | if r > 0x7BFF { 0x7C00 } else { r as u16 }
    }
}

impl Split for F16 {
    type Word = u16;
    type Raw = u16;
    const ELEMS_PER_WORD: usize = 1;
    const SYMBOL_BITS: u32 = 5;
    const RAW_BITS: u32 = 11;

    #[inline(always)]
    fn split(w: u16) -> (u8, u16) {
        (((w >> 10) & 0x1F) as u8, ((w >> 5) & 0x400) | (w & 0x3FF))
    }

    #[inline(always)]
    fn join(symbol: u8, raw: u16) -> u16 {
        ((raw & 0x400) << 5) | (((symbol & 0x1F) as u16) << 10) | (raw & 0x3FF)
    }
}
