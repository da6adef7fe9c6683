//! The kernels. Each is a generic function (called directly by tests on the simulator) whose
//! `#[kernel]` attribute emits the GPU entry points and a marker type for the manifest.

pub mod block_codec;
pub mod codec;
mod collective;
pub mod lossy;
mod record_cause;
mod reduce_copy;
mod warp_all_reduce;

pub use block_codec::{
    decode_block_frames, encode_block_frames, encode_block_raw_frames, DecodeBlockFrames, EncodeBlockFrames,
    EncodeBlockRawFrames,
};
pub use codec::{decode_frames, encode_frames, encode_raw_frames, DecodeFrames, EncodeFrames, EncodeRawFrames};
pub use collective::{
    collective, collective_block, collective_block_coded, Collective, CollectiveBlock, CollectiveBlockCoded,
};
pub use lossy::{dequantize, lossy_stats, quantize, Dequantize, LossyStats, Quantize};
pub use record_cause::{record_cause, RecordCause};
pub use reduce_copy::{reduce_copy, ReduceCopy};
pub use warp_all_reduce::{warp_all_reduce, WarpAllReduce};
