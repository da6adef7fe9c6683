//! The frame header parser on any bytes: a typed result, never a panic; a header that parses
//! writes back to the same 32 bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| zipcoll_fuzz::targets::frame_header(data));
