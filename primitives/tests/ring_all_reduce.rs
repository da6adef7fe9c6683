//! Ring all_reduce on the simulator transport (`sim_ring`): bit-identical to the scalar
//! reference for 2..=8 ranks, several dtypes, ops and sizes, with compression off and each
//! forced codec (so off == every codec bit for bit); codec frames really travel; a corrupted
//! frame is reported by its receiver and never reduced or forwarded; a silent rank makes the
//! others fail within the time limit.

mod sim_ring;

use sim_ring::Ring;
use std::time::{Duration, Instant};
use zipcoll_device::codec::{CodecId, ExpAns, ExpWindow, FixedLen, Huffman, SymbolCoder};
use zipcoll_device::dtype::{Bf16, Elem, Split, F32, F8E4M3};
use zipcoll_device::frame::{FrameError, FrameHeader, HEADER_BYTES};
use zipcoll_device::reduce::{Avg, Max, Min, Prod, RedOp, Sum};
use zipcoll_primitives::collectives::{ring_all_reduce, ring_all_reduce_reference};
use zipcoll_primitives::conn::{ConnError, Failure, SendConn, Wait};
use zipcoll_primitives::prims::{Compression, Force, Off, Prims};
use zipcoll_targets::Lanes;

/// Elements per frame in the sweeps: small, so a few hundred elements span several loops.
const FRAME_ELEMS: usize = 64;
/// Slots that fit a frame of `FRAME_ELEMS` f32 (and 4x as many fp8/bf16) elements.
const SLOT_BYTES: usize = 1024;

/// Rank `r`'s input of `n` elements: roughly normal values (compressible exponents), with a
/// -0.0, an infinity and a large value sprinkled in.
fn input<T: Elem>(r: usize, n: usize) -> Vec<T::Bits> {
    let mut s = 0x9E37_79B9_7F4A_7C15u64 ^ (r as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03);
    (0..n)
        .map(|i| {
            let mut u = || {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                (s >> 40) as f32 / (1u64 << 24) as f32
            };
            let x = match (i + r) % 101 {
                7 => -0.0,
                50 if r.is_multiple_of(3) => f32::INFINITY,
                90 => 300.0,
                _ => (u() + u() + u() - 1.5) * 2.0,
            };
            T::from_f32(x)
        })
        .collect()
}

/// The sizes of the sweep for `nranks`: empty, one element, less than a frame, and a few full
/// loops plus one element.
fn sizes(nranks: usize) -> [usize; 4] {
    [0, 1, 31, 2 * nranks * FRAME_ELEMS + 1]
}

/// Every rank's ring all_reduce output equals the reference bit for bit, for every size.
fn check<T: Split, O: RedOp, E: Compression>(nranks: usize) {
    for n in sizes(nranks) {
        let inputs: Vec<Vec<T::Bits>> = (0..nranks).map(|r| input::<T>(r, n)).collect();
        let views: Vec<&[T::Bits]> = inputs.iter().map(Vec::as_slice).collect();
        let mut want = vec![T::Bits::default(); n];
        ring_all_reduce_reference::<T, O>(&views, &mut want, FRAME_ELEMS);
        let got = Ring::new(nranks, SLOT_BYTES).all_reduce::<T, O, E>(&inputs, FRAME_ELEMS);
        for (r, out) in got.iter().enumerate() {
            let bad = out.iter().zip(&want).position(|(a, b)| a != b);
            assert!(
                bad.is_none(),
                "{:?} {:?} nranks {nranks} n {n} rank {r}: element {bad:?} differs",
                T::DTYPE,
                O::OP
            );
        }
    }
}

/// The sweep of one compression: nranks 2..=8, bf16 and f32, sum and max.
fn sweep<E: Compression>() {
    for nranks in 2..=8 {
        check::<Bf16, Sum, E>(nranks);
        check::<Bf16, Max, E>(nranks);
        check::<F32, Sum, E>(nranks);
        check::<F32, Max, E>(nranks);
    }
}

#[test]
fn off_matches_the_reference() {
    sweep::<Off>();
}

#[test]
fn fixed_len_matches_the_reference() {
    sweep::<Force<FixedLen>>();
}

#[test]
fn exp_window_matches_the_reference() {
    sweep::<Force<ExpWindow>>();
}

#[test]
fn exp_ans_matches_the_reference() {
    sweep::<Force<ExpAns>>();
}

#[test]
fn huffman_matches_the_reference() {
    sweep::<Force<Huffman>>();
}

#[test]
fn every_op_fp8_and_one_rank() {
    for nranks in [1, 3] {
        check::<F8E4M3, Sum, Off>(nranks);
        check::<F8E4M3, Sum, Force<FixedLen>>(nranks);
        check::<Bf16, Prod, Force<Huffman>>(nranks);
        check::<Bf16, Min, Force<ExpWindow>>(nranks);
        check::<F32, Avg, Force<ExpAns>>(nranks);
        check::<Bf16, Avg, Off>(nranks);
    }
}

/// With larger frames the codec's frames are smaller than RAW: the slots hold frames of `C`.
fn codec_frames_travel<C: SymbolCoder>() {
    let (nranks, frame_elems, n) = (2, 512, 2048);
    let ring = Ring::new(nranks, 2048);
    let inputs: Vec<Vec<u16>> = (0..nranks).map(|r| input::<Bf16>(r, n)).collect();
    ring.all_reduce::<Bf16, Sum, Force<C>>(&inputs, frame_elems);
    let coded = (0..ring.tail(0).min(8) as usize)
        .map(|s| FrameHeader::parse(&ring.slot(0, s)).expect("a valid frame"))
        .filter(|h| h.codec_id() == Some(C::ID) && h.payload_bytes < h.raw_bytes)
        .count();
    assert!(coded > 0, "{:?}: no coded frame in the FIFO", C::ID);
}

#[test]
fn codec_frames_really_travel() {
    codec_frames_travel::<FixedLen>();
    codec_frames_travel::<ExpWindow>();
    codec_frames_travel::<ExpAns>();
    codec_frames_travel::<Huffman>();
}

/// Rank 0 of a 3-rank ring sends one frame (of `E`) with byte `flip` inverted, then stops; the
/// others run ring all_reduce. Returns each rank's failure, the frames rank 1 forwarded, and
/// whether rank 1's output was left untouched.
fn corrupt_first_frame<E: Compression>(flip: usize) -> (Vec<Option<Failure>>, u64, bool) {
    let (nranks, n) = (3, 3 * FRAME_ELEMS);
    let mut ring = Ring::new(nranks, SLOT_BYTES);
    ring.timeout_ns = 300_000_000;
    let inputs: Vec<Vec<u16>> = (0..nranks).map(|r| input::<Bf16>(r, n)).collect();
    let mut outputs = vec![vec![0u16; n]; nranks];
    let dst: Vec<usize> = outputs.iter_mut().map(|o| o.as_mut_ptr() as usize).collect();
    ring.launch(|w, r, ch| {
        if r == 0 {
            // SAFETY: rank 0 is the only sender on its channel's `send` FIFO.
            let mut send = unsafe { SendConn::new(w, ch) };
            let slot = send.wait_slot(w).unwrap();
            E::encode::<_, Bf16>(w, &inputs[0][..FRAME_ELEMS], slot).unwrap();
            // every lane: the frame is written; lane 0 flips one byte of it
            w.sync(u64::from(u32::MAX));
            if w.lane_id() == 0 {
                // SAFETY: the slot is this sender's until `post`; `flip` lies inside it.
                let byte = unsafe { ch.send.slots.add(flip).read() };
                slot.put_u8(flip, !byte).unwrap();
            }
            send.post(w);
        } else {
            // SAFETY: buffers of `n` elements, one output per rank, channels along the ring.
            let _ = unsafe {
                ring_all_reduce::<_, Bf16, Sum, Off>(
                    w,
                    ch,
                    r,
                    nranks,
                    inputs[r].as_ptr(),
                    dst[r] as *mut u16,
                    n,
                    FRAME_ELEMS,
                )
            };
        }
    })
    .unwrap();
    (ring.failures(), ring.tail(1), outputs[1].iter().all(|&x| x == 0))
}

/// Rank 1 rejects the frame with `want`, forwards nothing reduced and writes nothing; rank 2
/// stops on the abort word.
fn rejected(flip: usize, failures: (Vec<Option<Failure>>, u64, bool), want: impl Fn(FrameError) -> bool) {
    let (f, forwarded, untouched) = failures;
    assert_eq!(f[0], None, "flip {flip}");
    match f[1] {
        Some(Failure {
            step: 0,
            error: ConnError::Frame(e),
        }) if want(e) => {}
        other => panic!("flip {flip}: rank 1 reported {other:?}"),
    }
    assert_eq!(f[2].map(|f| f.error), Some(ConnError::Aborted), "flip {flip}");
    assert_eq!(
        forwarded, 1,
        "flip {flip}: rank 1 forwarded a frame after the corrupt one"
    );
    assert!(untouched, "flip {flip}: rank 1 wrote to its output");
}

#[test]
fn a_corrupted_frame_is_reported_never_reduced() {
    let header = |e| matches!(e, FrameError::HeaderChecksum { .. });
    rejected(9, corrupt_first_frame::<Off>(9), header);
    let payload = |e| matches!(e, FrameError::RawChecksum { .. });
    rejected(HEADER_BYTES + 5, corrupt_first_frame::<Off>(HEADER_BYTES + 5), payload);
    let any = |_| true;
    let last = HEADER_BYTES + 60;
    rejected(last, corrupt_first_frame::<Force<Huffman>>(last), any);
}

#[test]
fn a_silent_rank_makes_the_others_fail_not_hang() {
    let (nranks, n) = (4, 4 * FRAME_ELEMS);
    let mut ring = Ring::new(nranks, SLOT_BYTES);
    ring.timeout_ns = 300_000_000;
    let inputs: Vec<Vec<u32>> = (0..nranks).map(|r| input::<F32>(r, n)).collect();
    let mut outputs = vec![vec![0u32; n]; nranks];
    let dst: Vec<usize> = outputs.iter_mut().map(|o| o.as_mut_ptr() as usize).collect();
    let start = Instant::now();
    ring.launch(|w, r, ch| {
        if r != 2 {
            // SAFETY: buffers of `n` elements, one output per rank, channels along the ring.
            let _ = unsafe {
                ring_all_reduce::<_, F32, Sum, Force<FixedLen>>(
                    w,
                    ch,
                    r,
                    nranks,
                    inputs[r].as_ptr(),
                    dst[r] as *mut u32,
                    n,
                    FRAME_ELEMS,
                )
            };
        }
    })
    .unwrap();
    assert!(start.elapsed() < Duration::from_secs(15), "took {:?}", start.elapsed());
    let f = ring.failures();
    assert_eq!(f[2], None);
    let errors: Vec<ConnError> = [0, 1, 3]
        .map(|r| f[r].unwrap_or_else(|| panic!("rank {r} succeeded")).error)
        .to_vec();
    assert!(errors.contains(&ConnError::Timeout(Wait::Data)), "{errors:?}");
    assert!(
        errors
            .iter()
            .all(|e| matches!(e, ConnError::Timeout(_) | ConnError::Aborted)),
        "{errors:?}"
    );
}

#[test]
fn slots_too_small_for_a_frame_are_a_typed_error() {
    let nranks = 2;
    let ring = Ring::new(nranks, 256);
    let inputs: Vec<Vec<u32>> = (0..nranks).map(|r| input::<F32>(r, 100)).collect();
    ring.launch(|w, r, ch| {
        let mut out = vec![0u32; 100];
        // SAFETY: buffers of 100 elements, channels along the ring.
        let result = unsafe {
            ring_all_reduce::<_, F32, Sum, Off>(w, ch, r, nranks, inputs[r].as_ptr(), out.as_mut_ptr(), 100, 64)
        };
        assert_eq!(
            result.map_err(|f| f.error),
            Err(ConnError::SlotTooSmall { need: 288, have: 256 })
        );
    })
    .unwrap();
    assert!(ring.failures().iter().all(|f| f.is_some()));
}

#[test]
fn the_sweeps_force_every_codec() {
    let forced = [FixedLen::ID, ExpWindow::ID, ExpAns::ID, Huffman::ID];
    assert!(CodecId::ALL.iter().all(|c| *c == CodecId::Raw || forced.contains(c)));
}

#[test]
fn copy_send_then_recv_reduce_copy() {
    let (n, ring) = (FRAME_ELEMS, Ring::new(2, SLOT_BYTES));
    let inputs: Vec<Vec<u16>> = (0..2).map(|r| input::<Bf16>(r, n)).collect();
    let mut outputs = vec![vec![0u16; n]; 2];
    let dst: Vec<usize> = outputs.iter_mut().map(|o| o.as_mut_ptr() as usize).collect();
    ring.launch(|w, r, ch| {
        // SAFETY: buffers of `n <= frame_elems` elements, one output per rank; rank 0 only sends
        // on edge 0 -> 1, rank 1 only receives from it.
        unsafe {
            let mut p = Prims::<_, Bf16, Sum, Force<ExpWindow>>::new(w, ch, Sum::new(2), n).unwrap();
            let (src, out) = (inputs[r].as_ptr(), dst[r] as *mut u16);
            if r == 0 {
                p.copy_send(src, out, n).unwrap();
            } else {
                p.recv_reduce_copy(src, out, n).unwrap();
            }
        }
    })
    .unwrap();
    assert_eq!(outputs[0], inputs[0]);
    let sum: Vec<u16> = (0..n)
        .map(|i| Sum.combine::<Bf16>(inputs[0][i], inputs[1][i]))
        .collect();
    assert_eq!(outputs[1], sum);
}
