//! `warp_all_reduce`: every warp-sized group of a buffer reduced across the lanes of one warp,
//! the register-level building block of reductions inside blocks.

use zipcoll_codegen::kernel;
use zipcoll_device::dtype::Elem;
use zipcoll_device::reduce::RedOp;
use zipcoll_device::warp_reduce;
use zipcoll_targets::Warp;

/// For every group `g` of `WIDTH` consecutive elements (`g < n / WIDTH`), writes to each of
/// the group's elements in `dst` the all-reduce of the group's `src` elements, computed by one
/// warp with shuffles (see [`warp_reduce::warp_all_reduce`] for the order). Elements past the
/// last whole group are not touched. Warp-stride over groups: any geometry covers any `n`.
///
/// # Safety
/// `src` is valid for `n` reads and `dst` for `n` writes; they are equal or do not overlap.
/// Launch with `block_dim` a multiple of `WIDTH` (whole warps).
#[kernel(dtype = [bf16, f16, f32, f8e4m3, f8e5m2, i8, u8, i32, u32, i64, u64, f64], op = [sum, prod, min, max, avg], vendor = [nvptx, amdgpu])]
pub unsafe fn warp_all_reduce<W: Warp, T: Elem, O: RedOp>(
    w: W,
    src: *const T::Bits,
    dst: *mut T::Bits,
    n: usize,
    nranks: u32,
) {
    let op = O::new::<T>(nranks);
    let width = W::WIDTH as usize;
    let groups = n / width;
    let warps = w.global_threads() / width;
    let mut g = w.global_idx() / width;
    // `g` is the same on every lane of a warp, so the loop keeps whole warps converged.
    while g < groups {
        let i = g * width + w.lane_id() as usize;
        let r = warp_reduce::warp_all_reduce::<W, T, O>(w, op, src.add(i).read());
        dst.add(i).write(r);
        g += warps;
    }
}
