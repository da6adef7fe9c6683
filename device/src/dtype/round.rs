//! Bit-level conversions between `f32` and the narrow IEEE-style formats, shared by the dtypes.
//!
//! | function            | input                                  | output                                  |
//! |---------------------|----------------------------------------|-----------------------------------------|
//! | [`narrow_magnitude`] | f32 bits, sign clear, not NaN          | the format's bits rounded to nearest even; above its largest finite pattern on overflow |
//! | [`widen_magnitude`]  | a finite magnitude of the format       | f32 bits of the same value              |
//!
//! A format is `exp` exponent bits and `man` mantissa bits, bias `2^(exp-1) - 1`, with
//! subnormals; `exp <= 8` and `man <= 22`. Signs, infinities and NaN are the callers' business.

/// Rounds `a` (an f32's bits with the sign cleared, not NaN; +inf allowed) to the format with
/// `exp`/`man` bits, to nearest with ties to even. A result greater than the format's largest
/// finite pattern means the value overflowed; the caller maps it to inf or NaN.
#[inline(always)]
pub(crate) const fn narrow_magnitude(a: u32, exp: u32, man: u32) -> u32 {
    let bias = (1 << (exp - 1)) - 1;
    let drop = 23 - man;
    let e = a >> 23;
    if e > 127 - bias {
        // Normal in the format: re-bias, then round off `drop` bits. A carry out of the mantissa
        // bumps the exponent, which is the right result (and past the largest pattern, overflow).
        let r = a - ((127 - bias) << 23);
        (r + (1 << (drop - 1)) - 1 + ((r >> drop) & 1)) >> drop
    } else {
        // Subnormal or zero in the format: the value is k * 2^(1 - bias - man). The f32 value
        // is m * 2^(max(e, 1) - 150), so k = m >> shift, with shift >= drop + 1 here.
        let (m, e) = if e == 0 {
            (a, 1)
        } else {
            ((a & 0x7F_FFFF) | 0x80_0000, e)
        };
        let shift = 151 - bias - man - e;
        if shift > 25 {
            // m < 2^24 is below half of the smallest subnormal: rounds to zero.
            0
        } else {
            (m + (1 << (shift - 1)) - 1 + ((m >> shift) & 1)) >> shift
        }
    }
}

/// The f32 bits of `mag`, a finite non-negative value of the format with `exp`/`man` bits.
/// The format's subnormals must be f32 normals (true for f16 and both fp8 formats).
#[inline(always)]
pub(crate) const fn widen_magnitude(mag: u32, exp: u32, man: u32) -> u32 {
    let bias = (1 << (exp - 1)) - 1;
    let e = mag >> man;
    let m = mag & ((1 << man) - 1);
    if e != 0 {
        ((e + 127 - bias) << 23) | (m << (23 - man))
    } else if m == 0 {
        0
    } else {
        // m * 2^(1 - bias - man) with the top set bit of m at position p < man.
        let p = 31 - m.leading_zeros();
        ((p + 1 + 127 - bias - man) << 23) | ((m << (23 - p)) & 0x7F_FFFF)
    }
}
