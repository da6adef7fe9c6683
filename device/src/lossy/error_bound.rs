//! Deterministic error-bounded uniform quantization (SZ-style): every element `x` becomes a
//! symbol, and the value it stands for is within `eb` of `x`, or `x` itself.
//!
//! | symbol     | stands for                                                               |
//! |------------|--------------------------------------------------------------------------|
//! | [`ESCAPE`] | the element exactly, carried beside the symbols (NaN payloads, infinities, values too far from zero, and any element whose bucket's value is not within `eb` once rounded to the dtype) |
//! | `1..=255`  | `q = symbol - 128` in `-127..=127`: the value `T::from_f32(q * 2 eb)`    |
//!
//! The quantizer proves the bound element by element: it rounds `q * 2 eb` to the dtype exactly
//! as [`value`] does, and escapes the element unless `|x - x'| <= eb` holds in exact arithmetic
//! (an `f64` difference of two `f32`s, exact whenever it decides: see [`within`]). So the bound
//! holds at bucket edges, for subnormals and next to the dtype's largest values, whatever the
//! rounding of the products. `-0.0` becomes `+0.0` (an error of 0).
//!
//! ```
//! use zipcoll_device::dtype::{Bf16, F32Exact};
//! use zipcoll_device::lossy::error_bound::{quantize, value, ESCAPE};
//! let x = Bf16::from_f32(0.3);
//! let s = quantize::<Bf16>(x, 0.01);
//! assert!(s != ESCAPE && (Bf16::to_f32(value::<Bf16>(s, 0.01)) - 0.3).abs() <= 0.01 + 1e-3);
//! assert_eq!(quantize::<Bf16>(Bf16::from_f32(f32::INFINITY), 0.01), ESCAPE);
//! ```

use crate::dtype::F32Exact;

/// The symbol of an element carried exactly.
pub const ESCAPE: u8 = 0;
/// The largest bucket index in magnitude: symbols `1..=255` are buckets `-127..=127`.
pub const MAX_BUCKET: i32 = 127;

/// The bucket of `x / step` rounded to nearest (ties away from zero), if it is within
/// [`MAX_BUCKET`] (NaN and infinities are not).
#[inline(always)]
fn bucket(x: f32, step: f32) -> Option<i32> {
    let y = x / step;
    // `y` NaN or beyond the buckets: no bucket (also keeps the casts below in range)
    if y.is_nan() || y.abs() > MAX_BUCKET as f32 + 0.5 {
        return None;
    }
    let t = y as i32; // toward zero
    let frac = y - t as f32; // exact: |y| < 2^8
    let q = if frac >= 0.5 {
        t + 1
    } else if frac <= -0.5 {
        t - 1
    } else {
        t
    };
    (q.abs() <= MAX_BUCKET).then_some(q)
}

/// Whether `|x - r| <= eb` exactly. `x` and `r` are `f32`s: their difference in `f64` is exact
/// when their exponents are within 29 of each other, which holds whenever the comparison is
/// close (an accepted `r` is `0`, making the difference `x`, or at least `2 eb` in magnitude
/// and within `eb` of `x`, so within a factor of 2); otherwise the difference is far from `eb`
/// and its rounding (relative `2^-53`) cannot change the outcome.
#[inline(always)]
fn within(x: f32, r: f32, eb: f32) -> bool {
    ((x as f64) - (r as f64)).abs() <= eb as f64
}

/// The symbol of element `x` of `T` for the bound `eb` (a finite `f32 > 0`; others make every
/// element [`ESCAPE`]).
#[inline]
pub fn quantize<T: F32Exact>(x: T::Bits, eb: f32) -> u8 {
    if !(eb > 0.0 && eb.is_finite()) {
        return ESCAPE;
    }
    let v = T::to_f32(x);
    let step = 2.0 * eb;
    match bucket(v, step) {
        Some(q) if within(v, T::to_f32(T::from_f32(q as f32 * step)), eb) => (q + 128) as u8,
        _ => ESCAPE,
    }
}

/// The element a non-escape `symbol` stands for under the bound `eb` (the same bits on every
/// target: one correctly rounded `f32` product, then the dtype's rounding). [`ESCAPE`] gives
/// zero: its element is carried elsewhere.
#[inline]
pub fn value<T: F32Exact>(symbol: u8, eb: f32) -> T::Bits {
    let q = match symbol {
        ESCAPE => 0,
        s => s as i32 - 128,
    };
    T::from_f32(q as f32 * (2.0 * eb))
}

/// The absolute bound of a bound `rel` relative to the value range `[min, max]` of the data
/// (SZ's value-range-relative mode): `rel * (max - min)`, or `rel * |max|` when the range is a
/// single value (so a constant tensor still gets a positive bound unless it is zero). `None`
/// when it is not a finite positive number.
pub fn relative_to_range(rel: f32, min: f32, max: f32) -> Option<f32> {
    let range = if max > min { max - min } else { max.abs() };
    let eb = rel * range;
    (eb > 0.0 && eb.is_finite()).then_some(eb)
}
