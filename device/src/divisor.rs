//! Division by a number fixed for a whole kernel (a frequency, a bucket, a block of elements)
//! as a multiply-high (Granlund and Montgomery): a GPU has no integer divider, and a `u32`
//! division compiles to about twenty instructions, a `u64` one to a subroutine.
//!
//! | item            | what it does                                                          |
//! |-----------------|-----------------------------------------------------------------------|
//! | [`reciprocal`]  | `(m, l)` of a `u32` divisor `d`, computed once                         |
//! | [`quotient`]    | `x / d` from `m`, `l` and `mul_hi(m, x)`: exact for every `u32` `x`    |
//! | [`Divisor`]     | indices (`usize`) divided by one `usize`: a multiply-high ([`Thread::mul_hi`]) where both fit 32 bits, `/` elsewhere |
//!
//! ```
//! use zipcoll_device::divisor::Divisor;
//! #[derive(Clone, Copy)]
//! struct Cpu; // a thread with the portable `mul_hi`
//! impl zipcoll_targets::Thread for Cpu {}
//! let d = Divisor::new(512);
//! assert_eq!(d.div_rem(Cpu, 1_000_000), (1_000_000 / 512, 1_000_000 % 512));
//! assert_eq!(d.div(Cpu, 1 << 40), (1 << 40) / 512); // past 32 bits: a plain division
//! ```

use zipcoll_targets::Thread;

/// The reciprocal `(m, l)` of `d >= 1`: `l = ceil(log2 d)` and
/// `m = floor(2^32 (2^l - d) / d) + 1`, which [`quotient`] needs.
#[inline]
pub const fn reciprocal(d: u32) -> (u32, u32) {
    let l = 32 - (d - 1).leading_zeros();
    let m = ((1u64 << 32) * ((1u64 << l) - d as u64) / d as u64 + 1) as u32;
    (m, l)
}

/// `x / d` for [`reciprocal`]`(d) = (m, l)`, given `t`, the high 32 bits of `m x` (a
/// `mul_hi`, which the caller takes from its thread): a subtract, an add and two shifts.
#[inline(always)]
pub fn quotient(x: u32, t: u32, l: u32) -> u32 {
    (t + ((x - t) >> l.min(1))) >> l.max(1).saturating_sub(1)
}

/// Division of indices by a divisor `d >= 1` fixed for a kernel: [`quotient`] where `x` and
/// `d` fit `u32` (a kernel's indices, almost always), a plain division where they do not.
#[derive(Clone, Copy, Debug)]
pub struct Divisor {
    d: usize,
    m: u32,
    l: u32,
    /// The indices below this take the multiply-high (`2^32`, or 0 for `d >= 2^32`).
    fast_below: u64,
}

impl Divisor {
    /// The divisor `d` (`>= 1`; 0 is taken as 1, a kernel's caller checks its arguments).
    #[inline]
    pub fn new(d: usize) -> Self {
        let d = d.max(1);
        let (fast_below, (m, l)) = match u32::try_from(d) {
            Ok(d32) => (1u64 << 32, reciprocal(d32)),
            Err(_) => (0, (0, 0)),
        };
        Self { d, m, l, fast_below }
    }

    /// `d`.
    #[inline(always)]
    pub fn get(self) -> usize {
        self.d
    }

    /// `x / d`, the multiply-high on thread `w`.
    #[inline(always)]
    pub fn div<W: Thread>(self, w: W, x: usize) -> usize {
        match (x as u64) < self.fast_below {
            true => {
                let x = x as u32;
                quotient(x, w.mul_hi(self.m, x), self.l) as usize
            }
            false => x / self.d,
        }
    }

    /// `(x / d, x % d)`, the multiply-high on thread `w`.
    #[inline(always)]
    pub fn div_rem<W: Thread>(self, w: W, x: usize) -> (usize, usize) {
        let q = self.div(w, x);
        (q, x - q * self.d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A thread with the portable `Thread` defaults (what the simulator and AMD run).
    #[derive(Clone, Copy)]
    struct Portable;
    impl Thread for Portable {}

    /// A few values from a 64-bit LCG.
    fn draws(seed: u64, n: usize) -> impl Iterator<Item = u64> {
        let mut x = seed;
        (0..n).map(move |_| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            x
        })
    }

    #[test]
    fn quotients_are_exact_at_every_edge_and_at_random() {
        let divisors = (1..=4100u32)
            .chain((0..32).flat_map(|b| [(1u32 << b) - 1, 1 << b, (1 << b) + 1]))
            .chain([u32::MAX, u32::MAX - 1, 3 << 30])
            .chain(draws(7, 2000).map(|x| (x >> 32) as u32))
            .filter(|&d| d > 0);
        for d in divisors {
            let (m, l) = reciprocal(d);
            let edges = [
                0,
                1,
                d - 1,
                d,
                d.wrapping_add(1),
                u32::MAX,
                u32::MAX - 1,
                u32::MAX / d * d,
                (d << 21).wrapping_sub(1),
            ];
            let randoms = draws(d as u64, 64).map(|x| (x >> 32) as u32);
            for x in edges.into_iter().chain(randoms) {
                assert_eq!(quotient(x, Portable.mul_hi(m, x), l), x / d, "{x} / {d}");
            }
        }
    }

    #[test]
    fn indices_divide_exactly_below_and_past_32_bits() {
        let divisors = [
            1usize,
            2,
            3,
            7,
            512,
            4096,
            65537,
            1 << 31,
            u32::MAX as usize,
            1 << 32,
            (1 << 33) + 5,
        ];
        for d in divisors {
            let div = Divisor::new(d);
            let xs = [
                0usize,
                1,
                d - 1,
                d,
                d + 1,
                u32::MAX as usize,
                1 << 32,
                (1 << 32) + 1,
                usize::MAX,
            ]
            .into_iter()
            .chain(draws(d as u64, 200).map(|x| (x >> (x % 40)) as usize));
            for x in xs {
                assert_eq!(div.div_rem(Portable, x), (x / d, x % d), "{x} / {d}");
            }
        }
        assert_eq!(Divisor::new(0).div(Portable, 9), 9);
    }
}
