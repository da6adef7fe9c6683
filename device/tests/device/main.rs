//! Tests of the device crate's dtypes, reductions and warp reductions against independent
//! references (first-principles f64 values, the `half` crate, and the CPU simulator).
//!
//! | module          | checks                                                            |
//! |-----------------|-------------------------------------------------------------------|
//! | `common`        | `tests/common`, shared with the other test binaries: the random source (no tests) |
//! | `reference`     | the independent references themselves (no tests)                  |
//! | `dtype`         | to_f32 / from_f32 / split / join, exhaustive and property-based   |
//! | `reduce`        | every op on every float type reduced through f32 against a scalar reference |
//! | `wide_and_int`  | f64 and the integer types: ops against native Rust arithmetic, splits, the DType helpers |
//! | `warp_reduce`   | the butterfly on `SimWarp<32>` / `SimWarp<64>` against its reference |

#[path = "../common/mod.rs"]
mod common;
mod dtype;
mod reduce;
mod reference;
mod warp_reduce;
mod wide_and_int;
