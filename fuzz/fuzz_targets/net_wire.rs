//! NET's wire records (handshake, message header, a slot's frame length) parsed from any
//! bytes: a typed result, never a panic; what parses encodes back to its bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use zipcoll_host::transport::net::fuzzing::parse;

fuzz_target!(|data: &[u8]| {
    parse(data);
});
