//! Test plumbing of this binary: the crate's shared plumbing (`tests/common`: a byte buffer that
//! every simulated lane writes through a `LaneOut`, one-warp launches, a deterministic random
//! source) and a reference bit-stream writer.

pub use crate::common::{one_warp, per_lane, Rng, SharedBuf};

/// The little-endian bit stream of `values` at `bits` bits each, padded to whole u32 words.
pub fn ref_pack(values: &[u32], bits: u32) -> Vec<u8> {
    let total = values.len() * bits as usize;
    let mut out = vec![0u8; total.div_ceil(32) * 4];
    for (i, v) in values.iter().enumerate() {
        for b in 0..bits as usize {
            if (v >> b) & 1 != 0 {
                let pos = i * bits as usize + b;
                out[pos / 8] |= 1 << (pos % 8);
            }
        }
    }
    out
}
