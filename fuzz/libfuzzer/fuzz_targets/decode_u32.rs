//! Frames of U32 with any codec (the header names it) decoded on a simulated warp: a typed
//! error or whole elements, never a panic, never a write past the output.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| zipcoll_fuzz::targets::decode_u32(data));
