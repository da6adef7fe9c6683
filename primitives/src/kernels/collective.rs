//! The collectives as GPU kernels: block `b` of a launch runs the work descriptors
//! `works[starts[b] .. starts[b + 1]]` with [`run_works`] (each rank launches its own kernel;
//! the ranks' channels meet through their FIFOs).
//!
//! | kernel               | a channel is driven by | frames it sends                            | frames it decodes | instances  |
//! |----------------------|------------------------|--------------------------------------------|-------------------|------------|
//! | [`collective`]       | a block of one warp    | coded with each channel's codec (`ChannelDesc::codec`: RAW is compression off); RAW for the dtypes without coders ([`Coding`]) | any codec (RAW only for those dtypes) | dtype x op |
//! | [`collective_block`] | a block of up to 16 warps ([`Block`]) | RAW                          | RAW only          | dtype x op, NVIDIA |
//! | [`collective_block_coded`] | a block of up to 16 warps, with shared memory for a block coder | each channel's codec: block frames coded by the whole block where the codec has a block coder (ExpAns), else warp frames coded by its first warp | any codec, either frame format | coded dtype x op, NVIDIA |
//!
//! In [`collective`] the codec is a run-time choice (`ByChannel`), not a kernel per codec: every
//! schedule of every collective is in each kernel, and the data-movement schedules and the frame
//! coders are out of line and shared, so the module stays small enough to load. Received frames
//! are decoded whatever their codec, so ranks that send with different codecs interoperate.
//! [`collective_block`] is for calls that every rank sends RAW (compression off, or Auto
//! deciding RAW from the call's size alone, which every rank does alike): no symbol coder in it,
//! so it stays small enough for blocks of 512 threads, every thread moving vectors of the
//! step; a coded frame is a typed error there (`FrameError::CodecNotBuilt`), never decoded
//! wrong. [`collective_block_coded`] is for the other calls on NVIDIA GPUs: a channel's frames
//! are coded and decoded by its whole block where the codec has a block coder, so a channel
//! codes at a block's rate, not a warp's. Failures are in each channel's status record (the
//! work descriptor's `status`), not in the launch's result.

use crate::collectives::{report_first, run_works, WorkDesc};
use crate::conn::{ConnError, Failure};
use crate::prims::{ByChannel, Coding, Compression, RawOnly};
use zipcoll_codegen::kernel;
use zipcoll_device::dtype::Split;
use zipcoll_device::reduce::RedOp;
use zipcoll_device::team::Block;
use zipcoll_targets::{SharedMem, Warp};

/// The works of block `b`: `works[starts[b] .. starts[b + 1]]`.
///
/// # Safety
/// `starts` holds at least `b + 2` ascending indices into `works`, an array of 8-aligned
/// [`WorkDesc`]s that outlives the result.
#[inline(always)]
unsafe fn block_works<'a>(b: u32, works: *const u8, starts: *const u32) -> &'a [WorkDesc] {
    let b = b as usize;
    // SAFETY: the caller's contract.
    unsafe {
        let (lo, hi) = (starts.add(b).read() as usize, starts.add(b + 1).read() as usize);
        core::slice::from_raw_parts(works.cast::<WorkDesc>().add(lo), hi.saturating_sub(lo))
    }
}

/// Runs the launch's works: blocks of one warp, block `b` the works `starts[b] .. starts[b + 1]`;
/// each channel's frames are coded with the codec its descriptor names (`ChannelDesc::codec`,
/// RAW where coding does not shrink a frame).
///
/// # Safety
/// Blocks have exactly one warp; `starts` holds `grid_dim + 1` ascending indices into `works`,
/// an array of 8-aligned [`WorkDesc`]s, each satisfying [`run_works`]'s contract.
#[kernel(dtype = [bf16, f16, f32, f8e4m3, f8e5m2, i8, u8, i32, u32, i64, u64, f64], op = [sum, prod, min, max, avg], vendor = [nvptx, amdgpu])]
pub unsafe fn collective<W: Warp, T: Split + Coding, O: RedOp>(w: W, works: *const u8, starts: *const u32) {
    // SAFETY: the caller's contract.
    let mine = unsafe { block_works(w.block_idx(), works, starts) };
    // SAFETY: forwarded to the caller; a failure is in the warp's status record.
    let _ = unsafe { run_works::<W, T, O, <T as Coding>::ByChannel>(w, mine) };
}

/// Runs the launch's works with each block as one channel team: block `b` (every thread of it)
/// the works `starts[b] .. starts[b + 1]`, sending RAW frames and taking only RAW frames. A
/// block that cannot form its team (see [`Block::new`]) reports
/// [`ConnError::BadLaunch`] to its first work and runs nothing.
///
/// # Safety
/// As [`collective`], for blocks of any number of threads; the launch's dynamic shared memory
/// is for this kernel alone.
#[kernel(dtype = [bf16, f16, f32, f8e4m3, f8e5m2, i8, u8, i32, u32, i64, u64, f64], op = [sum, prod, min, max, avg], vendor = [nvptx])]
pub unsafe fn collective_block<W: Warp + SharedMem, T: Split, O: RedOp>(w: W, works: *const u8, starts: *const u32) {
    // SAFETY: forwarded to the caller.
    unsafe { run_blocks::<W, T, O, RawOnly>(w, works, starts) }
}

/// Runs the launch's works with each block as one channel team, as [`collective_block`], with
/// each channel's frames coded with the codec its descriptor names (as [`collective`]): by the
/// whole block where the codec has a block coder, in the launch's dynamic shared memory after
/// the team's (`zipcoll_device::codec::block_frame::coder_scratch_bytes`; less makes such
/// frames fail with `ScratchTooSmall`).
///
/// # Safety
/// As [`collective_block`].
#[kernel(dtype = [bf16, f16, f32, f8e4m3, f8e5m2, i8, u8, i32, u32], op = [sum, prod, min, max, avg], vendor = [nvptx])]
pub unsafe fn collective_block_coded<W: Warp + SharedMem, T: Split, O: RedOp>(
    w: W,
    works: *const u8,
    starts: *const u32,
) {
    // SAFETY: forwarded to the caller.
    unsafe { run_blocks::<W, T, O, ByChannel>(w, works, starts) }
}

/// The block-channel kernels' body: block `b` forms its team over the launch's dynamic shared
/// memory and runs its works with compression `E`; a block that cannot form its team reports
/// [`ConnError::BadLaunch`] to its first work (from its first warp) and runs nothing.
///
/// # Safety
/// As [`collective_block`].
#[inline(always)]
unsafe fn run_blocks<W: Warp + SharedMem, T: Split, O: RedOp, E: Compression>(
    w: W,
    works: *const u8,
    starts: *const u32,
) {
    // SAFETY: the caller's contract.
    let mine = unsafe { block_works(w.block_idx(), works, starts) };
    let (base, len) = w.shared_mem();
    // SAFETY: the block's dynamic shared memory, which nothing else in this kernel uses.
    match unsafe { Block::new(w, base, len as usize) } {
        Some(team) => {
            // SAFETY: forwarded to the caller; a failure is in the channel's status record.
            let _ = unsafe { run_works::<Block<W>, T, O, E>(team, mine) };
        }
        None if w.warp_idx() == 0 => {
            let error = ConnError::BadLaunch {
                threads: w.block_dim(),
                shared_bytes: len,
            };
            report_first(w, mine, &Failure { step: 0, error });
        }
        None => {}
    }
}
