//! [`Bf16`]: bfloat16, the top half of an f32 (1 sign, 8 exponent, 7 mantissa bits).
//!
//! | bits      | 15   | 14..7    | 6..0     |
//! |-----------|------|----------|----------|
//! | value     | sign | exponent | mantissa |
//! | split     | raw bit 7 | symbol | raw bits 6..0 |

use super::arith::f32_arith;
use super::round::narrow_magnitude;
use super::{DType, Elem, F32Exact, Split};

/// bfloat16. `to_f32` is a plain shift; `from_f32` rounds to nearest even, overflows to ±inf,
/// and maps every NaN to `0x7FFF` as CUDA's `__float2bfloat16_rn` does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Bf16;

impl Elem for Bf16 {
    type Bits = u16;
    const DTYPE: DType = DType::Bf16;
    f32_arith!();
}

impl F32Exact for Bf16 {
    const CANONICAL_NAN: u16 = 0x7FFF;

    #[inline(always)]
    fn to_f32(b: u16) -> f32 {
        f32::from_bits((b as u32) << 16)
    }

    #[inline(always)]
    fn from_f32(x: f32) -> u16 {
        let bits = x.to_bits();
        let a = bits & 0x7FFF_FFFF;
        if a > 0x7F80_0000 {
            return Self::CANONICAL_NAN;
        }
        // bf16 has f32's exponent range, so the rounding never leaves the 0x7F80 (inf) pattern.
        ((bits >> 16) & 0x8000) as u16 | narrow_magnitude(a, 8, 7) as u16
    }
}

impl Split for Bf16 {
    type Word = u16;
    type Raw = u8;
    const ELEMS_PER_WORD: usize = 1;
    const SYMBOL_BITS: u32 = 8;
    const RAW_BITS: u32 = 8;

    #[inline(always)]
    fn split(w: u16) -> (u8, u8) {
        ((w >> 7) as u8, ((w >> 8) as u8 & 0x80) | (w as u8 & 0x7F))
    }

    #[inline(always)]
    fn join(symbol: u8, raw: u8) -> u16 {
        ((raw as u16 & 0x80) << 8) | ((symbol as u16) << 7) | (raw as u16 & 0x7F)
    }
}
