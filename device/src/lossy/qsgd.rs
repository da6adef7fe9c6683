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
use super::exact::round;
use crate::dtype::F32Exact;

/// The most levels a symbol carries (`q` in `-127..=127`).
pub const MAX_LEVELS: u32 = 127;

/// The uniform draws in `[0, 1)` of elements `2 pair` and `2 pair + 1`: the top 23 bits of each
/// 32-bit half of SplitMix64 of `seed` and `pair`, as `1.m - 1` (a counter-based generator: any
/// element's draw is computed alone, and a kernel's thread of consecutive elements hashes once
/// per pair). A draw is a multiple of `2^-23`, so `P(u < f)` is within `2^-23` of `f`.
#[inline(always)]
pub fn uniforms(seed: u64, pair: u64) -> [f32; 2] {
    let mut z = seed ^ pair.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    // exact: `1.m` and 1 share their exponent; no integer-to-float conversion
    let draw = |half: u64| f32::from_bits(ONE | (half as u32 >> 9)) - 1.0;
    [draw(z), draw(z >> 32)]
}

/// The bits of `1.0f32`.
const ONE: u32 = 0x3F80_0000;

/// The uniform draw in `[0, 1)` of element `index`: its half of [`uniforms`].
#[inline(always)]
pub fn uniform(seed: u64, index: u64) -> f32 {
    // a select, not an index into the pair (which a GPU would put in local memory)
    let [even, odd] = uniforms(seed, index >> 1);
    if index & 1 == 0 {
        even
    } else {
        odd
    }
}

/// The level `q` in `-levels..=levels` of a finite `x` in a bucket of L2 norm `norm`, drawn so
/// that `E[q / levels x norm] = x` (`levels` in `1..=`[`MAX_LEVELS`]; a norm that is not
/// positive and finite, or so small that `levels / norm` overflows, gives level 0: the bucket
/// is all zeros, or its norm is out of `f32`'s range, see [`norm_of`]).
#[inline]
pub fn level(x: f32, norm: f32, levels: u32, seed: u64, index: u64) -> i32 {
    level_scaled(x, scale(norm, levels), levels, uniform(seed, index))
}

/// `levels / norm`, what [`level_scaled`] multiplies an element by: one division for a
/// bucket's elements; 0 where [`level`] gives every element level 0.
#[inline(always)]
pub fn scale(norm: f32, levels: u32) -> f32 {
    let scale = levels as f32 / norm;
    match norm > 0.0 && scale.is_finite() {
        true => scale,
        false => 0.0,
    }
}

/// [`level`] with the bucket's [`scale`] and the element's draw `u` ([`uniform`]) given: a
/// kernel takes the scale once per bucket and draws a pair at once.
#[inline(always)]
pub fn level_scaled(x: f32, scale: f32, levels: u32, u: f32) -> i32 {
    round(level_f32(x, scale, levels, u)).1
}

/// [`level_scaled`] as the `f32` it is exactly (`-0.0` for a negative `x` of level 0), all in
/// `f32` arithmetic: a kernel takes its byte with [`super::exact::integer_byte`], no conversion.
#[inline(always)]
pub fn level_f32(x: f32, scale: f32, levels: u32, u: f32) -> f32 {
    let s = levels as f32;
    // |x| <= norm, so a is in [0, s] up to rounding, which the clamp absorbs
    let a = (x.abs() * scale).min(s);
    // floor(a): `a` rounded to an integer (exact: a < 2^22), one less where it rounded up
    let near = round(a).0;
    let low = if near > a { near - 1.0 } else { near };
    // one up with probability a - low (exact); then low + 1 <= s, as a < low + 1 <= s unless
    // a == low
    let q = if u < a - low { low + 1.0 } else { low };
    q.copysign(x)
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
/// `no_std`): the guess is within a factor 2 for every normal `x` (a sum of `f32` squares is
/// one), and five steps take the relative error from 1 to below 2^-45, plenty for a norm kept
/// in `f32` (it is not the correctly rounded root; every target computes the same bits).
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
    for _ in 0..5 {
        y = 0.5 * (y + x / y);
    }
    y
}
