//! Frames: the self-describing unit every codec produces. A frame is a 32-byte
//! [`FrameHeader`] followed by `payload_bytes` of payload; a receiver validates and decodes
//! each frame on its own.
//!
//! Header layout (little-endian; the layout is ABI: bump [`FRAME_VERSION`] on any change):
//!
//! | offset | size | field             | meaning                                                 |
//! |--------|------|-------------------|---------------------------------------------------------|
//! | 0      | 2    | `magic`           | [`FRAME_MAGIC`] (`"ZC"`)                                |
//! | 2      | 1    | `version`         | [`FRAME_VERSION`] (warp frames) or [`BLOCK_FRAME_VERSION`] |
//! | 3      | 1    | `codec`           | [`CodecId`]                                             |
//! | 4      | 1    | `dtype`           | [`DType`]                                               |
//! | 5      | 1    | `flags`           | reserved, 0                                             |
//! | 6      | 2    | `params`          | codec parameters (the codec's docs say which)           |
//! | 8      | 4    | `raw_bytes`       | bytes of the decoded data (elements x element size)     |
//! | 12     | 4    | `payload_bytes`   | bytes of payload after the header                       |
//! | 16     | 4    | `raw_checksum`    | [`checksum`] of the decoded data                        |
//! | 20     | 4    | `params2`         | more codec parameters                                   |
//! | 24     | 4    | `reserved`        | 0                                                       |
//! | 28     | 4    | `header_checksum` | [`checksum`] of bytes 0..28                             |
//!
//! Validation ([`FrameHeader::parse`]) returns a typed [`FrameError`]; nothing here asserts on
//! received bytes.

pub mod status;

use crate::codec::CodecId;
use crate::dtype::DType;

/// `"ZC"` as a little-endian u16.
pub const FRAME_MAGIC: u16 = u16::from_le_bytes(*b"ZC");
/// The version of frames coded by one warp (`codec::frame_codec`).
pub const FRAME_VERSION: u8 = 1;
/// The version of frames coded by a whole block (`codec::block_frame`): the same header, the
/// coders' block layouts.
pub const BLOCK_FRAME_VERSION: u8 = 2;
/// Bytes of a [`FrameHeader`].
pub const HEADER_BYTES: usize = 32;

/// The header before every frame's payload (see the module table).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, align(16))]
pub struct FrameHeader {
    pub magic: u16,
    pub version: u8,
    pub codec: u8,
    pub dtype: u8,
    pub flags: u8,
    pub params: u16,
    pub raw_bytes: u32,
    pub payload_bytes: u32,
    pub raw_checksum: u32,
    pub params2: u32,
    pub reserved: u32,
    pub header_checksum: u32,
}
const _: () = assert!(core::mem::size_of::<FrameHeader>() == HEADER_BYTES);

/// Why a frame was rejected. Every variant says where (byte offset within the frame) when
/// that is meaningful.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameError {
    /// Fewer bytes than the header (or than the header says) were given.
    Truncated { need: usize, have: usize },
    /// The first two bytes are not [`FRAME_MAGIC`].
    BadMagic { found: u16 },
    /// A version this build does not read.
    UnsupportedVersion { found: u8 },
    /// A codec id no codec has.
    UnknownCodec { found: u8 },
    /// A dtype id no dtype has.
    UnknownDType { found: u8 },
    /// Reserved fields are not zero.
    Reserved,
    /// The header's own checksum does not match its bytes.
    HeaderChecksum { stored: u32, computed: u32 },
    /// `raw_bytes` is not a whole number of elements, or is larger than the output buffer.
    BadRawLength { raw_bytes: u32, capacity: usize },
    /// The payload is inconsistent with what the codec requires (which codec, where, why).
    Corrupt {
        codec: CodecId,
        offset: usize,
        reason: &'static str,
    },
    /// The decoded data does not match `raw_checksum`.
    RawChecksum { stored: u32, computed: u32 },
    /// The encoder was given an output buffer smaller than `max_encoded_len`.
    OutputTooSmall { need: usize, have: usize },
    /// The frame holds another dtype than the decoder was asked for.
    WrongDType { frame: DType, expected: DType },
    /// The encoder was given more data than a frame describes (`raw_bytes` is a u32).
    InputTooLarge { bytes: usize },
    /// A block coder was given less block-shared scratch memory than it needs.
    ScratchTooSmall { need: usize, have: usize },
    /// A valid frame coded with `codec`, which this decoder was built without (the RAW-only
    /// decoder of the block-channel kernel, [`crate::codec::decode_raw_frame`]).
    CodecNotBuilt { codec: CodecId },
}

impl core::fmt::Display for FrameError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            FrameError::Truncated { need, have } => write!(f, "frame truncated: need {need} bytes, have {have}"),
            FrameError::BadMagic { found } => write!(f, "not a zipcoll frame (magic {found:#06x})"),
            FrameError::UnsupportedVersion { found } => {
                write!(
                    f,
                    "frame version {found} is not supported (this build reads {FRAME_VERSION})"
                )
            }
            FrameError::UnknownCodec { found } => write!(f, "unknown codec id {found}"),
            FrameError::UnknownDType { found } => write!(f, "unknown dtype id {found}"),
            FrameError::Reserved => write!(f, "reserved header fields are not zero"),
            FrameError::HeaderChecksum { stored, computed } => {
                write!(
                    f,
                    "header checksum {stored:#010x} does not match its bytes ({computed:#010x})"
                )
            }
            FrameError::BadRawLength { raw_bytes, capacity } => {
                write!(
                    f,
                    "raw length {raw_bytes} is not whole elements or exceeds the output ({capacity} bytes)"
                )
            }
            FrameError::Corrupt { codec, offset, reason } => {
                write!(f, "{codec:?} frame corrupt at byte {offset}: {reason}")
            }
            FrameError::RawChecksum { stored, computed } => {
                write!(
                    f,
                    "decoded data checksum {computed:#010x} does not match the frame's {stored:#010x}"
                )
            }
            FrameError::OutputTooSmall { need, have } => write!(f, "output buffer of {have} bytes, need {need}"),
            FrameError::WrongDType { frame, expected } => {
                write!(f, "frame holds {frame:?} data, expected {expected:?}")
            }
            FrameError::InputTooLarge { bytes } => write!(f, "{bytes} bytes of input do not fit in one frame"),
            FrameError::ScratchTooSmall { need, have } => {
                write!(f, "{have} bytes of block-shared scratch memory, need {need}")
            }
            FrameError::CodecNotBuilt { codec } => write!(
                f,
                "a frame coded with {codec:?}, which this kernel does not decode (it takes RAW frames only: \
                 the ranks disagree on compression)"
            ),
        }
    }
}

/// Mixes one 32-bit word with its index (murmur3's finalizer over `word ^ index * φ`).
#[inline(always)]
pub fn checksum_term(word: u32, index: u32) -> u32 {
    let mut h = word ^ index.wrapping_mul(0x9E37_79B9);
    h ^= h >> 16;
    h = h.wrapping_mul(0x85EB_CA6B);
    h ^= h >> 13;
    h = h.wrapping_mul(0xC2B2_AE35);
    h ^ (h >> 16)
}

/// The frame checksum of `bytes`: the wrapping sum over little-endian 32-bit words (the tail
/// zero-padded) of [`checksum_term`]`(word, index)`, plus the length. A sum of independent
/// terms, so any split of the words among lanes, warps or blocks gives the same value.
///
/// What it guarantees: every change confined to one 32-bit word changes it (for a fixed index
/// the term is a bijection of the word: xor, then murmur3's invertible finalizer), so does
/// every change of the length by less than 2^32 bytes. Nothing more: changes to two or more words can
/// cancel in the sum. A swap of two different words goes undetected for some pairs (about one
/// random pair in 2^32), and a deliberate change can always be made to keep it. It catches
/// accidents, not adversaries.
pub fn checksum(bytes: &[u8]) -> u32 {
    let mut sum = bytes.len() as u32;
    let mut chunks = bytes.chunks_exact(4);
    let mut i = 0u32;
    for c in &mut chunks {
        sum = sum.wrapping_add(checksum_term(u32::from_le_bytes([c[0], c[1], c[2], c[3]]), i));
        i += 1;
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        let mut w = [0u8; 4];
        w[..tail.len()].copy_from_slice(tail);
        sum = sum.wrapping_add(checksum_term(u32::from_le_bytes(w), i));
    }
    sum
}

impl FrameHeader {
    /// A header for a frame of `codec` over `raw_bytes` of `dtype` data whose checksum is
    /// `raw_checksum`, with `payload_bytes` of payload; computes the header checksum.
    pub fn new(
        codec: CodecId,
        dtype: DType,
        params: u16,
        params2: u32,
        raw_bytes: u32,
        payload_bytes: u32,
        raw_checksum: u32,
    ) -> Self {
        let mut h = FrameHeader {
            magic: FRAME_MAGIC,
            version: FRAME_VERSION,
            codec: codec as u8,
            dtype: dtype as u8,
            flags: 0,
            params,
            raw_bytes,
            payload_bytes,
            raw_checksum,
            params2,
            reserved: 0,
            header_checksum: 0,
        };
        h.header_checksum = checksum(&h.to_bytes()[..28]);
        h
    }

    /// The header's 32 bytes, little-endian.
    pub fn to_bytes(&self) -> [u8; HEADER_BYTES] {
        let mut b = [0u8; HEADER_BYTES];
        b[0..2].copy_from_slice(&self.magic.to_le_bytes());
        b[2] = self.version;
        b[3] = self.codec;
        b[4] = self.dtype;
        b[5] = self.flags;
        b[6..8].copy_from_slice(&self.params.to_le_bytes());
        b[8..12].copy_from_slice(&self.raw_bytes.to_le_bytes());
        b[12..16].copy_from_slice(&self.payload_bytes.to_le_bytes());
        b[16..20].copy_from_slice(&self.raw_checksum.to_le_bytes());
        b[20..24].copy_from_slice(&self.params2.to_le_bytes());
        b[24..28].copy_from_slice(&self.reserved.to_le_bytes());
        b[28..32].copy_from_slice(&self.header_checksum.to_le_bytes());
        b
    }

    /// This header with version `version` (and its checksum recomputed).
    pub fn with_version(mut self, version: u8) -> Self {
        self.version = version;
        self.header_checksum = checksum(&self.to_bytes()[..28]);
        self
    }

    /// Reads and validates the header of a warp frame ([`FRAME_VERSION`]) at the start of
    /// `frame`: magic, version, codec and dtype ids, reserved fields, the header checksum, and
    /// that `frame` holds the whole payload.
    pub fn parse(frame: &[u8]) -> Result<FrameHeader, FrameError> {
        Self::parse_version(frame, FRAME_VERSION)
    }

    /// [`FrameHeader::parse`] for frames of version `version`.
    pub fn parse_version(frame: &[u8], version: u8) -> Result<FrameHeader, FrameError> {
        let b: &[u8; HEADER_BYTES] =
            frame
                .get(..HEADER_BYTES)
                .and_then(|s| s.try_into().ok())
                .ok_or(FrameError::Truncated {
                    need: HEADER_BYTES,
                    have: frame.len(),
                })?;
        let u16_at = |o: usize| u16::from_le_bytes([b[o], b[o + 1]]);
        let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        let h = FrameHeader {
            magic: u16_at(0),
            version: b[2],
            codec: b[3],
            dtype: b[4],
            flags: b[5],
            params: u16_at(6),
            raw_bytes: u32_at(8),
            payload_bytes: u32_at(12),
            raw_checksum: u32_at(16),
            params2: u32_at(20),
            reserved: u32_at(24),
            header_checksum: u32_at(28),
        };
        if h.magic != FRAME_MAGIC {
            return Err(FrameError::BadMagic { found: h.magic });
        }
        if h.version != version {
            return Err(FrameError::UnsupportedVersion { found: h.version });
        }
        let computed = checksum(&b[..28]);
        if computed != h.header_checksum {
            return Err(FrameError::HeaderChecksum {
                stored: h.header_checksum,
                computed,
            });
        }
        CodecId::from_u8(h.codec).ok_or(FrameError::UnknownCodec { found: h.codec })?;
        DType::from_u8(h.dtype).ok_or(FrameError::UnknownDType { found: h.dtype })?;
        if h.flags != 0 || h.reserved != 0 {
            return Err(FrameError::Reserved);
        }
        let need = HEADER_BYTES + h.payload_bytes as usize;
        if frame.len() < need {
            return Err(FrameError::Truncated {
                need,
                have: frame.len(),
            });
        }
        Ok(h)
    }

    /// The codec (validated by [`FrameHeader::parse`]).
    pub fn codec_id(&self) -> Option<CodecId> {
        CodecId::from_u8(self.codec)
    }
    /// The dtype (validated by [`FrameHeader::parse`]).
    pub fn dtype_id(&self) -> Option<DType> {
        DType::from_u8(self.dtype)
    }
}

/// Bytes of the frame at the start of `slot`: header plus payload when the header is valid (a
/// warp frame's or a block frame's) and the frame fits the slot, otherwise the whole slot (so
/// that the receiver's validation reports the damage; nothing outside the slot is ever read).
/// What a transport moves of a FIFO slot (the NET proxies, the device-memory staging of frames
/// whose FIFO is in host memory).
pub fn frame_len(slot: &[u8]) -> usize {
    let header = FrameHeader::parse(slot).or_else(|_| FrameHeader::parse_version(slot, BLOCK_FRAME_VERSION));
    match header {
        // `parse` checked that `HEADER_BYTES + payload_bytes <= slot.len()`
        Ok(h) => HEADER_BYTES + h.payload_bytes as usize,
        Err(_) => slot.len(),
    }
}
