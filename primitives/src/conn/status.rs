//! Typed connection errors and the status record that carries them from a kernel to the host.
//!
//! A status record is [`STATUS_WORDS`] `u32`s: `[code, a, b, step]`, where `step` is the FIFO
//! step (saturated) at which the failure happened. Zero everywhere means "no failure". Codes are
//! ABI (append only):
//!
//! | code                | [`ConnError`]                   | `a`                 | `b`         |
//! |---------------------|---------------------------------|---------------------|-------------|
//! | 1..=15              | `Frame(e)`: a received frame was rejected | `e`'s record (the frame-status table of `kernels::codec`) | |
//! | `0x100` + 1..=15    | `Encode(e)`: a frame could not be written | as above           |             |
//! | [`code::FRAME_LENGTH`] | `FrameLength`                | `expected`          | `found`     |
//! | [`code::TIMEOUT`]   | `Timeout(wait)`                 | `wait` (0 credit, 1 data) | 0     |
//! | [`code::ABORTED`]   | `Aborted`                       | 0                   | 0           |
//! | [`code::NO_FRAME_ELEMS`] | `NoFrameElems`             | 0                   | 0           |
//! | [`code::SLOT_TOO_SMALL`] | `SlotTooSmall`             | `need`              | `have`      |
//! | [`code::STAGE_TOO_SMALL`] | `StageTooSmall`           | `need`              | `have`      |
//! | [`code::NO_CONNECTION`] | `NoConnection(side)`        | `side` (0 send, 1 recv) | 0       |
//! | [`code::UNKNOWN_COLL`] | `UnknownColl(c)`             | `c`                 | 0           |
//! | [`code::BAD_RANK`]  | `BadRank`                       | `rank`              | `nranks`    |
//! | [`code::BAD_PART`]  | `BadPart`                       | `part`              | `nparts`    |
//! | [`code::BAD_PEER`]  | `BadPeer`                       | `peer`              | `nranks`    |
//! | [`code::OVERLAP`]   | `Overlap`                       | 0                   | 0           |
//! | [`code::NO_CHANNELS`] | `NoChannels`                  | 0                   | 0           |
//! | [`code::BAD_COUNT`] | `BadCount`                      | 0                   | 0           |
//! | [`code::BAD_LAUNCH`] | `BadLaunch`                    | `threads`           | `shared_bytes` |
//! | any other nonzero code, or a known one with `a` or `b` out of its range | `Unrecognized { code, a, b }` | as found | as found |
//!
//! A record whose code is 0 says "no failure"; every other record is a failure, so a record no
//! kernel writes (a corrupted record, a newer kernel's code) is never read as success.

use crate::kernels::codec::{error_record, frame_error};
use zipcoll_device::frame::FrameError;

/// `u32` words of a status record: `[code, a, b, step]`.
pub const STATUS_WORDS: usize = 4;

/// The status codes beyond the frame errors (see the module table). Stable: append only.
pub mod code {
    /// Added to a frame error's code when the sender's encoder failed.
    pub const ENCODE: u32 = 0x100;
    /// A frame held another number of elements than the schedule expects.
    pub const FRAME_LENGTH: u32 = 0x200;
    /// A wait reached its time limit.
    pub const TIMEOUT: u32 = 0x201;
    /// Another rank raised the abort word.
    pub const ABORTED: u32 = 0x202;
    /// `frame_elems` is 0.
    pub const NO_FRAME_ELEMS: u32 = 0x203;
    /// A slot cannot hold a frame of `frame_elems` elements.
    pub const SLOT_TOO_SMALL: u32 = 0x204;
    /// The staging buffer cannot hold `frame_elems` elements.
    pub const STAGE_TOO_SMALL: u32 = 0x205;
    /// A step needs a side of its channel that the channel does not have.
    pub const NO_CONNECTION: u32 = 0x206;
    /// A work descriptor names no known collective.
    pub const UNKNOWN_COLL: u32 = 0x207;
    /// A work descriptor's `rank` is not below its `nranks` (or `nranks` is 0).
    pub const BAD_RANK: u32 = 0x208;
    /// A work descriptor's `part` is not below its `nparts` (or `nparts` is 0).
    pub const BAD_PART: u32 = 0x209;
    /// A work descriptor's peer or root is not a rank of the communicator (or is the rank itself
    /// for a send or receive).
    pub const BAD_PEER: u32 = 0x20A;
    /// A work descriptor's `src` and `dst` overlap in a way its collective does not allow.
    pub const OVERLAP: u32 = 0x20B;
    /// A work descriptor with elements to move between ranks has no channels.
    pub const NO_CHANNELS: u32 = 0x20C;
    /// A work descriptor's buffers are larger than the address space.
    pub const BAD_COUNT: u32 = 0x20D;
    /// `ConnError::BadLaunch`.
    pub const BAD_LAUNCH: u32 = 0x20E;
}

/// One side of a channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The FIFO this warp sends on.
    Send = 0,
    /// The FIFO this warp receives from.
    Recv = 1,
}

/// What a timed-out wait waited for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// The sender waited for the receiver to free a slot (`head`).
    Credit = 0,
    /// The receiver waited for the sender to publish a frame (`tail`).
    Data = 1,
}

/// Why a connection (and the collective using it) failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnError {
    /// A received frame failed validation or decoding; nothing of it was used.
    Frame(FrameError),
    /// A received frame was valid but held `found` elements where the schedule expects `expected`.
    FrameLength { expected: u32, found: u32 },
    /// The encoder could not write a frame into a slot.
    Encode(FrameError),
    /// A wait lasted `timeout_ns` without its peer moving: a dead or stuck peer.
    Timeout(Wait),
    /// Another rank failed and raised the abort word.
    Aborted,
    /// `frame_elems` is 0 while there are elements to move.
    NoFrameElems,
    /// A slot of `have` bytes cannot hold the `need` bytes of a full frame.
    SlotTooSmall { need: u64, have: u64 },
    /// The staging buffer of `have` bytes cannot hold the `need` bytes of a chunk.
    StageTooSmall { need: u64, have: u64 },
    /// A step needs this side of the channel, whose FIFO is absent (null `slots`).
    NoConnection(Side),
    /// A work descriptor's `coll` is not a [`crate::collectives::Coll`].
    UnknownColl(u32),
    /// `rank >= nranks` (or `nranks == 0`).
    BadRank { rank: u32, nranks: u32 },
    /// `part >= nparts` (or `nparts == 0`).
    BadPart { part: u32, nparts: u32 },
    /// The peer (send, recv) or root (reduce, broadcast) is not another rank / not a rank.
    BadPeer { peer: u32, nranks: u32 },
    /// `src` and `dst` overlap other than as the collective's in-place form.
    Overlap,
    /// Elements to move between ranks, but `channels` is null.
    NoChannels,
    /// The buffers' sizes in bytes overflow.
    BadCount,
    /// A block-channel kernel launched with blocks of `threads` threads and `shared_bytes` of
    /// dynamic shared memory, which cannot form its team (whole warps, at most 32, and
    /// `zipcoll_device::team::BLOCK_TEAM_BYTES` of shared memory).
    BadLaunch { threads: u32, shared_bytes: u32 },
    /// A status record with a nonzero code that no kernel of this version writes (or a known
    /// code with fields out of range): a failure whose cause is unknown, never a success.
    Unrecognized { code: u32, a: u32, b: u32 },
}

/// A [`ConnError`] and the FIFO step at which it happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Failure {
    /// The step of the connection that failed (0 for configuration errors).
    pub step: u64,
    /// What went wrong.
    pub error: ConnError,
}

impl core::fmt::Display for Failure {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let step = self.step;
        match self.error {
            ConnError::Frame(e) => write!(f, "frame of step {step} rejected: {e}"),
            ConnError::FrameLength { expected, found } => {
                write!(f, "frame of step {step} holds {found} elements, expected {expected}")
            }
            ConnError::Encode(e) => write!(f, "cannot encode the frame of step {step}: {e}"),
            ConnError::Timeout(Wait::Credit) => write!(f, "timed out waiting for credit at step {step}"),
            ConnError::Timeout(Wait::Data) => write!(f, "timed out waiting for the frame of step {step}"),
            ConnError::Aborted => write!(f, "aborted by another rank at step {step}"),
            ConnError::NoFrameElems => write!(f, "frame_elems is 0"),
            ConnError::SlotTooSmall { need, have } => write!(f, "slots of {have} bytes, a frame needs {need}"),
            ConnError::StageTooSmall { need, have } => {
                write!(f, "staging buffer of {have} bytes, a chunk needs {need}")
            }
            ConnError::NoConnection(Side::Send) => write!(f, "step {step} sends on a channel without a send FIFO"),
            ConnError::NoConnection(Side::Recv) => {
                write!(f, "step {step} receives on a channel without a receive FIFO")
            }
            ConnError::UnknownColl(c) => write!(f, "unknown collective {c}"),
            ConnError::BadRank { rank, nranks } => write!(f, "rank {rank} of {nranks} ranks"),
            ConnError::BadPart { part, nparts } => write!(f, "part {part} of {nparts} parts"),
            ConnError::BadPeer { peer, nranks } => write!(f, "peer or root {peer} is not another rank of {nranks}"),
            ConnError::Overlap => write!(f, "src and dst overlap other than in place"),
            ConnError::NoChannels => write!(f, "no channels for a collective that moves data between ranks"),
            ConnError::BadCount => write!(f, "the buffers' sizes overflow"),
            ConnError::BadLaunch { threads, shared_bytes } => write!(
                f,
                "a block-channel launch of {threads}-thread blocks with {shared_bytes} bytes of shared memory \
                 (it needs whole warps, at most 32, and {} bytes)",
                zipcoll_device::team::BLOCK_TEAM_BYTES
            ),
            ConnError::Unrecognized { code, a, b } => {
                write!(
                    f,
                    "unrecognized status record (code {code:#x}, {a}, {b}) at step {step}"
                )
            }
        }
    }
}

/// `v` as a `u32`, saturated.
fn sat(v: u64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

impl Failure {
    /// The status record of this failure (see the module table).
    pub fn record(&self) -> [u32; STATUS_WORDS] {
        let [c, a, b] = match self.error {
            ConnError::Frame(e) => error_record(&e),
            ConnError::Encode(e) => {
                let [c, a, b] = error_record(&e);
                [code::ENCODE + c, a, b]
            }
            ConnError::FrameLength { expected, found } => [code::FRAME_LENGTH, expected, found],
            ConnError::Timeout(wait) => [code::TIMEOUT, wait as u32, 0],
            ConnError::Aborted => [code::ABORTED, 0, 0],
            ConnError::NoFrameElems => [code::NO_FRAME_ELEMS, 0, 0],
            ConnError::SlotTooSmall { need, have } => [code::SLOT_TOO_SMALL, sat(need), sat(have)],
            ConnError::StageTooSmall { need, have } => [code::STAGE_TOO_SMALL, sat(need), sat(have)],
            ConnError::NoConnection(side) => [code::NO_CONNECTION, side as u32, 0],
            ConnError::UnknownColl(c) => [code::UNKNOWN_COLL, c, 0],
            ConnError::BadRank { rank, nranks } => [code::BAD_RANK, rank, nranks],
            ConnError::BadPart { part, nparts } => [code::BAD_PART, part, nparts],
            ConnError::BadPeer { peer, nranks } => [code::BAD_PEER, peer, nranks],
            ConnError::Overlap => [code::OVERLAP, 0, 0],
            ConnError::NoChannels => [code::NO_CHANNELS, 0, 0],
            ConnError::BadCount => [code::BAD_COUNT, 0, 0],
            ConnError::BadLaunch { threads, shared_bytes } => [code::BAD_LAUNCH, threads, shared_bytes],
            ConnError::Unrecognized { code, a, b } => [code, a, b],
        };
        [c, a, b, sat(self.step)]
    }

    /// The failure a status record holds; `None` only for a record whose code is 0 (no
    /// failure). A nonzero record that no failure writes is [`ConnError::Unrecognized`].
    /// `reason` becomes a `Corrupt` frame error's reason (the record cannot carry it).
    pub fn from_record(r: [u32; STATUS_WORDS], reason: &'static str) -> Option<Failure> {
        let [c, a, b, step] = r;
        if c == 0 {
            return None;
        }
        let error = Self::known(c, a, b, reason).unwrap_or(ConnError::Unrecognized { code: c, a, b });
        Some(Failure {
            step: step.into(),
            error,
        })
    }

    /// The error of a record with a code (and fields) that a kernel writes.
    fn known(c: u32, a: u32, b: u32, reason: &'static str) -> Option<ConnError> {
        Some(match c {
            code::FRAME_LENGTH => ConnError::FrameLength { expected: a, found: b },
            code::TIMEOUT => ConnError::Timeout(match a {
                0 => Wait::Credit,
                1 => Wait::Data,
                _ => return None,
            }),
            code::ABORTED => ConnError::Aborted,
            code::NO_FRAME_ELEMS => ConnError::NoFrameElems,
            code::SLOT_TOO_SMALL => ConnError::SlotTooSmall {
                need: a.into(),
                have: b.into(),
            },
            code::STAGE_TOO_SMALL => ConnError::StageTooSmall {
                need: a.into(),
                have: b.into(),
            },
            code::NO_CONNECTION => ConnError::NoConnection(match a {
                0 => Side::Send,
                1 => Side::Recv,
                _ => return None,
            }),
            code::UNKNOWN_COLL => ConnError::UnknownColl(a),
            code::BAD_RANK => ConnError::BadRank { rank: a, nranks: b },
            code::BAD_PART => ConnError::BadPart { part: a, nparts: b },
            code::BAD_PEER => ConnError::BadPeer { peer: a, nranks: b },
            code::OVERLAP => ConnError::Overlap,
            code::NO_CHANNELS => ConnError::NoChannels,
            code::BAD_COUNT => ConnError::BadCount,
            code::BAD_LAUNCH => ConnError::BadLaunch {
                threads: a,
                shared_bytes: b,
            },
            c if c > code::ENCODE && c < code::FRAME_LENGTH => {
                ConnError::Encode(frame_error(c - code::ENCODE, a, b, reason)?)
            }
            c => ConnError::Frame(frame_error(c, a, b, reason)?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zipcoll_device::codec::CodecId;

    #[test]
    fn records_map_back_to_the_failure() {
        let errors = [
            ConnError::Frame(FrameError::HeaderChecksum { stored: 1, computed: 2 }),
            ConnError::Frame(FrameError::Corrupt {
                codec: CodecId::ExpAns,
                offset: 40,
                reason: "r",
            }),
            ConnError::Encode(FrameError::OutputTooSmall { need: 64, have: 32 }),
            ConnError::FrameLength { expected: 7, found: 3 },
            ConnError::Timeout(Wait::Credit),
            ConnError::Timeout(Wait::Data),
            ConnError::Aborted,
            ConnError::NoFrameElems,
            ConnError::SlotTooSmall { need: 96, have: 64 },
            ConnError::StageTooSmall { need: 128, have: 16 },
            ConnError::NoConnection(Side::Send),
            ConnError::NoConnection(Side::Recv),
            ConnError::UnknownColl(99),
            ConnError::BadRank { rank: 4, nranks: 4 },
            ConnError::BadPart { part: 3, nparts: 2 },
            ConnError::BadPeer { peer: 1, nranks: 2 },
            ConnError::Overlap,
            ConnError::NoChannels,
            ConnError::BadCount,
            ConnError::BadLaunch {
                threads: 100,
                shared_bytes: 16,
            },
            ConnError::Unrecognized {
                code: 0x300,
                a: 1,
                b: 2,
            },
        ];
        for (i, error) in errors.into_iter().enumerate() {
            let f = Failure { step: i as u64, error };
            assert_eq!(Failure::from_record(f.record(), "r"), Some(f), "{f}");
        }
    }

    #[test]
    fn only_zero_codes_are_no_failure_and_unknown_records_are_failures() {
        assert_eq!(Failure::from_record([0; 4], ""), None);
        assert_eq!(Failure::from_record([0, 5, 6, 7], ""), None);
        for r in [
            [code::TIMEOUT, 2, 0, 3],
            [0x300, 0, 0, 3],
            [code::ENCODE, 0, 0, 3],
            [code::NO_CONNECTION, 2, 0, 3],
            [u32::MAX, 1, 1, 3],
        ] {
            let [c, a, b, _] = r;
            assert_eq!(
                Failure::from_record(r, ""),
                Some(Failure {
                    step: 3,
                    error: ConnError::Unrecognized { code: c, a, b }
                }),
                "{r:?}"
            );
        }
    }
}
