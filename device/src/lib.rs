//! no_std building blocks of zipcoll's device code, generic over the warp abstraction
//! ([`zipcoll_targets::Warp`]) so the same source runs on GPUs and on the CPU simulator.
//!
//! | module     | what it holds                                                 |
//! |------------|---------------------------------------------------------------|
//! | [`arbitrate`] | per-batch choice of RAW or a codec: sample, predicted sizes, cost model |
//! | [`block`]  | block-cooperative scans and reductions, shared-memory scratch |
//! | [`bits`]   | warp-cooperative scans, compaction, bit packing, checksums    |
//! | [`codec`]  | lossless codecs: the symbol coders and the frame codec        |
//! | [`divisor`] | division by a kernel's fixed divisor as a multiply-high |
//! | [`device_fns`] | the device-function library's bodies (block codecs, frame info, prediction for CUDA C++ callers) |
//! | [`dtype`]  | element types, exponent split/join, f32 conversions          |
//! | [`frame`]  | the frame header, its validation, the frame checksum          |
//! | [`lossy`]  | interface quantizers (error-bounded, QSGD) into 8-bit symbols  |
//! | [`reduce`] | reduction operators with NCCL's semantics                     |
//! | [`team`]   | the threads driving a channel: a warp or a block ([`team::Team`]) |
//! | [`warp_reduce`] | warp-level reductions of registers                       |
#![no_std]

pub mod arbitrate;
pub mod bits;
pub mod block;
pub mod codec;
pub mod device_fns;
pub mod divisor;
pub mod dtype;
pub mod frame;
pub mod lossy;
pub mod reduce;
pub mod team;
pub mod warp_reduce;
