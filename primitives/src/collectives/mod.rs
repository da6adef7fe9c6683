//! Collectives as schedules of [`crate::prims`] steps, each written once and generic over the
//! dtype, the operator and the compression, and each with a scalar reference that follows the
//! same reduction order (so tests compare bit for bit). The host describes a warp's work with a
//! [`WorkDesc`] (the ABI, with the count / buffer / channel conventions and the validation
//! rules) and runs it with [`run_work`] or a list of them with [`run_works`].
//!
//! | [`Coll`]            | module               | channels | schedule per loop                                           | reference                          |
//! |---------------------|----------------------|----------|-------------------------------------------------------------|------------------------------------|
//! | `RingAllReduce`     | [`ring_all_reduce`]  | ring     | send, `k-2` x recv_reduce_send, recv_reduce_copy_send, `k-2` x recv_copy_send, recv | [`ring_all_reduce_reference`] |
//! | `TwoShotAllReduce`  | [`two_shot`]         | peer     | `k-1` x send, recv_reduce_copy, `k-2` x recv_reduce_copy (NoPre), `k-1` x send, `k-1` x recv | [`two_shot_all_reduce_reference`] |
//! | `ReduceScatter`     | [`reduce_scatter`]   | ring     | send, `k-2` x recv_reduce_send, recv_reduce_copy            | [`reduce_scatter_reference`]       |
//! | `AllGather`         | [`all_gather`]       | ring     | copy_send, `k-2` x recv_copy_send, recv                     | [`all_gather_reference`]           |
//! | `Reduce`            | [`reduce`]           | ring     | by place in the chain: send / recv_reduce_send / recv_reduce_copy (root) | [`reduce_reference`] |
//! | `Broadcast`         | [`broadcast`]        | ring     | by place in the chain: copy_send (root) / recv_copy_send / recv | the root's `src`               |
//! | `AllToAll`          | [`all_to_all`]       | peer     | copy own block; per delta `d`, per piece: send, recv         | [`all_to_all_reference`]           |
//! | `Send` / `Recv`     | [`p2p`]              | one side | send / recv per piece; groups advance frame by frame        | the sent buffer                    |
//!
//! `k = nranks`; "ring": one channel, send FIFO to `rank + 1`, recv FIFO from `rank - 1`; "peer":
//! `k` channels, entry `d` to `rank + d` and from `rank - d`. Every schedule cuts its buffer the
//! same way on every rank and deals its loops round-robin to the `nparts` warps sharing it;
//! `count == 0` returns `Ok` at once on every rank. With one rank every collective is a local
//! copy (with `pre` where it reduces).
//!
//! An integer average (NCCL's SumPostDiv: the Sum kernels with the descriptor's `scalar` set to
//! the divisor, [`post_divisor`]) divides each element of the result once: every rank divides
//! what it holds of a loop's result after the loop's last step, which gives the bits NCCL's
//! divide-then-forward gives. The references leave it out: [`post_divide_reference`] divides
//! their result.

pub mod all_gather;
pub mod all_to_all;
pub mod broadcast;
pub mod p2p;
pub mod reduce;
pub mod reduce_scatter;
pub mod ring_all_reduce;
pub mod two_shot;
mod work;

pub use all_gather::all_gather_reference;
pub use all_to_all::all_to_all_reference;
pub use reduce::reduce_reference;
pub use reduce_scatter::reduce_scatter_reference;
pub use ring_all_reduce::{ring_all_reduce_reference, RingChunks};
pub use two_shot::two_shot_all_reduce_reference;
pub(crate) use work::report_first;
pub use work::{pieces, run_work, run_works, validate, Coll, Job, WorkDesc};

use zipcoll_device::dtype::Elem;
use zipcoll_device::reduce::{post_divisor, RedOp};
use zipcoll_device::team::Team;

/// NCCL's SumPostDiv after a loop's last step: divides the `len` elements at `dst` toward zero
/// by the divisor of a kernel of `O` on `T` whose descriptor holds `scalar` ([`post_divisor`]),
/// spread over the team, which then syncs; nothing (not even the sync) when there is none, as
/// for every float kernel.
///
/// # Safety
/// `dst` is valid for `len` reads and writes, and only this team touches it meanwhile.
#[inline(always)]
pub(crate) unsafe fn post_divide<M: Team, T: Elem, O: RedOp>(team: M, scalar: u64, dst: *mut T::Bits, len: usize) {
    let Some(divisor) = post_divisor::<T, O>(scalar) else {
        return;
    };
    // the team's threads wrote this loop's result with the step's sync after it: each thread
    // now divides elements rank, rank + size, ..
    let mut i = team.rank() as usize;
    while i < len {
        // SAFETY: `i < len`, the caller's contract.
        unsafe { dst.add(i).write(T::div_toward_zero(dst.add(i).read(), divisor)) };
        i += team.size() as usize;
    }
    team.barrier();
}

/// A reference's result as the schedules leave it for a kernel of `O` on `T` whose descriptor
/// holds `scalar`: each element of `out` divided once toward zero where [`post_divisor`] says
/// (an integer average), unchanged otherwise.
pub fn post_divide_reference<T: Elem, O: RedOp>(scalar: u64, out: &mut [T::Bits]) {
    if let Some(divisor) = post_divisor::<T, O>(scalar) {
        out.iter_mut().for_each(|x| *x = T::div_toward_zero(*x, divisor));
    }
}
