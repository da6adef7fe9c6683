//! Element types: the storage word of each type, its reduction arithmetic, its split into a
//! symbol plus the remaining raw bits, and, for the float types reduced through `f32`, their
//! conversions.
//!
//! | type       | `Bits` | one `Elem` value is   | reduced        | split word          | symbol                  | raw bits                 |
//! |------------|--------|-----------------------|----------------|---------------------|-------------------------|--------------------------|
//! | [`Bf16`]   | `u16`  | one bfloat16          | through f32    | one value (`u16`)   | 8-bit exponent          | sign + 7 mantissa (`u8`) |
//! | [`F16`]    | `u16`  | one IEEE binary16     | through f32    | one value (`u16`)   | 5-bit exponent          | sign + 10 mantissa (`u16`) |
//! | [`F32`]    | `u32`  | one IEEE binary32     | natively       | one value (`u32`)   | 8-bit exponent          | sign + 23 mantissa (`u32`) |
//! | [`F8E4M3`] | `u8`   | one OCP fp8 e4m3 (FN) | through f32    | two values (`u16`)  | both 4-bit exponents    | 2 signs + 2x3 mantissa (`u8`) |
//! | [`F8E5M2`] | `u8`   | one OCP fp8 e5m2      | through f32    | two values (`u16`)  | both exponents' top 4 bits | 2 signs + 2 exponent LSBs + 2x2 mantissa (`u8`) |
//! | [`F64`]    | `u64`  | one IEEE binary64     | natively       | one value (`u64`)   | exponent's top 8 bits   | sign + 3 exponent LSBs + 52 mantissa (`u64`) |
//! | [`I8`], [`U8`] | `u8` | one two's-complement / unsigned byte | wrapping | two values (`u16`) | both high nibbles | both low nibbles (`u8`) |
//! | [`I32`], [`U32`] | `u32` | one 32-bit integer | wrapping      | one value (`u32`)   | top byte                | low 24 bits (`u32`)      |
//! | [`I64`], [`U64`] | `u64` | one 64-bit integer | wrapping      | one value (`u64`)   | top byte                | low 56 bits (`u64`)      |
//!
//! Every split is exact: `join(split(x)) == x` for every bit pattern, NaN payloads and -0.0
//! included ([`Split`]). The fp8 layouts are tabled in [`F8E4M3`] and [`F8E5M2`]. The symbol
//! coders are built for the types reduced through or as f32 and for the 8- and 32-bit integers
//! ([`DType::coded`]); f64 and the 64-bit integers move as RAW frames.
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
//! Every float type's canonical NaN ([`F32Exact::CANONICAL_NAN`], f64's `0x7FFF_FFFF_FFFF_FFFF`)
//! is all bits set but the sign, and `from_f32(NaN)` returns it for any sign and payload (the
//! fp8 software conversion in `cuda_fp8.hpp` would keep a NaN's sign; the hardware `cvt` does
//! not, and neither do we). Reductions return it for every NaN result ([`crate::reduce`]).
//! Every cell but the fp8 overflow column (the hardware fp8 `cvt` only saturates) was checked
//! bit for bit against the named `cvt` instructions on an sm_90 GPU.

mod arith;
mod bf16;
mod f16;
mod f32;
mod f64;
mod fp8;
mod int;
mod round;

pub use self::bf16::Bf16;
pub use self::f16::F16;
pub use self::f32::F32;
pub use self::f64::F64;
pub use self::fp8::{pack_pair, unpack_pair, F8E4M3, F8E5M2};
pub use self::int::{I32, I64, I8, U32, U64, U8};

use core::fmt::Debug;
use zipcoll_targets::Word;

/// The bytes of `elems` (little-endian on every target zipcoll runs on).
pub fn elem_bytes<T: Elem>(elems: &[T::Bits]) -> &[u8] {
    // SAFETY: `T::Bits` is a plain integer (u8, u16, u32 or u64): every byte is initialized, u8 has
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
    I8 = 5,
    U8 = 6,
    I32 = 7,
    U32 = 8,
    I64 = 9,
    U64 = 10,
    F64 = 11,
}

impl DType {
    /// Every dtype, in discriminant order.
    pub const ALL: [DType; 12] = [
        DType::Bf16,
        DType::F16,
        DType::F32,
        DType::F8E4M3,
        DType::F8E5M2,
        DType::I8,
        DType::U8,
        DType::I32,
        DType::U32,
        DType::I64,
        DType::U64,
        DType::F64,
    ];

    /// The dtypes the symbol coders are built for ([`DType::coded`]), in discriminant order:
    /// [`DType::ALL`] filtered by it (a build error if the length is not their number).
    pub const CODED: [DType; 9] = {
        let mut out = [DType::Bf16; 9];
        let (mut i, mut k) = (0, 0);
        while i < DType::ALL.len() {
            if DType::ALL[i].coded() {
                out[k] = DType::ALL[i];
                k += 1;
            }
            i += 1;
        }
        assert!(k == out.len(), "DType::CODED's length is the number of coded dtypes");
        out
    };

    /// The dtype whose `as u8` is `v`, if any.
    pub fn from_u8(v: u8) -> Option<DType> {
        DType::ALL.into_iter().find(|d| *d as u8 == v)
    }

    /// Its name in symbols, on command lines and in docs: `bf16`, `f16`, `f32`, `f8e4m3`,
    /// `f8e5m2`, `i8`, `u8`, `i32`, `u32`, `i64`, `u64`, `f64`.
    pub const fn name(self) -> &'static str {
        match self {
            DType::Bf16 => "bf16",
            DType::F16 => "f16",
            DType::F32 => "f32",
            DType::F8E4M3 => "f8e4m3",
            DType::F8E5M2 => "f8e5m2",
            DType::I8 => "i8",
            DType::U8 => "u8",
            DType::I32 => "i32",
            DType::U32 => "u32",
            DType::I64 => "i64",
            DType::U64 => "u64",
            DType::F64 => "f64",
        }
    }

    /// The dtype whose [`DType::name`] is `name`, ignoring ASCII case.
    pub fn from_name(name: &str) -> Option<DType> {
        DType::ALL
            .into_iter()
            .find(|d| d.name().eq_ignore_ascii_case(name.trim()))
    }

    /// Bytes of one element.
    pub const fn size_bytes(self) -> usize {
        match self {
            DType::F8E4M3 | DType::F8E5M2 | DType::I8 | DType::U8 => 1,
            DType::Bf16 | DType::F16 => 2,
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F64 | DType::I64 | DType::U64 => 8,
        }
    }

    /// Whether it is an integer type (reduced with wrapping arithmetic; averaged by dividing the sum).
    pub const fn is_integer(self) -> bool {
        matches!(
            self,
            DType::I8 | DType::U8 | DType::I32 | DType::U32 | DType::I64 | DType::U64
        )
    }

    /// Whether the symbol coders are built for it: the float types reduced through or as f32,
    /// and the 8- and 32-bit integers. Frames of the others (f64, the 64-bit integers) are RAW
    /// (the collectives send them RAW whatever the policy): their 56-bit raw parts do not fit
    /// the frame coders' 32-bit raw-plane words, and a top-byte symbol could save at most an
    /// eighth of their bytes.
    pub const fn coded(self) -> bool {
        matches!(
            self,
            DType::Bf16
                | DType::F16
                | DType::F32
                | DType::F8E4M3
                | DType::F8E5M2
                | DType::I8
                | DType::U8
                | DType::I32
                | DType::U32
        )
    }

    /// The operator scalar ([`Elem::scale`]'s `scalar`) of the float `s` for this type: `s` as
    /// f32 bits for the types reduced through f32, as f64 bits for f64; for integers the
    /// integer's bits (sign-extended) when `s` is an integer value of the type, `None`
    /// otherwise (a fraction, out of range, NaN).
    pub fn scalar_bits(self, s: f64) -> Option<u64> {
        let integral = |lo: f64, hi: f64| ((lo..hi).contains(&s) && (s as i128) as f64 == s).then_some(s);
        match self {
            DType::F64 => Some(s.to_bits()),
            DType::I8 => integral(-128.0, 128.0).map(|v| v as i64 as u64),
            DType::U8 => integral(0.0, 256.0).map(|v| v as u64),
            DType::I32 => integral(-2147483648.0, 2147483648.0).map(|v| v as i64 as u64),
            DType::U32 => integral(0.0, 4294967296.0).map(|v| v as u64),
            DType::I64 => integral(-9223372036854775808.0, 9223372036854775808.0).map(|v| v as i64 as u64),
            DType::U64 => integral(0.0, 18446744073709551616.0).map(|v| v as u64),
            _ => Some(u64::from((s as f32).to_bits())),
        }
    }

    /// The operator scalar of the element whose storage word is the low
    /// [`DType::size_bytes`] bytes of `bits` (NCCL's PreMulSum takes its scalar as a value of
    /// the call's dtype): [`Elem::scalar_of`], as the kernels compute it from a scalar in
    /// device memory. Exact for every dtype (a NaN's payload kept).
    pub fn scalar_of_value(self, bits: u64) -> u64 {
        fn of<T: Elem>(bits: u64) -> u64 {
            T::scalar_of(T::Bits::from_bits64(bits))
        }
        match self {
            DType::Bf16 => of::<Bf16>(bits),
            DType::F16 => of::<F16>(bits),
            DType::F32 => of::<F32>(bits),
            DType::F8E4M3 => of::<F8E4M3>(bits),
            DType::F8E5M2 => of::<F8E5M2>(bits),
            DType::F64 => of::<F64>(bits),
            DType::I8 => of::<I8>(bits),
            DType::U8 => of::<U8>(bits),
            DType::I32 => of::<I32>(bits),
            DType::U32 => of::<U32>(bits),
            DType::I64 => of::<I64>(bits),
            DType::U64 => of::<U64>(bits),
        }
    }

    /// The operator scalar of an average over `nranks` contributions: `1 / nranks` computed in
    /// the type's arithmetic (`1.0f32 / nranks as f32` for the types reduced through f32, as
    /// NCCL does; `+inf` for `nranks = 0`, no panic); `None` for integers, which NCCL averages
    /// by dividing the sum afterwards ([`crate::reduce::post_divisor`]), not by a factor.
    pub fn avg_scalar(self, nranks: u32) -> Option<u64> {
        match self {
            DType::F64 => Some((1.0 / f64::from(nranks)).to_bits()),
            d if d.is_integer() => None,
            _ => Some(u64::from((1.0 / nranks as f32).to_bits())),
        }
    }

    /// The value of the element whose storage word is the low [`DType::size_bytes`] bytes of
    /// `bits`, as an `f64`: exact for every float type (NaN stays NaN); `None` for integers.
    pub fn float_value(self, bits: u64) -> Option<f64> {
        Some(match self {
            DType::Bf16 => f64::from(Bf16::to_f32(bits as u16)),
            DType::F16 => f64::from(F16::to_f32(bits as u16)),
            DType::F32 => f64::from(F32::to_f32(bits as u32)),
            DType::F8E4M3 => f64::from(F8E4M3::to_f32(bits as u8)),
            DType::F8E5M2 => f64::from(F8E5M2::to_f32(bits as u8)),
            DType::F64 => f64::from_bits(bits),
            _ => return None,
        })
    }
}

/// An element type, described by its storage word, with the arithmetic of the reductions
/// ([`crate::reduce`]'s tables say what each does per type).
pub trait Elem: Copy + 'static {
    /// The storage word (`u8`, `u16`, `u32` or `u64`: the element's bits, whatever its type).
    type Bits: Word + Copy + Eq + core::fmt::Debug + Default + 'static;
    /// This type as a runtime value.
    const DTYPE: DType;
    /// `a + b` (floats rounded to nearest even, NaN canonical; integers wrapping).
    fn add(a: Self::Bits, b: Self::Bits) -> Self::Bits;
    /// `a * b` (as [`Elem::add`]).
    fn mul(a: Self::Bits, b: Self::Bits) -> Self::Bits;
    /// The smaller of `a` and `b` (floats: NaN if either is, `min(-0, +0) = -0`; integers:
    /// signed or unsigned as the type).
    fn min(a: Self::Bits, b: Self::Bits) -> Self::Bits;
    /// The larger of `a` and `b` (floats: NaN if either is, `max(-0, +0) = +0`).
    fn max(a: Self::Bits, b: Self::Bits) -> Self::Bits;
    /// `x` times the operator scalar whose bits are `scalar` ([`DType::scalar_bits`]: f32 bits
    /// for the types reduced through f32, f64 bits for f64, the integer's bits for integers).
    fn scale(x: Self::Bits, scalar: u64) -> Self::Bits;
    /// The operator scalar ([`Elem::scale`]'s) of the value `x`: its f32 bits for the types
    /// reduced through f32, its bits for f64, sign- or zero-extended for integers (what a
    /// kernel makes of a scalar in device memory; [`DType::scalar_of_value`] on the host).
    fn scalar_of(x: Self::Bits) -> u64;
    /// NCCL's SumPostDiv post-operation, which averages integers: `x / divisor` rounded toward
    /// zero (signed types as NCCL computes it, `-((-x) / divisor)` in the unsigned word for
    /// negative `x`, so `MIN / 1` stays `MIN`), `x` for a zero divisor. Float types average
    /// through [`Elem::scale`] and never divide: the identity.
    #[inline(always)]
    fn div_toward_zero(x: Self::Bits, divisor: u64) -> Self::Bits {
        let _ = divisor;
        x
    }
}

/// A float type whose every value is an `f32` value: converted exactly to `f32` and reduced
/// through it (bf16, f16, f32, both fp8).
pub trait F32Exact: Elem {
    /// The NaN that `from_f32` and reductions produce: all bits set but the sign.
    const CANONICAL_NAN: Self::Bits;
    /// The value widened to `f32`, exactly (NaN stays NaN).
    fn to_f32(b: Self::Bits) -> f32;
    /// The `f32` rounded to this type with round-to-nearest-even (NaN stays NaN).
    fn from_f32(x: f32) -> Self::Bits;
}

/// An exact split of a storage word into a symbol (a byte, for the entropy coder: the exponent
/// of a float, the high bits of an integer) and the remaining raw bits (stored as they are).
///
/// For every `w`: `join(split(w)) == w`. For every `s < 2^SYMBOL_BITS` and `r < 2^RAW_BITS`:
/// `split(join(s, r)) == (s, r)`; `join` ignores bits above those widths.
pub trait Split: Elem {
    /// The word that is split: `Self::Bits`, or for the 8-bit types a `u16` holding two values
    /// (see [`pack_pair`]).
    type Word: Word + Eq + Debug + Default + 'static;
    /// The raw bits' container.
    type Raw: Word + Eq + Debug + Default + 'static;
    /// Elements in one [`Split::Word`]: 1, or 2 for the 8-bit types.
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
