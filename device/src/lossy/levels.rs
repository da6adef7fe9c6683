//! Quantization into integer levels that a collective combines exactly: every rank quantizes
//! its input on a scale all ranks agreed (one bound, or one norm per bucket), the collective
//! sums, takes the max or moves the integers (lossless), and the result is scaled back once.
//! So a sum of `k` ranks is off by at most `k x eb` whatever the number of hops: nothing is
//! quantized twice.
//!
//! | quantizer        | level of `x`                                        | value of a combined level `l` |
//! |------------------|-----------------------------------------------------|-------------------------------|
//! | error bound `eb` | [`bound_level`]: `q` with `|x - 2 eb q| <= eb` exactly, `|q| <= qmax` | `l x 2 eb / divisor`, rounded once to the dtype |
//! | QSGD, `s` levels, bucket norm `norm` | [`qsgd::level`]: `q` in `-s..=s`, `E[q norm / s] = x` | [`qsgd_value`]: `l x norm x (1 / (s divisor))` in `f32`, then the dtype |
//!
//! `divisor` is the number of ranks for an average, else 1. Levels stay within
//! [`MAX_LEVEL`], so `2 |q| + 1` times `eb`'s 24-bit significand fits `f64`'s 53 bits and the
//! bound check in [`bound_level`] is exact. Non-finite elements have no level: callers send
//! them exactly instead (the communicator escapes their buckets).
//!
//! ```
//! use zipcoll_device::dtype::F32;
//! use zipcoll_device::lossy::levels::{bound_level, value};
//! let (eb, x) = (0.01f32, [0.304f32, -1.2]);
//! let q: Vec<i32> = x.iter().map(|&v| bound_level(v, eb, 1000).unwrap()).collect();
//! let sum = f32::from_bits(value::<F32>(q[0] + q[1], 2.0 * eb as f64, 1));
//! assert!((sum - (0.304 - 1.2)).abs() <= 2.0 * eb + 1e-6);
//! ```

use super::exact::{exact_f32, round};
pub use super::qsgd::level as qsgd_level;
use crate::dtype::F32Exact;

/// The largest level in magnitude: `(2 MAX_LEVEL + 1) x 2^24 <= 2^53`.
pub const MAX_LEVEL: i32 = 1 << 27;

/// Whether `x` lies in `[(2q - 1) eb, (2q + 1) eb]`, i.e. `|x - 2 eb q| <= eb`, exactly: for
/// `|q| <= MAX_LEVEL` both ends are products of an odd integer below `2^28 + 2` and `eb`'s
/// 24-bit significand, exact in `f64`, and `x` is an `f32`.
#[inline(always)]
fn covers(x: f32, eb: f32, q: i32) -> bool {
    let (x, eb, q) = (x as f64, eb as f64, q as f64);
    (2.0 * q - 1.0) * eb <= x && x <= (2.0 * q + 1.0) * eb
}

/// The level `q` of `x` under the bound `eb` (a finite `f32 > 0`): the nearest multiple of
/// `2 eb`, `|x - 2 eb q| <= eb` exactly, `|q| <= min(qmax, MAX_LEVEL)`; `None` for non-finite
/// `x`, a bad bound, or `x` beyond the levels.
#[inline]
pub fn bound_level(x: f32, eb: f32, qmax: i32) -> Option<i32> {
    let qmax = qmax.min(MAX_LEVEL);
    if !(x.is_finite() && eb > 0.0 && eb.is_finite() && qmax >= 0) {
        return None;
    }
    let t = x as f64 / (2.0 * eb as f64);
    if t.abs() > qmax as f64 + 1.0 {
        return None;
    }
    // `t` is within 2^-25 of the exact quotient (relative 2^-53 of at most 2^27 + 1), so
    // rounding it lands on the nearest level or a neighbour; the exact check picks
    let r = if t < 0.0 { t - 0.5 } else { t + 0.5 } as i32;
    [r, r - 1, r + 1]
        .into_iter()
        .find(|&q| q.abs() <= qmax && covers(x, eb, q))
}

/// [`bound_level`] for many elements under one bound, mostly in `f32`: the same level for
/// every `x`, without `bound_level`'s `f64` division and conversions where it can prove the
/// level in `f32` (a GPU's `f64` and conversion pipes run at a half and an eighth of its
/// `f32` rate, and made the quantize kernel compute-bound).
///
/// The proof: `r` is `x / 2eb` rounded to an integer (either way at a tie: the check alone
/// decides), `d = x - r 2eb` computed in `f32` with two roundings
/// (`r 2eb`, then the difference). For `|r| <= FAST_LEVELS` and `eb` in `2^-100 ..= 2^100`
/// their error is below `(2 FAST_LEVELS + 1) eb 2^-24 < eb 2^-12`, so `|d| < eb (1 - 2^-11)`
/// puts `x` strictly inside level `r`'s interval: `r` is the only level that covers `x`, which
/// is what `bound_level` returns. Anything else (an edge within `eb 2^-11`, a large level, a
/// non-finite `x`, a bound outside that range) takes `bound_level` itself.
#[derive(Clone, Copy, Debug)]
pub struct BoundLevels {
    eb: f32,
    qmax: i32,
    /// `1 / 2eb`, `eb (1 - 2^-11)` and `min(FAST_LEVELS, qmax)`, or `None` where the `f32`
    /// proof does not hold.
    fast: Option<(f32, f32, f32)>,
}

/// The largest level [`BoundLevels`] proves in `f32`.
pub const FAST_LEVELS: i32 = 1024;

impl BoundLevels {
    /// Levels under the bound `eb` within `qmax`, as [`bound_level`]`(x, eb, qmax)`.
    pub fn new(eb: f32, qmax: i32) -> Self {
        let fast = (eb >= 1.0 / (1u128 << 100) as f32 && eb <= (1u128 << 100) as f32).then(|| {
            (
                1.0 / (2.0 * eb),
                eb * (1.0 - 1.0 / 2048.0),
                FAST_LEVELS.min(qmax) as f32,
            )
        });
        Self { eb, qmax, fast }
    }

    /// `bound_level(x, eb, qmax)`.
    #[inline(always)]
    pub fn level(&self, x: f32) -> Option<i32> {
        match self.proved(x) {
            Some(q) => Some(q),
            None => edge_level(x, self.eb, self.qmax),
        }
    }

    /// The level of `x` where the `f32` proof holds (see the type's docs), else `None`.
    #[inline(always)]
    pub fn proved(&self, x: f32) -> Option<i32> {
        let (inverse, inner, limit) = self.fast?;
        // `t` rounded to the integer `r` without a conversion: for `|t| < 2^22` exactly; elsewhere
        // (and for NaN) `r` fails the limit below
        let (r, level) = round(x * inverse);
        (r.abs() <= limit && (x - r * (2.0 * self.eb)).abs() < inner).then_some(level)
    }
}

/// [`bound_level`] out of line, for the few elements [`BoundLevels`] does not prove in `f32`:
/// its `f64` code stays out of a kernel's unrolled loop over a vector's elements.
#[cold]
#[inline(never)]
fn edge_level(x: f32, eb: f32, qmax: i32) -> Option<i32> {
    bound_level(x, eb, qmax)
}

/// [`value`]`(sum, 2 eb, 1)` in `f32` alone where `2 eb` is a finite `f32` and `|sum| <= 2^24`
/// (the error bound's levels, summed, not averaged): `sum` and `2 eb` are then exact `f32`s,
/// and their `f32` product is their exact product rounded once, as `value`'s exact `f64`
/// product rounded to `f32` is. A GPU runs it on its `f32` pipe instead of two conversions
/// and an `f64` multiply.
#[inline(always)]
pub fn bound_value<T: F32Exact>(sum: i32, eb: f32) -> T::Bits {
    let unit = 2.0 * eb;
    match unit.is_finite() && sum.unsigned_abs() <= 1 << 24 {
        true => T::from_f32(exact_f32(sum) * unit),
        false => value::<T>(sum, 2.0 * eb as f64, 1),
    }
}

/// QSGD's unit of a combined level in a bucket of norm `norm` with `levels` levels, divided by
/// `divisor`: `norm x (1 / (levels x divisor))` in `f32` (the reciprocal is a kernel's one
/// division; two roundings, a relative `2^-23` at most), 0 where the norm is not positive and
/// finite (its levels are all 0: [`super::qsgd::level`]).
#[inline(always)]
pub fn qsgd_unit(norm: f32, levels: u32, divisor: u32) -> f32 {
    let unit = norm * (1.0 / (levels.max(1) as f32 * divisor.max(1) as f32));
    match norm > 0.0 && norm.is_finite() {
        true => unit,
        false => 0.0,
    }
}

/// The element a combined QSGD level `sum` stands for with the unit [`qsgd_unit`]:
/// `sum x unit` rounded once to `f32`, then to `T` (`|sum| <= 127 x` the ranks, exact in `f32`).
#[inline(always)]
pub fn qsgd_value<T: F32Exact>(sum: i32, unit: f32) -> T::Bits {
    T::from_f32(exact_f32(sum) * unit)
}

/// The element that a combined level `sum` stands for: `sum x unit / divisor` in `f64`,
/// rounded to `f32` and then to `T` (`unit` is `2 eb`, or a bucket's `norm / s`).
#[inline]
pub fn value<T: F32Exact>(sum: i32, unit: f64, divisor: u32) -> T::Bits {
    let v = sum as f64 * unit;
    // `v / 1.0 == v` exactly: no `f64` division for a sum
    let v = if divisor > 1 { v / divisor as f64 } else { v };
    T::from_f32(v as f32)
}
