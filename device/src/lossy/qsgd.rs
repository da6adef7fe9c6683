//! QSGD stochastic quantization (Alistarh et al.): within a bucket of elements with L2 norm
//! `norm`, element `x` becomes level `l` of `s` with `E[sign(x) * l / s * norm] = x`.
//!
//! | symbol     | stands for                                                                |
//! |------------|---------------------------------------------------------------------------|
//! | [`ESCAPE`] | the element exactly, carried beside the symbols (NaN, infinities; they are left out of the norm) |
//! | `1..=255`  | `q = symbol - 128` in `-s..=s`: the value `T::from_f32(q / s * norm)`      |
//!
//! The randomness is a counter-based generator: the uniform draw of element `i` is a hash of
//! `(seed, i)` ([`uniform`]), so the symbols depend only on the data, the seed and the element's
//! index, the same on every target and whatever the thread layout, and a call is reproducible.
//! Unbiased in the `f32` value `q / s * norm`; rounding that value to a narrower dtype adds its
//! own (deterministic) rounding error.
//!
//! ```
//! use zipcoll_device::dtype::{F32Exact, F32};
//! use zipcoll_device::lossy::qsgd::{quantize, value};
//! let (x, norm, s) = (F32::from_f32(0.3), 1.0, 4);
//! let v = F32::to_f32(value::<F32>(quantize::<F32>(x, norm, s, 7, 0), norm, s));
//! assert!(v == 0.25 || v == 0.5); // 0.3 * 4 = 1.2: level 1 or 2 of 4
//! ```

use super::error_bound::ESCAPE;
use crate::dtype::F32Exact;

/// The most levels a symbol carries (`q` in `-127..=127`).
pub const MAX_LEVELS: u32 = 127;

/// The uniform draws in `[0, 1)` of elements `2 pair` and `2 pair + 1`: 24 bits of each 32-bit
/// half of SplitMix64 of `seed` and `pair` (a counter-based generator: any element's draw is
/// computed alone, and a kernel's thread of consecutive elements hashes once per pair).
#[inline(always)]
pub fn uniforms(seed: u64, pair: u64) -> [f32; 2] {
    let mut z = seed ^ pair.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    let draw = |half: u64| (half as u32 >> 8) as f32 * (1.0 / (1u32 << 24) as f32);
    [draw(z), draw(z >> 32)]
}

/// The uniform draw in `[0, 1)` of element `index`: its half of [`uniforms`].
#[inline(always)]
pub fn uniform(seed: u64, index: u64) -> f32 {
    uniforms(seed, index >> 1)[(index & 1) as usize]
}

/// The level `q` in `-levels..=levels` of a finite `x` in a bucket of L2 norm `norm`, drawn so
/// that `E[q / levels x norm] = x` (`levels` in `1..=`[`MAX_LEVELS`]; a norm that is not
/// positive and finite gives level 0: the bucket is all zeros, or its norm overflowed, see
/// [`norm_of`]).
#[inline]
pub fn level(x: f32, norm: f32, levels: u32, seed: u64, index: u64) -> i32 {
    level_drawn(x, norm, levels, uniform(seed, index))
}

/// [`level`] with the element's draw `u` ([`uniform`]) given: a kernel draws a pair at once.
#[inline(always)]
pub fn level_drawn(x: f32, norm: f32, levels: u32, u: f32) -> i32 {
    if norm.is_nan() || norm <= 0.0 || norm.is_infinite() {
        return 0;
    }
    let s = levels as f32;
    // |v| <= norm, so a is in [0, s] up to rounding, which the clamp absorbs; `s / norm` is one
    // division for a kernel's elements of one bucket
    let a = (x.abs() * (s / norm)).min(s);
    let low = a as u32; // floor: a >= 0
    let up = (u < a - low as f32) as u32;
    let q = (low + up).min(levels) as i32;
    if x < 0.0 {
        -q
    } else {
        q
    }
}

/// The symbol of element `x` (index `index` in the call) of a bucket whose finite elements have
/// L2 norm `norm`, with `levels` levels (`1..=`[`MAX_LEVELS`]; others escape every element).
#[inline]
pub fn quantize<T: F32Exact>(x: T::Bits, norm: f32, levels: u32, seed: u64, index: u64) -> u8 {
    let v = T::to_f32(x);
    if !v.is_finite() || !(1..=MAX_LEVELS).contains(&levels) {
        return ESCAPE;
    }
    (128 + level(v, norm, levels, seed, index)) as u8
}

/// The element a non-escape `symbol` stands for in a bucket of norm `norm` with `levels`
/// levels: `T::from_f32(q / levels * norm)` ([`ESCAPE`] gives zero).
#[inline]
pub fn value<T: F32Exact>(symbol: u8, norm: f32, levels: u32) -> T::Bits {
    let q = match symbol {
        ESCAPE => 0,
        s => s as i32 - 128,
    };
    T::from_f32(q as f32 / levels.max(1) as f32 * norm)
}

/// The L2 norm of the finite elements of `bucket` (in `f64`, rounded to `f32`; `+inf` when it
/// overflows `f32`, which makes every element level 0: callers pick buckets small enough).
pub fn norm_of<T: F32Exact>(bucket: &[T::Bits]) -> f32 {
    let sum: f64 = bucket
        .iter()
        .map(|&b| T::to_f32(b))
        .filter(|v| v.is_finite())
        .map(|v| (v as f64) * (v as f64))
        .sum();
    norm_from_squares(sum)
}

/// The norm of a bucket whose finite elements' squares sum to `sum` (in `f64`): its square
/// root, rounded to `f32` (`+inf` past `f32`'s range).
pub fn norm_from_squares(sum: f64) -> f32 {
    sqrt(sum) as f32
}

/// `sqrt(x)` for `x >= 0` by Newton's method from a power-of-two guess (core has no `sqrt` in
/// `no_std`): exact to the last bit of `f64` or one below, plenty for a norm kept in `f32`.
fn sqrt(x: f64) -> f64 {
    if x.is_infinite() {
        return x;
    }
    if x.is_nan() || x <= 0.0 {
        return 0.0;
    }
    // 2^(e/2) for x = m * 2^e
    let e = ((x.to_bits() >> 52) & 0x7FF) as i64 - 1023;
    let mut y = f64::from_bits((((e / 2) + 1023) as u64) << 52);
    for _ in 0..8 {
        y = 0.5 * (y + x / y);
    }
    y
}
