//! The bootstrap's messages (HELLO, TABLE, FAIL, BLOB: the first byte picks the tag) parsed
//! from any payload: a typed result, never a panic; what parses encodes back to its bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use zipcoll_host::comm::bootstrap::fuzzing::parse_message;

fuzz_target!(|data: &[u8]| {
    if let Some((tag, payload)) = data.split_first() {
        parse_message(u32::from(tag % 5), payload);
    }
});
