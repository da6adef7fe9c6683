//! The frame header parser on any bytes: a typed result, never a panic; a header that parses
//! writes back to the same 32 bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use zipcoll_device::frame::{FrameHeader, HEADER_BYTES};

fuzz_target!(|data: &[u8]| {
    if let Ok(h) = FrameHeader::parse(data) {
        assert_eq!(&h.to_bytes()[..], &data[..HEADER_BYTES]);
    }
});
