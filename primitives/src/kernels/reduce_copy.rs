//! `reduce_copy`: the elementwise reduction of two buffers into a third, the data-path core of
//! every reducing collective.

use zipcoll_codegen::kernel;
use zipcoll_device::dtype::Elem;
use zipcoll_device::reduce::RedOp;
use zipcoll_targets::Warp;

/// `dst[i] = combine(pre(src0[i]), pre(src1[i]))` for `i < n`, with the operator built for
/// `nranks` contributions (Avg scales each by `1 / nranks`). Grid-stride: any geometry covers
/// any `n`.
///
/// # Safety
/// `src0` and `src1` are valid for `n` reads and `dst` for `n` writes; `dst` may equal a
/// source (in place) but must not otherwise overlap them.
#[kernel(dtype = [bf16, f16, f32, f8e4m3, f8e5m2, i8, u8, i32, u32, i64, u64, f64], op = [sum, prod, min, max, avg], vendor = [nvptx, amdgpu])]
pub unsafe fn reduce_copy<W: Warp, T: Elem, O: RedOp>(
    w: W,
    src0: *const T::Bits,
    src1: *const T::Bits,
    dst: *mut T::Bits,
    n: usize,
    nranks: u32,
) {
    let op = O::new::<T>(nranks);
    let stride = w.global_threads();
    let mut i = w.global_idx();
    while i < n {
        let a = op.pre::<T>(src0.add(i).read());
        let b = op.pre::<T>(src1.add(i).read());
        dst.add(i).write(op.combine::<T>(a, b));
        i += stride;
    }
}
