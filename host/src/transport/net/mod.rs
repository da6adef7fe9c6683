//! The NET transport: the frames of a connection cross between hosts over TCP, moved by host
//! proxy threads, as in NCCL's net proxy. The kernels never see a socket: the sending kernel
//! writes frames into a FIFO in its own host's memory, and the receiving kernel reads them from
//! a FIFO in its host's memory ([`zipcoll_primitives::conn`]; plain host memory on the
//! simulator, pinned host memory mapped into the device on GPUs). In between:
//!
//! ```text
//!  rank A                                                                  rank B
//!  kernel --slots,tail--> send FIFO --writers--> data sockets --readers--> recv FIFO --slots,tail--> kernel
//!  kernel <-----head----- send FIFO <--reader-- control socket <--control-- recv FIFO <-----head----- kernel
//!                      (head = all pieces sent)  (CREDIT = B's head)     (control thread reads B's head)
//! ```
//!
//! # Life cycle
//!
//! 1. Every rank binds a [`NetListener`] and publishes [`NetListener::addr`] to the others (the
//!    communicator's bootstrap allgather).
//! 2. [`NetTransport::connect`] opens [`NetConfig::sockets_per_peer`] data sockets
//!    (`threads_per_peer x sockets_per_thread`) and one control socket to each peer: the
//!    lower rank dials, the higher accepts, and each stream starts with a handshake that names
//!    the communicator, both ranks, the socket, the number of data sockets and the smallest
//!    piece; anything else is dropped, and a peer whose numbers differ is an error.
//! 3. [`NetTransport::add_send`] / [`NetTransport::add_recv`] register each connection's FIFO
//!    ([`RawFifo`]); every connection uses every data socket of its peer, and each side of a
//!    connection must register the same index.
//! 4. [`NetTransport::start`] spawns the proxy threads.
//! 5. [`NetTransport::shutdown`] closes gracefully: it waits until every published frame is on
//!    the wire, tells each peer (CLOSE on every socket), waits for the peer's CLOSE and joins
//!    the threads. Dropping the transport without it is an abrupt close: the peers see a
//!    failure (ABORT).
//!
//! # Striping
//!
//! A frame of `total` bytes is cut into pieces of `max(min_piece_bytes, ceil(total /
//! sockets))` bytes rounded up to 64 (the last one shorter): at most one piece per data socket,
//! so a full 512 KiB slot crosses 8 sockets in 64 KiB pieces, and a frame shorter than
//! `min_piece_bytes` is one piece. Piece `i` of step `s` of connection `c` travels on data
//! socket `(c + s + i) % sockets` (so that one-piece frames spread too). Writer thread `t`
//! owns data sockets `t x sockets_per_thread ..` and writes the pieces that fall on them, so a
//! frame's pieces go out in parallel on `threads_per_peer` threads; the receiver's readers
//! (one per socket) put them back in any order. Both ends compute the same cut, so the reader
//! checks every piece's offset and length exactly.
//!
//! # Threads
//!
//! Per peer: `threads_per_peer` writers `zipcoll-net-tx-<peer>.<t>`, a control thread
//! `zipcoll-net-ctl-<peer>`, and a reader per socket `zipcoll-net-rx-<peer>.<socket>`
//! (`.ctl` for the control socket):
//!
//! | thread  | reads                                                          | writes                                                     |
//! |---------|----------------------------------------------------------------|------------------------------------------------------------|
//! | writer  | send FIFOs: `tail` (acquire), then the frame in the slot; the peer's credit (acquire); the other writers' progress (acquire); the abort word | its data sockets: DATA pieces, CLOSE, ABORT; its progress per connection (release); send FIFOs: `head` = the least of the writers' progress (`fetch_max`, release), so once every piece of a frame is written; sent-bytes counters |
//! | control | recv FIFOs: `head` (acquire), `tail` (acquire: frames not consumed yet keep it spinning); the abort word | the control socket: CREDIT, CLOSE, ABORT                   |
//! | reader  | its socket; recv FIFOs: `head` (acquire) before it fills a slot | recv FIFOs: its pieces' bytes of the slot, then (under the connection's lock) `tail = s + 1` (release) once frames up to `s` are whole; the credit of a send connection (release; control socket); received-bytes counters; the failure and the abort word |
//! | caller  | send FIFOs' `head` and `tail` ([`NetTransport::shutdown`]'s flush), counters, the failure | the stop and closing flags                                 |
//!
//! Writers and the control thread spin (yield the CPU and look again) while work is pending (a
//! writer: a published frame waits for credit; the control thread: frames delivered to the
//! local kernel are not consumed yet) and for 1 ms after their last work; after that they
//! sleep, 20 µs doubling up to 500 µs, so the first frame after a pause may wait that long
//! (every writer passes every step, also one without a piece on its sockets, before `head`
//! moves) and an idle proxy costs a few thousand wake-ups a second. Readers block in `read` with a short
//! socket time-out and recheck the flags.
//!
//! Credits have their own socket because TCP is one byte stream per socket: a CREDIT written
//! on a data socket queues behind every DATA byte already in that socket's send buffer (up to
//! the 4 MiB buffer), and a thread of its own would not change that. On the control socket a
//! CREDIT waits for nothing but other control messages; it is also never rate limited.
//!
//! # Wire format
//!
//! Little-endian, wire version 2. Each socket opens with one handshake record each way
//! (dialer: HELLO, acceptor: ACK):
//!
//! | offset | size | field              |
//! |--------|------|--------------------|
//! | 0      | 4    | magic `"ZCNT"`     |
//! | 4      | 2    | wire version (2)   |
//! | 6      | 2    | kind: 1 HELLO, 2 ACK |
//! | 8      | 8    | communicator magic (the caller's) |
//! | 16     | 4    | from rank          |
//! | 20     | 4    | to rank            |
//! | 24     | 4    | socket index: `0..sockets` data, `sockets` control |
//! | 28     | 4    | data sockets per peer (`sockets`) |
//! | 32     | 4    | smallest piece in bytes |
//! | 36     | 4    | reserved, 0        |
//!
//! then, in both directions, messages of a 32-byte header and a body:
//!
//! | offset | size | field                                                  |
//! |--------|------|--------------------------------------------------------|
//! | 0      | 4    | kind: 1 DATA (data sockets), 2 CREDIT (control socket), 3 CLOSE, 4 ABORT (any) |
//! | 4      | 4    | connection index; ABORT: the rank the failure started on |
//! | 8      | 8    | DATA: the frame's step; CREDIT: the receiver's `head`  |
//! | 16     | 4    | bytes of body: DATA: the piece (at least 1); ABORT: a UTF-8 reason (at most 1 KiB); otherwise 0 |
//! | 20     | 4    | DATA: the piece's offset in the frame; otherwise 0     |
//! | 24     | 4    | DATA: bytes of the whole frame; otherwise 0            |
//! | 28     | 4    | reserved, 0                                            |
//!
//! A DATA body is bytes `offset..offset + len` of the frame. The frame is exactly its header's
//! `HEADER_BYTES + payload_bytes`, or the whole slot if that header is invalid or claims more
//! than the slot (the receiving kernel's validation then reports it; nothing outside the slot
//! is read). The reader checks, before it reads a body into the slot: the connection is one
//! received from this peer; the step is the next to publish or one of the `NSLOTS - 1` after
//! it; the frame fits the slot; offset and length are exactly a piece of the cut (see
//! Striping); the frame length is the one the step's other pieces said; the piece has not come
//! before. Anything else is a protocol error.
//!
//! # Flow control
//!
//! The writers send step `s` only once the peer's receiver has credit for it
//! (`s < credit + NSLOTS`, the credit being the receiving kernel's `head` as the peer's CREDIT
//! messages report it). So every piece finds its slot free on arrival, and a reader never
//! waits for a kernel while later pieces of other connections queue behind it on the same
//! socket: connections sharing the sockets cannot block one another. TCP's own window is the
//! backpressure on each socket; the rate limit is a token bucket per peer, shared by its
//! writers and charged for every piece (header included), not for control messages.
//!
//! # Memory ordering
//!
//! * Sending: the kernel writes slot `s`, then release-stores `tail = s + 1` (System scope). A
//!   writer acquire-loads `tail > s`, so every byte of the frame is visible before it reads the
//!   slot; after writing its pieces it release-stores its progress `s + 1`, acquire-loads the
//!   other writers' and raises `head` to the least of them (`fetch_max`, acquire-release); the
//!   kernel acquires `head` before it writes the slot again (step `s + NSLOTS`): every
//!   writer's reads of the slot happen before the kernel's next writes.
//! * Receiving: the kernel finishes reading slot `s - NSLOTS` and release-stores its `head`.
//!   Each reader acquire-loads `head + NSLOTS > s` before it writes its piece of slot `s` (the
//!   credit protocol makes this true on arrival; the local acquire is what orders the
//!   accesses, the credit only decides when to send), then locks the connection's assembly to
//!   count the bytes; the reader that completes the frames up to `s` release-stores `tail`
//!   under that lock, so the other readers' pieces (written before their unlock) happen before
//!   it, and before the kernel's acquire of `tail`. A piece's bytes are written only by the
//!   reader that claimed the piece (under the lock, before it reads the body), so no two
//!   readers write the same bytes.
//! * Between one rank's threads, the credit words are release/acquire (a number, no data
//!   travels with them), the counters relaxed, the failure behind a mutex.
//! * On GPUs the FIFOs are pinned host memory mapped into the device: the kernels' System-scope
//!   release/acquire pairs with the host's, as between two CPU threads.
//!
//! # Failures
//!
//! The first failure wins ([`NetTransport::error`]): it is recorded, the abort word is raised
//! (the kernels poll it), and every writer and control thread sends ABORT with the reason on
//! its sockets to its peer, whose transport then fails the same way.
//!
//! | event                                                                  | error                      |
//! |------------------------------------------------------------------------|----------------------------|
//! | a peer's socket closes or resets without CLOSE (it died or dropped its transport) | `Remote { rank, .. }` |
//! | a peer's ABORT (its transport failed)                                  | `Remote { rank, "aborted: .." }`, `rank` the one the failure started on (an ABORT's `conn`), also when relayed |
//! | a malformed message (unknown kind or connection, a kind on the wrong socket, a step outside the window, a frame larger than the slot, a piece off the cut, of another frame length, or twice) | `Remote { rank, "NET protocol error .." }` |
//! | a peer that closed gracefully while frames for it are pending          | `Remote { rank, .. }`      |
//! | no progress for `timeout` while work is pending: a published frame without credit, a socket that takes no bytes, a message cut short | `Timeout` |
//! | the abort word raised by someone else (a kernel, the communicator)     | `Aborted` (and peers learn it) |
//!
//! An idle transport never times out; waits for the local kernel have no limit (the kernels
//! have their own).

mod pace;
mod proxy;
mod setup;
mod wire;

/// NET's wire parsers on arbitrary bytes, for the fuzz targets (`fuzz/`); not an API. Each
/// returns whether the bytes parsed, and panics only on a bug (a parsed record that does not
/// encode back to its bytes, a piece accepted off its frame's grid).
#[doc(hidden)]
pub mod fuzzing {
    use super::wire::{Handshake, MsgHeader, MsgKind, Striping, HANDSHAKE_BYTES, MSG_HEADER_BYTES};
    use zipcoll_device::frame::frame_len;

    /// The first bytes as a handshake record, a message header (a DATA piece's place is then
    /// checked against the striping the 5 bytes after the header name: sockets, smallest
    /// piece), and the length of the frame a slot holds (at most the slot).
    pub fn parse(bytes: &[u8]) -> bool {
        let mut parsed = false;
        if let Some(b) = bytes.first_chunk::<HANDSHAKE_BYTES>() {
            if let Ok(h) = Handshake::decode(b) {
                assert_eq!(&h.encode(), b, "a handshake that does not encode back");
                parsed = true;
            }
        }
        if let Some(b) = bytes.first_chunk::<MSG_HEADER_BYTES>() {
            if let Ok(h) = MsgHeader::decode(b) {
                assert_eq!(&h.encode(), b, "a message header that does not encode back");
                parsed = true;
                if let (MsgKind::Data, Some(s)) = (h.kind, bytes[MSG_HEADER_BYTES..].first_chunk::<5>()) {
                    let striping = Striping {
                        sockets: 1 + u32::from(s[0]) % 64,
                        min_piece: u32::from_le_bytes([s[1], s[2], s[3], s[4]]).max(1),
                    };
                    piece_on_grid(striping, &h);
                }
            }
        }
        assert!(frame_len(bytes) <= bytes.len(), "a frame longer than its slot");
        parsed
    }

    /// A piece the striping accepts is exactly its piece of the frame, inside the frame.
    fn piece_on_grid(s: Striping, h: &MsgHeader) {
        if let Ok(i) = s.index(h.offset, h.len, h.total) {
            assert!(i < s.pieces(h.total) && s.pieces(h.total) <= s.sockets, "{s:?} {h:?}");
            assert_eq!(s.piece(h.total, i), (h.offset, h.len), "{s:?}");
            assert!(
                u64::from(h.offset) + u64::from(h.len) <= u64::from(h.total),
                "{s:?} {h:?}"
            );
        }
    }
}

pub use setup::NetListener;

use crate::error::{Error, Result};
use pace::{Backoff, TokenBucket};
use proxy::{Control, CreditOut, PeerState, Reader, RecvConn, Role, SendConn, SendCursor, Wire, Writer};
use std::collections::HashMap;
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use wire::Striping;
use zipcoll_primitives::conn::{ConnDesc, NSLOTS};

/// The most data sockets per peer (`threads_per_peer x sockets_per_thread`)
/// [`NetConfig::validate`] accepts.
pub const MAX_SOCKETS_PER_PEER: usize = 64;
/// The smallest and the largest `min_piece_bytes` [`NetConfig::validate`] accepts.
pub const PIECE_BYTES_RANGE: std::ops::RangeInclusive<usize> = 64..=(64 << 20);
/// The socket time-out after which a blocked proxy rechecks its flags.
const SOCKET_POLL: Duration = Duration::from_millis(20);
/// How long an abrupt close lets the writers tell their peers before it closes the sockets.
const ABORT_LINGER: Duration = Duration::from_millis(200);

/// The NET transport's settings. Every rank must use the same sockets and piece size (the
/// handshake checks).
///
/// | field                    | default | environment variable     |
/// |--------------------------|---------|--------------------------|
/// | `threads_per_peer`       | 8       | `ZIPCOLL_NET_NTHREADS` (as NCCL_SOCKET_NTHREADS) |
/// | `sockets_per_thread`     | 1       | `ZIPCOLL_NET_NSOCKS_PERTHREAD` (as NCCL_NSOCKS_PERTHREAD) |
/// | `min_piece_bytes`        | 64 KiB  | `ZIPCOLL_NET_MIN_PIECE` (a size as [`crate::units`] reads them: `65536`, `64K`, `1M`; 64 B..=64 MiB) |
/// | `socket_buffer_bytes`    | 4 MiB   | `ZIPCOLL_NET_SOCKET_BUFFER` (a size; `0`, `off` or `none`: the kernel's autotuning) |
/// | `rate_limit_bytes_per_s` | none    | `ZIPCOLL_NET_RATE_LIMIT` (bytes per second, as [`crate::units`] reads them: `20000000`, `20M`, `1.5G`, `64MiB/s`, powers of 1024; `0`, `off` or `none`: no limit) |
/// | `timeout`                | 60 s    | (the communicator's `ZIPCOLL_TIMEOUT_MS`) |
///
/// A peer gets `threads_per_peer x sockets_per_thread` data sockets (at most
/// [`MAX_SOCKETS_PER_PEER`]) and one control socket. Over loopback a writer is bound by the
/// CPU copying its pieces into the kernel, so threads matter more than sockets: with the same
/// 8 sockets, 8 writers of one socket each moved 21-22 GB/s on an H200 machine's 16 cores,
/// 2 writers of 4 sockets 7.8-8.7 GB/s (BENCHMARKS.md, 2026-12-03 "NET writer threads").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetConfig {
    /// Writer threads per peer, each with its own data sockets.
    pub threads_per_peer: usize,
    /// Data sockets per writer thread.
    pub sockets_per_thread: usize,
    /// Frames are cut into pieces of at least this many bytes, one socket each (a shorter
    /// frame is one piece).
    pub min_piece_bytes: usize,
    /// SO_SNDBUF and SO_RCVBUF of every socket (`None`: the kernel's autotuning).
    pub socket_buffer_bytes: Option<usize>,
    /// At most this many bytes per second to each peer (all its sockets together).
    pub rate_limit_bytes_per_s: Option<u64>,
    /// The longest the setup may take, and the longest a proxy may wait on a peer while work
    /// is pending.
    pub timeout: Duration,
}

impl Default for NetConfig {
    fn default() -> Self {
        NetConfig {
            threads_per_peer: 8,
            sockets_per_thread: 1,
            min_piece_bytes: 64 << 10,
            socket_buffer_bytes: Some(4 << 20),
            rate_limit_bytes_per_s: None,
            timeout: Duration::from_secs(60),
        }
    }
}

impl NetConfig {
    /// The defaults with the environment's overrides (see the table).
    pub fn from_env() -> Result<NetConfig> {
        NetConfig::from_env_over(NetConfig::default())
    }

    /// `base` with the environment's overrides (see the table); an unparsable value is
    /// [`Error::InvalidArgument`] (the ranges are [`NetConfig::validate`]'s).
    pub fn from_env_over(base: NetConfig) -> Result<NetConfig> {
        NetConfig::from_vars_over(base, |name| {
            std::env::var_os(name).map(|v| v.to_string_lossy().into_owned())
        })
    }

    /// `base` with the overrides `var` returns for the variable names of the table.
    fn from_vars_over(mut base: NetConfig, var: impl Fn(&str) -> Option<String>) -> Result<NetConfig> {
        let set = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        let bad = |name: &str, v: &str, e: String| Error::InvalidArgument(format!("{name}={v:?}: {e}"));
        let count = |name: &str, v: String| -> Result<usize> {
            v.trim()
                .parse()
                .ok()
                .filter(|n| (1..=MAX_SOCKETS_PER_PEER).contains(n))
                .ok_or_else(|| bad(name, &v, format!("expected 1..={MAX_SOCKETS_PER_PEER}")))
        };
        let size = |name: &str, v: String| -> Result<usize> {
            let n = crate::units::parse_size(&v).map_err(|e| bad(name, &v, e.to_string()))?;
            usize::try_from(n).map_err(|_| bad(name, &v, "too large".into()))
        };
        if let Some(v) = set("ZIPCOLL_NET_NTHREADS") {
            base.threads_per_peer = count("ZIPCOLL_NET_NTHREADS", v)?;
        }
        if let Some(v) = set("ZIPCOLL_NET_NSOCKS_PERTHREAD") {
            base.sockets_per_thread = count("ZIPCOLL_NET_NSOCKS_PERTHREAD", v)?;
        }
        if let Some(v) = set("ZIPCOLL_NET_MIN_PIECE") {
            base.min_piece_bytes = size("ZIPCOLL_NET_MIN_PIECE", v)?;
        }
        if let Some(v) = set("ZIPCOLL_NET_SOCKET_BUFFER") {
            let off = matches!(v.trim().to_ascii_lowercase().as_str(), "off" | "none");
            base.socket_buffer_bytes = if off {
                None
            } else {
                Some(size("ZIPCOLL_NET_SOCKET_BUFFER", v)?).filter(|&n| n > 0)
            };
        }
        if let Some(v) = set("ZIPCOLL_NET_RATE_LIMIT") {
            base.rate_limit_bytes_per_s =
                crate::units::parse_rate_limit(&v).map_err(|e| bad("ZIPCOLL_NET_RATE_LIMIT", &v, e.to_string()))?;
        }
        Ok(base)
    }

    /// Data sockets per peer: `threads_per_peer x sockets_per_thread`.
    pub fn sockets_per_peer(&self) -> usize {
        self.threads_per_peer.saturating_mul(self.sockets_per_thread)
    }

    /// How frames are cut (once validated, both numbers fit).
    fn striping(&self) -> Striping {
        Striping {
            sockets: self.sockets_per_peer() as u32,
            min_piece: self.min_piece_bytes as u32,
        }
    }

    /// Checks the settings: at least one thread and one socket each,
    /// `1..=MAX_SOCKETS_PER_PEER` data sockets in all, a piece size in [`PIECE_BYTES_RANGE`],
    /// a socket buffer that fits an `i32` (the system call's), a nonzero rate, a nonzero
    /// timeout.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::InvalidArgument(m));
        if self.threads_per_peer == 0 || self.sockets_per_thread == 0 {
            return bad(format!(
                "{} NET threads of {} sockets per peer",
                self.threads_per_peer, self.sockets_per_thread
            ));
        }
        if self.sockets_per_peer() > MAX_SOCKETS_PER_PEER {
            return bad(format!(
                "{} x {} NET sockets per peer is more than {MAX_SOCKETS_PER_PEER}",
                self.threads_per_peer, self.sockets_per_thread
            ));
        }
        if !PIECE_BYTES_RANGE.contains(&self.min_piece_bytes) {
            return bad(format!(
                "a NET piece of at least {} bytes is not in {PIECE_BYTES_RANGE:?}",
                self.min_piece_bytes
            ));
        }
        if self
            .socket_buffer_bytes
            .is_some_and(|b| b == 0 || i32::try_from(b).is_err())
        {
            return bad(format!("a NET socket buffer of {:?} bytes", self.socket_buffer_bytes));
        }
        if self.rate_limit_bytes_per_s == Some(0) {
            return bad("a rate limit of 0 bytes per second".into());
        }
        if self.timeout.is_zero() {
            return bad("the NET timeout is zero".into());
        }
        Ok(())
    }
}

/// The word the kernels poll to stop (the launch's `abort`): the transport raises it (stores
/// 1) when it fails, and stops and tells its peers when someone else raises it.
#[derive(Clone, Debug)]
pub struct AbortWord(AbortRepr);

#[derive(Clone, Debug)]
enum AbortRepr {
    Shared(Arc<AtomicU32>),
    Raw(*mut u32),
}

// SAFETY: the raw variant is only built by `AbortWord::from_ptr`, whose contract makes the word
// valid, aligned and atomically accessed for as long as any clone lives; the other is an Arc.
unsafe impl Send for AbortWord {}
// SAFETY: as for `Send`: every access is atomic.
unsafe impl Sync for AbortWord {}

impl AbortWord {
    /// A word shared through an `Arc` (the simulator's, tests).
    pub fn new(word: Arc<AtomicU32>) -> AbortWord {
        AbortWord(AbortRepr::Shared(word))
    }

    /// The word at `word` (e.g. in pinned host memory that the kernels poll).
    ///
    /// # Safety
    /// `word` is non-null, 4-byte aligned, valid for reads and writes for as long as this
    /// value or any clone of it lives (a transport holds its clones until it is shut down or
    /// dropped), and everyone accesses it atomically.
    pub unsafe fn from_ptr(word: *mut u32) -> AbortWord {
        AbortWord(AbortRepr::Raw(word))
    }

    fn word(&self) -> &AtomicU32 {
        match &self.0 {
            AbortRepr::Shared(w) => w,
            // SAFETY: `from_ptr`'s contract: valid, aligned, atomically accessed while we live.
            AbortRepr::Raw(p) => unsafe { AtomicU32::from_ptr(*p) },
        }
    }

    /// Stores 1.
    pub fn raise(&self) {
        self.word().store(1, Ordering::Release);
    }

    /// Whether the word is nonzero.
    pub fn is_raised(&self) -> bool {
        self.word().load(Ordering::Acquire) != 0
    }
}

/// One connection's FIFO in this host's memory, as the transport's proxy sees it (the layout
/// of [`ConnDesc`]): `NSLOTS` slots of `slot_bytes` at `slots`, and the `head` and `tail`
/// counters. For a send connection the proxy is the FIFO's receiver (it reads slots and writes
/// `head`); for a receive connection it is the sender (it writes slots and `tail`).
#[derive(Clone, Copy, Debug)]
pub struct RawFifo {
    slots: *mut u8,
    head: *mut u64,
    tail: *mut u64,
    slot_bytes: u64,
}

// SAFETY: `RawFifo::new`'s contract: the memory outlives the transport, and it is shared only
// with the kernel under the FIFO protocol (counters atomic, slots handed over by them).
unsafe impl Send for RawFifo {}
// SAFETY: as for `Send`; `&RawFifo` only gives atomic access to the counters.
unsafe impl Sync for RawFifo {}

impl RawFifo {
    /// The FIFO of `NSLOTS` slots of `slot_bytes` at `slots`, with counters `head` and `tail`.
    ///
    /// # Safety
    /// Until the transport it is given to is shut down or dropped:
    /// * `slots` is valid for reads and writes of `NSLOTS * slot_bytes` bytes, and `head` and
    ///   `tail` are valid, 8-byte aligned `u64`s, none of them overlapping;
    /// * only the FIFO's kernel side (one sender or one receiver) and this transport access
    ///   the memory, following the FIFO protocol of [`zipcoll_primitives::conn`]: the counters
    ///   atomically, a slot only while the counters hand it over.
    pub unsafe fn new(slots: *mut u8, head: *mut u64, tail: *mut u64, slot_bytes: u64) -> RawFifo {
        RawFifo {
            slots,
            head,
            tail,
            slot_bytes,
        }
    }

    /// The FIFO `desc` describes.
    ///
    /// # Safety
    /// As for [`RawFifo::new`] with `desc`'s fields.
    pub unsafe fn from_desc(desc: &ConnDesc) -> RawFifo {
        // SAFETY: forwarded to the caller.
        unsafe { RawFifo::new(desc.slots, desc.head, desc.tail, desc.slot_bytes) }
    }

    /// Bytes of one slot.
    pub fn slot_bytes(&self) -> u64 {
        self.slot_bytes
    }

    /// What the transport checks before it uses a FIFO: non-null, aligned counters and a slot
    /// size a message header can describe.
    fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::InvalidArgument(m));
        if self.slots.is_null() || self.head.is_null() || self.tail.is_null() {
            return bad("a NET FIFO with a null pointer".into());
        }
        if !self.head.is_aligned() || !self.tail.is_aligned() {
            return bad("a NET FIFO whose head or tail is not 8-byte aligned".into());
        }
        if self.slot_bytes == 0 || self.slot_bytes > u64::from(u32::MAX) {
            return bad(format!("a NET FIFO slot of {} bytes", self.slot_bytes));
        }
        Ok(())
    }

    /// The `head` counter (frames consumed).
    fn head(&self) -> &AtomicU64 {
        // SAFETY: valid, aligned and atomically accessed while the transport lives (`new`'s
        // contract, checked by `validate` before the transport keeps the FIFO).
        unsafe { AtomicU64::from_ptr(self.head) }
    }

    /// The `tail` counter (frames published).
    fn tail(&self) -> &AtomicU64 {
        // SAFETY: as for `head`.
        unsafe { AtomicU64::from_ptr(self.tail) }
    }

    /// The whole slot of `step`, to read.
    ///
    /// # Safety
    /// The slot is handed to the proxy (published and not yet released) and nobody writes it
    /// while the slice lives.
    unsafe fn slot(&self, step: u64) -> &[u8] {
        let offset = (step % NSLOTS) * self.slot_bytes;
        // SAFETY: inside the `NSLOTS * slot_bytes` bytes of `slots` (`new`'s contract); no
        // writer while the slice lives (the caller's).
        unsafe { std::slice::from_raw_parts(self.slots.add(offset as usize), self.slot_bytes as usize) }
    }

    /// Bytes `start..start + len` of the slot of `step`, to write.
    ///
    /// # Safety
    /// `start + len <= slot_bytes`, the slot is free (released by the kernel, not yet
    /// published), and nobody else accesses these bytes while the slice lives.
    // `&self` hands out `&mut`: the FIFO is shared memory, and exclusivity comes from the
    // protocol (the caller's contract), not from Rust's borrows.
    #[allow(clippy::mut_from_ref)]
    unsafe fn slot_range_mut(&self, step: u64, start: usize, len: usize) -> &mut [u8] {
        let offset = (step % NSLOTS) * self.slot_bytes + start as u64;
        // SAFETY: inside `slots` since `start + len <= slot_bytes`; exclusive while the slice
        // lives (the caller's contract).
        unsafe { std::slice::from_raw_parts_mut(self.slots.add(offset as usize), len) }
    }
}

/// A failure as recorded (the crate's [`Error`] is not `Clone`).
#[derive(Clone, Debug)]
enum Failure {
    Remote { rank: usize, reason: String },
    Timeout { what: String, after: Duration },
    Aborted,
}

impl Failure {
    fn to_error(&self) -> Error {
        match self {
            Failure::Remote { rank, reason } => Error::Remote {
                rank: *rank,
                reason: reason.clone(),
            },
            Failure::Timeout { what, after } => Error::Timeout {
                what: what.clone(),
                after: *after,
            },
            Failure::Aborted => Error::Aborted,
        }
    }
}

/// What every proxy thread of a transport shares.
struct Shared {
    my_rank: usize,
    timeout: Duration,
    abort: AbortWord,
    /// Abrupt stop: every thread ends at its next check.
    stop: AtomicBool,
    /// Graceful close: writers send CLOSE, a closed socket is no failure.
    closing: AtomicBool,
    /// A failure is recorded.
    failed: AtomicBool,
    failure: Mutex<Option<Failure>>,
    /// Why this rank stops, when its communicator says ([`NetTransport::set_abort_reason`]):
    /// the reason its ABORTs carry unless they relay a peer's failure.
    abort_reason: Mutex<Option<String>>,
}

impl Shared {
    /// Records `f` unless a failure is recorded already, and raises the abort word.
    fn fail(&self, f: Failure) {
        let mut first = self.failure.lock().unwrap_or_else(PoisonError::into_inner);
        if first.is_none() {
            *first = Some(f);
        }
        self.failed.store(true, Ordering::SeqCst);
        drop(first);
        self.abort.raise();
    }

    fn failure(&self) -> Option<Failure> {
        self.failure.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn failed(&self) -> bool {
        self.failed.load(Ordering::SeqCst)
    }

    fn stopping(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    fn closing(&self) -> bool {
        self.closing.load(Ordering::SeqCst)
    }
}

/// Traffic counters of one peer.
#[derive(Default)]
struct PeerCounters {
    bytes_sent: AtomicU64,
    bytes_received: AtomicU64,
    frames_sent: AtomicU64,
    frames_received: AtomicU64,
}

/// Traffic to and from one peer so far: frames and their bytes (message headers not counted).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NetPeerStats {
    /// Frame bytes sent.
    pub bytes_sent: u64,
    /// Frame bytes received.
    pub bytes_received: u64,
    /// Frames sent.
    pub frames_sent: u64,
    /// Frames received.
    pub frames_received: u64,
}

/// One peer: its sockets, connections, counters and rate limit.
struct PeerLink {
    rank: usize,
    /// The data sockets, then the control socket.
    sockets: Vec<TcpStream>,
    state: Arc<PeerState>,
    counters: Arc<PeerCounters>,
    bucket: Option<Arc<TokenBucket>>,
    /// Every send connection to the peer (the writers', the flush at shutdown's).
    sends: Vec<Arc<SendConn>>,
    /// Every receive connection from the peer, by index (until `start` hands them to the
    /// readers).
    recvs: HashMap<u32, RecvConn>,
    /// The receive connections' credit reports (until `start` hands them to the control
    /// thread).
    credits_out: Vec<CreditOut>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Connected,
    Started,
    Closed,
}

/// One rank's NET transport (see the module docs): sockets to its peers and the proxy threads
/// that move its connections' frames over them.
pub struct NetTransport {
    config: NetConfig,
    shared: Arc<Shared>,
    peers: Vec<PeerLink>,
    threads: Vec<JoinHandle<()>>,
    phase: Phase,
}

impl NetTransport {
    /// Connects rank `my_rank` to `peers` (rank, listener address; every peer must list this
    /// rank in turn): `config.sockets_per_peer()` data streams and a control stream each,
    /// opened by a handshake that carries `comm_magic` (the same on every rank of the
    /// communicator, different across communicators). Stray connections to `listener` are
    /// dropped. Takes at most
    /// `config.timeout` ([`Error::Timeout`] after it). The transport raises `abort` when it
    /// fails.
    pub fn connect(
        my_rank: usize,
        listener: NetListener,
        peers: &[(usize, SocketAddr)],
        comm_magic: u64,
        abort: AbortWord,
        config: &NetConfig,
    ) -> Result<NetTransport> {
        config.validate()?;
        check_peers(my_rank, peers)?;
        let streams = setup::establish(my_rank, &listener, peers, comm_magic, config.striping(), config.timeout)?;
        drop(listener);
        let mut links = Vec::new();
        for (rank, sockets) in streams {
            for stream in &sockets {
                configure(stream, config.socket_buffer_bytes).map_err(|source| Error::Io {
                    what: format!("configuring a NET socket to rank {rank}"),
                    source,
                })?;
            }
            links.push(PeerLink {
                rank,
                sockets,
                state: Arc::default(),
                counters: Arc::default(),
                bucket: config
                    .rate_limit_bytes_per_s
                    .map(|r| Arc::new(TokenBucket::new(r, Instant::now()))),
                sends: Vec::new(),
                recvs: HashMap::new(),
                credits_out: Vec::new(),
            });
        }
        Ok(NetTransport {
            config: config.clone(),
            shared: Arc::new(Shared {
                my_rank,
                timeout: config.timeout,
                abort,
                stop: AtomicBool::new(false),
                closing: AtomicBool::new(false),
                failed: AtomicBool::new(false),
                failure: Mutex::new(None),
                abort_reason: Mutex::new(None),
            }),
            peers: links,
            threads: Vec::new(),
            phase: Phase::Connected,
        })
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.shared.my_rank
    }

    /// The connected peers' ranks, ascending.
    pub fn peers(&self) -> Vec<usize> {
        self.peers.iter().map(|p| p.rank).collect()
    }

    /// The settings in force.
    pub fn config(&self) -> &NetConfig {
        &self.config
    }

    /// Registers connection `conn_index` to `peer`: the proxy sends the frames the local kernel
    /// publishes in `fifo`. The peer registers the same index with
    /// [`NetTransport::add_recv`]. Before [`NetTransport::start`] only; the FIFO continues from
    /// its counters (`head` frames already sent).
    pub fn add_send(&mut self, peer: usize, conn_index: usize, fifo: RawFifo) -> Result<()> {
        let threads = self.config.threads_per_peer;
        let (link, conn) = self.registering(peer, conn_index, fifo)?;
        if link.sends.iter().any(|c| c.index == conn) {
            return Err(Error::InvalidArgument(format!(
                "NET send connection {conn} to rank {peer} is registered twice"
            )));
        }
        let head = fifo.head().load(Ordering::Acquire);
        let tail = fifo.tail().load(Ordering::Acquire);
        if tail < head || tail - head > NSLOTS {
            return Err(Error::InvalidArgument(format!(
                "NET send FIFO {conn} to rank {peer} has head {head} and tail {tail}"
            )));
        }
        link.sends.push(Arc::new(SendConn {
            index: conn,
            fifo,
            credit: AtomicU64::new(head),
            done: (0..threads).map(|_| AtomicU64::new(head)).collect(),
        }));
        Ok(())
    }

    /// Registers connection `conn_index` from `peer`: the proxy writes the frames it receives
    /// into `fifo` for the local kernel. The peer registers the same index with
    /// [`NetTransport::add_send`]. Before [`NetTransport::start`] only; the FIFO must be at
    /// rest (`head == tail`) and continues from there.
    pub fn add_recv(&mut self, peer: usize, conn_index: usize, fifo: RawFifo) -> Result<()> {
        let (link, conn) = self.registering(peer, conn_index, fifo)?;
        if link.recvs.contains_key(&conn) {
            return Err(Error::InvalidArgument(format!(
                "NET receive connection {conn} from rank {peer} is registered twice"
            )));
        }
        let head = fifo.head().load(Ordering::Acquire);
        let tail = fifo.tail().load(Ordering::Acquire);
        if head != tail {
            return Err(Error::InvalidArgument(format!(
                "NET receive FIFO {conn} from rank {peer} is not at rest (head {head}, tail {tail})"
            )));
        }
        link.recvs.insert(conn, RecvConn::new(fifo, tail));
        link.credits_out.push(CreditOut {
            index: conn,
            fifo,
            credited: head,
        });
        Ok(())
    }

    /// The checks every registration makes; the peer's link and the index as sent.
    fn registering(&mut self, peer: usize, conn_index: usize, fifo: RawFifo) -> Result<(&mut PeerLink, u32)> {
        if self.phase != Phase::Connected {
            return Err(Error::InvalidArgument(
                "NET connections are registered before start()".into(),
            ));
        }
        fifo.validate()?;
        let conn = u32::try_from(conn_index)
            .map_err(|_| Error::InvalidArgument(format!("NET connection index {conn_index} exceeds u32")))?;
        let link = self
            .peers
            .iter_mut()
            .find(|p| p.rank == peer)
            .ok_or_else(|| Error::InvalidArgument(format!("rank {peer} is not a NET peer of this transport")))?;
        Ok((link, conn))
    }

    /// Spawns the proxy threads (per peer: the writers, the control thread, a reader per
    /// socket). Once.
    pub fn start(&mut self) -> Result<()> {
        if self.phase != Phase::Connected {
            return Err(Error::InvalidArgument("the NET transport is already started".into()));
        }
        self.phase = Phase::Started;
        if let Err(e) = self.spawn_all() {
            self.stop_now();
            return Err(e);
        }
        Ok(())
    }

    fn spawn_all(&mut self) -> Result<()> {
        let striping = self.config.striping();
        let per_thread = self.config.sockets_per_thread;
        for link in &mut self.peers {
            let rank = link.rank;
            let data = link.sockets.len() - 1;
            let io = |what: &str, source| Error::Io {
                what: format!("{what} for the NET sockets to rank {rank}"),
                source,
            };
            let clone = |s: &TcpStream| s.try_clone().map_err(|e| io("cloning a stream", e));
            let name = |i: usize| {
                if i == data {
                    "the control socket".to_string()
                } else {
                    format!("socket {i}")
                }
            };
            let wire = |i: usize| {
                Ok(Wire::new(
                    rank,
                    name(i),
                    clone(&link.sockets[i])?,
                    Arc::clone(&self.shared),
                ))
            };
            let spawn = |name: String, f: Box<dyn FnOnce() + Send>| {
                std::thread::Builder::new()
                    .name(name)
                    .spawn(f)
                    .map_err(|e| io("spawning a proxy thread", e))
            };
            for t in 0..self.config.threads_per_peer {
                let first = t * per_thread;
                let writer = Writer {
                    thread: t,
                    wires: (first..first + per_thread).map(wire).collect::<Result<_>>()?,
                    first_socket: first,
                    striping,
                    sends: link
                        .sends
                        .iter()
                        .map(|c| SendCursor {
                            next: c.fifo.head().load(Ordering::Acquire),
                            conn: Arc::clone(c),
                            stalled_since: None,
                        })
                        .collect(),
                    bucket: link.bucket.clone(),
                    state: Arc::clone(&link.state),
                    counters: Arc::clone(&link.counters),
                    shared: Arc::clone(&self.shared),
                    peer: rank,
                };
                self.threads.push(spawn(
                    format!("zipcoll-net-tx-{rank}.{t}"),
                    Box::new(move || writer.run()),
                )?);
            }
            let control = Control {
                wire: wire(data)?,
                credits: std::mem::take(&mut link.credits_out),
                state: Arc::clone(&link.state),
            };
            self.threads.push(spawn(
                format!("zipcoll-net-ctl-{rank}"),
                Box::new(move || control.run()),
            )?);
            let recvs = Arc::new(std::mem::take(&mut link.recvs));
            let credits: Arc<HashMap<u32, Arc<SendConn>>> =
                Arc::new(link.sends.iter().map(|c| (c.index, Arc::clone(c))).collect());
            for i in 0..=data {
                let reader = Reader {
                    wire: wire(i)?,
                    role: if i == data { Role::Control } else { Role::Data },
                    striping,
                    recvs: Arc::clone(&recvs),
                    credits: Arc::clone(&credits),
                    state: Arc::clone(&link.state),
                    counters: Arc::clone(&link.counters),
                };
                let tag = if i == data { "ctl".to_string() } else { i.to_string() };
                self.threads.push(spawn(
                    format!("zipcoll-net-rx-{rank}.{tag}"),
                    Box::new(move || reader.run()),
                )?);
            }
        }
        Ok(())
    }

    /// Says why this rank stops, before the abort word is raised: the ABORT its proxies send
    /// each peer then carries `reason` (what failed here first, e.g. "its caller aborted the
    /// communicator") instead of the generic "aborted" or "dropped its NET transport". The
    /// first reason stays; a peer's failure relayed is still relayed as the peer's.
    pub fn set_abort_reason(&self, reason: String) {
        let mut r = self.shared.abort_reason.lock().unwrap_or_else(PoisonError::into_inner);
        r.get_or_insert(reason);
    }

    /// The first failure, if any, as the crate's error: [`Error::Remote`] (a peer failed,
    /// went away or broke the protocol), [`Error::Timeout`], or [`Error::Aborted`] (the abort
    /// word was raised by someone else).
    pub fn error(&self) -> Option<Error> {
        self.shared.failure().map(|f| f.to_error())
    }

    /// Traffic with `peer` so far (`None` if it is not a peer).
    pub fn stats(&self, peer: usize) -> Option<NetPeerStats> {
        let c = &self.peers.iter().find(|p| p.rank == peer)?.counters;
        Some(NetPeerStats {
            bytes_sent: c.bytes_sent.load(Ordering::Relaxed),
            bytes_received: c.bytes_received.load(Ordering::Relaxed),
            frames_sent: c.frames_sent.load(Ordering::Relaxed),
            frames_received: c.frames_received.load(Ordering::Relaxed),
        })
    }

    /// Frame bytes sent to every peer so far.
    pub fn total_bytes_sent(&self) -> u64 {
        self.peers
            .iter()
            .map(|p| p.counters.bytes_sent.load(Ordering::Relaxed))
            .sum()
    }

    /// Frame bytes sent to `peer` so far (0 for a rank that is not a peer).
    pub fn bytes_sent(&self, peer: usize) -> u64 {
        self.stats(peer).map_or(0, |s| s.bytes_sent)
    }

    /// Frame bytes received from `peer` so far (0 for a rank that is not a peer).
    pub fn bytes_received(&self, peer: usize) -> u64 {
        self.stats(peer).map_or(0, |s| s.bytes_received)
    }

    /// Closes gracefully: waits (up to the timeout) until every frame the kernels published is
    /// on the wire, tells each peer (CLOSE), waits for each peer's CLOSE (up to the timeout),
    /// and joins the threads. `Err` with the transport's failure if it failed (now or before);
    /// the threads are joined either way. Later calls return the same.
    pub fn shutdown(&mut self) -> Result<()> {
        match self.phase {
            Phase::Closed => {}
            Phase::Connected => {
                self.phase = Phase::Closed;
                self.close_sockets();
            }
            Phase::Started => {
                self.flush();
                self.shared.closing.store(true, Ordering::SeqCst);
                self.finish(self.config.timeout);
            }
        }
        self.error().map_or(Ok(()), Err)
    }

    /// Waits until every send FIFO's published frames are sent, the transport fails, or the
    /// timeout passes (a failure).
    fn flush(&self) {
        let deadline = Instant::now() + self.config.timeout;
        let mut backoff = Backoff::new();
        loop {
            if self.shared.failed() {
                return;
            }
            let pending = self.peers.iter().find_map(|p| {
                let c = p.sends.iter().find(|c| {
                    let f = &c.fifo;
                    f.tail().load(Ordering::Acquire) > f.head().load(Ordering::Acquire)
                })?;
                Some((p.rank, c.index))
            });
            let Some((rank, conn)) = pending else {
                return;
            };
            if Instant::now() >= deadline {
                self.shared.fail(Failure::Timeout {
                    what: format!("rank {rank} to take the pending frames of NET connection {conn} at shutdown"),
                    after: self.config.timeout,
                });
                return;
            }
            backoff.snooze(true);
        }
    }

    /// Stops abruptly: the writers tell their peers (ABORT), the sockets close, the threads
    /// are joined.
    fn stop_now(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.finish(ABORT_LINGER);
    }

    /// Lets the threads end on their own for up to `linger`, then stops them, closes every
    /// socket and joins them.
    fn finish(&mut self, linger: Duration) {
        let deadline = Instant::now() + linger;
        while Instant::now() < deadline && !self.threads.iter().all(|t| t.is_finished()) {
            std::thread::sleep(Duration::from_millis(1));
        }
        self.shared.stop.store(true, Ordering::SeqCst);
        self.close_sockets();
        for t in self.threads.drain(..) {
            // a proxy thread does not panic; if one did, there is nothing left to clean up
            let _ = t.join();
        }
        self.phase = Phase::Closed;
    }

    fn close_sockets(&self) {
        for s in self.peers.iter().flat_map(|p| &p.sockets) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

impl Drop for NetTransport {
    /// An abrupt close unless [`NetTransport::shutdown`] ran: the peers see a failure.
    fn drop(&mut self) {
        match self.phase {
            Phase::Closed => {}
            Phase::Connected => self.close_sockets(),
            Phase::Started => self.stop_now(),
        }
    }
}

/// Peer ranks are distinct, not `my_rank`, and fit the handshake's u32.
fn check_peers(my_rank: usize, peers: &[(usize, SocketAddr)]) -> Result<()> {
    let bad = |m: String| Err(Error::InvalidArgument(m));
    if u32::try_from(my_rank).is_err() {
        return bad(format!("rank {my_rank} exceeds u32"));
    }
    for (i, (rank, _)) in peers.iter().enumerate() {
        if *rank == my_rank {
            return bad(format!("rank {my_rank} lists itself as a NET peer"));
        }
        if u32::try_from(*rank).is_err() {
            return bad(format!("peer rank {rank} exceeds u32"));
        }
        if peers[..i].iter().any(|(r, _)| r == rank) {
            return bad(format!("NET peer rank {rank} is listed twice"));
        }
    }
    Ok(())
}

/// Socket options of an established stream: blocking with a short time-out (the proxies
/// recheck their flags), no Nagle delay, and send and receive buffers of `buffer` bytes if
/// given (the kernel caps them at `net.core.wmem_max` / `rmem_max`; `None` leaves them to the
/// kernel's autotuning).
fn configure(s: &TcpStream, buffer: Option<usize>) -> std::io::Result<()> {
    s.set_nonblocking(false)?;
    s.set_nodelay(true)?;
    s.set_read_timeout(Some(SOCKET_POLL))?;
    s.set_write_timeout(Some(SOCKET_POLL))?;
    if let Some(bytes) = buffer {
        let sock = socket2::SockRef::from(s);
        sock.set_send_buffer_size(bytes)?;
        sock.set_recv_buffer_size(bytes)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| v.to_string())
    }

    #[test]
    fn config_reads_its_variables() {
        let c = NetConfig::from_vars_over(NetConfig::default(), vars(&[])).unwrap();
        assert_eq!(c, NetConfig::default());
        assert_eq!(c.sockets_per_peer(), 8);
        let c = NetConfig::from_vars_over(
            NetConfig::default(),
            vars(&[
                ("ZIPCOLL_NET_NTHREADS", " 4 "),
                ("ZIPCOLL_NET_NSOCKS_PERTHREAD", "3"),
                ("ZIPCOLL_NET_MIN_PIECE", "128K"),
                ("ZIPCOLL_NET_SOCKET_BUFFER", "off"),
                ("ZIPCOLL_NET_RATE_LIMIT", "20M"),
            ]),
        )
        .unwrap();
        assert_eq!(
            (c.threads_per_peer, c.sockets_per_thread, c.sockets_per_peer()),
            (4, 3, 12)
        );
        assert_eq!(c.min_piece_bytes, 128 << 10);
        assert_eq!(c.socket_buffer_bytes, None);
        assert_eq!(c.rate_limit_bytes_per_s, Some(20 << 20));
        let c = NetConfig::from_vars_over(NetConfig::default(), vars(&[("ZIPCOLL_NET_SOCKET_BUFFER", "1M")])).unwrap();
        assert_eq!(c.socket_buffer_bytes, Some(1 << 20));
        for bad in [
            ("ZIPCOLL_NET_NTHREADS", "0"),
            ("ZIPCOLL_NET_NTHREADS", "two"),
            ("ZIPCOLL_NET_NSOCKS_PERTHREAD", "65"),
            ("ZIPCOLL_NET_MIN_PIECE", "big"),
            ("ZIPCOLL_NET_SOCKET_BUFFER", "-1"),
            ("ZIPCOLL_NET_RATE_LIMIT", "fast"),
            ("ZIPCOLL_NET_RATE_LIMIT", "-5M"),
        ] {
            let pairs: &'static [(&str, &str)] = Box::leak(Box::new([bad]));
            let r = NetConfig::from_vars_over(NetConfig::default(), vars(pairs));
            assert!(matches!(r, Err(Error::InvalidArgument(_))), "{bad:?}");
        }
    }

    #[test]
    fn validation_rejects_what_cannot_work() {
        assert!(NetConfig::default().validate().is_ok());
        let base = NetConfig::default();
        for bad in [
            NetConfig {
                threads_per_peer: 0,
                ..base.clone()
            },
            NetConfig {
                sockets_per_thread: 0,
                ..base.clone()
            },
            NetConfig {
                threads_per_peer: 8,
                sockets_per_thread: 9,
                ..base.clone()
            },
            NetConfig {
                min_piece_bytes: 63,
                ..base.clone()
            },
            NetConfig {
                socket_buffer_bytes: Some(0),
                ..base.clone()
            },
            NetConfig {
                rate_limit_bytes_per_s: Some(0),
                ..base.clone()
            },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
        let widest = NetConfig {
            threads_per_peer: 8,
            sockets_per_thread: 8,
            ..base
        };
        assert!(widest.validate().is_ok());
    }

    /// Every socket gets no Nagle delay and the buffers asked for (Linux reports twice the
    /// value set, within `wmem_max` / `rmem_max`).
    #[test]
    fn sockets_get_nodelay_and_their_buffers() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let a = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (b, _) = listener.accept().unwrap();
        configure(&a, Some(256 << 10)).unwrap();
        configure(&b, None).unwrap();
        assert!(a.nodelay().unwrap() && b.nodelay().unwrap());
        let sock = socket2::SockRef::from(&a);
        for got in [sock.send_buffer_size().unwrap(), sock.recv_buffer_size().unwrap()] {
            assert!(got >= 256 << 10, "{got}");
        }
    }
}
