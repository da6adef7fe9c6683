//! Send / receive and the work descriptor's checks on the simulator transport (`sim_net`):
//! groups that would deadlock if run one operation after the other complete; every rank sends
//! to `r + 1` while receiving from `r - 1` in two separate warps; invalid descriptors and absent
//! channel sides are typed errors, reported in the status record; a coded frame reaching a
//! RAW-only block team is a typed error, never decoded.

mod common;
mod sim_net;

use common::{input, FRAME_ELEMS, SLOT_BYTES};
use sim_net::{Channel, Net};
use zipcoll_device::codec::CodecId;
use zipcoll_device::codec::{ExpAns, Huffman};
use zipcoll_device::dtype::{Bf16, F32};
use zipcoll_device::frame::{FrameError, FrameHeader, BLOCK_FRAME_VERSION};
use zipcoll_device::reduce::{Max, Sum};
use zipcoll_primitives::collectives::{run_work, Coll, WorkDesc};
use zipcoll_primitives::conn::Failure;
use zipcoll_primitives::conn::{ChannelDesc, ConnDesc, ConnError, Side};
use zipcoll_primitives::prims::{Force, Off, RawOnly};

/// Every rank sends `count` elements to `r + shift` in one warp and receives from `r - shift`
/// in another (two blocks per rank, `nparts` parts each).
fn ring_of_sends(nranks: usize, nparts: usize, shift: usize, count: usize) {
    let net = Net::new(nranks, nparts, SLOT_BYTES);
    let inputs: Vec<Vec<u16>> = (0..nranks).map(|r| input::<Bf16>(r, count, 5)).collect();
    let mut outputs = vec![vec![0u16; count]; nranks];
    let mut warps = Vec::new();
    for r in 0..nranks {
        let (to, from) = ((r + shift) % nranks, (r + nranks - shift) % nranks);
        for part in 0..nparts {
            let src = inputs[r].as_ptr().cast();
            let dst = outputs[r].as_mut_ptr().cast();
            warps.push(vec![net.work(
                Coll::Send,
                r,
                part,
                to,
                src,
                std::ptr::null_mut(),
                count,
                FRAME_ELEMS,
            )]);
            warps.push(vec![net.work(
                Coll::Recv,
                r,
                part,
                from,
                std::ptr::null(),
                dst,
                count,
                FRAME_ELEMS,
            )]);
        }
    }
    let results = net.run::<Bf16, Sum, Force<Huffman>>(&warps);
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    for r in 0..nranks {
        assert_eq!(outputs[r], inputs[(r + nranks - shift) % nranks], "rank {r}");
    }
}

#[test]
fn sends_and_receives_in_separate_warps() {
    for (nranks, nparts, count) in [(2, 1, 1), (3, 3, 1000), (5, 1, 500), (8, 3, 200)] {
        ring_of_sends(nranks, nparts, 1, count);
        ring_of_sends(nranks, nparts, nranks - 1, count);
    }
    ring_of_sends(4, 1, 2, 0);
}

/// Every rank `r` runs, in one warp, a list of: a send to `r + 1`, a receive from `r - 1`, a
/// send to `r - 1` and a receive from `r + 1` (so a group sends to `b` and receives from `c`,
/// and sends and receives with the same peer), each far more than `NSLOTS` frames: run one after
/// the other, every warp would wait in its first send.
#[test]
fn a_group_of_sends_and_receives_does_not_deadlock() {
    for (nranks, nparts) in [(2, 1), (3, 1), (4, 3), (7, 1)] {
        let count = 40 * FRAME_ELEMS + 5;
        let net = Net::new(nranks, nparts, SLOT_BYTES);
        let inputs: Vec<Vec<u32>> = (0..nranks).map(|r| input::<F32>(r, 2 * count, 7)).collect();
        let mut outputs = vec![vec![0u32; 2 * count]; nranks];
        let mut warps = Vec::new();
        for r in 0..nranks {
            let (next, prev) = ((r + 1) % nranks, (r + nranks - 1) % nranks);
            let src = inputs[r].as_ptr();
            let dst = outputs[r].as_mut_ptr();
            for part in 0..nparts {
                let null = (std::ptr::null(), std::ptr::null_mut());
                warps.push(vec![
                    net.work(Coll::Send, r, part, next, src.cast(), null.1, count, FRAME_ELEMS),
                    net.work(Coll::Recv, r, part, prev, null.0, dst.cast(), count, FRAME_ELEMS),
                    net.work(
                        Coll::Send,
                        r,
                        part,
                        prev,
                        src.wrapping_add(count).cast(),
                        null.1,
                        count,
                        FRAME_ELEMS,
                    ),
                    net.work(
                        Coll::Recv,
                        r,
                        part,
                        next,
                        null.0,
                        dst.wrapping_add(count).cast(),
                        count,
                        FRAME_ELEMS,
                    ),
                ]);
            }
        }
        let results = net.run::<F32, Max, Force<ExpAns>>(&warps);
        assert!(results.iter().all(Result::is_ok), "{results:?}");
        for (r, out) in outputs.iter().enumerate() {
            let (next, prev) = ((r + 1) % nranks, (r + nranks - 1) % nranks);
            // with 2 ranks next == prev: the pair's two sends arrive in list order
            assert_eq!(out[..count], inputs[prev][..count], "rank {r}");
            assert_eq!(out[count..], inputs[next][count..], "rank {r}");
        }
    }
}

/// A list of two operations with the same peer in one warp (rank 0 sends then receives, rank 1
/// receives then sends, and the reverse), then a collective in the same list.
#[test]
fn a_list_with_one_peer_then_a_collective() {
    let count = 30 * FRAME_ELEMS;
    let net = Net::new(2, 1, SLOT_BYTES);
    let inputs: Vec<Vec<u16>> = (0..2).map(|r| input::<Bf16>(r, count, 9)).collect();
    let mut outputs = vec![vec![0u16; 3 * count]; 2];
    let warps: Vec<Vec<WorkDesc>> = (0..2)
        .map(|r| {
            let (src, dst) = (inputs[r].as_ptr().cast::<u8>(), outputs[r].as_mut_ptr());
            let null = (std::ptr::null(), std::ptr::null_mut());
            let send = net.work(Coll::Send, r, 0, 1 - r, src, null.1, count, FRAME_ELEMS);
            let recv = net.work(Coll::Recv, r, 0, 1 - r, null.0, dst.cast(), count, FRAME_ELEMS);
            let gather = net.work(
                Coll::AllGather,
                r,
                0,
                0,
                src,
                dst.wrapping_add(count).cast(),
                count,
                FRAME_ELEMS,
            );
            if r == 0 {
                vec![send, recv, gather]
            } else {
                vec![recv, send, gather]
            }
        })
        .collect();
    let results = net.run::<Bf16, Sum, Off>(&warps);
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    for r in 0..2 {
        assert_eq!(outputs[r][..count], inputs[1 - r][..]);
        assert_eq!(outputs[r][count..2 * count], inputs[0][..]);
        assert_eq!(outputs[r][2 * count..], inputs[1][..]);
    }
}

/// Runs one (invalid) descriptor per rank of a 2-rank net; every rank's error, as returned and
/// as recorded.
fn errors_of(edit: impl Fn(&mut WorkDesc, &mut Vec<ChannelDesc>)) -> Vec<ConnError> {
    let net = Net::new(2, 1, SLOT_BYTES);
    let inputs: Vec<Vec<u32>> = (0..2).map(|r| input::<F32>(r, 2 * 64, 1)).collect();
    let mut outputs = vec![vec![0u32; 2 * 64]; 2];
    let mut channels: Vec<Vec<ChannelDesc>> = Vec::new();
    let works: Vec<WorkDesc> = (0..2)
        .map(|r| {
            let (src, dst) = (inputs[r].as_ptr().cast(), outputs[r].as_mut_ptr().cast());
            let mut w = net.work(Coll::RingAllReduce, r, 0, 0, src, dst, 64, FRAME_ELEMS);
            // SAFETY: the net's channel array of a ring collective: one entry.
            let mut ch = unsafe { std::slice::from_raw_parts(w.channels, 1) }.to_vec();
            edit(&mut w, &mut ch);
            channels.push(ch);
            w
        })
        .collect();
    let works: Vec<WorkDesc> = works
        .into_iter()
        .zip(&channels)
        .map(|(mut w, ch)| {
            if !w.channels.is_null() {
                w.channels = ch.as_ptr();
            }
            w
        })
        .collect();
    let shared = sim_net::Shared(&works);
    let results = std::sync::Mutex::new(vec![None; 2]);
    net.launch(2, |w, r| {
        // SAFETY: the descriptors point at live buffers and channels (or are invalid in ways
        // the checks catch before any access).
        let result = unsafe { run_work::<_, F32, Sum, Off>(w, &shared.get()[r]) };
        results.lock().unwrap()[r] = Some(result);
    })
    .unwrap();
    let results = results.into_inner().unwrap();
    (0..2)
        .map(|r| {
            let error = results[r].unwrap().expect_err("an invalid descriptor ran").error;
            assert_eq!(net.failure(&works[r]).map(|f| f.error), Some(error), "rank {r}");
            error
        })
        .collect()
}

#[test]
fn invalid_descriptors_are_typed_errors() {
    let all = |e: ConnError| vec![e; 2];
    assert_eq!(errors_of(|w, _| w.coll = 42), all(ConnError::UnknownColl(42)));
    assert_eq!(
        errors_of(|w, _| w.rank += 2),
        vec![
            ConnError::BadRank { rank: 2, nranks: 2 },
            ConnError::BadRank { rank: 3, nranks: 2 }
        ]
    );
    assert_eq!(
        errors_of(|w, _| w.part = 1),
        all(ConnError::BadPart { part: 1, nparts: 1 })
    );
    assert_eq!(
        errors_of(|w, _| w.nparts = 0),
        all(ConnError::BadPart { part: 0, nparts: 0 })
    );
    assert_eq!(
        errors_of(|w, _| {
            w.coll = Coll::Reduce as u32;
            w.peer_or_root = 2;
        }),
        all(ConnError::BadPeer { peer: 2, nranks: 2 })
    );
    assert_eq!(
        errors_of(|w, _| {
            w.coll = Coll::Send as u32;
            w.peer_or_root = w.rank;
        }),
        vec![
            ConnError::BadPeer { peer: 0, nranks: 2 },
            ConnError::BadPeer { peer: 1, nranks: 2 }
        ]
    );
    assert_eq!(errors_of(|w, _| w.frame_elems = 0), all(ConnError::NoFrameElems));
    assert_eq!(errors_of(|w, _| w.count = u64::MAX / 2), all(ConnError::BadCount));
    assert_eq!(
        errors_of(|w, _| w.dst = w.src.wrapping_add(4).cast_mut()),
        all(ConnError::Overlap)
    );
}

#[test]
fn overlaps_other_than_in_place_and_missing_pieces_are_typed_errors() {
    // all_gather with src == dst: allowed on rank 0 (it is `dst + 0 * count`), not on rank 1
    let net = Net::new(2, 1, SLOT_BYTES);
    let mut bufs = vec![vec![0u32; 64]; 2];
    let works: Vec<WorkDesc> = (0..2)
        .map(|r| {
            let p = bufs[r].as_mut_ptr().cast::<u8>();
            net.work(Coll::AllGather, r, 0, 0, p, p, 32, FRAME_ELEMS)
        })
        .collect();
    let results = net.run::<F32, Sum, Off>(&works.iter().map(|w| vec![*w]).collect::<Vec<_>>());
    assert_eq!(results[1].map_err(|f| f.error), Err(ConnError::Overlap));
    assert!(matches!(
        results[0].map_err(|f| f.error),
        Err(ConnError::Aborted | ConnError::Timeout(_))
    ));
    // all_to_all is never in place
    let net = Net::new(2, 1, SLOT_BYTES);
    let works: Vec<WorkDesc> = (0..2)
        .map(|r| {
            let p = bufs[r].as_mut_ptr().cast::<u8>();
            net.work(Coll::AllToAll, r, 0, 0, p, p, 32, FRAME_ELEMS)
        })
        .collect();
    let results = net.run::<F32, Sum, Off>(&works.iter().map(|w| vec![*w]).collect::<Vec<_>>());
    assert!(results
        .iter()
        .all(|r| r.map_err(|f| f.error) == Err(ConnError::Overlap)));
    // no channels
    let works: Vec<WorkDesc> = (0..2)
        .map(|r| {
            let mut w = net.work(
                Coll::RingAllReduce,
                r,
                0,
                0,
                bufs[r].as_ptr().cast(),
                std::ptr::null_mut(),
                8,
                8,
            );
            w.dst = std::ptr::null_mut::<u8>().wrapping_add(64);
            w.channels = std::ptr::null();
            w
        })
        .collect();
    let results = net.run::<F32, Sum, Off>(&works.iter().map(|w| vec![*w]).collect::<Vec<_>>());
    assert!(results
        .iter()
        .all(|r| r.map_err(|f| f.error) == Err(ConnError::NoChannels)));
    // count 0 is fine whatever else is missing (but a descriptor that names no rank is not)
    let works: Vec<WorkDesc> = (0..2)
        .map(|r| {
            let mut w = net.work(Coll::AllToAll, r, 0, 0, std::ptr::null(), std::ptr::null_mut(), 0, 0);
            w.channels = std::ptr::null();
            w
        })
        .collect();
    let results = net.run::<F32, Sum, Off>(&works.iter().map(|w| vec![*w]).collect::<Vec<_>>());
    assert!(results.iter().all(Result::is_ok), "{results:?}");
}

/// A ring all_reduce whose channel lacks a side fails in the step that needs it.
#[test]
fn an_absent_side_is_no_connection() {
    for (side, missing) in [(Side::Send, true), (Side::Recv, false)] {
        let errors = errors_of(|_, ch| {
            if missing {
                ch[0].send = ConnDesc::NONE;
            } else {
                ch[0].recv = ConnDesc::NONE;
            }
        });
        assert!(errors.contains(&ConnError::NoConnection(side)), "{errors:?}");
        assert!(
            errors
                .iter()
                .all(|e| matches!(e, ConnError::NoConnection(_) | ConnError::Aborted)),
            "{errors:?}"
        );
    }
}

/// Rank 0 sends one ExpAns-coded frame (a warp, any codec); rank 1 receives it with a block
/// team of the RAW-only kind (as the block-channel kernel does when the ranks disagree on
/// compression): the receive fails with `CodecNotBuilt` at step 0 and writes nothing.
#[test]
fn a_coded_frame_on_a_raw_only_block_is_a_typed_error() {
    let net = Net::new(2, 1, SLOT_BYTES);
    // one frame of elements of one exponent, so that ExpAns shrinks it and sends it coded
    let n = 192;
    let data: Vec<u16> = (0..n).map(|i| 0x3f80 + (i % 7) as u16).collect();
    let mut out = vec![0xAAAAu16; n];
    let send = net.work(Coll::Send, 0, 0, 1, data.as_ptr().cast(), std::ptr::null_mut(), n, n);
    let recv = net.work(Coll::Recv, 1, 0, 0, std::ptr::null(), out.as_mut_ptr().cast(), n, n);
    // the frame fits one slot, so the sender's launch ends before the receiver's begins
    let sent = net.run::<Bf16, Sum, Force<ExpAns>>(&[vec![send]]);
    assert_eq!(sent, [Ok(())]);
    let got = net.run_on::<Bf16, Sum, RawOnly>(&[vec![recv]], Channel::Block(64));
    let want = Failure {
        step: 0,
        error: ConnError::Frame(FrameError::CodecNotBuilt { codec: CodecId::ExpAns }),
    };
    assert_eq!(got, [Err(want)]);
    assert_eq!(net.failure(&recv), Some(want), "the status record says so");
    assert!(
        out.iter().all(|&x| x == 0xAAAA),
        "nothing of the coded frame was written"
    );
}

/// A block team codes ExpAns frames with every thread, as block frames (format version 2):
/// rank 0 sends one with a block of 64 threads; a block receiver of any compression but
/// `RawOnly` (here `Off`) decodes it bit-exactly, while a warp receiver (the one-warp kernel's
/// channel, which decodes warp frames only) rejects it as `UnsupportedVersion { found: 2 }` at
/// step 0 and writes nothing.
#[test]
fn a_block_team_sends_block_frames_which_block_teams_decode() {
    // one slot's worth, mostly of one exponent (so that ExpAns shrinks it), with -0.0, a NaN
    // payload and infinities among them
    let n = 200;
    let specials = [0x8000u16, 0x7fc1, 0xff81, 0x7f80, 0xff80, 0x0001];
    let data: Vec<u16> = (0..n)
        .map(|i| match i % 13 {
            0 => specials[(i / 13) % specials.len()],
            _ => 0x3f80 + (i * 37 % 128) as u16,
        })
        .collect();
    for (receiver, ok) in [(Channel::Block(64), true), (Channel::Warp, false)] {
        let net = Net::new(2, 1, SLOT_BYTES);
        let mut out = vec![0xAAAAu16; n];
        let send = net.work(Coll::Send, 0, 0, 1, data.as_ptr().cast(), std::ptr::null_mut(), n, n);
        let recv = net.work(Coll::Recv, 1, 0, 0, std::ptr::null(), out.as_mut_ptr().cast(), n, n);
        let sent = net.run_on::<Bf16, Sum, Force<ExpAns>>(&[vec![send]], Channel::Block(64));
        assert_eq!(sent, [Ok(())]);
        let frame = net.slot(0, 1, 0);
        let header = FrameHeader::parse_version(&frame, BLOCK_FRAME_VERSION).expect("a block frame");
        assert_eq!(header.codec_id(), Some(CodecId::ExpAns), "coded, not RAW");
        let got = net.run_on::<Bf16, Sum, Off>(&[vec![recv]], receiver);
        if ok {
            assert_eq!(got, [Ok(())]);
            assert_eq!(out, data, "decoded bit-exactly");
        } else {
            let want = Failure {
                step: 0,
                error: ConnError::Frame(FrameError::UnsupportedVersion { found: 2 }),
            };
            assert_eq!(got, [Err(want)]);
            assert!(
                out.iter().all(|&x| x == 0xAAAA),
                "nothing of the block frame was written"
            );
        }
    }
}
