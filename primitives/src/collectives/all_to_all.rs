//! All-to-all over direct peer channels: block `s` of rank `r`'s `src` ends as block `r` of rank
//! `s`'s `dst` (blocks of `count` elements, `k = nranks` of them in each buffer). Channel `d`
//! (`1..k`) of rank `r` sends to `r + d` and receives from `r - d` (mod `k`).
//!
//! Each block is cut into pieces of `frame_elems` elements (the last partial). The loops, in
//! order (loop `l` on the warp with `part == l % nparts`):
//!
//! | loops                    | channel | primitive                                              |
//! |--------------------------|---------|--------------------------------------------------------|
//! | piece `p` (`d = 0`)      | -       | `copy` piece `p` of `src` block `r` to `dst` block `r`    |
//! | `d = 1..k`, piece `p`    | `d`     | `send` piece `p` of `src` block `r + d`; `recv` piece `p` of `dst` block `r - d` |
//!
//! Data only moves ([`crate::prims::NoPre`]); [`all_to_all_reference`] is the transpose.
//! Deadlock-free: each loop puts one frame on one FIFO and every rank sends before it receives,
//! so once every rank has finished the loops before `l` the sends of loop `l` find credit and
//! its receives find their frames. Not in place: `src` and `dst` must not overlap (block `r - d`
//! of `dst` is written before block `r + d'` of `src` with `d' = k - d` is sent).

use super::two_shot::on;
use super::work::Job;
use crate::conn::{ChannelDesc, Failure};
use crate::prims::{Compression, NoPre};
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
    let (k, r, n, fe) = (job.nranks, job.rank, job.count, job.frame_elems);
    let op = NoPre(O::scaled(job.scalar));
    for d in 1..k {
        // SAFETY: forwarded to the caller (every channel checked before any traffic).
        let _checked = unsafe { on::<M, T, _, E>(team, &job.channels[d], op, fe)? };
    }
    let npieces = n.div_ceil(fe);
    // (offset of block `c`, piece `p`): start and length
    let piece = |c: usize, p: usize| ((c % k) * n + p * fe, fe.min(n - p * fe));
    for d in 0..k {
        for p in (0..npieces).filter(|p| job.mine(d * npieces + p)) {
            // SAFETY (every step): pieces lie inside their block of `count` elements and hold at
            // most `frame_elems`; channel `d` is this warp's own.
            unsafe {
                if d == 0 {
                    let (s, len) = piece(r, p);
                    on::<M, T, _, E>(team, &ChannelDesc::NONE, op, fe)?.copy(job.src.add(s), job.dst.add(s), len)?;
                    continue;
                }
                let mut prims = on::<M, T, _, E>(team, &job.channels[d], op, fe)?;
                let (s, len) = piece(r + d, p);
                prims.send(job.src.add(s), len)?;
                let (s, len) = piece(r + k - d, p);
                prims.recv(job.dst.add(s), len)?;
            }
        }
    }
    Ok(())
}

/// Rank `rank`'s all_to_all result: block `s` of `out` is block `rank` of `inputs[s]` (blocks
/// of `out.len() / inputs.len()` elements).
pub fn all_to_all_reference<T: Split>(inputs: &[&[T::Bits]], rank: usize, out: &mut [T::Bits]) {
    let n = out.len() / inputs.len();
    for (s, block) in out.chunks_mut(n.max(1)).enumerate() {
        block.copy_from_slice(&inputs[s][rank * n..(rank + 1) * n]);
    }
}
