//! [`F8E4M3`] and [`F8E5M2`]: the OCP 8-bit floats, and their split of a pair of values.
//!
//! | format | bits 7 | 6..3          | 2..0                    | bias | inf        | NaN             | max finite |
//! |--------|--------|---------------|-------------------------|------|------------|-----------------|------------|
//! | e4m3   | sign   | exponent      | mantissa                | 7    | none       | `S.1111.111`    | 448        |
//! | e5m2   | sign   | exponent 4..1 | exponent 0, mantissa 1..0 | 15 | `S.11111.00` | `S.11111.{01,10,11}` | 57344 |
//!
//! The split acts on a `u16` holding two consecutive values ([`pack_pair`]: element `i` in the
//! low byte, element `i + 1` in the high byte), so the exponent stream is one byte per pair.
//! Both formats use the same bit positions: the symbol is bits 6..3 of each byte, the raw part
//! is bits 7 and 2..0 of each byte.
//!
//! | word bits | 15     | 14..11     | 10..8      | 7      | 6..3       | 2..0       |
//! |-----------|--------|------------|------------|--------|------------|------------|
//! | e4m3      | sign hi | exp hi    | mant hi    | sign lo | exp lo    | mant lo    |
//! | e5m2      | sign hi | exp hi 4..1 | exp hi 0, mant hi | sign lo | exp lo 4..1 | exp lo 0, mant lo |
//! | symbol    |        | bits 7..4  |            |        | bits 3..0  |            |
//! | raw       | bit 7  |            | bits 6..4  | bit 3  |            | bits 2..0  |
//!
//! For e4m3 the symbol is both exponents whole; for e5m2 (10 exponent bits, too many for a
//! byte) it is both exponents' top four bits, and their least significant bits travel in raw.

use super::arith::f32_arith;
use super::round::{narrow_magnitude, widen_magnitude};
use super::{DType, Elem, F32Exact, Split, F32_CANONICAL_NAN};

/// Two fp8 values as the `u16` word that [`Split`] acts on: `lo` is the earlier element.
#[inline(always)]
pub const fn pack_pair(lo: u8, hi: u8) -> u16 {
    lo as u16 | (hi as u16) << 8
}

/// The two fp8 values of a word made by [`pack_pair`]: `(lo, hi)`.
#[inline(always)]
pub const fn unpack_pair(w: u16) -> (u8, u8) {
    (w as u8, (w >> 8) as u8)
}

/// The symbol (bits 6..3 of each byte of `w`) and the raw part (bits 7 and 2..0 of each byte).
#[inline(always)]
const fn split_pair(w: u16) -> (u8, u8) {
    let (lo, hi) = unpack_pair(w);
    let symbol = ((hi >> 3) & 0xF) << 4 | ((lo >> 3) & 0xF);
    let raw = ((hi & 0x80) | (hi & 0x7) << 4) | ((lo & 0x80) >> 4 | (lo & 0x7));
    (symbol, raw)
}

/// The inverse of [`split_pair`].
#[inline(always)]
const fn join_pair(symbol: u8, raw: u8) -> u16 {
    let hi = (raw & 0x80) | (symbol >> 4) << 3 | (raw >> 4) & 0x7;
    let lo = (raw & 0x8) << 4 | (symbol & 0xF) << 3 | (raw & 0x7);
    pack_pair(lo, hi)
}

/// The NaN both formats produce: all bits set but the sign ([`F32Exact::CANONICAL_NAN`]).
const NAN: u8 = 0x7F;

/// The bit layout and special values of an fp8 format: all that its conversions (in `fp8!`)
/// need to know.
struct Format {
    /// Exponent bits.
    exp: u32,
    /// Mantissa bits.
    man: u32,
    /// The largest finite magnitude (the bits below the sign).
    max_finite: u32,
    /// The magnitude of infinity (IEEE-like: every magnitude above it is a NaN), or `None`: no
    /// infinity, and the all-ones magnitude is the only NaN.
    inf: Option<u32>,
    /// What a finite value that rounds above `max_finite` becomes (sign apart): infinity, or the
    /// NaN pattern of a format without one (as CUDA's `__NV_NOSAT` conversion does).
    overflow: u8,
}

/// e4m3 ("FN"): no infinities; only `S.1111.111` is NaN.
const E4M3: Format = Format {
    exp: 4,
    man: 3,
    max_finite: 0x7E,
    inf: None,
    overflow: 0x7F,
};

/// e5m2: IEEE-like, infinity `S.11111.00`.
const E5M2: Format = Format {
    exp: 5,
    man: 2,
    max_finite: 0x7B,
    inf: Some(0x7C),
    overflow: 0x7C,
};

/// `impl Elem`, `impl F32Exact` and `impl Split` for the fp8 type `$t` of format `$format`, one definition for
/// both formats. `to_f32` is exact and maps every NaN to f32's canonical NaN; `from_f32` rounds
/// to nearest even, overflow becomes `$format.overflow` with the input's sign, a NaN becomes
/// `NAN` whatever its sign. Values split in pairs (`split_pair`).
///
/// A macro rather than generic functions over a `Format` argument: with the conversions in
/// functions of their own, rustc and LLVM inline `widen_magnitude` and `narrow_magnitude`
/// differently, and every fp8 and f16 kernel's code changes (e4m3 reductions took 1 to 3 more
/// registers on sm_90); written in the methods, the code is the same as one impl per format.
macro_rules! fp8 {
    ($t:ty, $dtype:expr, $format:expr) => {
        impl Elem for $t {
            type Bits = u8;
            const DTYPE: DType = $dtype;
            f32_arith!();
        }

        impl F32Exact for $t {
            const CANONICAL_NAN: u8 = NAN;

            #[inline(always)]
            fn to_f32(b: u8) -> f32 {
                const F: Format = $format;
                let sign = ((b & 0x80) as u32) << 24;
                let mag = (b & 0x7F) as u32;
                match F.inf {
                    // only the all-ones magnitude is NaN
                    None => {
                        if mag == 0x7F {
                            return f32::from_bits(F32_CANONICAL_NAN);
                        }
                        f32::from_bits(sign | widen_magnitude(mag, F.exp, F.man))
                    }
                    // infinity, then NaNs above it
                    Some(inf) => {
                        let bits = if mag < inf {
                            widen_magnitude(mag, F.exp, F.man)
                        } else if mag == inf {
                            0x7F80_0000
                        } else {
                            return f32::from_bits(F32_CANONICAL_NAN);
                        };
                        f32::from_bits(sign | bits)
                    }
                }
            }

            #[inline(always)]
            fn from_f32(x: f32) -> u8 {
                const F: Format = $format;
                let bits = x.to_bits();
                let sign = (bits >> 24) as u8 & 0x80;
                let a = bits & 0x7FFF_FFFF;
                if a > 0x7F80_0000 {
                    return NAN;
                }
                let r = narrow_magnitude(a, F.exp, F.man);
                sign | if r > F.max_finite { F.overflow } else { r as u8 }
            }
        }

        impl Split for $t {
            type Word = u16;
            type Raw = u8;
            const ELEMS_PER_WORD: usize = 2;
            const SYMBOL_BITS: u32 = 8;
            const RAW_BITS: u32 = 8;

            #[inline(always)]
            fn split(w: u16) -> (u8, u8) {
                split_pair(w)
            }

            #[inline(always)]
            fn join(symbol: u8, raw: u8) -> u16 {
                join_pair(symbol, raw)
            }
        }
    };
}

/// OCP fp8 e4m3 ("FN": no infinities). `to_f32` is exact and maps both NaNs to f32's canonical
/// `0x7FFF_FFFF`; `from_f32` rounds as CUDA's `__nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E4M3)`:
/// nearest even, magnitudes above 464 (448 plus half a step) and ±inf become `S.1111.111` with
/// the input's sign; a NaN becomes `0x7F` (as `cvt.rn.satfinite.e4m3x2.f32` does).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct F8E4M3;

fp8!(F8E4M3, DType::F8E4M3, E4M3);

/// OCP fp8 e5m2 (IEEE-like). `to_f32` is exact and maps every NaN to f32's canonical
/// `0x7FFF_FFFF`; `from_f32` rounds as CUDA's `__nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E5M2)`:
/// nearest even, overflow to ±inf; a NaN becomes `0x7F` (as `cvt.rn.satfinite.e5m2x2.f32` does).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct F8E5M2;

fp8!(F8E5M2, DType::F8E5M2, E5M2);
