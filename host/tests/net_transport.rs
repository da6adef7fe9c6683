//! The NET transport over loopback: several "ranks" in one process, each with its own
//! `NetTransport`, and plain threads playing the kernels on both ends of every FIFO (wait for
//! credit, write a real frame, publish `tail`; wait for `tail`, validate the frame, compare it
//! bit for bit, release `head`).

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};
use zipcoll_device::codec::CodecId;
use zipcoll_device::dtype::DType;
use zipcoll_device::frame::{checksum, FrameError, FrameHeader, HEADER_BYTES};
use zipcoll_host::transport::net::{AbortWord, NetConfig, NetListener, NetTransport, RawFifo};
use zipcoll_host::Error;
use zipcoll_primitives::conn::NSLOTS;

const LOCALHOST: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
/// The longest a simulated kernel waits before the test fails (never reached when it passes).
const KERNEL_PATIENCE: Duration = Duration::from_secs(20);

// ---------------------------------------------------------------------------------------------
// FIFOs in plain host memory, and the kernels' side of the protocol
// ---------------------------------------------------------------------------------------------

/// One FIFO's memory: `NSLOTS` slots (16-byte aligned) and the two counters.
struct Fifo {
    slots: *mut u128,
    words: usize,
    slot_bytes: usize,
    head: AtomicU64,
    tail: AtomicU64,
}

// SAFETY: the slots are only accessed under the FIFO protocol (one writer at a time, handed over
// by the counters), the counters atomically.
unsafe impl Send for Fifo {}
// SAFETY: as above.
unsafe impl Sync for Fifo {}

impl Fifo {
    fn new(slot_bytes: usize) -> Arc<Fifo> {
        assert_eq!(slot_bytes % 16, 0);
        let words = NSLOTS as usize * slot_bytes / 16;
        let slots = Box::into_raw(vec![0u128; words].into_boxed_slice()) as *mut u128;
        Arc::new(Fifo {
            slots,
            words,
            slot_bytes,
            head: AtomicU64::new(0),
            tail: AtomicU64::new(0),
        })
    }

    /// The transport's view. The `Arc` that owns this FIFO outlives every transport it is
    /// given to (the tests drop transports first).
    fn raw(&self) -> RawFifo {
        // SAFETY: the memory lives as long as the Arc (see above); only one simulated kernel and
        // the transport access it, by the protocol; the counters are 8-byte aligned atomics.
        unsafe {
            RawFifo::new(
                self.slots.cast(),
                self.head.as_ptr(),
                self.tail.as_ptr(),
                self.slot_bytes as u64,
            )
        }
    }

    fn slot_ptr(&self, step: u64) -> *mut u8 {
        // SAFETY: `step % NSLOTS` slots of `slot_bytes` are inside the allocation.
        unsafe { self.slots.cast::<u8>().add((step % NSLOTS) as usize * self.slot_bytes) }
    }
}

impl Drop for Fifo {
    fn drop(&mut self) {
        // SAFETY: made by `Box::into_raw` of a boxed slice of `words` u128s in `new`.
        drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(self.slots, self.words)) });
    }
}

/// Waits (politely: two cores are shared by everything) until `ready()`; `Err` if `abort` is
/// raised or the patience runs out.
fn wait(abort: &AtomicU32, what: &str, ready: impl Fn() -> bool) -> Result<(), String> {
    let start = Instant::now();
    let mut polls = 0u32;
    while !ready() {
        if abort.load(Ordering::Acquire) != 0 {
            return Err(format!("aborted while waiting for {what}"));
        }
        if start.elapsed() > KERNEL_PATIENCE {
            return Err(format!("gave up waiting for {what}"));
        }
        polls += 1;
        if polls < 32 {
            std::hint::spin_loop();
        } else {
            thread::sleep(Duration::from_micros(50));
        }
    }
    Ok(())
}

/// Plays a sending kernel: for each step, waits for credit, writes `slot(step)` (at most a
/// slot) into the slot, publishes `tail`.
fn send_kernel(fifo: &Fifo, abort: &AtomicU32, steps: u64, slot: impl Fn(u64) -> Vec<u8>) -> Result<(), String> {
    for step in 0..steps {
        wait(abort, &format!("credit for step {step}"), || {
            step < fifo.head.load(Ordering::Acquire) + NSLOTS
        })?;
        let bytes = slot(step);
        assert!(bytes.len() <= fifo.slot_bytes);
        // SAFETY: the slot of `step` is free (credit acquired above) and ours until `tail`.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), fifo.slot_ptr(step), bytes.len()) };
        fifo.tail.store(step + 1, Ordering::Release);
    }
    Ok(())
}

/// Plays a receiving kernel: for each step, waits for `tail`, hands the whole slot to
/// `check(step, slot)`, releases `head`.
fn recv_kernel(
    fifo: &Fifo,
    abort: &AtomicU32,
    steps: u64,
    check: impl Fn(u64, &[u8]) -> Result<(), String>,
) -> Result<(), String> {
    for step in 0..steps {
        wait(abort, &format!("frame {step}"), || {
            fifo.tail.load(Ordering::Acquire) > step
        })?;
        // SAFETY: published (acquired above); the proxy writes it again only after `head`.
        let slot = unsafe { std::slice::from_raw_parts(fifo.slot_ptr(step), fifo.slot_bytes) };
        check(step, slot)?;
        fifo.head.store(step + 1, Ordering::Release);
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// frames
// ---------------------------------------------------------------------------------------------

fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// A RAW frame (1-byte elements) of `payload` pseudo-random bytes from `seed`.
fn raw_frame(seed: u64, payload: usize) -> Vec<u8> {
    let mut data = Vec::with_capacity(payload);
    let mut x = seed;
    while data.len() < payload {
        x = mix(x);
        data.extend_from_slice(&x.to_le_bytes()[..8.min(payload - data.len())]);
    }
    let h = FrameHeader::new(
        CodecId::Raw,
        DType::F8E4M3,
        0,
        0,
        payload as u32,
        payload as u32,
        checksum(&data),
    );
    [h.to_bytes().as_slice(), &data].concat()
}

/// Frame `step` of the stream `seed`: header-only, a full slot, or anything in between.
fn frame(seed: u64, step: u64, slot_bytes: usize) -> Vec<u8> {
    let max = slot_bytes - HEADER_BYTES;
    let r = mix(seed ^ step.wrapping_mul(0x2545_F491_4F6C_DD1D));
    let payload = match step % 6 {
        0 => 0,
        1 => max,
        2 => (r % 17) as usize,
        _ => (r % (max as u64 + 1)) as usize,
    };
    raw_frame(r, payload)
}

/// Checks a received slot against the frame expected: valid header, same bytes.
fn check_frame(expected: &[u8], slot: &[u8]) -> Result<(), String> {
    let h = FrameHeader::parse(slot).map_err(|e| format!("frame rejected: {e}"))?;
    let len = HEADER_BYTES + h.payload_bytes as usize;
    if slot[..len] != *expected {
        return Err(format!(
            "frame of {len} bytes differs from the one sent ({} bytes)",
            expected.len()
        ));
    }
    if checksum(&slot[HEADER_BYTES..len]) != h.raw_checksum {
        return Err("payload checksum".into());
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// ranks
// ---------------------------------------------------------------------------------------------

/// One rank: its transport (dropped before the FIFOs) and abort word.
struct Rank {
    net: NetTransport,
    abort: Arc<AtomicU32>,
    fifos: Vec<Arc<Fifo>>,
}

/// The default sockets (2 threads x 4), with pieces of at least 256 bytes, so that the small
/// frames of these tests are striped too.
fn config(timeout: Duration) -> NetConfig {
    NetConfig {
        timeout,
        min_piece_bytes: 256,
        ..NetConfig::default()
    }
}

/// `n` ranks over loopback, each connected to every other one.
fn connect_all(n: usize, config: &NetConfig, magic: u64) -> Vec<Rank> {
    let listeners: Vec<NetListener> = (0..n).map(|_| NetListener::bind(LOCALHOST).unwrap()).collect();
    let addrs: Vec<SocketAddr> = listeners.iter().map(|l| l.addr()).collect();
    thread::scope(|s| {
        let handles: Vec<_> = listeners
            .into_iter()
            .enumerate()
            .map(|(rank, listener)| {
                let peers: Vec<(usize, SocketAddr)> = (0..n).filter(|&r| r != rank).map(|r| (r, addrs[r])).collect();
                s.spawn(move || {
                    let abort = Arc::new(AtomicU32::new(0));
                    let word = AbortWord::new(Arc::clone(&abort));
                    let net = NetTransport::connect(rank, listener, &peers, magic, word, config)
                        .unwrap_or_else(|e| panic!("rank {rank} cannot connect: {e}"));
                    Rank {
                        net,
                        abort,
                        fifos: Vec::new(),
                    }
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// A stream of frames from one rank to another on one connection.
#[derive(Clone, Copy, Debug)]
struct Stream {
    from: usize,
    to: usize,
    conn: usize,
    frames: u64,
}

impl Stream {
    fn seed(&self) -> u64 {
        mix(((self.from as u64) << 40) ^ ((self.to as u64) << 20) ^ self.conn as u64)
    }
}

/// Registers every stream's two FIFOs (of `slot_bytes` slots); returns them (send, recv).
fn register(ranks: &mut [Rank], streams: &[Stream], slot_bytes: usize) -> Vec<(Arc<Fifo>, Arc<Fifo>)> {
    streams
        .iter()
        .map(|s| {
            let (tx, rx) = (Fifo::new(slot_bytes), Fifo::new(slot_bytes));
            ranks[s.from].net.add_send(s.to, s.conn, tx.raw()).unwrap();
            ranks[s.to].net.add_recv(s.from, s.conn, rx.raw()).unwrap();
            ranks[s.from].fifos.push(Arc::clone(&tx));
            ranks[s.to].fifos.push(Arc::clone(&rx));
            (tx, rx)
        })
        .collect()
}

/// Runs a sending and a receiving kernel per stream until every frame arrived and checked;
/// returns the frame bytes of each stream.
fn play(ranks: &[Rank], streams: &[Stream], fifos: &[(Arc<Fifo>, Arc<Fifo>)], slot_bytes: usize) -> Vec<u64> {
    thread::scope(|sc| {
        let mut handles = Vec::new();
        for (s, (tx, rx)) in streams.iter().zip(fifos) {
            let (seed, n) = (s.seed(), s.frames);
            let (a_tx, a_rx) = (&ranks[s.from].abort, &ranks[s.to].abort);
            handles.push(sc.spawn(move || send_kernel(tx, a_tx, n, |step| frame(seed, step, slot_bytes)).map(|_| 0)));
            handles.push(sc.spawn(move || {
                let total = AtomicU64::new(0);
                recv_kernel(rx, a_rx, n, |step, slot| {
                    let f = frame(seed, step, slot_bytes);
                    total.fetch_add(f.len() as u64, Ordering::Relaxed);
                    check_frame(&f, slot).map_err(|e| format!("{s:?} step {step}: {e}"))
                })
                .map(|_| total.into_inner())
            }));
        }
        let results: Vec<u64> = handles.into_iter().map(|h| h.join().unwrap().unwrap()).collect();
        settle(fifos);
        results.chunks(2).map(|c| c[1]).collect()
    })
}

/// Waits until the senders' proxies are done with every frame (`head == tail`): a frame can
/// reach its receiver before the last writer of its pieces has counted them.
fn settle(fifos: &[(Arc<Fifo>, Arc<Fifo>)]) {
    let done = || {
        fifos
            .iter()
            .all(|(tx, _)| tx.head.load(Ordering::Acquire) == tx.tail.load(Ordering::Acquire))
    };
    assert!(
        eventually(Duration::from_secs(5), done),
        "the senders' proxies did not finish"
    );
}

/// Waits (up to `limit`) for `cond`.
fn eventually(limit: Duration, cond: impl Fn() -> bool) -> bool {
    let start = Instant::now();
    while !cond() {
        if start.elapsed() > limit {
            return false;
        }
        thread::sleep(Duration::from_millis(2));
    }
    true
}

fn assert_healthy(ranks: &[Rank]) {
    for (r, rank) in ranks.iter().enumerate() {
        assert!(rank.net.error().is_none(), "rank {r}: {:?}", rank.net.error());
        assert_eq!(rank.abort.load(Ordering::Acquire), 0, "rank {r}'s abort word");
    }
}

// ---------------------------------------------------------------------------------------------
// tests
// ---------------------------------------------------------------------------------------------

#[test]
fn frames_wrap_the_slots_on_several_connections_and_sockets() {
    let slot = 4096;
    let mut ranks = connect_all(2, &config(Duration::from_secs(10)), 11);
    let mut streams: Vec<Stream> = (0..4)
        .map(|conn| Stream {
            from: 0,
            to: 1,
            conn,
            frames: 240,
        })
        .collect();
    streams.extend((0..2).map(|conn| Stream {
        from: 1,
        to: 0,
        conn,
        frames: 200,
    }));
    let fifos = register(&mut ranks, &streams, slot);
    for r in &mut ranks {
        r.net.start().unwrap();
    }
    let bytes = play(&ranks, &streams, &fifos, slot);
    assert_healthy(&ranks);
    let sent_0_to_1: u64 = bytes[..4].iter().sum();
    let sent_1_to_0: u64 = bytes[4..].iter().sum();
    let s0 = ranks[0].net.stats(1).unwrap();
    assert_eq!((s0.bytes_sent, s0.frames_sent), (sent_0_to_1, 4 * 240));
    assert_eq!((s0.bytes_received, s0.frames_received), (sent_1_to_0, 2 * 200));
    assert_eq!(ranks[1].net.bytes_received(0), sent_0_to_1);
    assert_eq!(ranks[1].net.bytes_sent(0), sent_1_to_0);
    // the FIFOs end at rest, as after any successful run
    for (tx, rx) in &fifos {
        assert_eq!(tx.head.load(Ordering::Acquire), tx.tail.load(Ordering::Acquire));
        assert_eq!(rx.head.load(Ordering::Acquire), rx.tail.load(Ordering::Acquire));
    }
    // one rank closes first, then the other: both clean
    for r in &mut ranks {
        r.net.shutdown().unwrap();
        r.net.shutdown().unwrap();
    }
    assert_healthy(&ranks);
}

#[test]
fn three_ranks_all_to_all() {
    let slot = 2048;
    let cfg = NetConfig {
        threads_per_peer: 1,
        sockets_per_thread: 3,
        ..config(Duration::from_secs(10))
    };
    let mut ranks = connect_all(3, &cfg, 12);
    let mut streams = Vec::new();
    for from in 0..3 {
        for to in (0..3).filter(|&t| t != from) {
            for conn in [0, 4] {
                streams.push(Stream {
                    from,
                    to,
                    conn,
                    frames: 120,
                });
            }
        }
    }
    let fifos = register(&mut ranks, &streams, slot);
    for r in &mut ranks {
        r.net.start().unwrap();
        assert_eq!(r.net.peers().len(), 2);
    }
    let bytes = play(&ranks, &streams, &fifos, slot);
    for (s, b) in streams.iter().zip(&bytes) {
        assert!(*b > 0, "{s:?}");
    }
    for r in 0..3 {
        for p in (0..3).filter(|&p| p != r) {
            let sent: u64 = streams
                .iter()
                .zip(&bytes)
                .filter(|(s, _)| s.from == r && s.to == p)
                .map(|(_, b)| b)
                .sum();
            assert_eq!(ranks[r].net.bytes_sent(p), sent);
            assert_eq!(ranks[p].net.bytes_received(r), sent);
        }
    }
    assert_healthy(&ranks);
    // every rank closes at once
    thread::scope(|s| {
        for r in &mut ranks {
            s.spawn(move || r.net.shutdown().unwrap());
        }
    });
    assert_healthy(&ranks);
}

#[test]
fn the_rate_limit_holds() {
    let slot = 64 << 10;
    let rate = 20_000_000u64;
    let cfg = NetConfig {
        rate_limit_bytes_per_s: Some(rate),
        ..config(Duration::from_secs(10))
    };
    let mut ranks = connect_all(2, &cfg, 13);
    // two connections on two sockets share the peer's bucket; every frame fills its slot
    let streams: Vec<Stream> = (0..2)
        .map(|conn| Stream {
            from: 0,
            to: 1,
            conn,
            frames: 32,
        })
        .collect();
    let fifos = register(&mut ranks, &streams, slot);
    for r in &mut ranks {
        r.net.start().unwrap();
    }
    let full = |seed: u64, step: u64| raw_frame(mix(seed ^ step), slot - HEADER_BYTES);
    let start = Instant::now();
    thread::scope(|sc| {
        for (s, (tx, rx)) in streams.iter().zip(&fifos) {
            let seed = s.seed();
            let (a0, a1) = (&ranks[0].abort, &ranks[1].abort);
            sc.spawn(move || send_kernel(tx, a0, s.frames, |step| full(seed, step)).unwrap());
            sc.spawn(move || recv_kernel(rx, a1, s.frames, |step, got| check_frame(&full(seed, step), got)).unwrap());
        }
    });
    let took = start.elapsed();
    settle(&fifos);
    let bytes = 64 * slot as u64;
    assert_eq!(ranks[0].net.bytes_sent(1), bytes);
    // 4 MiB at 20 MB/s, less the bucket's 64 KiB burst: at least 0.2 s
    assert!(took >= Duration::from_millis(180), "4 MiB at 20 MB/s took {took:?}");
    assert_healthy(&ranks);
}

#[test]
fn a_peer_that_drops_mid_stream_fails_the_other_side() {
    let slot = 1024;
    let timeout = Duration::from_secs(2);
    let mut ranks = connect_all(2, &config(timeout), 14);
    let stream = Stream {
        from: 0,
        to: 1,
        conn: 1,
        frames: 100_000,
    };
    let fifos = register(&mut ranks, &[stream], slot);
    for r in &mut ranks {
        r.net.start().unwrap();
    }
    let (tx, rx) = &fifos[0];
    let seed = stream.seed();
    let abort0 = Arc::clone(&ranks[0].abort);
    let abort1 = Arc::clone(&ranks[1].abort);
    let sender = {
        let tx = Arc::clone(tx);
        let abort0 = Arc::clone(&abort0);
        thread::spawn(move || send_kernel(&tx, &abort0, stream.frames, |step| frame(seed, step, slot)))
    };
    // rank 1 takes 20 frames, then its transport goes away in the middle of the stream
    recv_kernel(rx, &abort1, 20, |step, got| check_frame(&frame(seed, step, slot), got)).unwrap();
    let rank1 = ranks.pop().unwrap();
    drop(rank1.net);
    assert!(
        eventually(timeout + Duration::from_secs(5), || abort0.load(Ordering::Acquire) != 0),
        "rank 0's abort word was not raised"
    );
    match ranks[0].net.error() {
        Some(Error::Remote { rank: 1, reason }) => assert!(!reason.is_empty()),
        other => panic!("rank 0 reports {other:?}"),
    }
    // the sending kernel saw the abort word and stopped
    let sent = sender.join().unwrap();
    assert!(matches!(&sent, Err(e) if e.contains("aborted")), "{sent:?}");
    assert!(matches!(ranks[0].net.shutdown(), Err(Error::Remote { rank: 1, .. })));
}

#[test]
fn stray_connections_are_rejected_without_harm() {
    let slot = 1024;
    let magic = 15;
    let listeners: Vec<NetListener> = (0..2).map(|_| NetListener::bind(LOCALHOST).unwrap()).collect();
    let addrs: Vec<SocketAddr> = listeners.iter().map(|l| l.addr()).collect();
    // before the real peer dials rank 1: garbage, a handshake of another communicator, one that
    // says nothing, one that stops half-way
    let mut garbage = TcpStream::connect(addrs[1]).unwrap();
    garbage.write_all(b"GET / HTTP/1.1\r\nHost: zipcoll\r\n\r\n").unwrap();
    let mut other_comm = TcpStream::connect(addrs[1]).unwrap();
    other_comm.write_all(&hello(0, 1, 0, 8, 256, magic + 1)).unwrap();
    let silent = TcpStream::connect(addrs[1]).unwrap();
    let mut half = TcpStream::connect(addrs[1]).unwrap();
    half.write_all(&hello(0, 1, 0, 8, 256, magic)[..10]).unwrap();
    let mut ranks: Vec<Rank> = thread::scope(|s| {
        let handles: Vec<_> = listeners
            .into_iter()
            .enumerate()
            .map(|(rank, listener)| {
                let peer = 1 - rank;
                let peers = [(peer, addrs[peer])];
                s.spawn(move || {
                    let abort = Arc::new(AtomicU32::new(0));
                    let word = AbortWord::new(Arc::clone(&abort));
                    let cfg = config(Duration::from_secs(10));
                    let net = NetTransport::connect(rank, listener, &peers, magic, word, &cfg).unwrap();
                    Rank {
                        net,
                        abort,
                        fifos: Vec::new(),
                    }
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    // the strays were closed (or are ignored) and the real sockets carry frames
    for s in [&mut garbage, &mut other_comm] {
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut b = [0u8; 64];
        assert!(matches!(s.read(&mut b), Ok(0) | Err(_)), "a stray got an answer");
    }
    drop((silent, half));
    let streams = [
        Stream {
            from: 0,
            to: 1,
            conn: 0,
            frames: 50,
        },
        Stream {
            from: 1,
            to: 0,
            conn: 1,
            frames: 50,
        },
    ];
    let fifos = register(&mut ranks, &streams, slot);
    for r in &mut ranks {
        r.net.start().unwrap();
    }
    play(&ranks, &streams, &fifos, slot);
    assert_healthy(&ranks);
    for r in &mut ranks {
        r.net.shutdown().unwrap();
    }
}

#[test]
fn a_corrupt_header_arrives_as_the_whole_slot() {
    let slot = 512;
    let mut ranks = connect_all(2, &config(Duration::from_secs(10)), 16);
    let stream = Stream {
        from: 0,
        to: 1,
        conn: 0,
        frames: 40,
    };
    let fifos = register(&mut ranks, &[stream], slot);
    for r in &mut ranks {
        r.net.start().unwrap();
    }
    // what the sender puts in the slot of each step: every 4th a damaged frame that fills the
    // whole slot with recognizable bytes
    let content = |step: u64| -> Vec<u8> {
        let good = frame(7, step, slot);
        match step % 8 {
            // a flipped header bit: the header checksum fails
            3 => {
                let mut b = good;
                b.resize(slot, 0xA5);
                b[9] ^= 0x10;
                b
            }
            // a valid header that claims more payload than the slot holds
            7 => {
                let h = FrameHeader::new(CodecId::Raw, DType::F8E4M3, 0, 0, 4 * slot as u32, 4 * slot as u32, 0);
                let mut b = h.to_bytes().to_vec();
                b.resize(slot, 0x5A);
                b
            }
            _ => good,
        }
    };
    let (tx, rx) = &fifos[0];
    let (a0, a1) = (&ranks[0].abort, &ranks[1].abort);
    let expected_bytes: u64 = (0..stream.frames)
        .map(|s| {
            if s % 4 == 3 {
                slot as u64
            } else {
                content(s).len() as u64
            }
        })
        .sum();
    thread::scope(|sc| {
        sc.spawn(|| send_kernel(tx, a0, stream.frames, content).unwrap());
        sc.spawn(|| {
            recv_kernel(rx, a1, stream.frames, |step, got| {
                let sent = content(step);
                if step % 4 == 3 {
                    // the receiver's validation rejects it, and every byte of the slot came over
                    match FrameHeader::parse(got) {
                        Err(FrameError::HeaderChecksum { .. }) if step % 8 == 3 => {}
                        Err(FrameError::Truncated { .. }) if step % 8 == 7 => {}
                        other => return Err(format!("step {step}: parse gave {other:?}")),
                    }
                    if got != sent.as_slice() {
                        return Err(format!("step {step}: the damaged slot did not arrive whole"));
                    }
                    Ok(())
                } else {
                    check_frame(&sent, got)
                }
            })
            .unwrap()
        });
    });
    assert_eq!(ranks[1].net.bytes_received(0), expected_bytes);
    assert_healthy(&ranks);
}

#[test]
fn idle_is_no_timeout_but_a_receiver_that_never_frees_a_slot_is() {
    let slot = 256;
    let timeout = Duration::from_millis(300);
    let mut ranks = connect_all(2, &config(timeout), 17);
    let stream = Stream {
        from: 0,
        to: 1,
        conn: 0,
        frames: 3 * NSLOTS,
    };
    let fifos = register(&mut ranks, &[stream], slot);
    for r in &mut ranks {
        r.net.start().unwrap();
    }
    // nothing to send for several timeouts: no failure
    thread::sleep(3 * timeout);
    assert_healthy(&ranks);
    // rank 0's kernel sends, rank 1's kernel never consumes: after NSLOTS frames in rank 1's
    // FIFO (and NSLOTS more in rank 0's) the proxy waits for credit, then times out
    let (tx, _rx) = &fifos[0];
    let a0 = Arc::clone(&ranks[0].abort);
    let sent = send_kernel(tx, &a0, stream.frames, |step| frame(3, step, slot));
    assert!(matches!(&sent, Err(e) if e.contains("aborted")), "{sent:?}");
    match ranks[0].net.error() {
        Some(Error::Timeout { after, what }) => {
            assert_eq!(after, timeout);
            assert!(what.contains("rank 1"), "{what}");
        }
        other => panic!("rank 0 reports {other:?}"),
    }
    // rank 1 hears why
    assert!(eventually(Duration::from_secs(5), || ranks[1]
        .abort
        .load(Ordering::Acquire)
        != 0));
    match ranks[1].net.error() {
        Some(Error::Remote { rank: 0, reason }) => assert!(reason.contains("aborted"), "{reason}"),
        other => panic!("rank 1 reports {other:?}"),
    }
}

#[test]
fn an_abort_raised_on_one_rank_reaches_the_others() {
    let mut ranks = connect_all(3, &config(Duration::from_secs(10)), 18);
    for r in &mut ranks {
        r.net.start().unwrap();
    }
    // a kernel of rank 2 fails and raises its abort word
    ranks[2].abort.store(1, Ordering::Release);
    for (r, rank) in ranks[..2].iter().enumerate() {
        assert!(eventually(Duration::from_secs(5), || rank
            .abort
            .load(Ordering::Acquire)
            != 0));
        match rank.net.error() {
            Some(Error::Remote { rank, .. }) => assert!(rank != r, "rank {r} blames itself"),
            other => panic!("rank {r} reports {other:?}"),
        }
    }
    assert!(eventually(Duration::from_secs(5), || ranks[2].net.error().is_some()));
    assert!(matches!(ranks[2].net.error(), Some(Error::Aborted)));
}

// --- a hand-made peer speaking the documented wire format ----------------------------------

/// A handshake HELLO record (wire version 2).
fn hello(from: u32, to: u32, socket: u32, sockets: u32, min_piece: u32, magic: u64) -> [u8; 40] {
    let mut b = [0u8; 40];
    b[0..4].copy_from_slice(b"ZCNT");
    b[4..6].copy_from_slice(&2u16.to_le_bytes());
    b[6..8].copy_from_slice(&1u16.to_le_bytes());
    b[8..16].copy_from_slice(&magic.to_le_bytes());
    b[16..20].copy_from_slice(&from.to_le_bytes());
    b[20..24].copy_from_slice(&to.to_le_bytes());
    b[24..28].copy_from_slice(&socket.to_le_bytes());
    b[28..32].copy_from_slice(&sockets.to_le_bytes());
    b[32..36].copy_from_slice(&min_piece.to_le_bytes());
    b
}

const DATA: u32 = 1;
const CREDIT: u32 = 2;
const CLOSE: u32 = 3;

/// A message header: kind, connection, step, body bytes, and for DATA the piece's offset and
/// the frame's length.
fn message(kind: u32, conn: u32, step: u64, len: u32, offset: u32, total: u32) -> [u8; 32] {
    let mut b = [0u8; 32];
    b[0..4].copy_from_slice(&kind.to_le_bytes());
    b[4..8].copy_from_slice(&conn.to_le_bytes());
    b[8..16].copy_from_slice(&step.to_le_bytes());
    b[16..20].copy_from_slice(&len.to_le_bytes());
    b[20..24].copy_from_slice(&offset.to_le_bytes());
    b[24..28].copy_from_slice(&total.to_le_bytes());
    b
}

/// A DATA message: bytes `offset..offset + len` of `frame`, for `step` of `conn`.
fn piece(conn: u32, step: u64, frame: &[u8], offset: usize, len: usize) -> Vec<u8> {
    let h = message(DATA, conn, step, len as u32, offset as u32, frame.len() as u32);
    [&h[..], &frame[offset..offset + len]].concat()
}

/// A message read off `s`: its header fields (kind, conn, step, len, offset, total) and body.
fn read_message(s: &mut TcpStream) -> ([u64; 6], Vec<u8>) {
    let mut h = [0u8; 32];
    s.read_exact(&mut h).unwrap();
    let u32_at = |o: usize| u64::from(u32::from_le_bytes(h[o..o + 4].try_into().unwrap()));
    let fields = [
        u32_at(0),
        u32_at(4),
        u64::from_le_bytes(h[8..16].try_into().unwrap()),
        u32_at(16),
        u32_at(20),
        u32_at(24),
    ];
    let mut body = vec![0u8; fields[3] as usize];
    s.read_exact(&mut body).unwrap();
    (fields, body)
}

/// Rank 0 played by hand: its data sockets and its control socket to the real rank 1.
struct FakePeer {
    data: Vec<TcpStream>,
    control: TcpStream,
}

/// Rank 1 as a real transport (`cfg`, started) with a receive and a send connection 0 of
/// `slot`-byte slots to rank 0 (its `fifos[0]` and `fifos[1]`), and rank 0 played by hand:
/// every socket opened with a HELLO and its ACK checked.
fn real_rank_and_fake_peer_with(magic: u64, cfg: NetConfig, slot: usize) -> (Rank, FakePeer) {
    let listener = NetListener::bind(LOCALHOST).unwrap();
    let addr = listener.addr();
    let (sockets, min_piece) = (cfg.sockets_per_peer() as u32, cfg.min_piece_bytes as u32);
    let real = thread::spawn(move || {
        let abort = Arc::new(AtomicU32::new(0));
        let word = AbortWord::new(Arc::clone(&abort));
        // rank 0 dials, so its address is never used
        let net = NetTransport::connect(1, listener, &[(0, addr)], magic, word, &cfg).unwrap();
        Rank {
            net,
            abort,
            fifos: Vec::new(),
        }
    });
    // every socket connects before any says HELLO: all of them wait on the acceptor at once
    let mut streams: Vec<TcpStream> = (0..=sockets).map(|_| TcpStream::connect(addr).unwrap()).collect();
    thread::sleep(Duration::from_millis(50));
    let mut streams: Vec<TcpStream> = (0..=sockets)
        .zip(streams.drain(..))
        .map(|(socket, mut s)| {
            s.write_all(&hello(0, 1, socket, sockets, min_piece, magic)).unwrap();
            let mut ack = [0u8; 40];
            s.read_exact(&mut ack).unwrap();
            assert_eq!(&ack[0..4], b"ZCNT");
            assert_eq!(u16::from_le_bytes([ack[6], ack[7]]), 2, "an ACK");
            s
        })
        .collect();
    let control = streams.pop().unwrap();
    let mut rank = real.join().unwrap();
    let (rx, tx) = (Fifo::new(slot), Fifo::new(slot));
    rank.net.add_recv(0, 0, rx.raw()).unwrap();
    rank.net.add_send(0, 0, tx.raw()).unwrap();
    rank.fifos.extend([rx, tx]);
    rank.net.start().unwrap();
    (rank, FakePeer { data: streams, control })
}

/// As [`real_rank_and_fake_peer_with`] with one data socket and 256-byte slots; returns rank
/// 0's data socket too.
fn real_rank_and_fake_peer(magic: u64, timeout: Duration) -> (Rank, FakePeer) {
    let cfg = NetConfig {
        threads_per_peer: 1,
        sockets_per_thread: 1,
        ..config(timeout)
    };
    real_rank_and_fake_peer_with(magic, cfg, 256)
}

#[test]
fn a_peer_that_dies_without_a_word_is_a_remote_error() {
    let (rank, mut fake) = real_rank_and_fake_peer(19, Duration::from_secs(2));
    // half a message header, then the process "dies"
    fake.data[0].write_all(&message(DATA, 0, 0, 64, 0, 64)[..10]).unwrap();
    drop(fake);
    assert!(eventually(Duration::from_secs(5), || rank
        .abort
        .load(Ordering::Acquire)
        != 0));
    assert!(
        matches!(rank.net.error(), Some(Error::Remote { rank: 0, .. })),
        "{:?}",
        rank.net.error()
    );
}

/// A peer that sends more frames than it has credit for (nobody here consumes them): the
/// reader waits for the slot of step NSLOTS at most a timeout, then fails the transport with a
/// protocol error that says so, instead of waiting forever.
#[test]
fn a_peer_that_sends_without_credit_fails_within_the_timeout() {
    let timeout = Duration::from_secs(1);
    let (rank, mut fake) = real_rank_and_fake_peer(21, timeout);
    let body = raw_frame(2, 10);
    let start = Instant::now();
    for step in 0..=NSLOTS {
        fake.data[0].write_all(&piece(0, step, &body, 0, body.len())).unwrap();
    }
    assert!(
        eventually(timeout + Duration::from_secs(5), || rank.abort.load(Ordering::Acquire)
            != 0),
        "no failure {:?} after the frame without credit",
        start.elapsed()
    );
    assert!(
        start.elapsed() >= timeout,
        "failed before the timeout: {:?}",
        start.elapsed()
    );
    match rank.net.error() {
        Some(Error::Remote { rank: 0, reason }) => {
            assert!(reason.contains("without credit"), "{reason}");
            eprintln!("after {:?}: {reason}", start.elapsed());
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_protocol_violation_fails_the_transport_and_says_why_to_the_peer() {
    let (rank, mut fake) = real_rank_and_fake_peer(20, Duration::from_secs(5));
    // step NSLOTS where steps 0..NSLOTS are allowed
    let body = raw_frame(1, 10);
    fake.data[0].write_all(&piece(0, NSLOTS, &body, 0, body.len())).unwrap();
    assert!(eventually(Duration::from_secs(5), || rank
        .abort
        .load(Ordering::Acquire)
        != 0));
    match rank.net.error() {
        Some(Error::Remote { rank: 0, reason }) => assert!(reason.contains("protocol"), "{reason}"),
        other => panic!("{other:?}"),
    }
    // the transport told the peer on every socket: an ABORT message with a reason
    for s in fake.data.iter_mut().chain([&mut fake.control]) {
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let ([kind, ..], reason) = read_message(s);
        assert_eq!(kind, 4, "ABORT");
        assert!(String::from_utf8_lossy(&reason).contains("step 8"));
    }
}

#[test]
fn configuration_mismatches_and_misuse_are_errors() {
    // different socket counts or piece sizes: both ranks fail the setup
    let differ: [fn(usize) -> NetConfig; 2] = [
        |rank| NetConfig {
            threads_per_peer: 1 + rank,
            ..config(Duration::from_secs(3))
        },
        |rank| NetConfig {
            min_piece_bytes: 256 << rank,
            ..config(Duration::from_secs(3))
        },
    ];
    for cfg_of in differ {
        let listeners: Vec<NetListener> = (0..2).map(|_| NetListener::bind(LOCALHOST).unwrap()).collect();
        let addrs: Vec<SocketAddr> = listeners.iter().map(|l| l.addr()).collect();
        let results: Vec<_> = thread::scope(|s| {
            let handles: Vec<_> = listeners
                .into_iter()
                .enumerate()
                .map(|(rank, listener)| {
                    let peer = 1 - rank;
                    let peers = [(peer, addrs[peer])];
                    s.spawn(move || {
                        let word = AbortWord::new(Arc::new(AtomicU32::new(0)));
                        NetTransport::connect(rank, listener, &peers, 21, word, &cfg_of(rank)).map(|_| ())
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        // The rank that sees the mismatch says so (Remote); its dialing peer may instead be
        // waiting to connect a socket the other side will never accept, and then fails at its
        // timeout (seen once under a loaded CI run: "to accept NET socket 6"). Both are typed
        // errors within the timeout; at least one rank names the mismatch.
        for (rank, r) in results.iter().enumerate() {
            assert!(
                matches!(r, Err(Error::Remote { .. } | Error::Timeout { .. })),
                "rank {rank}: {r:?}"
            );
        }
        assert!(
            results.iter().any(|r| matches!(r, Err(Error::Remote { .. }))),
            "no rank named the mismatch: {results:?}"
        );
    }

    // misuse of a connected transport
    let mut ranks = connect_all(2, &config(Duration::from_secs(10)), 22);
    let fifo = Fifo::new(256);
    let invalid = |r: zipcoll_host::Result<()>| matches!(r, Err(Error::InvalidArgument(_)));
    assert!(invalid(ranks[0].net.add_send(5, 0, fifo.raw())), "an unknown peer");
    ranks[0].net.add_send(1, 0, fifo.raw()).unwrap();
    assert!(invalid(ranks[0].net.add_send(1, 0, fifo.raw())), "a duplicate");
    // SAFETY: never used: rejected by the checks (null pointers).
    let null = unsafe { RawFifo::new(std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut(), 256) };
    assert!(invalid(ranks[0].net.add_recv(1, 1, null)), "null pointers");
    ranks[0].net.start().unwrap();
    assert!(invalid(ranks[0].net.start()), "a second start");
    assert!(
        invalid(ranks[0].net.add_recv(1, 2, Fifo::new(256).raw())),
        "after start"
    );
    // a started transport with an idle peer, and one never started: both close promptly
    ranks[1].fifos.push(fifo);
    let start = Instant::now();
    drop(ranks);
    assert!(start.elapsed() < Duration::from_secs(10));

    let bad = NetConfig {
        threads_per_peer: 0,
        ..NetConfig::default()
    };
    let listener = NetListener::bind(LOCALHOST).unwrap();
    let word = AbortWord::new(Arc::new(AtomicU32::new(0)));
    assert!(matches!(
        NetTransport::connect(0, listener, &[], 1, word, &bad),
        Err(Error::InvalidArgument(_))
    ));
}

// --- striping, reassembly and the control socket, against a hand-made peer ------------------

/// 2 threads x 2 data sockets, pieces of at least 4 KiB, 64 KiB slots: a full frame is 4
/// pieces of 16 KiB.
fn striped(timeout: Duration) -> NetConfig {
    NetConfig {
        threads_per_peer: 2,
        sockets_per_thread: 2,
        min_piece_bytes: 4096,
        ..config(timeout)
    }
}

const STRIPED_SLOT: usize = 64 << 10;

/// A full 64 KiB frame of step `step`.
fn full_frame(step: u64) -> Vec<u8> {
    raw_frame(mix(0xF00D ^ step), STRIPED_SLOT - HEADER_BYTES)
}

/// Waits until the real rank failed with a NET protocol error that mentions `what`.
fn assert_protocol_error(rank: &Rank, what: &str) {
    assert!(
        eventually(Duration::from_secs(5), || rank.abort.load(Ordering::Acquire) != 0),
        "no failure for {what:?}"
    );
    match rank.net.error() {
        Some(Error::Remote { rank: 0, reason }) => {
            assert!(
                reason.contains("protocol") && reason.contains(what),
                "{what:?}: {reason}"
            )
        }
        other => panic!("{what:?}: {other:?}"),
    }
}

/// The real rank sends: every frame arrives as pieces of the documented size, piece `i` of
/// step `s` on data socket `(s + i) % 4` (connection 0), each a header and its body.
#[test]
fn frames_are_cut_into_pieces_over_every_socket_of_the_peer() {
    let (rank, mut fake) = real_rank_and_fake_peer_with(30, striped(Duration::from_secs(10)), STRIPED_SLOT);
    let tx = &rank.fifos[1];
    let frames = 3u64;
    send_kernel(tx, &rank.abort, frames, full_frame).unwrap();
    let mut got: Vec<Vec<u8>> = (0..frames).map(|_| vec![0u8; STRIPED_SLOT]).collect();
    let mut pieces = vec![0u32; frames as usize];
    for (socket, s) in fake.data.iter_mut().enumerate() {
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        // one piece of each frame on each socket
        for _ in 0..frames {
            let ([kind, conn, step, len, offset, total], body) = read_message(s);
            assert_eq!(
                (kind, conn, total, len),
                (1, 0, STRIPED_SLOT as u64, 16384),
                "socket {socket}"
            );
            assert_eq!(offset % 16384, 0);
            assert_eq!(
                (step + offset / 16384) % 4,
                socket as u64,
                "piece {offset} of step {step}"
            );
            let (o, f) = (offset as usize, &mut got[step as usize]);
            f[o..o + body.len()].copy_from_slice(&body);
            pieces[step as usize] += 1;
        }
    }
    assert_eq!(pieces, [4, 4, 4]);
    for (step, f) in got.iter().enumerate() {
        assert_eq!(*f, full_frame(step as u64), "frame {step} put back together");
    }
    // every piece written: the kernel got its slots back
    assert!(eventually(Duration::from_secs(5), || tx.head.load(Ordering::Acquire) == frames));
    let stats = rank.net.stats(0).unwrap();
    assert_eq!(
        (stats.frames_sent, stats.bytes_sent),
        (frames, frames * STRIPED_SLOT as u64)
    );
    assert_healthy(&[rank]);
}

/// A frame small enough to be one piece is written by one writer thread; the peer may take it
/// and close before the other thread has stepped past it. That thread has nothing of the frame
/// to send, so the close is clean (seen failing as "closed its NET transport while frames ...
/// were pending" on a CI run of `finalize`). Several rounds, each after the writers have gone
/// idle (sleeping), as the race needs the pieceless thread to be late.
#[test]
fn a_peer_may_close_once_it_has_every_piece() {
    let small = raw_frame(7, 100);
    for round in 0..12u64 {
        let (mut rank, mut fake) =
            real_rank_and_fake_peer_with(60 + round, striped(Duration::from_secs(10)), STRIPED_SLOT);
        fake.control.write_all(&message(CREDIT, 0, NSLOTS, 0, 0, 0)).unwrap();
        thread::sleep(Duration::from_millis(20));
        let tx = &rank.fifos[1];
        send_kernel(tx, &rank.abort, 1, |_| small.clone()).unwrap();
        // step 0's one piece goes on data socket (0 + 0 + 0) % 4
        fake.data[0].set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let ([kind, _, step, len, ..], body) = read_message(&mut fake.data[0]);
        assert_eq!((kind, step, len), (1, 0, small.len() as u64), "round {round}");
        assert_eq!(body, small);
        for s in fake.data.iter_mut().chain([&mut fake.control]) {
            s.write_all(&message(CLOSE, 0, 0, 0, 0, 0)).unwrap();
        }
        assert!(
            eventually(Duration::from_secs(5), || tx.head.load(Ordering::Acquire) == 1),
            "round {round}: the writers did not pass the frame"
        );
        assert_healthy(std::slice::from_ref(&rank));
        rank.net.shutdown().unwrap_or_else(|e| panic!("round {round}: {e}"));
    }
}

/// The real rank receives pieces in any order over any socket, steps interleaved: `tail`
/// moves only when every byte of a frame and of the frames before it is in.
#[test]
fn pieces_in_any_order_on_any_socket_are_put_back_together() {
    let (rank, mut fake) = real_rank_and_fake_peer_with(31, striped(Duration::from_secs(10)), STRIPED_SLOT);
    let rx = &rank.fifos[0];
    let (f0, f1) = (full_frame(0), full_frame(1));
    let p = 16384;
    // step 1 whole, backwards, before step 0; step 0 but its piece 0; all on mixed sockets
    for (i, socket) in [(3, 0), (2, 1), (1, 2), (0, 3)] {
        fake.data[socket].write_all(&piece(0, 1, &f1, i * p, p)).unwrap();
    }
    for (i, socket) in [(2, 1), (3, 1), (1, 0)] {
        fake.data[socket].write_all(&piece(0, 0, &f0, i * p, p)).unwrap();
    }
    assert!(eventually(Duration::from_secs(5), || rank.net.bytes_received(0) == 7 * p as u64));
    thread::sleep(Duration::from_millis(50));
    assert_eq!(
        rx.tail.load(Ordering::Acquire),
        0,
        "published before the frame was whole"
    );
    fake.data[2].write_all(&piece(0, 0, &f0, 0, p)).unwrap();
    assert!(eventually(Duration::from_secs(5), || rx.tail.load(Ordering::Acquire) == 2));
    recv_kernel(rx, &rank.abort, 2, |step, slot| {
        check_frame(if step == 0 { &f0 } else { &f1 }, slot)
    })
    .unwrap();
    let stats = rank.net.stats(0).unwrap();
    assert_eq!(
        (stats.frames_received, stats.bytes_received),
        (2, 2 * STRIPED_SLOT as u64)
    );
    assert_healthy(&[rank]);
}

/// Every malformed piece fails the transport with a protocol error that says what is wrong,
/// before anything is written outside its place.
#[test]
fn malformed_pieces_are_protocol_errors() {
    let f = full_frame(0);
    let p = 16384;
    let big = raw_frame(5, 2 * STRIPED_SLOT - HEADER_BYTES);
    let half = raw_frame(6, STRIPED_SLOT / 2 - HEADER_BYTES);
    type Case = (&'static str, Vec<Vec<u8>>);
    let cases: Vec<Case> = vec![
        ("not received from this peer", vec![piece(7, 0, &f, 0, p)]),
        ("offset 100", vec![piece(0, 0, &f, 100, p)]),
        ("a piece of 1000 bytes", vec![piece(0, 0, &f, 0, 1000)]),
        ("for 65536-byte slots", vec![piece(0, 0, &big, 0, 32768)]),
        (
            "step 8 of connection 0, expected 0..8",
            vec![piece(0, NSLOTS, &f, 0, p)],
        ),
        ("twice", vec![piece(0, 0, &f, p, p), piece(0, 0, &f, p, p)]),
        (
            "65536 and 32768 bytes",
            vec![piece(0, 0, &f, 0, p), piece(0, 0, &half, 8192, 8192)],
        ),
        ("a DATA piece of 16384 bytes at offset 65536 of a 65536-byte frame", {
            let mut m = piece(0, 0, &f, 0, p);
            m[20..24].copy_from_slice(&65536u32.to_le_bytes());
            vec![m]
        }),
        (
            "Credit message on a Data socket",
            vec![message(CREDIT, 0, 1, 0, 0, 0).to_vec()],
        ),
    ];
    for (i, (what, messages)) in cases.into_iter().enumerate() {
        let (rank, mut fake) =
            real_rank_and_fake_peer_with(40 + i as u64, striped(Duration::from_secs(10)), STRIPED_SLOT);
        for m in &messages {
            fake.data[1].write_all(m).unwrap();
        }
        assert_protocol_error(&rank, what);
        assert_eq!(
            rank.fifos[0].tail.load(Ordering::Acquire),
            0,
            "{what}: nothing published"
        );
    }
    // and DATA on the control socket
    let (rank, mut fake) = real_rank_and_fake_peer_with(50, striped(Duration::from_secs(10)), STRIPED_SLOT);
    fake.control.write_all(&piece(0, 0, &f, 0, p)).unwrap();
    assert_protocol_error(&rank, "Data message on a Control socket");
}

/// A CREDIT goes out on the control socket at once, even while every data socket to the peer
/// is full (the peer reads none of them and the writers are stuck in a write).
#[test]
fn credits_never_wait_behind_data() {
    let cfg = NetConfig {
        socket_buffer_bytes: Some(16 << 10),
        ..striped(Duration::from_secs(30))
    };
    let (rank, mut fake) = real_rank_and_fake_peer_with(32, cfg, STRIPED_SLOT);
    let (rx, tx) = (&rank.fifos[0], &rank.fifos[1]);
    // all the credit in the world for the real rank's sends, which the fake never reads
    fake.control.write_all(&message(CREDIT, 0, 1 << 40, 0, 0, 0)).unwrap();
    let mut step = 0u64;
    let mut moved = Instant::now();
    while moved.elapsed() < Duration::from_millis(300) {
        assert!(step < 4096, "the data sockets never filled up");
        if step < tx.head.load(Ordering::Acquire) + NSLOTS {
            let f = full_frame(step);
            // SAFETY: the slot of `step` is free (its credit checked above) and ours until `tail`.
            unsafe { std::ptr::copy_nonoverlapping(f.as_ptr(), tx.slot_ptr(step), f.len()) };
            step += 1;
            tx.tail.store(step, Ordering::Release);
            moved = Instant::now();
        } else {
            thread::sleep(Duration::from_millis(1));
        }
    }
    assert!(tx.head.load(Ordering::Acquire) < step, "the writers are not blocked");
    // a frame for the real rank; its kernel consumes it; the credit must come back now
    let f = full_frame(0);
    for i in 0..4 {
        fake.data[i].write_all(&piece(0, 0, &f, i * 16384, 16384)).unwrap();
    }
    recv_kernel(rx, &rank.abort, 1, |_, slot| check_frame(&f, slot)).unwrap();
    fake.control.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let start = Instant::now();
    let ([kind, conn, head, len, ..], _) = read_message(&mut fake.control);
    assert_eq!(
        (kind, conn, head, len),
        (2, 0, 1, 0),
        "a CREDIT for connection 0 up to step 1"
    );
    eprintln!("credit after {:?} with the data sockets full", start.elapsed());
    assert_healthy(&[rank]);
}

/// The widest configuration (8 threads x 8 sockets, 64 pieces a frame): the rank that accepts
/// from two peers has 130 handshakes pending at once, and frames cross whole.
#[test]
fn the_widest_striping_connects_and_delivers() {
    let slot = 64 << 10;
    let cfg = NetConfig {
        threads_per_peer: 8,
        sockets_per_thread: 8,
        ..config(Duration::from_secs(20))
    };
    let mut ranks = connect_all(3, &cfg, 33);
    let streams: Vec<Stream> = [(0, 2), (1, 2), (2, 0)]
        .into_iter()
        .map(|(from, to)| Stream {
            from,
            to,
            conn: 3,
            frames: 24,
        })
        .collect();
    let fifos = register(&mut ranks, &streams, slot);
    for r in &mut ranks {
        r.net.start().unwrap();
    }
    let bytes = play(&ranks, &streams, &fifos, slot);
    assert_eq!(ranks[2].net.bytes_received(0), bytes[0]);
    assert_eq!(ranks[2].net.bytes_received(1), bytes[1]);
    assert_eq!(ranks[0].net.bytes_received(2), bytes[2]);
    assert_healthy(&ranks);
    thread::scope(|s| {
        for r in &mut ranks {
            s.spawn(move || r.net.shutdown().unwrap());
        }
    });
}

/// A peer with the most sockets (64 data sockets and the control socket) whose sockets all
/// connect before any handshake: the acceptor keeps all 65 waiting, none dropped as a stray.
#[test]
fn a_peer_may_open_all_its_sockets_before_any_handshake() {
    let cfg = NetConfig {
        threads_per_peer: 8,
        sockets_per_thread: 8,
        ..config(Duration::from_secs(10))
    };
    let (rank, mut fake) = real_rank_and_fake_peer_with(34, cfg, 4096);
    assert_eq!(fake.data.len(), 64);
    // and a 4 KiB frame cut into 16 pieces (of at least 256 bytes) arrives over 16 of them
    let f = raw_frame(9, 4096 - HEADER_BYTES);
    for i in 0..16 {
        fake.data[63 - i].write_all(&piece(0, 0, &f, i * 256, 256)).unwrap();
    }
    recv_kernel(&rank.fifos[0], &rank.abort, 1, |_, slot| check_frame(&f, slot)).unwrap();
    assert_healthy(&[rank]);
}
