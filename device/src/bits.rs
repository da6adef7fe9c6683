//! Warp-cooperative building blocks of the codecs: reductions and scans of one register per
//! lane, stream compaction into a byte buffer, fixed-width bit packing, bit planes, and the
//! frame checksum computed by a whole warp.
//!
//! Every function taking a `w: W` is called by all lanes of a full warp (`W::FULL`) with the
//! same uniform arguments (the per-lane ones are named so); results are documented per lane.
//! Errors are returned on every lane alike, so lanes never diverge on them.
//!
//! | function                 | lane `l` passes          | every lane gets / what is written                                   |
//! |--------------------------|--------------------------|----------------------------------------------------------------------|
//! | [`warp_sum_u32`]         | `v`                      | wrapping sum of all `v`                                              |
//! | [`warp_max_u32`], [`warp_min_u32`] | `v`        | max / min of all `v`                                                 |
//! | [`group_sum_u32`], [`group_max_u32`], [`group_min_u32`] | `v` | the same over its aligned group of `group` lanes        |
//! | [`warp_exclusive_scan`]  | `v`                      | `(sum of v over lanes < l, sum over all lanes)`                      |
//! | [`lanes_below`]          | —                        | the mask of lanes `< l`                                              |
//! | [`append_words`], [`append_u16`], [`append_u8`] | `emit`, `word` | emitting lanes' words, in lane order, at `*cursor`; cursor advanced |
//! | [`pack_fixed`], [`pack_fixed_prefix`] | `value`     | the low `bits` of lane `l` at bit `l * bits` of a little-endian stream |
//! | [`unpack_fixed`], [`unpack_fixed_prefix`] | —       | lane `l`'s value back from that stream                               |
//! | [`put_bit_planes`]       | `value`                  | per 32-lane group: word `b` = bit `b` of the 32 values (a transpose) |
//! | [`warp_checksum`], [`warp_checksum_words`] | —      | [`crate::frame::checksum`] of the bytes                              |
//!
//! Scalar helpers that one lane runs alone: [`packed_bytes`], [`read_bits`], [`get_bit_planes`].
//!
//! The packed layouts do not depend on the warp width: a 64-lane warp packing 64 values writes
//! the same bytes as two 32-lane steps (for a stream, because `32 * bits` bits are a whole
//! number of u32 words; for bit planes, because a plane always covers 32 lanes).

use crate::codec::{get_u32, LaneOut, OutOfSpace};
use crate::frame::checksum_term;
use zipcoll_targets::{LaneMask, Warp};

/// The low `bits` bits set (`bits` in `0..=32`).
#[inline(always)]
pub const fn low_mask(bits: u32) -> u32 {
    if bits >= 32 {
        u32::MAX
    } else {
        (1u32 << bits) - 1
    }
}

/// Bytes of a little-endian stream of `count` values of `bits` bits, padded to whole u32 words.
#[inline(always)]
pub const fn packed_bytes(count: usize, bits: u32) -> usize {
    (count * bits as usize).div_ceil(32) * 4
}

/// Butterfly over the aligned group of `group` lanes (a power of two `<= WIDTH`) with `op`.
#[inline(always)]
fn group_butterfly<W: Warp>(w: W, v: u32, group: u32, op: impl Fn(u32, u32) -> u32) -> u32 {
    let mut acc = v;
    let mut m = 1;
    while m < group && m < W::WIDTH {
        // lane l: `op` over its aligned group of 2m lanes (within the `group`-lane group)
        acc = op(acc, w.shfl_xor_u32(W::FULL, acc, m));
        m <<= 1;
    }
    // lane l: `op` over its aligned group of `group` lanes
    acc
}

/// Wrapping sum of `v` over the aligned group of `group` lanes (a power of two, `<= WIDTH`:
/// lanes `l & !(group - 1) ..` that many), on every lane of the group.
#[inline(always)]
pub fn group_sum_u32<W: Warp>(w: W, v: u32, group: u32) -> u32 {
    group_butterfly(w, v, group, u32::wrapping_add)
}

/// Maximum of `v` over the aligned group of `group` lanes (see [`group_sum_u32`]).
#[inline(always)]
pub fn group_max_u32<W: Warp>(w: W, v: u32, group: u32) -> u32 {
    group_butterfly(w, v, group, u32::max)
}

/// Minimum of `v` over the aligned group of `group` lanes (see [`group_sum_u32`]).
#[inline(always)]
pub fn group_min_u32<W: Warp>(w: W, v: u32, group: u32) -> u32 {
    group_butterfly(w, v, group, u32::min)
}

/// Wrapping sum of `v` over all lanes, on every lane.
#[inline(always)]
pub fn warp_sum_u32<W: Warp>(w: W, v: u32) -> u32 {
    group_sum_u32(w, v, W::WIDTH)
}

/// Maximum of `v` over all lanes, on every lane.
#[inline(always)]
pub fn warp_max_u32<W: Warp>(w: W, v: u32) -> u32 {
    group_max_u32(w, v, W::WIDTH)
}

/// Minimum of `v` over all lanes, on every lane.
#[inline(always)]
pub fn warp_min_u32<W: Warp>(w: W, v: u32) -> u32 {
    group_min_u32(w, v, W::WIDTH)
}

/// The mask of the lanes below this one (`(1 << lane) - 1`).
#[inline(always)]
pub fn lanes_below<W: Warp>(w: W) -> LaneMask {
    (1u64 << w.lane_id()) - 1
}

/// Exclusive prefix sum (wrapping) of `v` in lane order: lane `l` gets
/// `(v_0 + .. + v_{l-1}, v_0 + .. + v_{WIDTH-1})`.
#[inline(always)]
pub fn warp_exclusive_scan<W: Warp>(w: W, v: u32) -> (u32, u32) {
    let lane = w.lane_id();
    let mut incl = v;
    let mut d = 1;
    while d < W::WIDTH {
        // lane l: sum of v over lanes max(0, l - 2d + 1) ..= l (Hillis-Steele)
        let up = w.shfl_up_u32(W::FULL, incl, d);
        if lane >= d {
            incl = incl.wrapping_add(up);
        }
        d <<= 1;
    }
    // lane l: inclusive prefix v_0 + .. + v_l; lane WIDTH-1 holds the total
    let total = w.shfl_idx_u32(W::FULL, incl, W::WIDTH - 1);
    (incl.wrapping_sub(v), total)
}

/// Stream compaction of `size`-byte slots: the emitting lanes write `put(offset)` at
/// consecutive slots from `*cursor`, in lane order; `*cursor` advances on every lane.
#[inline(always)]
fn append_slots<W: Warp>(
    w: W,
    emit: bool,
    size: usize,
    out: LaneOut<'_>,
    cursor: &mut usize,
    put: impl FnOnce(usize) -> Result<(), OutOfSpace>,
) -> Result<(), OutOfSpace> {
    let voters = w.ballot(W::FULL, emit);
    // every lane: the mask of emitting lanes; lane l: its rank = emitting lanes below it
    let count = voters.count_ones() as usize;
    let rank = (voters & lanes_below(w)).count_ones() as usize;
    let start = *cursor;
    match start.checked_add(count * size) {
        Some(end) if end <= out.len() => {}
        // every lane: same `start`, same `count`, so the same error
        _ => return Err(OutOfSpace { offset: start }),
    }
    if emit {
        put(start + rank * size)?;
    }
    // every lane: the cursor past the last slot written
    *cursor = start + count * size;
    Ok(())
}

/// Lanes with `emit` write `word` (little-endian) at consecutive 4-byte slots from byte
/// `*cursor` of `out`, in lane order (ballot + popcount of the lower lanes); `*cursor` advances
/// by 4 x (emitting lanes) on every lane. Any alignment. If the words do not fit, nothing is
/// written, `*cursor` is unchanged and every lane gets `Err`.
///
/// # Safety
/// Every lane of the warp calls it, converged, with the same `out` and `*cursor`, and no
/// other write to `out`'s bytes from `*cursor` on runs concurrently (then the lanes' slots are
/// disjoint).
#[inline(always)]
pub unsafe fn append_words<W: Warp>(
    w: W,
    emit: bool,
    word: u32,
    out: LaneOut<'_>,
    cursor: &mut usize,
) -> Result<(), OutOfSpace> {
    // SAFETY: `append_slots` gives each emitting lane its own slot of 4 bytes at `at`, and the
    // caller excludes other writers.
    append_slots(w, emit, 4, out, cursor, |at| unsafe { out.put_u32(at, word) })
}

/// [`append_words`] with 2-byte slots.
///
/// # Safety
/// Every lane of the warp calls it, converged, with the same `out` and `*cursor`, and no
/// other write to `out`'s bytes from `*cursor` on runs concurrently (then the lanes' slots are
/// disjoint).
#[inline(always)]
pub unsafe fn append_u16<W: Warp>(
    w: W,
    emit: bool,
    word: u16,
    out: LaneOut<'_>,
    cursor: &mut usize,
) -> Result<(), OutOfSpace> {
    // SAFETY: as in `append_words`, with slots of 2 bytes.
    append_slots(w, emit, 2, out, cursor, |at| unsafe { out.put_u16(at, word) })
}

/// [`append_words`] with 1-byte slots.
///
/// # Safety
/// Every lane of the warp calls it, converged, with the same `out` and `*cursor`, and no
/// other write to `out`'s bytes from `*cursor` on runs concurrently (then the lanes' slots are
/// disjoint).
#[inline(always)]
pub unsafe fn append_u8<W: Warp>(
    w: W,
    emit: bool,
    byte: u8,
    out: LaneOut<'_>,
    cursor: &mut usize,
) -> Result<(), OutOfSpace> {
    // SAFETY: as in `append_words`, with slots of 1 byte.
    append_slots(w, emit, 1, out, cursor, |at| unsafe { out.put_u8(at, byte) })
}

/// Packs the low `bits` bits (uniform, `0..=32`) of every lane's `value`: lane `l`'s bits go to
/// bit `l * bits` of a little-endian bit stream of `WIDTH * bits` bits (`bits` or `2 * bits` u32
/// words) written at byte `byte_at` of `out` (any alignment). See [`pack_fixed_prefix`].
///
/// # Safety
/// Every lane of the warp calls it, converged, with the same `out`, `bits`, `byte_at` (and
/// `lanes`), and no other write to the stream's bytes runs concurrently (lane `j` writes
/// word `j` only).
#[inline(always)]
pub unsafe fn pack_fixed<W: Warp>(
    w: W,
    value: u32,
    bits: u32,
    out: LaneOut<'_>,
    byte_at: usize,
) -> Result<(), OutOfSpace> {
    // SAFETY: the caller's promise, with `lanes = WIDTH` on every lane.
    unsafe { pack_fixed_prefix(w, value, bits, W::WIDTH, out, byte_at) }
}

/// [`pack_fixed`] of the first `lanes` lanes only (uniform, clamped to `WIDTH`): the stream is
/// `lanes * bits` bits padded with zeros to whole u32 words ([`packed_bytes`]`(lanes, bits)`
/// bytes); the other lanes' values are ignored. Output word `j` is assembled by lane `j` from
/// the lanes that overlap it (at most `ceil(32 / bits) + 1`), fetched by shuffles; no atomics.
/// If the stream does not fit in `out`, nothing is written and every lane gets `Err`.
///
/// # Safety
/// Every lane of the warp calls it, converged, with the same `out`, `bits`, `byte_at` (and
/// `lanes`), and no other write to the stream's bytes runs concurrently (lane `j` writes
/// word `j` only).
pub unsafe fn pack_fixed_prefix<W: Warp>(
    w: W,
    value: u32,
    bits: u32,
    lanes: u32,
    out: LaneOut<'_>,
    byte_at: usize,
) -> Result<(), OutOfSpace> {
    let bits = bits.min(32);
    let lanes = lanes.min(W::WIDTH);
    let words = (lanes * bits).div_ceil(32);
    match byte_at.checked_add(4 * words as usize) {
        Some(end) if end <= out.len() => {}
        _ => return Err(OutOfSpace { offset: byte_at }),
    }
    if words == 0 {
        return Ok(());
    }
    let lane = w.lane_id();
    let v = if lane < lanes { value & low_mask(bits) } else { 0 };
    // lane l: its value, masked; it will assemble output word l (bits 32l .. 32l + 32) if l < words
    let first = 32 * lane / bits;
    // source lanes overlapping one word: 32 / bits when that divides (aligned), else one more
    // partial lane at each end at most
    let span = if 32 % bits == 0 { 32 / bits } else { 31 / bits + 2 };
    let mut acc = 0u32;
    for i in 0..span {
        let src = first + i;
        let x = w.shfl_idx_u32(W::FULL, v, src.min(W::WIDTH - 1));
        // lane l: x = value of lane `src`, which starts `pos` bits after its word's start
        let pos = (src * bits) as i64 - (32 * lane) as i64;
        if src < lanes && pos < 32 && pos > -(bits as i64) {
            acc |= if pos >= 0 { x << pos } else { x >> -pos };
        }
    }
    // lane l < words: acc = output word l, complete
    if lane < words {
        // SAFETY: lane `lane` writes word `lane` of the stream only; the caller excludes other
        // writers.
        unsafe { out.put_u32(byte_at + 4 * lane as usize, acc) }?;
    }
    Ok(())
}

/// The inverse of [`pack_fixed`]: lane `l` gets bits `l * bits ..` of the stream at `byte_at`
/// of `input`. `None` on every lane if `input` is shorter than the whole stream.
#[inline(always)]
pub fn unpack_fixed<W: Warp>(w: W, bits: u32, input: &[u8], byte_at: usize) -> Option<u32> {
    unpack_fixed_prefix(w, bits, W::WIDTH, input, byte_at)
}

/// The inverse of [`pack_fixed_prefix`]: lane `l < lanes` gets its value, the others 0. `None`
/// on every lane if `input` is shorter than [`packed_bytes`]`(lanes, bits)` from `byte_at`.
/// Each lane reads only its own bits (no warp operation).
#[inline(always)]
pub fn unpack_fixed_prefix<W: Warp>(w: W, bits: u32, lanes: u32, input: &[u8], byte_at: usize) -> Option<u32> {
    let bits = bits.min(32);
    let lanes = lanes.min(W::WIDTH);
    let end = byte_at.checked_add(packed_bytes(lanes as usize, bits))?;
    if end > input.len() {
        return None;
    }
    let lane = w.lane_id();
    if lane >= lanes {
        return Some(0);
    }
    read_bits(input, byte_at * 8 + (lane * bits) as usize, bits)
}

/// `bits` bits (`0..=32`) of the little-endian bit stream `input` from bit `bit_at`, or `None`
/// if they are not all inside `input`. Run by one lane.
#[inline(always)]
pub fn read_bits(input: &[u8], bit_at: usize, bits: u32) -> Option<u32> {
    let bits = bits.min(32);
    if bits == 0 {
        return Some(0);
    }
    let first = bit_at / 8;
    let shift = (bit_at % 8) as u32;
    let nbytes = (shift + bits).div_ceil(8) as usize;
    let bytes = input.get(first..first.checked_add(nbytes)?)?;
    let mut acc = 0u64;
    for (i, b) in bytes.iter().enumerate() {
        acc |= (*b as u64) << (8 * i);
    }
    Some((acc >> shift) as u32 & low_mask(bits))
}

/// Transposes `value` into bit planes per aligned group of 32 lanes: for `b` in `0..planes`,
/// the u32 word at `group_at + 4 * b` gets bit `b` of the group's 32 values (lane `g*32 + i`'s
/// bit in bit `i`). `planes` (`<= 32`), `group_at` and `active` are uniform within each 32-lane
/// group (a group with `active == false` writes nothing); `max_planes` is uniform over the
/// warp and at least every active group's `planes`. One ballot per plane, written by the
/// group's first lane; no atomics. If an active group does not fit, nothing is written and
/// every lane gets `Err`.
///
/// # Safety
/// Every lane of the warp calls it, converged, with the same `out` and `max_planes`, each
/// 32-lane group's `planes`, `group_at` and `active` uniform within it, the active groups'
/// word ranges disjoint, and no other write to them running concurrently.
pub unsafe fn put_bit_planes<W: Warp>(
    w: W,
    value: u32,
    planes: u32,
    max_planes: u32,
    active: bool,
    out: LaneOut<'_>,
    group_at: usize,
) -> Result<(), OutOfSpace> {
    let lane = w.lane_id();
    let leader = active && lane.is_multiple_of(32);
    let fits = group_at
        .checked_add(4 * planes as usize)
        .is_some_and(|end| end <= out.len());
    let bad = w.ballot(W::FULL, leader && !fits);
    // every lane: the leaders of active groups that would overflow
    if bad != 0 {
        return Err(OutOfSpace { offset: group_at });
    }
    let shift = lane & !31;
    for b in 0..max_planes.min(32) {
        let plane = w.ballot(W::FULL, (value >> b) & 1 != 0);
        // every lane: bit b of every lane's value; bits shift.. shift+32 are this group's plane
        if leader && b < planes {
            // SAFETY: only the group's leader writes the group's words, disjoint from the
            // other groups' (the caller).
            unsafe { out.put_u32(group_at + 4 * b as usize, (plane >> shift) as u32) }?;
        }
    }
    Ok(())
}

/// The value of bit `bit` (`0..32`) across the `planes` bit-plane words at `group_at` of
/// `input` (the inverse of [`put_bit_planes`] for one lane), or `None` past `input`'s end.
/// Run by one lane.
#[inline(always)]
pub fn get_bit_planes(input: &[u8], group_at: usize, planes: u32, bit: u32) -> Option<u32> {
    let mut v = 0u32;
    for b in 0..planes.min(32) {
        let word = get_u32(input, group_at.checked_add(4 * b as usize)?)?;
        v |= ((word >> (bit & 31)) & 1) << b;
    }
    Some(v)
}

/// [`crate::frame::checksum`] of `len` bytes whose little-endian u32 word `j` (the last one
/// zero-padded) is `word(j)`, computed by the whole warp: lane `l` sums the terms of words
/// `l, l + WIDTH, ..`, then the warp sums the lanes. Every lane gets the checksum.
#[inline(always)]
pub fn warp_checksum_words<W: Warp>(w: W, len: usize, word: impl Fn(usize) -> u32) -> u32 {
    let words = len.div_ceil(4);
    let mut acc = 0u32;
    let mut j = w.lane_id() as usize;
    while j < words {
        acc = acc.wrapping_add(checksum_term(word(j), j as u32));
        j += W::WIDTH as usize;
    }
    // lane l: the sum of its words' terms
    warp_sum_u32(w, acc).wrapping_add(len as u32)
}

/// [`crate::frame::checksum`] of `bytes`, computed by the whole warp; every lane gets it.
#[inline(always)]
pub fn warp_checksum<W: Warp>(w: W, bytes: &[u8]) -> u32 {
    warp_checksum_words(w, bytes.len(), |j| le_word(bytes, j))
}

/// Little-endian u32 word `j` of `bytes`, zero-padded past the end.
#[inline(always)]
pub fn le_word(bytes: &[u8], j: usize) -> u32 {
    let mut v = 0u32;
    for i in 0..4 {
        if let Some(b) = j.checked_mul(4).and_then(|o| bytes.get(o + i)) {
            v |= (*b as u32) << (8 * i);
        }
    }
    v
}
