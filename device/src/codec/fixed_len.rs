//! [`FixedLen`]: symbols bit-packed per sub-block of 32 at the sub-block's own width, above the
//! sub-block's minimum (cuSZp style).
//!
//! Coded section layout (`n` symbols, `B = ceil(n / 32)` sub-blocks; sub-block `s` holds
//! symbols `32s .. 32s + 32`, the last one padded with its base):
//!
//! | offset                 | size              | content                                                          |
//! |------------------------|-------------------|------------------------------------------------------------------|
//! | `2s`                   | 2 per sub-block   | header of sub-block `s`: low byte `base_s` (its minimum symbol), high byte `width_s` = bits of `max_s - base_s` (`0..=symbol_bits`) |
//! | `2B .. H`              | 0 or 2            | zero padding to `H = 4 * ceil(2B / 4)`                            |
//! | `H + 4 * sum_{t<s} width_t` | `4 * width_s` | sub-block `s`'s bit planes: u32 word `b` holds bit `b` of `sym - base_s` of its 32 symbols (symbol `32s + i` in bit `i`) |
//!
//! The section ends exactly after the last sub-block's planes; `params` and `params2` are 0.
//!
//! Decoding is canonical: it rejects every section the encoder never writes, so a section that
//! decodes is the encoder's section of the decoded symbols. Besides the layout (widths at most
//! `symbol_bits`, bases below `2^symbol_bits`, the planes filling the section exactly) it
//! checks that the header padding is zero, that each `base_s` is its sub-block's minimum and
//! `width_s` the bits of its maximum minus `base_s` (no wider), that every symbol fits
//! `symbol_bits`, and that the plane bits past the last symbol are zero.
//! A sub-block of 32 values at width `w` takes exactly `w` words, so where a sub-block starts is
//! a prefix sum of widths. The planes are a transpose ([`put_bit_planes`]): one ballot per plane
//! and no atomics, for warps of 32 (one sub-block per step) and 64 lanes (two sub-blocks per
//! step, one per half) alike, with the same bytes.
//!
//! On N(0,1) bf16 exponents most sub-blocks span 5 to 15 binades, so widths are mostly 3 or
//! 4 bits: about 3.4 bits of planes and 0.5 of header per symbol (11.86 bits per bf16 value
//! with the 8-bit raw plane).

use super::{CodecId, Coded, LaneOut, OutOfSpace, SymbolCoder};
use crate::bits::{get_bit_planes, put_bit_planes, warp_exclusive_scan, warp_sum_u32};
use crate::frame::FrameError;
use zipcoll_targets::Warp;

/// Symbols per sub-block: one bit plane word.
const SUB: usize = 32;

/// The FixedLen coder (see the module docs for the layout).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FixedLen;

/// Bytes of the header section for `blocks` sub-blocks.
#[inline(always)]
const fn headers_bytes(blocks: usize) -> usize {
    (2 * blocks).div_ceil(4) * 4
}

/// A `Corrupt` error of this codec.
#[inline(always)]
fn corrupt(offset: usize, reason: &'static str) -> FrameError {
    CodecId::FixedLen.corrupt(offset, reason)
}

/// [`canonical_fault`]: a plane bit set past the last symbol.
const PAST_END: u32 = 1;
/// [`canonical_fault`]: `base + v` wider than the symbols.
const TOO_WIDE: u32 = 2;
/// [`canonical_fault`]: no symbol of the sub-block is its base.
const NOT_MIN: u32 = 3;
/// [`canonical_fault`]: the width is not the bits of the sub-block's largest `v`.
const NOT_WIDTH: u32 = 4;

/// The minimum and maximum of `v` (`< 2^16`) over the lanes of this lane's 32-lane group where
/// `valid` is set (`(0xFFFF, 0)` if none is): one butterfly on `(max << 16) | min`, each half
/// combined on its own. Called by every lane of the warp together.
#[inline(always)]
fn group_range<W: Warp>(w: W, v: u32, valid: bool) -> (u32, u32) {
    let mut range = if valid { v << 16 | v } else { 0xFFFF };
    let mut m = 1;
    while m < SUB as u32 {
        let o = w.shfl_xor_u32(W::FULL, range, m);
        range = (range >> 16).max(o >> 16) << 16 | (range & 0xFFFF).min(o & 0xFFFF);
        m <<= 1;
    }
    (range & 0xFFFF, range >> 16)
}

/// What the encoder would not have written about this lane's symbol `base + v` of a
/// sub-block decoded by its 32-lane group (`valid`: the symbol exists, `in_block`: the group
/// decodes a sub-block): 0 for nothing, else [`PAST_END`], [`TOO_WIDE`], [`NOT_MIN`] or
/// [`NOT_WIDTH`]. Called by every lane of the warp together (a butterfly within each group).
#[inline(always)]
fn canonical_fault<W: Warp>(w: W, v: u32, valid: bool, in_block: bool, base: u32, width: u32, mask: u32) -> u32 {
    let (min, max) = group_range(w, v, valid);
    // lane l: min and max of its group's sub-block (the first symbol of a sub-block is valid)
    if !in_block {
        0
    } else if !valid {
        if v != 0 {
            PAST_END
        } else {
            0
        }
    } else if base + v > mask {
        TOO_WIDE
    } else if min != 0 {
        NOT_MIN
    } else if 32 - max.leading_zeros() != width {
        NOT_WIDTH
    } else {
        0
    }
}

impl SymbolCoder for FixedLen {
    const ID: CodecId = CodecId::FixedLen;

    fn max_coded_len(n: usize, symbol_bits: u32) -> usize {
        let blocks = n.div_ceil(SUB);
        headers_bytes(blocks) + blocks * 4 * symbol_bits.min(8) as usize
    }

    fn encode<W: Warp>(
        w: W,
        n: usize,
        symbol_bits: u32,
        sym: impl Fn(usize) -> u8,
        out: LaneOut<'_>,
    ) -> Result<Coded, OutOfSpace> {
        let blocks = n.div_ceil(SUB);
        let data_at = headers_bytes(blocks);
        if data_at > out.len() {
            return Err(OutOfSpace { offset: 0 });
        }
        let lane = w.lane_id() as usize;
        let group = lane / SUB;
        let groups = W::WIDTH as usize / SUB;
        let mask = ((1u32 << symbol_bits.min(8)) - 1) as u8;
        // The header padding (at most 2 bytes), by lane 0 (in bounds: data_at <= out.len()).
        if lane == 0 && 2 * blocks < data_at {
            // SAFETY: only lane 0 writes the padding; the coder runs on every lane, converged, with the same arguments (`LaneOut::from_raw`'s contract for `out`).
            let _ = unsafe { out.put_u16(2 * blocks, 0) };
        }
        let mut words = 0usize;
        let mut c = 0;
        while c < n {
            let i = c + lane;
            let valid = i < n;
            let s = if valid { sym(i) & mask } else { 0 };
            let block = c / SUB + group;
            let active = block < blocks;
            // lane l: symbol c + l (if valid); its 32-lane group codes sub-block `block`
            let (base, max) = group_range(w, s as u32, valid);
            let width = if active { 32 - (max - base).leading_zeros() } else { 0 };
            // every lane of a group: its sub-block's base and width (0 for a group past the end)
            if active && lane.is_multiple_of(SUB) {
                // In bounds: 2 * block + 2 <= data_at <= out.len().
                // SAFETY: only the first lane of `block`'s group writes its header; the coder runs on every lane, converged, with the same arguments (`LaneOut::from_raw`'s contract for `out`).
                let _ = unsafe { out.put_u16(2 * block, base as u16 | (width as u16) << 8) };
            }
            let mut before = 0usize;
            let mut total = 0usize;
            let mut max_width = 0u32;
            for t in 0..groups {
                let wt = w.shfl_idx_u32(W::FULL, width, (t * SUB) as u32);
                if t < group {
                    before += wt as usize;
                }
                total += wt as usize;
                max_width = max_width.max(wt);
            }
            // lane l: `before` = words of the earlier groups of this step; every lane: their total
            let v = if valid { s as u32 - base } else { 0 };
            let at = data_at + 4 * (words + before);
            // SAFETY: the coder runs on every lane, converged, with the same arguments (`LaneOut::from_raw`'s contract for `out`); `width`, `at` and `active` are uniform per group, whose
            // words (at `before`, their widths summed) are disjoint.
            unsafe { put_bit_planes(w, v, width, max_width, active, out, at) }?;
            words += total;
            c += W::WIDTH as usize;
        }
        Ok(Coded {
            len: data_at + 4 * words,
            params: 0,
            params2: 0,
        })
    }

    fn decode<W: Warp>(
        w: W,
        n: usize,
        symbol_bits: u32,
        params: u16,
        params2: u32,
        coded: &[u8],
        mut put: impl FnMut(usize, u8),
    ) -> Result<(), FrameError> {
        if params != 0 || params2 != 0 {
            return Err(corrupt(0, "parameters are not zero"));
        }
        let blocks = n.div_ceil(SUB);
        let data_at = headers_bytes(blocks);
        if coded.len() < data_at {
            return Err(corrupt(0, "sub-block headers truncated"));
        }
        if coded[2 * blocks..data_at].iter().any(|b| *b != 0) {
            return Err(corrupt(2 * blocks, "nonzero header padding"));
        }
        let lane = w.lane_id() as usize;
        let step = W::WIDTH as usize;
        let header = |b: usize| -> (u32, u32) {
            let at = 2 * b;
            match coded.get(at..at + 2) {
                Some(h) => (h[0] as u32, h[1] as u32),
                None => (0, 0),
            }
        };
        // Pass 1: every width is valid and the planes fill the section exactly.
        let mut words = 0usize;
        let mut c = 0;
        while c < blocks {
            let b = c + lane;
            let (base, width) = if b < blocks { header(b) } else { (0, 0) };
            let bad = w.ballot(W::FULL, width > symbol_bits.min(8) || base >> symbol_bits.min(8) != 0);
            // every lane: the lanes whose sub-block header is invalid
            if bad != 0 {
                return Err(corrupt(2 * (c + bad.trailing_zeros() as usize), "bad sub-block header"));
            }
            words += warp_sum_u32(w, width) as usize;
            c += step;
        }
        if coded.len() != data_at + 4 * words {
            return Err(corrupt(data_at, "planes do not fill the section"));
        }
        // Pass 2: lane l holds the header and the plane offset of sub-block c + l; then the
        // warp decodes those sub-blocks, WIDTH / 32 at a time (one per 32-lane group).
        let groups = step / SUB;
        let group = lane / SUB;
        let bit = (lane % SUB) as u32;
        let mask = (1u32 << symbol_bits.min(8)) - 1;
        let mut words = 0usize;
        let mut c = 0;
        while c < blocks {
            let b = c + lane;
            let (base, width) = if b < blocks { header(b) } else { (0, 0) };
            let (before, total) = warp_exclusive_scan(w, width);
            // lane l: sub-block c + l starts at plane word words + before
            let packed = base | width << 8;
            let start = (words + before as usize) as u32;
            let mut q = 0;
            while q < step && c + q < blocks {
                let src = (q + group) as u32;
                let bw = w.shfl_idx_u32(W::FULL, packed, src);
                let at = w.shfl_idx_u32(W::FULL, start, src) as usize;
                // lane l: the header and start of sub-block c + q + group, which it decodes
                let block = c + q + group;
                let i = block * SUB + bit as usize;
                let in_block = block < blocks;
                let valid = in_block && i < n;
                let (base, width) = (bw & 0xFF, bw >> 8);
                // Inside `coded`: pass 1 checked the planes fill it exactly.
                let v = match in_block {
                    true => get_bit_planes(coded, data_at + 4 * at, width, bit).unwrap_or(0),
                    false => 0,
                };
                if valid && base + v <= mask {
                    put(i, (base + v) as u8);
                }
                let fault = canonical_fault(w, v, valid, in_block, base, width, mask);
                let bad = w.ballot(W::FULL, fault != 0);
                // every lane: the lanes whose sub-block (or plane bit) the encoder would not write
                if bad != 0 {
                    let first = bad.trailing_zeros();
                    let fault = w.shfl_idx_u32(W::FULL, fault, first);
                    let block = c + q + first as usize / SUB;
                    let at = w.shfl_idx_u32(W::FULL, at as u32, first) as usize;
                    return Err(match fault {
                        PAST_END => corrupt(data_at + 4 * at, "nonzero plane bits past the last symbol"),
                        TOO_WIDE => corrupt(data_at + 4 * at, "a symbol wider than symbol_bits"),
                        NOT_MIN => corrupt(2 * block, "sub-block base is not its minimum"),
                        _ => corrupt(2 * block + 1, "sub-block width is not the bits of its range"),
                    });
                }
                q += groups;
            }
            words += total as usize;
            c += step;
        }
        Ok(())
    }
}
