//! Ring all_reduce on the simulator transport (`sim_net`), beyond the reference sweeps of
//! `collectives.rs`: codec frames really travel; a corrupted frame is reported by its receiver
//! and never reduced or forwarded; a silent rank makes the others fail within the time limit;
//! slots too small for a frame are a typed error; two primitives by hand.

mod common;
mod sim_net;

use common::{input, Gen, FRAME_ELEMS, SLOT_BYTES};
use sim_net::{Link, Net};
use std::time::{Duration, Instant};
use zipcoll_device::codec::{CodecId, ExpAns, ExpWindow, FixedLen, Huffman, SymbolCoder};
use zipcoll_device::dtype::{Bf16, F32, I32, U8};
use zipcoll_device::frame::{FrameError, FrameHeader, HEADER_BYTES};
use zipcoll_device::reduce::{RedOp, Sum};
use zipcoll_primitives::collectives::{run_work, Coll, WorkDesc};
use zipcoll_primitives::conn::{ChannelDesc, ConnError, Failure, SendConn, Wait};
use zipcoll_primitives::prims::{Compression, Force, Off, Prims};
use zipcoll_targets::{Lanes, Word};

/// One ring all_reduce work per rank (part 0 of 1) over `inputs` into `outputs`.
fn ring_works<B>(net: &Net, inputs: &[Vec<B>], outputs: &mut [Vec<B>], frame_elems: usize) -> Vec<WorkDesc> {
    ring_works_at(net, inputs, outputs, frame_elems, 0)
}

/// [`ring_works`] over the elements from `at` on.
fn ring_works_at<B>(
    net: &Net,
    inputs: &[Vec<B>],
    outputs: &mut [Vec<B>],
    frame_elems: usize,
    at: usize,
) -> Vec<WorkDesc> {
    let n = inputs[0].len() - at;
    (0..net.nranks)
        .map(|r| {
            let src = inputs[r][at..].as_ptr().cast();
            let dst = outputs[r][at..].as_mut_ptr().cast();
            net.work(Coll::RingAllReduce, r, 0, 0, src, dst, n, frame_elems)
        })
        .collect()
}

/// With larger frames the codec's frames of `T` are smaller than RAW: the slots hold frames
/// of `C`, and both ranks hold the sum (two ranks: one addition, either order).
fn codec_frames_travel<C: SymbolCoder, T: Gen>(inputs: impl Fn(usize, usize) -> Vec<T::Bits>)
where
    T::Bits: Send + Sync,
{
    let (nranks, frame_elems, n) = (2, 512, 2048);
    let net = Net::new(nranks, 1, 4096);
    let inputs: Vec<Vec<T::Bits>> = (0..nranks).map(|r| inputs(r, n)).collect();
    let mut outputs = vec![vec![T::Bits::default(); n]; nranks];
    let mut works = ring_works(&net, &inputs, &mut outputs, frame_elems);
    for w in &mut works {
        // an integer Sum reads the scalar as the divisor of its result (0: none)
        w.scalar = T::DTYPE.avg_scalar(nranks as u32).unwrap_or(0);
    }
    let results = net.run::<T, Sum, Force<C>>(&works.into_iter().map(|w| vec![w]).collect::<Vec<_>>());
    assert!(
        results.iter().all(Result::is_ok),
        "{:?} {:?}: {results:?}",
        C::ID,
        T::DTYPE
    );
    let coded = (0..net.tail(0, 0, 1).min(8) as usize)
        .map(|s| FrameHeader::parse(&net.slot(0, 1, s)).expect("a valid frame"))
        .filter(|h| h.codec_id() == Some(C::ID) && h.payload_bytes < h.raw_bytes)
        .count();
    assert!(coded > 0, "{:?} {:?}: no coded frame in the FIFO", C::ID, T::DTYPE);
    let sum: Vec<T::Bits> = (0..n).map(|i| T::add(inputs[0][i], inputs[1][i])).collect();
    for (r, out) in outputs.iter().enumerate() {
        assert!(
            out.iter().zip(&sum).all(|(a, b)| a.to_bits64() == b.to_bits64()),
            "{:?} {:?}: rank {r}'s sum differs",
            C::ID,
            T::DTYPE
        );
    }
}

/// Every coder's frames travel for bf16 and for the integers whose high bits repeat: i32
/// magnitudes (top byte 0 but at the extremes), u8 below 32 (high nibbles 0 or 1).
#[test]
fn codec_frames_really_travel() {
    fn each<C: SymbolCoder>() {
        codec_frames_travel::<C, Bf16>(|r, n| input::<Bf16>(r, n, 0));
        codec_frames_travel::<C, I32>(|r, n| {
            input::<I32>(r, n, 0)
                .iter()
                .map(|x| (*x as i32).wrapping_abs() as u32)
                .collect()
        });
        codec_frames_travel::<C, U8>(|r, n| input::<I32>(r, n, 1).iter().map(|x| (*x % 32) as u8).collect());
    }
    each::<FixedLen>();
    each::<ExpWindow>();
    each::<ExpAns>();
    each::<Huffman>();
}

/// Rank 0 of a 3-rank ring sends one frame (of `E`) with byte `flip` inverted, then stops; the
/// others run ring all_reduce. Returns each rank's failure, the frames rank 1 forwarded, and
/// whether rank 1's output was left untouched. The ranks' buffers start `at` elements into
/// their vectors (so that an odd `at` puts every chunk at an address that is not 16-byte
/// aligned).
fn corrupt_first_frame<E: Compression>(flip: usize, link: Link, at: usize) -> (Vec<Option<Failure>>, u64, bool) {
    let (nranks, n) = (3, 3 * FRAME_ELEMS);
    let mut net = Net::new(nranks, 1, SLOT_BYTES);
    net.timeout_ns = 300_000_000;
    net.link = link;
    let inputs: Vec<Vec<u16>> = (0..nranks).map(|r| input::<Bf16>(r, n + at, 0)).collect();
    let mut outputs = vec![vec![0u16; n + at]; nranks];
    let works = ring_works_at(&net, &inputs, &mut outputs, FRAME_ELEMS, at);
    let shared = sim_net::Shared(&works);
    net.launch(nranks, |w, r| {
        let work = &shared.get()[r];
        if r == 0 {
            // SAFETY: the net's channel of rank 0; rank 0 is the only sender on its `send` FIFO.
            let ch: &ChannelDesc = unsafe { &*work.channels };
            // SAFETY: as above.
            let mut send = unsafe { SendConn::new(w, ch) };
            let slot = send.wait_slot(w).unwrap();
            E::encode::<_, Bf16>(w, 0, &inputs[0][at..at + FRAME_ELEMS], slot).unwrap();
            // every lane: the frame is written; lane 0 flips one byte of it
            w.sync(u64::from(u32::MAX));
            if w.lane_id() == 0 {
                // SAFETY: the slot is this sender's until `post`; `flip` lies inside it.
                let byte = unsafe { ch.send.slots.add(flip).read() };
                // SAFETY: only lane 0 writes, after the warp's sync: no other lane accesses it.
                unsafe { slot.put_u8(flip, !byte) }.unwrap();
            }
            send.post(w);
        } else {
            // SAFETY: buffers of `n` elements, one output per rank, channels along the ring.
            let _ = unsafe { run_work::<_, Bf16, Sum, Off>(w, work) };
        }
    })
    .unwrap();
    let failures = works.iter().map(|w| net.failure(w)).collect();
    (failures, net.tail(0, 1, 2), outputs[1].iter().all(|&x| x == 0))
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

/// At both alignments of the ranks' buffers (vectors, and words on the RAW fast path), over
/// FIFOs in the kernels' memory and in host memory (NET's: coded frames decoded from a copy).
#[test]
fn a_corrupted_frame_is_reported_never_reduced() {
    for (at, link) in [(0, Link::Sim), (1, Link::Sim), (0, Link::Net)] {
        let header = |e| matches!(e, FrameError::HeaderChecksum { .. });
        rejected(9, corrupt_first_frame::<Off>(9, link, at), header);
        let payload = |e| matches!(e, FrameError::RawChecksum { .. });
        let flip = HEADER_BYTES + 5;
        rejected(flip, corrupt_first_frame::<Off>(flip, link, at), payload);
        let any = |_| true;
        let last = HEADER_BYTES + 10;
        rejected(last, corrupt_first_frame::<Force<Huffman>>(last, link, at), any);
    }
}

/// On a trusted channel (P2P's) a frame's header is still validated, but a RAW payload is used
/// as delivered: rank 1 reduces the flipped payload and forwards the result (then waits for
/// rank 0, which has stopped). Also where the ranks' buffers are not 16-byte aligned: such
/// chunks take the RAW fast path too (the general path would reject the payload).
#[test]
fn a_trusted_channel_validates_headers_and_uses_raw_payloads_as_delivered() {
    for at in [0, 1] {
        let header = |e| matches!(e, FrameError::HeaderChecksum { .. });
        rejected(9, corrupt_first_frame::<Off>(9, Link::P2p, at), header);
        let (f, forwarded, _) = corrupt_first_frame::<Off>(HEADER_BYTES + 5, Link::P2p, at);
        // rank 1 and rank 2 both wait for data from the ring; whichever times out first
        // raises the abort word the other then stops on
        assert!(
            matches!(
                f[1].map(|f| f.error),
                Some(ConnError::Timeout(Wait::Data) | ConnError::Aborted)
            ),
            "at {at}: rank 1 used the payload and waited for rank 0's next frame, got {:?}",
            f[1]
        );
        assert_eq!(
            forwarded, 2,
            "at {at}: rank 1 forwarded its reduction of the flipped payload"
        );
    }
}

#[test]
fn a_silent_rank_makes_the_others_fail_not_hang() {
    let (nranks, n) = (4, 4 * FRAME_ELEMS);
    let mut net = Net::new(nranks, 1, SLOT_BYTES);
    net.timeout_ns = 300_000_000;
    let inputs: Vec<Vec<u32>> = (0..nranks).map(|r| input::<F32>(r, n, 0)).collect();
    let mut outputs = vec![vec![0u32; n]; nranks];
    let works = ring_works(&net, &inputs, &mut outputs, FRAME_ELEMS);
    let shared = sim_net::Shared(&works);
    let start = Instant::now();
    net.launch(nranks, |w, r| {
        if r != 2 {
            // SAFETY: buffers of `n` elements, one output per rank, channels along the ring.
            let _ = unsafe { run_work::<_, F32, Sum, Force<FixedLen>>(w, &shared.get()[r]) };
        }
    })
    .unwrap();
    assert!(start.elapsed() < Duration::from_secs(15), "took {:?}", start.elapsed());
    let f: Vec<Option<Failure>> = works.iter().map(|w| net.failure(w)).collect();
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
    let net = Net::new(nranks, 1, 256);
    let inputs: Vec<Vec<u32>> = (0..nranks).map(|r| input::<F32>(r, 100, 0)).collect();
    let mut outputs = vec![vec![0u32; 100]; nranks];
    let works = ring_works(&net, &inputs, &mut outputs, 64);
    let results = net.run::<F32, Sum, Off>(&works.iter().map(|w| vec![*w]).collect::<Vec<_>>());
    let want = ConnError::SlotTooSmall { need: 288, have: 256 };
    assert!(
        results.iter().all(|r| r.map_err(|f| f.error) == Err(want)),
        "{results:?}"
    );
    assert!(works.iter().all(|w| net.failure(w).map(|f| f.error) == Some(want)));
}

#[test]
fn the_sweeps_force_every_codec() {
    let forced = [FixedLen::ID, ExpWindow::ID, ExpAns::ID, Huffman::ID];
    assert!(CodecId::ALL.iter().all(|c| *c == CodecId::Raw || forced.contains(c)));
}

#[test]
fn copy_send_then_recv_reduce_copy() {
    let (n, net) = (FRAME_ELEMS, Net::new(2, 1, SLOT_BYTES));
    let inputs: Vec<Vec<u16>> = (0..2).map(|r| input::<Bf16>(r, n, 0)).collect();
    let mut outputs = vec![vec![0u16; n]; 2];
    let works = ring_works(&net, &inputs, &mut outputs, n);
    let shared = sim_net::Shared(&works);
    net.launch(2, |w, r| {
        let work = &shared.get()[r];
        // SAFETY: buffers of `n <= frame_elems` elements, one output per rank; rank 0 only sends
        // on its ring channel (to 1), rank 1 only receives on its own (from 0).
        unsafe {
            let ch: &ChannelDesc = &*work.channels;
            let mut p = Prims::<_, Bf16, Sum, Force<ExpWindow>>::new(w, ch, Sum::new::<Bf16>(2), n).unwrap();
            let (src, out) = (work.src.cast::<u16>(), work.dst.cast::<u16>());
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
