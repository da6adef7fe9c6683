//! The TCP bootstrap, with threads as ranks: allgathers on rings of 1 to 8 ranks, the unique
//! id's text form, bad arguments, rendezvous failures (ranks that disagree, a duplicate rank, a
//! missing rank, a root that is absent or silent), a peer that goes away, and garbage on the wire
//! (to the root, from a fake root, from a fake peer): typed errors within the time limits, never
//! a hang or a panic.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use zipcoll_host::comm::bootstrap::{Bootstrap, UniqueId, MAX_BLOB_LEN, PROTOCOL_VERSION};
use zipcoll_host::Error;

/// The init / socket timeout of the ranks that are expected to succeed.
const GENEROUS: Duration = Duration::from_secs(5);

fn localhost() -> SocketAddr {
    "127.0.0.1:0".parse().expect("address")
}

fn new_id(root_timeout: Duration) -> UniqueId {
    UniqueId::new_with_timeout(localhost(), root_timeout).expect("root starts")
}

/// Runs `body` on one thread per `(rank, nranks)`, each after `Bootstrap::init`; returns the
/// bodies' results in the order of `ranks`.
fn on_ranks<R: Send>(
    id: &UniqueId,
    ranks: &[(usize, usize)],
    timeout: Duration,
    body: impl Fn(usize, Result<Bootstrap, Error>) -> R + Sync,
) -> Vec<R> {
    let body = &body;
    thread::scope(|scope| {
        let handles: Vec<_> = ranks
            .iter()
            .map(|&(rank, nranks)| scope.spawn(move || body(rank, Bootstrap::init(id, rank, nranks, timeout))))
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().expect("rank thread"))
            .collect()
    })
}

fn all_of(nranks: usize) -> Vec<(usize, usize)> {
    (0..nranks).map(|rank| (rank, nranks)).collect()
}

/// A distinct blob per (rank, round), of a distinct length, with no zero byte; rank 2 of round
/// 1 is empty and the last rank's of round 0 is large (several socket buffers).
fn blob(rank: usize, nranks: usize, round: usize) -> Vec<u8> {
    let len = match (rank, round) {
        (2, 1) => 0,
        _ if rank == nranks - 1 && round == 0 => 300_000 + rank,
        _ => 1 + rank * 37 + round * 5,
    };
    (0..len)
        .map(|i| ((i + rank * 13 + round * 101) % 251 + 1) as u8)
        .collect()
}

#[test]
fn allgather_and_barrier_on_rings_of_1_to_8_ranks() {
    for nranks in [1, 2, 3, 5, 8] {
        let id = new_id(GENEROUS);
        let tables = on_ranks(&id, &all_of(nranks), GENEROUS, |rank, boot| {
            let boot = boot.expect("init");
            assert_eq!((boot.rank(), boot.nranks()), (rank, nranks));
            let first = boot.allgather(&blob(rank, nranks, 0)).expect("first allgather");
            boot.barrier().expect("barrier");
            let second = boot.allgather(&blob(rank, nranks, 1)).expect("second allgather");
            boot.barrier().expect("second barrier");
            (first, second)
        });
        for (rank, (first, second)) in tables.into_iter().enumerate() {
            for (round, table) in [first, second].into_iter().enumerate() {
                let expected: Vec<Vec<u8>> = (0..nranks).map(|r| blob(r, nranks, round)).collect();
                assert!(
                    table == expected,
                    "nranks {nranks}, rank {rank}, round {round}: wrong table"
                );
            }
        }
    }
}

#[test]
fn a_bootstrap_can_be_shared_between_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Bootstrap>();
    send_sync::<UniqueId>();
}

#[test]
fn allgather_refuses_a_blob_over_the_limit() {
    let id = new_id(GENEROUS);
    let boot = Bootstrap::init(&id, 0, 1, GENEROUS).expect("init");
    let huge = vec![1u8; MAX_BLOB_LEN + 1];
    assert!(matches!(boot.allgather(&huge), Err(Error::InvalidArgument(_))));
    assert_eq!(boot.allgather(b"still fine").expect("allgather"), [b"still fine"]);
}

#[test]
fn unique_id_text_round_trips() {
    let a = UniqueId::new().expect("root");
    let b = new_id(Duration::from_millis(200));
    assert_ne!(a.magic(), b.magic(), "two ids share a magic");
    for id in [a, b] {
        let text = id.to_string();
        assert!(text.starts_with("zc1-"), "{text}");
        assert_eq!(text.parse::<UniqueId>().expect("parses"), id);
        assert_eq!(format!("  {text}\n").parse::<UniqueId>().expect("parses trimmed"), id);
    }
    let v6: UniqueId = "zc1-0123456789ABCDEF@[::1]:4242".parse().expect("IPv6 id");
    assert_eq!(v6.magic(), 0x0123_4567_89ab_cdef);
    assert_eq!(v6.addr(), "[::1]:4242".parse::<SocketAddr>().expect("address"));
    assert_eq!(v6.to_string().parse::<UniqueId>().expect("round trip"), v6);
}

#[test]
fn malformed_unique_ids_are_invalid_arguments() {
    for text in [
        "",
        "zc1-",
        "zc1-0123456789abcdef",
        "zc2-0123456789abcdef@127.0.0.1:4242",
        "0123456789abcdef@127.0.0.1:4242",
        "zc1-0123456789abcdeg@127.0.0.1:4242",
        "zc1-+123456789abcdef@127.0.0.1:4242",
        "zc1-0123456789abcde@127.0.0.1:4242",
        "zc1-0123456789abcdef0@127.0.0.1:4242",
        "zc1-0123456789abcdef@127.0.0.1",
        "zc1-0123456789abcdef@127.0.0.1:0",
        "zc1-0123456789abcdef@127.0.0.1:70000",
        "zc1-0123456789abcdef@localhost:4242",
        "zc1-0123456789abcdef@127.0.0.1:4242@",
        "zc1-0123456789abcdef 127.0.0.1:4242",
    ] {
        match text.parse::<UniqueId>() {
            Err(Error::InvalidArgument(message)) => assert!(!message.is_empty()),
            other => panic!("{text:?}: expected InvalidArgument, got {other:?}"),
        }
    }
}

#[test]
fn bad_init_arguments_are_invalid_arguments() {
    let id = new_id(Duration::from_millis(500));
    for (rank, nranks, timeout) in [
        (3, 3, GENEROUS),
        (0, 0, GENEROUS),
        (7, 2, GENEROUS),
        (0, 1, Duration::ZERO),
    ] {
        match Bootstrap::init(&id, rank, nranks, timeout) {
            Err(Error::InvalidArgument(_)) => {}
            other => panic!("rank {rank} of {nranks}, timeout {timeout:?}: expected InvalidArgument, got {other:?}"),
        }
    }
    assert!(matches!(
        UniqueId::new_with_timeout(localhost(), Duration::ZERO),
        Err(Error::InvalidArgument(_))
    ));
}

/// Runs the ranks, expecting every one to fail with `Bootstrap`, well within their timeout.
fn assert_rendezvous_fails(ranks: &[(usize, usize)], what: &str) {
    let id = new_id(GENEROUS);
    let start = Instant::now();
    let results = on_ranks(&id, ranks, GENEROUS, |_, boot| boot.map(drop));
    for (i, result) in results.into_iter().enumerate() {
        match result {
            Err(Error::Bootstrap(message)) => assert!(!message.is_empty()),
            other => panic!("{what}, rank thread {i}: expected Bootstrap, got {other:?}"),
        }
    }
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{what}: took {:?}",
        start.elapsed()
    );
}

#[test]
fn ranks_that_disagree_on_nranks_fail() {
    assert_rendezvous_fails(&[(0, 2), (1, 3)], "nranks 2 and 3");
}

#[test]
fn a_duplicate_rank_fails() {
    assert_rendezvous_fails(&[(0, 2), (0, 2)], "rank 0 twice");
}

#[test]
fn a_missing_rank_ends_in_the_roots_timeout() {
    let id = new_id(Duration::from_secs(1));
    let start = Instant::now();
    let results = on_ranks(&id, &[(0, 3), (1, 3)], Duration::from_secs(2), |_, boot| boot.map(drop));
    for result in results {
        match result {
            Err(Error::Bootstrap(_) | Error::Timeout { .. }) => {}
            other => panic!("expected Bootstrap or Timeout, got {other:?}"),
        }
    }
    assert!(start.elapsed() < Duration::from_secs(4), "took {:?}", start.elapsed());
}

#[test]
fn a_missing_rank_ends_in_the_ranks_timeout() {
    let id = new_id(Duration::from_secs(3));
    let start = Instant::now();
    let timeout = Duration::from_millis(400);
    let results = on_ranks(&id, &[(0, 3), (2, 3)], timeout, |_, boot| boot.map(drop));
    for result in results {
        match result {
            Err(Error::Timeout { after, .. }) => assert_eq!(after, timeout),
            other => panic!("expected Timeout, got {other:?}"),
        }
    }
    assert!(start.elapsed() < Duration::from_secs(2), "took {:?}", start.elapsed());
}

#[test]
fn a_root_that_is_absent_or_silent_is_a_timeout() {
    // Held for the whole test: nothing else can listen on this port, on any local IP.
    let silent = TcpListener::bind(localhost()).expect("listener");
    let port = silent.local_addr().expect("addr").port();
    // On 127.0.0.2 the port is refused (retried until the time limit); on 127.0.0.1 the
    // listener takes the connection into its backlog but never answers.
    for (ip, waited_for) in [("127.0.0.2", "connecting"), ("127.0.0.1", "table")] {
        let id: UniqueId = format!("zc1-00000000000000ab@{ip}:{port}").parse().expect("id");
        let start = Instant::now();
        let timeout = Duration::from_millis(300);
        match Bootstrap::init(&id, 0, 2, timeout) {
            Err(Error::Timeout { what, after }) => {
                assert!(what.contains(waited_for), "{ip}: {what}");
                assert_eq!(after, timeout);
            }
            other => panic!("{ip}: expected Timeout, got {other:?}"),
        }
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "{ip}: took {:?}",
            start.elapsed()
        );
    }
}

#[test]
fn a_peer_that_goes_away_fails_the_allgather() {
    let id = new_id(GENEROUS);
    let timeout = Duration::from_secs(2);
    let start = Instant::now();
    let results = on_ranks(&id, &all_of(3), timeout, |rank, boot| {
        let boot = boot.expect("init");
        if rank == 2 {
            return None; // drops its connections
        }
        let first = boot.allgather(&blob(rank, 3, 0)).map(drop);
        let again = boot.allgather(b"again").map(drop);
        Some((first, again))
    });
    for (rank, result) in results.into_iter().enumerate().take(2) {
        let (first, again) = result.expect("ranks 0 and 1 report");
        match (rank, first) {
            // Rank 0 receives from rank 2, which closed.
            (0, Err(Error::Remote { rank: 2, .. })) => {}
            (1, Err(Error::Remote { .. } | Error::Timeout { .. })) => {}
            (_, other) => panic!("rank {rank}: expected Remote or Timeout, got {other:?}"),
        }
        assert!(matches!(again, Err(Error::Bootstrap(_))), "rank {rank}: {again:?}");
    }
    assert!(start.elapsed() < Duration::from_secs(4), "took {:?}", start.elapsed());
}

/// Deterministic noise (an LCG).
fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed;
    (0..len)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) as u8
        })
        .collect()
}

fn frame(tag: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = tag.to_le_bytes().to_vec();
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(payload);
    out
}

fn address(addr: SocketAddr) -> Vec<u8> {
    let SocketAddr::V4(v4) = addr else {
        panic!("IPv4 only here")
    };
    let mut out = vec![4];
    out.extend_from_slice(&v4.ip().octets());
    out.extend_from_slice(&v4.port().to_le_bytes());
    out
}

fn hello(magic: u64, rank: u32, nranks: u32, listen: SocketAddr) -> Vec<u8> {
    let mut payload = PROTOCOL_VERSION.to_le_bytes().to_vec();
    payload.extend_from_slice(&magic.to_le_bytes());
    payload.extend_from_slice(&rank.to_le_bytes());
    payload.extend_from_slice(&nranks.to_le_bytes());
    payload.extend_from_slice(&address(listen));
    frame(1, &payload)
}

fn table(addrs: &[SocketAddr]) -> Vec<u8> {
    let mut payload = (addrs.len() as u32).to_le_bytes().to_vec();
    addrs.iter().for_each(|&a| payload.extend_from_slice(&address(a)));
    frame(2, &payload)
}

/// Reads one frame (header + payload) off a stream, as raw bytes.
fn read_raw_frame(stream: &mut TcpStream) -> Vec<u8> {
    let mut header = [0u8; 8];
    stream.read_exact(&mut header).expect("frame header");
    let len = u32::from_le_bytes([header[4], header[5], header[6], header[7]]) as usize;
    let mut payload = vec![0u8; len];
    stream.read_exact(&mut payload).expect("frame payload");
    [&header[..], &payload].concat()
}

/// The listen address in a raw `HELLO` frame.
fn hello_listen(raw: &[u8]) -> SocketAddr {
    assert_eq!(raw[..4], 1u32.to_le_bytes(), "a HELLO");
    assert_eq!(raw[28], 4, "IPv4");
    let ip = [raw[29], raw[30], raw[31], raw[32]];
    SocketAddr::from((ip, u16::from_le_bytes([raw[33], raw[34]])))
}

#[test]
fn garbage_sent_to_the_root_does_not_break_the_ranks() {
    let id = new_id(GENEROUS);
    let connect = || TcpStream::connect(id.addr()).expect("connect to the root");
    // Kept open while the ranks join: noise, a huge length, silence, a truncated HELLO.
    let mut noisy = connect();
    noisy.write_all(&noise(1000, 1)).expect("write");
    let mut huge = connect();
    huge.write_all(&[1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]).expect("write");
    let silent = connect();
    let mut truncated = connect();
    truncated
        .write_all(&hello(id.magic(), 0, 3, localhost())[..20])
        .expect("write");
    // Closed at once.
    connect().write_all(&noise(64, 2)).expect("write");
    // A well-formed HELLO of another magic is refused with a FAIL.
    let mut stranger = connect();
    stranger
        .write_all(&hello(id.magic() ^ 1, 0, 3, localhost()))
        .expect("write");
    stranger.set_read_timeout(Some(GENEROUS)).expect("timeout");
    let refusal = read_raw_frame(&mut stranger);
    assert_eq!(refusal[..4], 3u32.to_le_bytes(), "a FAIL");
    // So is a rank of another magic.
    let other: UniqueId = format!("zc1-{:016x}@{}", id.magic() ^ 2, id.addr())
        .parse()
        .expect("id");
    match Bootstrap::init(&other, 0, 3, GENEROUS) {
        Err(Error::Bootstrap(message)) => assert!(message.contains("magic"), "{message}"),
        other => panic!("expected Bootstrap, got {other:?}"),
    }

    let tables = on_ranks(&id, &all_of(3), GENEROUS, |rank, boot| {
        boot.expect("init").allgather(&blob(rank, 3, 1)).expect("allgather")
    });
    let expected: Vec<Vec<u8>> = (0..3).map(|r| blob(r, 3, 1)).collect();
    assert!(tables.iter().all(|t| *t == expected));
    drop((noisy, huge, silent, truncated));
}

/// A fake root that answers rank 0's `HELLO` with `reply` and closes its side.
fn init_against_fake_root(reply: impl FnOnce(SocketAddr) -> Vec<u8> + Send) -> Result<Bootstrap, Error> {
    let root = TcpListener::bind(localhost()).expect("fake root");
    let id: UniqueId = format!("zc1-00000000000000ab@{}", root.local_addr().expect("addr"))
        .parse()
        .expect("id");
    thread::scope(|scope| {
        let rank = scope.spawn(|| Bootstrap::init(&id, 0, 2, Duration::from_secs(2)));
        let (mut stream, _) = root.accept().expect("accept");
        let listen = hello_listen(&read_raw_frame(&mut stream));
        stream.write_all(&reply(listen)).expect("reply");
        // The rank may have hung up already (then the shutdown fails, harmlessly).
        let _ = stream.shutdown(Shutdown::Write);
        let result = rank.join().expect("rank thread");
        drop(stream);
        result
    })
}

/// A fake root's reply, given the rank's listen address.
type Reply = Box<dyn FnOnce(SocketAddr) -> Vec<u8> + Send>;

#[test]
fn malformed_root_replies_are_bootstrap_errors() {
    let replies: Vec<(&str, Reply)> = vec![
        ("huge length", Box::new(|_| vec![2, 0, 0, 0, 0xff, 0xff, 0xff, 0xff])),
        ("unknown tag", Box::new(|_| frame(9, b"hi"))),
        ("noise", Box::new(|_| noise(500, 3))),
        ("table count lies", Box::new(|_| frame(2, &u32::MAX.to_le_bytes()))),
        ("table too short", Box::new(|listen| table(&[listen]))),
        (
            "table without this rank",
            Box::new(|_| table(&[localhost(), localhost()])),
        ),
        ("bad family", Box::new(|_| frame(2, &[1, 0, 0, 0, 5, 1, 2, 3, 4, 5, 6]))),
        (
            "stray bytes",
            Box::new(|listen| [table(&[listen, listen]), vec![0]].concat()),
        ),
        (
            "fail reason too long",
            Box::new(|_| frame(3, &[0xff, 0xff, 0xff, 0x7f, b'x'])),
        ),
        ("truncated", Box::new(|listen| table(&[listen, listen])[..12].to_vec())),
    ];
    for (what, reply) in replies {
        match init_against_fake_root(reply) {
            Err(Error::Bootstrap(_)) => {}
            other => panic!("{what}: expected Bootstrap, got {other:?}"),
        }
    }
    match init_against_fake_root(|_| frame(3, &[4, 0, 0, 0, b'n', b'o', b'p', b'e'])) {
        Err(Error::Bootstrap(message)) => assert!(message.contains("nope"), "{message}"),
        other => panic!("FAIL: expected Bootstrap, got {other:?}"),
    }
}

/// Real rank 0 of 2 whose rank 1 is this test, speaking the wire format by hand: the fake peer
/// sends `blob_frame` as its allgather step; returns rank 0's allgather result.
fn allgather_against_fake_peer(blob_frame: Vec<u8>) -> Result<Vec<Vec<u8>>, Error> {
    const MAGIC: u64 = 0xab;
    let root = TcpListener::bind(localhost()).expect("fake root");
    let peer = TcpListener::bind(localhost()).expect("fake peer");
    let peer_addr = peer.local_addr().expect("addr");
    let id: UniqueId = format!("zc1-{MAGIC:016x}@{}", root.local_addr().expect("addr"))
        .parse()
        .expect("id");
    thread::scope(|scope| {
        let rank = scope.spawn(|| {
            let boot = Bootstrap::init(&id, 0, 2, Duration::from_secs(2))?;
            boot.allgather(b"rank zero")
        });
        let (mut to_root, _) = root.accept().expect("accept rank 0 at the root");
        let listen = hello_listen(&read_raw_frame(&mut to_root));
        to_root.write_all(&table(&[listen, peer_addr])).expect("table");
        let (mut from_rank, _) = peer.accept().expect("accept rank 0 at the peer");
        let greeting = read_raw_frame(&mut from_rank);
        assert_eq!(greeting, hello(MAGIC, 0, 2, listen), "rank 0's HELLO to rank 1");
        let mut to_rank = TcpStream::connect(listen).expect("connect to rank 0");
        to_rank.write_all(&hello(MAGIC, 1, 2, peer_addr)).expect("hello");
        to_rank.write_all(&blob_frame).expect("blob");
        let _ = to_rank.shutdown(Shutdown::Write);
        let result = rank.join().expect("rank thread");
        drop((to_rank, from_rank));
        result
    })
}

fn blob_frame(origin: u32, data: &[u8]) -> Vec<u8> {
    frame(4, &[&origin.to_le_bytes()[..], data].concat())
}

#[test]
fn a_fake_peer_speaking_the_wire_format_is_understood() {
    let table = allgather_against_fake_peer(blob_frame(1, b"peer")).expect("allgather");
    assert_eq!(table, [&b"rank zero"[..], b"peer"]);
}

#[test]
fn malformed_peer_blobs_are_remote_errors() {
    let cases = [
        ("huge length", vec![4, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]),
        (
            "over the blob limit",
            [&4u32.to_le_bytes()[..], &(MAX_BLOB_LEN as u32 + 5).to_le_bytes()].concat(),
        ),
        ("wrong origin", blob_frame(0, b"peer")),
        ("unknown tag", frame(7, b"peer")),
        ("no origin", frame(4, &[1, 0])),
        ("noise", noise(300, 4)),
        ("truncated", blob_frame(1, b"peer")[..10].to_vec()),
    ];
    for (what, bytes) in cases {
        match allgather_against_fake_peer(bytes) {
            Err(Error::Remote { rank: 1, reason }) => assert!(!reason.is_empty()),
            other => panic!("{what}: expected Remote from rank 1, got {other:?}"),
        }
    }
}
