//! The RAW fast path (`prims::raw`) against the general path's definitions: for every dtype,
//! a few operators, every flag combination of the primitives, warps of 32 and 64 lanes and
//! lengths around the vector and unroll boundaries, `src` and `dst` aligned for vectors or not,
//! the values written equal the scalar
//! `combine(received, pre(src))`, the frame sent is byte-identical to `encode_raw_frame`'s, and
//! the received payload's checksum is `frame::checksum`'s. Which frames the fast path accepts
//! (`raw_frame_checksum`) is checked too; end-to-end runs are in the collective sweeps.

mod common;
mod sim_net;

use common::{input, Gen};
use zipcoll_device::codec::{encode_frame, encode_raw_frame, max_encoded_len, ExpAns, LaneOut};
use zipcoll_device::dtype::{Bf16, Elem, F16, F32, F64, F8E4M3, F8E5M2, I64, I8, U32};
use zipcoll_device::frame::{checksum, HEADER_BYTES};
use zipcoll_device::reduce::{Avg, Max, Min, Prod, RedOp, Sum};
use zipcoll_primitives::prims::raw::{combine_send, raw_frame_checksum, recv_checksum, RawStep};
use zipcoll_targets::sim::{launch, LaunchConfig, SimWarp};

/// Lengths around the vector (16 bytes), unroll (`UNROLL` vectors per lane) and warp boundaries.
const LENGTHS: [usize; 14] = [0, 1, 2, 3, 5, 8, 15, 17, 63, 64, 65, 500, 2048 + 7, 8192 + 33];

/// A 16-byte aligned zeroed buffer of at least `bytes` bytes.
fn aligned(bytes: usize) -> Vec<u128> {
    vec![0u128; bytes.div_ceil(16).max(1)]
}

fn bytes_of<B>(v: &[B]) -> &[u8] {
    // SAFETY: plain integer words, all initialized.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast(), std::mem::size_of_val(v)) }
}

/// Runs `f` on one simulated warp of `W` lanes.
fn on_warp<const W: u32>(f: impl Fn(SimWarp<W>) + Sync) {
    launch::<W>(LaunchConfig::new(1, W), f).unwrap();
}

/// The RAW frame of `values` as `encode_raw_frame` writes it.
fn raw_frame<T: Gen>(values: &[T::Bits]) -> Vec<u8>
where
    T::Bits: Sync,
{
    let len = max_encoded_len::<T>(values.len());
    let mut buf = vec![0u8; len];
    let out = Shared(buf.as_mut_ptr());
    on_warp::<32>(|w| {
        // SAFETY: `buf` holds `len` bytes; every lane writes through its own `LaneOut` copy.
        let lane_out = unsafe { LaneOut::from_raw(out.get(), len) };
        assert_eq!(encode_raw_frame::<_, T>(w, values, lane_out), Ok(len));
    });
    buf
}

/// A pointer the simulated lanes share.
#[derive(Clone, Copy)]
struct Shared<P>(P);

impl<T: Elem> Shared<RawStep<T>> {
    /// The step (a method, so closures capture the `Sync` wrapper).
    fn as_ref(&self) -> &RawStep<T> {
        &self.0
    }
}
// SAFETY: the lanes write disjoint parts (the code under test's contract).
unsafe impl<P> Sync for Shared<P> {}
// SAFETY: as above.
unsafe impl<P> Send for Shared<P> {}

impl<P: Copy> Shared<P> {
    /// The pointer (a method, so closures capture the `Sync` wrapper, not its field).
    fn get(&self) -> P {
        self.0
    }
}

/// One flag combination of one dtype and operator over `n` elements, on warps of `W` lanes.
fn check<
    const W: u32,
    T: Gen,
    O: RedOp + Sync,
    const RECV: bool,
    const REDUCE: bool,
    const SEND: bool,
    const COPY: bool,
>(
    n: usize,
    (src_at, dst_at): (usize, usize),
) where
    T::Bits: Sync,
{
    let op = O::new::<T>(3);
    let size = T::DTYPE.size_bytes();
    let received: Vec<T::Bits> = input::<T>(1, n, n as u64);
    let mine: Vec<T::Bits> = input::<T>(2, n, 7);
    let want: Vec<T::Bits> = (0..n)
        .map(|i| {
            if REDUCE {
                op.combine::<T>(received[i], op.pre::<T>(mine[i]))
            } else if RECV {
                received[i]
            } else {
                op.pre::<T>(mine[i])
            }
        })
        .collect();
    // the received frame in an aligned slot, the local input and the output `src_at` and
    // `dst_at` elements into aligned buffers
    let frame = raw_frame::<T>(&received);
    let mut slot_in = aligned(frame.len());
    // SAFETY: `slot_in` holds at least `frame.len()` bytes.
    unsafe { std::ptr::copy_nonoverlapping(frame.as_ptr(), slot_in.as_mut_ptr().cast::<u8>(), frame.len()) };
    let mut src = aligned((src_at + n) * size);
    let src_ptr = src.as_mut_ptr().cast::<T::Bits>().wrapping_add(src_at);
    // SAFETY: `src` holds at least `src_at + n` elements.
    unsafe { std::ptr::copy_nonoverlapping(mine.as_ptr(), src_ptr, n) };
    let mut dst = aligned((dst_at + n) * size);
    let dst_ptr = dst.as_mut_ptr().cast::<T::Bits>().wrapping_add(dst_at);
    let mut slot_out = aligned(max_encoded_len::<T>(n));
    let payload = slot_in
        .as_ptr()
        .cast::<u8>()
        .wrapping_add(HEADER_BYTES)
        .cast::<T::Bits>();
    let step = Shared(RawStep::<T> {
        recv: if RECV { payload } else { std::ptr::null() },
        src: if REDUCE || !RECV { src_ptr } else { std::ptr::null() },
        dst: if COPY { dst_ptr } else { std::ptr::null_mut() },
        send: if SEND {
            slot_out.as_mut_ptr().cast()
        } else {
            std::ptr::null_mut()
        },
        n,
        verify: true,
    });
    let payload = Shared(payload);
    on_warp::<W>(|w| {
        // SAFETY: every buffer holds `n` elements (the slots a whole frame, aligned).
        unsafe {
            let step = step.as_ref();
            let sum = recv_checksum::<_, T>(w, payload.get(), n);
            assert_eq!(sum, checksum(&frame[HEADER_BYTES..]), "recv checksum, n {n}");
            let sums = combine_send::<_, T, O, RECV, REDUCE, SEND, COPY>(w, op, step);
            assert_eq!(sums.frame_bytes, HEADER_BYTES + n * size);
            if RECV {
                assert_eq!(sums.received, Some(sum), "the main pass's received checksum, n {n}");
            }
        }
    });
    let what = format!(
        "{:?} {:?} flags {RECV} {REDUCE} {SEND} {COPY}, {W} lanes, n {n}, src at {src_at}, dst at {dst_at}",
        T::DTYPE,
        O::OP
    );
    let (dst_bytes, at) = (bytes_of(&dst), dst_at * size..(dst_at + n) * size);
    let mut outside = dst_bytes[..at.start].iter().chain(&dst_bytes[at.end..]);
    assert!(outside.all(|&b| b == 0), "written outside dst: {what}");
    if COPY {
        // SAFETY: `dst` holds `dst_at + n` elements.
        let got = unsafe { std::slice::from_raw_parts(dst_ptr, n) };
        assert_eq!(got, &want[..], "dst: {what}");
    }
    if SEND {
        let sent = &bytes_of(&slot_out)[..HEADER_BYTES + n * size];
        assert_eq!(sent, &raw_frame::<T>(&want)[..], "frame: {what}");
    }
}

fn every_flag<const W: u32, T: Gen, O: RedOp + Sync>()
where
    T::Bits: Sync,
{
    // aligned for vectors, then `src` and `dst` off by different numbers of elements (words, at
    // odd bytes for 8-bit dtypes) and one of them aligned
    let size = T::DTYPE.size_bytes();
    let shifts = [(0, 0), (1, 3), (4 / size, 0), (0, 16 / size - 1), (8 / size, 2)];
    for n in LENGTHS {
        for at in shifts {
            check::<W, T, O, false, false, true, false>(n, at);
            check::<W, T, O, false, false, true, true>(n, at);
            check::<W, T, O, false, false, false, true>(n, at);
            check::<W, T, O, true, false, false, true>(n, at);
            check::<W, T, O, true, false, true, true>(n, at);
            check::<W, T, O, true, true, true, false>(n, at);
            check::<W, T, O, true, true, false, true>(n, at);
            check::<W, T, O, true, true, true, true>(n, at);
        }
    }
}

#[test]
fn the_fast_path_writes_what_the_general_path_defines() {
    every_flag::<32, Bf16, Sum>();
    every_flag::<32, Bf16, Avg>();
    every_flag::<32, F16, Max>();
    every_flag::<32, F32, Sum>();
    every_flag::<32, F32, Avg>();
    every_flag::<32, F8E4M3, Sum>();
    every_flag::<32, F8E5M2, Max>();
    every_flag::<64, Bf16, Sum>();
    every_flag::<64, F8E4M3, Avg>();
    every_flag::<32, F64, Sum>();
    every_flag::<32, F64, Avg>();
    every_flag::<32, I64, Max>();
    every_flag::<64, F64, Min>();
    every_flag::<32, U32, Prod>();
    every_flag::<32, I8, Min>();
}

#[test]
fn only_exact_raw_frames_take_the_fast_path() {
    let n = 1000;
    let data = input::<Bf16>(0, n, 3);
    let frame = raw_frame::<Bf16>(&data);
    assert_eq!(
        raw_frame_checksum::<Bf16>(&frame, n),
        Some(checksum(&frame[HEADER_BYTES..]))
    );
    assert_eq!(raw_frame_checksum::<Bf16>(&frame, n - 1), None, "another length");
    assert_eq!(raw_frame_checksum::<Bf16>(&frame, n + 1), None, "another length");
    assert_eq!(raw_frame_checksum::<F16>(&frame, n), None, "another dtype");
    assert_eq!(
        raw_frame_checksum::<Bf16>(&frame[..frame.len() - 1], n),
        None,
        "truncated"
    );
    let mut bad_header = frame.clone();
    bad_header[9] ^= 1;
    assert_eq!(raw_frame_checksum::<Bf16>(&bad_header, n), None, "header checksum");
    // a coded frame of compressible data is not RAW
    let smooth: Vec<u16> = (0..n).map(|i| Bf16::from_f32(1.0 + (i % 7) as f32 / 8.0)).collect();
    let mut coded = vec![0u8; max_encoded_len::<Bf16>(n)];
    let out = Shared(coded.as_mut_ptr());
    let len = coded.len();
    on_warp::<32>(|w| {
        // SAFETY: `coded` holds `len` bytes; lanes write through `LaneOut` copies.
        let lane_out = unsafe { LaneOut::from_raw(out.get(), len) };
        let written = encode_frame::<_, Bf16, ExpAns>(w, &smooth, lane_out).unwrap();
        assert!(written < len, "the smooth data compress");
    });
    assert_eq!(raw_frame_checksum::<Bf16>(&coded, n), None, "a coded frame");
}

#[test]
fn a_payload_that_does_not_match_its_checksum_is_seen() {
    let n = 777;
    let data = input::<F32>(1, n, 9);
    let frame = raw_frame::<F32>(&data);
    let stored = raw_frame_checksum::<F32>(&frame, n).unwrap();
    for flip in [HEADER_BYTES, HEADER_BYTES + 4 * 300 + 2, frame.len() - 1] {
        let mut slot = aligned(frame.len());
        let bytes = Shared(slot.as_mut_ptr().cast::<u8>());
        // SAFETY: `slot` holds the frame.
        unsafe {
            std::ptr::copy_nonoverlapping(frame.as_ptr(), bytes.get(), frame.len());
            *bytes.get().add(flip) ^= 0x10;
        }
        let src = aligned(4 * n);
        let mut out = aligned(HEADER_BYTES + 4 * n);
        let step = Shared(RawStep::<F32> {
            recv: bytes.get().wrapping_add(HEADER_BYTES).cast(),
            src: src.as_ptr().cast(),
            dst: std::ptr::null_mut(),
            send: out.as_mut_ptr().cast(),
            n,
            verify: true,
        });
        on_warp::<32>(|w| {
            // SAFETY: the payload holds `n` aligned elements; `src` and the send slot hold `n`
            // elements (the slot a whole frame).
            unsafe {
                let got = recv_checksum::<_, F32>(w, bytes.get().add(HEADER_BYTES).cast(), n);
                assert_ne!(got, stored, "flip at {flip}");
                // the one-pass step sees it too (and its caller then publishes nothing)
                let sums = combine_send::<_, F32, Sum, true, true, true, false>(w, Sum::new::<F32>(2), step.as_ref());
                assert_eq!(sums.received, Some(got), "flip at {flip}");
            }
        });
    }
}

/// A step that does not verify (a trusted channel's) takes no received checksum and computes
/// the same value and frame from the same payload.
#[test]
fn a_step_that_does_not_verify_takes_no_received_checksum() {
    let n = 1001;
    let (got, mine) = (input::<F32>(1, n, 4), input::<F32>(2, n, 5));
    let frame = raw_frame::<F32>(&got);
    let mut slot_in = aligned(frame.len());
    // SAFETY: `slot_in` holds at least `frame.len()` bytes.
    unsafe { std::ptr::copy_nonoverlapping(frame.as_ptr(), slot_in.as_mut_ptr().cast::<u8>(), frame.len()) };
    let mut src = aligned(4 * n);
    // SAFETY: `src` holds `n` elements.
    unsafe { std::ptr::copy_nonoverlapping(mine.as_ptr(), src.as_mut_ptr().cast::<u32>(), n) };
    let frames: Vec<(Option<u32>, Vec<u8>)> = [true, false]
        .into_iter()
        .map(|verify| {
            let mut out = aligned(HEADER_BYTES + 4 * n);
            let step = Shared(RawStep::<F32> {
                recv: slot_in.as_ptr().cast::<u8>().wrapping_add(HEADER_BYTES).cast(),
                src: src.as_ptr().cast(),
                dst: std::ptr::null_mut(),
                send: out.as_mut_ptr().cast(),
                n,
                verify,
            });
            let received = std::sync::Mutex::new(None);
            on_warp::<32>(|w| {
                // SAFETY: the payload holds `n` aligned elements; `src` and the send slot hold
                // `n` elements (the slot a whole frame).
                let sums = unsafe {
                    combine_send::<_, F32, Sum, true, true, true, false>(w, Sum::new::<F32>(2), step.as_ref())
                };
                *received.lock().unwrap() = Some(sums.received);
            });
            let received = received.into_inner().unwrap().expect("the warp ran");
            (received, bytes_of(&out).to_vec())
        })
        .collect();
    assert!(frames[0].0.is_some(), "a verifying step takes the checksum");
    assert_eq!(frames[1].0, None, "a trusting step takes none");
    assert_eq!(frames[0].1, frames[1].1, "the same frame either way");
}
