//! Independent references: narrow float formats described from first principles (values in
//! f64, rounding by searching the sorted table of values), a deterministic random source, and
//! the special values every test mixes in.

pub use crate::common::Rng;
use std::sync::OnceLock;
use zipcoll_device::dtype::DType;

/// A narrow float format: `exp` exponent bits, `man` mantissa bits, bias `2^(exp-1) - 1`.
/// `ieee`: the top exponent holds inf and NaN; otherwise (e4m3) only all-ones is NaN.
pub struct Format {
    pub exp: u32,
    pub man: u32,
    pub ieee: bool,
    /// Finite non-negative values by pattern, `0..=max_finite`, then the value one step above
    /// the largest finite one (where rounding overflows).
    table: OnceLock<Vec<f64>>,
}

pub static FMT_BF16: Format = Format::new(8, 7, true);
pub static FMT_F16: Format = Format::new(5, 10, true);
pub static FMT_E4M3: Format = Format::new(4, 3, false);
pub static FMT_E5M2: Format = Format::new(5, 2, true);

impl Format {
    const fn new(exp: u32, man: u32, ieee: bool) -> Self {
        Format {
            exp,
            man,
            ieee,
            table: OnceLock::new(),
        }
    }

    /// The format of a narrow dtype.
    pub fn of(d: DType) -> &'static Format {
        match d {
            DType::Bf16 => &FMT_BF16,
            DType::F16 => &FMT_F16,
            DType::F8E4M3 => &FMT_E4M3,
            DType::F8E5M2 => &FMT_E5M2,
            other => panic!("{other:?} is not a narrow float format"),
        }
    }

    pub fn sign_bit(&self) -> u32 {
        1 << (self.exp + self.man)
    }

    pub fn words(&self) -> u32 {
        1 << (1 + self.exp + self.man)
    }

    fn bias(&self) -> i32 {
        (1 << (self.exp - 1)) - 1
    }

    fn fields(&self, b: u32) -> (bool, u32, u32) {
        (
            b & self.sign_bit() != 0,
            (b >> self.man) & ((1 << self.exp) - 1),
            b & ((1 << self.man) - 1),
        )
    }

    pub fn is_nan(&self, b: u32) -> bool {
        let (_, e, m) = self.fields(b);
        let top = (1 << self.exp) - 1;
        if self.ieee {
            e == top && m != 0
        } else {
            e == top && m == (1 << self.man) - 1
        }
    }

    /// The largest finite pattern (positive).
    pub fn max_finite(&self) -> u32 {
        if self.ieee {
            (((1 << self.exp) - 1) << self.man) - 1
        } else {
            (1 << (self.exp + self.man)) - 2
        }
    }

    /// The pattern a positive overflow rounds to: inf, or NaN for e4m3 (both are
    /// `max_finite + 1`).
    pub fn overflow(&self) -> u32 {
        self.max_finite() + 1
    }

    /// The value of a non-NaN pattern, from the definition of the format.
    pub fn value(&self, b: u32) -> f64 {
        let (neg, e, m) = self.fields(b);
        let s = if neg { -1.0 } else { 1.0 };
        let mag = if self.ieee && e == (1 << self.exp) - 1 {
            f64::INFINITY
        } else if e == 0 {
            m as f64 * 2f64.powi(1 - self.bias() - self.man as i32)
        } else {
            ((1u64 << self.man) + m as u64) as f64 * 2f64.powi(e as i32 - self.bias() - self.man as i32)
        };
        s * mag
    }

    /// The f32 bits `to_f32` must give for pattern `b`: the exact value; for NaN, bf16's bits
    /// shifted, the other formats' f32 canonical NaN.
    pub fn expected_to_f32(&self, b: u32) -> u32 {
        if !self.is_nan(b) {
            (self.value(b) as f32).to_bits()
        } else if self.exp == 8 {
            b << 16
        } else {
            0x7FFF_FFFF
        }
    }

    fn table(&self) -> &[f64] {
        self.table.get_or_init(|| {
            let mut t: Vec<f64> = (0..=self.max_finite()).map(|p| self.value(p)).collect();
            let ulp = t[t.len() - 1] - t[t.len() - 2];
            t.push(t[t.len() - 1] + ulp);
            t
        })
    }

    /// `x` (not NaN) rounded to the format: the nearest table value, ties to the even pattern,
    /// at or beyond the value above the largest finite one: [`Format::overflow`]. Sign kept.
    pub fn round(&self, x: f64) -> u32 {
        assert!(!x.is_nan());
        let sign = if x.is_sign_negative() { self.sign_bit() } else { 0 };
        let ax = x.abs();
        let t = self.table();
        // t[i - 1] <= ax < t[i]
        let i = t.partition_point(|&v| v <= ax);
        let p = if i == t.len() {
            self.overflow()
        } else {
            let (lo, hi) = (i as u32 - 1, i as u32);
            // Both neighbours have few significant bits: their midpoint is exact in f64.
            let mid = (t[i - 1] + t[i]) / 2.0;
            if ax < mid || (ax == mid && lo % 2 == 0) {
                lo
            } else {
                hi
            }
        };
        sign | p
    }
}

/// The canonical NaN of each dtype, written out (not taken from the crate).
pub fn canonical_nan(d: DType) -> u32 {
    match d {
        DType::Bf16 | DType::F16 => 0x7FFF,
        DType::F32 => 0x7FFF_FFFF,
        DType::F8E4M3 | DType::F8E5M2 => 0x7F,
        other => panic!("{other:?} is not a float type reduced through f32"),
    }
}

/// Special patterns of a dtype: ±0, ±inf (or e4m3's max), NaNs with several payloads and both
/// signs, the smallest and largest subnormals, the smallest normal, the largest finite, ±1.
pub fn specials(d: DType) -> Vec<u32> {
    match d {
        DType::Bf16 => vec![
            0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0xFFC0, 0x7F81, 0x7FFF, 0xFFA5, 0x0001, 0x8001, 0x007F, 0x0080,
            0x7F7F, 0xFF7F, 0x3F80, 0xBF80,
        ],
        DType::F16 => vec![
            0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0xFE00, 0x7C01, 0x7FFF, 0xFD55, 0x0001, 0x8001, 0x03FF, 0x0400,
            0x7BFF, 0xFBFF, 0x3C00, 0xBC00,
        ],
        DType::F32 => vec![
            0x0000_0000,
            0x8000_0000,
            0x7F80_0000,
            0xFF80_0000,
            0x7FC0_0000,
            0xFFC0_0000,
            0x7F80_0001,
            0x7FFF_FFFF,
            0xFFA5_A5A5,
            0x0000_0001,
            0x8000_0001,
            0x007F_FFFF,
            0x0080_0000,
            0x7F7F_FFFF,
            0xFF7F_FFFF,
            0x3F80_0000,
            0xBF80_0000,
        ],
        DType::F8E4M3 => vec![0x00, 0x80, 0x7F, 0xFF, 0x01, 0x81, 0x07, 0x08, 0x7E, 0xFE, 0x38, 0xB8],
        DType::F8E5M2 => vec![
            0x00, 0x80, 0x7C, 0xFC, 0x7D, 0x7E, 0x7F, 0xFE, 0x01, 0x81, 0x03, 0x04, 0x7B, 0xFB, 0x3C, 0xBC,
        ],
        other => panic!("{other:?} is not a float type reduced through f32"),
    }
}
