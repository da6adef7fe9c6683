//! NET's wire records (handshake, message header, a slot's frame length) parsed from any
//! bytes: a typed result, never a panic; what parses encodes back to its bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| zipcoll_fuzz::targets::net_wire(data));
