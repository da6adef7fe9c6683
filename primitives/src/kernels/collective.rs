//! The collectives as GPU kernels: one block of one warp per plan warp; block `b` runs the work
//! descriptors `works[starts[b] .. starts[b + 1]]` with [`run_works`] (each rank launches its
//! own kernel; the ranks' warps meet through their FIFOs).
//!
//! | kernel                 | frames it sends                         | instances                 |
//! |------------------------|-----------------------------------------|---------------------------|
//! | [`collective`]         | RAW (compression off)                   | dtype x op                |
//! | [`collective_coded`]   | coded with `C`, RAW where not smaller   | dtype x op x codec        |
//!
//! Received frames are decoded whatever their codec, so a coded kernel on one rank and a RAW one
//! on another interoperate. Failures are in each warp's status record (the work descriptor's
//! `status`), not in the launch's result.

use crate::collectives::{run_works, WorkDesc};
use crate::prims::{Compression, Force, Off};
use zipcoll_codegen::kernel;
use zipcoll_device::codec::SymbolCoder;
use zipcoll_device::dtype::Split;
use zipcoll_device::reduce::RedOp;
use zipcoll_targets::Warp;

/// Block `b` (of one warp) runs its works with compression `E`.
///
/// # Safety
/// As [`collective`].
#[inline(always)]
unsafe fn run_block<W: Warp, T: Split, O: RedOp, E: Compression>(w: W, works: *const u8, starts: *const u32) {
    let b = w.block_idx() as usize;
    // SAFETY: `starts` holds `grid_dim + 1` ascending indices into `works` (the caller's
    // contract), and `works` holds that many aligned `WorkDesc`s.
    let mine = unsafe {
        let (lo, hi) = (starts.add(b).read() as usize, starts.add(b + 1).read() as usize);
        core::slice::from_raw_parts(works.cast::<WorkDesc>().add(lo), hi.saturating_sub(lo))
    };
    // SAFETY: forwarded to the caller; a failure is in the warp's status record.
    let _ = unsafe { run_works::<W, T, O, E>(w, mine) };
}

/// Runs the launch's works with RAW frames: blocks of one warp, block `b` the works
/// `starts[b] .. starts[b + 1]`.
///
/// # Safety
/// Blocks have exactly one warp; `starts` holds `grid_dim + 1` ascending indices into `works`,
/// an array of 8-aligned [`WorkDesc`]s, each satisfying [`run_works`]'s contract.
#[kernel(dtype = [bf16, f16, f32, f8e4m3, f8e5m2], op = [sum, prod, min, max, avg], vendor = [nvptx, amdgpu])]
pub unsafe fn collective<W: Warp, T: Split, O: RedOp>(w: W, works: *const u8, starts: *const u32) {
    // SAFETY: forwarded to the caller.
    unsafe { run_block::<W, T, O, Off>(w, works, starts) }
}

/// As [`collective`], every frame coded with `C` (RAW where coding does not shrink it).
///
/// # Safety
/// As [`collective`].
#[kernel(dtype = [bf16, f16, f32, f8e4m3, f8e5m2], op = [sum, prod, min, max, avg], codec = [fixedlen, expwindow, expans, huffman], vendor = [nvptx, amdgpu])]
pub unsafe fn collective_coded<W: Warp, T: Split, O: RedOp, C: SymbolCoder>(
    w: W,
    works: *const u8,
    starts: *const u32,
) {
    // SAFETY: forwarded to the caller.
    unsafe { run_block::<W, T, O, Force<C>>(w, works, starts) }
}
