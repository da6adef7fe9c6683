//! How the primitives encode what they send, chosen at launch as a type parameter, and which
//! frames they can decode: every frame says its codec, and all but [`RawOnly`] decode any of
//! them ([`zipcoll_device::codec::decode_frame`]).
//!
//! | type          | frames sent                                                        | frames decoded |
//! |---------------|--------------------------------------------------------------------|----------------|
//! | [`Off`]       | RAW (header + the elements as they are)                            | any            |
//! | [`Force<C>`]  | coded with the symbol coder `C`, RAW where that is not smaller     | any            |
//! | [`ByChannel`] | coded with the codec the channel names (`ChannelDesc::codec`, read at run time), RAW where not smaller; RAW for `CodecId::Raw` | any |
//!
//! (`Force` and `ByChannel` code block frames on a block team where the codec has a block
//! coder; every type but `RawOnly` decodes both frame formats.)
//! | [`RawOnly`]   | RAW                                                                | RAW only: a coded frame is `FrameError::CodecNotBuilt` (no symbol coder in the kernel: the block-channel kernel, for calls every rank sends RAW) |
//!
//! `Off` and `Force<C>` fix the codec at compile time (one kernel per codec); `ByChannel` keeps
//! every coder in one kernel and picks per channel at run time, which is what the GPU entry
//! points use (one kernel per dtype and op instead of five).
//!
//! On a channel driven by a whole thread block (a team with shared memory for a codec,
//! `Team::codec_scratch`), `ByChannel` codes a frame whose codec has a block coder (ExpAns) with
//! every thread of the block, as a block frame ([`encode_block_frame_with`], format version 2),
//! and decodes received block frames the same way; other codecs are coded by the block's first
//! warp as warp frames (version 1). Every frame says its version, so a receiver decodes either.

use core::marker::PhantomData;
use zipcoll_device::block::Scratch;
use zipcoll_device::codec::block_frame::{decode_block_frame, encode_block_frame_with};
use zipcoll_device::codec::{
    decode_frame, decode_raw_frame, encode_frame, encode_raw_frame, CodecId, LaneOut, SymbolCoder,
};
use zipcoll_device::dtype::Split;
use zipcoll_device::frame::FrameError;
use zipcoll_device::with_symbol_coder;
use zipcoll_targets::Warp;

/// An encoder for the frames a primitive sends.
pub trait Compression {
    /// Encodes `input` into one frame at the start of `out`; returns the frame's bytes. `codec`
    /// is the channel's `ChannelDesc::codec`. Called by every lane of the warp with the same
    /// arguments.
    fn encode<W: Warp, T: Split>(w: W, codec: u64, input: &[T::Bits], out: LaneOut<'_>) -> Result<usize, FrameError>;

    /// Whether every frame [`Compression::encode`] writes for channel codec `codec` is RAW (so a
    /// step may write it itself: [`super::raw`]).
    fn sends_raw(codec: u64) -> bool;

    /// Decodes one received frame into `out` (see [`decode_frame`]); returns its elements.
    /// Called by every lane of the warp with the same arguments.
    #[inline(always)]
    fn decode<W: Warp, T: Split>(w: W, frame: &[u8], out: LaneOut<'_>) -> Result<usize, FrameError> {
        decode_frame::<W, T>(w, frame, out)
    }

    /// Encodes `input` as one block frame with every thread of the block (`scratch`: the
    /// block's shared memory for the coder), when this compression codes channel codec `codec`
    /// with a block coder; `None` (nothing written) otherwise: the frame is then
    /// [`Compression::encode`]d by one warp. Called by every thread of the block with the same
    /// arguments.
    #[inline(always)]
    fn encode_block<W: Warp, T: Split>(
        w: W,
        scratch: Scratch,
        codec: u64,
        input: &[T::Bits],
        out: LaneOut<'_>,
    ) -> Option<Result<usize, FrameError>> {
        let _ = (w, scratch, codec, input, out);
        None
    }

    /// Decodes one received block frame (format version 2) with every thread of the block
    /// ([`decode_block_frame`]); `None` (nothing written) if this compression does not decode
    /// block frames ([`RawOnly`]), whose warp decoder then rejects them.
    #[inline(always)]
    fn decode_block<W: Warp, T: Split>(
        w: W,
        scratch: Scratch,
        frame: &[u8],
        out: LaneOut<'_>,
    ) -> Option<Result<usize, FrameError>> {
        Some(decode_block_frame::<W, T>(w, scratch, frame, out))
    }
}

/// Compression off: RAW frames.
pub struct Off;

/// Every frame coded with `C` (lossless; RAW where coding does not shrink it).
pub struct Force<C>(PhantomData<C>);

impl Compression for Off {
    #[inline(always)]
    fn encode<W: Warp, T: Split>(w: W, _: u64, input: &[T::Bits], out: LaneOut<'_>) -> Result<usize, FrameError> {
        encode_raw_frame::<W, T>(w, input, out)
    }

    fn sends_raw(_: u64) -> bool {
        true
    }
}

impl<C: SymbolCoder> Compression for Force<C> {
    #[inline(always)]
    fn encode<W: Warp, T: Split>(w: W, _: u64, input: &[T::Bits], out: LaneOut<'_>) -> Result<usize, FrameError> {
        encode_frame::<W, T, C>(w, input, out)
    }

    fn sends_raw(_: u64) -> bool {
        false
    }

    #[inline(always)]
    fn encode_block<W: Warp, T: Split>(
        w: W,
        scratch: Scratch,
        _: u64,
        input: &[T::Bits],
        out: LaneOut<'_>,
    ) -> Option<Result<usize, FrameError>> {
        encode_block_frame_with::<W, T>(w, scratch, C::ID, input, out)
    }
}

/// The codec named by the channel (`ChannelDesc::codec`), chosen at run time.
pub struct ByChannel;

impl Compression for ByChannel {
    #[inline(always)]
    fn encode<W: Warp, T: Split>(w: W, codec: u64, input: &[T::Bits], out: LaneOut<'_>) -> Result<usize, FrameError> {
        let id = u8::try_from(codec).ok().and_then(CodecId::from_u8);
        match id {
            Some(id) => {
                with_symbol_coder!(id, |C| encode_frame::<W, T, C>(w, input, out), raw => encode_raw_frame::<W, T>(w, input, out))
            }
            None => Err(FrameError::UnknownCodec {
                found: u8::try_from(codec).unwrap_or(u8::MAX),
            }),
        }
    }

    fn sends_raw(codec: u64) -> bool {
        codec == CodecId::Raw as u64
    }

    #[inline(always)]
    fn encode_block<W: Warp, T: Split>(
        w: W,
        scratch: Scratch,
        codec: u64,
        input: &[T::Bits],
        out: LaneOut<'_>,
    ) -> Option<Result<usize, FrameError>> {
        let id = u8::try_from(codec).ok().and_then(CodecId::from_u8)?;
        encode_block_frame_with::<W, T>(w, scratch, id, input, out)
    }
}

/// The compression that kernels which choose the codec at run time build for a dtype:
/// [`ByChannel`] for the coded types, [`RawOnly`] for the others (no symbol coder is built
/// for them, `DType::coded`, so their kernels stay the size of the RAW-only one).
pub trait Coding: Split {
    /// [`ByChannel`] or [`RawOnly`].
    type ByChannel: Compression;
}

/// `impl Coding` for each listed dtype with the listed compression.
macro_rules! coding {
    ($($t:ident => $c:ident),* $(,)?) => {$(
        impl Coding for zipcoll_device::dtype::$t {
            type ByChannel = $c;
        }
    )*};
}
coding! {
    Bf16 => ByChannel, F16 => ByChannel, F32 => ByChannel, F8E4M3 => ByChannel, F8E5M2 => ByChannel,
    I8 => ByChannel, U8 => ByChannel, I32 => ByChannel, U32 => ByChannel,
    I64 => RawOnly, U64 => RawOnly, F64 => RawOnly,
}

/// RAW frames sent, and only RAW frames decoded (see the module table).
pub struct RawOnly;

impl Compression for RawOnly {
    #[inline(always)]
    fn encode<W: Warp, T: Split>(w: W, _: u64, input: &[T::Bits], out: LaneOut<'_>) -> Result<usize, FrameError> {
        encode_raw_frame::<W, T>(w, input, out)
    }

    fn sends_raw(_: u64) -> bool {
        true
    }

    #[inline(always)]
    fn decode<W: Warp, T: Split>(w: W, frame: &[u8], out: LaneOut<'_>) -> Result<usize, FrameError> {
        decode_raw_frame::<W, T>(w, frame, out)
    }

    fn decode_block<W: Warp, T: Split>(
        _: W,
        _: Scratch,
        _: &[u8],
        _: LaneOut<'_>,
    ) -> Option<Result<usize, FrameError>> {
        None
    }
}
