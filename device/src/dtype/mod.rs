//! Element types: the storage word of each float type, its split into an exponent symbol plus
//! the remaining raw bits, and its conversions through `f32`.
//!
//! | type       | `Bits` | one `Elem` value is   | split word          | exponent symbol         | raw bits                 |
//! |------------|--------|-----------------------|---------------------|-------------------------|--------------------------|
//! | [`Bf16`]   | `u16`  | one bfloat16          | one value (`u16`)   | 8-bit exponent          | sign + 7 mantissa (`u8`) |
//! | [`F16`]    | `u16`  | one IEEE binary16     | one value (`u16`)   | 5-bit exponent          | sign + 10 mantissa (`u16`) |
//! | [`F32`]    | `u32`  | one IEEE binary32     | one value (`u32`)   | 8-bit exponent          | sign + 23 mantissa (`u32`) |
//! | [`F8E4M3`] | `u8`   | one OCP fp8 e4m3 (FN) | two values (`u16`)  | both 4-bit exponents    | 2 signs + 2x3 mantissa (`u8`) |
//! | [`F8E5M2`] | `u8`   | one OCP fp8 e5m2      | two values (`u16`)  | both exponents' top 4 bits | 2 signs + 2 exponent LSBs + 2x2 mantissa (`u8`) |
//!
//! Every split is exact: `join(split(x)) == x` for every bit pattern, NaN payloads and -0.0
//! included ([`Split`]). The fp8 layouts are tabled in [`F8E4M3`] and [`F8E5M2`].
//!
//! Conversions are integer bit manipulation only (no `f16` type, no float-to-half casts), so
//! the same code gives the same bits on GPUs and on the host. Finite values convert exactly
//! (`to_f32`) or round to nearest even (`from_f32`); overflow and NaN follow CUDA:
//!
//! | type   | `from_f32` overflow    | `from_f32(NaN)` | `to_f32(NaN)`            | CUDA / PTX it matches                        |
//! |--------|------------------------|-----------------|--------------------------|----------------------------------------------|
//! | bf16   | ±inf                   | `0x7FFF`        | plain shift (bits kept)  | `__float2bfloat16_rn`, `cvt.rn.bf16.f32`, `cvt.f32.bf16` |
//! | f16    | ±inf                   | `0x7FFF`        | `0x7FFF_FFFF`            | `__float2half_rn`, `cvt.rn.f16.f32`, `cvt.f32.f16` |
//! | f32    | —                      | identity        | identity                 | —                                            |
//! | e4m3   | ±NaN (`S.1111.111`)    | `0x7F`          | `0x7FFF_FFFF`            | `__nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E4M3)` for numbers; `cvt.rn.satfinite.e4m3x2.f32` for NaN; `cvt.rn.f16x2.e4m3x2` |
//! | e5m2   | ±inf                   | `0x7F`          | `0x7FFF_FFFF`            | `__nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E5M2)` for numbers; `cvt.rn.satfinite.e5m2x2.f32` for NaN; `cvt.rn.f16x2.e5m2x2` |
//!
//! Every type's [`Elem::CANONICAL_NAN`] is all bits set but the sign, and `from_f32(NaN)` returns
//! it for any sign and payload (the fp8 software conversion in `cuda_fp8.hpp` would keep a NaN's
//! sign; the hardware `cvt` does not, and neither do we). Reductions return it for every NaN
//! result ([`crate::reduce`]). Every cell but the fp8 overflow column (the hardware fp8 `cvt`
//! only saturates) was checked bit for bit against the named `cvt` instructions on an sm_90 GPU.

mod bf16;
mod f16;
mod f32;
mod fp8;
mod round;

pub use self::bf16::Bf16;
pub use self::f16::F16;
pub use self::f32::F32;
pub use self::fp8::{pack_pair, unpack_pair, F8E4M3, F8E5M2};

use core::fmt::Debug;
use zipcoll_targets::Word;

/// The bytes of `elems` (little-endian on every target zipcoll runs on).
pub fn elem_bytes<T: Elem>(elems: &[T::Bits]) -> &[u8] {
    // SAFETY: `T::Bits` is a plain integer (u8, u16 or u32): every byte is initialized, u8 has
    // no alignment, and the length is the slice's size in bytes.
    unsafe { core::slice::from_raw_parts(elems.as_ptr().cast::<u8>(), core::mem::size_of_val(elems)) }
}

/// f32's canonical NaN (PTX's): all bits set but the sign.
pub(crate) const F32_CANONICAL_NAN: u32 = 0x7FFF_FFFF;

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

impl DType {
    /// Every dtype, in discriminant order.
    pub const ALL: [DType; 5] = [DType::Bf16, DType::F16, DType::F32, DType::F8E4M3, DType::F8E5M2];
    /// The dtype whose `as u8` is `v`, if any.
    pub fn from_u8(v: u8) -> Option<DType> {
        DType::ALL.into_iter().find(|d| *d as u8 == v)
    }

    /// The element whose storage word is the low [`DType::size_bytes`] bytes of `bits`,
    /// widened to `f32` exactly ([`Elem::to_f32`]).
    pub fn to_f32(self, bits: u32) -> f32 {
        match self {
            DType::Bf16 => Bf16::to_f32(bits as u16),
            DType::F16 => F16::to_f32(bits as u16),
            DType::F32 => F32::to_f32(bits),
            DType::F8E4M3 => F8E4M3::to_f32(bits as u8),
            DType::F8E5M2 => F8E5M2::to_f32(bits as u8),
        }
    }

    /// Bytes of one element.
    pub const fn size_bytes(self) -> usize {
        match self {
            DType::Bf16 | DType::F16 => 2,
            DType::F32 => 4,
            DType::F8E4M3 | DType::F8E5M2 => 1,
        }
    }
}

/// A float element type, described by its storage word.
pub trait Elem: Copy + 'static {
    /// The storage word (`u16` for bf16/f16, `u32` for f32, `u8` for fp8).
    type Bits: Word + Copy + Eq + core::fmt::Debug + Default + 'static;
    /// This type as a runtime value.
    const DTYPE: DType;
    /// The NaN that `from_f32` and reductions produce: all bits set but the sign.
    const CANONICAL_NAN: Self::Bits;
    /// The value widened to `f32`, exactly (every value of these types is an f32 value; NaN
    /// stays NaN).
    fn to_f32(b: Self::Bits) -> f32;
    /// The `f32` rounded to this type with round-to-nearest-even (NaN stays NaN).
    fn from_f32(x: f32) -> Self::Bits;
}

/// An exact split of a storage word into an exponent symbol (a byte, for the entropy coder)
/// and the remaining raw bits (stored as they are).
///
/// For every `w`: `join(split(w)) == w`. For every `s < 2^SYMBOL_BITS` and `r < 2^RAW_BITS`:
/// `split(join(s, r)) == (s, r)`; `join` ignores bits above those widths.
pub trait Split: Elem {
    /// The word that is split: `Self::Bits`, or for fp8 a `u16` holding two values (see
    /// [`pack_pair`]).
    type Word: Word + Eq + Debug + Default + 'static;
    /// The raw bits' container.
    type Raw: Word + Eq + Debug + Default + 'static;
    /// Elements in one [`Split::Word`]: 1, or 2 for fp8.
    const ELEMS_PER_WORD: usize;
    /// Significant bits of a symbol.
    const SYMBOL_BITS: u32;
    /// Significant bits of the raw part.
    const RAW_BITS: u32;
    /// The exponent symbol and the raw bits of `w`.
    fn split(w: Self::Word) -> (u8, Self::Raw);
    /// The word with exponent symbol `symbol` and raw bits `raw`.
    fn join(symbol: u8, raw: Self::Raw) -> Self::Word;
}
