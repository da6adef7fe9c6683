//! Connections: the FIFO protocol that moves frames from one rank's warp to another's, NCCL
//! Simple-style (a ring of slots, a `tail` the sender publishes, a `head` the receiver
//! publishes), written once against [`zipcoll_targets::Memory`] so that the CUDA, NET and
//! simulator transports run the same device code.
//!
//! | item              | role                                                                  |
//! |-------------------|-----------------------------------------------------------------------|
//! | [`ConnDesc`]      | `#[repr(C)]` descriptor of one FIFO (slots, head, tail, slot size)     |
//! | [`ChannelDesc`]   | `#[repr(C)]` one warp's ring position: send + recv FIFOs (either may be absent: null `slots`), staging, status |
//! | [`SendConn`]      | the sender's side: wait for credit, write a slot, publish `tail`      |
//! | [`RecvConn`]      | the receiver's side: wait for data, read a slot, publish `head`        |
//! | [`Failure`]       | typed errors (frame rejected, timeout, abort, bad configuration) and their status record |
//! | [`Control`]       | the control block: the abort word and the record of the first failure ([`record_cause`]) |
//!
//! # The FIFO
//!
//! | memory                                   | written by          | read by                        |
//! |------------------------------------------|---------------------|--------------------------------|
//! | slot `s % NSLOTS` (`slot_bytes` bytes)   | sender, step `s`    | receiver, step `s`             |
//! | `tail: u64` (frames published)           | sender (release, System) | receiver (acquire, System) |
//! | `head: u64` (frames consumed)            | receiver (release, System) | sender (acquire, System) |
//!
//! Step `s` (counted from 0 over the connection's lifetime) uses slot `s % NSLOTS`. The sender
//! may write step `s` once `s < head + NSLOTS` (credit: at most [`NSLOTS`] frames in flight), and
//! the receiver may read it once `s < tail`. Each slot holds exactly one self-describing frame
//! ([`zipcoll_device::frame`]: header + payload, RAW when compression is off); the receiver
//! validates every frame on its own, so a corrupted slot is a typed error, never data.
//!
//! Memory ordering: the sender's lanes write the slot, each lane issues `fence.acq_rel.sys`,
//! the warp synchronizes, and lane 0 stores `tail = s + 1` with release at System scope; the
//! receiver's lane 0 loads `tail` with acquire at System scope and the warp synchronizes before
//! any lane reads the slot. So every byte of frame `s` happens-before every read of it. In the
//! other direction, the receiver's lanes finish reading slot `s` (a warp sync) before lane 0
//! release-stores `head = s + 1`, and the sender acquires `head` before it overwrites the slot
//! at step `s + NSLOTS`: no write-after-read race.
//!
//! Waits are bounded: every 256th poll of a counter also reads the launch's shared `abort` word
//! and the clock, and after `timeout_ns` nanoseconds a wait gives up with
//! [`ConnError::Timeout`]. A rank that fails writes its status record and raises `abort`, so
//! its peers stop with [`ConnError::Aborted`] instead of waiting out their limit. After a failure the connection is dead (its counters are not
//! rewound); after a success the receiver's `head` equals the sender's `tail`, and the next
//! launch continues from them.

mod control;
mod desc;
mod fifo;
mod status;

pub use control::{record_cause, Control, CONTROL_BYTES};
pub use desc::{ChannelDesc, ConnDesc, DEFAULT_BUFFER_BYTES, DEFAULT_SLOT_BYTES, NSLOTS, SLOT_ALIGN};
pub use fifo::{RecvConn, SendConn};
pub use status::{code, ConnError, Failure, Side, Wait, STATUS_WORDS};
