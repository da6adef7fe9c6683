//! The kernels on the CPU simulator: the same generic functions the GPU entry points are built
//! from, instantiated with `SimWarp<W>` and launched with `zipcoll_targets::sim::launch::<W>`.
//!
//! | kernel            | geometry (n elements, `W` lanes per warp)             |
//! |-------------------|--------------------------------------------------------|
//! | `reduce_copy`     | blocks of `4 * W` threads, at most 8 blocks, grid-stride |
//! | `warp_all_reduce` | the same; every warp walks its groups of `W` elements  |
//!
//! A panic inside a simulated kernel (a broken warp rule) and every simulator error come back as
//! [`Error::Sim`]. Arguments are checked by the caller ([`crate::ops`]).

use crate::dispatch::{words_from_le, words_to_le};
use crate::error::{Error, Result};
use std::panic::{catch_unwind, AssertUnwindSafe};
use zipcoll_device::dtype::Elem;
use zipcoll_device::reduce::RedOp;
use zipcoll_primitives::kernels;
use zipcoll_targets::sim::{launch, LaunchConfig, SimWarp};

/// Most blocks a simulated launch uses (the grid-stride loops cover the rest).
const MAX_BLOCKS: u32 = 8;

/// A raw pointer that simulated threads share.
///
/// The kernels only use it for element accesses that no two threads make to the same index
/// (each index belongs to one thread of the grid-stride loop), so sharing it races on nothing.
struct SharedPtr<T>(*mut T);

// SAFETY: see the type's docs: accesses through the pointer by different threads are to
// disjoint elements, and the pointee outlives the launch (`launch` joins every thread).
unsafe impl<T> Sync for SharedPtr<T> {}

impl<T> SharedPtr<T> {
    /// The pointer (a method, so closures capture the whole `Sync` wrapper).
    fn get(&self) -> *mut T {
        self.0
    }
}

/// The geometry for `n` elements on warps of `W` lanes.
fn config<const W: u32>(n: usize) -> LaunchConfig {
    let block = 4 * W;
    let blocks = n.div_ceil(block as usize).clamp(1, MAX_BLOCKS as usize) as u32;
    LaunchConfig::new(blocks, block)
}

/// Runs `kernel` on the simulator, turning its errors and panics into [`Error::Sim`].
fn run<const W: u32>(cfg: LaunchConfig, kernel: impl Fn(SimWarp<W>) + Sync) -> Result<()> {
    match catch_unwind(AssertUnwindSafe(|| launch::<W>(cfg, kernel))) {
        Ok(r) => r.map_err(|e| Error::Sim(e.to_string())),
        Err(panic) => {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_else(|| "a simulated thread panicked".to_owned());
            Err(Error::Sim(msg))
        }
    }
}

/// `reduce_copy` of two equal-length element buffers with warps of `W` lanes.
pub(crate) fn reduce_copy<const W: u32, T: Elem, O: RedOp>(src0: &[u8], src1: &[u8], nranks: u32) -> Result<Vec<u8>> {
    let a: Vec<T::Bits> = words_from_le(src0);
    let b: Vec<T::Bits> = words_from_le(src1);
    let n = a.len().min(b.len());
    let mut out = vec![T::Bits::default(); n];
    let (pa, pb, pd) = (
        SharedPtr(a.as_ptr().cast_mut()),
        SharedPtr(b.as_ptr().cast_mut()),
        SharedPtr(out.as_mut_ptr()),
    );
    run::<W>(config::<W>(n), |w| {
        // SAFETY: `a` and `b` hold at least `n` elements and `out` exactly `n`; all three live
        // until `run` returns; `out` does not overlap the sources; the kernel reads and
        // writes index `i` from one thread only.
        unsafe { kernels::reduce_copy::<SimWarp<W>, T, O>(w, pa.get(), pb.get(), pd.get(), n, nranks) }
    })?;
    Ok(words_to_le(&out))
}

/// `warp_all_reduce` of an element buffer whose length is a multiple of `W`, with warps of `W`
/// lanes.
pub(crate) fn warp_all_reduce<const W: u32, T: Elem, O: RedOp>(src: &[u8], nranks: u32) -> Result<Vec<u8>> {
    let s: Vec<T::Bits> = words_from_le(src);
    let n = s.len();
    let mut out = vec![T::Bits::default(); n];
    let (ps, pd) = (SharedPtr(s.as_ptr().cast_mut()), SharedPtr(out.as_mut_ptr()));
    run::<W>(config::<W>(n), |w| {
        // SAFETY: `s` and `out` hold `n` elements, live until `run` returns and do not overlap;
        // the block size is a multiple of `W` (whole warps); lane `l` of the warp that owns
        // group `g` is the only thread touching index `g * W + l`.
        unsafe { kernels::warp_all_reduce::<SimWarp<W>, T, O>(w, ps.get(), pd.get(), n, nranks) }
    })?;
    Ok(words_to_le(&out))
}
