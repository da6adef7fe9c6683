//! Two-shot all_reduce over direct peer channels: a reduce-scatter where every rank sends each
//! of its pieces straight to the piece's owner, then an all-gather where every owner sends its
//! reduced shard straight to every peer. Channel `d` (`1..k`) of rank `r` sends to `r + d` and
//! receives from `r - d` (mod `k = nranks`).
//!
//! The buffer is cut into loops of `k` shards exactly as ring all_reduce cuts it into chunks
//! ([`super::RingChunks`]); shard `s` of each loop belongs to rank `s` (empty shards of the last
//! loop travel as header-only frames, so every rank runs the same steps). Per loop, rank `r`:
//!
//! | phase | step         | channel | primitive (operator)                    | rank `r` holds of shard `r`       |
//! |-------|--------------|---------|-----------------------------------------|-----------------------------------|
//! | 1     | `d = 1..k`   | `d`     | `send` shard `r + d` (`O`: `pre`)        | -                                 |
//! | 1     | accumulate 1 | 1       | `recv_reduce_copy` shard `r` (`O`)       | `combine(recv, pre(x_r))` in `dst` |
//! | 1     | `d = 2..k`   | `d`     | `recv_reduce_copy` `dst` onto itself (`NoPre<O>`) | `combine(recv, acc)` in `dst` |
//! | 2     | `d = 1..k`   | `d`     | `send` shard `r` from `dst` (`NoPre<O>`) | the full reduction                |
//! | 2     | `d = 1..k`   | `d`     | `recv` shard `r - d` into `dst`          | + every other shard               |
//!
//! Unlike the ring, each input byte is encoded once in phase 1 (it goes straight to its owner
//! instead of being re-encoded as a partial at every hop); phase 2 encodes the reduced shard
//! once per peer (`k - 1` times).
//!
//! Reduction order: rank `s` accumulates shard `s` from its own contribution outwards,
//!
//! `acc = pre(x[s][i]); for d in 1..k { acc = combine(pre(x[s-d][i]), acc) }` (ranks mod `k`)
//!
//! which [`two_shot_all_reduce_reference`] evaluates (the first accumulation is one
//! `recv_reduce_copy` computing `combine(received, pre(x_s))`, the same value). It differs from
//! ring all_reduce's order, so the two algorithms' results may differ in the last bits.
//!
//! Deadlock freedom with [`crate::conn::NSLOTS`] = 8 slots: every FIFO carries exactly two
//! frames per loop (one per phase), and within each phase a rank posts all its sends before its
//! first receive. By induction over loops: once every rank has finished loop `L - 1`, every FIFO
//! has been drained of the frames of loops `< L`, so the (at most 2 <= 8) sends of loop `L`
//! find credit without waiting; all phase-1 sends of loop `L` therefore complete, so every
//! phase-1 receive finds its frame; then every phase-2 send finds credit, and every phase-2
//! receive its frame. No rank waits for a send that comes after one of its own waits: no cycle
//! of waits exists. Parts use their own FIFOs and never wait on each other.
//!
//! `nranks == 1`: `dst = pre(src)`. In place (`src == dst`) works: phase 1 reads the other
//! shards of `src` before phase 2 overwrites them in `dst`, and the accumulation reads `src` of
//! shard `r` as it writes it.

use super::post_divide;
use super::ring_all_reduce::RingChunks;
use super::work::Job;
use crate::conn::{ChannelDesc, Failure};
use crate::prims::{Compression, NoPre, Prims};
use zipcoll_device::dtype::Split;
use zipcoll_device::reduce::RedOp;
use zipcoll_device::team::Team;

/// The primitives of `ch` with operator `op` (created per step: creating them again continues
/// the channel's step counters).
///
/// # Safety
/// As [`Prims::new`].
pub(crate) unsafe fn on<M: Team, T: Split, X: RedOp, E: Compression>(
    team: M,
    ch: &ChannelDesc,
    op: X,
    frame_elems: usize,
) -> Result<Prims<M, T, X, E>, Failure> {
    // SAFETY: forwarded to the caller.
    unsafe { Prims::new(team, ch, op, frame_elems) }
}

/// The schedule of the module table over this warp's loops.
///
/// # Safety
/// `job` is validated ([`super::work::validate`]) and [`super::run_work`]'s contract holds.
#[inline(never)]
pub(crate) unsafe fn schedule<M: Team, T: Split, O: RedOp, E: Compression>(
    team: M,
    job: &Job<T>,
) -> Result<(), Failure> {
    let (k, r, fe, src, dst) = (job.nranks, job.rank, job.frame_elems, job.src, job.dst);
    let op = O::scaled(job.scalar);
    let no_pre = NoPre(op);
    // every channel's configuration, checked before any traffic
    for d in 1..k {
        // SAFETY: forwarded to the caller.
        let _checked = unsafe { on::<M, T, O, E>(team, &job.channels[d], op, fe)? };
    }
    let chunks = RingChunks {
        n: job.count,
        nranks: k,
        frame_elems: fe,
    };
    let at = |base, c: usize| chunks.chunk(base, c % k);
    for (_, base) in chunks.loops().enumerate().filter(|(l, _)| job.mine(*l)) {
        let (s, len) = at(base, r);
        // SAFETY (every step): `chunk` gives `start + len <= count` and `len <= frame_elems`;
        // channel `d` is this warp's own.
        unsafe {
            if k == 1 {
                on::<M, T, O, E>(team, &ChannelDesc::NONE, op, fe)?.copy(src.add(s), dst.add(s), len)?;
                post_divide::<M, T, O>(team, job.scalar, dst.add(s), len);
                continue;
            }
            // phase 1: every piece straight to its owner, then accumulate our own shard
            for d in 1..k {
                let (s, len) = at(base, r + d);
                on::<M, T, O, E>(team, &job.channels[d], op, fe)?.send(src.add(s), len)?;
            }
            on::<M, T, O, E>(team, &job.channels[1], op, fe)?.recv_reduce_copy(src.add(s), dst.add(s), len)?;
            for d in 2..k {
                on::<M, T, _, E>(team, &job.channels[d], no_pre, fe)?.recv_reduce_copy(dst.add(s), dst.add(s), len)?;
            }
            // phase 2: our reduced shard to every peer, every peer's into `dst`
            for d in 1..k {
                on::<M, T, _, E>(team, &job.channels[d], no_pre, fe)?.send(dst.add(s), len)?;
            }
            for d in 1..k {
                let (s, len) = at(base, r + k - d);
                on::<M, T, _, E>(team, &job.channels[d], no_pre, fe)?.recv(dst.add(s), len)?;
            }
            // the loop's result is all in `dst`
            let loop_len = job.count.min(base + chunks.loop_elems()) - base;
            post_divide::<M, T, O>(team, job.scalar, dst.add(base), loop_len);
        }
    }
    Ok(())
}

/// The result of two-shot all_reduce over `inputs` (one slice of `n` elements per rank) into
/// `out`, one element at a time in the schedule's order (see the module docs), with operator
/// `op` (for an average, `O::new::<T>(inputs.len())`).
///
/// `inputs` is not empty, every input and `out` have the same length, `frame_elems >= 1`.
pub fn two_shot_all_reduce_reference<T: Split, O: RedOp>(
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
        for owner in 0..k {
            let (start, len) = chunks.chunk(base, owner);
            for (i, o) in out.iter_mut().enumerate().skip(start).take(len) {
                let mut acc = op.pre::<T>(inputs[owner][i]);
                for d in 1..k {
                    acc = op.combine::<T>(op.pre::<T>(inputs[(owner + k - d) % k][i]), acc);
                }
                *o = acc;
            }
        }
    }
}
