//! Frame errors as status words: the `[code, a, b]` that kernels and device functions report
//! for a [`FrameError`] (a GPU thread cannot hand back an enum), and the way back.
//!
//! A status is `[code, a, b]`. `code` is 0 when the frame was encoded or decoded, otherwise a
//! stable number per [`FrameError`] variant (ABI between the device code, the host and the
//! device-function library's callers: never renumber, only append); `a` and `b` carry the
//! variant's fields (saturated to `u32`). [`error_record`] writes them, [`frame_error`] reads
//! them back.
//!
//! | code | [`FrameError`] variant  | `a`                  | `b`          |
//! |------|-------------------------|----------------------|--------------|
//! | 0    | none: the frame is fine | 0                    | 0            |
//! | 1    | `Truncated`             | `need`               | `have`       |
//! | 2    | `BadMagic`              | `found`              | 0            |
//! | 3    | `UnsupportedVersion`    | `found`              | 0            |
//! | 4    | `UnknownCodec`          | `found`              | 0            |
//! | 5    | `UnknownDType`          | `found`              | 0            |
//! | 6    | `Reserved`              | 0                    | 0            |
//! | 7    | `HeaderChecksum`        | `stored`             | `computed`   |
//! | 8    | `BadRawLength`          | `raw_bytes`          | `capacity`   |
//! | 9    | `Corrupt`               | `codec` (`CodecId`)  | `offset`     |
//! | 10   | `RawChecksum`           | `stored`             | `computed`   |
//! | 11   | `OutputTooSmall`        | `need`               | `have`       |
//! | 12   | `WrongDType`            | `frame` (`DType`)    | `expected`   |
//! | 13   | `InputTooLarge`         | `bytes`              | 0            |
//! | 14   | `ScratchTooSmall`       | `need`               | `have`       |
//! | 15   | `CodecNotBuilt`         | `codec` (`CodecId`)  | 0            |
//!
//! A `Corrupt` record cannot carry its `reason` (a string in the device's memory);
//! [`frame_error`] takes the reason from its caller (the host re-decodes the one failing frame
//! on the simulator to recover it).

use crate::codec::CodecId;
use crate::dtype::DType;
use crate::frame::FrameError;

/// The status codes (see the module table). Stable: never renumber, only append.
pub mod code {
    /// The frame was encoded or decoded.
    pub const OK: u32 = 0;
    /// `FrameError::Truncated`.
    pub const TRUNCATED: u32 = 1;
    /// `FrameError::BadMagic`.
    pub const BAD_MAGIC: u32 = 2;
    /// `FrameError::UnsupportedVersion`.
    pub const UNSUPPORTED_VERSION: u32 = 3;
    /// `FrameError::UnknownCodec`.
    pub const UNKNOWN_CODEC: u32 = 4;
    /// `FrameError::UnknownDType`.
    pub const UNKNOWN_DTYPE: u32 = 5;
    /// `FrameError::Reserved`.
    pub const RESERVED: u32 = 6;
    /// `FrameError::HeaderChecksum`.
    pub const HEADER_CHECKSUM: u32 = 7;
    /// `FrameError::BadRawLength`.
    pub const BAD_RAW_LENGTH: u32 = 8;
    /// `FrameError::Corrupt`.
    pub const CORRUPT: u32 = 9;
    /// `FrameError::RawChecksum`.
    pub const RAW_CHECKSUM: u32 = 10;
    /// `FrameError::OutputTooSmall`.
    pub const OUTPUT_TOO_SMALL: u32 = 11;
    /// `FrameError::WrongDType`.
    pub const WRONG_DTYPE: u32 = 12;
    /// `FrameError::InputTooLarge`.
    pub const INPUT_TOO_LARGE: u32 = 13;
    /// `FrameError::ScratchTooSmall`.
    pub const SCRATCH_TOO_SMALL: u32 = 14;
    /// `FrameError::CodecNotBuilt`.
    pub const CODEC_NOT_BUILT: u32 = 15;
}

/// `v` as a `u32`, saturated.
#[inline(always)]
pub fn sat(v: usize) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

/// The first three words of `e`'s status record: `[code, a, b]` (see the module table).
pub fn error_record(e: &FrameError) -> [u32; 3] {
    match *e {
        FrameError::Truncated { need, have } => [code::TRUNCATED, sat(need), sat(have)],
        FrameError::BadMagic { found } => [code::BAD_MAGIC, found.into(), 0],
        FrameError::UnsupportedVersion { found } => [code::UNSUPPORTED_VERSION, found.into(), 0],
        FrameError::UnknownCodec { found } => [code::UNKNOWN_CODEC, found.into(), 0],
        FrameError::UnknownDType { found } => [code::UNKNOWN_DTYPE, found.into(), 0],
        FrameError::Reserved => [code::RESERVED, 0, 0],
        FrameError::HeaderChecksum { stored, computed } => [code::HEADER_CHECKSUM, stored, computed],
        FrameError::BadRawLength { raw_bytes, capacity } => [code::BAD_RAW_LENGTH, raw_bytes, sat(capacity)],
        FrameError::Corrupt { codec, offset, .. } => [code::CORRUPT, codec as u32, sat(offset)],
        FrameError::RawChecksum { stored, computed } => [code::RAW_CHECKSUM, stored, computed],
        FrameError::OutputTooSmall { need, have } => [code::OUTPUT_TOO_SMALL, sat(need), sat(have)],
        FrameError::WrongDType { frame, expected } => [code::WRONG_DTYPE, frame as u32, expected as u32],
        FrameError::InputTooLarge { bytes } => [code::INPUT_TOO_LARGE, sat(bytes), 0],
        FrameError::ScratchTooSmall { need, have } => [code::SCRATCH_TOO_SMALL, sat(need), sat(have)],
        FrameError::CodecNotBuilt { codec } => [code::CODEC_NOT_BUILT, codec as u32, 0],
    }
}

/// The [`FrameError`] of a status record `[code, a, b, ..]`; `reason` becomes a `Corrupt`
/// error's reason. `None` for [`code::OK`] and for records no variant writes (an unknown code,
/// or fields out of their types' range).
pub fn frame_error(code: u32, a: u32, b: u32, reason: &'static str) -> Option<FrameError> {
    let byte = |v: u32| u8::try_from(v).ok();
    Some(match code {
        code::TRUNCATED => FrameError::Truncated {
            need: a as usize,
            have: b as usize,
        },
        code::BAD_MAGIC => FrameError::BadMagic {
            found: u16::try_from(a).ok()?,
        },
        code::UNSUPPORTED_VERSION => FrameError::UnsupportedVersion { found: byte(a)? },
        code::UNKNOWN_CODEC => FrameError::UnknownCodec { found: byte(a)? },
        code::UNKNOWN_DTYPE => FrameError::UnknownDType { found: byte(a)? },
        code::RESERVED => FrameError::Reserved,
        code::HEADER_CHECKSUM => FrameError::HeaderChecksum { stored: a, computed: b },
        code::BAD_RAW_LENGTH => FrameError::BadRawLength {
            raw_bytes: a,
            capacity: b as usize,
        },
        code::CORRUPT => FrameError::Corrupt {
            codec: CodecId::from_u8(byte(a)?)?,
            offset: b as usize,
            reason,
        },
        code::RAW_CHECKSUM => FrameError::RawChecksum { stored: a, computed: b },
        code::OUTPUT_TOO_SMALL => FrameError::OutputTooSmall {
            need: a as usize,
            have: b as usize,
        },
        code::WRONG_DTYPE => FrameError::WrongDType {
            frame: DType::from_u8(byte(a)?)?,
            expected: DType::from_u8(byte(b)?)?,
        },
        code::INPUT_TOO_LARGE => FrameError::InputTooLarge { bytes: a as usize },
        code::SCRATCH_TOO_SMALL => FrameError::ScratchTooSmall {
            need: a as usize,
            have: b as usize,
        },
        code::CODEC_NOT_BUILT if b == 0 => FrameError::CodecNotBuilt {
            codec: CodecId::from_u8(byte(a)?)?,
        },
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One error of every variant, with fields that fit their record words.
    const ERRORS: [FrameError; 15] = [
        FrameError::Truncated { need: 64, have: 40 },
        FrameError::BadMagic { found: 0x1234 },
        FrameError::UnsupportedVersion { found: 9 },
        FrameError::UnknownCodec { found: 77 },
        FrameError::UnknownDType { found: 200 },
        FrameError::Reserved,
        FrameError::HeaderChecksum {
            stored: 0xdead_beef,
            computed: 7,
        },
        FrameError::BadRawLength {
            raw_bytes: 3,
            capacity: 2,
        },
        FrameError::Corrupt {
            codec: CodecId::Huffman,
            offset: 12,
            reason: "test",
        },
        FrameError::RawChecksum { stored: 1, computed: 2 },
        FrameError::OutputTooSmall { need: 100, have: 99 },
        FrameError::WrongDType {
            frame: DType::F16,
            expected: DType::Bf16,
        },
        FrameError::InputTooLarge { bytes: 5 },
        FrameError::ScratchTooSmall { need: 7, have: 6 },
        FrameError::CodecNotBuilt { codec: CodecId::ExpAns },
    ];

    #[test]
    fn records_map_back_to_the_error() {
        let mut codes: [u32; 15] = [0; 15];
        for (e, c) in ERRORS.iter().zip(&mut codes) {
            let [code, a, b] = error_record(e);
            assert_eq!(frame_error(code, a, b, "test"), Some(*e));
            *c = code;
        }
        assert_eq!(
            codes,
            core::array::from_fn(|i| i as u32 + 1),
            "codes are 1..=15 in table order"
        );
    }

    #[test]
    fn unknown_records_are_none() {
        assert_eq!(frame_error(code::OK, 0, 0, ""), None);
        assert_eq!(frame_error(16, 0, 0, ""), None);
        assert_eq!(frame_error(code::CODEC_NOT_BUILT, 9, 0, ""), None);
        assert_eq!(frame_error(code::CODEC_NOT_BUILT, 1, 1, ""), None);
        assert_eq!(frame_error(code::UNKNOWN_CODEC, 256, 0, ""), None);
        assert_eq!(frame_error(code::CORRUPT, 99, 0, ""), None);
        assert_eq!(frame_error(code::WRONG_DTYPE, 0, 200, ""), None);
    }

    #[test]
    fn large_fields_saturate() {
        let e = FrameError::OutputTooSmall {
            need: usize::MAX,
            have: 1,
        };
        assert_eq!(error_record(&e), [code::OUTPUT_TOO_SMALL, u32::MAX, 1]);
    }
}
