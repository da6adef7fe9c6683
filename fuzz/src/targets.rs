//! The fuzz targets' bodies, one function each, and their table. cargo-fuzz's binaries
//! (`fuzz/fuzz_targets/<name>.rs`) call them, and so does the smoke test that the test command
//! runs (`tests/smoke.rs`), so both fuzz the same code. Each function takes any bytes; a
//! panic is a finding.

use crate::{fuzz_decode, fuzz_decode_block, fuzz_roundtrip, fuzz_roundtrip_block};
use zipcoll_device::codec::{ExpAns, ExpWindow, FixedLen, Huffman};
use zipcoll_device::dtype::{Bf16, F16, F32, F8E4M3, F8E5M2, I32, I8, U32, U8};
use zipcoll_device::frame::{FrameHeader, HEADER_BYTES};

/// A fuzz target: any bytes in, a panic on a finding.
pub type Target = fn(&[u8]);

/// Every target by name: the names of `fuzz/fuzz_targets/*.rs` and `fuzz/corpus/*`.
pub const TARGETS: [(&str, Target); 19] = [
    ("frame_header", frame_header),
    ("decode_bf16", decode_bf16),
    ("decode_f16", decode_f16),
    ("decode_f32", decode_f32),
    ("decode_f8e4m3", decode_f8e4m3),
    ("decode_f8e5m2", decode_f8e5m2),
    ("decode_i8", decode_i8),
    ("decode_u8", decode_u8),
    ("decode_i32", decode_i32),
    ("decode_u32", decode_u32),
    ("roundtrip_raw", roundtrip_raw),
    ("roundtrip_fixed_len", roundtrip_fixed_len),
    ("roundtrip_exp_window", roundtrip_exp_window),
    ("roundtrip_exp_ans", roundtrip_exp_ans),
    ("roundtrip_huffman", roundtrip_huffman),
    ("decode_block", decode_block),
    ("roundtrip_block", roundtrip_block),
    ("bootstrap_message", bootstrap_message),
    ("net_wire", net_wire),
];

/// The frame header parser: a typed result, and a header that parses writes back its bytes.
pub fn frame_header(data: &[u8]) {
    if let Ok(h) = FrameHeader::parse(data) {
        assert_eq!(&h.to_bytes()[..], &data[..HEADER_BYTES]);
    }
}

/// One decode target per coded dtype: frames of that dtype with any codec, see [`fuzz_decode`].
macro_rules! decode_targets {
    ($($name:ident: $t:ty),* $(,)?) => {$(
        #[doc = concat!("Frames of `", stringify!($t), "` with any codec: see [`fuzz_decode`].")]
        pub fn $name(data: &[u8]) {
            fuzz_decode::<$t>(data)
        }
    )*};
}
decode_targets!(
    decode_bf16: Bf16,
    decode_f16: F16,
    decode_f32: F32,
    decode_f8e4m3: F8E4M3,
    decode_f8e5m2: F8E5M2,
    decode_i8: I8,
    decode_u8: U8,
    decode_i32: I32,
    decode_u32: U32,
);

/// RAW frames of any data and dtype: see [`fuzz_roundtrip`].
pub fn roundtrip_raw(data: &[u8]) {
    fuzz_roundtrip::<FixedLen>(data, true)
}

/// FixedLen frames of any data and dtype: see [`fuzz_roundtrip`].
pub fn roundtrip_fixed_len(data: &[u8]) {
    fuzz_roundtrip::<FixedLen>(data, false)
}

/// ExpWindow frames of any data and dtype: see [`fuzz_roundtrip`].
pub fn roundtrip_exp_window(data: &[u8]) {
    fuzz_roundtrip::<ExpWindow>(data, false)
}

/// ExpAns frames of any data and dtype: see [`fuzz_roundtrip`].
pub fn roundtrip_exp_ans(data: &[u8]) {
    fuzz_roundtrip::<ExpAns>(data, false)
}

/// Huffman frames of any data and dtype: see [`fuzz_roundtrip`].
pub fn roundtrip_huffman(data: &[u8]) {
    fuzz_roundtrip::<Huffman>(data, false)
}

/// Block frames (format version 2, `FrameUnit::Block`: RAW or ExpAns) of any dtype, decoded
/// by a simulated block: see [`fuzz_decode_block`].
pub fn decode_block(data: &[u8]) {
    fuzz_decode_block(data)
}

/// Block frames (ExpAns or RAW) of any data and dtype: see [`fuzz_roundtrip_block`].
pub fn roundtrip_block(data: &[u8]) {
    fuzz_roundtrip_block(data)
}

/// The bootstrap's messages (the first byte picks HELLO, TABLE, FAIL, BLOB or an unknown tag):
/// a typed result, never a panic.
pub fn bootstrap_message(data: &[u8]) {
    if let Some((tag, payload)) = data.split_first() {
        zipcoll_host::comm::bootstrap::fuzzing::parse_message(u32::from(tag % 5), payload);
    }
}

/// NET's wire records (handshake, message header, a slot's frame length) and a DATA piece's
/// place in the cut of its frame: a typed result, never a panic; what parses encodes back to
/// its bytes, and an accepted piece is exactly its piece of the frame.
pub fn net_wire(data: &[u8]) {
    zipcoll_host::transport::net::fuzzing::parse(data);
}
