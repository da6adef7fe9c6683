//! Lossy quantizers for the interface of a collective (NCCLZ's decoupling): data is quantized
//! once, before it enters the collective, into a stream of 8-bit symbols that the lossless
//! coders (FixedLen, Huffman, ExpAns, RAW) carry like exponent symbols; the elements a
//! quantizer cannot represent travel exactly as escapes beside the symbols.
//!
//! | quantizer | symbols | guarantee |
//! |-----------|---------|-----------|
//! | [`error_bound`] | bucket `q` of `x / 2eb` in `-127..=127`, or an escape | `|x - x'| <= eb` for every element (escapes exact) |
//! | [`qsgd`]  | level `q` of `s <= 127` of `x / norm` per bucket of elements, drawn stochastically | `E[x'] = x` (in `f32`); NaN and infinities exact |
//!
//! [`levels`] quantizes the same two ways into integer levels on a scale every rank agreed,
//! which the collectives sum exactly (the communicator's lossy calls).
//!
//! Symbol `0` is [`ESCAPE`] in both; symbol `q + 128` stands for `q`. Every function is a pure
//! function of its arguments (the randomness of QSGD is a counter-based hash of a seed and the
//! element's index), so the GPU and the simulator produce the same symbols.

pub mod error_bound;
pub mod exact;
pub mod levels;
pub mod qsgd;

use crate::dtype::F32Exact;
pub use error_bound::ESCAPE;

/// A quantizer and its parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Quantizer {
    /// [`error_bound`] with the absolute bound `eb`.
    ErrorBound {
        /// The largest error allowed on any element.
        eb: f32,
    },
    /// [`qsgd`] with `levels` levels over buckets of `bucket` elements, drawing from `seed`.
    Qsgd {
        /// Levels `s` (`1..=127`).
        levels: u32,
        /// Elements per bucket (each bucket has its own norm).
        bucket: usize,
        /// The generator's seed: the same seed gives the same symbols.
        seed: u64,
    },
}

impl Quantizer {
    /// Elements per bucket, each of which needs a scale ([`Quantizer::scale`]): the whole
    /// input (`usize::MAX`) for the error bound.
    pub fn bucket(&self) -> usize {
        match *self {
            Quantizer::ErrorBound { .. } => usize::MAX,
            Quantizer::Qsgd { bucket, .. } => bucket.max(1),
        }
    }

    /// The scale of a bucket: its norm for QSGD, the bound for the error bound.
    pub fn scale<T: F32Exact>(&self, bucket: &[T::Bits]) -> f32 {
        match *self {
            Quantizer::ErrorBound { eb } => eb,
            Quantizer::Qsgd { .. } => qsgd::norm_of::<T>(bucket),
        }
    }

    /// The symbol of element `x`, index `index` of the input, in a bucket of scale `scale`.
    #[inline]
    pub fn symbol<T: F32Exact>(&self, x: T::Bits, scale: f32, index: u64) -> u8 {
        match *self {
            Quantizer::ErrorBound { eb } => error_bound::quantize::<T>(x, eb),
            Quantizer::Qsgd { levels, seed, .. } => qsgd::quantize::<T>(x, scale, levels, seed, index),
        }
    }

    /// The element a non-escape `symbol` of a bucket of scale `scale` stands for.
    #[inline]
    pub fn value<T: F32Exact>(&self, symbol: u8, scale: f32) -> T::Bits {
        match *self {
            Quantizer::ErrorBound { eb } => error_bound::value::<T>(symbol, eb),
            Quantizer::Qsgd { levels, .. } => qsgd::value::<T>(symbol, scale, levels),
        }
    }
}
