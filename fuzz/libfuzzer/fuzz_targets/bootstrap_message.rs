//! The bootstrap's messages (HELLO, TABLE, FAIL, BLOB: the first byte picks the tag) parsed
//! from any payload: a typed result, never a panic; what parses encodes back to its bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| zipcoll_fuzz::targets::bootstrap_message(data));
