//! The bytes on the wire: the handshake that opens each socket and the header of every message
//! after it (the tables are in the docs of [`super`]). Plain little-endian encoders and decoders;
//! decoding never trusts a length it has not bounded.

use zipcoll_device::frame::{FrameHeader, HEADER_BYTES};

/// `"ZCNT"`: the first word of every handshake.
pub(super) const HANDSHAKE_MAGIC: u32 = u32::from_le_bytes(*b"ZCNT");
/// The wire protocol version (handshake and messages); both ends must agree.
pub(super) const WIRE_VERSION: u16 = 1;
/// Bytes of a handshake record.
pub(super) const HANDSHAKE_BYTES: usize = 32;
/// Bytes of a message header.
pub(super) const MSG_HEADER_BYTES: usize = 24;
/// The longest reason an ABORT message carries.
pub(super) const MAX_REASON_BYTES: usize = 1024;

/// Which half of the handshake a record is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u16)]
pub(super) enum HandshakeKind {
    /// Sent by the dialing (lower) rank.
    Hello = 1,
    /// The accepting (higher) rank's answer.
    Ack = 2,
}

/// One handshake record (the dialer's HELLO or the acceptor's ACK).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Handshake {
    pub kind: HandshakeKind,
    /// The communicator's 64-bit magic, supplied by the caller on every rank.
    pub comm_magic: u64,
    /// The rank that writes the record.
    pub from_rank: u32,
    /// The rank that should read it.
    pub to_rank: u32,
    /// Which of the pair's sockets this is.
    pub socket: u32,
    /// The writer's `sockets_per_peer` (the ends must agree).
    pub sockets: u32,
}

impl Handshake {
    /// The record's 32 bytes.
    pub fn encode(&self) -> [u8; HANDSHAKE_BYTES] {
        let mut b = [0u8; HANDSHAKE_BYTES];
        b[0..4].copy_from_slice(&HANDSHAKE_MAGIC.to_le_bytes());
        b[4..6].copy_from_slice(&WIRE_VERSION.to_le_bytes());
        b[6..8].copy_from_slice(&(self.kind as u16).to_le_bytes());
        b[8..16].copy_from_slice(&self.comm_magic.to_le_bytes());
        b[16..20].copy_from_slice(&self.from_rank.to_le_bytes());
        b[20..24].copy_from_slice(&self.to_rank.to_le_bytes());
        b[24..28].copy_from_slice(&self.socket.to_le_bytes());
        b[28..32].copy_from_slice(&self.sockets.to_le_bytes());
        b
    }

    /// The record in `b`, or why it is not one (wrong magic, version or kind).
    pub fn decode(b: &[u8; HANDSHAKE_BYTES]) -> Result<Handshake, String> {
        let magic = u32_at(b, 0);
        if magic != HANDSHAKE_MAGIC {
            return Err(format!("not a zipcoll NET handshake (magic {magic:#010x})"));
        }
        let version = u16::from_le_bytes([b[4], b[5]]);
        if version != WIRE_VERSION {
            return Err(format!("NET wire version {version}, this build speaks {WIRE_VERSION}"));
        }
        let kind = match u16::from_le_bytes([b[6], b[7]]) {
            1 => HandshakeKind::Hello,
            2 => HandshakeKind::Ack,
            k => return Err(format!("unknown handshake kind {k}")),
        };
        Ok(Handshake {
            kind,
            comm_magic: u64_at(b, 8),
            from_rank: u32_at(b, 16),
            to_rank: u32_at(b, 20),
            socket: u32_at(b, 24),
            sockets: u32_at(b, 28),
        })
    }
}

/// What a message carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub(super) enum MsgKind {
    /// One frame: `len` bytes for step `step` of connection `conn`.
    Data = 1,
    /// The receiver's kernel has consumed `step` frames of connection `conn` (its `head`).
    Credit = 2,
    /// The writer closes its transport gracefully; nothing follows.
    Close = 3,
    /// The writer's transport failed; `len` bytes of UTF-8 reason follow, then nothing.
    Abort = 4,
}

/// The header before every message's body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct MsgHeader {
    pub kind: MsgKind,
    /// The connection index (as given to `add_send` / `add_recv`).
    pub conn: u32,
    /// DATA: the frame's step; CREDIT: the receiver's `head`; otherwise 0.
    pub step: u64,
    /// Bytes of body after the header.
    pub len: u32,
}

impl MsgHeader {
    /// A header of `kind` with no body.
    pub fn bare(kind: MsgKind, conn: u32, step: u64) -> MsgHeader {
        MsgHeader {
            kind,
            conn,
            step,
            len: 0,
        }
    }

    /// The header's 24 bytes.
    pub fn encode(&self) -> [u8; MSG_HEADER_BYTES] {
        let mut b = [0u8; MSG_HEADER_BYTES];
        b[0..4].copy_from_slice(&(self.kind as u32).to_le_bytes());
        b[4..8].copy_from_slice(&self.conn.to_le_bytes());
        b[8..16].copy_from_slice(&self.step.to_le_bytes());
        b[16..20].copy_from_slice(&self.len.to_le_bytes());
        // 20..24: reserved, zero
        b
    }

    /// The header in `b`, or why it is not one (unknown kind, nonzero reserved word, a body
    /// where the kind has none).
    pub fn decode(b: &[u8; MSG_HEADER_BYTES]) -> Result<MsgHeader, String> {
        let kind = match u32_at(b, 0) {
            1 => MsgKind::Data,
            2 => MsgKind::Credit,
            3 => MsgKind::Close,
            4 => MsgKind::Abort,
            k => return Err(format!("unknown message kind {k}")),
        };
        let h = MsgHeader {
            kind,
            conn: u32_at(b, 4),
            step: u64_at(b, 8),
            len: u32_at(b, 16),
        };
        if u32_at(b, 20) != 0 {
            return Err("nonzero reserved word in a message header".into());
        }
        if matches!(kind, MsgKind::Credit | MsgKind::Close) && h.len != 0 {
            return Err(format!("{kind:?} message with a {}-byte body", h.len));
        }
        Ok(h)
    }
}

/// Bytes of the frame at the start of `slot`: header plus payload when the header is valid and
/// the frame fits the slot, otherwise the whole slot (so that the receiver's validation reports
/// the damage; nothing outside the slot is ever read).
pub(super) fn frame_len(slot: &[u8]) -> usize {
    match FrameHeader::parse(slot) {
        // `parse` checked that `HEADER_BYTES + payload_bytes <= slot.len()`
        Ok(h) => HEADER_BYTES + h.payload_bytes as usize,
        Err(_) => slot.len(),
    }
}

fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}

fn u64_at(b: &[u8], o: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[o..o + 8]);
    u64::from_le_bytes(w)
}

#[cfg(test)]
mod tests {
    use super::*;
    use zipcoll_device::codec::CodecId;
    use zipcoll_device::dtype::DType;
    use zipcoll_device::frame::checksum;

    #[test]
    fn handshake_round_trips_and_rejects_strangers() {
        let h = Handshake {
            kind: HandshakeKind::Hello,
            comm_magic: 0x0123_4567_89ab_cdef,
            from_rank: 3,
            to_rank: 7,
            socket: 1,
            sockets: 2,
        };
        assert_eq!(Handshake::decode(&h.encode()), Ok(h));
        let mut b = h.encode();
        b[0] ^= 1;
        assert!(Handshake::decode(&b).is_err());
        let mut b = h.encode();
        b[4] = 9;
        assert!(Handshake::decode(&b).is_err());
        assert!(Handshake::decode(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n12345").is_err());
    }

    #[test]
    fn message_headers_round_trip_and_reject_garbage() {
        let h = MsgHeader {
            kind: MsgKind::Data,
            conn: 5,
            step: 1 << 40,
            len: 4096,
        };
        assert_eq!(MsgHeader::decode(&h.encode()), Ok(h));
        let mut b = h.encode();
        b[0] = 9;
        assert!(MsgHeader::decode(&b).is_err());
        let mut b = h.encode();
        b[23] = 1;
        assert!(MsgHeader::decode(&b).is_err());
        let mut credit = MsgHeader::bare(MsgKind::Credit, 1, 2);
        credit.len = 3;
        assert!(MsgHeader::decode(&credit.encode()).is_err());
    }

    #[test]
    fn frame_len_is_exact_for_valid_frames_and_the_slot_otherwise() {
        let data = [7u8; 100];
        let h = FrameHeader::new(CodecId::Raw, DType::F8E4M3, 0, 0, 100, 100, checksum(&data));
        let mut slot = vec![0u8; 256];
        slot[..32].copy_from_slice(&h.to_bytes());
        slot[32..132].copy_from_slice(&data);
        assert_eq!(frame_len(&slot), 132);
        // a header claiming more than the slot holds
        let big = FrameHeader::new(CodecId::Raw, DType::F8E4M3, 0, 0, 1000, 1000, 0);
        slot[..32].copy_from_slice(&big.to_bytes());
        assert_eq!(frame_len(&slot), 256);
        // garbage, and a slot shorter than a header
        slot[0] ^= 0xff;
        assert_eq!(frame_len(&slot), 256);
        assert_eq!(frame_len(&slot[..16]), 16);
    }
}
