//! Frames of Bf16 with any codec (the header names it) decoded on a simulated warp: a typed
//! error or whole elements, never a panic, never a write past the output.
#![no_main]

use libfuzzer_sys::fuzz_target;
use zipcoll_device::dtype::Bf16;

fuzz_target!(|data: &[u8]| zipcoll_fuzz::fuzz_decode::<Bf16>(data));
