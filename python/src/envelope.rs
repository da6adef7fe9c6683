//! The bytes `zipcoll.compress` returns: a 16-byte header, then the host's stream of frames
//! (`zipcoll_host::codec`). The frames describe themselves, but not how many there are: the
//! header's element count is what makes a stream cut at a frame boundary an error, and its
//! dtype what lets `decompress` run without one.
//!
//! | bytes  | field                                           |
//! |--------|-------------------------------------------------|
//! | 0..4   | magic `ZCPY`                                    |
//! | 4      | version, 1                                      |
//! | 5      | the dtype (`DType as u8`)                       |
//! | 6..8   | zero                                            |
//! | 8..16  | elements, u64 little-endian                     |

use zipcoll_host::{DType, Error};

/// Bytes of the header.
pub const HEADER_BYTES: usize = 16;
const MAGIC: [u8; 4] = *b"ZCPY";
const VERSION: u8 = 1;

/// The header of a stream of `elems` elements of `dtype`.
pub fn header(dtype: DType, elems: usize) -> [u8; HEADER_BYTES] {
    let mut h = [0u8; HEADER_BYTES];
    h[..4].copy_from_slice(&MAGIC);
    h[4] = VERSION;
    h[5] = dtype as u8;
    h[8..].copy_from_slice(&(elems as u64).to_le_bytes());
    h
}

/// The dtype, element count and frames of `bytes`, or [`Error::Stream`] saying why it is not a
/// buffer `compress` made.
pub fn open(bytes: &[u8]) -> Result<(DType, usize, &[u8]), Error> {
    let bad = |reason: String| Error::Stream { frame: 0, reason };
    let (h, frames) = bytes.split_first_chunk::<HEADER_BYTES>().ok_or_else(|| {
        bad(format!(
            "{} bytes: shorter than the {HEADER_BYTES}-byte header",
            bytes.len()
        ))
    })?;
    if h[..4] != MAGIC {
        return Err(bad("not zipcoll.compress's output (no ZCPY magic)".into()));
    }
    if h[4] != VERSION || h[6..8] != [0, 0] {
        return Err(bad(format!("header version {} (expected {VERSION})", h[4])));
    }
    let dtype = DType::from_u8(h[5]).ok_or_else(|| bad(format!("dtype code {}", h[5])))?;
    let mut n = [0u8; 8];
    n.copy_from_slice(&h[8..]);
    let elems = usize::try_from(u64::from_le_bytes(n)).map_err(|_| bad("element count overflows".into()))?;
    Ok((dtype, elems, frames))
}
