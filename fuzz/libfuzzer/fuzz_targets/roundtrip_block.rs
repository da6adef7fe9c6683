//! Block frames (ExpAns, or RAW: bit 7 of the first byte) of any data and dtype decode to the
//! data, bit for bit, and encode the same bytes twice.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| zipcoll_fuzz::targets::roundtrip_block(data));
