//! The TCP bootstrap: how the ranks of a communicator find each other before any data
//! connection exists (NCCL's `ncclGetUniqueId` and bootstrap ring).
//!
//! One process calls [`UniqueId::new`]: it binds a listener (on `ZIPCOLL_BOOTSTRAP_ADDR`, default
//! `127.0.0.1:0`) and starts a detached *root* thread that owns it. The id's text form
//! (`zc1-<16 hex digits of magic>@<ip:port>`) travels to every rank (an env var, a file, an MPI
//! broadcast), and each rank calls [`Bootstrap::init`] with it:
//!
//! 1. the rank binds a listener of its own, on the local IP of its connection to the root (the
//!    interface that reaches the root, `127.0.0.1` on one host), port 0;
//! 2. it sends the root a `HELLO` (magic, rank, nranks, listen address) and waits for the
//!    `TABLE` of every rank's listen address, which the root sends once all `nranks` arrived
//!    (or a `FAIL` when the ranks disagree, one joins twice, or the root times out);
//! 3. it connects to rank `rank + 1`'s listener, sends it a `HELLO`, and accepts rank
//!    `rank - 1`'s connection (checking its `HELLO`): a ring.
//!
//! [`Bootstrap::allgather`] and [`Bootstrap::barrier`] then run over the ring: `nranks - 1`
//! steps, each passing one `BLOB` to the next rank. The root thread exits once it sent the
//! table, after a failure, or at its timeout (`ZIPCOLL_BOOTSTRAP_TIMEOUT_MS`, default 120 s,
//! counted from the id's creation); an id serves one rendezvous.
//!
//! Every socket operation has a time limit (the `timeout` of [`Bootstrap::init`]): running past
//! it gives [`Error::Timeout`], a peer that closes or resets its connection [`Error::Remote`]
//! naming the peer's rank, anything malformed a peer sends [`Error::Remote`] too (every length
//! read off the wire is bounded before anything is allocated), and whatever the root refuses or
//! sends malformed [`Error::Bootstrap`].
//!
//! # Wire format
//!
//! Every message is a frame: `tag: u32`, `payload length: u32`, then the payload; all integers
//! little-endian. An *address* is `family: u8` (4 or 6), the 4 or 16 bytes of the IP, `port: u16`.
//!
//! | tag | message | sent                              | payload                                                             |
//! |-----|---------|-----------------------------------|---------------------------------------------------------------------|
//! | 1   | `HELLO` | rank -> root, rank -> rank + 1    | version `u32` ([`PROTOCOL_VERSION`]), magic `u64`, rank `u32`, nranks `u32`, listen address |
//! | 2   | `TABLE` | root -> rank                      | count `u32`, then `count` addresses (rank order)                    |
//! | 3   | `FAIL`  | root -> rank                      | reason length `u32`, UTF-8 reason (at most 4 KiB)                   |
//! | 4   | `BLOB`  | rank -> rank + 1 (allgather step) | origin rank `u32`, then the blob (the rest of the frame, at most [`MAX_BLOB_LEN`]) |
//!
//! The root refuses a connection whose `HELLO` is malformed, of another protocol version or of
//! another magic (a `FAIL` to that connection only); a `HELLO` with `rank >= nranks`, with
//! another `nranks` than the first rank's, or with a rank that already joined fails the whole
//! rendezvous (a `FAIL` to every connected rank).
//!
//! # Example
//!
//! ```
//! use std::time::Duration;
//! use zipcoll_host::comm::bootstrap::{Bootstrap, UniqueId};
//!
//! // The root process makes the id and hands its text to every rank.
//! let text = UniqueId::new()?.to_string();
//! let nranks = 3;
//! let ranks: Vec<_> = (0..nranks)
//!     .map(|rank| {
//!         let text = text.clone();
//!         std::thread::spawn(move || -> zipcoll_host::Result<Vec<Vec<u8>>> {
//!             let id: UniqueId = text.parse()?;
//!             let boot = Bootstrap::init(&id, rank, nranks, Duration::from_secs(10))?;
//!             boot.barrier()?;
//!             boot.allgather(format!("rank {rank}").as_bytes())
//!         })
//!     })
//!     .collect();
//! for rank in ranks {
//!     let table = rank.join().expect("rank thread")?;
//!     assert_eq!(table, [&b"rank 0"[..], b"rank 1", b"rank 2"]);
//! }
//! # Ok::<(), zipcoll_host::Error>(())
//! ```

use std::collections::hash_map::RandomState;
use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::error::{Error, Result};

/// The version every `HELLO` carries; the root and the ranks refuse any other.
pub const PROTOCOL_VERSION: u32 = 1;

/// The largest blob [`Bootstrap::allgather`] sends or accepts (64 MiB).
pub const MAX_BLOB_LEN: usize = 64 << 20;

/// The env var with the address the root of [`UniqueId::new`] binds (`ip:port`, port 0 picks
/// a free one); `127.0.0.1:0` when unset.
pub const ADDR_ENV: &str = "ZIPCOLL_BOOTSTRAP_ADDR";

/// The env var with the root's timeout in milliseconds ([`UniqueId::new`], [`UniqueId::new_on`]);
/// [`DEFAULT_ROOT_TIMEOUT`] when unset.
pub const TIMEOUT_ENV: &str = "ZIPCOLL_BOOTSTRAP_TIMEOUT_MS";

/// How long the root waits for all ranks when [`TIMEOUT_ENV`] is unset.
pub const DEFAULT_ROOT_TIMEOUT: Duration = Duration::from_secs(120);

const ID_PREFIX: &str = "zc1-";

const TAG_HELLO: u32 = 1;
const TAG_TABLE: u32 = 2;
const TAG_FAIL: u32 = 3;
const TAG_BLOB: u32 = 4;

const HEADER_LEN: usize = 8;
/// A `HELLO` is at most 39 bytes (an IPv6 listen address).
const MAX_HELLO_LEN: usize = 64;
/// A `TABLE` of ~220k IPv6 ranks, or a `FAIL`.
const MAX_REPLY_LEN: usize = 4 << 20;
const MAX_REASON_LEN: usize = 4096;
/// Frames up to this size are written with one `write_all`.
const COALESCE_LEN: usize = 64 << 10;

/// How often the root and a rank's listener look for new connections.
const POLL: Duration = Duration::from_millis(5);
/// The pause between attempts to reach a root that is not listening yet.
const CONNECT_RETRY: Duration = Duration::from_millis(20);
/// The root's limit for writing its reply to one rank.
const ROOT_WRITE_TIMEOUT: Duration = Duration::from_secs(5);
/// The shortest time limit given to a socket (a zero one would mean none).
const MIN_WAIT: Duration = Duration::from_millis(1);

// ---------------------------------------------------------------------------------------------
// The unique id and the root
// ---------------------------------------------------------------------------------------------

/// The rendezvous point of one communicator: the root's address and a random magic that every
/// `HELLO` must carry. Its [`Display`](fmt::Display) form `zc1-<magic>@<ip:port>` parses back
/// with [`FromStr`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UniqueId {
    addr: SocketAddr,
    magic: u64,
}

impl UniqueId {
    /// Starts a root on [`ADDR_ENV`]'s address (default `127.0.0.1:0`) with [`TIMEOUT_ENV`]'s
    /// timeout (default [`DEFAULT_ROOT_TIMEOUT`]). Errors: `InvalidArgument` for a malformed env
    /// var, `Io` when the address cannot be bound.
    pub fn new() -> Result<UniqueId> {
        let addr = match env_var(ADDR_ENV)? {
            Some(text) => text
                .parse()
                .map_err(|_| Error::InvalidArgument(format!("{ADDR_ENV}={text:?} is not an ip:port address")))?,
            None => SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
        };
        UniqueId::new_on(addr)
    }

    /// Starts a root listening on `addr` (port 0 picks a free port) with [`TIMEOUT_ENV`]'s
    /// timeout. Bind a concrete IP, not `0.0.0.0`, when ranks run on other hosts.
    pub fn new_on(addr: SocketAddr) -> Result<UniqueId> {
        UniqueId::new_with_timeout(addr, env_root_timeout()?)
    }

    /// Starts a root listening on `addr` that gives up `timeout` after this call when not all
    /// ranks joined by then (it sends them a `FAIL`). `timeout` must not be zero.
    pub fn new_with_timeout(addr: SocketAddr, timeout: Duration) -> Result<UniqueId> {
        UniqueId::root_with_magic(addr, random_magic(), timeout)
    }

    /// Starts a root at the agreed address `addr` with the agreed `magic` (neither random):
    /// for jobs whose ranks cannot receive an id from one process, only agree on where the
    /// root listens ([`crate::comm::launch`]'s launchers). The other ranks use
    /// [`UniqueId::agreed`] with the same two values.
    pub fn root_with_magic(addr: SocketAddr, magic: u64, timeout: Duration) -> Result<UniqueId> {
        if timeout.is_zero() {
            return Err(Error::InvalidArgument("the bootstrap root's timeout is zero".into()));
        }
        let deadline = deadline_after(timeout);
        let listener = io_result(
            TcpListener::bind(addr),
            &format!("binding the bootstrap root to {addr}"),
        )?;
        let id = UniqueId {
            addr: io_result(listener.local_addr(), "the bootstrap root's address")?,
            magic,
        };
        io_result(
            listener.set_nonblocking(true),
            "making the bootstrap root's listener non-blocking",
        )?;
        let root = Root {
            listener,
            magic: id.magic,
            timeout,
            deadline,
            joined: Vec::new(),
        };
        let spawned = thread::Builder::new()
            .name("zipcoll-bootstrap-root".into())
            .spawn(move || root.run());
        io_result(spawned, "starting the bootstrap root thread")?;
        Ok(id)
    }

    /// The id of a root that another rank starts at `addr` with `magic`
    /// ([`UniqueId::root_with_magic`]); port 0 is `InvalidArgument`.
    pub fn agreed(addr: SocketAddr, magic: u64) -> Result<UniqueId> {
        if addr.port() == 0 {
            return Err(Error::InvalidArgument(format!(
                "the bootstrap root's address {addr} has port 0"
            )));
        }
        Ok(UniqueId { addr, magic })
    }

    /// The root's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The magic every rank of this rendezvous presents.
    pub fn magic(&self) -> u64 {
        self.magic
    }
}

impl fmt::Display for UniqueId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{ID_PREFIX}{:016x}@{}", self.magic, self.addr)
    }
}

impl FromStr for UniqueId {
    type Err = Error;

    /// Parses `zc1-<16 hex digits>@<ip:port>` (surrounding whitespace allowed); anything else,
    /// port 0 included, is `InvalidArgument`.
    fn from_str(text: &str) -> Result<UniqueId> {
        let bad = |why: &str| Error::InvalidArgument(format!("malformed zipcoll unique id {text:?}: {why}"));
        let rest = text
            .trim()
            .strip_prefix(ID_PREFIX)
            .ok_or_else(|| bad("it does not start with \"zc1-\""))?;
        let (hex, addr) = rest.split_once('@').ok_or_else(|| bad("no '@' before the address"))?;
        if hex.len() != 16 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad("the magic is not 16 hex digits"));
        }
        let magic = u64::from_str_radix(hex, 16).map_err(|_| bad("the magic is not 16 hex digits"))?;
        let addr: SocketAddr = addr.parse().map_err(|_| bad("the address is not ip:port"))?;
        if addr.port() == 0 {
            return Err(bad("the port is 0"));
        }
        Ok(UniqueId { addr, magic })
    }
}

/// A rank that said a valid `HELLO` to the root.
struct Joined {
    rank: usize,
    nranks: usize,
    listen: SocketAddr,
    stream: TcpStream,
}

/// Where the rendezvous stands after one more `HELLO`.
enum Progress {
    Waiting,
    Complete,
    Failed(String),
}

/// A connection and the outcome of reading its `HELLO`, from a reader thread to the root.
type Arrival = (TcpStream, Result<Hello, WireError>);

/// The root thread's state: it owns the listener and every joined rank's connection.
struct Root {
    listener: TcpListener,
    magic: u64,
    timeout: Duration,
    deadline: Instant,
    joined: Vec<Joined>,
}

impl Root {
    /// Accepts connections (each `HELLO` is read by a thread of its own, so a silent or slow
    /// client cannot hold up the others) until all ranks joined, one fails the rendezvous or the
    /// deadline passes; then answers every joined rank and returns.
    fn run(mut self) {
        let (arrivals, arrived) = mpsc::channel::<Arrival>();
        loop {
            let Some(left) = remaining(self.deadline) else {
                let reason = self.timeout_reason();
                return self.fail_all(&reason);
            };
            self.accept_pending(&arrivals);
            let Ok((stream, hello)) = arrived.recv_timeout(POLL.min(left)) else {
                continue;
            };
            match self.admit(stream, hello) {
                Progress::Waiting => {}
                Progress::Complete => return self.send_table(),
                Progress::Failed(reason) => return self.fail_all(&reason),
            }
        }
    }

    /// Hands every connection waiting in the listener's backlog to a `HELLO` reader thread.
    fn accept_pending(&self, arrivals: &mpsc::Sender<Arrival>) {
        while let Ok((stream, _)) = self.listener.accept() {
            let arrivals = arrivals.clone();
            let deadline = self.deadline;
            // A connection whose reader cannot start is dropped: its client sees it closed.
            let _ = thread::Builder::new()
                .name("zipcoll-bootstrap-hello".into())
                .spawn(move || {
                    let hello = receive_hello(&stream, deadline);
                    // The root may be gone already; then the connection just closes.
                    let _ = arrivals.send((stream, hello));
                });
        }
    }

    /// Takes one connection's `HELLO` into the rendezvous, or refuses the connection.
    fn admit(&mut self, stream: TcpStream, hello: Result<Hello, WireError>) -> Progress {
        let hello = match hello {
            Ok(hello) if hello.magic == self.magic => hello,
            Ok(_) => {
                refuse(&stream, "wrong magic: this root serves another unique id");
                return Progress::Waiting;
            }
            Err(error) => {
                refuse(&stream, &format!("malformed hello: {}", error.describe()));
                return Progress::Waiting;
            }
        };
        let (rank, nranks) = (hello.rank as usize, hello.nranks as usize);
        let problem = self.check(rank, nranks);
        self.joined.push(Joined {
            rank,
            nranks,
            listen: hello.listen,
            stream,
        });
        match problem {
            Some(reason) => Progress::Failed(reason),
            None if self.joined.len() == nranks => Progress::Complete,
            None => Progress::Waiting,
        }
    }

    /// Why a `HELLO` of `rank` of `nranks` (with the right magic) fails the rendezvous, if it does.
    fn check(&self, rank: usize, nranks: usize) -> Option<String> {
        if rank >= nranks {
            return Some(format!("rank {rank} joined with nranks {nranks}"));
        }
        if let Some(first) = self.joined.first() {
            if first.nranks != nranks {
                return Some(format!(
                    "the ranks disagree on nranks: rank {} says {}, rank {rank} says {nranks}",
                    first.rank, first.nranks
                ));
            }
        }
        if self.joined.iter().any(|joined| joined.rank == rank) {
            return Some(format!("rank {rank} joined twice"));
        }
        None
    }

    fn timeout_reason(&self) -> String {
        match self.joined.first() {
            Some(first) => format!(
                "the root timed out after {:?}: {} of {} ranks joined",
                self.timeout,
                self.joined.len(),
                first.nranks
            ),
            None => format!("the root timed out after {:?}: no rank joined", self.timeout),
        }
    }

    /// Sends every rank the table of listen addresses in rank order.
    fn send_table(mut self) {
        self.joined.sort_by_key(|joined| joined.rank);
        let addrs: Vec<SocketAddr> = self.joined.iter().map(|joined| joined.listen).collect();
        let table = encode_table(&addrs);
        for joined in &self.joined {
            // A rank that cannot be told finds out through its own timeout.
            let _ = reply(&joined.stream, TAG_TABLE, &table);
        }
    }

    /// Sends every joined rank a `FAIL`.
    fn fail_all(self, reason: &str) {
        let fail = encode_fail(reason);
        for joined in &self.joined {
            let _ = reply(&joined.stream, TAG_FAIL, &fail);
        }
    }
}

/// Reads a connection's `HELLO` with the root's deadline as the time limit.
fn receive_hello(stream: &TcpStream, deadline: Instant) -> Result<Hello, WireError> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(remaining(deadline).unwrap_or(MIN_WAIT)))?;
    read_hello(stream)
}

/// Tells a refused client why, as far as it listens.
fn refuse(stream: &TcpStream, reason: &str) {
    let _ = reply(stream, TAG_FAIL, &encode_fail(reason));
}

fn reply(stream: &TcpStream, tag: u32, payload: &[u8]) -> io::Result<()> {
    stream.set_write_timeout(Some(ROOT_WRITE_TIMEOUT))?;
    write_frame(stream, tag, &[payload])
}

// ---------------------------------------------------------------------------------------------
// A rank's bootstrap
// ---------------------------------------------------------------------------------------------

/// One rank's end of the bootstrap: its ring connections to rank `rank + 1` and from rank
/// `rank - 1`. Its methods take `&self` (the connections are behind a mutex, calls from several
/// threads run one after the other), and every rank must call them in the same order.
#[derive(Debug)]
pub struct Bootstrap {
    rank: usize,
    nranks: usize,
    timeout: Duration,
    /// The IP this rank's listener is bound to (the interface that reaches the root).
    ip: IpAddr,
    /// `None` when `nranks == 1`.
    ring: Option<Mutex<Ring>>,
}

/// The ring's two connections.
#[derive(Debug)]
struct Ring {
    next: TcpStream,
    prev: TcpStream,
    /// Why an earlier call failed: the ring is out of step and refuses further calls.
    broken: Option<String>,
}

impl Bootstrap {
    /// Joins the rendezvous of `id` as `rank` of `nranks` and connects the ring; returns once
    /// all `nranks` ranks joined. `timeout` bounds the whole call (connecting to a root that is
    /// not listening yet is retried until then) and, afterwards, every socket operation.
    ///
    /// Errors: `InvalidArgument` (`nranks == 0`, `rank >= nranks`, a zero timeout),
    /// `Bootstrap` (the root refused this rank or failed the rendezvous), `Timeout`, `Remote`
    /// (a neighbour closed its connection or sent garbage), `Io`.
    pub fn init(id: &UniqueId, rank: usize, nranks: usize, timeout: Duration) -> Result<Bootstrap> {
        check_init_args(rank, nranks, timeout)?;
        let deadline = deadline_after(timeout);
        let root = connect_root(id.addr, deadline, timeout)?;
        let listener = bind_listener(&root)?;
        let hello = Hello {
            magic: id.magic,
            rank: rank as u32,
            nranks: nranks as u32,
            listen: io_result(listener.local_addr(), "the bootstrap listener's address")?,
        };
        let table = rendezvous(&root, &hello, deadline, timeout)?;
        drop(root);
        let ring = match nranks {
            1 => None,
            _ => Some(Mutex::new(connect_ring(&listener, &hello, &table, deadline, timeout)?)),
        };
        Ok(Bootstrap {
            rank,
            nranks,
            timeout,
            ip: hello.listen.ip(),
            ring,
        })
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks.
    pub fn nranks(&self) -> usize {
        self.nranks
    }

    /// The IP this rank's bootstrap listener is bound to: the interface that reaches the root,
    /// which every other rank of the job reaches too (the ring connects to it).
    pub fn local_ip(&self) -> IpAddr {
        self.ip
    }

    /// The time limit of every socket operation (the `timeout` given to [`Bootstrap::init`]).
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Gathers one blob from every rank: entry `r` of the result is rank `r`'s `mine`. Blobs
    /// may differ in length (at most [`MAX_BLOB_LEN`], else `InvalidArgument`). A ring of
    /// `nranks - 1` steps; any failure (`Timeout`, `Remote`, `Io`) closes the ring, so the
    /// neighbours fail too rather than wait, and later calls return `Bootstrap`.
    pub fn allgather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        if mine.len() > MAX_BLOB_LEN {
            return Err(Error::InvalidArgument(format!(
                "an allgather blob of {} bytes exceeds the limit of {MAX_BLOB_LEN}",
                mine.len()
            )));
        }
        let mut blobs = vec![Vec::new(); self.nranks];
        blobs[self.rank] = mine.to_vec();
        let Some(ring) = &self.ring else {
            return Ok(blobs);
        };
        let mut ring = ring.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(reason) = &ring.broken {
            return Err(Error::Bootstrap(format!(
                "the bootstrap ring is unusable after an earlier failure: {reason}"
            )));
        }
        for step in 0..self.nranks - 1 {
            let send = (self.rank + self.nranks - step) % self.nranks;
            let recv = (self.rank + self.nranks - 1 - step) % self.nranks;
            match self.exchange(&ring, send, &blobs[send], recv) {
                Ok(blob) => blobs[recv] = blob,
                Err(error) => {
                    ring.close(&error);
                    return Err(error);
                }
            }
        }
        Ok(blobs)
    }

    /// Returns once every rank called `barrier` (an allgather of empty blobs).
    pub fn barrier(&self) -> Result<()> {
        self.allgather(&[]).map(drop)
    }

    /// The next and the previous rank on the ring.
    fn neighbours(&self) -> (usize, usize) {
        (
            (self.rank + 1) % self.nranks,
            (self.rank + self.nranks - 1) % self.nranks,
        )
    }

    /// One ring step: sends rank `sent`'s blob to the next rank while receiving rank
    /// `expected`'s from the previous one (concurrently, so large blobs cannot deadlock the ring
    /// on full socket buffers).
    fn exchange(&self, ring: &Ring, sent: usize, data: &[u8], expected: usize) -> Result<Vec<u8>> {
        let (next, prev) = self.neighbours();
        thread::scope(|scope| {
            let sender = thread::Builder::new()
                .name("zipcoll-bootstrap-send".into())
                .spawn_scoped(scope, || {
                    send_blob(&ring.next, sent, data).map_err(|error| {
                        let what = format!("sending rank {sent}'s blob to rank {next}");
                        socket_error(error, &what, Some(next), self.timeout)
                    })
                });
            let sender = io_result(sender, "starting the bootstrap sender thread")?;
            let received = recv_blob(&ring.prev, expected).map_err(|error| {
                let what = format!("receiving rank {expected}'s blob from rank {prev}");
                error.into_error(Some(prev), &what, self.timeout)
            });
            if received.is_err() {
                // Unblocks the sender at once instead of at its write timeout.
                let _ = ring.next.shutdown(Shutdown::Both);
            }
            let sent = sender
                .join()
                .unwrap_or_else(|_| Err(Error::Bootstrap("the bootstrap sender thread panicked".into())));
            let blob = received?;
            sent.map(|()| blob)
        })
    }
}

impl Ring {
    /// Marks the ring broken and shuts both connections, so the neighbours see them closed.
    fn close(&mut self, error: &Error) {
        self.broken = Some(error.to_string());
        let _ = self.next.shutdown(Shutdown::Both);
        let _ = self.prev.shutdown(Shutdown::Both);
    }
}

fn check_init_args(rank: usize, nranks: usize, timeout: Duration) -> Result<()> {
    if nranks == 0 || nranks > u32::MAX as usize {
        return Err(Error::InvalidArgument(format!(
            "nranks {nranks} is not in 1..={}",
            u32::MAX
        )));
    }
    if rank >= nranks {
        return Err(Error::InvalidArgument(format!(
            "rank {rank} is not below nranks {nranks}"
        )));
    }
    if timeout.is_zero() {
        return Err(Error::InvalidArgument("the bootstrap timeout is zero".into()));
    }
    Ok(())
}

/// Connects to the root, retrying while it is not listening (yet) until the deadline.
fn connect_root(addr: SocketAddr, deadline: Instant, timeout: Duration) -> Result<TcpStream> {
    use io::ErrorKind as Kind;
    let what = format!("connecting to the bootstrap root at {addr}");
    loop {
        let Some(left) = remaining(deadline) else {
            return Err(Error::Timeout { what, after: timeout });
        };
        match TcpStream::connect_timeout(&addr, left) {
            Ok(stream) => return Ok(stream),
            Err(error)
                if matches!(
                    error.kind(),
                    Kind::ConnectionRefused
                        | Kind::ConnectionReset
                        | Kind::ConnectionAborted
                        | Kind::Interrupted
                        | Kind::TimedOut
                        | Kind::WouldBlock
                ) =>
            {
                thread::sleep(CONNECT_RETRY.min(left));
            }
            Err(source) => return Err(Error::Io { what, source }),
        }
    }
}

/// Binds this rank's listener on the local IP of its connection to the root, port 0.
fn bind_listener(root: &TcpStream) -> Result<TcpListener> {
    let ip = io_result(root.local_addr(), "the local address of the root connection")?.ip();
    let listener = io_result(
        TcpListener::bind((ip, 0)),
        &format!("binding the bootstrap listener on {ip}"),
    )?;
    io_result(
        listener.set_nonblocking(true),
        "making the bootstrap listener non-blocking",
    )?;
    Ok(listener)
}

/// Says `HELLO` to the root and returns its table of listen addresses.
fn rendezvous(root: &TcpStream, hello: &Hello, deadline: Instant, timeout: Duration) -> Result<Vec<SocketAddr>> {
    let left = remaining(deadline).unwrap_or(MIN_WAIT);
    io_result(set_timeouts(root, left), "setting the root connection's time limits")?;
    let what = "sending the hello to the bootstrap root";
    write_frame(root, TAG_HELLO, &[&hello.encode()]).map_err(|error| socket_error(error, what, None, timeout))?;
    let what = "waiting for the bootstrap root's table of ranks";
    match read_reply(root).map_err(|error| error.into_error(None, what, timeout))? {
        Reply::Fail(reason) => Err(Error::Bootstrap(format!(
            "the root refused rank {}: {reason}",
            hello.rank
        ))),
        Reply::Table(table) => check_table(table, hello),
    }
}

/// A table must list `nranks` addresses, this rank's own at its index.
fn check_table(table: Vec<SocketAddr>, hello: &Hello) -> Result<Vec<SocketAddr>> {
    if table.len() != hello.nranks as usize {
        return Err(Error::Bootstrap(format!(
            "the root's table lists {} ranks, not {}",
            table.len(),
            hello.nranks
        )));
    }
    if table[hello.rank as usize] != hello.listen {
        return Err(Error::Bootstrap(format!(
            "the root's table lists {} for rank {}, which listens on {}",
            table[hello.rank as usize], hello.rank, hello.listen
        )));
    }
    Ok(table)
}

/// Connects to the next rank and accepts the previous one's connection.
fn connect_ring(
    listener: &TcpListener,
    hello: &Hello,
    table: &[SocketAddr],
    deadline: Instant,
    timeout: Duration,
) -> Result<Ring> {
    let (rank, nranks) = (hello.rank as usize, table.len());
    let (next, prev) = ((rank + 1) % nranks, (rank + nranks - 1) % nranks);
    let next = connect_next(table[next], next, hello, deadline, timeout)?;
    let prev = accept_prev(listener, hello, prev, deadline, timeout)?;
    for stream in [&next, &prev] {
        io_result(configure(stream, timeout), "configuring a bootstrap ring connection")?;
    }
    Ok(Ring {
        next,
        prev,
        broken: None,
    })
}

/// Connects to the next rank's listener and says `HELLO`.
fn connect_next(
    addr: SocketAddr,
    next: usize,
    hello: &Hello,
    deadline: Instant,
    timeout: Duration,
) -> Result<TcpStream> {
    let left = remaining(deadline).unwrap_or(MIN_WAIT);
    let what = format!("connecting to rank {next} at {addr}");
    let stream =
        TcpStream::connect_timeout(&addr, left).map_err(|error| socket_error(error, &what, Some(next), timeout))?;
    let what = format!("sending the hello to rank {next}");
    set_timeouts(&stream, left)
        .and_then(|()| write_frame(&stream, TAG_HELLO, &[&hello.encode()]))
        .map_err(|error| socket_error(error, &what, Some(next), timeout))?;
    Ok(stream)
}

/// Accepts the previous rank's connection, ignoring strangers (no `HELLO` of this magic).
fn accept_prev(
    listener: &TcpListener,
    me: &Hello,
    prev: usize,
    deadline: Instant,
    timeout: Duration,
) -> Result<TcpStream> {
    use io::ErrorKind as Kind;
    loop {
        let Some(left) = remaining(deadline) else {
            return Err(Error::Timeout {
                what: format!("rank {prev} connecting to rank {}", me.rank),
                after: timeout,
            });
        };
        match listener.accept() {
            Ok((stream, _)) => {
                if let Some(stream) = admit_prev(stream, me, prev, deadline)? {
                    return Ok(stream);
                }
            }
            Err(error) if error.kind() == Kind::WouldBlock => thread::sleep(POLL.min(left)),
            Err(error) if matches!(error.kind(), Kind::Interrupted | Kind::ConnectionAborted) => {}
            Err(source) => {
                let what = format!("accepting rank {prev}'s connection");
                return Err(Error::Io { what, source });
            }
        }
    }
}

/// Reads the `HELLO` of a connection to this rank's listener: `Some` when it is the previous
/// rank, `None` for a stranger (unreadable, or another magic); `Bootstrap` when a rank of this
/// rendezvous claims to be another rank.
fn admit_prev(stream: TcpStream, me: &Hello, prev: usize, deadline: Instant) -> Result<Option<TcpStream>> {
    let left = remaining(deadline).unwrap_or(MIN_WAIT);
    if stream.set_nonblocking(false).is_err() || stream.set_read_timeout(Some(left)).is_err() {
        return Ok(None);
    }
    let Ok(hello) = read_hello(&stream) else {
        return Ok(None);
    };
    if hello.magic != me.magic {
        return Ok(None);
    }
    if hello.rank as usize != prev || hello.nranks != me.nranks {
        return Err(Error::Bootstrap(format!(
            "rank {} expected rank {prev} of {} on its ring connection, got rank {} of {}",
            me.rank, me.nranks, hello.rank, hello.nranks
        )));
    }
    Ok(Some(stream))
}

fn configure(stream: &TcpStream, timeout: Duration) -> io::Result<()> {
    set_timeouts(stream, timeout)?;
    stream.set_nodelay(true)
}

fn set_timeouts(stream: &TcpStream, limit: Duration) -> io::Result<()> {
    stream.set_read_timeout(Some(limit))?;
    stream.set_write_timeout(Some(limit))
}

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

/// Maps a socket error of `what`, on a connection to rank `peer` (`None`: the root), to the
/// crate's error: a time limit is `Timeout { after }`, a closed, reset or refused connection is
/// `Remote` naming the peer (`Bootstrap` for the root), anything else `Io`.
pub(crate) fn socket_error(error: io::Error, what: &str, peer: Option<usize>, after: Duration) -> Error {
    use io::ErrorKind as Kind;
    match error.kind() {
        Kind::WouldBlock | Kind::TimedOut => Error::Timeout {
            what: what.to_string(),
            after,
        },
        Kind::UnexpectedEof
        | Kind::ConnectionReset
        | Kind::ConnectionAborted
        | Kind::ConnectionRefused
        | Kind::BrokenPipe
        | Kind::NotConnected => peer_failed(peer, format!("{what}: the connection was closed ({error})")),
        _ => Error::Io {
            what: what.to_string(),
            source: error,
        },
    }
}

/// The error for something wrong at the other end: `Remote` for a rank, `Bootstrap` for the root.
fn peer_failed(peer: Option<usize>, reason: String) -> Error {
    match peer {
        Some(rank) => Error::Remote { rank, reason },
        None => Error::Bootstrap(reason),
    }
}

/// A failure on one connection, before it is attributed to a peer.
#[derive(Debug)]
enum WireError {
    Io(io::Error),
    Malformed(String),
}

impl From<io::Error> for WireError {
    fn from(error: io::Error) -> Self {
        WireError::Io(error)
    }
}

impl WireError {
    fn into_error(self, peer: Option<usize>, what: &str, after: Duration) -> Error {
        match self {
            WireError::Io(error) => socket_error(error, what, peer, after),
            WireError::Malformed(reason) => peer_failed(peer, format!("{what}: {reason}")),
        }
    }

    fn describe(&self) -> String {
        match self {
            WireError::Io(error) => error.to_string(),
            WireError::Malformed(reason) => reason.clone(),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Frames and messages
// ---------------------------------------------------------------------------------------------

/// Writes one frame whose payload is the concatenation of `parts`.
fn write_frame(mut stream: &TcpStream, tag: u32, parts: &[&[u8]]) -> io::Result<()> {
    let len: usize = parts.iter().map(|part| part.len()).sum();
    let len32 = u32::try_from(len).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "frame too long"))?;
    let mut head = Vec::with_capacity(HEADER_LEN + len.min(COALESCE_LEN));
    head.extend_from_slice(&tag.to_le_bytes());
    head.extend_from_slice(&len32.to_le_bytes());
    if len <= COALESCE_LEN {
        parts.iter().for_each(|part| head.extend_from_slice(part));
        return stream.write_all(&head);
    }
    stream.write_all(&head)?;
    parts.iter().try_for_each(|part| stream.write_all(part))
}

/// Reads one frame, refusing a payload longer than `max_len` before reading (or allocating) it.
fn read_frame(mut stream: &TcpStream, max_len: usize) -> Result<(u32, Vec<u8>), WireError> {
    let mut header = [0u8; HEADER_LEN];
    stream.read_exact(&mut header)?;
    let tag = u32::from_le_bytes([header[0], header[1], header[2], header[3]]);
    let len = u32::from_le_bytes([header[4], header[5], header[6], header[7]]) as usize;
    if len > max_len {
        return Err(WireError::Malformed(format!(
            "a frame of {len} bytes (tag {tag}) exceeds the limit of {max_len}"
        )));
    }
    // Grows as bytes arrive: a peer that lies about the length costs no more than it sends.
    let mut payload = Vec::with_capacity(len.min(COALESCE_LEN));
    Read::take(stream, len as u64).read_to_end(&mut payload)?;
    if payload.len() != len {
        let reason = format!("a frame was cut off after {} of {len} bytes", payload.len());
        return Err(WireError::Io(io::Error::new(io::ErrorKind::UnexpectedEof, reason)));
    }
    Ok((tag, payload))
}

fn expect_tag(tag: u32, expected: u32, name: &str) -> Result<(), WireError> {
    match tag == expected {
        true => Ok(()),
        false => Err(WireError::Malformed(format!(
            "expected a {name} message (tag {expected}), got tag {tag}"
        ))),
    }
}

/// A `HELLO`: who a connection is, and where it listens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Hello {
    magic: u64,
    rank: u32,
    nranks: u32,
    listen: SocketAddr,
}

impl Hello {
    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(MAX_HELLO_LEN);
        out.extend_from_slice(&PROTOCOL_VERSION.to_le_bytes());
        out.extend_from_slice(&self.magic.to_le_bytes());
        out.extend_from_slice(&self.rank.to_le_bytes());
        out.extend_from_slice(&self.nranks.to_le_bytes());
        put_addr(&mut out, &self.listen);
        out
    }

    fn decode(payload: &[u8]) -> Result<Hello, WireError> {
        let mut decoder = Decoder(payload);
        let version = decoder.u32("protocol version")?;
        if version != PROTOCOL_VERSION {
            return Err(WireError::Malformed(format!(
                "protocol version {version}, this build speaks {PROTOCOL_VERSION}"
            )));
        }
        let hello = Hello {
            magic: decoder.u64("magic")?,
            rank: decoder.u32("rank")?,
            nranks: decoder.u32("nranks")?,
            listen: decoder.addr()?,
        };
        decoder.finish("hello")?;
        Ok(hello)
    }
}

fn read_hello(stream: &TcpStream) -> Result<Hello, WireError> {
    let (tag, payload) = read_frame(stream, MAX_HELLO_LEN)?;
    expect_tag(tag, TAG_HELLO, "HELLO")?;
    Hello::decode(&payload)
}

/// The root's answer to a `HELLO`.
enum Reply {
    Table(Vec<SocketAddr>),
    Fail(String),
}

fn encode_table(addrs: &[SocketAddr]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + addrs.len() * 19);
    out.extend_from_slice(&(addrs.len() as u32).to_le_bytes());
    addrs.iter().for_each(|addr| put_addr(&mut out, addr));
    out
}

fn encode_fail(reason: &str) -> Vec<u8> {
    let mut end = reason.len().min(MAX_REASON_LEN);
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    let mut out = Vec::with_capacity(4 + end);
    out.extend_from_slice(&(end as u32).to_le_bytes());
    out.extend_from_slice(&reason.as_bytes()[..end]);
    out
}

fn read_reply(stream: &TcpStream) -> Result<Reply, WireError> {
    let (tag, payload) = read_frame(stream, MAX_REPLY_LEN)?;
    parse_reply(tag, &payload)
}

/// The root's reply of `tag` with `payload`.
fn parse_reply(tag: u32, payload: &[u8]) -> Result<Reply, WireError> {
    let mut decoder = Decoder(payload);
    let reply = match tag {
        TAG_TABLE => {
            let count = decoder.u32("table length")?;
            // Each address takes at least 7 bytes of the (bounded) payload, so `count` cannot
            // make this loop run long.
            let table = (0..count).map(|_| decoder.addr()).collect::<Result<_, _>>()?;
            Reply::Table(table)
        }
        TAG_FAIL => {
            let len = decoder.u32("reason length")? as usize;
            Reply::Fail(String::from_utf8_lossy(decoder.take(len, "reason")?).into_owned())
        }
        _ => {
            return Err(WireError::Malformed(format!(
                "expected a TABLE or a FAIL message, got tag {tag}"
            )))
        }
    };
    decoder.finish("the root's reply")?;
    Ok(reply)
}

fn send_blob(stream: &TcpStream, origin: usize, data: &[u8]) -> io::Result<()> {
    write_frame(stream, TAG_BLOB, &[&(origin as u32).to_le_bytes(), data])
}

/// Reads a `BLOB` frame, which must carry rank `expected`'s blob.
fn recv_blob(stream: &TcpStream, expected: usize) -> Result<Vec<u8>, WireError> {
    let (tag, mut payload) = read_frame(stream, 4 + MAX_BLOB_LEN)?;
    expect_tag(tag, TAG_BLOB, "BLOB")?;
    let origin = Decoder(&payload).u32("blob origin")? as usize;
    if origin != expected {
        return Err(WireError::Malformed(format!(
            "got rank {origin}'s blob where rank {expected}'s was due"
        )));
    }
    payload.drain(..4);
    Ok(payload)
}

/// The bootstrap's message parsers on arbitrary bytes, for the fuzz targets (`fuzz/`); not an
/// API. Each returns whether the message parsed, and panics only on a bug (a parsed message
/// that does not encode back to its bytes).
#[doc(hidden)]
pub mod fuzzing {
    use super::*;

    /// A message of `tag` with `payload`, as its reader parses it: a `HELLO` (the root), a
    /// `TABLE` or `FAIL` (a rank), a `BLOB` (a ring neighbour).
    pub fn parse_message(tag: u32, payload: &[u8]) -> bool {
        match tag {
            TAG_HELLO => match Hello::decode(payload) {
                Ok(h) => {
                    assert_eq!(h.encode(), payload, "a HELLO that does not encode back");
                    true
                }
                Err(_) => false,
            },
            TAG_BLOB => payload.len() >= 4,
            _ => match parse_reply(tag, payload) {
                Ok(Reply::Table(t)) => {
                    assert_eq!(encode_table(&t), payload, "a TABLE that does not encode back");
                    true
                }
                Ok(Reply::Fail(_)) => true,
                Err(_) => false,
            },
        }
    }
}

fn put_addr(out: &mut Vec<u8>, addr: &SocketAddr) {
    match addr.ip() {
        IpAddr::V4(ip) => {
            out.push(4);
            out.extend_from_slice(&ip.octets());
        }
        IpAddr::V6(ip) => {
            out.push(6);
            out.extend_from_slice(&ip.octets());
        }
    }
    out.extend_from_slice(&addr.port().to_le_bytes());
}

/// Reads fields off a payload; running out of bytes is `Malformed`, never a panic.
struct Decoder<'a>(&'a [u8]);

impl<'a> Decoder<'a> {
    fn take(&mut self, len: usize, what: &str) -> Result<&'a [u8], WireError> {
        if self.0.len() < len {
            return Err(WireError::Malformed(format!(
                "the {what} needs {len} bytes, {} are left",
                self.0.len()
            )));
        }
        let (head, rest) = self.0.split_at(len);
        self.0 = rest;
        Ok(head)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], WireError> {
        let mut bytes = [0u8; N];
        bytes.copy_from_slice(self.take(N, what)?);
        Ok(bytes)
    }

    fn u8(&mut self, what: &str) -> Result<u8, WireError> {
        self.array::<1>(what).map(|[byte]| byte)
    }

    fn u16(&mut self, what: &str) -> Result<u16, WireError> {
        self.array(what).map(u16::from_le_bytes)
    }

    fn u32(&mut self, what: &str) -> Result<u32, WireError> {
        self.array(what).map(u32::from_le_bytes)
    }

    fn u64(&mut self, what: &str) -> Result<u64, WireError> {
        self.array(what).map(u64::from_le_bytes)
    }

    fn addr(&mut self) -> Result<SocketAddr, WireError> {
        let ip = match self.u8("address family")? {
            4 => IpAddr::V4(Ipv4Addr::from(self.array::<4>("IPv4 address")?)),
            6 => IpAddr::V6(Ipv6Addr::from(self.array::<16>("IPv6 address")?)),
            family => return Err(WireError::Malformed(format!("unknown address family {family}"))),
        };
        Ok(SocketAddr::new(ip, self.u16("port")?))
    }

    fn finish(self, what: &str) -> Result<(), WireError> {
        match self.0.len() {
            0 => Ok(()),
            extra => Err(WireError::Malformed(format!("{extra} stray bytes after the {what}"))),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Small helpers
// ---------------------------------------------------------------------------------------------

/// Attaches `what` to an OS error: `Io { what, source }`.
fn io_result<T>(result: io::Result<T>, what: &str) -> Result<T> {
    result.map_err(|source| Error::Io {
        what: what.to_string(),
        source,
    })
}

/// The time left until `deadline`, `None` once it passed.
fn remaining(deadline: Instant) -> Option<Duration> {
    let left = deadline.saturating_duration_since(Instant::now());
    (!left.is_zero()).then_some(left)
}

/// `timeout` from now, saturating far in the future instead of overflowing.
fn deadline_after(timeout: Duration) -> Instant {
    const FAR: Duration = Duration::from_secs(365 * 24 * 3600);
    let now = Instant::now();
    now.checked_add(timeout).or_else(|| now.checked_add(FAR)).unwrap_or(now)
}

/// A 64-bit magic: the process's random hasher keys over the time, the pid and a counter.
fn random_magic() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = RandomState::new().build_hasher();
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos());
    hasher.write_u128(nanos);
    hasher.write_u32(std::process::id());
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    hasher.finish()
}

/// An env var's value; `None` when unset or empty, `InvalidArgument` when not UTF-8.
fn env_var(name: &str) -> Result<Option<String>> {
    match std::env::var(name) {
        Ok(value) if value.trim().is_empty() => Ok(None),
        Ok(value) => Ok(Some(value.trim().to_string())),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => Err(Error::InvalidArgument(format!("{name} is not UTF-8"))),
    }
}

/// The root's timeout from [`TIMEOUT_ENV`], else [`DEFAULT_ROOT_TIMEOUT`].
pub(crate) fn env_root_timeout() -> Result<Duration> {
    let Some(text) = env_var(TIMEOUT_ENV)? else {
        return Ok(DEFAULT_ROOT_TIMEOUT);
    };
    match text.parse::<u64>() {
        Ok(ms) if ms > 0 => Ok(Duration::from_millis(ms)),
        _ => Err(Error::InvalidArgument(format!(
            "{TIMEOUT_ENV}={text:?} is not a positive number of milliseconds"
        ))),
    }
}
