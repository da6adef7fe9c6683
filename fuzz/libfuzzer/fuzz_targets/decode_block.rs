//! Block frames (version 2: RAW or ExpAns) of any dtype (the first byte) decoded on a simulated
//! block of two warps: a typed error or whole elements, never a panic, never a write past the
//! output; the encoder's frame of what decodes decodes to it too.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| zipcoll_fuzz::targets::decode_block(data));
