//! The bytes on the wire: the handshake that opens each socket and the header of every message
//! after it (the tables are in the docs of [`super`]). Plain little-endian encoders and decoders;
//! decoding never trusts a length it has not bounded.

/// `"ZCNT"`: the first word of every handshake.
pub(super) const HANDSHAKE_MAGIC: u32 = u32::from_le_bytes(*b"ZCNT");
/// The wire protocol version (handshake and messages); both ends must agree.
pub(super) const WIRE_VERSION: u16 = 2;
/// Bytes of a handshake record.
pub(super) const HANDSHAKE_BYTES: usize = 40;
/// Bytes of a message header.
pub(super) const MSG_HEADER_BYTES: usize = 32;
/// The longest reason an ABORT message carries.
pub(super) const MAX_REASON_BYTES: usize = 1024;
/// Pieces are cut at multiples of this many bytes (unless the frame is shorter).
pub(super) const PIECE_ALIGN: u32 = 64;

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
    /// Which of the pair's sockets this is: `0..sockets` carry DATA, `sockets` is the control
    /// socket.
    pub socket: u32,
    /// The writer's data sockets per peer (the ends must agree).
    pub sockets: u32,
    /// The writer's smallest piece ([`Striping::min_piece`]; the ends must agree).
    pub min_piece: u32,
}

impl Handshake {
    /// The record's bytes.
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
        b[32..36].copy_from_slice(&self.min_piece.to_le_bytes());
        // 36..40: reserved, zero
        b
    }

    /// The record in `b`, or why it is not one (wrong magic, version or kind, nonzero
    /// reserved word).
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
        if u32_at(b, 36) != 0 {
            return Err("nonzero reserved word in a NET handshake".into());
        }
        Ok(Handshake {
            kind,
            comm_magic: u64_at(b, 8),
            from_rank: u32_at(b, 16),
            to_rank: u32_at(b, 20),
            socket: u32_at(b, 24),
            sockets: u32_at(b, 28),
            min_piece: u32_at(b, 32),
        })
    }
}

/// What a message carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub(super) enum MsgKind {
    /// One piece of a frame: `len` bytes at `offset` of the `total`-byte frame of step `step`
    /// of connection `conn`.
    Data = 1,
    /// The receiver's kernel has consumed `step` frames of connection `conn` (its `head`).
    Credit = 2,
    /// The writer closes its transport gracefully; nothing follows on this socket.
    Close = 3,
    /// The writer's transport failed; `len` bytes of UTF-8 reason follow, then nothing.
    Abort = 4,
}

/// The header before every message's body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct MsgHeader {
    pub kind: MsgKind,
    /// The connection index (as given to `add_send` / `add_recv`); ABORT: the rank the
    /// failure started on.
    pub conn: u32,
    /// DATA: the frame's step; CREDIT: the receiver's `head`; otherwise 0.
    pub step: u64,
    /// Bytes of body after the header.
    pub len: u32,
    /// DATA: where in the frame the body goes; otherwise 0.
    pub offset: u32,
    /// DATA: bytes of the whole frame; otherwise 0.
    pub total: u32,
}

impl MsgHeader {
    /// A header of `kind` with no body.
    pub fn bare(kind: MsgKind, conn: u32, step: u64) -> MsgHeader {
        MsgHeader {
            kind,
            conn,
            step,
            len: 0,
            offset: 0,
            total: 0,
        }
    }

    /// The header's bytes.
    pub fn encode(&self) -> [u8; MSG_HEADER_BYTES] {
        let mut b = [0u8; MSG_HEADER_BYTES];
        b[0..4].copy_from_slice(&(self.kind as u32).to_le_bytes());
        b[4..8].copy_from_slice(&self.conn.to_le_bytes());
        b[8..16].copy_from_slice(&self.step.to_le_bytes());
        b[16..20].copy_from_slice(&self.len.to_le_bytes());
        b[20..24].copy_from_slice(&self.offset.to_le_bytes());
        b[24..28].copy_from_slice(&self.total.to_le_bytes());
        // 28..32: reserved, zero
        b
    }

    /// The header in `b`, or why it is not one (unknown kind, nonzero reserved word, a body
    /// where the kind has none, a DATA piece that is empty or ends past its frame, offset or
    /// total on another kind).
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
            offset: u32_at(b, 20),
            total: u32_at(b, 24),
        };
        if u32_at(b, 28) != 0 {
            return Err("nonzero reserved word in a message header".into());
        }
        match kind {
            MsgKind::Data if h.len == 0 || u64::from(h.offset) + u64::from(h.len) > u64::from(h.total) => {
                return Err(format!(
                    "a DATA piece of {} bytes at offset {} of a {}-byte frame",
                    h.len, h.offset, h.total
                ));
            }
            MsgKind::Data => {}
            _ if h.offset != 0 || h.total != 0 => {
                return Err(format!("{kind:?} message with an offset or a frame length"));
            }
            MsgKind::Credit | MsgKind::Close if h.len != 0 => {
                return Err(format!("{kind:?} message with a {}-byte body", h.len));
            }
            _ => {}
        }
        Ok(h)
    }
}

/// How both ends cut a frame into pieces: `sockets` data sockets per peer, pieces of at least
/// `min_piece` bytes. A frame of `total` bytes is cut into pieces of
/// [`Striping::piece_bytes`] (`max(min_piece, ceil(total / sockets))` rounded up to
/// [`PIECE_ALIGN`]), the last one shorter: so at most `sockets` pieces, and the receiver can
/// check every piece's offset and length exactly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Striping {
    /// Data sockets per peer (1..=64).
    pub sockets: u32,
    /// The smallest piece (at least 1).
    pub min_piece: u32,
}

impl Striping {
    /// The length of every piece but the last of a `total`-byte frame.
    pub fn piece_bytes(&self, total: u32) -> u64 {
        let even = u64::from(total).div_ceil(u64::from(self.sockets.max(1)));
        let aligned = even.div_ceil(u64::from(PIECE_ALIGN)) * u64::from(PIECE_ALIGN);
        aligned.max(u64::from(self.min_piece.max(1)))
    }

    /// How many pieces a `total`-byte frame has (at most `sockets`).
    pub fn pieces(&self, total: u32) -> u32 {
        // at most `sockets` (`piece_bytes >= total / sockets`), so it fits
        u64::from(total).div_ceil(self.piece_bytes(total)) as u32
    }

    /// Piece `i` of a `total`-byte frame: (offset, length).
    pub fn piece(&self, total: u32, i: u32) -> (u32, u32) {
        let p = self.piece_bytes(total);
        let offset = (u64::from(i) * p).min(u64::from(total));
        let len = p.min(u64::from(total) - offset);
        // both at most `total`
        (offset as u32, len as u32)
    }

    /// Which piece `len` bytes at `offset` of a `total`-byte frame are, or why they are none.
    pub fn index(&self, offset: u32, len: u32, total: u32) -> Result<u32, String> {
        let p = self.piece_bytes(total);
        let i = u64::from(offset) / p;
        if !u64::from(offset).is_multiple_of(p) || i >= u64::from(self.pieces(total)) {
            return Err(format!(
                "a piece at offset {offset} of a {total}-byte frame (pieces of {p} bytes)"
            ));
        }
        // `i < pieces <= sockets`
        let i = i as u32;
        if self.piece(total, i) != (offset, len) {
            return Err(format!(
                "a piece of {len} bytes at offset {offset} of a {total}-byte frame (pieces of {p} bytes)"
            ));
        }
        Ok(i)
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

    #[test]
    fn handshake_round_trips_and_rejects_strangers() {
        let h = Handshake {
            kind: HandshakeKind::Hello,
            comm_magic: 0x0123_4567_89ab_cdef,
            from_rank: 3,
            to_rank: 7,
            socket: 1,
            sockets: 2,
            min_piece: 65536,
        };
        assert_eq!(Handshake::decode(&h.encode()), Ok(h));
        let mut b = h.encode();
        b[39] = 1;
        assert!(Handshake::decode(&b).is_err(), "a reserved word");
        let mut b = h.encode();
        b[0] ^= 1;
        assert!(Handshake::decode(&b).is_err());
        let mut b = h.encode();
        b[4] = 9;
        assert!(Handshake::decode(&b).is_err());
        assert!(Handshake::decode(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n1234567890123").is_err());
    }

    #[test]
    fn message_headers_round_trip_and_reject_garbage() {
        let h = MsgHeader {
            kind: MsgKind::Data,
            conn: 5,
            step: 1 << 40,
            len: 4096,
            offset: 8192,
            total: 12288,
        };
        assert_eq!(MsgHeader::decode(&h.encode()), Ok(h));
        let mut b = h.encode();
        b[0] = 9;
        assert!(MsgHeader::decode(&b).is_err());
        let mut b = h.encode();
        b[31] = 1;
        assert!(MsgHeader::decode(&b).is_err(), "a reserved word");
        for (len, offset, total) in [(0, 0, 10), (4097, 8192, 12288), (1, u32::MAX, u32::MAX)] {
            let bad = MsgHeader {
                len,
                offset,
                total,
                ..h
            };
            assert!(MsgHeader::decode(&bad.encode()).is_err(), "{bad:?}");
        }
        let mut credit = MsgHeader::bare(MsgKind::Credit, 1, 2);
        credit.len = 3;
        assert!(MsgHeader::decode(&credit.encode()).is_err());
        let mut close = MsgHeader::bare(MsgKind::Close, 0, 0);
        close.total = 3;
        assert!(MsgHeader::decode(&close.encode()).is_err());
    }

    #[test]
    fn striping_cuts_every_frame_into_at_most_sockets_exact_pieces() {
        for sockets in [1, 2, 3, 8, 64] {
            for min_piece in [1, 64, 1000, 65536] {
                let s = Striping { sockets, min_piece };
                for total in [1, 63, 64, 65, 4096, 65535, 65536, 65537, 524_288, 1 << 24, u32::MAX] {
                    let n = s.pieces(total);
                    assert!((1..=sockets).contains(&n), "{s:?} {total}: {n} pieces");
                    let mut end = 0u64;
                    for i in 0..n {
                        let (offset, len) = s.piece(total, i);
                        assert_eq!(u64::from(offset), end, "{s:?} {total}: piece {i}");
                        assert!(len > 0 && (i + 1 == n || u64::from(len) >= u64::from(min_piece)));
                        assert_eq!(s.index(offset, len, total), Ok(i));
                        end += u64::from(len);
                    }
                    assert_eq!(end, u64::from(total), "{s:?}: the pieces cover the frame");
                }
            }
        }
        // 512 KiB over 8 sockets: 8 pieces of 64 KiB; 100 KiB: one piece (at least 64 KiB)
        let s = Striping {
            sockets: 8,
            min_piece: 65536,
        };
        assert_eq!((s.pieces(524_288), s.piece_bytes(524_288)), (8, 65536));
        assert_eq!(s.pieces(100 << 10), 2);
        assert_eq!(s.pieces(60 << 10), 1);
        // anything off the grid is refused
        for (offset, len, total) in [(1, 65536, 524_288), (65536, 100, 524_288), (524_288, 0, 524_288)] {
            assert!(s.index(offset, len, total).is_err(), "{offset} {len} {total}");
        }
    }
}
