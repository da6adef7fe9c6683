//! zipcoll's fuzz targets ([`targets`]) and what they share: running a frame coder on one
//! simulated warp (every lane must return the same result) or a block frame coder on one
//! simulated block, decoding a frame of any codec for a dtype, and a round trip.

pub mod targets;

use std::cell::UnsafeCell;
use std::sync::Mutex;
use zipcoll_device::block::Scratch;
use zipcoll_device::codec::block_frame::{
    decode_block_frame, decode_scratch_bytes, encode_block_frame, encode_block_raw_frame, encode_scratch_bytes,
};
use zipcoll_device::codec::{
    decode_frame, encode_frame, encode_raw_frame, max_encoded_len, CodecId, ExpAns, ExpWindow, FixedLen, Huffman,
    LaneOut, SymbolCoder,
};
use zipcoll_device::dtype::{Bf16, DType, Elem, Split, F16, F32, F8E4M3, F8E5M2, I32, I8, U32, U8};
use zipcoll_device::frame::{FrameError, FrameHeader, BLOCK_FRAME_VERSION, HEADER_BYTES};
use zipcoll_targets::sim::{launch, LaunchConfig, SimWarp};
use zipcoll_targets::{SharedMem, Word};

/// Lanes of the simulated warp.
pub const W: u32 = 32;

/// How many dtypes are coded (`DType::CODED`, whose order a target's dtype byte picks them in:
/// [`by_dtype`]).
pub const CODED_DTYPES: u8 = DType::CODED.len() as u8;

/// Evaluates `$body` with `$T` the coded dtype that byte `$pick` picks: `DType::CODED[$pick %
/// CODED_DTYPES]` (bf16, f16, f32, f8e4m3, f8e5m2, i8, u8, i32, u32).
macro_rules! by_dtype {
    ($pick:expr, |$T:ident| $body:expr) => {
        match $pick % CODED_DTYPES {
            0 => by_dtype!(@one Bf16, $T, $body),
            1 => by_dtype!(@one F16, $T, $body),
            2 => by_dtype!(@one F32, $T, $body),
            3 => by_dtype!(@one F8E4M3, $T, $body),
            4 => by_dtype!(@one F8E5M2, $T, $body),
            5 => by_dtype!(@one I8, $T, $body),
            6 => by_dtype!(@one U8, $T, $body),
            7 => by_dtype!(@one I32, $T, $body),
            _ => by_dtype!(@one U32, $T, $body),
        }
    };
    (@one $t:ty, $T:ident, $body:expr) => {{
        type $T = $t;
        $body
    }};
}
/// Threads of the simulated block that codes block frames: two warps. The codec kernels use
/// 128 (`primitives/src/kernels/block_codec.rs`); a block frame's bytes do not depend on the
/// block size, and two warps take every block-wide step (barriers, the block's checksum sum)
/// at half the simulation cost of four.
pub const BLOCK_THREADS: u32 = 64;
/// Guard bytes after every output, which a coder must leave untouched.
const GUARD: usize = 64;
const GUARD_BYTE: u8 = 0x5A;

/// A byte buffer that the lanes of one simulated warp write through `LaneOut` copies.
struct Shared(UnsafeCell<Vec<u8>>);

// SAFETY: the simulator runs the lanes of a block on one OS thread; the lanes write only
// through `LaneOut` (whose writers' contracts the coders keep), and the buffer is read only
// after the job that writes it is done.
unsafe impl Sync for Shared {}

impl Shared {
    fn new(len: usize) -> Shared {
        Shared(UnsafeCell::new(vec![GUARD_BYTE; len + GUARD]))
    }

    /// The first `len` bytes (the rest is the guard band).
    fn out(&self, len: usize) -> LaneOut<'_> {
        // SAFETY: the vector lives as long as `self` and is not resized; the lanes of one warp
        // use the copies as one warp's output (the coders' contract), nothing else touches it
        // until `launch` returns.
        unsafe {
            let v = &mut *self.0.get();
            LaneOut::from_raw(v.as_mut_ptr(), len.min(v.len()))
        }
    }

    /// The bytes, checking that the guard band after `len` is untouched.
    fn into_checked(self, len: usize) -> Vec<u8> {
        let mut v = self.0.into_inner();
        assert!(
            v[len..].iter().all(|b| *b == GUARD_BYTE),
            "a coder wrote past its output"
        );
        v.truncate(len);
        v
    }
}

/// Runs `f` on every lane of one simulated warp; every lane must return the same. A launch of
/// one warp runs on the calling thread with pooled stacks (`zipcoll_targets::sim`), so a launch
/// per call costs a few microseconds: no thread or channel between the fuzzer and the warp.
pub fn on_warp<R: Clone + PartialEq + std::fmt::Debug + Send>(f: impl Fn(SimWarp<W>) -> R + Sync) -> R {
    let results: Mutex<Vec<R>> = Mutex::new(Vec::with_capacity(W as usize));
    launch::<W>(LaunchConfig::new(1, W), |w| {
        let r = f(w);
        results.lock().unwrap().push(r);
    })
    .expect("the simulated warp ran (no deadlock)");
    let results = results.into_inner().unwrap();
    assert_eq!(results.len(), W as usize);
    assert!(results.iter().all(|r| *r == results[0]), "lanes disagree: {results:?}");
    results[0].clone()
}

/// The elements of `T` in `bytes` (little-endian, the tail ignored).
pub fn elems<T: Elem>(bytes: &[u8]) -> Vec<T::Bits> {
    let size = T::DTYPE.size_bytes();
    bytes
        .chunks_exact(size)
        .map(|c| {
            let v = c.iter().rev().fold(0u64, |acc, b| acc << 8 | u64::from(*b));
            T::Bits::from_bits64(v)
        })
        .collect()
}

/// Decodes `frame` as a frame of `T` (any codec) into an output of `capacity` bytes; the
/// decoded bytes, or the typed error. Never panics on any input (the fuzz property), and
/// writes nothing past the output.
pub fn decode<T: Split>(frame: &[u8], capacity: usize) -> Result<Vec<u8>, FrameError> {
    let out = Shared::new(capacity);
    let r = on_warp(|w| decode_frame::<_, T>(w, frame, out.out(capacity)));
    let bytes = out.into_checked(capacity);
    r.map(|n| bytes[..n * T::DTYPE.size_bytes()].to_vec())
}

/// A decode target for `T`: the first two bytes pick the output's capacity, the rest is the
/// frame. A frame that decodes must decode to whole elements within the capacity, and be the
/// frame its encoder writes for those elements (decoding is canonical).
pub fn fuzz_decode<T: Split>(data: &[u8])
where
    T::Bits: Send + Sync,
{
    let Some((cap, frame)) = data.split_first_chunk::<2>() else {
        return;
    };
    let capacity = usize::from(u16::from_le_bytes(*cap)) % 8192;
    let Ok(bytes) = decode::<T>(frame, capacity) else {
        return;
    };
    assert!(bytes.len() <= capacity);
    let h = FrameHeader::parse(frame).expect("a frame that decodes has a valid header");
    let input = elems::<T>(&bytes);
    let again = match h.codec_id() {
        Some(CodecId::Raw) => try_encode::<T, FixedLen>(&input, true),
        Some(CodecId::FixedLen) => try_encode::<T, FixedLen>(&input, false),
        Some(CodecId::ExpWindow) => try_encode::<T, ExpWindow>(&input, false),
        Some(CodecId::ExpAns) => try_encode::<T, ExpAns>(&input, false),
        Some(CodecId::Huffman) => try_encode::<T, Huffman>(&input, false),
        None => unreachable!("the header parsed"),
    };
    let end = HEADER_BYTES + h.payload_bytes as usize;
    assert!(
        again.as_deref() == Ok(&frame[..end]),
        "a frame that decodes is not the encoder's frame of its data"
    );
}

/// `input` as one frame of coder `C` (`raw`: a RAW frame), or the encoder's error.
pub fn try_encode<T: Split, C: SymbolCoder>(input: &[T::Bits], raw: bool) -> Result<Vec<u8>, FrameError>
where
    T::Bits: Send + Sync,
{
    let cap = max_encoded_len::<T>(input.len());
    let out = Shared::new(cap);
    let r = on_warp(|w| match raw {
        true => encode_raw_frame::<_, T>(w, input, out.out(cap)),
        false => encode_frame::<_, T, C>(w, input, out.out(cap)),
    });
    let bytes = out.into_checked(cap);
    r.map(|n| bytes[..n].to_vec())
}

/// `input` as one frame of coder `C` (`raw`: a RAW frame).
pub fn encode<T: Split, C: SymbolCoder>(input: &[T::Bits], raw: bool) -> Vec<u8>
where
    T::Bits: Send + Sync,
{
    try_encode::<T, C>(input, raw).expect("the input fits one frame")
}

/// Encodes `input` with `encode` (a frame of `what`), decodes it with `decode`, and checks the
/// round trip and that the second encoding is the same bytes. An input too large for one frame
/// is the only refusal allowed.
fn roundtrip_with<T: Split>(
    what: &str,
    input: &[T::Bits],
    encode: impl Fn() -> Result<Vec<u8>, FrameError>,
    decode: impl Fn(&[u8], usize) -> Result<Vec<u8>, FrameError>,
) {
    let frame = match encode() {
        Ok(f) => f,
        Err(FrameError::InputTooLarge { .. }) => return,
        Err(e) => panic!("encoding {} elements as a {what} failed: {e}", input.len()),
    };
    let raw_bytes = input.len() * T::DTYPE.size_bytes();
    let decoded = decode(&frame, raw_bytes).unwrap_or_else(|e| panic!("an encoded {what} does not decode: {e}"));
    assert_eq!(decoded.len(), raw_bytes);
    assert_eq!(elems::<T>(&decoded), input, "the {what} round trip changed the data");
    assert_eq!(encode().ok(), Some(frame), "{what} encoding is not deterministic");
}

/// [`roundtrip_with`] a frame of coder `C` (`raw`: RAW).
fn roundtrip<T: Split, C: SymbolCoder>(input: &[T::Bits], raw: bool)
where
    T::Bits: Send + Sync,
{
    roundtrip_with::<T>("frame", input, || try_encode::<T, C>(input, raw), decode::<T>);
}

/// A round-trip target of coder `C` (`raw`: RAW frames): the first byte picks the dtype
/// ([`by_dtype`]), the rest is the data (at most 4096 elements).
pub fn fuzz_roundtrip<C: SymbolCoder>(data: &[u8], raw: bool) {
    let Some((dtype, rest)) = data.split_first() else {
        return;
    };
    let rest = &rest[..rest.len().min(4096 * 4)];
    by_dtype!(dtype, |T| roundtrip::<T, C>(&elems::<T>(rest), raw))
}

/// Runs `f` on every thread of one simulated block of [`BLOCK_THREADS`] threads with `shared`
/// bytes of shared memory (its scratch); every thread must return the same.
pub fn on_block<R: Clone + PartialEq + std::fmt::Debug + Send>(
    shared: usize,
    f: impl Fn(SimWarp<W>, Scratch) -> R + Sync,
) -> R {
    let results: Mutex<Vec<R>> = Mutex::new(Vec::with_capacity(BLOCK_THREADS as usize));
    let cfg = LaunchConfig::new(1, BLOCK_THREADS).with_shared_bytes(shared as u32);
    launch::<W>(cfg, |w| {
        let (base, len) = w.shared_mem();
        // SAFETY: the simulator's shared memory of this block, alive for the launch and used
        // by the block's threads only through the coder they all call.
        let scratch = unsafe { Scratch::new(base, len as usize) };
        let r = f(w, scratch);
        results.lock().unwrap().push(r);
    })
    .expect("the simulated block ran (no deadlock)");
    let results = results.into_inner().unwrap();
    assert_eq!(results.len(), BLOCK_THREADS as usize);
    assert!(
        results.iter().all(|r| *r == results[0]),
        "threads disagree: {results:?}"
    );
    results[0].clone()
}

/// Decodes `frame` as a block frame (format version 2) of `T` into an output of `capacity`
/// bytes; the decoded bytes, or the typed error. Never panics on any input, and writes nothing
/// past the output.
pub fn decode_block<T: Split>(frame: &[u8], capacity: usize) -> Result<Vec<u8>, FrameError> {
    let out = Shared::new(capacity);
    let r = on_block(decode_scratch_bytes(BLOCK_THREADS), |w, scratch| {
        decode_block_frame::<_, T>(w, scratch, frame, out.out(capacity))
    });
    let bytes = out.into_checked(capacity);
    r.map(|n| bytes[..n * T::DTYPE.size_bytes()].to_vec())
}

/// `input` as one block frame (ExpAns, or RAW when `raw`), or the encoder's error.
pub fn try_encode_block<T: Split>(input: &[T::Bits], raw: bool) -> Result<Vec<u8>, FrameError>
where
    T::Bits: Send + Sync,
{
    let cap = max_encoded_len::<T>(input.len());
    let out = Shared::new(cap);
    let r = on_block(encode_scratch_bytes::<ExpAns>(BLOCK_THREADS), |w, scratch| match raw {
        true => encode_block_raw_frame::<_, T>(w, scratch, input, out.out(cap)),
        false => encode_block_frame::<_, T, ExpAns>(w, scratch, input, out.out(cap)),
    });
    let bytes = out.into_checked(cap);
    r.map(|n| bytes[..n].to_vec())
}

/// A block frame of `T` in an output of `capacity` bytes: a frame that decodes must decode to
/// whole elements within the capacity, and be the frame the block encoder writes for those
/// elements (decoding is canonical).
fn decode_block_as<T: Split>(frame: &[u8], capacity: usize)
where
    T::Bits: Send + Sync,
{
    let Ok(bytes) = decode_block::<T>(frame, capacity) else {
        return;
    };
    assert!(bytes.len() <= capacity);
    let h = FrameHeader::parse_version(frame, BLOCK_FRAME_VERSION).expect("a frame that decodes has a valid header");
    let again = try_encode_block::<T>(&elems::<T>(&bytes), h.codec_id() == Some(CodecId::Raw));
    let end = HEADER_BYTES + h.payload_bytes as usize;
    assert!(
        again.as_deref() == Ok(&frame[..end]),
        "a block frame that decodes is not the block encoder's frame of its data"
    );
}

/// The block-frame decode target: the first byte picks the dtype, the next two the output's
/// capacity, the rest is the frame (see [`decode_block_as`]).
pub fn fuzz_decode_block(data: &[u8]) {
    let Some((&[dtype, c0, c1], frame)) = data.split_first_chunk::<3>() else {
        return;
    };
    let capacity = usize::from(u16::from_le_bytes([c0, c1])) % 8192;
    by_dtype!(dtype, |T| decode_block_as::<T>(frame, capacity))
}

/// [`roundtrip_with`] a block frame (ExpAns; `raw`: RAW).
fn roundtrip_block_as<T: Split>(input: &[T::Bits], raw: bool)
where
    T::Bits: Send + Sync,
{
    roundtrip_with::<T>(
        "block frame",
        input,
        || try_encode_block::<T>(input, raw),
        decode_block::<T>,
    );
}

/// The block-frame round-trip target: the first byte picks the dtype (and, its bit 7, RAW
/// frames), the rest is the data (at most 4096 elements).
pub fn fuzz_roundtrip_block(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let rest = &rest[..rest.len().min(4096 * 4)];
    let raw = pick & 0x80 != 0;
    by_dtype!(pick & 0x7F, |T| roundtrip_block_as::<T>(&elems::<T>(rest), raw))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`by_dtype`] picks in `DType::CODED`'s order.
    #[test]
    fn the_dtype_byte_picks_in_coded_order() {
        for pick in 0..2 * CODED_DTYPES {
            assert_eq!(
                by_dtype!(pick, |T| T::DTYPE),
                DType::CODED[usize::from(pick % CODED_DTYPES)]
            );
        }
    }
}
