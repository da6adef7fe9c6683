//! Opening the sockets: a listener per rank, and for each pair of ranks `sockets` data streams
//! and a control stream (socket index `sockets`), each opened by a handshake (the lower rank dials and says HELLO, the higher rank
//! accepts and answers ACK). Connections that do not complete a valid handshake for this
//! communicator are dropped without disturbing the real ones.

use super::wire::{Handshake, HandshakeKind, Striping, HANDSHAKE_BYTES};
use crate::error::{Error, Result};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Connections the acceptor keeps waiting for their handshake at once beyond the ones it
/// expects (a dialer sends the HELLO of all its sockets before it reads an ACK, so every
/// expected socket may be pending at once); past that the oldest are dropped first.
const MAX_STRAYS: usize = 64;
/// How long the acceptor sleeps when nothing happened.
const ACCEPT_POLL: Duration = Duration::from_millis(1);
/// How long a dialer waits before retrying a refused connection.
const DIAL_RETRY: Duration = Duration::from_millis(10);

/// A rank's listening socket for the NET transport. Bind it first, publish [`NetListener::addr`]
/// to the other ranks (the bootstrap's allgather), then hand it to
/// [`super::NetTransport::connect`].
#[derive(Debug)]
pub struct NetListener {
    listener: TcpListener,
    addr: SocketAddr,
}

impl NetListener {
    /// Listens on `ip` at a port the OS picks. `ip` should be an address the peers can reach
    /// (not the unspecified address, which [`NetListener::addr`] would hand them as is).
    pub fn bind(ip: IpAddr) -> Result<NetListener> {
        NetListener::bind_addr(SocketAddr::new(ip, 0))
    }

    /// Listens on `addr` (port 0: the OS picks one).
    pub fn bind_addr(addr: SocketAddr) -> Result<NetListener> {
        let io = |source| Error::Io {
            what: format!("binding the NET listener to {addr}"),
            source,
        };
        let listener = TcpListener::bind(addr).map_err(io)?;
        let addr = listener.local_addr().map_err(io)?;
        Ok(NetListener { listener, addr })
    }

    /// The address peers dial.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

/// What both halves of the setup share.
struct Setup<'a> {
    my_rank: usize,
    comm_magic: u64,
    striping: Striping,
    timeout: Duration,
    deadline: Instant,
    /// Raised when either half fails, so the other gives up at once.
    gave_up: &'a AtomicBool,
}

/// Opens `striping.sockets + 1` streams to every peer of `peers` (checked: distinct ranks
/// other than `my_rank`); returns them by peer rank, in socket order (the control socket
/// last).
pub(super) fn establish(
    my_rank: usize,
    listener: &NetListener,
    peers: &[(usize, SocketAddr)],
    comm_magic: u64,
    striping: Striping,
    timeout: Duration,
) -> Result<BTreeMap<usize, Vec<TcpStream>>> {
    let gave_up = AtomicBool::new(false);
    let setup = Setup {
        my_rank,
        comm_magic,
        striping,
        timeout,
        deadline: Instant::now() + timeout,
        gave_up: &gave_up,
    };
    let dial: Vec<(usize, SocketAddr)> = peers.iter().copied().filter(|(r, _)| *r > my_rank).collect();
    let accept: BTreeSet<usize> = peers.iter().map(|(r, _)| *r).filter(|r| *r < my_rank).collect();
    // dial (upwards) on a helper thread while this one accepts (from below)
    let (dialed, accepted) = std::thread::scope(|s| {
        let dialer = std::thread::Builder::new()
            .name("zipcoll-net-dial".into())
            .spawn_scoped(s, || setup.failing(setup.dial_all(&dial)))
            .map_err(|source| Error::Io {
                what: "spawning the NET dialer thread".into(),
                source,
            })?;
        let accepted = setup.failing(setup.accept_all(&listener.listener, &accept));
        let dialed = dialer
            .join()
            .unwrap_or_else(|_| Err(Error::InvalidArgument("the NET dialer thread panicked".into())));
        Ok::<_, Error>((dialed, accepted))
    })?;
    // the half that failed first says why; the other only gave up
    let (dialed, accepted) = match (dialed, accepted) {
        (Ok(d), Ok(a)) => (d, a),
        (Err(Error::Aborted), Err(e)) | (Err(e), _) | (_, Err(e)) => return Err(e),
    };
    let mut by_peer: BTreeMap<usize, Vec<(u32, TcpStream)>> = BTreeMap::new();
    for ((peer, socket), stream) in dialed.into_iter().chain(accepted) {
        by_peer.entry(peer).or_default().push((socket, stream));
    }
    Ok(by_peer
        .into_iter()
        .map(|(peer, mut v)| {
            v.sort_by_key(|(socket, _)| *socket);
            (peer, v.into_iter().map(|(_, s)| s).collect())
        })
        .collect())
}

type Streams = Vec<((usize, u32), TcpStream)>;

impl Setup<'_> {
    /// Raises `gave_up` when `r` is an error.
    fn failing<T>(&self, r: Result<T>) -> Result<T> {
        if r.is_err() {
            self.gave_up.store(true, Ordering::SeqCst);
        }
        r
    }

    /// The time left before the deadline, or the timeout error for `what`.
    fn left(&self, what: impl FnOnce() -> String) -> Result<Duration> {
        if self.gave_up.load(Ordering::SeqCst) {
            return Err(Error::Aborted);
        }
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Error::Timeout {
                what: what(),
                after: self.timeout,
            });
        }
        Ok(left)
    }

    fn record(&self, kind: HandshakeKind, peer: usize, socket: u32) -> Handshake {
        Handshake {
            kind,
            comm_magic: self.comm_magic,
            from_rank: self.my_rank as u32,
            to_rank: peer as u32,
            socket,
            sockets: self.striping.sockets,
            min_piece: self.striping.min_piece,
        }
    }

    /// The streams per peer: the data sockets and the control socket.
    fn streams(&self) -> u32 {
        self.striping.sockets + 1
    }

    /// Why a peer whose handshake says `sockets` and `min_piece` cannot talk to this rank, if
    /// it cannot.
    fn mismatch(&self, sockets: u32, min_piece: u32) -> Option<String> {
        let mine = self.striping;
        (sockets != mine.sockets || min_piece != mine.min_piece).then(|| {
            format!(
                "uses {sockets} NET sockets per peer and pieces of at least {min_piece} bytes, rank {} uses {} and {}",
                self.my_rank, mine.sockets, mine.min_piece
            )
        })
    }

    /// Dials every socket of every higher peer, one after the other.
    /// Every socket of a peer says HELLO before the first ACK is awaited, so the acceptor
    /// answers them in one pass rather than one poll interval each.
    fn dial_all(&self, peers: &[(usize, SocketAddr)]) -> Result<Streams> {
        let mut out = Vec::new();
        for &(peer, addr) in peers {
            let hellos = (0..self.streams())
                .map(|socket| self.hello(peer, addr, socket))
                .collect::<Result<Vec<_>>>()?;
            for (socket, stream) in (0..).zip(hellos) {
                out.push(((peer, socket), self.ack(peer, addr, socket, stream)?));
            }
        }
        Ok(out)
    }

    /// Connects to `peer` (retrying until the deadline) and says HELLO.
    fn hello(&self, peer: usize, addr: SocketAddr, socket: u32) -> Result<TcpStream> {
        let what = || format!("rank {peer} at {addr} to accept NET socket {socket}");
        let mut stream = loop {
            let left = self.left(what)?;
            match TcpStream::connect_timeout(&addr, left) {
                Ok(s) => break s,
                Err(_) => std::thread::sleep(DIAL_RETRY.min(left)),
            }
        };
        let io = |e: std::io::Error| handshake_error(peer, &what(), self.timeout, e);
        let left = self.left(what)?;
        stream.set_write_timeout(Some(left)).map_err(io)?;
        stream.set_read_timeout(Some(left)).map_err(io)?;
        stream
            .write_all(&self.record(HandshakeKind::Hello, peer, socket).encode())
            .map_err(io)?;
        Ok(stream)
    }

    /// Reads and checks the ACK of the stream [`Setup::hello`] opened.
    fn ack(&self, peer: usize, addr: SocketAddr, socket: u32, mut stream: TcpStream) -> Result<TcpStream> {
        let what = || format!("rank {peer} at {addr} to accept NET socket {socket}");
        let io = |e: std::io::Error| handshake_error(peer, &what(), self.timeout, e);
        let mut b = [0u8; HANDSHAKE_BYTES];
        stream.read_exact(&mut b).map_err(io)?;
        let remote = |reason: String| Error::Remote { rank: peer, reason };
        let ack = Handshake::decode(&b).map_err(remote)?;
        let expect = Handshake {
            from_rank: peer as u32,
            to_rank: self.my_rank as u32,
            ..self.record(HandshakeKind::Ack, peer, socket)
        };
        if let Some(why) = self.mismatch(ack.sockets, ack.min_piece) {
            return Err(remote(why));
        }
        if ack != expect {
            return Err(remote(format!(
                "answered the NET handshake with {ack:?}, expected {expect:?}"
            )));
        }
        Ok(stream)
    }

    /// Accepts until every socket of every lower peer in `from` has said a valid HELLO.
    fn accept_all(&self, listener: &TcpListener, from: &BTreeSet<usize>) -> Result<Streams> {
        let mut want: BTreeSet<(usize, u32)> = from
            .iter()
            .flat_map(|&p| (0..self.streams()).map(move |s| (p, s)))
            .collect();
        let mut pending: Vec<Pending> = Vec::new();
        let mut out = Vec::new();
        let nonblocking = |on| {
            listener.set_nonblocking(on).map_err(|source| Error::Io {
                what: "setting up the NET listener".into(),
                source,
            })
        };
        nonblocking(true)?;
        while !want.is_empty() {
            self.left(|| format!("ranks {:?} to open their NET sockets", missing(&want)))?;
            let mut busy = false;
            match listener.accept() {
                Ok((stream, _)) => {
                    busy = true;
                    if stream.set_nonblocking(true).is_ok() {
                        if pending.len() >= want.len() + MAX_STRAYS {
                            pending.remove(0);
                        }
                        pending.push(Pending::new(stream));
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock || is_transient(&e) => {}
                Err(source) => {
                    return Err(Error::Io {
                        what: "accepting NET connections".into(),
                        source,
                    })
                }
            }
            let mut i = 0;
            while i < pending.len() {
                match pending[i].poll() {
                    Poll::Waiting => i += 1,
                    Poll::Dead => drop(pending.swap_remove(i)),
                    Poll::Ready(hello) => {
                        busy = true;
                        let p = pending.swap_remove(i);
                        match self.admit(&hello, from, &want) {
                            Admit::Stray => {}
                            Admit::Mismatch(key, e) => {
                                // the ACK tells the dialer about the mismatch too
                                let _ = self.answer(p.stream, key);
                                return Err(e);
                            }
                            Admit::Yes(key) => {
                                want.remove(&key);
                                out.push((key, self.answer(p.stream, key)?));
                            }
                        }
                    }
                }
            }
            if !busy {
                std::thread::sleep(ACCEPT_POLL);
            }
        }
        nonblocking(false)?;
        Ok(out)
    }

    /// What to do with a valid-looking HELLO: admit it, drop it as a stray (another
    /// communicator, an unknown rank, a socket already open), or fail on a real peer whose
    /// configuration differs.
    fn admit(&self, hello: &Handshake, from: &BTreeSet<usize>, want: &BTreeSet<(usize, u32)>) -> Admit {
        let key = (hello.from_rank as usize, hello.socket);
        let ours = hello.kind == HandshakeKind::Hello
            && hello.comm_magic == self.comm_magic
            && hello.to_rank as usize == self.my_rank
            && from.contains(&key.0);
        if !ours {
            return Admit::Stray;
        }
        if let Some(reason) = self.mismatch(hello.sockets, hello.min_piece) {
            return Admit::Mismatch(key, Error::Remote { rank: key.0, reason });
        }
        if want.contains(&key) {
            Admit::Yes(key)
        } else {
            Admit::Stray
        }
    }

    /// Answers an admitted HELLO with the ACK; returns the stream, blocking again.
    fn answer(&self, mut stream: TcpStream, (peer, socket): (usize, u32)) -> Result<TcpStream> {
        let what = format!("rank {peer} to take the ACK of NET socket {socket}");
        let io = |e: std::io::Error| handshake_error(peer, &what, self.timeout, e);
        stream.set_nonblocking(false).map_err(io)?;
        let left = self.left(|| what.clone())?;
        stream.set_write_timeout(Some(left)).map_err(io)?;
        stream
            .write_all(&self.record(HandshakeKind::Ack, peer, socket).encode())
            .map_err(io)?;
        Ok(stream)
    }
}

/// An accepted connection whose HELLO has not fully arrived.
struct Pending {
    stream: TcpStream,
    buf: [u8; HANDSHAKE_BYTES],
    got: usize,
}

/// The verdict on a HELLO.
enum Admit {
    Yes((usize, u32)),
    Stray,
    Mismatch((usize, u32), Error),
}

/// The state of a [`Pending`] connection.
enum Poll {
    Waiting,
    Dead,
    Ready(Handshake),
}

impl Pending {
    fn new(stream: TcpStream) -> Pending {
        Pending {
            stream,
            buf: [0; HANDSHAKE_BYTES],
            got: 0,
        }
    }

    /// Reads what has arrived (non-blocking): a complete valid record, more waiting, or a
    /// connection to drop (closed, failed, or not a handshake).
    fn poll(&mut self) -> Poll {
        loop {
            match self.stream.read(&mut self.buf[self.got..]) {
                Ok(0) => return Poll::Dead,
                Ok(n) => {
                    self.got += n;
                    if self.got == HANDSHAKE_BYTES {
                        return Handshake::decode(&self.buf).map_or(Poll::Dead, Poll::Ready);
                    }
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Poll::Waiting,
                Err(_) => return Poll::Dead,
            }
        }
    }
}

/// The peers of `want`, once each.
fn missing(want: &BTreeSet<(usize, u32)>) -> Vec<usize> {
    let mut v: Vec<usize> = want.iter().map(|(p, _)| *p).collect();
    v.dedup();
    v
}

/// Accept errors that concern one connection only.
fn is_transient(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::Interrupted | ErrorKind::ConnectionAborted | ErrorKind::ConnectionReset
    )
}

/// The error for a failed handshake read or write with `peer`.
fn handshake_error(peer: usize, what: &str, timeout: Duration, e: std::io::Error) -> Error {
    match e.kind() {
        ErrorKind::WouldBlock | ErrorKind::TimedOut => Error::Timeout {
            what: what.to_string(),
            after: timeout,
        },
        ErrorKind::UnexpectedEof | ErrorKind::ConnectionReset | ErrorKind::BrokenPipe => Error::Remote {
            rank: peer,
            reason: format!(
                "closed the connection during the NET handshake (another communicator or configuration?): {e}"
            ),
        },
        _ => Error::Io {
            what: format!("NET handshake with rank {peer}"),
            source: e,
        },
    }
}
