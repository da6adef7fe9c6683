//! Tests of the codec building blocks and the frame codec on the CPU simulator.
//!
//! | module    | checks                                                                          |
//! |-----------|---------------------------------------------------------------------------------|
//! | `common`  | `tests/common`, shared with the other test binaries: lane-shared buffers, one-warp launches, random source (no tests) |
//! | `util`    | `common`'s items and a reference bit packer (no tests)                          |
//! | `harness` | encode/decode on simulated warps; the round-trip checks (no tests)              |
//! | `data`    | exhaustive layouts, random and N(0,1) frames (no tests)                         |
//! | `bits`    | `zipcoll_device::bits` against one-thread references, 32 and 64 lanes           |
//! | `frames`  | round trips: exhaustive 16-bit splits, specials and lengths, proptest           |
//! | `corrupt` | damaged and crafted frames: `Err`, or `Ok` with the original data               |
//! | `canonical` | frames the encoders never write are `Corrupt`; frames that decode re-encode the same |
//! | `coder`   | symbol coders alone: bounds, exactly-once `put`, `OutOfSpace`                    |
//! | `ratio`   | compression on N(0,1) data (printed), the coders' choices                       |
//! | `uncoded` | the dtypes without coders (f64, i64, u64): RAW from every coder, coded frames `CodecNotBuilt` |
//!
//! Every frame test runs per coder from the lists at the end of this file: adding a coder to
//! all of them is one `split_codec_tests!` line.

mod bits;
mod canonical;
mod coder;
#[path = "../common/mod.rs"]
mod common;
mod corrupt;
mod data;
mod frames;
mod harness;
mod ratio;
mod uncoded;
mod util;

/// The frame tests of one encoder, in a module `$name`: round trips (exhaustive for bf16,
/// f16, e4m3, e5m2 and the pairs of i8 and u8; specials and every short length for every
/// dtype; proptest batches for every dtype) and corruption (bf16, e4m3, f32, i32, u8).
macro_rules! frame_tests {
    ($name:ident, $enc:ty) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            use crate::{corrupt, frames};
            use proptest::prelude::*;
            use zipcoll_device::dtype::{Bf16, F16, F32, F8E4M3, F8E5M2, I32, I8, U32, U8};

            #[test]
            fn exhaustive_bf16() {
                frames::exhaustive_16::<$enc, Bf16>();
            }
            #[test]
            fn exhaustive_f16() {
                frames::exhaustive_16::<$enc, F16>();
            }
            #[test]
            fn exhaustive_fp8() {
                frames::exhaustive_fp8::<$enc, F8E4M3>();
                frames::exhaustive_fp8::<$enc, F8E5M2>();
            }
            #[test]
            fn exhaustive_int8_pairs() {
                frames::exhaustive_16::<$enc, I8>();
                frames::exhaustive_16::<$enc, U8>();
            }
            #[test]
            fn specials_and_lengths() {
                frames::specials_and_lengths::<$enc, Bf16>();
                frames::specials_and_lengths::<$enc, F16>();
                frames::specials_and_lengths::<$enc, F32>();
                frames::specials_and_lengths::<$enc, F8E4M3>();
                frames::specials_and_lengths::<$enc, F8E5M2>();
                frames::specials_and_lengths::<$enc, I8>();
                frames::specials_and_lengths::<$enc, U8>();
                frames::specials_and_lengths::<$enc, I32>();
                frames::specials_and_lengths::<$enc, U32>();
            }
            proptest! {
                #![proptest_config(ProptestConfig::with_cases(12))]
                #[test]
                fn random_f32(batch in frames::batch_strategy()) {
                    frames::random_batch::<$enc, F32>(&batch);
                }
                #[test]
                fn random_bf16_f16_fp8(batch in frames::batch_strategy()) {
                    frames::random_batch::<$enc, Bf16>(&batch);
                    frames::random_batch::<$enc, F16>(&batch);
                    frames::random_batch::<$enc, F8E4M3>(&batch);
                    frames::random_batch::<$enc, F8E5M2>(&batch);
                }
                #[test]
                fn random_ints(batch in frames::batch_strategy()) {
                    frames::random_batch::<$enc, I8>(&batch);
                    frames::random_batch::<$enc, U8>(&batch);
                    frames::random_batch::<$enc, I32>(&batch);
                    frames::random_batch::<$enc, U32>(&batch);
                }
            }
            #[test]
            fn corrupt_header_bits() {
                corrupt::header_bits::<$enc, Bf16>();
                corrupt::header_bits::<$enc, F8E4M3>();
                corrupt::header_bits::<$enc, F32>();
                corrupt::header_bits::<$enc, I32>();
                corrupt::header_bits::<$enc, U8>();
            }
            #[test]
            fn corrupt_payload_bits() {
                corrupt::payload_bits::<$enc, Bf16>();
                corrupt::payload_bits::<$enc, F8E4M3>();
                corrupt::payload_bits::<$enc, F32>();
                corrupt::payload_bits::<$enc, I32>();
                corrupt::payload_bits::<$enc, U8>();
            }
            #[test]
            fn corrupt_truncated() {
                corrupt::truncated::<$enc, Bf16>();
                corrupt::truncated::<$enc, F8E4M3>();
                corrupt::truncated::<$enc, F32>();
                corrupt::truncated::<$enc, I32>();
                corrupt::truncated::<$enc, U8>();
            }
            #[test]
            fn corrupt_resealed() {
                corrupt::resealed::<$enc, Bf16>();
                corrupt::resealed::<$enc, F8E4M3>();
                corrupt::resealed::<$enc, F32>();
                corrupt::resealed::<$enc, I32>();
                corrupt::resealed::<$enc, U8>();
            }
            #[test]
            fn corrupt_crafted() {
                corrupt::crafted::<$enc, Bf16>();
                corrupt::crafted::<$enc, F8E4M3>();
                corrupt::crafted::<$enc, F32>();
                corrupt::crafted::<$enc, I32>();
                corrupt::crafted::<$enc, U8>();
            }
        }
    };
}

/// The frame tests of a `SymbolCoder` `$coder` (as `With<$coder>`) and its coder-alone tests,
/// in a module `$name`.
macro_rules! split_codec_tests {
    ($name:ident, $coder:ty) => {
        mod $name {
            use crate::harness::With;
            frame_tests!(frames, With<$coder>);
            #[test]
            fn coder_bound_and_roundtrip() {
                crate::coder::bound_and_roundtrip::<$coder>();
            }
        }
    };
}

frame_tests!(raw, crate::harness::RawFrames);
split_codec_tests!(fixed_len, zipcoll_device::codec::FixedLen);
split_codec_tests!(exp_window, zipcoll_device::codec::ExpWindow);
split_codec_tests!(exp_ans, zipcoll_device::codec::ExpAns);
split_codec_tests!(huffman, zipcoll_device::codec::Huffman);
