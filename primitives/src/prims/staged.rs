//! Frames of FIFOs in host memory (NET's slots are pinned host memory that the kernel reaches
//! over PCIe): the general path codes them in a slot's worth of device memory, the channel's
//! frame stage ([`crate::conn::ChannelDesc::frame_stage`]), and the team moves whole frames
//! between it and the slot with 16-byte vectors, as the RAW fast path moves its payloads. The
//! coders' own accesses (byte stores, scattered and dependent loads) stay in device memory.
//!
//! | side    | frame stage null                | frame stage set                                                         |
//! |---------|---------------------------------|-------------------------------------------------------------------------|
//! | receive | the decoder reads the slot      | [`stage_in`]: the frame ([`frame_len`] of the slot) copied in, the slot freed, then decoded from the stage |
//! | receive, RAW fast path | the pass reads the slot's payload | [`stage_payload`]: the payload copied in, the slot freed, then the pass reads the copy |
//! | send    | the encoder writes the slot     | encoded into the stage, then [`copy_vectors`] of its bytes into the slot, then posted |
//!
//! Freeing the slot first matters most to the RAW fast path: without a stage a step that
//! receives and sends holds its received slot while it waits for a send slot, so the proxy
//! cannot land the next frame meanwhile.
//!
//! Every copy covers whole vectors (a frame's length rounded up to 16 bytes); slots and the
//! stage are 16-aligned and a multiple of 16 long, so that never leaves either.

use super::raw::{unroll, unrolled, Vector, MAX_UNROLL, VECTOR_BYTES};
use zipcoll_device::dtype::Elem;
use zipcoll_device::frame::{frame_len, HEADER_BYTES};
use zipcoll_device::team::Team;

/// Copies the `bytes` at `src` (rounded up to whole vectors) to `dst`, spread over the team:
/// thread `r` of `size` moves vectors `r, r + size, ..`, [`unroll`] loads in flight before it
/// stores any. Returns after a team sync: every thread's stores are done.
///
/// # Safety
/// `src` and `dst` are 16-byte aligned, valid for `bytes.next_multiple_of(16)` reads and writes
/// respectively, and do not overlap; nobody else writes either meanwhile.
#[inline(never)]
pub unsafe fn copy_vectors<M: Team>(team: M, src: *const u8, dst: *mut u8, bytes: usize) {
    let nvec = bytes.div_ceil(VECTOR_BYTES);
    let (from, to) = (src.cast::<Vector>(), dst.cast::<Vector>());
    let (stride, unroll) = (team.size() as usize, unroll::<M>(false));
    let mut v = team.rank() as usize;
    while v < nvec {
        let mut loaded = [Vector::default(); MAX_UNROLL];
        unrolled!(U < unroll => {
            let i = v + U * stride;
            if i < nvec {
                // SAFETY: `i < nvec`: inside both buffers (the caller's contract).
                loaded[U] = unsafe { from.add(i).read() };
            }
        });
        unrolled!(U < unroll => {
            let i = v + U * stride;
            if i < nvec {
                // SAFETY: as above; vector `i` is this thread's alone.
                unsafe { to.add(i).write(loaded[U]) };
            }
        });
        v += unroll * stride;
    }
    // every thread: the whole copy is done
    team.barrier();
}

/// Copies the frame at the start of `slot` (its [`frame_len`], worked out by the leader) into
/// the frame stage `stage` and returns the copy, on every thread. The slot may be freed once
/// this returns.
///
/// # Safety
/// `stage` is 16-byte aligned, valid for writes of `slot.len()` bytes for `'a`, and written by
/// nobody else meanwhile; `slot` is 16-byte aligned and a multiple of 16 bytes long.
#[inline(always)]
pub unsafe fn stage_in<'a, M: Team>(team: M, slot: &[u8], stage: *mut u8) -> &'a [u8] {
    // the leader reads the header (32 bytes over PCIe) and shares the length
    let mine = if team.rank() == 0 { frame_len(slot) as u32 } else { 0 };
    let len = (team.leader_value(mine) as usize).min(slot.len());
    // SAFETY: `len.next_multiple_of(16) <= slot.len()` (a multiple of 16), which the stage
    // holds (the caller's contract).
    unsafe {
        copy_vectors(team, slot.as_ptr(), stage, len);
        core::slice::from_raw_parts(stage, len)
    }
}

/// Copies the `n`-element RAW payload at `payload` (inside a slot, [`HEADER_BYTES`] into it)
/// to the same place in the frame stage `stage` and returns the copy, on every thread, after a
/// team sync. The slot may be freed once this returns.
///
/// # Safety
/// `payload` is 16-byte aligned, [`HEADER_BYTES`] into a slot that is a multiple of 16 bytes
/// long and holds the `n` elements; `stage` is 16-byte aligned, holds a slot and is written by
/// nobody else meanwhile.
#[inline(always)]
pub unsafe fn stage_payload<M: Team, T: Elem>(
    team: M,
    payload: *const T::Bits,
    stage: *mut u8,
    n: usize,
) -> *const T::Bits {
    // SAFETY: the payload's bytes rounded up to 16 end inside the slot (a multiple of 16 long,
    // the payload 16-aligned in it), so inside the stage at the same offset too.
    unsafe {
        let copy = stage.add(HEADER_BYTES);
        copy_vectors(team, payload.cast(), copy, n * T::DTYPE.size_bytes());
        copy.cast_const().cast()
    }
}
