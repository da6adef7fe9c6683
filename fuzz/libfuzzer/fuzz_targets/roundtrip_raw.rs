//! RAW frames of any data and dtype (the first byte) decode to the data, bit for bit, and encode
//! the same bytes twice.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| zipcoll_fuzz::targets::roundtrip_raw(data));
