//! The proxy threads: per socket, a [`Writer`] that drains the local send FIFOs onto the socket
//! (and tells the peer how far the local receivers got), and a [`Reader`] that fills the local
//! receive FIFOs from it. The protocol and the memory-ordering argument are in the docs of
//! [`super`].

use super::pace::{Backoff, TokenBucket};
use super::wire::{frame_len, MsgHeader, MsgKind, MAX_REASON_BYTES, MSG_HEADER_BYTES};
use super::{Failure, PeerCounters, RawFifo, Shared};
use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use zipcoll_primitives::conn::NSLOTS;

/// Messages up to this many body bytes go out in one write with their header.
const COALESCE_BYTES: usize = 4096;
/// The longest a writer spends telling its peer that this transport stops.
const ABORT_WRITE_LIMIT: Duration = Duration::from_millis(100);
/// The longest single sleep of a rate-limited writer (it rechecks the stop flags after it).
const PACE_SLICE: Duration = Duration::from_millis(10);

/// Why a proxy loop ends early: told to stop, or failed.
pub(super) enum Halt {
    /// The transport stops (shutdown, drop, or a failure recorded elsewhere).
    Stop,
    /// This thread found a failure.
    Fail(Failure),
}

impl From<Failure> for Halt {
    fn from(f: Failure) -> Halt {
        Halt::Fail(f)
    }
}

/// A proxy step's outcome.
type Flow<T> = Result<T, Halt>;

/// State one socket's writer and reader share.
#[derive(Default)]
pub(super) struct SocketState {
    /// The peer sent CLOSE: it has sent everything and reads nothing more.
    pub peer_closed: AtomicBool,
}

/// One socket as a proxy thread uses it: the stream and what every read and write checks.
pub(super) struct Wire {
    pub peer: usize,
    pub socket: usize,
    pub stream: TcpStream,
    pub shared: Arc<Shared>,
    /// The peer's rate limit (writers only).
    pub bucket: Option<Arc<TokenBucket>>,
    /// A write stopped inside a message: the stream cannot carry another one.
    torn: bool,
    /// Header and body of a small message, to write them together.
    small: Vec<u8>,
}

/// Whether an I/O error is a socket time-out (the poll interval passed).
fn is_poll_timeout(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
}

impl Wire {
    pub fn new(peer: usize, socket: usize, stream: TcpStream, shared: Arc<Shared>) -> Wire {
        Wire {
            peer,
            socket,
            stream,
            shared,
            bucket: None,
            torn: false,
            small: Vec::with_capacity(MSG_HEADER_BYTES + COALESCE_BYTES),
        }
    }

    /// `Err(Stop)` once the transport stops or has failed, `Err(Fail(Aborted))` once the abort
    /// word is raised.
    fn check(&self) -> Flow<()> {
        if self.shared.stopping() || self.shared.failed() {
            return Err(Halt::Stop);
        }
        if self.shared.abort.is_raised() {
            return Err(Failure::Aborted.into());
        }
        Ok(())
    }

    fn protocol(&self, what: String) -> Halt {
        Failure::Remote {
            rank: self.peer,
            reason: format!("NET protocol error on socket {}: {what}", self.socket),
        }
        .into()
    }

    fn io_failure(&self, e: &std::io::Error) -> Halt {
        Failure::Remote {
            rank: self.peer,
            reason: format!("NET socket {}: {e}", self.socket),
        }
        .into()
    }

    /// A time-out waiting for `what` (a phrase that follows "waiting for").
    fn stalled(&self, what: String) -> Halt {
        Failure::Timeout {
            what,
            after: self.shared.timeout,
        }
        .into()
    }

    /// Sends one message (paced by the rate limit).
    fn send(&mut self, header: MsgHeader, body: &[u8]) -> Flow<()> {
        self.pace(MSG_HEADER_BYTES + body.len())?;
        self.torn = true;
        let h = header.encode();
        if body.len() <= COALESCE_BYTES {
            let mut buf = std::mem::take(&mut self.small);
            buf.clear();
            buf.extend_from_slice(&h);
            buf.extend_from_slice(body);
            let r = self.write_all(&buf);
            self.small = buf;
            r?;
        } else {
            self.write_all(&h)?;
            self.write_all(body)?;
        }
        self.torn = false;
        Ok(())
    }

    /// Waits until the peer's token bucket allows `bytes` more.
    fn pace(&mut self, bytes: usize) -> Flow<()> {
        let Some(bucket) = &self.bucket else {
            return Ok(());
        };
        let (start, wait) = (Instant::now(), bucket.take(bytes as u64));
        loop {
            self.check()?;
            let left = wait.saturating_sub(start.elapsed());
            if left.is_zero() {
                return Ok(());
            }
            std::thread::sleep(left.min(PACE_SLICE));
        }
    }

    /// Writes all of `buf`; fails if the socket takes nothing for longer than the timeout.
    fn write_all(&mut self, mut buf: &[u8]) -> Flow<()> {
        let mut progress = Instant::now();
        while !buf.is_empty() {
            match self.stream.write(buf) {
                Ok(0) => return Err(self.io_failure(&ErrorKind::WriteZero.into())),
                Ok(n) => {
                    buf = &buf[n..];
                    progress = Instant::now();
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if is_poll_timeout(&e) => {
                    self.check()?;
                    if progress.elapsed() > self.shared.timeout {
                        let what = format!("rank {} to read from NET socket {}", self.peer, self.socket);
                        return Err(self.stalled(what));
                    }
                }
                Err(e) => return Err(self.io_failure(&e)),
            }
        }
        Ok(())
    }

    /// Best effort, whatever the flags say: tells the peer that this transport stops and why
    /// (unless a write was cut inside a message), then closes the socket both ways. `origin`:
    /// the rank whose failure it is (an ABORT's `conn` field), so that a failure relayed by
    /// other ranks still names the rank it started on.
    fn abort_and_close(&mut self, origin: usize, reason: &str) {
        if !self.torn {
            let mut body = reason.as_bytes();
            body = &body[..body.len().min(MAX_REASON_BYTES)];
            let header = MsgHeader {
                len: body.len() as u32,
                ..MsgHeader::bare(MsgKind::Abort, origin as u32, 0)
            };
            let mut msg = header.encode().to_vec();
            msg.extend_from_slice(body);
            let deadline = Instant::now() + ABORT_WRITE_LIMIT;
            let mut rest = &msg[..];
            while !rest.is_empty() && Instant::now() < deadline {
                match self.stream.write(rest) {
                    Ok(0) => break,
                    Ok(n) => rest = &rest[n..],
                    Err(e) if e.kind() == ErrorKind::Interrupted || is_poll_timeout(&e) => {}
                    Err(_) => break,
                }
            }
        }
        let _ = self.stream.shutdown(Shutdown::Both);
    }

    /// Reads the first bytes of the next message into `buf`, waiting without a time limit (a
    /// quiet peer is idle, not late), then the rest of it. `Ok(false)`: the connection ended
    /// where that is allowed (this transport is closing).
    fn read_message_start(&mut self, buf: &mut [u8]) -> Flow<bool> {
        loop {
            match self.stream.read(buf) {
                Ok(0) => return self.ended(None),
                Ok(n) => {
                    self.read_exact(&mut buf[n..])?;
                    return Ok(true);
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if is_poll_timeout(&e) => self.check()?,
                Err(e) => return self.ended(Some(e)),
            }
        }
    }

    /// The connection ended between messages (EOF, or the error `e`): fine while this
    /// transport closes, a failure of the peer otherwise.
    fn ended(&self, e: Option<std::io::Error>) -> Flow<bool> {
        if self.shared.closing() || self.shared.stopping() {
            return Ok(false);
        }
        Err(match e {
            None => Failure::Remote {
                rank: self.peer,
                reason: format!(
                    "closed NET socket {} without closing its transport (the process exited or dropped it)",
                    self.socket
                ),
            }
            .into(),
            Some(e) => self.io_failure(&e),
        })
    }

    /// Reads all of `buf` (inside a message); fails if nothing arrives for longer than the
    /// timeout.
    fn read_exact(&mut self, mut buf: &mut [u8]) -> Flow<()> {
        let mut progress = Instant::now();
        while !buf.is_empty() {
            match self.stream.read(buf) {
                Ok(0) => {
                    return Err(Failure::Remote {
                        rank: self.peer,
                        reason: format!("closed NET socket {} in the middle of a message", self.socket),
                    }
                    .into())
                }
                Ok(n) => {
                    buf = &mut buf[n..];
                    progress = Instant::now();
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if is_poll_timeout(&e) => {
                    self.check()?;
                    if progress.elapsed() > self.shared.timeout {
                        let what = format!(
                            "the rest of a message from rank {} on NET socket {}",
                            self.peer, self.socket
                        );
                        return Err(self.stalled(what));
                    }
                }
                Err(e) => return Err(self.io_failure(&e)),
            }
        }
        Ok(())
    }
}

/// A send FIFO as its writer drains it.
pub(super) struct SendConn {
    pub index: u32,
    pub fifo: RawFifo,
    /// The next step to send (= the `head` this proxy has published).
    pub next: u64,
    /// The peer's receiver `head` as its last CREDIT said (updated by the reader).
    pub credit: Arc<AtomicU64>,
    /// Since when a published frame has waited for credit.
    pub stalled_since: Option<Instant>,
}

impl SendConn {
    /// Whether the kernel has published a frame this proxy has not sent.
    fn pending(&self) -> bool {
        self.fifo.tail().load(Ordering::Acquire) > self.next
    }

    /// Sends the next frame if it is published and the peer has room for it; `Ok(true)` if
    /// one went out.
    fn pass(&mut self, wire: &mut Wire, counters: &PeerCounters) -> Flow<bool> {
        // acquire: pairs with the kernel's release of `tail`, so the frame's bytes are visible
        let tail = self.fifo.tail().load(Ordering::Acquire);
        if tail <= self.next {
            self.stalled_since = None;
            return Ok(false);
        }
        // (the credit comes from the peer: saturating, as nothing it sends may overflow here)
        if self.next >= self.credit.load(Ordering::Acquire).saturating_add(NSLOTS) {
            let since = *self.stalled_since.get_or_insert_with(Instant::now);
            if since.elapsed() > wire.shared.timeout {
                let what = format!(
                    "rank {} to free a slot for step {} of NET connection {} (socket {})",
                    wire.peer, self.next, self.index, wire.socket
                );
                return Err(wire.stalled(what));
            }
            return Ok(false);
        }
        let step = self.next;
        // SAFETY: step `step` is published (`tail` acquired above) and the kernel writes its slot
        // again only after this proxy stores `head = step + 1` below.
        let slot = unsafe { self.fifo.slot(step) };
        let len = frame_len(slot);
        let header = MsgHeader {
            kind: MsgKind::Data,
            conn: self.index,
            step,
            len: len as u32,
        };
        wire.send(header, &slot[..len])?;
        self.next = step + 1;
        self.stalled_since = None;
        // release: every read of the slot above happens before the kernel may overwrite it
        self.fifo.head().store(self.next, Ordering::Release);
        counters.bytes_sent.fetch_add(len as u64, Ordering::Relaxed);
        counters.frames_sent.fetch_add(1, Ordering::Relaxed);
        Ok(true)
    }
}

/// A receive FIFO whose consumption the writer reports to the peer.
pub(super) struct CreditOut {
    pub index: u32,
    pub fifo: RawFifo,
    /// The `head` last reported.
    pub credited: u64,
}

impl CreditOut {
    /// Sends a CREDIT if the local kernel consumed frames since the last one.
    fn pass(&mut self, wire: &mut Wire) -> Flow<bool> {
        let head = self.fifo.head().load(Ordering::Acquire);
        if head <= self.credited {
            return Ok(false);
        }
        wire.send(MsgHeader::bare(MsgKind::Credit, self.index, head), &[])?;
        self.credited = head;
        Ok(true)
    }
}

/// The writer thread of one socket.
pub(super) struct Writer {
    pub wire: Wire,
    pub sends: Vec<SendConn>,
    pub credits: Vec<CreditOut>,
    pub state: Arc<SocketState>,
    pub counters: Arc<PeerCounters>,
}

impl Writer {
    /// The thread's body: serves until told to stop or failed; on a failure or an abrupt stop
    /// it tells the peer (ABORT) and closes the socket.
    pub fn run(mut self) {
        if let Err(Halt::Fail(f)) = self.serve() {
            self.wire.shared.fail(f);
        }
        let shared = Arc::clone(&self.wire.shared);
        if let Some(f) = shared.failure() {
            let origin = match &f {
                Failure::Remote { rank, .. } => *rank,
                _ => shared.my_rank,
            };
            self.wire.abort_and_close(origin, &f.to_error().to_string());
        } else if shared.stopping() {
            let reason = format!("rank {} dropped its NET transport without shutdown()", shared.my_rank);
            self.wire.abort_and_close(shared.my_rank, &reason);
        }
    }

    fn serve(&mut self) -> Flow<()> {
        let mut backoff = Backoff::new();
        loop {
            self.wire.check()?;
            if self.state.peer_closed.load(Ordering::Acquire) {
                return self.after_peer_close();
            }
            if self.wire.shared.closing() {
                // `shutdown` flushed the send FIFOs before it raised `closing`
                self.wire.send(MsgHeader::bare(MsgKind::Close, 0, 0), &[])?;
                let _ = self.wire.stream.shutdown(Shutdown::Write);
                return Ok(());
            }
            if self.pass()? {
                backoff.reset();
            } else {
                backoff.snooze();
            }
        }
    }

    /// One round over the connections: credits first (they unblock the peer), then at most
    /// one frame per send connection (fair among them).
    fn pass(&mut self) -> Flow<bool> {
        let mut busy = false;
        for c in &mut self.credits {
            busy |= c.pass(&mut self.wire)?;
        }
        for c in &mut self.sends {
            busy |= c.pass(&mut self.wire, &self.counters)?;
        }
        Ok(busy)
    }

    /// The peer closed its transport: answer CLOSE (its reader lingers for it), then only
    /// watch: a frame published for this peer now can never be delivered.
    fn after_peer_close(&mut self) -> Flow<()> {
        let mut backoff = Backoff::new();
        let mut answered = false;
        loop {
            self.wire.check()?;
            if let Some(c) = self.sends.iter().find(|c| c.pending()) {
                return Err(Failure::Remote {
                    rank: self.wire.peer,
                    reason: format!(
                        "closed its NET transport while frames of connection {} (from step {}) were pending",
                        c.index, c.next
                    ),
                }
                .into());
            }
            if !answered {
                answered = true;
                // best effort: the peer may be gone already
                if self.wire.send(MsgHeader::bare(MsgKind::Close, 0, 0), &[]).is_ok() {
                    let _ = self.wire.stream.shutdown(Shutdown::Write);
                }
            }
            if self.wire.shared.closing() {
                return Ok(());
            }
            backoff.snooze();
        }
    }
}

/// A receive FIFO as its reader fills it.
pub(super) struct RecvConn {
    pub fifo: RawFifo,
    /// The next step expected (= the `tail` this proxy has published).
    pub next: u64,
}

/// The reader thread of one socket.
pub(super) struct Reader {
    pub wire: Wire,
    /// The receive connections of this socket, by index.
    pub recvs: HashMap<u32, RecvConn>,
    /// The credit words of this socket's send connections, by index.
    pub credits: HashMap<u32, Arc<AtomicU64>>,
    pub state: Arc<SocketState>,
    pub counters: Arc<PeerCounters>,
}

impl Reader {
    /// The thread's body: reads messages until the peer closes, the transport stops, or a
    /// failure (recorded; the writers then tell the peers).
    pub fn run(mut self) {
        if let Err(Halt::Fail(f)) = self.serve() {
            self.wire.shared.fail(f);
        }
    }

    fn serve(&mut self) -> Flow<()> {
        let mut b = [0u8; MSG_HEADER_BYTES];
        loop {
            if !self.wire.read_message_start(&mut b)? {
                return Ok(());
            }
            let h = MsgHeader::decode(&b).map_err(|e| self.wire.protocol(e))?;
            match h.kind {
                MsgKind::Data => self.data(h)?,
                MsgKind::Credit => self.credit(h)?,
                MsgKind::Close => {
                    self.state.peer_closed.store(true, Ordering::Release);
                    return Ok(());
                }
                MsgKind::Abort => return Err(self.abort(h)),
            }
        }
    }

    /// A frame: into its slot, then published.
    fn data(&mut self, h: MsgHeader) -> Flow<()> {
        let Reader {
            wire, recvs, counters, ..
        } = self;
        let Some(conn) = recvs.get_mut(&h.conn) else {
            return Err(wire.protocol(format!(
                "a frame for connection {}, not received on this socket",
                h.conn
            )));
        };
        if h.step != conn.next {
            let what = format!("step {} of connection {}, expected {}", h.step, h.conn, conn.next);
            return Err(wire.protocol(what));
        }
        if u64::from(h.len) > conn.fifo.slot_bytes() {
            let what = format!("a {}-byte frame for {}-byte slots", h.len, conn.fifo.slot_bytes());
            return Err(wire.protocol(what));
        }
        // The kernel must have freed the slot (`head + NSLOTS > step`). The peer only sends
        // with credit, which this rank's writer reports from `head`, so this holds at once; the
        // acquire orders the kernel's last reads of the slot before the writes below. A frame
        // whose slot is still in use a timeout later was sent without credit (a peer that does
        // not follow the protocol): a failure, not an endless wait.
        let mut backoff = Backoff::new();
        let start = Instant::now();
        loop {
            let head = conn.fifo.head().load(Ordering::Acquire);
            if head.saturating_add(NSLOTS) > h.step {
                break;
            }
            wire.check()?;
            if start.elapsed() > wire.shared.timeout {
                let what = format!(
                    "step {} of connection {} sent without credit (the receiver has freed up to step {head})",
                    h.step, h.conn
                );
                return Err(wire.protocol(what));
            }
            backoff.snooze();
        }
        // SAFETY: the slot of `h.step` is free (acquired above), the kernel reads it only after
        // the `tail` store below, and `h.len <= slot_bytes` (checked above).
        let slot = unsafe { conn.fifo.slot_mut(h.step, h.len as usize) };
        wire.read_exact(slot)?;
        conn.next = h.step + 1;
        // release: the frame's bytes happen before the kernel's acquire of `tail`
        conn.fifo.tail().store(conn.next, Ordering::Release);
        counters.bytes_received.fetch_add(u64::from(h.len), Ordering::Relaxed);
        counters.frames_received.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// The peer's receiver consumed frames: more credit for the writer.
    fn credit(&mut self, h: MsgHeader) -> Flow<()> {
        let Some(credit) = self.credits.get(&h.conn) else {
            return Err(self
                .wire
                .protocol(format!("credit for connection {}, not sent on this socket", h.conn)));
        };
        let before = credit.load(Ordering::Relaxed);
        if h.step < before {
            let what = format!("credit of connection {} went back from {before} to {}", h.conn, h.step);
            return Err(self.wire.protocol(what));
        }
        credit.store(h.step, Ordering::Release);
        Ok(())
    }

    /// The peer's transport failed: its reason, as this rank's failure.
    fn abort(&mut self, h: MsgHeader) -> Halt {
        let len = h.len as usize;
        if len > MAX_REASON_BYTES {
            return self.wire.protocol(format!("an abort reason of {len} bytes"));
        }
        let mut reason = vec![0u8; len];
        if let Err(halt) = self.wire.read_exact(&mut reason) {
            return halt;
        }
        // the rank the failure started on (a peer may relay another's); not this rank itself
        let origin = match h.conn as usize {
            o if o == self.wire.shared.my_rank => self.wire.peer,
            o => o,
        };
        Failure::Remote {
            rank: origin,
            reason: format!("aborted: {}", String::from_utf8_lossy(&reason)),
        }
        .into()
    }
}
