//! The connection descriptors, shared by host and device: plain `#[repr(C)]` records of 64-bit
//! fields that the host fills and the kernel reads (a transport's ABI: change the layout only
//! together with every writer).
//!
//! [`ConnDesc`], one FIFO (both sides hold a copy of the same values):
//!
//! | offset | size | field        | meaning                                                        |
//! |--------|------|--------------|----------------------------------------------------------------|
//! | 0      | 8    | `slots`      | `NSLOTS * slot_bytes` bytes, slot `i` at `slots + i * slot_bytes`, [`SLOT_ALIGN`]-aligned |
//! | 8      | 8    | `head`       | `*mut u64`: frames the receiver has consumed                   |
//! | 16     | 8    | `tail`       | `*mut u64`: frames the sender has published                    |
//! | 24     | 8    | `slot_bytes` | bytes per slot, a multiple of [`SLOT_ALIGN`]                   |
//!
//! [`ChannelDesc`], one warp's place in a ring (one per rank and channel):
//!
//! | offset | size | field         | meaning                                                       |
//! |--------|------|---------------|---------------------------------------------------------------|
//! | 0      | 32   | `send`        | the FIFO to the next rank (absent: all null / zero)           |
//! | 32     | 32   | `recv`        | the FIFO from the previous rank (absent: all null / zero)     |
//! | 64     | 8    | `stage`       | staging buffer for a received or about-to-be-sent chunk (16-aligned) |
//! | 72     | 8    | `stage_bytes` | its size                                                      |
//! | 80     | 8    | `abort`       | `*mut u32` shared by every rank of the launch: nonzero = stop |
//! | 88     | 8    | `codec`       | the `CodecId` value a [`crate::prims::ByChannel`] sender codes with (other compressions ignore it) |
//! | 96     | 8    | `timeout_ns`  | nanoseconds a wait lasts before it reports a timeout         |
//! | 104    | 8    | `trusted`     | nonzero: `recv`'s transport delivers bytes as written (P2P), so the RAW fast path does not verify received payloads against their checksum (ARCHITECTURE.md, "RAW over P2P"); 0: it does |
//! | 112    | 8    | `frame_stage` | null, or a slot's worth of device memory (16-aligned, `max(send.slot_bytes, recv.slot_bytes)` bytes) where the general path codes frames whose FIFOs lie in host memory (NET), moving them to and from the slots with 16-byte vectors ([`crate::prims`], "Frames of FIFOs in host memory") |

/// Slots per FIFO: the most frames a sender may run ahead of its receiver.
pub const NSLOTS: u64 = 8;
/// The default FIFO buffer: 4 MiB, split into [`NSLOTS`] slots.
pub const DEFAULT_BUFFER_BYTES: u64 = 4 << 20;
/// The default slot: 512 KiB.
pub const DEFAULT_SLOT_BYTES: u64 = DEFAULT_BUFFER_BYTES / NSLOTS;
/// Alignment of slots (and of `slot_bytes`): frames start 16-byte aligned.
pub const SLOT_ALIGN: u64 = 16;

/// One FIFO between a sender and a receiver (see the module table). A null `slots` means "no
/// FIFO": the side of a [`ChannelDesc`] that holds it is absent.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub struct ConnDesc {
    /// `NSLOTS * slot_bytes` bytes of slots.
    pub slots: *mut u8,
    /// Frames consumed; written by the receiver.
    pub head: *mut u64,
    /// Frames published; written by the sender.
    pub tail: *mut u64,
    /// Bytes per slot.
    pub slot_bytes: u64,
}
const _: () = assert!(core::mem::size_of::<ConnDesc>() == 32);

impl ConnDesc {
    /// The absent FIFO: every field null or zero.
    pub const NONE: ConnDesc = ConnDesc {
        slots: core::ptr::null_mut(),
        head: core::ptr::null_mut(),
        tail: core::ptr::null_mut(),
        slot_bytes: 0,
    };

    /// Whether this describes a FIFO (non-null `slots`).
    pub fn present(&self) -> bool {
        !self.slots.is_null()
    }
}

/// One warp's connections and bookkeeping in a ring (see the module table).
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub struct ChannelDesc {
    /// The FIFO to the next rank.
    pub send: ConnDesc,
    /// The FIFO from the previous rank.
    pub recv: ConnDesc,
    /// Staging buffer.
    pub stage: *mut u8,
    /// Bytes of `stage`.
    pub stage_bytes: u64,
    /// The launch's shared abort word.
    pub abort: *mut u32,
    /// The codec of [`crate::prims::ByChannel`] compression (a `CodecId` value).
    pub codec: u64,
    /// Nanoseconds a wait lasts before it reports a timeout.
    pub timeout_ns: u64,
    /// Nonzero: RAW frames received on the fast path are not verified against their checksum.
    pub trusted: u64,
    /// Null, or where the general path codes frames before they go to (and after they come
    /// from) slots in host memory.
    pub frame_stage: *mut u8,
}
const _: () = assert!(core::mem::size_of::<ChannelDesc>() == 120);

impl ChannelDesc {
    /// A channel with neither FIFO, no staging buffer, no abort word and no status record: what
    /// purely local steps (copies) run over.
    pub const NONE: ChannelDesc = ChannelDesc {
        send: ConnDesc::NONE,
        recv: ConnDesc::NONE,
        stage: core::ptr::null_mut(),
        stage_bytes: 0,
        abort: core::ptr::null_mut(),
        codec: 0,
        timeout_ns: 0,
        trusted: 0,
        frame_stage: core::ptr::null_mut(),
    };
}
