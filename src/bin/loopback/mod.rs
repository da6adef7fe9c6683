//! `zipcoll-bench tcp`: what plain TCP reaches over loopback with N parallel streams, and
//! (with `--net`) what the NET transport's proxies reach over the same loopback in the same
//! run, with host-memory FIFOs and threads playing the kernels (no GPU, no codec: RAW frames
//! that fill their slots, published and consumed as fast as the proxies take them).
//!
//! Each TCP stream is a connected pair on 127.0.0.1 with a sending and a receiving thread; the
//! bytes are split evenly over the streams; the time runs from the first write to the last
//! byte read. GB/s are 10^9 bytes per second.

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};
use zipcoll::transport::net::{AbortWord, NetConfig, NetListener, NetTransport, RawFifo};
use zipcoll::{CodecId, DType};
use zipcoll_device::frame::{checksum, FrameHeader, HEADER_BYTES};
use zipcoll_primitives::conn::NSLOTS;

/// One measurement.
pub struct Row {
    /// What was measured (`tcp x8`, `NET 8x1 sockets`).
    pub what: String,
    pub bytes: u64,
    pub seconds: f64,
}

impl Row {
    pub fn gb_per_s(&self) -> f64 {
        self.bytes as f64 / self.seconds / 1e9
    }
}

/// Plain TCP over loopback: `bytes` split over `streams` connections, written `chunk` bytes at
/// a time; `buffer`: SO_SNDBUF and SO_RCVBUF, else the kernel's autotuning.
pub fn tcp(streams: usize, bytes: u64, chunk: usize, buffer: Option<usize>) -> std::io::Result<Row> {
    let listener = TcpListener::bind(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0))?;
    let addr = listener.local_addr()?;
    let mut pairs = Vec::new();
    for _ in 0..streams {
        let tx = TcpStream::connect(addr)?;
        let (rx, _) = listener.accept()?;
        for s in [&tx, &rx] {
            s.set_nodelay(true)?;
            if let Some(b) = buffer {
                let sock = socket2::SockRef::from(s);
                sock.set_send_buffer_size(b)?;
                sock.set_recv_buffer_size(b)?;
            }
        }
        pairs.push((tx, rx));
    }
    let per_stream = bytes / streams as u64;
    let start = Barrier::new(2 * streams + 1);
    let seconds = std::thread::scope(|s| -> std::io::Result<f64> {
        let mut handles = Vec::new();
        for (mut tx, mut rx) in pairs {
            let start = &start;
            handles.push(s.spawn(move || -> std::io::Result<()> {
                let buf = vec![0x5Au8; chunk];
                start.wait();
                let mut left = per_stream;
                while left > 0 {
                    let n = left.min(chunk as u64) as usize;
                    tx.write_all(&buf[..n])?;
                    left -= n as u64;
                }
                Ok(())
            }));
            handles.push(s.spawn(move || -> std::io::Result<()> {
                let mut buf = vec![0u8; chunk];
                start.wait();
                let mut left = per_stream;
                while left > 0 {
                    let want = left.min(chunk as u64) as usize;
                    match rx.read(&mut buf[..want])? {
                        0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
                        n => left -= n as u64,
                    }
                }
                Ok(())
            }));
        }
        start.wait();
        let t0 = Instant::now();
        for h in handles {
            h.join()
                .map_err(|_| std::io::Error::other("a stream thread panicked"))??;
        }
        Ok(t0.elapsed().as_secs_f64())
    })?;
    Ok(Row {
        what: format!("tcp x{streams}"),
        bytes: per_stream * streams as u64,
        seconds,
    })
}

/// One FIFO in plain host memory: `NSLOTS` slots (16-byte aligned) and the two counters.
struct Fifo {
    slots: Vec<u128>,
    head: AtomicU64,
    tail: AtomicU64,
    slot_bytes: usize,
}

impl Fifo {
    fn new(slot_bytes: usize) -> Fifo {
        Fifo {
            slots: vec![0u128; NSLOTS as usize * slot_bytes.div_ceil(16)],
            head: AtomicU64::new(0),
            tail: AtomicU64::new(0),
            slot_bytes,
        }
    }

    /// The transport's view; the FIFO outlives the transport (dropped first in [`net`]).
    fn raw(&mut self) -> RawFifo {
        let slots = self.slots.as_mut_ptr().cast::<u8>();
        // SAFETY: `slots` holds `NSLOTS * slot_bytes` bytes and the counters are aligned
        // atomics, all living until after the transport is shut down (see `net`); only one
        // playing kernel and the transport access them, by the FIFO protocol.
        unsafe { RawFifo::new(slots, self.head.as_ptr(), self.tail.as_ptr(), self.slot_bytes as u64) }
    }
}

/// The NET transport between two ranks in this process: `conns` connections from rank 0 to
/// rank 1 of `slot`-byte slots, each moving `bytes / conns` bytes of full RAW frames, `config`
/// as given (its sockets, pieces, buffers and rate limit).
pub fn net(config: &NetConfig, conns: usize, bytes: u64, slot: usize) -> Result<Row, String> {
    let err = |e: zipcoll::Error| e.to_string();
    let localhost = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let listeners = [
        NetListener::bind(localhost).map_err(err)?,
        NetListener::bind(localhost).map_err(err)?,
    ];
    let addrs = [listeners[0].addr(), listeners[1].addr()];
    let aborts = [Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(0))];
    let mut nets: Vec<NetTransport> = std::thread::scope(|s| {
        let handles: Vec<_> = listeners
            .into_iter()
            .enumerate()
            .map(|(rank, listener)| {
                let peer = [(1 - rank, addrs[1 - rank])];
                let word = AbortWord::new(Arc::clone(&aborts[rank]));
                s.spawn(move || NetTransport::connect(rank, listener, &peer, 0x5eed, word, config))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(zipcoll::Error::Aborted)).map_err(err))
            .collect::<Result<_, String>>()
    })?;
    let mut send: Vec<Fifo> = (0..conns).map(|_| Fifo::new(slot)).collect();
    let mut recv: Vec<Fifo> = (0..conns).map(|_| Fifo::new(slot)).collect();
    for (c, (tx, rx)) in send.iter_mut().zip(&mut recv).enumerate() {
        nets[0].add_send(1, c, tx.raw()).map_err(err)?;
        nets[1].add_recv(0, c, rx.raw()).map_err(err)?;
    }
    // every slot holds a valid full RAW frame once; the kernels only publish and consume
    let payload = slot - HEADER_BYTES;
    let header = FrameHeader::new(
        CodecId::Raw,
        DType::F8E4M3,
        0,
        0,
        payload as u32,
        payload as u32,
        checksum(&vec![0u8; payload]),
    );
    for f in &mut send {
        let bytes: &mut [u8] = bytes_of(&mut f.slots);
        for s in 0..NSLOTS as usize {
            bytes[s * slot..s * slot + HEADER_BYTES].copy_from_slice(&header.to_bytes());
        }
    }
    for n in &mut nets {
        n.start().map_err(err)?;
    }
    let frames = (bytes / conns as u64).div_ceil(slot as u64).max(1);
    let patience = Duration::from_secs(60);
    let t0 = Instant::now();
    let played = std::thread::scope(|s| {
        let mut handles = Vec::new();
        for (tx, rx) in send.iter().zip(&recv) {
            let (a0, a1) = (&aborts[0], &aborts[1]);
            // the sending kernel publishes a frame whenever its slot is free
            handles.push(s.spawn(move || {
                play(
                    a0,
                    patience,
                    frames,
                    |step| tx.head.load(Ordering::Acquire) + NSLOTS > step,
                    |step| tx.tail.store(step + 1, Ordering::Release),
                )
            }));
            // the receiving kernel consumes every frame as soon as it is published
            handles.push(s.spawn(move || {
                play(
                    a1,
                    patience,
                    frames,
                    |step| rx.tail.load(Ordering::Acquire) > step,
                    |step| rx.head.store(step + 1, Ordering::Release),
                )
            }));
        }
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("a kernel thread panicked".into())))
            .collect::<Result<Vec<()>, String>>()
    });
    let seconds = t0.elapsed().as_secs_f64();
    let sent = nets[0].bytes_sent(1);
    let failure = nets.iter().find_map(|n| n.error()).map(|e| e.to_string());
    for n in &mut nets {
        let _ = n.shutdown();
    }
    drop(nets);
    played.map_err(|e| failure.clone().unwrap_or(e))?;
    if let Some(f) = failure {
        return Err(f);
    }
    Ok(Row {
        what: format!(
            "NET {}x{} sockets, {} conn(s)",
            config.threads_per_peer, config.sockets_per_thread, conns
        ),
        bytes: sent,
        seconds,
    })
}

/// A playing kernel: for each of `frames` steps, waits (yielding) until `ready(step)`, then
/// `act(step)`; gives up when `abort` is raised or nothing moved for `patience`.
fn play(
    abort: &AtomicU32,
    patience: Duration,
    frames: u64,
    ready: impl Fn(u64) -> bool,
    act: impl Fn(u64),
) -> Result<(), String> {
    for step in 0..frames {
        let since = Instant::now();
        while !ready(step) {
            if abort.load(Ordering::Acquire) != 0 {
                return Err(format!("aborted at step {step}"));
            }
            if since.elapsed() > patience {
                return Err(format!("no progress at step {step} for {patience:?}"));
            }
            std::thread::yield_now();
        }
        act(step);
    }
    Ok(())
}

/// The bytes of `words`.
fn bytes_of(words: &mut [u128]) -> &mut [u8] {
    let len = std::mem::size_of_val(words);
    // SAFETY: `u8` has no alignment or validity requirement, the length is the same memory's,
    // and the returned borrow is the only one of `words` while it lives.
    unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), len) }
}
