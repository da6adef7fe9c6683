//! Integers as `f32`s and back without a conversion instruction: a GPU runs conversions on a
//! pipe at an eighth of its `f32` rate, and the lossy kernels convert once per element. The
//! trick: for `|x| < 2^22`, `x + 1.5 x 2^23` is an `f32` whose exponent is fixed and whose
//! significand's low bits hold `x` rounded to an integer, in two's complement.
//!
//! | function          | gives                                                         | exact for      |
//! |-------------------|---------------------------------------------------------------|----------------|
//! | [`round`]         | `x` rounded to the nearest integer (ties to even), as an `f32` and as the `i32` | `|x| < 2^22`   |
//! | [`exact_f32`]     | the `f32` of an integer `l`                                   | every `i32` (`as f32` past `2^22`) |
//! | [`integer_byte`]  | the low byte of an integer-valued `f32`                       | `|q| < 2^22`   |
//!
//! ```
//! use zipcoll_device::lossy::exact::{exact_f32, integer_byte, round};
//! assert_eq!(round(2.5), (2.0, 2));
//! assert_eq!(round(-3.75), (-4.0, -4));
//! assert_eq!(exact_f32(-7).to_bits(), (-7.0f32).to_bits());
//! assert_eq!(integer_byte(-1.0), 0xFF);
//! ```

/// `1.5 x 2^23`: adding it to `|x| < 2^22` leaves `x` rounded to an integer in the sum's low
/// significand bits (the 1.5 keeps a negative `x` within the same exponent).
pub const ROUNDER: f32 = 12_582_912.0;

/// `x` rounded to the nearest integer (ties to even), as the `f32` and the `i32` it is, where
/// `|x| < 2^22`; elsewhere (and for NaN) the two are unspecified: callers test the range.
#[inline(always)]
pub fn round(x: f32) -> (f32, i32) {
    let big = x + ROUNDER;
    (big - ROUNDER, big.to_bits().wrapping_sub(ROUNDER.to_bits()) as i32)
}

/// The exact `f32` of an integer `l`: built from its bits for `|l| < 2^22`, `l as f32`
/// elsewhere.
#[inline(always)]
pub fn exact_f32(l: i32) -> f32 {
    match l.unsigned_abs() < 1 << 22 {
        true => f32::from_bits(ROUNDER.to_bits().wrapping_add(l as u32)) - ROUNDER,
        false => l as f32,
    }
}

/// The low byte of the integer `q` (an integer-valued `f32`, `|q| < 2^22`, `-0.0` included):
/// `q as i32 as u8` without the conversion (the sum's low byte; `ROUNDER`'s is 0).
#[inline(always)]
pub fn integer_byte(q: f32) -> u8 {
    (q + ROUNDER).to_bits() as u8
}
