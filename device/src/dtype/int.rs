//! The integer types, with NCCL's reduction semantics: sum and product wrap (two's complement),
//! min and max compare signed or unsigned as the type. `Bits` is the unsigned word of the same
//! width for both signednesses.
//!
//! | type          | `Bits` | split word        | symbol                         | raw                            |
//! |---------------|--------|-------------------|--------------------------------|--------------------------------|
//! | [`I8`], [`U8`]   | `u8`  | two values (`u16`, [`pack_pair`]) | bits 7..4 of each (the later value's in 7..4) | bits 3..0 of each (the later value's in 7..4) |
//! | [`I32`], [`U32`] | `u32` | one value         | bits 31..24                    | bits 23..0 (`u32`)             |
//! | [`I64`], [`U64`] | `u64` | one value         | bits 63..56                    | bits 55..0 (`u64`)             |
//!
//! Small magnitudes (indices, counts, masks) have few distinct high bits, which is what the
//! symbol holds.

use super::{pack_pair, unpack_pair, DType, Elem, Split};

/// `impl Elem` for the integer type `$t`: storage `$bits`, arithmetic `$native` (signed or
/// unsigned, same width).
macro_rules! int_elem {
    ($(#[$doc:meta])* $t:ident, $bits:ty, $native:ty, $dtype:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
        pub struct $t;

        impl Elem for $t {
            type Bits = $bits;
            const DTYPE: DType = $dtype;

            #[inline(always)]
            fn add(a: $bits, b: $bits) -> $bits {
                a.wrapping_add(b)
            }
            #[inline(always)]
            fn mul(a: $bits, b: $bits) -> $bits {
                a.wrapping_mul(b)
            }
            #[inline(always)]
            fn min(a: $bits, b: $bits) -> $bits {
                (a as $native).min(b as $native) as $bits
            }
            #[inline(always)]
            fn max(a: $bits, b: $bits) -> $bits {
                (a as $native).max(b as $native) as $bits
            }
            #[inline(always)]
            fn scale(x: $bits, scalar: u64) -> $bits {
                x.wrapping_mul(scalar as $bits)
            }
            #[inline(always)]
            fn scalar_of(x: $bits) -> u64 {
                // sign-extended through i64 for the signed types (bits for u64)
                (x as $native) as i64 as u64
            }
            #[inline(always)]
            fn div_toward_zero(x: $bits, divisor: u64) -> $bits {
                if divisor == 0 {
                    return x;
                }
                // in u64, so that a divisor above the type's range divides as a number
                if <$native>::MIN != <$native>::default() && (x as $native) < <$native>::default() {
                    ((x.wrapping_neg() as u64 / divisor) as $bits).wrapping_neg()
                } else {
                    (x as u64 / divisor) as $bits
                }
            }
        }
    };
}

int_elem!(
    /// A two's-complement byte (`int8_t`).
    I8, u8, i8, DType::I8
);
int_elem!(
    /// An unsigned byte (`uint8_t`).
    U8, u8, u8, DType::U8
);
int_elem!(
    /// A 32-bit two's-complement integer (`int32_t`).
    I32, u32, i32, DType::I32
);
int_elem!(
    /// A 32-bit unsigned integer (`uint32_t`).
    U32, u32, u32, DType::U32
);
int_elem!(
    /// A 64-bit two's-complement integer (`int64_t`).
    I64, u64, i64, DType::I64
);
int_elem!(
    /// A 64-bit unsigned integer (`uint64_t`).
    U64, u64, u64, DType::U64
);

/// `impl Split` for the 8-bit integer `$t`: two values per word, high nibbles as the symbol.
macro_rules! split_bytes {
    ($($t:ident),*) => {$(
        impl Split for $t {
            type Word = u16;
            type Raw = u8;
            const ELEMS_PER_WORD: usize = 2;
            const SYMBOL_BITS: u32 = 8;
            const RAW_BITS: u32 = 8;

            #[inline(always)]
            fn split(w: u16) -> (u8, u8) {
                let (lo, hi) = unpack_pair(w);
                ((hi & 0xF0) | (lo >> 4), (hi << 4) | (lo & 0xF))
            }

            #[inline(always)]
            fn join(symbol: u8, raw: u8) -> u16 {
                pack_pair((symbol << 4) | (raw & 0xF), (symbol & 0xF0) | (raw >> 4))
            }
        }
    )*};
}
split_bytes!(I8, U8);

/// `impl Split` for the integer `$t` of `$bits`: the top byte as the symbol, the rest raw.
macro_rules! split_top_byte {
    ($($t:ident: $bits:ty),*) => {$(
        impl Split for $t {
            type Word = $bits;
            type Raw = $bits;
            const ELEMS_PER_WORD: usize = 1;
            const SYMBOL_BITS: u32 = 8;
            const RAW_BITS: u32 = <$bits>::BITS - 8;

            #[inline(always)]
            fn split(w: $bits) -> (u8, $bits) {
                ((w >> Self::RAW_BITS) as u8, w & ((1 << Self::RAW_BITS) - 1))
            }

            #[inline(always)]
            fn join(symbol: u8, raw: $bits) -> $bits {
                ((symbol as $bits) << Self::RAW_BITS) | (raw & ((1 << Self::RAW_BITS) - 1))
            }
        }
    )*};
}
split_top_byte!(I32: u32, U32: u32, I64: u64, U64: u64);
