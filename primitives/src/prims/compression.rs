//! How the primitives encode what they send, chosen at launch as a type parameter. Receiving
//! needs no choice: every frame says its codec, and [`zipcoll_device::codec::decode_frame`]
//! decodes any of them.
//!
//! | type         | frames sent                                                        |
//! |--------------|--------------------------------------------------------------------|
//! | [`Off`]      | RAW (header + the elements as they are)                            |
//! | [`Force<C>`] | coded with the symbol coder `C`, RAW where that is not smaller     |

use core::marker::PhantomData;
use zipcoll_device::codec::{encode_frame, encode_raw_frame, LaneOut, SymbolCoder};
use zipcoll_device::dtype::Split;
use zipcoll_device::frame::FrameError;
use zipcoll_targets::Warp;

/// An encoder for the frames a primitive sends.
pub trait Compression {
    /// Encodes `input` into one frame at the start of `out`; returns the frame's bytes. Called
    /// by every lane of the warp with the same arguments.
    fn encode<W: Warp, T: Split>(w: W, input: &[T::Bits], out: LaneOut<'_>) -> Result<usize, FrameError>;
}

/// Compression off: RAW frames.
pub struct Off;

/// Every frame coded with `C` (lossless; RAW where coding does not shrink it).
pub struct Force<C>(PhantomData<C>);

impl Compression for Off {
    #[inline(always)]
    fn encode<W: Warp, T: Split>(w: W, input: &[T::Bits], out: LaneOut<'_>) -> Result<usize, FrameError> {
        encode_raw_frame::<W, T>(w, input, out)
    }
}

impl<C: SymbolCoder> Compression for Force<C> {
    #[inline(always)]
    fn encode<W: Warp, T: Split>(w: W, input: &[T::Bits], out: LaneOut<'_>) -> Result<usize, FrameError> {
        encode_frame::<W, T, C>(w, input, out)
    }
}
