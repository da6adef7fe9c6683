//! What one call runs: the warps of a launch, each with its list of [`WorkDesc`]s and the
//! [`ChannelDesc`]s they use, built from the rank's [`Fabric`] for any backend (the pointers are
//! bound to where the lists are copied last, by [`Plan::bind`]). A plan's "warp" is one block of
//! the launch, the team that drives its channels: one warp, or a block of threads
//! ([`Plan::team`]).
//!
//! | [`ChannelTeam`] | kernel                   | frames it decodes | dynamic shared memory |
//! |-----------------|--------------------------|-------------------|-----------------------|
//! | `Warp`          | `collective`             | any codec         | none                  |
//! | `RawBlock(t)`   | `collective_block`       | RAW only (every rank of the call sends RAW) | the team's |
//! | `CodedBlock(t)` | `collective_block_coded` | any codec; block coders code with every thread | the team's and a block coder's |
//!
//! | call                    | warps                                   | warp's works               | channels per work |
//! |-------------------------|-----------------------------------------|----------------------------|-------------------|
//! | a collective            | one per part `p < parts`                | one, `part = p`            | ring: 1, peer kinds: `nranks` |
//! | a group of sends/recvs  | one per (direction, peer) and part      | the ops to that peer, in call order | 1       |

use super::fabric::Fabric;
use zipcoll_device::codec::block_frame::coder_scratch_bytes;
use zipcoll_device::team::BLOCK_TEAM_BYTES;
use zipcoll_primitives::collectives::{Coll, WorkDesc};
use zipcoll_primitives::conn::{ChannelDesc, STATUS_WORDS};

/// The launch of one call (see the module table).
pub(crate) struct Plan {
    /// Every channel the works use; `WorkDesc::channels` holds an index here until [`Plan::bind`].
    pub channels: Vec<ChannelDesc>,
    /// Every work, warp after warp.
    pub works: Vec<WorkDesc>,
    /// Warp `b` runs `works[warp_starts[b]..warp_starts[b + 1]]`.
    pub warp_starts: Vec<u32>,
    /// What drives each channel, and so which kernel runs the plan.
    pub team: ChannelTeam,
}

/// What drives each channel of a launch (see the module table); the same kind on every rank of
/// a call, so that each decodes the frames its peers send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ChannelTeam {
    /// One warp (on the simulator, a warp of whatever width it simulates).
    Warp,
    /// A block of this many threads sending and taking RAW frames only.
    RawBlock(u32),
    /// A block of this many threads, coding with the channel's codec.
    CodedBlock(u32),
}

/// Threads of a [`ChannelTeam::Warp`] block on a GPU.
pub(crate) const ONE_WARP: u32 = 32;

impl ChannelTeam {
    /// Threads per block (a warp's on a GPU for `Warp`).
    pub fn threads(self) -> u32 {
        match self {
            ChannelTeam::Warp => ONE_WARP,
            ChannelTeam::RawBlock(t) | ChannelTeam::CodedBlock(t) => t,
        }
    }

    /// Bytes of dynamic shared memory per block: the block team's, and a block coder's scratch
    /// after them where the block codes.
    pub fn shared_bytes(self) -> u32 {
        let bytes = match self {
            ChannelTeam::Warp => 0,
            ChannelTeam::RawBlock(_) => BLOCK_TEAM_BYTES,
            ChannelTeam::CodedBlock(t) => BLOCK_TEAM_BYTES + coder_scratch_bytes(t),
        };
        bytes as u32
    }
}

/// One point-to-point operation of a group.
#[derive(Clone, Copy, Debug)]
pub(crate) struct P2pOp {
    /// `true` for a send.
    pub send: bool,
    pub peer: usize,
    /// The buffer (read for a send, written for a receive).
    pub buf: *mut u8,
    pub count: u64,
}

/// The arguments every work of a collective shares.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CollArgs {
    pub coll: Coll,
    pub root: usize,
    pub src: *const u8,
    pub dst: *mut u8,
    pub count: u64,
    pub frame_elems: u64,
    /// The operator's scalar (the work descriptor's `scalar`).
    pub scalar: u64,
    /// Null, or where the scalar's value lies in device memory (the descriptor's `scalar_at`).
    pub scalar_at: *const u8,
}

impl Plan {
    fn new() -> Plan {
        Plan {
            channels: Vec::new(),
            works: Vec::new(),
            warp_starts: vec![0],
            team: ChannelTeam::Warp,
        }
    }

    /// Warps in the launch.
    pub fn warps(&self) -> usize {
        self.warp_starts.len() - 1
    }

    fn end_warp(&mut self) {
        self.warp_starts.push(self.works.len() as u32);
    }

    fn work(f: &Fabric, a: &CollArgs, part: usize, channel: usize) -> WorkDesc {
        WorkDesc {
            coll: a.coll as u32,
            rank: f.rank as u32,
            nranks: f.nranks as u32,
            peer_or_root: a.root as u32,
            src: a.src,
            dst: a.dst,
            count: a.count,
            frame_elems: a.frame_elems,
            part: part as u32,
            nparts: f.parts as u32,
            channels: channel as *const ChannelDesc,
            status: core::ptr::null_mut(),
            scalar: a.scalar,
            scalar_at: a.scalar_at,
        }
    }

    /// A collective over every part of `f`.
    pub fn collective(f: &Fabric, a: CollArgs) -> Plan {
        let mut plan = Plan::new();
        for p in 0..f.parts {
            let first = plan.channels.len();
            if a.coll.channels(f.nranks) == 1 {
                plan.channels.push(f.ring(p));
            } else {
                plan.channels.extend(f.peers(p));
            }
            plan.works.push(Self::work(f, &a, p, first));
            plan.end_warp();
        }
        plan
    }

    /// A group of sends and receives: per direction and peer, one warp per part runs that
    /// peer's ops in call order (a send and a receive, or two peers, never wait on each other).
    /// An op of `count` elements moves frames of `frame_elems(count)` (a function of the count
    /// alone, so a send and its receive agree).
    pub fn group(f: &Fabric, ops: &[P2pOp], frame_elems: impl Fn(u64) -> u64) -> Plan {
        let mut plan = Plan::new();
        let mut keys: Vec<(bool, usize)> = ops.iter().map(|o| (o.send, o.peer)).collect();
        keys.sort_unstable();
        keys.dedup();
        for (send, peer) in keys {
            for p in 0..f.parts {
                let channel = plan.channels.len();
                plan.channels
                    .push(if send { f.sender(peer, p) } else { f.receiver(peer, p) });
                for op in ops.iter().filter(|o| (o.send, o.peer) == (send, peer)) {
                    let a = CollArgs {
                        coll: if send { Coll::Send } else { Coll::Recv },
                        root: peer,
                        src: op.buf,
                        dst: op.buf,
                        count: op.count,
                        frame_elems: frame_elems(op.count),
                        scalar: 0,
                        scalar_at: core::ptr::null(),
                    };
                    plan.works.push(Self::work(f, &a, p, channel));
                }
                plan.end_warp();
            }
        }
        plan
    }

    /// Warps of [`Plan::group`]`(f, ops, ..)` for a fabric of `parts` parts.
    pub fn group_warps(ops: &[P2pOp], parts: usize) -> usize {
        let mut keys: Vec<(bool, usize)> = ops.iter().map(|o| (o.send, o.peer)).collect();
        keys.sort_unstable();
        keys.dedup();
        keys.len() * parts
    }

    /// Makes every channel send with `codec` (`Raw`: compression off).
    pub fn set_codec(&mut self, codec: zipcoll_device::codec::CodecId) {
        for c in &mut self.channels {
            c.codec = codec as u64;
        }
    }

    /// Points each work at its channels (copied to `channels_base`) and at its warp's status
    /// record (`status_base + STATUS_WORDS * warp`).
    pub fn bind(&mut self, channels_base: *const ChannelDesc, status_base: *mut u32) {
        for b in 0..self.warps() {
            let (lo, hi) = (self.warp_starts[b] as usize, self.warp_starts[b + 1] as usize);
            for w in &mut self.works[lo..hi] {
                w.channels = channels_base.wrapping_add(w.channels as usize);
                w.status = status_base.wrapping_add(STATUS_WORDS * b);
            }
        }
    }
}
