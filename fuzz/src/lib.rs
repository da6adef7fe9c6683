//! zipcoll's fuzz targets ([`targets`]) and what they share: running a frame coder on one
//! simulated warp (every lane must return the same result), decoding a frame of any codec for a
//! dtype, and a round trip.

pub mod targets;

use std::cell::UnsafeCell;
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::time::Duration;
use zipcoll_device::codec::{
    decode_frame, encode_frame, encode_raw_frame, max_encoded_len, CodecId, ExpAns, ExpWindow, FixedLen, Huffman,
    LaneOut, SymbolCoder,
};
use zipcoll_device::dtype::{Bf16, Elem, Split, F16, F32, F8E4M3, F8E5M2};
use zipcoll_device::frame::{FrameError, FrameHeader, HEADER_BYTES};
use zipcoll_targets::sim::{launch, LaunchConfig, SimWarp};
use zipcoll_targets::{Lanes, Word};

/// Lanes of the simulated warp.
pub const W: u32 = 32;
/// Guard bytes after every output, which a coder must leave untouched.
const GUARD: usize = 64;
const GUARD_BYTE: u8 = 0x5A;

/// A byte buffer that the lanes of one simulated warp write through `LaneOut` copies.
struct Shared(UnsafeCell<Vec<u8>>);

// SAFETY: the simulator runs the lanes of a block on one OS thread; the lanes write only
// through `LaneOut` (whose writers' contracts the coders keep), and the buffer is read only
// after the job that writes it is done.
unsafe impl Sync for Shared {}
// SAFETY: as above; the bytes are plain data.
unsafe impl Send for Shared {}

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

/// A job for the simulated warp: run by every lane.
type Job = Arc<dyn Fn(SimWarp<W>) + Send + Sync>;

/// The channel to one long-lived simulated warp (a launch per input would cost a warp's
/// stacks per execution: about 850 executions a second instead of thousands).
struct Warp {
    jobs: Mutex<mpsc::Sender<(Job, mpsc::Sender<()>)>>,
}

fn warp() -> &'static Warp {
    static WARP: OnceLock<Warp> = OnceLock::new();
    WARP.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<(Job, mpsc::Sender<()>)>();
        let rx = Mutex::new(rx);
        std::thread::spawn(move || {
            let next: Mutex<Option<(Job, mpsc::Sender<()>)>> = Mutex::new(None);
            let cfg = LaunchConfig::new(1, W).with_timeout(Duration::from_secs(3600));
            let _ = launch::<W>(cfg, |w| loop {
                if w.lane_id() == 0 {
                    // the lanes are coroutines of this thread: blocking here blocks them all
                    let Ok(job) = rx.lock().unwrap().recv() else { return };
                    *next.lock().unwrap() = Some(job);
                }
                w.sync(SimWarp::<W>::FULL);
                let Some(job) = next.lock().unwrap().as_ref().map(|(job, _)| Arc::clone(job)) else {
                    return;
                };
                job(w);
                // every lane lets go of the job (and what it holds) before it is reported done
                drop(job);
                w.sync(SimWarp::<W>::FULL);
                if w.lane_id() == 0 {
                    if let Some((job, done)) = next.lock().unwrap().take() {
                        drop(job);
                        let _ = done.send(());
                    }
                }
                w.sync(SimWarp::<W>::FULL);
            });
        });
        Warp { jobs: Mutex::new(tx) }
    })
}

/// Runs `f` on every lane of the simulated warp; every lane must return the same.
pub fn on_warp<R: Clone + PartialEq + std::fmt::Debug + Send + 'static>(
    f: impl Fn(SimWarp<W>) -> R + Send + Sync + 'static,
) -> R {
    let results = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&results);
    let job: Job = Arc::new(move |w| {
        let r = f(w);
        sink.lock().unwrap().push(r);
    });
    let (done_tx, done) = mpsc::channel();
    warp()
        .jobs
        .lock()
        .unwrap()
        .send((job, done_tx))
        .expect("the simulated warp runs");
    done.recv()
        .expect("the simulated warp finished the job (a lane panicked?)");
    let results = std::mem::take(&mut *results.lock().unwrap());
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
    let out = Arc::new(Shared::new(capacity));
    let (frame, buf) = (frame.to_vec(), Arc::clone(&out));
    let r = on_warp(move |w| decode_frame::<_, T>(w, &frame, buf.out(capacity)));
    let bytes = Arc::into_inner(out).expect("the job is done").into_checked(capacity);
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
    let out = Arc::new(Shared::new(cap));
    let (data, buf) = (input.to_vec(), Arc::clone(&out));
    let r = on_warp(move |w| match raw {
        true => encode_raw_frame::<_, T>(w, &data, buf.out(cap)),
        false => encode_frame::<_, T, C>(w, &data, buf.out(cap)),
    });
    let bytes = Arc::into_inner(out).expect("the job is done").into_checked(cap);
    r.map(|n| bytes[..n].to_vec())
}

/// `input` as one frame of coder `C` (`raw`: a RAW frame).
pub fn encode<T: Split, C: SymbolCoder>(input: &[T::Bits], raw: bool) -> Vec<u8>
where
    T::Bits: Send + Sync,
{
    try_encode::<T, C>(input, raw).expect("the input fits one frame")
}

/// Encodes `input` with coder `C` (`raw`: RAW), decodes it, and checks the round trip and
/// that the second encoding is the same bytes.
fn roundtrip<T: Split, C: SymbolCoder>(input: &[T::Bits], raw: bool)
where
    T::Bits: Send + Sync,
{
    let encode = || try_encode::<T, C>(input, raw);
    let frame = match encode() {
        Ok(f) => f,
        // an input too large for one frame is the only refusal
        Err(FrameError::InputTooLarge { .. }) => return,
        Err(e) => panic!("encoding {} elements failed: {e}", input.len()),
    };
    let raw_bytes = input.len() * T::DTYPE.size_bytes();
    let decoded = decode::<T>(&frame, raw_bytes).expect("an encoded frame decodes");
    assert_eq!(decoded.len(), raw_bytes);
    assert_eq!(elems::<T>(&decoded), input, "the round trip changed the data");
    assert_eq!(encode().ok(), Some(frame), "encoding is not deterministic");
}

/// A round-trip target of coder `C` (`raw`: RAW frames): the first byte picks the dtype, the
/// rest is the data (at most 4096 elements).
pub fn fuzz_roundtrip<C: SymbolCoder>(data: &[u8], raw: bool) {
    let Some((dtype, rest)) = data.split_first() else {
        return;
    };
    let rest = &rest[..rest.len().min(4096 * 4)];
    match dtype % 5 {
        0 => roundtrip::<Bf16, C>(&elems::<Bf16>(rest), raw),
        1 => roundtrip::<F16, C>(&elems::<F16>(rest), raw),
        2 => roundtrip::<F32, C>(&elems::<F32>(rest), raw),
        3 => roundtrip::<F8E4M3, C>(&elems::<F8E4M3>(rest), raw),
        _ => roundtrip::<F8E5M2, C>(&elems::<F8E5M2>(rest), raw),
    }
}
