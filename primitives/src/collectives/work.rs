//! The work descriptor: what one warp runs, written by the host (or by a GPU entry point's
//! caller) and read by [`run_work`]. A plain `#[repr(C)]` record (ABI shared with the host:
//! change it only together with every writer; pointers are 8 bytes on every supported target).
//!
//! [`WorkDesc`]:
//!
//! | offset | size | field          | meaning                                                     |
//! |--------|------|----------------|-------------------------------------------------------------|
//! | 0      | 4    | `coll`         | a [`Coll`] (`#[repr(u32)]`), checked by [`Coll::from_u32`]   |
//! | 4      | 4    | `rank`         | this rank, `< nranks`                                       |
//! | 8      | 4    | `nranks`       | ranks of the communicator, `>= 1`                           |
//! | 12     | 4    | `peer_or_root` | send / recv: the peer; reduce / broadcast: the root; else 0 |
//! | 16     | 8    | `src`          | the input buffer (see the count table)                      |
//! | 24     | 8    | `dst`          | the output buffer (see the count table)                     |
//! | 32     | 8    | `count`        | elements, per collective (see the count table)              |
//! | 40     | 8    | `frame_elems`  | the largest chunk one step moves (one frame), `>= 1`        |
//! | 48     | 4    | `part`         | which of the warps sharing the collective this is, `< nparts` |
//! | 52     | 4    | `nparts`       | warps sharing the collective, `>= 1`                        |
//! | 56     | 8    | `channels`     | `*const ChannelDesc`: [`Coll::channels`]`(nranks)` entries   |
//! | 64     | 8    | `status`       | `*mut u32`: this warp's [`crate::conn::STATUS_WORDS`]-word status record (may be null) |
//! | 72     | 8    | `scalar`       | the operator's scalar: for Avg the bits of the factor of every contribution ([`zipcoll_device::reduce::RedOp::scaled`], [`zipcoll_device::dtype::DType::scalar_bits`]: f32 bits for the types reduced through f32, f64 bits for f64, the integer's bits): `1 / nranks` for an average, the caller's scalar for PreMulSum; for an integer Sum the divisor of the result ([`zipcoll_device::reduce::post_divisor`], NCCL's SumPostDiv: `nranks` for an integer average, 1 for none); the other operators ignore it |
//! | 80     | 8    | `scalar_at`    | `*const u8`: null, or one element of the dtype in device memory whose value is the scalar instead ([`zipcoll_device::dtype::Elem::scalar_of`]), read when the work starts (NCCL's `ncclScalarDevice`) |
//!
//! `count` and the buffers, NCCL's conventions (`k = nranks`, `r = rank`):
//!
//! | [`Coll`]            | `count` is                      | `src` holds     | `dst` holds       | in place (else disjoint)  |
//! |---------------------|---------------------------------|-----------------|-------------------|---------------------------|
//! | `RingAllReduce`     | elements of the buffer          | `count`         | `count`           | `src == dst`              |
//! | `TwoShotAllReduce`  | elements of the buffer          | `count`         | `count`           | `src == dst`              |
//! | `AllGather`         | elements each rank contributes  | `count`         | `k * count`       | `src == dst + r * count`  |
//! | `ReduceScatter`     | elements each rank receives     | `k * count`     | `count`           | `dst == src + r * count`  |
//! | `Reduce`            | elements of the buffer          | `count`         | `count`, root only | `src == dst` (root)      |
//! | `Broadcast`         | elements of the buffer          | `count`, root only | `count`        | `src == dst` (root)       |
//! | `AllToAll`          | elements per peer block         | `k * count`     | `k * count`       | not allowed               |
//! | `Send`              | elements                        | `count`         | -                 | -                         |
//! | `Recv`              | elements                        | -               | `count`           | -                         |
//!
//! Other overlaps of `src` and `dst` are [`ConnError::Overlap`]. A buffer marked `-` (or "root
//! only" on another rank) is not read and may be null.
//!
//! `channels`, one [`ChannelDesc`] per entry, each this warp's own (its FIFOs are shared only
//! with the partner warp: the peer rank's warp with the same `part`):
//!
//! | kind                                    | entries  | entry `i`: send FIFO to, recv FIFO from      |
//! |-----------------------------------------|----------|----------------------------------------------|
//! | ring: ring all_reduce, all_gather, reduce_scatter, reduce, broadcast | 1 | `r + 1`, `r - 1` |
//! | peer: two-shot all_reduce, all_to_all   | `k`      | entry `d`: `r + d`, `r - d`; entry 0 unused (may be zeroed) |
//! | `Send`                                  | 1        | the peer; recv side absent (all null)        |
//! | `Recv`                                  | 1        | send side absent (all null); the peer        |
//!
//! Reduce and broadcast run as a chain along the ring, so the chain's ends need only one side:
//! `root + 1` receives nothing in a reduce, `root` sends nothing; the reverse in a broadcast
//! (an absent side that a step needs is [`ConnError::NoConnection`]). With `nranks == 1`
//! `channels` is not read (and may be null). The staging buffers of one work's channels are
//! used one step at a time, so they may all be the same buffer.
//!
//! `part` / `nparts`: the collective's loops (the cuts of each schedule, identical on every rank)
//! are dealt round-robin: warp `part` runs loops `part, part + nparts, ..`. Every warp has its
//! own channels, so the parts run independently.
//!
//! Errors: a descriptor that does not validate is a typed error (step 0) before any traffic:
//!
//! | check (in this order)                         | error                         |
//! |-----------------------------------------------|-------------------------------|
//! | `coll` is a [`Coll`]                          | [`ConnError::UnknownColl`]    |
//! | `rank < nranks`                               | [`ConnError::BadRank`]        |
//! | `part < nparts`                               | [`ConnError::BadPart`]        |
//! | root `< nranks`; send / recv peer `< nranks` and `!= rank` | [`ConnError::BadPeer`] |
//! | `count == 0`: nothing else is checked, `Ok`   |                               |
//! | `frame_elems >= 1`                            | [`ConnError::NoFrameElems`]   |
//! | buffer sizes in bytes fit `isize`             | [`ConnError::BadCount`]       |
//! | `src`, `dst` overlap only in place            | [`ConnError::Overlap`]        |
//! | `channels` non-null when `nranks > 1`         | [`ConnError::NoChannels`]     |
//!
//! On any failure (validation or traffic) the team's leader writes the status record to `status` and raises
//! the launch's abort word (the first non-null `abort` among the channels: every channel of a
//! launch shares one), so the other ranks stop with [`ConnError::Aborted`].

use crate::collectives::{all_gather, all_to_all, broadcast, p2p, reduce, reduce_scatter, ring_all_reduce, two_shot};
use crate::conn::{ChannelDesc, ConnError, Failure};
use crate::prims::Compression;
use zipcoll_device::dtype::Split;
use zipcoll_device::reduce::{RedOp, Sum};
use zipcoll_device::team::Team;
use zipcoll_targets::{Memory, Scope};

/// The collectives a [`WorkDesc`] can name. ABI: values are stable, append only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum Coll {
    /// Ring all_reduce ([`crate::collectives::ring_all_reduce_reference`]).
    RingAllReduce = 0,
    /// Two-shot all_reduce over direct peer channels ([`crate::collectives::two_shot_all_reduce_reference`]).
    TwoShotAllReduce = 1,
    /// Ring all_gather.
    AllGather = 2,
    /// Ring reduce_scatter ([`crate::collectives::reduce_scatter_reference`]).
    ReduceScatter = 3,
    /// Reduce to a root along the ring ([`crate::collectives::reduce_reference`]).
    Reduce = 4,
    /// Broadcast from a root along the ring.
    Broadcast = 5,
    /// All-to-all over direct peer channels.
    AllToAll = 6,
    /// Send to a peer.
    Send = 7,
    /// Receive from a peer.
    Recv = 8,
}

impl Coll {
    /// Every collective, in value order.
    pub const ALL: [Coll; 9] = [
        Coll::RingAllReduce,
        Coll::TwoShotAllReduce,
        Coll::AllGather,
        Coll::ReduceScatter,
        Coll::Reduce,
        Coll::Broadcast,
        Coll::AllToAll,
        Coll::Send,
        Coll::Recv,
    ];

    /// The collective with value `v`, if any.
    pub fn from_u32(v: u32) -> Option<Coll> {
        Coll::ALL.get(v as usize).copied()
    }

    /// Whether this runs over peer channels (entry `d` leads to `rank + d`).
    pub fn is_peer(self) -> bool {
        matches!(self, Coll::TwoShotAllReduce | Coll::AllToAll)
    }

    /// Entries of [`WorkDesc::channels`] for `nranks` ranks (see the module table).
    pub fn channels(self, nranks: usize) -> usize {
        if self.is_peer() {
            nranks
        } else {
            1
        }
    }
}

/// One warp's work (see the module tables).
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub struct WorkDesc {
    /// A [`Coll`] value.
    pub coll: u32,
    /// This rank.
    pub rank: u32,
    /// Ranks of the communicator.
    pub nranks: u32,
    /// The peer (send, recv) or the root (reduce, broadcast).
    pub peer_or_root: u32,
    /// The input buffer.
    pub src: *const u8,
    /// The output buffer.
    pub dst: *mut u8,
    /// Elements (the meaning depends on `coll`).
    pub count: u64,
    /// The largest chunk of one step.
    pub frame_elems: u64,
    /// This warp's share of the loops.
    pub part: u32,
    /// Warps sharing the collective.
    pub nparts: u32,
    /// [`Coll::channels`] channel descriptors.
    pub channels: *const ChannelDesc,
    /// This warp's status record.
    pub status: *mut u32,
    /// The operator's scalar (Avg's factor, an integer Sum's divisor).
    pub scalar: u64,
    /// Null, or where the dtype's value that is the scalar lies, read when the work starts.
    pub scalar_at: *const u8,
}
#[cfg(target_pointer_width = "64")]
const _: () = assert!(core::mem::size_of::<WorkDesc>() == 88);

/// A validated [`WorkDesc`], typed: what the schedules run.
pub struct Job<'a, T: Split> {
    /// The collective.
    pub coll: Coll,
    /// This rank.
    pub rank: usize,
    /// Ranks.
    pub nranks: usize,
    /// The peer or root.
    pub peer: usize,
    /// The input buffer.
    pub src: *const T::Bits,
    /// The output buffer.
    pub dst: *mut T::Bits,
    /// Elements (as [`WorkDesc::count`]), at least 1.
    pub count: usize,
    /// The largest chunk, at least 1.
    pub frame_elems: usize,
    /// This warp's part.
    pub part: usize,
    /// Parts.
    pub nparts: usize,
    /// The channels ([`Coll::channels`] entries; empty when `nranks == 1`).
    pub channels: &'a [ChannelDesc],
    /// The operator's scalar ([`WorkDesc::scalar`], or the value at [`WorkDesc::scalar_at`]).
    pub scalar: u64,
}

impl<T: Split> Job<'_, T> {
    /// Whether loop `l` (counted from 0 over the whole collective) is this warp's.
    pub fn mine(&self, l: usize) -> bool {
        l % self.nparts == self.part
    }

    /// The ring channel (entry 0), or [`ChannelDesc::NONE`] with one rank.
    pub fn ring(&self) -> &ChannelDesc {
        self.channels.first().unwrap_or(&ChannelDesc::NONE)
    }

    /// This warp's pieces of a block of `count` elements cut into frames: `(start, len)` of
    /// loops `part, part + nparts, ..`.
    pub fn pieces(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        pieces(self.count, self.frame_elems, self.part, self.nparts)
    }

    /// Piece `i` of [`Job::pieces`], if there is one.
    pub fn piece(&self, i: usize) -> Option<(usize, usize)> {
        let start = i
            .checked_mul(self.nparts)?
            .checked_add(self.part)?
            .checked_mul(self.frame_elems)?;
        (start < self.count).then(|| (start, self.frame_elems.min(self.count - start)))
    }
}

/// The pieces `(start, len)` of loops `part, part + nparts, ..` of `count` elements cut into
/// frames of `frame_elems` (the last one partial).
pub fn pieces(count: usize, frame_elems: usize, part: usize, nparts: usize) -> impl Iterator<Item = (usize, usize)> {
    (0..count)
        .step_by(frame_elems.max(1))
        .skip(part)
        .step_by(nparts.max(1))
        .map(move |s| (s, frame_elems.min(count - s)))
}

/// A configuration failure (step 0).
fn config<X>(error: ConnError) -> Result<X, Failure> {
    Err(Failure { step: 0, error })
}

/// Whether byte ranges `[a, a + alen)` and `[b, b + blen)` overlap.
fn overlap(a: usize, alen: usize, b: usize, blen: usize) -> bool {
    alen != 0 && blen != 0 && a < b + blen && b < a + alen
}

/// `work` checked and typed (see the module's error table); `None` when there is nothing to do.
///
/// # Safety
/// When `nranks > 1`, `work.channels` (if not null) points at [`Coll::channels`] live
/// descriptors that outlive the result; `work.scalar_at` (if not null) points at one readable
/// element of `T`.
pub unsafe fn validate<'a, T: Split>(work: &'a WorkDesc) -> Result<Option<Job<'a, T>>, Failure> {
    let Some(coll) = Coll::from_u32(work.coll) else {
        return config(ConnError::UnknownColl(work.coll));
    };
    let (rank, nranks, peer) = (work.rank, work.nranks, work.peer_or_root);
    if rank >= nranks {
        return config(ConnError::BadRank { rank, nranks });
    }
    if work.part >= work.nparts {
        return config(ConnError::BadPart {
            part: work.part,
            nparts: work.nparts,
        });
    }
    let p2p = matches!(coll, Coll::Send | Coll::Recv);
    let rooted = matches!(coll, Coll::Reduce | Coll::Broadcast);
    if (p2p && (peer >= nranks || peer == rank)) || (rooted && peer >= nranks) {
        return config(ConnError::BadPeer { peer, nranks });
    }
    if work.count == 0 {
        return Ok(None);
    }
    if work.frame_elems == 0 {
        return config(ConnError::NoFrameElems);
    }
    let (k, r) = (nranks as usize, rank as usize);
    let size = T::DTYPE.size_bytes();
    let bytes = |elems: u64| {
        usize::try_from(elems)
            .ok()
            .and_then(|e| e.checked_mul(k))
            .and_then(|e| e.checked_mul(size))
            .filter(|&b| b <= isize::MAX as usize)
    };
    let (Some(_), Ok(count), Ok(frame_elems)) = (
        bytes(work.count),
        usize::try_from(work.count),
        usize::try_from(work.frame_elems),
    ) else {
        return config(ConnError::BadCount);
    };
    let b = count * size;
    let (src, dst) = (work.src as usize, work.dst as usize);
    // (src bytes, dst bytes, the in-place dst when src and dst may meet)
    let (sb, db, in_place) = match coll {
        Coll::RingAllReduce | Coll::TwoShotAllReduce => (b, b, Some(src)),
        Coll::AllGather => (b, k * b, Some(src.wrapping_sub(r * b))),
        Coll::ReduceScatter => (k * b, b, Some(src.wrapping_add(r * b))),
        Coll::Reduce | Coll::Broadcast if r == peer as usize => (b, b, Some(src)),
        Coll::AllToAll => (k * b, k * b, None),
        Coll::Reduce | Coll::Broadcast | Coll::Send | Coll::Recv => (0, 0, None),
    };
    if overlap(src, sb, dst, db) && in_place != Some(dst) {
        return config(ConnError::Overlap);
    }
    if k > 1 && work.channels.is_null() {
        return config(ConnError::NoChannels);
    }
    // a scalar in device memory is the value there as this work starts
    let scalar = if work.scalar_at.is_null() {
        work.scalar
    } else {
        // SAFETY: non-null: one element of `T` (the caller's contract), read at any alignment.
        T::scalar_of(unsafe { work.scalar_at.cast::<T::Bits>().read_unaligned() })
    };
    let channels = if k > 1 {
        // SAFETY: non-null and pointing at `Coll::channels(nranks)` live descriptors (the
        // caller's contract).
        unsafe { core::slice::from_raw_parts(work.channels, coll.channels(k)) }
    } else {
        &[]
    };
    Ok(Some(Job {
        coll,
        rank: r,
        nranks: k,
        peer: peer as usize,
        src: work.src.cast(),
        dst: work.dst.cast(),
        count,
        frame_elems,
        part: work.part as usize,
        nparts: work.nparts as usize,
        channels,
        scalar,
    }))
}

/// Runs one work descriptor (see the module docs): validates it, then runs its collective's
/// schedule with elements `T`, operator `O` and compression `E`. Called by every thread of the
/// team (a warp or a block) with the same descriptor. On failure the leader writes the status
/// record to `work.status` and raises the abort word, and the error is returned on every
/// thread; the outputs are then
/// undefined.
///
/// # Safety
/// The descriptor describes live memory as the module tables say: `src` valid for the reads
/// and `dst` for the writes of its collective, the channels as [`crate::conn`]'s tables say
/// (staging buffers aligned for `T::Bits`) leading to the ranks the channel table says, whose
/// partner warps run matching descriptors (same `coll`, `nranks`, `count`, `frame_elems`,
/// `nparts`, root, and `T`, `O`); this warp is the only user of its channels; `scalar_at` is
/// null or points at one readable element of `T`.
pub unsafe fn run_work<M: Team, T: Split, O: RedOp, E: Compression>(team: M, work: &WorkDesc) -> Result<(), Failure> {
    // SAFETY: forwarded to the caller.
    let result = unsafe { run_unreported::<M, T, O, E>(team, core::slice::from_ref(work)) };
    if let Err(failure) = &result {
        report(team, work, failure);
    }
    result
}

/// Runs `works` in order in this warp (see [`run_work`]), stopping at the first failure, which
/// is reported to the failing descriptor's `status`. A run of consecutive `Send` / `Recv`
/// descriptors is one group: its operations advance together, frame by frame (each step sends
/// every operation's next frame, then receives every operation's next frame), as NCCL's grouped
/// send / recv do, so a group of a send to `b` and a receive from `b` (or from `c`) does not
/// wait for the whole send to finish first (see [`crate::collectives`]'s group rules).
///
/// # Safety
/// As [`run_work`], for every descriptor.
pub unsafe fn run_works<M: Team, T: Split, O: RedOp, E: Compression>(
    team: M,
    works: &[WorkDesc],
) -> Result<(), Failure> {
    let mut i = 0;
    while i < works.len() {
        let p2p = |d: &WorkDesc| matches!(Coll::from_u32(d.coll), Some(Coll::Send | Coll::Recv));
        let end = if p2p(&works[i]) {
            i + works[i..].iter().take_while(|d| p2p(d)).count()
        } else {
            i + 1
        };
        // SAFETY: forwarded to the caller.
        if let Err(failure) = unsafe { run_unreported::<M, T, O, E>(team, &works[i..end]) } {
            // a group reports to its first descriptor's record
            report(team, &works[i], &failure);
            return Err(failure);
        }
        i = end;
    }
    Ok(())
}

/// Validates and runs `works`: one descriptor, or a group of `Send` / `Recv` descriptors.
///
/// # Safety
/// As [`run_work`].
unsafe fn run_unreported<M: Team, T: Split, O: RedOp, E: Compression>(
    team: M,
    works: &[WorkDesc],
) -> Result<(), Failure> {
    if works.len() != 1 || matches!(Coll::from_u32(works[0].coll), Some(Coll::Send | Coll::Recv)) {
        for work in works {
            // SAFETY: forwarded to the caller.
            unsafe { validate::<T>(work)? };
        }
        // SAFETY: forwarded to the caller; every descriptor validated.
        return unsafe { p2p::group::<M, T, Sum, E>(team, works) };
    }
    // SAFETY: forwarded to the caller.
    let Some(job) = (unsafe { validate::<T>(&works[0])? }) else {
        return Ok(());
    };
    // SAFETY (every schedule): the job is validated and the caller's contract holds.
    unsafe {
        match job.coll {
            Coll::RingAllReduce => ring_all_reduce::schedule::<M, T, O, E>(team, &job),
            Coll::TwoShotAllReduce => two_shot::schedule::<M, T, O, E>(team, &job),
            Coll::ReduceScatter => reduce_scatter::schedule::<M, T, O, E>(team, &job),
            Coll::Reduce => reduce::schedule::<M, T, O, E>(team, &job),
            // the schedules that only move data never apply the operator: instantiating them
            // with `Sum` whatever `O` is keeps one copy per (dtype, compression) in a GPU module
            Coll::AllGather => all_gather::schedule::<M, T, Sum, E>(team, &job),
            Coll::Broadcast => broadcast::schedule::<M, T, Sum, E>(team, &job),
            Coll::AllToAll => all_to_all::schedule::<M, T, Sum, E>(team, &job),
            Coll::Send | Coll::Recv => p2p::group::<M, T, Sum, E>(team, works),
        }
    }
}

/// Reports `failure` to the first of `works` (nothing if there is none), as a failing run does.
pub(crate) fn report_first<M: Team>(team: M, works: &[WorkDesc], failure: &Failure) {
    if let Some(first) = works.first() {
        report(team, first, failure);
    }
}

/// The team's leader writes `failure`'s status record to `work.status` (if not null) and
/// raises the abort word of the first channel that has one.
fn report<M: Team>(team: M, work: &WorkDesc, failure: &Failure) {
    if team.rank() != 0 {
        return;
    }
    let w = team.warp();
    if !work.status.is_null() {
        for (i, word) in failure.record().into_iter().enumerate() {
            // SAFETY: `status` holds `STATUS_WORDS` words (the descriptor's contract) and only
            // this team writes them.
            unsafe { w.store_volatile(work.status.add(i), word) };
        }
    }
    let Some(coll) = Coll::from_u32(work.coll) else { return };
    if work.nranks <= 1 || work.channels.is_null() || work.rank >= work.nranks {
        return;
    }
    for i in 0..coll.channels(work.nranks as usize) {
        // SAFETY: `channels` holds `Coll::channels(nranks)` descriptors (the contract).
        let abort = unsafe { (*work.channels.add(i)).abort };
        if !abort.is_null() {
            // SAFETY: `abort` is valid and only accessed atomically (the channel's contract).
            unsafe { w.store_release(abort, 1, Scope::System) };
            return;
        }
    }
}
