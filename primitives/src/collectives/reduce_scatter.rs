//! Ring reduce_scatter: the reduce-scatter phase of ring all_reduce ([`super::ring_all_reduce`])
//! on its own. Rank `r` sends to `r + 1` and receives from `r - 1` (mod `k = nranks`); `src`
//! holds `k` blocks of `count` elements, block `c` of the result goes to rank `c`'s `dst`.
//!
//! Each block is cut into pieces of `frame_elems` elements (the last partial); loop `l` moves
//! piece `l` of every block (the `k` chunks of a loop have the same length, so nothing travels
//! empty). Per loop, rank `r` runs on chunk `c` (piece `l` of block `c`):
//!
//! | step        | chunk `c`  | primitive           | rank `r` now holds of chunk `c`             |
//! |-------------|------------|---------------------|---------------------------------------------|
//! | 0           | `r - 1`    | `send`              | -, sent `pre(x_r)`                          |
//! | `j = 2..k`  | `r - j`    | `recv_reduce_send`  | -, sent the partial of `j` ranks            |
//! | `k`         | `r`        | `recv_reduce_copy`  | the full reduction, in `dst`                |
//!
//! Reduction order, as ring all_reduce's: chunk `c` starts at rank `c + 1` and ends at rank `c`,
//!
//! `acc = pre(x[c+1][i]); for j in 2..=k { acc = combine(acc, pre(x[c+j][i])) }` (ranks mod `k`)
//!
//! which [`reduce_scatter_reference`] evaluates. `nranks == 1`: `dst = pre(src)`. In place
//! (`dst == src + r * count`) works: block `r` of `src` is read only by the last step, which
//! writes it.

use super::post_divide;
use super::work::Job;
use crate::conn::Failure;
use crate::prims::{Compression, Prims};
use zipcoll_device::dtype::Split;
use zipcoll_device::reduce::RedOp;
use zipcoll_device::team::Team;

/// The schedule of the module table over this warp's loops.
///
/// # Safety
/// `job` is validated ([`super::work::validate`]) and [`super::run_work`]'s contract holds.
#[inline(never)]
pub(crate) unsafe fn schedule<M: Team, T: Split, O: RedOp, E: Compression>(
    team: M,
    job: &Job<T>,
) -> Result<(), Failure> {
    let (k, r, n) = (job.nranks, job.rank, job.count);
    // SAFETY: forwarded to the caller.
    let mut p = unsafe { Prims::<M, T, O, E>::new(team, job.ring(), O::scaled(job.scalar), job.frame_elems)? };
    // element `s` of block `c` of `src`
    let src = |c: usize, s: usize| {
        // SAFETY: `c % k < k`, `s < count`: inside `src`'s `k * count` elements.
        unsafe { job.src.add((c % k) * n + s) }
    };
    for (s, len) in job.pieces() {
        // SAFETY (every step): pieces lie in `0..count` and hold at most `frame_elems`.
        unsafe {
            if k == 1 {
                p.copy(src(0, s), job.dst.add(s), len)?;
            } else {
                p.send(src(r + k - 1, s), len)?;
                for j in 2..k {
                    p.recv_reduce_send(src(r + k - j, s), len)?;
                }
                p.recv_reduce_copy(src(r, s), job.dst.add(s), len)?;
            }
            post_divide::<M, T, O>(team, job.scalar, job.dst.add(s), len);
        }
    }
    Ok(())
}

/// Rank `rank`'s reduce_scatter result: `out` (`count` elements) from `inputs` (one slice of
/// `nranks * count` elements per rank), one element at a time in the schedule's order (see the
/// module docs), with operator `op` (for an average, `O::new::<T>(inputs.len())`).
pub fn reduce_scatter_reference<T: Split, O: RedOp>(op: O, inputs: &[&[T::Bits]], rank: usize, out: &mut [T::Bits]) {
    let (k, n) = (inputs.len(), out.len());
    let c = rank;
    for (i, o) in out.iter_mut().enumerate() {
        let x = |j: usize| op.pre::<T>(inputs[(c + j) % k][c * n + i]);
        let mut acc = x(1);
        for j in 2..=k {
            acc = op.combine::<T>(acc, x(j));
        }
        *o = acc;
    }
}
