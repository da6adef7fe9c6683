//! Element types: the storage word of each float type, its split into an exponent symbol plus
//! the remaining raw bits, and its conversions through `f32`.
//!
//! | type      | `Bits` | one `Elem` value is        | exponent symbol           | raw bits           |
//! |-----------|--------|----------------------------|---------------------------|--------------------|
//! | [`Bf16`]  | `u16`  | one bfloat16               | 8-bit exponent            | sign + 7 mantissa  |
//! | [`F16`]   | `u16`  | one IEEE binary16          | 5-bit exponent            | sign + 10 mantissa |
//! | [`F32`]   | `u32`  | one IEEE binary32          | 8-bit exponent            | sign + 23 mantissa |
//! | [`F8E4M3`]| `u8`   | one OCP fp8 e4m3 (FN)      | see `split_pair`          |                    |
//! | [`F8E5M2`]| `u8`   | one OCP fp8 e5m2           | see `split_pair`          |                    |
//!
//! Every split is exact: `join(split(x)) == x` for every bit pattern, NaN payloads and -0.0
//! included.

use zipcoll_targets::Word;

/// The dtypes zipcoll moves, as a runtime value (host API, frames, kernel manifest).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum DType {
    Bf16 = 0,
    F16 = 1,
    F32 = 2,
    F8E4M3 = 3,
    F8E5M2 = 4,
}

/// A float element type, described by its storage word.
pub trait Elem: Copy + 'static {
    /// The storage word (`u16` for bf16/f16, `u32` for f32, `u8` for fp8).
    type Bits: Word + Copy + Eq + core::fmt::Debug + Default + 'static;
    /// This type as a runtime value.
    const DTYPE: DType;
    /// The value widened to `f32`, exactly (every value of these types is an f32 value; NaN
    /// stays NaN).
    fn to_f32(b: Self::Bits) -> f32;
    /// The `f32` rounded to this type with round-to-nearest-even (NaN stays NaN).
    fn from_f32(x: f32) -> Self::Bits;
}
