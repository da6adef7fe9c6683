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
//! `x / nranks`, identity otherwise) is applied exactly once per contribution; collectives that
//! only move data use an operator whose `pre` is the identity (`Sum`).
//!
//! Where the chunk lives on the way: a received frame is decoded into `dst` when nothing is
//! combined with it and `COPY` is set, otherwise into the channel's staging buffer; the value is
//! computed into `dst` (`COPY`) or the staging buffer, and sent from there. In place
//! (`src == dst`) is allowed: each lane reads `src[i]` before it writes `dst[i]`.
//!
//! One warp per channel: the frame codec is warp-cooperative (all lanes of a warp encode or
//! decode one frame together), so a channel is driven by exactly one warp and more bandwidth
//! comes from more channels, i.e. more warps, each with its own [`crate::conn::ChannelDesc`].
//! Every step ends with a warp sync, so the next step may reuse the staging buffer.

mod compression;

pub use compression::{Compression, Force, Off};

use crate::conn::{ChannelDesc, ConnError, Failure, RecvConn, SendConn};
use core::marker::PhantomData;
use zipcoll_device::codec::{decode_frame, max_encoded_len, LaneOut};
use zipcoll_device::dtype::Split;
use zipcoll_device::reduce::RedOp;
use zipcoll_targets::Warp;

/// One warp's primitives over one channel, for elements `T`, operator `O` and compression `E`.
pub struct Prims<W, T: Split, O, E> {
    w: W,
    op: O,
    send: SendConn,
    recv: RecvConn,
    stage: *mut T::Bits,
    _encoding: PhantomData<E>,
}

impl<W: Warp, T: Split, O: RedOp, E: Compression> Prims<W, T, O, E> {
    /// The primitives of channel `ch` for chunks of up to `frame_elems` elements. Checks that a
    /// frame of `frame_elems` elements fits a slot and the staging buffer (a typed error, step 0,
    /// otherwise).
    ///
    /// # Safety
    /// `ch` describes live memory as [`crate::conn`]'s tables say, its staging buffer is aligned
    /// for `T::Bits`, and this warp is the only user of the channel while the value lives.
    pub unsafe fn new(w: W, ch: &ChannelDesc, op: O, frame_elems: usize) -> Result<Self, Failure> {
        let config = |error| Err(Failure { step: 0, error });
        if frame_elems == 0 {
            return config(ConnError::NoFrameElems);
        }
        let need = max_encoded_len::<T>(frame_elems) as u64;
        let have = ch.send.slot_bytes.min(ch.recv.slot_bytes);
        if have < need {
            return config(ConnError::SlotTooSmall { need, have });
        }
        let need = (frame_elems * T::DTYPE.size_bytes()) as u64;
        if ch.stage_bytes < need {
            return config(ConnError::StageTooSmall {
                need,
                have: ch.stage_bytes,
            });
        }
        Ok(Self {
            w,
            op,
            // SAFETY: forwarded from the caller.
            send: unsafe { SendConn::new(w, ch) },
            // SAFETY: forwarded from the caller.
            recv: unsafe { RecvConn::new(w, ch) },
            stage: ch.stage.cast(),
            _encoding: PhantomData,
        })
    }

    /// One step over a chunk of `n` elements (see the module table for the flags). Called by
    /// every lane of the warp with the same arguments. On `Err`, `dst` may hold part of a
    /// rejected frame; nothing of it was combined or sent on.
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
        let w = self.w;
        let bytes = n * T::DTYPE.size_bytes();
        // where the chunk's value is computed and sent from
        let target = if COPY { dst } else { self.stage };
        if RECV {
            let landing = if REDUCE { self.stage } else { target };
            let step = self.recv.step();
            let frame = self.recv.wait_frame(w)?;
            // SAFETY: `landing` is `dst` (valid for `n` writes) or the staging buffer (at least
            // `frame_elems >= n` elements, checked in `new`); only this warp writes it, through
            // `LaneOut`.
            let out = unsafe { LaneOut::from_raw(landing.cast::<u8>(), bytes) };
            let found = decode_frame::<W, T>(w, frame, out).map_err(|e| Failure {
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
            // every lane: `landing[..n]` holds the received chunk, checked against its checksum
            self.recv.release(w);
        }
        if REDUCE || !RECV {
            let mut i = w.lane_id() as usize;
            // lane l: elements l, l + WIDTH, ..; reads and writes only its own indices
            while i < n {
                // SAFETY: `i < n`: inside `src`, the staging buffer and `target` (the caller's
                // contract and `new`'s checks); `src[i]` is read before `target[i]` is written.
                unsafe {
                    let local = self.op.pre::<T>(src.add(i).read());
                    let v = if REDUCE {
                        self.op.combine::<T>(self.stage.add(i).read(), local)
                    } else {
                        local
                    };
                    target.add(i).write(v);
                }
                i += W::WIDTH as usize;
            }
            // every lane: `target[..n]` holds the chunk's value, written by all lanes
            w.sync(W::FULL);
        }
        if SEND {
            let step = self.send.step();
            let slot = self.send.wait_slot(w)?;
            // SAFETY: `target[..n]` is initialized (received or computed above) and no lane
            // writes it until the next step, which starts after `post`'s warp sync.
            let input = unsafe { core::slice::from_raw_parts(target.cast_const(), n) };
            E::encode::<W, T>(w, input, slot).map_err(|e| Failure {
                step,
                error: ConnError::Encode(e),
            })?;
            self.send.post(w);
        }
        Ok(())
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
