//! The proxy threads of one peer: [`Writer`]s that cut the local send FIFOs' frames into pieces
//! and write them onto the data sockets, a [`Control`] thread that tells the peer how far the
//! local receivers got (CREDIT) on the control socket, and a [`Reader`] per socket that
//! reassembles the pieces into the local receive FIFOs (or takes the peer's credits). The
//! protocol and the memory-ordering argument are in the docs of [`super`].

use super::pace::{pace_step, Backoff, PaceStep, TokenBucket};
use super::wire::{MsgHeader, MsgKind, Striping, MAX_REASON_BYTES, MSG_HEADER_BYTES};
use super::{Failure, PeerCounters, RawFifo, Shared};
use std::collections::HashMap;
use std::io::{ErrorKind, IoSlice, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use zipcoll_device::frame::frame_len;
use zipcoll_primitives::conn::NSLOTS;

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

/// State the threads of one peer share.
#[derive(Default)]
pub(super) struct PeerState {
    /// The peer sent CLOSE: it has sent everything and reads nothing more.
    pub peer_closed: AtomicBool,
}

/// `Err(Stop)` once the transport stops or has failed, `Err(Fail(Aborted))` once the abort
/// word is raised.
fn check(shared: &Shared) -> Flow<()> {
    if shared.stopping() || shared.failed() {
        return Err(Halt::Stop);
    }
    if shared.abort.is_raised() {
        return Err(Failure::Aborted.into());
    }
    Ok(())
}

/// One socket as a proxy thread uses it: the stream and what every read and write checks.
pub(super) struct Wire {
    pub peer: usize,
    /// Its name in messages: `socket 3`, `the control socket`.
    pub name: String,
    pub stream: TcpStream,
    pub shared: Arc<Shared>,
    /// A write stopped inside a message: the stream cannot carry another one.
    torn: bool,
}

/// Whether an I/O error is a socket time-out (the poll interval passed).
fn is_poll_timeout(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
}

/// Writes all of `bufs` to `w` with `write_vectored` (one call takes as many of them as the
/// socket will), resuming after partial writes. On a socket time-out it calls
/// `on_timeout(last_progress)`, which decides whether to go on; `fail` turns other errors
/// into the caller's.
fn write_all_vectored<W: Write>(
    w: &mut W,
    mut bufs: &mut [IoSlice<'_>],
    mut on_timeout: impl FnMut(Instant) -> Flow<()>,
    fail: impl Fn(&std::io::Error) -> Halt,
) -> Flow<()> {
    IoSlice::advance_slices(&mut bufs, 0);
    let mut progress = Instant::now();
    while !bufs.is_empty() {
        match w.write_vectored(bufs) {
            Ok(0) => return Err(fail(&ErrorKind::WriteZero.into())),
            Ok(n) => {
                IoSlice::advance_slices(&mut bufs, n);
                progress = Instant::now();
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if is_poll_timeout(&e) => on_timeout(progress)?,
            Err(e) => return Err(fail(&e)),
        }
    }
    Ok(())
}

impl Wire {
    pub fn new(peer: usize, name: String, stream: TcpStream, shared: Arc<Shared>) -> Wire {
        Wire {
            peer,
            name,
            stream,
            shared,
            torn: false,
        }
    }

    fn protocol(&self, what: String) -> Halt {
        Failure::Remote {
            rank: self.peer,
            reason: format!("NET protocol error on {}: {what}", self.name),
        }
        .into()
    }

    fn io_failure(&self, e: &std::io::Error) -> Halt {
        Failure::Remote {
            rank: self.peer,
            reason: format!("NET {}: {e}", self.name),
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

    /// Sends one message, header and body in one `writev` (more only if the socket takes
    /// part of it); fails if the socket takes nothing for longer than the timeout.
    fn send(&mut self, header: MsgHeader, body: &[u8]) -> Flow<()> {
        self.torn = true;
        let h = header.encode();
        let mut bufs = [IoSlice::new(&h), IoSlice::new(body)];
        let Wire {
            peer,
            name,
            stream,
            shared,
            ..
        } = self;
        let timeout = shared.timeout;
        let on_timeout = |progress: Instant| {
            check(shared)?;
            if progress.elapsed() > timeout {
                return Err(Failure::Timeout {
                    what: format!("rank {peer} to read from NET {name}"),
                    after: timeout,
                }
                .into());
            }
            Ok(())
        };
        let fail = |e: &std::io::Error| -> Halt {
            Failure::Remote {
                rank: *peer,
                reason: format!("NET {name}: {e}"),
            }
            .into()
        };
        write_all_vectored(stream, &mut bufs, on_timeout, fail)?;
        self.torn = false;
        Ok(())
    }

    /// Sends CLOSE and shuts the stream for writing.
    fn close(&mut self) -> Flow<()> {
        self.send(MsgHeader::bare(MsgKind::Close, 0, 0), &[])?;
        let _ = self.stream.shutdown(Shutdown::Write);
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
                Err(e) if is_poll_timeout(&e) => check(&self.shared)?,
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
                    "closed NET {} without closing its transport (the process exited or dropped it)",
                    self.name
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
                        reason: format!("closed NET {} in the middle of a message", self.name),
                    }
                    .into())
                }
                Ok(n) => {
                    buf = &mut buf[n..];
                    progress = Instant::now();
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if is_poll_timeout(&e) => {
                    check(&self.shared)?;
                    if progress.elapsed() > self.shared.timeout {
                        let what = format!("the rest of a message from rank {} on NET {}", self.peer, self.name);
                        return Err(self.stalled(what));
                    }
                }
                Err(e) => return Err(self.io_failure(&e)),
            }
        }
        Ok(())
    }
}

/// After a proxy thread's loop: on a failure or an abrupt stop, tells the peer (ABORT) on
/// each of `wires` and closes them.
fn say_goodbye(wires: &mut [Wire], shared: &Shared) {
    let own = shared
        .abort_reason
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    let (origin, reason) = if let Some(Failure::Remote { rank, reason }) = shared.failure() {
        (rank, Failure::Remote { rank, reason }.to_error().to_string())
    } else if let Some(reason) = own {
        (shared.my_rank, reason)
    } else if let Some(f) = shared.failure() {
        (shared.my_rank, f.to_error().to_string())
    } else if shared.stopping() {
        let reason = format!("rank {} dropped its NET transport without shutdown()", shared.my_rank);
        (shared.my_rank, reason)
    } else {
        return;
    };
    for w in wires {
        w.abort_and_close(origin, &reason);
    }
}

/// A send connection as the writer threads of its peer share it.
pub(super) struct SendConn {
    pub index: u32,
    pub fifo: RawFifo,
    /// The peer's receiver `head` as its last CREDIT said (stored by the control reader).
    pub credit: AtomicU64,
    /// Per writer thread, the steps it has done (written its pieces of).
    pub done: Vec<AtomicU64>,
}

impl SendConn {
    /// Writer `thread` has done every step below `next`: `head` becomes the least of the
    /// threads' progress, so the kernel reuses a slot only once every piece of it is written.
    fn done_below(&self, thread: usize, next: u64) {
        // release: this thread's reads of the slot happen before the other threads' acquire
        self.done[thread].store(next, Ordering::Release);
        let head = self
            .done
            .iter()
            .map(|d| d.load(Ordering::Acquire))
            .min()
            .unwrap_or(next);
        // release (with the acquires above): every writer's reads of the slot happen before
        // the kernel's acquire of `head`, and so before it overwrites the slot
        self.fifo.head().fetch_max(head, Ordering::AcqRel);
    }
}

/// One writer thread's place in a send connection.
pub(super) struct SendCursor {
    pub conn: Arc<SendConn>,
    /// The next step this thread handles.
    pub next: u64,
    /// Since when a published frame has waited for credit.
    pub stalled_since: Option<Instant>,
}

impl SendCursor {
    /// Whether the kernel has published a frame this thread has not handled.
    fn pending(&self) -> bool {
        self.conn.fifo.tail().load(Ordering::Acquire) > self.next
    }
}

/// A writer thread: some of a peer's data sockets (`first_socket..first_socket + wires.len()`
/// of `striping.sockets`); sends its share of the pieces of every frame of the peer's send
/// connections (piece `i` of step `s` of connection `c` goes on socket `(c + s + i) %
/// sockets`).
pub(super) struct Writer {
    /// Which of the peer's writer threads this is.
    pub thread: usize,
    pub wires: Vec<Wire>,
    pub first_socket: usize,
    pub striping: Striping,
    pub sends: Vec<SendCursor>,
    /// The peer's rate limit.
    pub bucket: Option<Arc<TokenBucket>>,
    pub state: Arc<PeerState>,
    pub counters: Arc<PeerCounters>,
    pub shared: Arc<Shared>,
    pub peer: usize,
}

impl Writer {
    /// The thread's body: serves until told to stop or failed; on a failure or an abrupt stop
    /// it tells the peer (ABORT) and closes its sockets.
    pub fn run(mut self) {
        if let Err(Halt::Fail(f)) = self.serve() {
            self.shared.fail(f);
        }
        say_goodbye(&mut self.wires, &self.shared);
    }

    fn serve(&mut self) -> Flow<()> {
        let mut backoff = Backoff::new();
        loop {
            check(&self.shared)?;
            if self.state.peer_closed.load(Ordering::Acquire) {
                return self.after_peer_close();
            }
            if self.shared.closing() {
                // `shutdown` flushed the send FIFOs before it raised `closing`
                for w in &mut self.wires {
                    w.close()?;
                }
                return Ok(());
            }
            let (busy, pending) = self.pass()?;
            if busy {
                backoff.reset();
            } else {
                backoff.snooze(pending);
            }
        }
    }

    /// One round over the connections, at most one frame each (fair among them); whether
    /// one was handled, and whether a published frame waits (for credit).
    fn pass(&mut self) -> Flow<(bool, bool)> {
        let (mut busy, mut pending) = (false, false);
        for i in 0..self.sends.len() {
            let sent = self.pass_one(i)?;
            busy |= sent;
            pending |= !sent && self.sends[i].pending();
        }
        Ok((busy, pending))
    }

    /// Handles the next step of send connection `i` if it is published and the peer has room
    /// for it: writes this thread's pieces of it; `Ok(true)` if the step was handled.
    fn pass_one(&mut self, i: usize) -> Flow<bool> {
        let c = &mut self.sends[i];
        let conn = Arc::clone(&c.conn);
        // acquire: pairs with the kernel's release of `tail`, so the frame's bytes are visible
        let tail = conn.fifo.tail().load(Ordering::Acquire);
        if tail <= c.next {
            c.stalled_since = None;
            return Ok(false);
        }
        // (the credit comes from the peer: saturating, as nothing it sends may overflow here)
        if c.next >= conn.credit.load(Ordering::Acquire).saturating_add(NSLOTS) {
            let since = *c.stalled_since.get_or_insert_with(Instant::now);
            if since.elapsed() > self.shared.timeout {
                return Err(Failure::Timeout {
                    what: format!(
                        "rank {} to free a slot for step {} of NET connection {}",
                        self.peer, c.next, conn.index
                    ),
                    after: self.shared.timeout,
                }
                .into());
            }
            return Ok(false);
        }
        c.stalled_since = None;
        let step = c.next;
        // SAFETY: step `step` is published (`tail` acquired above) and the kernel writes its slot
        // again only after every writer thread has passed it (`done_below` below).
        let slot = unsafe { conn.fifo.slot(step) };
        // at most the slot, whose size `RawFifo::validate` bounded by u32::MAX
        let total = frame_len(slot) as u32;
        for (p, wire) in self.my_pieces(conn.index, step, total) {
            let (offset, len) = self.striping.piece(total, p);
            let header = MsgHeader {
                kind: MsgKind::Data,
                conn: conn.index,
                step,
                len,
                offset,
                total,
            };
            self.pace(MSG_HEADER_BYTES + len as usize)?;
            let body = &slot[offset as usize..(offset + len) as usize];
            self.wires[wire].send(header, body)?;
            self.counters.bytes_sent.fetch_add(u64::from(len), Ordering::Relaxed);
            if p == 0 {
                self.counters.frames_sent.fetch_add(1, Ordering::Relaxed);
            }
        }
        let c = &mut self.sends[i];
        c.next = step + 1;
        conn.done_below(self.thread, c.next);
        Ok(true)
    }

    /// This thread's pieces of step `step` of connection `conn`, a `total`-byte frame: (piece,
    /// index in `wires` of the socket it goes on).
    fn my_pieces(&self, conn: u32, step: u64, total: u32) -> impl Iterator<Item = (u32, usize)> {
        let sockets = u64::from(self.striping.sockets);
        let mine = self.first_socket as u64..(self.first_socket + self.wires.len()) as u64;
        (0..self.striping.pieces(total)).filter_map(move |p| {
            let socket = (u64::from(conn) + step + u64::from(p)) % sockets;
            // below `wires.len()`, a usize
            mine.contains(&socket).then(|| (p, (socket - mine.start) as usize))
        })
    }

    /// After the peer closed: passes the published frames of connection `i` that have no piece
    /// for this thread (the other writers sent them whole); `Err` names the first that has one,
    /// which the peer can never get.
    fn pass_pieceless(&mut self, i: usize) -> Flow<()> {
        let conn = Arc::clone(&self.sends[i].conn);
        while self.sends[i].pending() {
            let step = self.sends[i].next;
            // SAFETY: as in `pass_one`: published, and not rewritten before this thread passes it
            let total = frame_len(unsafe { conn.fifo.slot(step) }) as u32;
            if self.my_pieces(conn.index, step, total).next().is_some() {
                return Err(Failure::Remote {
                    rank: self.peer,
                    reason: format!(
                        "closed its NET transport while frames of connection {} (from step {step}) were pending",
                        conn.index
                    ),
                }
                .into());
            }
            self.sends[i].next = step + 1;
            conn.done_below(self.thread, step + 1);
        }
        Ok(())
    }

    /// Waits until the peer's token bucket allows `bytes` more.
    fn pace(&mut self, bytes: usize) -> Flow<()> {
        let Some(bucket) = &self.bucket else {
            return Ok(());
        };
        let due = bucket.take(bytes as u64, Instant::now());
        loop {
            match pace_step(due, Instant::now(), PACE_SLICE) {
                PaceStep::Go => return Ok(()),
                PaceStep::Sleep(d) => std::thread::sleep(d),
                PaceStep::Yield => std::thread::yield_now(),
            }
            check(&self.shared)?;
        }
    }

    /// The peer closed its transport: answer CLOSE (its readers linger for it), then only
    /// watch: a frame published for this peer now can never be delivered, unless this thread
    /// has no piece of it (another writer sent it whole before the peer closed).
    fn after_peer_close(&mut self) -> Flow<()> {
        let mut backoff = Backoff::new();
        let mut answered = false;
        loop {
            check(&self.shared)?;
            for i in 0..self.sends.len() {
                self.pass_pieceless(i)?;
            }
            if !answered {
                answered = true;
                for w in &mut self.wires {
                    // best effort: the peer may be gone already
                    let _ = w.close();
                }
            }
            if self.shared.closing() {
                return Ok(());
            }
            backoff.snooze(false);
        }
    }
}

/// A receive FIFO whose consumption the control thread reports to the peer.
pub(super) struct CreditOut {
    pub index: u32,
    pub fifo: RawFifo,
    /// The `head` last reported.
    pub credited: u64,
}

impl CreditOut {
    /// Whether frames are published to the local kernel that it has not consumed yet (their
    /// credit is due soon).
    fn pending(&self) -> bool {
        self.fifo.tail().load(Ordering::Acquire) > self.credited
    }

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

/// The control thread of a peer: CREDIT (and CLOSE, ABORT) on the control socket, which
/// carries no DATA, so a credit never waits behind a piece (see the module docs of
/// [`super`]).
pub(super) struct Control {
    pub wire: Wire,
    pub credits: Vec<CreditOut>,
    pub state: Arc<PeerState>,
}

impl Control {
    /// The thread's body, as [`Writer::run`].
    pub fn run(mut self) {
        if let Err(Halt::Fail(f)) = self.serve() {
            self.wire.shared.fail(f);
        }
        let shared = Arc::clone(&self.wire.shared);
        say_goodbye(std::slice::from_mut(&mut self.wire), &shared);
    }

    fn serve(&mut self) -> Flow<()> {
        let mut backoff = Backoff::new();
        let mut answered = false;
        loop {
            check(&self.wire.shared)?;
            if self.state.peer_closed.load(Ordering::Acquire) {
                if !answered {
                    answered = true;
                    // best effort: the peer may be gone already
                    let _ = self.wire.close();
                }
                if self.wire.shared.closing() {
                    return Ok(());
                }
                backoff.snooze(false);
                continue;
            }
            if self.wire.shared.closing() {
                return self.wire.close();
            }
            let mut busy = false;
            for c in &mut self.credits {
                busy |= c.pass(&mut self.wire)?;
            }
            if busy {
                backoff.reset();
            } else {
                backoff.snooze(self.credits.iter().any(CreditOut::pending));
            }
        }
    }
}

/// Where a slot of a receive FIFO stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SlotState {
    /// No piece of its next step has arrived.
    Free,
    /// Pieces of `step` arrive: `claimed` has bit `i` for each piece taken by a reader, `got`
    /// counts the bytes written.
    Filling {
        step: u64,
        total: u32,
        claimed: u64,
        got: u64,
    },
    /// Every byte of `step` is in, not yet published (an earlier step is incomplete).
    Full { step: u64 },
}

/// How far the pieces of a receive connection got.
pub(super) struct Assembly {
    /// The next step to publish (= the `tail` published).
    next: u64,
    slots: [SlotState; NSLOTS as usize],
}

impl Assembly {
    fn slot(&mut self, step: u64) -> &mut SlotState {
        &mut self.slots[(step % NSLOTS) as usize]
    }
}

/// A receive FIFO as the readers of its peer fill it.
pub(super) struct RecvConn {
    pub fifo: RawFifo,
    assembly: Mutex<Assembly>,
}

impl RecvConn {
    /// The FIFO, continuing from step `next` (its `tail`).
    pub fn new(fifo: RawFifo, next: u64) -> RecvConn {
        RecvConn {
            fifo,
            assembly: Mutex::new(Assembly {
                next,
                slots: [SlotState::Free; NSLOTS as usize],
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Assembly> {
        self.assembly.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What a socket carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Role {
    /// DATA pieces (and CLOSE, ABORT).
    Data,
    /// CREDIT (and CLOSE, ABORT).
    Control,
}

/// The reader thread of one socket.
pub(super) struct Reader {
    pub wire: Wire,
    pub role: Role,
    pub striping: Striping,
    /// The peer's receive connections, by index.
    pub recvs: Arc<HashMap<u32, RecvConn>>,
    /// The peer's send connections, by index (for their credit).
    pub credits: Arc<HashMap<u32, Arc<SendConn>>>,
    pub state: Arc<PeerState>,
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
            match (h.kind, self.role) {
                (MsgKind::Data, Role::Data) => self.data(h)?,
                (MsgKind::Credit, Role::Control) => self.credit(h)?,
                (MsgKind::Close, _) => {
                    self.state.peer_closed.store(true, Ordering::Release);
                    return Ok(());
                }
                (MsgKind::Abort, _) => return Err(self.abort(h)),
                (kind, role) => {
                    return Err(self.wire.protocol(format!("a {kind:?} message on a {role:?} socket")));
                }
            }
        }
    }

    /// A piece of a frame: checked, claimed, waited for its slot, read into it; the frame is
    /// published once every piece of it and of the steps before it is in.
    fn data(&mut self, h: MsgHeader) -> Flow<()> {
        let Reader {
            wire,
            recvs,
            counters,
            striping,
            ..
        } = self;
        let Some(conn) = recvs.get(&h.conn) else {
            return Err(wire.protocol(format!(
                "a piece for connection {}, not received from this peer",
                h.conn
            )));
        };
        if u64::from(h.total) > conn.fifo.slot_bytes() {
            let what = format!("a {}-byte frame for {}-byte slots", h.total, conn.fifo.slot_bytes());
            return Err(wire.protocol(what));
        }
        let piece = striping.index(h.offset, h.len, h.total).map_err(|e| wire.protocol(e))?;
        claim(conn, &h, piece).map_err(|e| wire.protocol(e))?;
        // The kernel must have freed the slot (`head + NSLOTS > step`). The peer only sends
        // with credit, which this rank's control thread reports from `head`, so this holds at
        // once; the acquire orders the kernel's last reads of the slot before the writes below.
        // A piece whose slot is still in use a timeout later was sent without credit (a peer
        // that does not follow the protocol): a failure, not an endless wait.
        let mut backoff = Backoff::new();
        let start = Instant::now();
        loop {
            let head = conn.fifo.head().load(Ordering::Acquire);
            if head.saturating_add(NSLOTS) > h.step {
                break;
            }
            check(&wire.shared)?;
            if start.elapsed() > wire.shared.timeout {
                let what = format!(
                    "step {} of connection {} sent without credit (the receiver has freed up to step {head})",
                    h.step, h.conn
                );
                return Err(wire.protocol(what));
            }
            backoff.snooze(true);
        }
        // SAFETY: the slot of `h.step` is free (acquired above); this reader claimed piece
        // `piece`, so no other reader writes these bytes (`claim`), and `offset + len <=
        // total <= slot_bytes` (checked by `index`, `MsgHeader::decode` and above); the kernel
        // reads the slot only after the `tail` store in `arrived`.
        let bytes = unsafe { conn.fifo.slot_range_mut(h.step, h.offset as usize, h.len as usize) };
        wire.read_exact(bytes)?;
        counters.bytes_received.fetch_add(u64::from(h.len), Ordering::Relaxed);
        arrived(conn, &h, counters);
        Ok(())
    }

    /// The peer's receiver consumed frames: more credit for the writers.
    fn credit(&mut self, h: MsgHeader) -> Flow<()> {
        let Some(conn) = self.credits.get(&h.conn) else {
            return Err(self
                .wire
                .protocol(format!("credit for connection {}, not sent to this peer", h.conn)));
        };
        // only this thread stores the credit
        let before = conn.credit.load(Ordering::Relaxed);
        if h.step < before {
            let what = format!("credit of connection {} went back from {before} to {}", h.conn, h.step);
            return Err(self.wire.protocol(what));
        }
        conn.credit.store(h.step, Ordering::Release);
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

/// Claims piece `piece` of `h`'s step for the calling reader, or says why the piece is wrong:
/// a step outside the connection's window (the next to publish and the `NSLOTS - 1` after
/// it), a frame length that differs from its other pieces', a piece that came before.
fn claim(conn: &RecvConn, h: &MsgHeader, piece: u32) -> Result<(), String> {
    let mut guard = conn.lock();
    let a = &mut *guard;
    let next = a.next;
    if h.step < next || h.step - next >= NSLOTS {
        return Err(format!(
            "step {} of connection {}, expected {next}..{}",
            h.step,
            h.conn,
            next + NSLOTS
        ));
    }
    // `piece < pieces <= sockets <= 64`
    let bit = 1u64 << piece;
    let slot = a.slot(h.step);
    match *slot {
        SlotState::Free => {
            *slot = SlotState::Filling {
                step: h.step,
                total: h.total,
                claimed: bit,
                got: 0,
            };
            Ok(())
        }
        SlotState::Filling {
            step,
            total,
            ref mut claimed,
            ..
        } if step == h.step => {
            if total != h.total {
                return Err(format!(
                    "pieces of step {step} of connection {} say the frame has {total} and {} bytes",
                    h.conn, h.total
                ));
            }
            if *claimed & bit != 0 {
                return Err(format!("piece {piece} of step {step} of connection {} twice", h.conn));
            }
            *claimed |= bit;
            Ok(())
        }
        other => Err(format!(
            "a piece of step {} of connection {} where the slot holds {other:?}",
            h.step, h.conn
        )),
    }
}

/// The bytes of `h` are in its slot: counts them; when its frame is complete, counts the frame
/// (before anything is published, so that a kernel that sees the frame sees it counted) and
/// publishes every complete step from the next one on (`tail`).
fn arrived(conn: &RecvConn, h: &MsgHeader, counters: &PeerCounters) {
    let mut guard = conn.lock();
    let a = &mut *guard;
    let slot = a.slot(h.step);
    let SlotState::Filling { step, total, got, .. } = slot else {
        // `claim` made it `Filling` and only its last piece's reader moves it on
        return;
    };
    *got += u64::from(h.len);
    if *got < u64::from(*total) {
        return;
    }
    let step = *step;
    *slot = SlotState::Full { step };
    counters.frames_received.fetch_add(1, Ordering::Relaxed);
    let before = a.next;
    loop {
        let next = a.next;
        let slot = a.slot(next);
        if *slot != (SlotState::Full { step: next }) {
            break;
        }
        *slot = SlotState::Free;
        a.next += 1;
    }
    if a.next > before {
        // release (under the lock, so `tail` only grows): the bytes of every piece, written by
        // whichever reader, happen before this store (each reader's writes precede its unlock
        // in `arrived`, and this lock follows), and so before the kernel's acquire of `tail`
        conn.fifo.tail().store(a.next, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer that takes at most `chunk` bytes a call and times out every third call, and
    /// records how many buffers each call was offered.
    struct Trickle {
        chunk: usize,
        calls: usize,
        offered: Vec<usize>,
        out: Vec<u8>,
    }

    impl Write for Trickle {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.write_vectored(&[IoSlice::new(buf)])
        }

        fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> std::io::Result<usize> {
            self.calls += 1;
            if self.calls.is_multiple_of(3) {
                return Err(ErrorKind::WouldBlock.into());
            }
            self.offered.push(bufs.len());
            let mut n = 0;
            for b in bufs {
                let take = b.len().min(self.chunk - n);
                self.out.extend_from_slice(&b[..take]);
                n += take;
                if n == self.chunk {
                    break;
                }
            }
            Ok(n)
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_vectored_write_sends_header_and_body_together_and_survives_partial_writes() {
        let header = [1u8; 32];
        let body: Vec<u8> = (0..1000u32).map(|i| i as u8).collect();
        let expected = [&header[..], &body].concat();
        for chunk in [1, 7, 32, 33, 4096] {
            let mut w = Trickle {
                chunk,
                calls: 0,
                offered: Vec::new(),
                out: Vec::new(),
            };
            let mut timeouts = 0;
            let mut bufs = [IoSlice::new(&header), IoSlice::new(&body)];
            let r = write_all_vectored(
                &mut w,
                &mut bufs,
                |_| {
                    timeouts += 1;
                    Ok(())
                },
                |_| Halt::Stop,
            );
            assert!(r.is_ok());
            assert_eq!(w.out, expected, "chunk {chunk}");
            // the first call offers both header and body (one syscall for a piece)
            assert_eq!(w.offered[0], 2, "chunk {chunk}");
            assert_eq!(timeouts, w.calls / 3);
            if chunk == 4096 {
                assert_eq!(w.offered.len(), 1, "a socket that takes it all: one call");
            }
        }
        // empty buffers cost nothing; a socket that takes nothing is an error
        let mut w = Trickle {
            chunk: 0,
            calls: 0,
            offered: Vec::new(),
            out: Vec::new(),
        };
        let r = write_all_vectored(
            &mut w,
            &mut [IoSlice::new(&[]), IoSlice::new(&[])],
            |_| Ok(()),
            |_| Halt::Stop,
        );
        assert!(r.is_ok() && w.calls == 0);
        let r = write_all_vectored(&mut w, &mut [IoSlice::new(&header)], |_| Ok(()), |_| Halt::Stop);
        assert!(matches!(r, Err(Halt::Stop)));
    }
}
