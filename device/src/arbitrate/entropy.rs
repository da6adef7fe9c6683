//! Integer log2 and order-0 entropy, exact to 16 fractional bits and identical on every target
//! (`f32::log2` is not in `core`).
//!
//! | function            | gives                                                        |
//! |---------------------|--------------------------------------------------------------|
//! | [`log2_q16`]        | `log2(x)` in Q16 (rounded down), for `x >= 1`                |
//! | [`entropy_bits_q16`]| `sum_s c_s * log2(N / c_s)`: the order-0 bound in Q16 bits   |

/// Fractional bits of the fixed-point values of this module.
pub const Q16_ONE: u64 = 1 << 16;

/// `log2(x)` in Q16 fixed point, rounded down (`0` for `x = 0`, which has no logarithm).
///
/// The integer part is the position of the top bit; the 16 fractional bits come from squaring
/// the normalized mantissa (in Q31, so each square fits a u64): each square that reaches 2 is
/// one fractional bit. The error is below `2^-16`.
pub fn log2_q16(x: u64) -> u64 {
    if x == 0 {
        return 0;
    }
    let int = 63 - x.leading_zeros();
    // m: x / 2^int in Q31, in [1, 2)
    let mut m = if int >= 31 { x >> (int - 31) } else { x << (31 - int) };
    let mut frac = 0u64;
    let mut bit = Q16_ONE >> 1;
    while bit != 0 {
        // m < 2^32, so m * m < 2^64
        m = (m * m) >> 31;
        if m >= 1 << 32 {
            m >>= 1;
            frac |= bit;
        }
        bit >>= 1;
    }
    (int as u64) << 16 | frac
}

/// The order-0 entropy bound of a histogram in Q16 bits: `sum_s c_s * log2(N / c_s)` where
/// `N = sum_s c_s` (`0` for an empty histogram or a single symbol). Counts of `u32` or `u64`;
/// exact (to the Q16 rounding) while `N * 64 * 2^16` fits a u64 (`N < 2^42`).
pub fn entropy_bits_q16<C: Copy + Into<u64>>(counts: &[C]) -> u64 {
    let total: u64 = counts.iter().map(|&c| c.into()).sum();
    let log_total = log2_q16(total);
    counts
        .iter()
        .map(|&c| c.into())
        .filter(|&c| c != 0)
        .map(|c| c * (log_total - log2_q16(c)))
        .sum()
}
