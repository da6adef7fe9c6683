//! `Communicator::all_to_allv` on the simulator, ranks as threads:
//!
//! | test | what |
//! |------|------|
//! | `uneven_counts_on_2_to_8_ranks` | per-pair counts from 0 to a few hundred (some pairs none), packed receive ranges with gaps, compression off, Auto and a forced codec: every received range is the sender's, bit for bit, and the gaps are untouched |
//! | `bad_ranges_are_argument_errors_and_the_communicator_works` | wrong list lengths, a range past its buffer, overlapping receive ranges, a self count that differs: `InvalidArgument`, then a correct all_to_allv works |

use zipcoll_host::comm::{run_sim, Communicator, Compression, Config, DeviceBuffer, Lossless, Options};
use zipcoll_host::{testdata, CodecId, DType, Error, Result};

/// Elements rank `from` sends rank `to` (some pairs none).
fn count(from: usize, to: usize) -> usize {
    (from * 7 + to * 3) % 5 * 61
}

/// Per rank, `(first element, count)`.
type Ranges = Vec<(usize, usize)>;

/// Where rank `me`'s send and receive ranges lie: packed in rank order with a gap of 3
/// elements before each, so a write outside its range shows.
fn layout(me: usize, k: usize) -> (Ranges, Ranges, usize, usize) {
    let place = |counts: Vec<usize>| {
        let mut at = 0;
        let ranges: Ranges = counts
            .into_iter()
            .map(|c| {
                at += 3;
                let r = (at, c);
                at += c;
                r
            })
            .collect();
        (ranges, at + 3)
    };
    let (send, send_len) = place((0..k).map(|q| count(me, q)).collect());
    let (recv, recv_len) = place((0..k).map(|q| count(q, me)).collect());
    (send, recv, send_len, recv_len)
}

/// Rank `me`'s input: `len` bf16 elements of the edge-case mix, different per rank.
fn input(me: usize, len: usize) -> Vec<u8> {
    testdata::elements(DType::Bf16, len, 17 + me as u64)
}

const SENTINEL: u8 = 0xC7;

fn exchange(comm: &Communicator, opts: Options) -> Result<Vec<u8>> {
    let (me, k) = (comm.rank(), comm.nranks());
    let (send, recv, send_len, recv_len) = layout(me, k);
    let mut src = comm.alloc(2 * send_len)?;
    src.copy_from_host(&input(me, send_len))?;
    let mut dst: DeviceBuffer = comm.alloc(2 * recv_len)?;
    dst.copy_from_host(&vec![SENTINEL; 2 * recv_len])?;
    comm.all_to_allv(&src, &send, &mut dst, &recv, DType::Bf16, opts)?;
    comm.synchronize()?;
    dst.to_host()
}

/// Checks rank `me`'s received bytes against every sender's input.
fn check(me: usize, k: usize, got: &[u8], what: &str) {
    let (_, recv, _, recv_len) = layout(me, k);
    let mut want = vec![SENTINEL; 2 * recv_len];
    for (q, &(at, c)) in recv.iter().enumerate() {
        let (their_send, _, their_len, _) = layout(q, k);
        let src = input(q, their_len);
        let from = their_send[me].0;
        want[2 * at..2 * (at + c)].copy_from_slice(&src[2 * from..2 * (from + c)]);
    }
    assert_eq!(got, &want[..], "{what}: rank {me} of {k}");
}

#[test]
fn uneven_counts_on_2_to_8_ranks() {
    let codecs = [
        Compression::Off,
        Compression::Lossless(Lossless::Auto),
        Compression::Lossless(Lossless::Force(CodecId::ExpAns)),
    ];
    for k in 2..=8 {
        for c in codecs {
            let opts = Options {
                compression: Some(c),
                ..Options::default()
            };
            let got = run_sim(k, Config::sim(), |comm| exchange(&comm, opts)).unwrap();
            for (me, g) in got.iter().enumerate() {
                check(me, k, g, &format!("{c:?}"));
            }
        }
    }
}

#[test]
fn bad_ranges_are_argument_errors_and_the_communicator_works() {
    let k = 3;
    let got = run_sim(k, Config::sim(), |comm| {
        let me = comm.rank();
        let (send, recv, send_len, recv_len) = layout(me, k);
        let src = comm.alloc(2 * send_len)?;
        let mut dst = comm.alloc(2 * recv_len)?;
        let o = Options::default();
        let mut past = send.clone();
        past[(me + 1) % k] = (send_len, 1);
        let mut overlap = recv.clone();
        let (a, b) = ((me + 1) % k, (me + 2) % k);
        overlap[a] = (0, 10);
        overlap[b] = (5, 10);
        let mut selfish = send.clone();
        selfish[me].1 += 1;
        let cases = [
            (send[..2].to_vec(), recv.clone(), "ranges for 3 ranks"),
            (past, recv.clone(), "outside"),
            (send.clone(), overlap, "overlap"),
            (selfish, recv.clone(), "itself"),
        ];
        for (s, r, want) in cases {
            match comm.all_to_allv(&src, &s, &mut dst, &r, DType::Bf16, o) {
                Err(Error::InvalidArgument(m)) => assert!(m.contains(want), "rank {me}: {m}"),
                other => panic!("rank {me}, {want}: {other:?}"),
            }
        }
        exchange(&comm, o)
    })
    .unwrap();
    for (me, g) in got.iter().enumerate() {
        check(me, k, g, "after the refused calls");
    }
}
