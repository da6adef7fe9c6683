//! Broadcast from a root, as a chain along the ring: the root copies its `src` to its `dst` and
//! sends it to `root + 1`, every rank passes it on to `rank + 1`, and `root - 1` ends the chain.
//!
//! The buffer is cut into pieces of `frame_elems` elements (the last partial), one per loop,
//! pipelined along the chain. Per piece, with `j = rank - root` (mod `k`):
//!
//! | rank                     | primitive          | rank holds                      |
//! |--------------------------|--------------------|---------------------------------|
//! | `root` (`j = 0`)         | `copy_send`        | `src` in `dst`, sent            |
//! | `j = 1..k-1`             | `recv_copy_send`   | the root's piece in `dst`, sent |
//! | `root - 1` (`j = k - 1`) | `recv`             | the root's piece in `dst`       |
//!
//! Data only moves ([`crate::prims::NoPre`]): every `dst` is the root's `src` bit for bit.
//! `nranks == 1`: a copy. In place (the root's `src == dst`) works. The root needs no receive
//! FIFO and `root - 1` no send FIFO.

use super::work::Job;
use crate::conn::Failure;
use crate::prims::{Compression, NoPre, Prims};
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
    let mut p =
        unsafe { Prims::<M, T, NoPre<O>, E>::new(team, job.ring(), NoPre::new::<T>(k as u32), job.frame_elems)? };
    let j = (job.rank + k - job.peer) % k;
    for (s, len) in job.pieces() {
        // SAFETY (every step): pieces lie in `0..count` and hold at most `frame_elems`; `src` is
        // read only on the root.
        unsafe {
            let dst = job.dst.add(s);
            if k == 1 {
                p.copy(job.src.add(s), dst, len)?;
            } else if j == 0 {
                p.copy_send(job.src.add(s), dst, len)?;
            } else if j < k - 1 {
                p.recv_copy_send(dst, len)?;
            } else {
                p.recv(dst, len)?;
            }
        }
    }
    Ok(())
}
