//! Deterministic element data for tests, examples and benchmarks from a seeded generator:
//! [`elements`] mixes mostly normal values of moderate magnitude with every kind of special
//! value; [`normal`] draws N(0, 1) samples (what codec benchmarks compress); [`uniform`] draws
//! every bit pattern alike (what no codec compresses).
//!
//! [`elements`]:
//!
//! | share  | kind                                                                     |
//! |--------|--------------------------------------------------------------------------|
//! | 3/4    | normal values, exponent within ±4 of 1.0's, random sign and mantissa      |
//! | 1/24 each | +0, -0, +inf, -inf (e4m3 has no infinity: its largest finite value), NaN with a random payload and sign (e4m3: its two NaNs), subnormal |
//!
//! and for the integer dtypes:
//!
//! | share  | kind                                                                     |
//! |--------|--------------------------------------------------------------------------|
//! | 3/4    | small values, -1000..1000 (wrapped to the width: u8 and i8 see every byte) |
//! | 1/24 each | 0, 1, -1 (all bits set), the smallest and the largest signed value, random bits |
//!
//! ```
//! use zipcoll_host::{testdata, DType};
//! let a = testdata::elements(DType::Bf16, 1000, 7);
//! assert_eq!(a.len(), 2000);
//! assert_eq!(a, testdata::elements(DType::Bf16, 1000, 7));
//! assert!(a.iter().any(|&b| b != 0));
//! ```

use zipcoll_device::dtype::{Bf16, DType, F32Exact, F16, F32, F8E4M3, F8E5M2};

/// SplitMix64: a small, seedable generator with good statistical quality.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value uniform in `0..n` (`n > 0`; `0` gives 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }
}

/// Bit layout of a float format.
struct Format {
    exp_bits: u32,
    man_bits: u32,
    /// Whether the all-ones exponent holds infinities and NaNs (IEEE); `false` for e4m3, whose
    /// only NaNs are `S.1111.111`.
    ieee_specials: bool,
}

/// The float format of `dtype`; `None` for the integers.
fn format(dtype: DType) -> Option<Format> {
    Some(match dtype {
        DType::Bf16 => Format {
            exp_bits: 8,
            man_bits: 7,
            ieee_specials: true,
        },
        DType::F16 => Format {
            exp_bits: 5,
            man_bits: 10,
            ieee_specials: true,
        },
        DType::F32 => Format {
            exp_bits: 8,
            man_bits: 23,
            ieee_specials: true,
        },
        DType::F8E4M3 => Format {
            exp_bits: 4,
            man_bits: 3,
            ieee_specials: false,
        },
        DType::F8E5M2 => Format {
            exp_bits: 5,
            man_bits: 2,
            ieee_specials: true,
        },
        DType::F64 => Format {
            exp_bits: 11,
            man_bits: 52,
            ieee_specials: true,
        },
        DType::I8 | DType::U8 | DType::I32 | DType::U32 | DType::I64 | DType::U64 => return None,
    })
}

/// One integer element of `bits` bits (see the module table), zero-extended.
fn int_element(bits: u32, rng: &mut Rng) -> u64 {
    let sign_bit = 1u64 << (bits - 1);
    let v = match rng.below(24) {
        0 => 0,
        1 => 1,
        2 => u64::MAX,
        3 => sign_bit,
        4 => sign_bit - 1,
        5 => rng.next_u64(),
        _ => rng.below(2000).wrapping_sub(1000),
    };
    v & (u64::MAX >> (64 - bits))
}

/// One element's bits (see the module table).
fn element(f: &Format, rng: &mut Rng) -> u64 {
    let man_mask = (1u64 << f.man_bits) - 1;
    let exp_max = (1u64 << f.exp_bits) - 1;
    let bias = exp_max >> 1;
    let sign = rng.below(2) << (f.exp_bits + f.man_bits);
    let man = rng.next_u64() & man_mask;
    let join = |s: u64, e: u64, m: u64| s | e << f.man_bits | m;
    match rng.below(24) {
        0 => 0,
        1 => join(1 << (f.exp_bits + f.man_bits), 0, 0),
        2 | 3 => {
            let s = if rng.below(2) == 0 {
                0
            } else {
                1 << (f.exp_bits + f.man_bits)
            };
            if f.ieee_specials {
                join(s, exp_max, 0)
            } else {
                join(s, exp_max, man_mask - 1)
            }
        }
        4 => {
            if f.ieee_specials {
                join(sign, exp_max, man.max(1))
            } else {
                join(sign, exp_max, man_mask)
            }
        }
        5 => join(sign, 0, man.max(1)),
        _ => {
            let e = (bias + rng.below(9)).saturating_sub(4).clamp(1, exp_max - 1);
            join(sign, e, man)
        }
    }
}

/// `n` elements of `dtype` as little-endian bytes, the same for the same `seed` (see the module
/// table).
pub fn elements(dtype: DType, n: usize, seed: u64) -> Vec<u8> {
    let f = format(dtype);
    let size = dtype.size_bytes();
    let mut rng = Rng::new(seed);
    (0..n)
        .flat_map(|_| {
            let bits = match &f {
                Some(f) => element(f, &mut rng),
                None => int_element(8 * size as u32, &mut rng),
            };
            bits.to_le_bytes().into_iter().take(size)
        })
        .collect()
}

/// `n` elements of `dtype` with every bit pattern equally likely (NaNs, infinities and
/// subnormals included), as little-endian bytes, the same for the same `seed`: data no codec
/// can shrink, on which compression must not cost (Auto sends it RAW).
///
/// ```
/// use zipcoll_host::{testdata, DType};
/// let x = testdata::uniform(DType::Bf16, 1000, 5);
/// assert_eq!(x.len(), 2000);
/// assert_eq!(x, testdata::uniform(DType::Bf16, 1000, 5));
/// assert_ne!(x, testdata::uniform(DType::Bf16, 1000, 6));
/// ```
pub fn uniform(dtype: DType, n: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng::new(seed);
    let mut bytes: Vec<u8> = std::iter::repeat_with(|| rng.next_u64().to_le_bytes())
        .take((n * dtype.size_bytes()).div_ceil(8))
        .flatten()
        .collect();
    bytes.truncate(n * dtype.size_bytes());
    bytes
}

/// `n` samples of N(0, 1) (Box-Muller over [`Rng`]) rounded to `dtype` (the types reduced
/// through f32: to f32, then to nearest even as `F32Exact::from_f32`; f64: as drawn; the 32-
/// and 64-bit integers: N(0, 100^2) rounded to the nearest integer, wrapped to the width; the
/// 8-bit ones N(0, 10^2), which their width holds), as little-endian bytes; the same for the
/// same `seed`.
///
/// ```
/// use zipcoll_host::{testdata, DType};
/// let x = testdata::normal(DType::F32, 10_000, 1);
/// let v: Vec<f32> = x.chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
/// let mean = v.iter().sum::<f32>() / v.len() as f32;
/// assert!(mean.abs() < 0.05 && v.iter().all(|x| x.is_finite()));
/// ```
pub fn normal(dtype: DType, n: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng::new(seed);
    // A uniform value in (0, 1]: 53 random bits, never 0 (ln(0) is -inf).
    let mut unit = move || ((rng.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64;
    let samples = (0..n.div_ceil(2)).flat_map(|_| {
        let (r, theta) = ((-2.0 * unit().ln()).sqrt(), std::f64::consts::TAU * unit());
        [r * theta.cos(), r * theta.sin()]
    });
    let size = dtype.size_bytes();
    let of = |x: f64| -> u64 {
        match dtype {
            DType::Bf16 => u64::from(Bf16::from_f32(x as f32)),
            DType::F16 => u64::from(F16::from_f32(x as f32)),
            DType::F32 => u64::from(F32::from_f32(x as f32)),
            DType::F8E4M3 => u64::from(F8E4M3::from_f32(x as f32)),
            DType::F8E5M2 => u64::from(F8E5M2::from_f32(x as f32)),
            DType::F64 => x.to_bits(),
            DType::I8 | DType::U8 => (x * 10.0).round() as i64 as u64,
            DType::I32 | DType::U32 | DType::I64 | DType::U64 => (x * 100.0).round() as i64 as u64,
        }
    };
    samples
        .take(n)
        .flat_map(|x| of(x).to_le_bytes().into_iter().take(size))
        .collect()
}
