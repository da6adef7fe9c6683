//! The collectives as GPU kernels: one block of one warp per plan warp; block `b` runs the work
//! descriptors `works[starts[b] .. starts[b + 1]]` with [`run_works`] (each rank launches its
//! own kernel; the ranks' warps meet through their FIFOs).
//!
//! | kernel         | frames it sends                                                     | instances  |
//! |----------------|---------------------------------------------------------------------|------------|
//! | [`collective`] | coded with each channel's codec (`ChannelDesc::codec`: RAW is compression off) | dtype x op |
//!
//! The codec is a run-time choice (`ByChannel`), not a kernel per codec: every schedule of
//! every collective is in each kernel, and the data-movement schedules and the frame coders are
//! out of line and shared, so the module stays small enough to load. Received frames are
//! decoded whatever their codec, so ranks that send with different codecs interoperate. Failures are in each warp's status record (the work descriptor's
//! `status`), not in the launch's result.

use crate::collectives::{run_works, WorkDesc};
use crate::prims::ByChannel;
use zipcoll_codegen::kernel;
use zipcoll_device::dtype::Split;
use zipcoll_device::reduce::RedOp;
use zipcoll_targets::Warp;

/// Runs the launch's works: blocks of one warp, block `b` the works `starts[b] .. starts[b + 1]`;
/// each channel's frames are coded with the codec its descriptor names (`ChannelDesc::codec`,
/// RAW where coding does not shrink a frame).
///
/// # Safety
/// Blocks have exactly one warp; `starts` holds `grid_dim + 1` ascending indices into `works`,
/// an array of 8-aligned [`WorkDesc`]s, each satisfying [`run_works`]'s contract.
#[kernel(dtype = [bf16, f16, f32, f8e4m3, f8e5m2], op = [sum, prod, min, max, avg], vendor = [nvptx, amdgpu])]
pub unsafe fn collective<W: Warp, T: Split, O: RedOp>(w: W, works: *const u8, starts: *const u32) {
    let b = w.block_idx() as usize;
    // SAFETY: `starts` holds `grid_dim + 1` ascending indices into `works` (the caller's
    // contract), and `works` holds that many aligned `WorkDesc`s.
    let mine = unsafe {
        let (lo, hi) = (starts.add(b).read() as usize, starts.add(b + 1).read() as usize);
        core::slice::from_raw_parts(works.cast::<WorkDesc>().add(lo), hi.saturating_sub(lo))
    };
    // SAFETY: forwarded to the caller; a failure is in the warp's status record.
    let _ = unsafe { run_works::<W, T, O, ByChannel>(w, mine) };
}
