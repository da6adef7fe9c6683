//! The simulator transport: for `nranks` ranks and `nparts` parts, one FIFO per directed pair of
//! ranks per part in host memory, and every warp of a test (each running a list of
//! [`WorkDesc`]s) as one block of one `sim::launch` (`grid_dim = co_resident_blocks =` the
//! warps, one warp per block), so all warps run at once on their own OS threads and share the
//! FIFOs as GPUs share peer memory. A stuck warp fails the launch.
//!
//! | memory (host)         | per                          | holds                                 |
//! |-----------------------|------------------------------|---------------------------------------|
//! | FIFO `(part, a, b)`   | part, directed pair `a -> b` | `NSLOTS` slots, `head`, `tail`        |
//! | staging buffer        | work descriptor              | one slot (shared by its channels)     |
//! | frame stage           | work descriptor              | one slot (used over [`Link::Net`])    |
//! | channel descriptors   | work descriptor              | [`Coll::channels`] entries            |
//! | status record         | work descriptor              | `STATUS_WORDS` words, zero = fine     |
//! | abort word            | net                          | raised by the first warp that fails   |
//!
//! One abort word for every rank is what the communicator gives its kernels over SIM and P2P
//! (word 0 of rank 0's control block, `conn::Control`); over NET each rank polls its own, which
//! its proxies raise when a peer's ABORT arrives (the host's `net_transport` and `comm_failures`
//! tests cover that path).
//!
//! Channels follow [`zipcoll_primitives::collectives`]' conventions: ring kinds use the FIFOs
//! `(part, r, r + 1)` and `(part, r - 1, r)`; peer kinds entry `d` uses `(part, r, r + d)` and
//! `(part, r - d, r)`; a send to `p` uses `(part, r, p)` alone, a receive from `p` `(part, p, r)`.

#![allow(dead_code)]

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;
use zipcoll_device::codec::block_frame::coder_scratch_bytes;
use zipcoll_device::dtype::Split;
use zipcoll_device::reduce::RedOp;
use zipcoll_device::team::{Block, Team, BLOCK_TEAM_BYTES};
use zipcoll_primitives::collectives::{run_works, Coll, WorkDesc};
use zipcoll_primitives::conn::{ChannelDesc, ConnDesc, Failure, NSLOTS, STATUS_WORDS};
use zipcoll_primitives::prims::Compression;
use zipcoll_targets::sim::{launch, LaunchConfig, SimError, SimWarp};
use zipcoll_targets::{Grid, SharedMem};

/// Which transport's FIFOs the channels stand for, as far as the kernels can tell them apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Link {
    /// The simulator transport's: RAW payloads verified, frames coded in their slots.
    Sim,
    /// P2P's: trusted (`ChannelDesc::trusted`: RAW payloads used unverified).
    P2p,
    /// NET's: slots in host memory, so frames are coded in a frame stage
    /// (`ChannelDesc::frame_stage`) and copied to and from them; RAW payloads verified.
    Net,
}

/// What drives each list of work descriptors: a warp, or a block of this many threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Channel {
    Warp,
    Block(u32),
}

/// Lanes per warp in these tests.
pub const WIDTH: u32 = 32;

/// A value shared with the simulated warps (raw pointers are not `Sync`).
pub struct Shared<T>(pub T);
// SAFETY: the simulated kernels access the pointed-to memory by the FIFO protocol only, or (the
// buffers) each warp its own.
unsafe impl<T> Sync for Shared<T> {}

impl<T> Shared<T> {
    /// The value (a method, so that closures capture the whole `Shared`).
    pub fn get(&self) -> &T {
        &self.0
    }
}

/// Device-written memory: 16-byte words the kernels write through raw pointers.
type DeviceBytes = Box<[UnsafeCell<u128>]>;

/// `words` zeroed 16-byte words.
fn device_bytes(words: usize) -> DeviceBytes {
    (0..words).map(|_| UnsafeCell::new(0)).collect()
}

/// A pointer for the kernels to write `b` through.
fn device_ptr(b: &DeviceBytes) -> *mut u8 {
    UnsafeCell::raw_get(b.as_ptr()).cast()
}

/// One FIFO: slots and the two counters.
struct Fifo {
    slots: DeviceBytes,
    head: AtomicU64,
    tail: AtomicU64,
}

/// What the work descriptors of a net point at (boxed: stable addresses while the vectors grow).
#[derive(Default)]
#[allow(clippy::vec_box)]
struct Arena {
    channels: Vec<Box<[ChannelDesc]>>,
    stages: Vec<DeviceBytes>,
    status: Vec<Box<[AtomicU32; STATUS_WORDS]>>,
}

/// The FIFOs of every directed pair of ranks for every part, and the memory work descriptors
/// point at.
pub struct Net {
    pub nranks: usize,
    pub nparts: usize,
    slot_bytes: usize,
    fifos: Vec<Fifo>,
    abort: AtomicU32,
    arena: Mutex<Arena>,
    /// Nanoseconds a wait lasts before a timeout.
    pub timeout_ns: u64,
    /// The transport the channels stand for.
    pub link: Link,
}

// SAFETY: the `UnsafeCell` memory is written only by the simulated warps, through the FIFO
// protocol, and read by the host only between launches; the arena is behind a mutex.
unsafe impl Sync for Net {}

impl Net {
    /// A net of `nranks` ranks and `nparts` parts with FIFOs of `NSLOTS` slots of `slot_bytes`
    /// (a multiple of 16).
    pub fn new(nranks: usize, nparts: usize, slot_bytes: usize) -> Self {
        let words = slot_bytes / 16;
        Net {
            nranks,
            nparts,
            slot_bytes,
            fifos: (0..nparts * nranks * nranks)
                .map(|_| Fifo {
                    slots: device_bytes(words * NSLOTS as usize),
                    head: AtomicU64::new(0),
                    tail: AtomicU64::new(0),
                })
                .collect(),
            abort: AtomicU32::new(0),
            arena: Mutex::default(),
            timeout_ns: 20_000_000_000,
            link: Link::Sim,
        }
    }

    fn fifo(&self, part: usize, from: usize, to: usize) -> &Fifo {
        let k = self.nranks;
        &self.fifos[(part * k + from % k) * k + to % k]
    }

    /// The FIFO `from -> to` of `part`.
    pub fn conn(&self, part: usize, from: usize, to: usize) -> ConnDesc {
        let f = self.fifo(part, from, to);
        ConnDesc {
            slots: device_ptr(&f.slots),
            head: f.head.as_ptr(),
            tail: f.tail.as_ptr(),
            slot_bytes: self.slot_bytes as u64,
        }
    }

    /// Frames published on `from -> to` of `part` so far.
    pub fn tail(&self, part: usize, from: usize, to: usize) -> u64 {
        self.fifo(part, from, to).tail.load(Ordering::Acquire)
    }

    /// The bytes of slot `s` of `from -> to` of part 0 (after the launch).
    pub fn slot(&self, from: usize, to: usize, s: usize) -> Vec<u8> {
        // SAFETY: called between launches, so nothing writes the slots meanwhile.
        let bytes: Vec<u8> = self
            .fifo(0, from, to)
            .slots
            .iter()
            .flat_map(|w| unsafe { *w.get() }.to_le_bytes())
            .collect();
        bytes[s * self.slot_bytes..(s + 1) * self.slot_bytes].to_vec()
    }

    /// The channels of `coll` for `rank`, `part` and peer `peer` (send / recv), with staging
    /// buffer `stage`, frame stage `frame_stage` (used over [`Link::Net`]) and the net's abort
    /// word.
    pub fn channels(
        &self,
        coll: Coll,
        rank: usize,
        part: usize,
        peer: usize,
        stage: *mut u8,
        frame_stage: *mut u8,
    ) -> Vec<ChannelDesc> {
        let k = self.nranks;
        let ch = |send, recv| ChannelDesc {
            send,
            recv,
            stage,
            stage_bytes: self.slot_bytes as u64,
            abort: self.abort.as_ptr(),
            codec: 0,
            timeout_ns: self.timeout_ns,
            trusted: u64::from(self.link == Link::P2p),
            frame_stage: match self.link {
                Link::Net => frame_stage,
                Link::Sim | Link::P2p => std::ptr::null_mut(),
            },
        };
        match coll {
            Coll::Send => vec![ch(self.conn(part, rank, peer), ConnDesc::NONE)],
            Coll::Recv => vec![ch(ConnDesc::NONE, self.conn(part, peer, rank))],
            c if c.is_peer() => (0..k)
                .map(|d| {
                    if d == 0 {
                        ChannelDesc::NONE
                    } else {
                        ch(self.conn(part, rank, rank + d), self.conn(part, rank + k - d, rank))
                    }
                })
                .collect(),
            _ => vec![ch(self.conn(part, rank, rank + 1), self.conn(part, rank + k - 1, rank))],
        }
    }

    /// A work descriptor for `rank`'s warp `part` with its own channels, staging buffer, frame
    /// stage and status record (living as long as the net).
    #[allow(clippy::too_many_arguments)]
    pub fn work(
        &self,
        coll: Coll,
        rank: usize,
        part: usize,
        peer_or_root: usize,
        src: *const u8,
        dst: *mut u8,
        count: usize,
        frame_elems: usize,
    ) -> WorkDesc {
        let mut arena = self.arena.lock().unwrap();
        let stage = device_bytes(self.slot_bytes / 16);
        let frame_stage = device_bytes(self.slot_bytes / 16);
        let channels: Box<[ChannelDesc]> = if self.nranks > 1 {
            let stages = (device_ptr(&stage), device_ptr(&frame_stage));
            self.channels(coll, rank, part, peer_or_root, stages.0, stages.1).into()
        } else {
            Box::new([])
        };
        let status: Box<[AtomicU32; STATUS_WORDS]> = Box::default();
        let work = WorkDesc {
            coll: coll as u32,
            rank: rank as u32,
            nranks: self.nranks as u32,
            peer_or_root: peer_or_root as u32,
            src,
            dst,
            count: count as u64,
            frame_elems: frame_elems as u64,
            part: part as u32,
            nparts: self.nparts as u32,
            channels: if channels.is_empty() {
                std::ptr::null()
            } else {
                channels.as_ptr()
            },
            status: status[0].as_ptr(),
            scalar: u64::from((1.0 / self.nranks as f32).to_bits()),
            scalar_at: std::ptr::null(),
        };
        arena.stages.push(stage);
        arena.stages.push(frame_stage);
        arena.channels.push(channels);
        arena.status.push(status);
        work
    }

    /// The failure recorded in `work`'s status record, if any (after a launch).
    pub fn failure(&self, work: &WorkDesc) -> Option<Failure> {
        // SAFETY: the record is one of the arena's, alive as long as the net; read between
        // launches.
        let r: [u32; STATUS_WORDS] = std::array::from_fn(|i| unsafe { work.status.add(i).read_volatile() });
        Failure::from_record(r, "(reason not recorded)")
    }

    /// Runs `warp_fn(w, i)` as block `i` of `warps` blocks, all at once.
    pub fn launch(&self, warps: usize, warp_fn: impl Fn(SimWarp<WIDTH>, usize) + Sync) -> Result<(), SimError> {
        let mut cfg = LaunchConfig::new(warps as u32, WIDTH).with_timeout(Duration::from_secs(30));
        cfg.co_resident_blocks = warps as u32;
        launch::<WIDTH>(cfg, |w| warp_fn(w, w.block_idx() as usize))
    }

    /// Runs every list of `warps` with [`run_works`] (one block each); each warp's result.
    pub fn run<T: Split, O: RedOp, E: Compression>(&self, warps: &[Vec<WorkDesc>]) -> Vec<Result<(), Failure>> {
        self.run_on::<T, O, E>(warps, Channel::Warp)
    }

    /// [`Net::run`] with each list driven by a team of the `channel`'s kind.
    pub fn run_on<T: Split, O: RedOp, E: Compression>(
        &self,
        lists: &[Vec<WorkDesc>],
        channel: Channel,
    ) -> Vec<Result<(), Failure>> {
        let results = Mutex::new(vec![Ok(()); lists.len()]);
        let shared = Shared(lists);
        let record = |i: usize, leader: bool, result| {
            if leader {
                results.lock().unwrap()[i] = result;
            }
        };
        let mut cfg = LaunchConfig::new(lists.len() as u32, WIDTH).with_timeout(Duration::from_secs(30));
        cfg.co_resident_blocks = lists.len() as u32;
        let launched = match channel {
            // SAFETY (both): the descriptors point at the net's memory and the test's buffers,
            // laid out by the conventions (the test's contract).
            Channel::Warp => launch::<WIDTH>(cfg, |w| {
                let i = w.block_idx() as usize;
                let result = unsafe { run_works::<_, T, O, E>(w, &shared.get()[i]) };
                record(i, zipcoll_targets::Lanes::lane_id(w) == 0, result);
            }),
            Channel::Block(threads) => {
                cfg.block_dim = threads;
                cfg.shared_bytes = (BLOCK_TEAM_BYTES + coder_scratch_bytes(threads)) as u32;
                launch::<WIDTH>(cfg, |w| {
                    let i = w.block_idx() as usize;
                    let (base, len) = w.shared_mem();
                    // SAFETY: the block's own shared memory, for the team alone.
                    let team = unsafe { Block::new(w, base, len as usize) }.expect("a block team");
                    let result = unsafe { run_works::<_, T, O, E>(team, &shared.get()[i]) };
                    record(i, team.rank() == 0, result);
                })
            }
        };
        launched.unwrap();
        results.into_inner().unwrap()
    }
}
