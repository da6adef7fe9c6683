//! Reduce to a root, as a chain along the ring: rank `root + 1` starts, every rank adds its
//! contribution and passes the partial on to `rank + 1`, and the root ends the chain and
//! writes the result to its `dst`. Only the root's `dst` is written.
//!
//! The buffer is cut into pieces of `frame_elems` elements (the last partial), one per loop; the
//! chain pipelines them (a rank works on piece `l` while the next one works on `l - 1`). Per
//! piece, with `j = rank - root` (mod `k`):
//!
//! | rank                  | primitive            | sends / writes                           |
//! |-----------------------|----------------------|------------------------------------------|
//! | `root + 1` (`j = 1`)  | `send`               | `pre(x_{root+1})`                         |
//! | `j = 2..k`            | `recv_reduce_send`   | the partial of `j` ranks                 |
//! | `root` (`j = k`)      | `recv_reduce_copy`   | the full reduction, to `dst`              |
//!
//! Reduction order, as chunk `root` of ring all_reduce:
//!
//! `acc = pre(x[root+1][i]); for j in 2..=k { acc = combine(acc, pre(x[root+j][i])) }`
//!
//! which [`reduce_reference`] evaluates. `nranks == 1`: `dst = pre(src)`. In place (the
//! root's `src == dst`) works. The chain's start needs no receive FIFO and the root no send FIFO.

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
    let k = job.nranks;
    // SAFETY: forwarded to the caller.
    let mut p = unsafe { Prims::<M, T, O, E>::new(team, job.ring(), O::scaled(job.scalar), job.frame_elems)? };
    // this rank's place in the chain: 1 (start) ..= k (the root)
    let j = (job.rank + k - job.peer) % k;
    let j = if j == 0 { k } else { j };
    for (s, len) in job.pieces() {
        // SAFETY (every step): pieces lie in `0..count` and hold at most `frame_elems`; `dst` is
        // written only on the root.
        unsafe {
            let src = job.src.add(s);
            if k == 1 {
                p.copy(src, job.dst.add(s), len)?;
            } else if j == 1 {
                p.send(src, len)?;
            } else if j < k {
                p.recv_reduce_send(src, len)?;
            } else {
                p.recv_reduce_copy(src, job.dst.add(s), len)?;
            }
            if j == k {
                post_divide::<M, T, O>(team, job.scalar, job.dst.add(s), len);
            }
        }
    }
    Ok(())
}

/// The reduce result at `root`: `out` from `inputs` (one slice per rank, `out.len()` each), one
/// element at a time in the chain's order (see the module docs), with operator `op` (for an
/// average, `O::new::<T>(inputs.len())`).
pub fn reduce_reference<T: Split, O: RedOp>(op: O, inputs: &[&[T::Bits]], root: usize, out: &mut [T::Bits]) {
    let k = inputs.len();
    for (i, o) in out.iter_mut().enumerate() {
        let x = |j: usize| op.pre::<T>(inputs[(root + j) % k][i]);
        let mut acc = x(1);
        for j in 2..=k {
            acc = op.combine::<T>(acc, x(j));
        }
        *o = acc;
    }
}
