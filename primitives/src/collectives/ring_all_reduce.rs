//! Ring all_reduce: a reduce-scatter phase then an all-gather phase around a ring in which rank
//! `r` sends to `r + 1` and receives from `r - 1` (mod `k = nranks`), in NCCL's order.
//!
//! The buffer is cut into loops of `k` chunks ([`RingChunks`]): a full loop has chunks of
//! `frame_elems` elements; the last loop's chunks are `ceil(rest / k)` elements (some may be
//! empty; an empty chunk still travels as a header-only frame, so every rank runs the same
//! schedule). Per loop, rank `r` runs on chunk `c`:
//!
//! | step            | chunk `c`         | primitive                  | rank `r` now holds of chunk `c`         |
//! |-----------------|-------------------|----------------------------|-----------------------------------------|
//! | 0               | `r - 1`           | `send`                     | -, sent `pre(x_r)`                      |
//! | `j = 2..k`      | `r - j`           | `recv_reduce_send`         | -, sent the partial of `j` ranks        |
//! | `k`             | `r`               | `recv_reduce_copy_send`    | the full reduction, in `dst` and sent   |
//! | `k+1 ..= 2k-2`  | `r - (j - k)`     | `recv_copy_send`           | the full reduction, in `dst` and sent   |
//! | `2k - 1`        | `r + 1`           | `recv`                     | the full reduction, in `dst`            |
//!
//! Reduction order, the part of the result that is not associative: chunk `c` starts at rank
//! `c + 1` and is combined on its way around the ring, so every element `i` of it is
//!
//! `acc = pre(x[c+1][i]); for j in 2..=k { acc = combine(acc, pre(x[c+j][i])) }` (ranks mod `k`)
//!
//! which [`ring_all_reduce_reference`] evaluates. Every rank ends with the same bits, and with a
//! lossless codec they are the bits of compression off. `nranks == 1` is a local `dst = pre(src)`.
//!
//! Loop `l` runs on the warp with `part == l % nparts` (over that part's channel). In place
//! (`src == dst`) works: every step reads `src` of a chunk before or as it writes `dst` of it,
//! and `dst` of a chunk is written only once its `src` is no longer needed.

use super::post_divide;
use super::work::Job;
use crate::conn::Failure;
use crate::prims::{Compression, Prims};
use zipcoll_device::dtype::Split;
use zipcoll_device::reduce::RedOp;
use zipcoll_device::team::Team;

/// How ring all_reduce cuts `n` elements into loops and chunks (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingChunks {
    /// Elements in the buffer.
    pub n: usize,
    /// Ranks in the ring (at least 1).
    pub nranks: usize,
    /// The largest chunk, one frame (at least 1).
    pub frame_elems: usize,
}

impl RingChunks {
    /// Elements covered by one full loop.
    pub fn loop_elems(&self) -> usize {
        self.nranks * self.frame_elems
    }
    /// The start of every loop: `0, loop_elems, ..` below `n`.
    pub fn loops(&self) -> impl Iterator<Item = usize> {
        (0..self.n).step_by(self.loop_elems().max(1))
    }
    /// Chunk `c` (`< nranks`) of the loop that starts at `base`: its first element and length.
    pub fn chunk(&self, base: usize, c: usize) -> (usize, usize) {
        let rest = self.n - base;
        let chunk = self.frame_elems.min(rest.div_ceil(self.nranks));
        let start = (c * chunk).min(rest);
        (base + start, chunk.min(rest - start))
    }
}

/// The schedule of the module table over this warp's loops, stopping at the first failure.
///
/// # Safety
/// `job` is validated ([`super::work::validate`]) and [`super::run_work`]'s contract holds.
#[inline(never)]
pub(crate) unsafe fn schedule<M: Team, T: Split, O: RedOp, E: Compression>(
    team: M,
    job: &Job<T>,
) -> Result<(), Failure> {
    let (k, rank, src, dst) = (job.nranks, job.rank, job.src, job.dst);
    let op = O::scaled(job.scalar);
    // SAFETY: forwarded to the caller.
    let mut p = unsafe { Prims::<M, T, O, E>::new(team, job.ring(), op, job.frame_elems)? };
    let chunks = RingChunks {
        n: job.count,
        nranks: k,
        frame_elems: job.frame_elems,
    };
    let at = |base, c| chunks.chunk(base, c % k);
    for (_, base) in chunks.loops().enumerate().filter(|(l, _)| job.mine(*l)) {
        // SAFETY (every step): `chunk` gives `start + len <= count` and `len <= frame_elems`.
        unsafe {
            let (whole, loop_len) = (base, job.count.min(base + chunks.loop_elems()) - base);
            if k == 1 {
                p.copy(src.add(whole), dst.add(whole), loop_len)?;
                post_divide::<M, T, O>(team, job.scalar, dst.add(whole), loop_len);
                continue;
            }
            // reduce-scatter: the partial of chunk c grows by one rank per hop
            let (s, len) = at(base, rank + k - 1);
            p.send(src.add(s), len)?;
            for j in 2..k {
                let (s, len) = at(base, rank + k - j);
                p.recv_reduce_send(src.add(s), len)?;
            }
            // chunk `rank` is complete here
            let (s, len) = at(base, rank);
            p.recv_reduce_copy_send(src.add(s), dst.add(s), len)?;
            // all-gather: complete chunks travel on
            for j in 1..k - 1 {
                let (s, len) = at(base, rank + k - j);
                p.recv_copy_send(dst.add(s), len)?;
            }
            let (s, len) = at(base, rank + 1);
            p.recv(dst.add(s), len)?;
            // the loop's result is all in `dst`
            post_divide::<M, T, O>(team, job.scalar, dst.add(whole), loop_len);
        }
    }
    Ok(())
}

/// The result of ring all_reduce over `inputs` (one slice of `n` elements per rank) into `out`,
/// computed one element at a time in the schedule's order (see the module docs), with operator
/// `op` (for an average, `O::new::<T>(inputs.len())`).
///
/// `inputs` is not empty, every input and `out` have the same length, `frame_elems >= 1`.
pub fn ring_all_reduce_reference<T: Split, O: RedOp>(
    op: O,
    inputs: &[&[T::Bits]],
    out: &mut [T::Bits],
    frame_elems: usize,
) {
    let k = inputs.len();
    let chunks = RingChunks {
        n: out.len(),
        nranks: k,
        frame_elems,
    };
    for base in chunks.loops() {
        for c in 0..k {
            let (start, len) = chunks.chunk(base, c);
            for (i, o) in out.iter_mut().enumerate().skip(start).take(len) {
                let mut acc = op.pre::<T>(inputs[(c + 1) % k][i]);
                for j in 2..=k {
                    acc = op.combine::<T>(acc, op.pre::<T>(inputs[(c + j) % k][i]));
                }
                *o = acc;
            }
        }
    }
}
