//! Ring all_gather: every rank's `count` elements end in block `c` (rank `c`'s) of every rank's
//! `dst` (`k * count` elements). Rank `r` sends to `r + 1` and receives from `r - 1` (mod `k`).
//!
//! Each block is cut into pieces of `frame_elems` elements (the last partial); loop `l` moves
//! piece `l` of every block. Per loop, rank `r` runs on chunk `c` (piece `l` of block `c`):
//!
//! | step          | chunk `c`   | primitive         | rank `r` now holds of chunk `c`      |
//! |---------------|-------------|-------------------|--------------------------------------|
//! | 0             | `r`         | `copy_send`       | its own, in `dst` and sent           |
//! | `j = 1..k-1`  | `r - j`     | `recv_copy_send`  | rank `c`'s, in `dst` and sent        |
//! | `k - 1`       | `r + 1`     | `recv`            | rank `c`'s, in `dst`                 |
//!
//! Data only moves (the operator's `pre` is not applied: [`crate::prims::NoPre`]), so every
//! rank's `dst` is the concatenation of the inputs bit for bit ([`all_gather_reference`]). In
//! place (`src == dst + r * count`) works: the first step copies block `r` onto itself.

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
    let (k, r, n) = (job.nranks, job.rank, job.count);
    // SAFETY: forwarded to the caller.
    let mut p =
        unsafe { Prims::<M, T, NoPre<O>, E>::new(team, job.ring(), NoPre::new::<T>(k as u32), job.frame_elems)? };
    // element `s` of block `c` of `dst`
    let dst = |c: usize, s: usize| {
        // SAFETY: `c % k < k`, `s < count`: inside `dst`'s `k * count` elements.
        unsafe { job.dst.add((c % k) * n + s) }
    };
    for (s, len) in job.pieces() {
        // SAFETY (every step): pieces lie in `0..count` and hold at most `frame_elems`.
        unsafe {
            if k == 1 {
                p.copy(job.src.add(s), dst(r, s), len)?;
                continue;
            }
            p.copy_send(job.src.add(s), dst(r, s), len)?;
            for j in 1..k - 1 {
                p.recv_copy_send(dst(r + k - j, s), len)?;
            }
            p.recv(dst(r + 1, s), len)?;
        }
    }
    Ok(())
}

/// The all_gather result: `out` (`nranks * count` elements) from `inputs` (`count` each).
pub fn all_gather_reference<T: Split>(inputs: &[&[T::Bits]], out: &mut [T::Bits]) {
    for (block, input) in out.chunks_mut(inputs[0].len().max(1)).zip(inputs) {
        block.copy_from_slice(input);
    }
}
