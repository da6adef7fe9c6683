//! The communication primitives: one generic step, [`Prims::run`], parameterized by const
//! flags `RECV, REDUCE, SEND, COPY`, and thin wrappers named in data-flow order. Every step
//! moves one chunk of at most `frame_elems` elements: at most one frame received and one sent
//! (one FIFO step each way), so encode-on-send and decode-on-receive happen here and every
//! collective built on these compresses.
//!
//! | wrapper                   | RECV | REDUCE | SEND | COPY | the chunk's value `v[i]`                 | goes to          |
//! |---------------------------|------|--------|------|------|-----------------------------------------|------------------|
//! | [`Prims::send`]           |      |        | x    |      | `pre(src[i])`                           | next rank        |
//! | [`Prims::copy_send`]      |      |        | x    | x    | `pre(src[i])`                           | `dst`, next rank |
//! | [`Prims::copy`]           |      |        |      | x    | `pre(src[i])`                           | `dst`            |
//! | [`Prims::recv`]           | x    |        |      | x    | received                                | `dst`            |
//! | [`Prims::recv_copy_send`] | x    |        | x    | x    | received                                | `dst`, next rank |
//! | [`Prims::recv_reduce_send`] | x  | x      | x    |      | `combine(received, pre(src[i]))`        | next rank        |
//! | [`Prims::recv_reduce_copy`] | x  | x      |      | x    | `combine(received, pre(src[i]))`        | `dst`            |
//! | [`Prims::recv_reduce_copy_send`] | x | x  | x    | x    | `combine(received, pre(src[i]))`        | `dst`, next rank |
//!
//! `src` is always a local contribution, so `pre` (the operator's per-contribution step: Avg's
//! `x / nranks`, identity otherwise) is applied exactly once per contribution; steps whose `src`
//! is already pre-processed (a partial result, or data that is only moved) run over
//! [`NoPre<O>`], whose `pre` is the identity and whose `combine` is `O`'s.
//!
//! Either side of a channel may be absent (a null `slots` in its [`crate::conn::ConnDesc`]):
//! [`Prims::new`] does not touch it, and a step that needs it fails with
//! [`ConnError::NoConnection`]. A channel with neither side ([`ChannelDesc::NONE`]) runs local
//! copies only.
//!
//! Where the chunk lives on the way: a received frame is decoded into `dst` when nothing is
//! combined with it and `COPY` is set, otherwise into the channel's staging buffer; the value is
//! computed into `dst` (`COPY`) or the staging buffer, and sent from there. In place
//! (`src == dst`) is allowed: each lane reads `src[i]` before it writes `dst[i]`.
//!
//! RAW steps take a fast path ([`raw`]): when the frame sent (if any) is RAW and the frame
//! received (if any) is exactly a RAW frame of the chunk, the step computes, copies and sends
//! the value in one pass over the whole team (16-byte vectors; `src` and `dst` by aligned
//! pieces of them where they are not aligned for vectors) that also checks the
//! received payload's checksum (a step that combines into `dst` checks in a pass of its own
//! first; a trusted channel, `ChannelDesc::trusted`, checks neither way), writing the frame
//! itself (byte-identical to the codec's RAW frame) and publishing nothing of a rejected one:
//! no staging buffer, no scalar passes. Anything else (coded frames, a frame
//! that is not what the step expects) takes the general path above.
//!
//! A channel is driven by one team ([`Team`]): a warp, or a whole thread block. Both paths run
//! on the whole team: the RAW fast path spreads its vectors over every thread, and the general
//! path waits, combines and posts as a team. Its frames are coded by the whole block where the
//! team is a block with shared memory for a codec and the codec has a block coder (block
//! frames, [`Compression::encode_block`] / [`Compression::decode_block`]); otherwise the frame
//! codec is warp-cooperative (all lanes of a warp encode or decode one frame together), so on
//! a block team it runs on the block's first warp while the others wait ([`Team::solo`]), and
//! the block shares its outcome. Every step ends with a team sync, so the next step may reuse
//! the staging buffer.
//!
//! Frames of FIFOs in host memory (NET's; the channel has a `frame_stage`) are coded in device
//! memory and moved to and from their slots by whole 16-byte vectors ([`staged`]); a received
//! slot is freed as soon as its frame (or, on the RAW fast path, its payload) is copied in,
//! before the frame is decoded or the step waits for its send slot.

mod compression;
pub mod raw;
mod staged;
mod unaligned;
pub mod value;

pub use compression::{ByChannel, Coding, Compression, Force, Off, RawOnly};

use crate::conn::{ChannelDesc, ConnError, Failure, RecvConn, SendConn, Side};
use core::marker::PhantomData;
use zipcoll_device::block::Scratch;
use zipcoll_device::codec::{max_encoded_len, LaneOut};
use zipcoll_device::dtype::{Elem, Split};
use zipcoll_device::frame::FrameError;
use zipcoll_device::frame::BLOCK_FRAME_VERSION;
use zipcoll_device::reduce::{RedOp, ReduceOp};
use zipcoll_device::team::Team;
use zipcoll_targets::Warp;

/// `O` without its per-contribution step: `pre` is the identity, `combine` is `O`'s. For steps
/// whose local input is already pre-processed (a partial reduction, a reduced result, or data
/// that is only moved).
#[derive(Clone, Copy, Debug)]
pub struct NoPre<O>(pub O);

impl<O: RedOp> RedOp for NoPre<O> {
    const OP: ReduceOp = O::OP;
    const PRE_IS_IDENTITY: bool = true;
    type Combine = O::Combine;
    #[inline(always)]
    fn combiner(self) -> O::Combine {
        self.0.combiner()
    }
    #[inline(always)]
    fn scaled(scalar: u64) -> Self {
        NoPre(O::scaled(scalar))
    }
    #[inline(always)]
    fn pre<T: Elem>(self, x: T::Bits) -> T::Bits {
        x
    }
    #[inline(always)]
    fn combine<T: Elem>(self, a: T::Bits, b: T::Bits) -> T::Bits {
        self.0.combine::<T>(a, b)
    }
}

/// One team's primitives over one channel, for elements `T`, operator `O` and compression `E`.
pub struct Prims<M, T: Split, O, E> {
    link: Link<M, T, E>,
    op: O,
}

/// What the primitives of a channel hold besides the operator: the out-of-line general path is
/// a method of this, generic over the step's [`value::StepValue`] rather than the operator.
struct Link<M, T: Split, E> {
    team: M,
    send: Option<SendConn>,
    recv: Option<RecvConn>,
    stage: *mut T::Bits,
    /// The channel's `codec` (for [`ByChannel`]).
    codec: u64,
    /// The channel's `trusted`: the RAW fast path does not verify what it receives.
    trusted: bool,
    /// The channel's `frame_stage`: null, or where the general path codes frames ([`staged`]).
    frame_stage: *mut u8,
    _encoding: PhantomData<E>,
}

impl<M: Team, T: Split, O: RedOp, E: Compression> Prims<M, T, O, E> {
    /// The primitives of channel `ch` for chunks of up to `frame_elems` elements. Checks that a
    /// frame of `frame_elems` elements fits the slots of each present side and, when a side is
    /// present, the staging buffer (a typed error, step 0, otherwise).
    ///
    /// Creating the primitives of a channel again (after dropping the previous value) continues
    /// where the previous one stopped: the step counters are read back from `tail` and `head`.
    ///
    /// # Safety
    /// `ch` describes live memory as [`crate::conn`]'s tables say (each side either present or
    /// all null), its staging buffer is aligned for `T::Bits`, and this team is the only user of
    /// the channel while the value lives.
    pub unsafe fn new(team: M, ch: &ChannelDesc, op: O, frame_elems: usize) -> Result<Self, Failure> {
        let config = |error| Err(Failure { step: 0, error });
        if frame_elems == 0 {
            return config(ConnError::NoFrameElems);
        }
        let (has_send, has_recv) = (ch.send.present(), ch.recv.present());
        let need = max_encoded_len::<T>(frame_elems) as u64;
        for (present, have) in [(has_send, ch.send.slot_bytes), (has_recv, ch.recv.slot_bytes)] {
            if present && have < need {
                return config(ConnError::SlotTooSmall { need, have });
            }
        }
        let need = (frame_elems * T::DTYPE.size_bytes()) as u64;
        if (has_send || has_recv) && ch.stage_bytes < need {
            return config(ConnError::StageTooSmall {
                need,
                have: ch.stage_bytes,
            });
        }
        let link = Link {
            team,
            // SAFETY: forwarded from the caller (the side is present).
            send: has_send.then(|| unsafe { SendConn::new(team, ch) }),
            // SAFETY: forwarded from the caller (the side is present).
            recv: has_recv.then(|| unsafe { RecvConn::new(team, ch) }),
            stage: ch.stage.cast(),
            codec: ch.codec,
            trusted: ch.trusted != 0,
            frame_stage: ch.frame_stage,
            _encoding: PhantomData,
        };
        Ok(Self { link, op })
    }

    /// One step over a chunk of `n` elements (see the module table for the flags). Called by
    /// every thread of the team with the same arguments. On `Err`, `dst` may hold part of a
    /// rejected frame; nothing of it was combined or sent on. A step that needs an absent side
    /// fails with [`ConnError::NoConnection`] before it touches anything.
    ///
    /// # Safety
    /// `n` is at most the `frame_elems` given to [`Prims::new`]; `src` is valid for `n` reads when `REDUCE` or not `RECV`; `dst` is
    /// valid for `n` writes when `COPY`; `dst` equals `src` or does not overlap it.
    #[inline(always)]
    pub unsafe fn run<const RECV: bool, const REDUCE: bool, const SEND: bool, const COPY: bool>(
        &mut self,
        src: *const T::Bits,
        dst: *mut T::Bits,
        n: usize,
    ) -> Result<(), Failure> {
        const {
            assert!(RECV || !REDUCE, "REDUCE combines with a received frame: it needs RECV");
            assert!(SEND || COPY, "a step must send or copy its chunk");
        }
        let missing = |side| {
            Err(Failure {
                step: 0,
                error: ConnError::NoConnection(side),
            })
        };
        if RECV && self.link.recv.is_none() {
            return missing(Side::Recv);
        }
        if SEND && self.link.send.is_none() {
            return missing(Side::Send);
        }
        // SAFETY: forwarded from the caller.
        if let Some(done) = unsafe { self.run_raw::<RECV, REDUCE, SEND, COPY>(src, dst, n) } {
            return done;
        }
        let general = General::<M, T, E, RECV, SEND, COPY> {
            link: &mut self.link,
            src,
            dst,
            n,
        };
        // SAFETY: forwarded from the caller; the sides the flags need are present (checked).
        unsafe { value::with_step_value::<O, RECV, REDUCE, _>(self.op, general) }
    }

    /// The step over [`raw`]'s fast path, when it applies: the frame sent (if any) is RAW and
    /// the frame received (if any) is exactly a RAW frame of `n` elements. `None` (nothing consumed, sent or written) when it
    /// does not apply; the sides are present (checked by the caller).
    ///
    /// # Safety
    /// As [`Prims::run`].
    #[inline(always)]
    unsafe fn run_raw<const RECV: bool, const REDUCE: bool, const SEND: bool, const COPY: bool>(
        &mut self,
        src: *const T::Bits,
        dst: *mut T::Bits,
        n: usize,
    ) -> Option<Result<(), Failure>> {
        let team = self.link.team;
        if SEND && !E::sends_raw(self.link.codec) {
            return None;
        }
        // (payload, its stored checksum, the receive step)
        let mut received = (core::ptr::null(), 0u32, 0u64);
        let staged = !self.link.frame_stage.is_null();
        if let (true, Some(recv)) = (RECV, self.link.recv.as_mut()) {
            let step = recv.step();
            let frame = match recv.wait_frame(team) {
                Ok(frame) => frame,
                Err(e) => return Some(Err(e)),
            };
            let (mut payload, stored) = match raw::classify::<T>(frame, n) {
                raw::Received::General => return None,
                raw::Received::Raw { payload, stored } => (payload, stored),
            };
            if staged {
                // SAFETY: the payload holds `n` elements inside a slot (`classify`); the frame
                // stage holds a slot and only this team uses it (`ChannelDesc`'s contract).
                payload = unsafe { staged::stage_payload::<M, T>(team, payload, self.link.frame_stage, n) };
                // every thread: the payload is in device memory; the slot may take the next frame
                recv.release(team);
            }
            // a step that combines into `dst` checks the payload first, so that nothing of a
            // rejected frame is ever combined into the caller's buffer
            if REDUCE && COPY && !self.link.trusted {
                // SAFETY: the frame holds `n` aligned elements of payload (`classify`).
                let computed = unsafe { raw::recv_checksum::<M, T>(team, payload, n) };
                if computed != stored {
                    return Some(Err(raw::checksum_failure(step, stored, computed)));
                }
            }
            received = (payload, stored, step);
        }
        let mut slot = core::ptr::null_mut();
        if let (true, Some(send)) = (SEND, self.link.send.as_ref()) {
            match send.wait_slot(team) {
                Ok(out) => slot = out.as_mut_ptr(),
                Err(e) => return Some(Err(e)),
            }
        }
        let step = raw::RawStep {
            recv: received.0,
            src,
            dst,
            send: slot,
            n,
            verify: !self.link.trusted,
        };
        // SAFETY: the payload holds `n` aligned elements (`classify`); `src`, `dst` are valid
        // as `run`'s caller promised; the slot holds a frame of
        // `frame_elems >= n` elements (checked in `new`).
        let sums = unsafe { raw::combine_send::<M, T, O, RECV, REDUCE, SEND, COPY>(team, self.op, &step) };
        // every thread: the received payload's checksum (unless trusted); a mismatch publishes
        // nothing
        if let (true, Some(computed)) = (RECV, sums.received) {
            if computed != received.1 {
                return Some(Err(raw::checksum_failure(received.2, received.1, computed)));
            }
        }
        // `release` and `post` sync the team before they publish
        if let (true, false, Some(recv)) = (RECV, staged, self.link.recv.as_mut()) {
            recv.release(team);
        }
        if let (true, Some(send)) = (SEND, self.link.send.as_mut()) {
            send.post(team);
        }
        Some(Ok(()))
    }

    /// Sends `pre(src)`.
    ///
    /// # Safety
    /// As [`Prims::run`].
    pub unsafe fn send(&mut self, src: *const T::Bits, n: usize) -> Result<(), Failure> {
        // SAFETY: forwarded to the caller.
        unsafe { self.run::<false, false, true, false>(src, core::ptr::null_mut(), n) }
    }

    /// Writes `pre(src)` to `dst` and sends it.
    ///
    /// # Safety
    /// As [`Prims::run`].
    pub unsafe fn copy_send(&mut self, src: *const T::Bits, dst: *mut T::Bits, n: usize) -> Result<(), Failure> {
        // SAFETY: forwarded to the caller.
        unsafe { self.run::<false, false, true, true>(src, dst, n) }
    }

    /// Writes `pre(src)` to `dst` (no FIFO traffic).
    ///
    /// # Safety
    /// As [`Prims::run`].
    pub unsafe fn copy(&mut self, src: *const T::Bits, dst: *mut T::Bits, n: usize) -> Result<(), Failure> {
        // SAFETY: forwarded to the caller.
        unsafe { self.run::<false, false, false, true>(src, dst, n) }
    }

    /// Receives a chunk into `dst`.
    ///
    /// # Safety
    /// As [`Prims::run`].
    pub unsafe fn recv(&mut self, dst: *mut T::Bits, n: usize) -> Result<(), Failure> {
        // SAFETY: forwarded to the caller.
        unsafe { self.run::<true, false, false, true>(core::ptr::null(), dst, n) }
    }

    /// Receives a chunk into `dst` and sends it on.
    ///
    /// # Safety
    /// As [`Prims::run`].
    pub unsafe fn recv_copy_send(&mut self, dst: *mut T::Bits, n: usize) -> Result<(), Failure> {
        // SAFETY: forwarded to the caller.
        unsafe { self.run::<true, false, true, true>(core::ptr::null(), dst, n) }
    }

    /// Receives a chunk, combines it with `pre(src)` and sends the result.
    ///
    /// # Safety
    /// As [`Prims::run`].
    pub unsafe fn recv_reduce_send(&mut self, src: *const T::Bits, n: usize) -> Result<(), Failure> {
        // SAFETY: forwarded to the caller.
        unsafe { self.run::<true, true, true, false>(src, core::ptr::null_mut(), n) }
    }

    /// Receives a chunk, combines it with `pre(src)` into `dst`.
    ///
    /// # Safety
    /// As [`Prims::run`].
    pub unsafe fn recv_reduce_copy(&mut self, src: *const T::Bits, dst: *mut T::Bits, n: usize) -> Result<(), Failure> {
        // SAFETY: forwarded to the caller.
        unsafe { self.run::<true, true, false, true>(src, dst, n) }
    }

    /// Receives a chunk, combines it with `pre(src)` into `dst` and sends the result.
    ///
    /// # Safety
    /// As [`Prims::run`].
    pub unsafe fn recv_reduce_copy_send(
        &mut self,
        src: *const T::Bits,
        dst: *mut T::Bits,
        n: usize,
    ) -> Result<(), Failure> {
        // SAFETY: forwarded to the caller.
        unsafe { self.run::<true, true, true, true>(src, dst, n) }
    }
}

/// [`Link::run_general`] as a [`value::StepFn`].
struct General<'a, M, T: Split, E, const RECV: bool, const SEND: bool, const COPY: bool> {
    link: &'a mut Link<M, T, E>,
    src: *const T::Bits,
    dst: *mut T::Bits,
    n: usize,
}

impl<M: Team, T: Split, E: Compression, const RECV: bool, const SEND: bool, const COPY: bool> value::StepFn
    for General<'_, M, T, E, RECV, SEND, COPY>
{
    type Output = Result<(), Failure>;
    /// # Safety
    /// As [`Link::run_general`].
    #[inline(always)]
    unsafe fn call<V: value::StepValue>(self, v: V) -> Self::Output {
        // SAFETY: forwarded from the caller.
        unsafe {
            self.link
                .run_general::<V, RECV, SEND, COPY>(v, self.src, self.dst, self.n)
        }
    }
}

impl<M: Team, T: Split, E: Compression> Link<M, T, E> {
    /// The step over the general path, by every thread of the team: decode the received
    /// frame, combine, encode the sent one (see the module docs), computing `v` per element.
    /// Out of line: one instance per (team, dtype, compression, value, flags), shared by every
    /// schedule and operator that takes the step, instead of a copy in each.
    ///
    /// # Safety
    /// As [`Prims::run`] (`REDUCE` being `V::REDUCE`); the sides the flags need are present;
    /// every thread of the team calls this with the same arguments.
    #[inline(never)]
    unsafe fn run_general<V: value::StepValue, const RECV: bool, const SEND: bool, const COPY: bool>(
        &mut self,
        v: V,
        src: *const T::Bits,
        dst: *mut T::Bits,
        n: usize,
    ) -> Result<(), Failure> {
        let team = self.team;
        let bytes = n * T::DTYPE.size_bytes();
        // where the chunk's value is computed and sent from
        let target = if COPY { dst } else { self.stage };
        if let (true, Some(recv)) = (RECV, self.recv.as_mut()) {
            let landing = if V::REDUCE { self.stage } else { target };
            let step = recv.step();
            let slot = recv.wait_frame(team)?;
            let staged = !self.frame_stage.is_null();
            let frame = if staged {
                // SAFETY: the frame stage holds a slot (`ChannelDesc`'s contract) and only this
                // team uses it; slots are 16-aligned and a multiple of 16 long.
                let frame = unsafe { staged::stage_in(team, slot, self.frame_stage) };
                recv.release(team);
                frame
            } else {
                slot
            };
            // SAFETY: `landing` is `dst` (valid for `n` writes) or the staging buffer (at least
            // `frame_elems >= n` elements, checked in `new`); only the team writes it, through
            // the coders' `LaneOut`.
            let out = unsafe { LaneOut::from_raw(landing.cast::<u8>(), bytes) };
            let found = decode_on_team::<M, T, E>(team, frame, out).map_err(|e| Failure {
                step,
                error: ConnError::Frame(e),
            })?;
            if found != n {
                let error = ConnError::FrameLength {
                    expected: n as u32,
                    found: found as u32,
                };
                return Err(Failure { step, error });
            }
            // every thread: `landing[..n]` holds the received chunk, checked against its
            // checksum (`release` syncs the team before it frees the slot)
            if !staged {
                recv.release(team);
            }
        }
        if V::REDUCE || !RECV {
            let mut i = team.rank() as usize;
            // thread r: elements r, r + size, ..; reads and writes only its own indices
            while i < n {
                // SAFETY: `i < n`: inside `src`, the staging buffer and `target` (the caller's
                // contract and `new`'s checks); `src[i]` is read before `target[i]` is written.
                unsafe {
                    let received = if V::REDUCE {
                        self.stage.add(i).read()
                    } else {
                        T::Bits::default()
                    };
                    target.add(i).write(v.of::<T>(received, src.add(i).read()));
                }
                i += team.size() as usize;
            }
            // every thread: `target[..n]` holds the chunk's value, written by the whole team
            team.barrier();
        }
        if let (true, Some(send)) = (SEND, self.send.as_mut()) {
            let step = send.step();
            let slot = send.wait_slot(team)?;
            // SAFETY: the frame stage holds a slot (`ChannelDesc`'s contract) and only this
            // team uses it.
            let out = match self.frame_stage.is_null() {
                true => slot,
                false => unsafe { LaneOut::from_raw(self.frame_stage, slot.len()) },
            };
            // SAFETY: `target[..n]` is initialized (received or computed above) and no thread
            // writes it until the next step, which starts after `post`'s team sync.
            let input = unsafe { core::slice::from_raw_parts(target.cast_const(), n) };
            let len = encode_on_team::<M, T, E>(team, self.codec, input, out).map_err(|e| Failure {
                step,
                error: ConnError::Encode(e),
            })?;
            if !self.frame_stage.is_null() {
                // every thread: the frame's `len <= slot.len()` bytes are in the stage, each
                // thread's part of them written before the meeting
                team.barrier();
                // SAFETY: the slot and the stage are 16-aligned and a multiple of 16 long; the
                // slot is this team's until `post`.
                unsafe { staged::copy_vectors(team, self.frame_stage, slot.as_mut_ptr(), len) };
            }
            send.post(team);
        }
        Ok(())
    }
}

/// Decodes `frame` into `out` with the team: a block frame with every thread of a block team
/// that has a codec scratch ([`Compression::decode_block`]), any other frame with the team's
/// first warp ([`Team::solo`]). Returns the elements decoded, on every thread.
#[inline(always)]
fn decode_on_team<M: Team, T: Split, E: Compression>(
    team: M,
    frame: &[u8],
    out: LaneOut<'_>,
) -> Result<usize, FrameError> {
    if frame.get(2) == Some(&BLOCK_FRAME_VERSION) {
        if let Some(scratch) = team.codec_scratch() {
            if let Some(result) = decode_block_out_of_line::<M::Warp, T, E>(team.warp(), scratch, frame, out) {
                return result;
            }
        }
    }
    team.solo(|w| decode_out_of_line::<M::Warp, T, E>(w, frame, out))
}

/// Encodes `input` into one frame at the start of `out` with the team: with every thread of a
/// block team that has a codec scratch where the channel's codec has a block coder
/// ([`Compression::encode_block`]), else with the team's first warp. Returns the frame's bytes,
/// on every thread.
#[inline(always)]
fn encode_on_team<M: Team, T: Split, E: Compression>(
    team: M,
    codec: u64,
    input: &[T::Bits],
    out: LaneOut<'_>,
) -> Result<usize, FrameError> {
    if let Some(scratch) = team.codec_scratch() {
        if let Some(result) = encode_block_out_of_line::<M::Warp, T, E>(team.warp(), scratch, codec, input, out) {
            return result;
        }
    }
    team.solo(|w| encode_out_of_line::<M::Warp, T, E>(w, codec, input, out))
}

/// `E::decode`, never inlined: the frame decoder (every codec's) is the largest part of a
/// step, and inlined at each of the primitives' call sites it would be copied into every
/// schedule of every operator's kernel; out of line there is one copy per (warp, dtype,
/// compression), shared by all of them.
#[inline(never)]
fn decode_out_of_line<W: Warp, T: Split, E: Compression>(
    w: W,
    frame: &[u8],
    out: LaneOut<'_>,
) -> Result<usize, FrameError> {
    E::decode::<W, T>(w, frame, out)
}

/// `E::encode`, never inlined (as [`decode_out_of_line`]: one copy per (warp, dtype, codec)).
#[inline(never)]
fn encode_out_of_line<W: Warp, T: Split, E: Compression>(
    w: W,
    codec: u64,
    input: &[T::Bits],
    out: LaneOut<'_>,
) -> Result<usize, FrameError> {
    E::encode::<W, T>(w, codec, input, out)
}

/// `E::decode_block`, never inlined (as [`decode_out_of_line`]).
#[inline(never)]
fn decode_block_out_of_line<W: Warp, T: Split, E: Compression>(
    w: W,
    scratch: Scratch,
    frame: &[u8],
    out: LaneOut<'_>,
) -> Option<Result<usize, FrameError>> {
    E::decode_block::<W, T>(w, scratch, frame, out)
}

/// `E::encode_block`, never inlined (as [`decode_out_of_line`]).
#[inline(never)]
fn encode_block_out_of_line<W: Warp, T: Split, E: Compression>(
    w: W,
    scratch: Scratch,
    codec: u64,
    input: &[T::Bits],
    out: LaneOut<'_>,
) -> Option<Result<usize, FrameError>> {
    E::encode_block::<W, T>(w, scratch, codec, input, out)
}
