//! [`F32`]: IEEE 754 binary32, reduced natively.
//!
//! | bits      | 31   | 30..23   | 22..0    |
//! |-----------|------|----------|----------|
//! | value     | sign | exponent | mantissa |
//! | split     | raw bit 23 | symbol | raw bits 22..0 |

use super::arith::f32_arith;
use super::{DType, Elem, F32Exact, Split, F32_CANONICAL_NAN};

/// IEEE binary32; both conversions are the identity on bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct F32;

impl Elem for F32 {
    type Bits = u32;
    const DTYPE: DType = DType::F32;
    f32_arith!();
}

impl F32Exact for F32 {
    const CANONICAL_NAN: u32 = F32_CANONICAL_NAN;

    #[inline(always)]
    fn to_f32(b: u32) -> f32 {
        f32::from_bits(b)
    }

    #[inline(always)]
    fn from_f32(x: f32) -> u32 {
        x.to_bits()
    }
}

impl Split for F32 {
    type Word = u32;
    type Raw = u32;
    const ELEMS_PER_WORD: usize = 1;
    const SYMBOL_BITS: u32 = 8;
    const RAW_BITS: u32 = 24;

    #[inline(always)]
    fn split(w: u32) -> (u8, u32) {
        ((w >> 23) as u8, ((w >> 8) & 0x80_0000) | (w & 0x7F_FFFF))
    }

    #[inline(always)]
    fn join(symbol: u8, raw: u32) -> u32 {
        ((raw & 0x80_0000) << 8) | ((symbol as u32) << 23) | (raw & 0x7F_FFFF)
    }
}
