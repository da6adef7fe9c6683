//! Test data: every split word of a 16-bit split laid out so each symbol and each raw part
//! meets every lane position, random frames of assorted kinds, and N(0,1) tensors; the
//! harness's [`Ty`] for every coded dtype.
//!
//! | dtype | special values | typical values |
//! |-------|----------------|----------------|
//! | bf16, f16, f32, fp8 | ±0, ±inf, NaN payloads, subnormals, near the largest, ±1 | N(0, sigma^2) |
//! | i8, u8, i32, u32 | 0, ±1, all ones, the top bit alone, the largest signed, a power of two | N(0, (64 sigma)^2) rounded (its magnitude when unsigned) |

use crate::harness::Ty;
use crate::util::Rng;
use zipcoll_device::dtype::{Bf16, DType, Elem, F32Exact, Split, F16, F32, F8E4M3, F8E5M2, I32, I8, U32, U8};
use zipcoll_targets::Word;

/// Lane positions the layouts cover: a 64-lane warp step (and so every 32-lane one).
const CLASSES: usize = 64;

/// Exponent and mantissa bits of `d`.
pub fn format(d: DType) -> (u32, u32) {
    match d {
        DType::Bf16 => (8, 7),
        DType::F16 => (5, 10),
        DType::F32 => (8, 23),
        DType::F8E4M3 => (4, 3),
        DType::F8E5M2 => (5, 2),
        other => panic!("{other:?} is not a float type"),
    }
}

/// The elements of split words, in order (for fp8 each word is two elements, low byte first).
pub fn words_to_elems<T: Split>(words: &[T::Word]) -> Vec<T::Bits> {
    let bits = 8 * T::DTYPE.size_bytes() as u32;
    let mask = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
    words
        .iter()
        .flat_map(|w| {
            let v = w.to_bits64();
            (0..T::ELEMS_PER_WORD).map(move |k| T::Bits::from_bits64((v >> (bits as usize * k)) & mask))
        })
        .collect()
}

/// Every split word of `T` (whose symbol and raw bits total 16) exactly once, in frames of
/// `G` consecutive symbols (8 of 8-bit symbols, 4 of 5-bit ones) starting at symbol
/// `shift`, wrapping. In a frame, the word `join(s, r)` sits at a position `p` with
/// `p % 64 == (s + r) % 64` (the rest of `p` shuffled with `seed`): so over the frames every
/// symbol and every raw part meets every position of a 32- or 64-lane step, and every bit
/// offset of the raw plane.
pub fn exhaustive_frames<T: Split>(shift: usize, seed: u64) -> Vec<Vec<T::Bits>> {
    assert_eq!(T::SYMBOL_BITS + T::RAW_BITS, 16, "{:?} is not a 16-bit split", T::DTYPE);
    let symbols = 1usize << T::SYMBOL_BITS;
    let raws = 1usize << T::RAW_BITS;
    let group = if T::SYMBOL_BITS == 8 { 8 } else { 4 };
    let mut rng = Rng(seed);
    (0..symbols / group)
        .map(|f| {
            let mut classes: Vec<Vec<T::Word>> = vec![Vec::new(); CLASSES];
            for i in 0..group {
                let s = (f * group + i + shift) % symbols;
                for r in 0..raws {
                    classes[(s + r) % CLASSES].push(T::join(s as u8, T::Raw::from_bits64(r as u64)));
                }
            }
            for c in &mut classes {
                shuffle(c, &mut rng);
            }
            let rows = classes[0].len();
            let words: Vec<T::Word> = (0..rows * CLASSES).map(|p| classes[p % CLASSES][p / CLASSES]).collect();
            words_to_elems::<T>(&words)
        })
        .collect()
}

/// Every value of an 8-bit `T` at every position of a 64-lane step: per group of 32 values
/// (consecutive exponents, all signs and mantissas), a frame of 32 rows of 64 elements where
/// row `r` is `vals[(c + r) % 32]` for `c` in `0..64`. With `odd`, each frame starts with one
/// more element (an odd length, every position shifted by one).
pub fn fp8_frames<T: Elem>(odd: bool) -> Vec<Vec<T::Bits>> {
    let (e, m) = format(T::DTYPE);
    assert_eq!(e + m, 7, "{:?} is not an 8-bit type", T::DTYPE);
    let exps_per_group = 32 >> (m + 1);
    (0..(1u64 << e) / exps_per_group)
        .map(|g| {
            let vals: Vec<T::Bits> = (0..32u64)
                .map(|i| {
                    let exp = g * exps_per_group + (i >> (m + 1));
                    let sign = (i >> m) & 1;
                    T::Bits::from_bits64(sign << 7 | exp << m | (i & ((1 << m) - 1)))
                })
                .collect();
            let mut frame: Vec<T::Bits> = if odd { vec![vals[7]] } else { Vec::new() };
            frame.extend((0..32 * CLASSES).map(|p| vals[(p % CLASSES + p / CLASSES) % 32]));
            frame
        })
        .collect()
}

pub fn shuffle<X>(v: &mut [X], rng: &mut Rng) {
    for i in (1..v.len()).rev() {
        v.swap(i, rng.below(i as u64 + 1) as usize);
    }
}

/// A random special pattern of the float `T`: ±0, ±inf or NaN (random payload), a subnormal,
/// a value near the largest, or ±1.
fn special_float<T: Elem>(rng: &mut Rng) -> T::Bits {
    let (e, m) = format(T::DTYPE);
    let sign = rng.below(2) << (e + m);
    let man = rng.next_u64() & ((1 << m) - 1);
    let top = (1u64 << e) - 1;
    let v = match rng.below(6) {
        0 => 0,
        1 => top << m,
        2 => top << m | man,
        3 => man,
        4 => (top - 1) << m | man,
        _ => (top / 2) << m,
    };
    T::Bits::from_bits64(sign | v)
}

/// `len` random elements of the float `T` of one of five kinds (`kind % 5`): random bits;
/// N(0,1) scaled by a random power of two; that with 10% specials; one value repeated; values
/// in a few binades with 2% random outliers.
fn random_floats<T: F32Exact>(kind: u32, seed: u64, len: usize) -> Vec<T::Bits> {
    let mut rng = Rng(seed);
    let bits = 8 * T::DTYPE.size_bytes() as u32;
    let random = |rng: &mut Rng| T::Bits::from_bits64(rng.next_u64() & ((1u64 << bits) - 1));
    let scale = (2.0f64).powi(rng.below(24) as i32 - 12);
    let normal = |rng: &mut Rng| T::from_f32((rng.normal() * scale) as f32);
    match kind % 5 {
        0 => (0..len).map(|_| random(&mut rng)).collect(),
        1 => (0..len).map(|_| normal(&mut rng)).collect(),
        2 => (0..len)
            .map(|_| {
                if rng.below(10) == 0 {
                    special_float::<T>(&mut rng)
                } else {
                    normal(&mut rng)
                }
            })
            .collect(),
        3 => {
            let v = match rng.below(3) {
                0 => random(&mut rng),
                1 => special_float::<T>(&mut rng),
                _ => normal(&mut rng),
            };
            vec![v; len]
        }
        _ => (0..len)
            .map(|_| {
                if rng.below(50) == 0 {
                    random(&mut rng)
                } else {
                    T::from_f32(
                        (1.0 + rng.below(1000) as f64 / 100.0) as f32 * if rng.below(2) == 0 { 1.0 } else { -1.0 },
                    )
                }
            })
            .collect(),
    }
}

/// `len` samples of N(0, sigma^2) rounded to `T`.
pub fn normal_elems<T: F32Exact>(seed: u64, len: usize, sigma: f64) -> Vec<T::Bits> {
    let mut rng = Rng(seed);
    (0..len).map(|_| T::from_f32((rng.normal() * sigma) as f32)).collect()
}

/// Width in bits and signedness of the integer `T`.
fn int_format<T: Elem>() -> (u32, bool) {
    let bits = 8 * T::DTYPE.size_bytes() as u32;
    (bits, matches!(T::DTYPE, DType::I8 | DType::I32))
}

/// The integer `v` wrapped to `T`'s width.
fn wrap<T: Elem>(v: i64) -> T::Bits {
    let (bits, _) = int_format::<T>();
    T::Bits::from_bits64(v as u64 & (u64::MAX >> (64 - bits)))
}

/// A random special value of the integer `T`: 0, 1, -1 (all ones), the top bit alone (the
/// least signed value), the largest signed value, or a random power of two.
fn special_int<T: Elem>(rng: &mut Rng) -> T::Bits {
    let (bits, _) = int_format::<T>();
    let top = 1i64 << (bits - 1);
    wrap::<T>(match rng.below(6) {
        0 => 0,
        1 => 1,
        2 => -1,
        3 => top,
        4 => top - 1,
        _ => 1i64 << rng.below(u64::from(bits)),
    })
}

/// N(0, scale^2) rounded to an integer of `T` (its magnitude when `T` is unsigned).
fn scaled_normal<T: Elem>(rng: &mut Rng, scale: f64) -> T::Bits {
    let (_, signed) = int_format::<T>();
    let v = (rng.normal() * scale).round() as i64;
    wrap::<T>(if signed { v } else { v.abs() })
}

/// `len` random elements of the integer `T` of one of five kinds (`kind % 5`): random bits;
/// [`scaled_normal`] at a random power-of-two scale; that with 10% specials; one value
/// repeated; indices below a random power of two above a random base, with 2% random values.
fn random_ints<T: Elem>(kind: u32, seed: u64, len: usize) -> Vec<T::Bits> {
    let mut rng = Rng(seed);
    let (bits, _) = int_format::<T>();
    let random = |rng: &mut Rng| wrap::<T>(rng.next_u64() as i64);
    let scale = (2.0f64).powi(rng.below(u64::from(bits - 1)) as i32);
    match kind % 5 {
        0 => (0..len).map(|_| random(&mut rng)).collect(),
        1 => (0..len).map(|_| scaled_normal::<T>(&mut rng, scale)).collect(),
        2 => (0..len)
            .map(|_| {
                if rng.below(10) == 0 {
                    special_int::<T>(&mut rng)
                } else {
                    scaled_normal::<T>(&mut rng, scale)
                }
            })
            .collect(),
        3 => {
            let v = match rng.below(3) {
                0 => random(&mut rng),
                1 => special_int::<T>(&mut rng),
                _ => scaled_normal::<T>(&mut rng, scale),
            };
            vec![v; len]
        }
        _ => {
            let base = rng.next_u64() as i64 >> rng.below(64);
            let span = 1u64 << rng.below(u64::from(bits));
            (0..len)
                .map(|_| {
                    if rng.below(50) == 0 {
                        random(&mut rng)
                    } else {
                        wrap::<T>(base.wrapping_add(rng.below(span) as i64))
                    }
                })
                .collect()
        }
    }
}

/// `len` values of [`scaled_normal`] at scale `64 sigma`.
fn typical_ints<T: Elem>(seed: u64, len: usize, sigma: f64) -> Vec<T::Bits> {
    let mut rng = Rng(seed);
    (0..len).map(|_| scaled_normal::<T>(&mut rng, 64.0 * sigma)).collect()
}

/// `impl Ty` for each listed type with the generators named: special values, random kinds,
/// typical values.
macro_rules! impl_ty {
    ($special:ident, $random:ident, $typical:ident: $($t:ty),*) => {$(
        impl Ty for $t {
            fn special(rng: &mut Rng) -> Self::Bits {
                $special::<$t>(rng)
            }
            fn random_elems(kind: u32, seed: u64, len: usize) -> Vec<Self::Bits> {
                $random::<$t>(kind, seed, len)
            }
            fn typical(seed: u64, len: usize, sigma: f64) -> Vec<Self::Bits> {
                $typical::<$t>(seed, len, sigma)
            }
        }
    )*};
}
impl_ty!(special_float, random_floats, normal_elems: Bf16, F16, F32, F8E4M3, F8E5M2);
impl_ty!(special_int, random_ints, typical_ints: I8, U8, I32, U32);
