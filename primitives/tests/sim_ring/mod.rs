//! The simulator transport: every FIFO of a ring in host memory, and the ranks run as the
//! blocks of one `sim::launch` (`grid_dim = co_resident_blocks = nranks`, one warp each, block
//! `r` is rank `r`), so all ranks run at once on their own OS threads and share the FIFOs as
//! GPUs share peer memory. One launch (rather than one per rank) keeps setup and teardown in
//! one place and makes a stuck rank fail the launch.
//!
//! | memory (host)         | per                  | holds                                     |
//! |-----------------------|----------------------|-------------------------------------------|
//! | FIFO `e`              | directed edge `e -> e+1` | `NSLOTS` slots, `head`, `tail`        |
//! | staging buffer        | rank                 | one chunk                                 |
//! | status record         | rank                 | `STATUS_WORDS` words, zero = fine         |
//! | abort word            | launch               | raised by the first rank that fails       |

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;
use zipcoll_device::dtype::Split;
use zipcoll_device::reduce::RedOp;
use zipcoll_primitives::collectives::ring_all_reduce;
use zipcoll_primitives::conn::{ChannelDesc, ConnDesc, Failure, NSLOTS, STATUS_WORDS};
use zipcoll_primitives::prims::Compression;
use zipcoll_targets::sim::{launch, LaunchConfig, SimError, SimWarp};
use zipcoll_targets::Grid;

/// Lanes per warp in these tests.
pub const WIDTH: u32 = 32;

/// A value shared with the simulated ranks (raw pointers are not `Sync`).
struct Shared<T>(T);
// SAFETY: the simulated kernels access the pointed-to memory by the FIFO protocol only.
unsafe impl<T> Sync for Shared<T> {}

impl<T> Shared<T> {
    /// The value (a method, so that closures capture the whole `Shared`).
    fn get(&self) -> &T {
        &self.0
    }
}

/// Device-written memory: 16-byte words the kernels write through raw pointers.
type DeviceBytes = Vec<UnsafeCell<u128>>;

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

/// The FIFOs, staging buffers, status records and abort word of one ring.
pub struct Ring {
    nranks: usize,
    slot_bytes: usize,
    fifos: Vec<Fifo>,
    stages: Vec<DeviceBytes>,
    status: Vec<[AtomicU32; STATUS_WORDS]>,
    abort: AtomicU32,
    /// Nanoseconds a wait lasts before a timeout.
    pub timeout_ns: u64,
}

// SAFETY: the `UnsafeCell` memory is written only by the simulated ranks, through the FIFO
// protocol, and read by the host only between launches.
unsafe impl Sync for Ring {}

impl Ring {
    /// A ring of `nranks` with FIFOs of `NSLOTS` slots of `slot_bytes` (a multiple of 16) and
    /// staging buffers of a slot each.
    pub fn new(nranks: usize, slot_bytes: usize) -> Self {
        let words = slot_bytes / 16;
        Ring {
            nranks,
            slot_bytes,
            fifos: (0..nranks)
                .map(|_| Fifo {
                    slots: device_bytes(words * NSLOTS as usize),
                    head: AtomicU64::new(0),
                    tail: AtomicU64::new(0),
                })
                .collect(),
            stages: (0..nranks).map(|_| device_bytes(words)).collect(),
            status: (0..nranks).map(|_| Default::default()).collect(),
            abort: AtomicU32::new(0),
            timeout_ns: 20_000_000_000,
        }
    }

    /// The FIFO of edge `e -> e + 1`.
    fn conn(&self, e: usize) -> ConnDesc {
        let f = &self.fifos[e % self.nranks];
        ConnDesc {
            slots: device_ptr(&f.slots),
            head: f.head.as_ptr(),
            tail: f.tail.as_ptr(),
            slot_bytes: self.slot_bytes as u64,
        }
    }

    /// Rank `r`'s channel.
    pub fn channel(&self, r: usize) -> ChannelDesc {
        ChannelDesc {
            send: self.conn(r),
            recv: self.conn(r + self.nranks - 1),
            stage: device_ptr(&self.stages[r]),
            stage_bytes: self.slot_bytes as u64,
            abort: self.abort.as_ptr(),
            status: self.status[r][0].as_ptr(),
            timeout_ns: self.timeout_ns,
        }
    }

    /// Frames published on edge `e -> e + 1` so far.
    pub fn tail(&self, e: usize) -> u64 {
        self.fifos[e].tail.load(Ordering::Acquire)
    }

    /// The bytes of slot `s` of edge `e -> e + 1` (after the launch).
    pub fn slot(&self, e: usize, s: usize) -> Vec<u8> {
        // SAFETY: called between launches (`launch` returns after every rank), so nothing writes
        // the slots meanwhile.
        let bytes: Vec<u8> = self.fifos[e]
            .slots
            .iter()
            .flat_map(|w| unsafe { *w.get() }.to_le_bytes())
            .collect();
        bytes[s * self.slot_bytes..(s + 1) * self.slot_bytes].to_vec()
    }

    /// Each rank's failure, from its status record.
    pub fn failures(&self) -> Vec<Option<Failure>> {
        self.status
            .iter()
            .map(|r| Failure::from_record(r.each_ref().map(|w| w.load(Ordering::Acquire)), "(reason not recorded)"))
            .collect()
    }

    /// Runs `rank_fn(w, rank, channel)` as every rank at once (see the module docs).
    pub fn launch(&self, rank_fn: impl Fn(SimWarp<WIDTH>, usize, &ChannelDesc) + Sync) -> Result<(), SimError> {
        let channels = Shared((0..self.nranks).map(|r| self.channel(r)).collect::<Vec<_>>());
        let mut cfg = LaunchConfig::new(self.nranks as u32, WIDTH).with_timeout(Duration::from_secs(20));
        cfg.co_resident_blocks = self.nranks as u32;
        launch::<WIDTH>(cfg, |w| {
            let r = w.block_idx() as usize;
            rank_fn(w, r, &channels.get()[r]);
        })
    }

    /// Ring all_reduce of `inputs` (one per rank) with compression `E`; every rank's output.
    /// Panics if the launch or any rank fails.
    pub fn all_reduce<T: Split, O: RedOp, E: Compression>(
        &self,
        inputs: &[Vec<T::Bits>],
        frame_elems: usize,
    ) -> Vec<Vec<T::Bits>> {
        let n = inputs[0].len();
        let mut outputs: Vec<Vec<T::Bits>> = (0..self.nranks).map(|_| vec![T::Bits::default(); n]).collect();
        let dst = Shared(outputs.iter_mut().map(|o| o.as_mut_ptr()).collect::<Vec<_>>());
        let src = Shared(inputs.iter().map(|i| i.as_ptr()).collect::<Vec<_>>());
        self.launch(|w, r, ch| {
            // SAFETY: input and output `r` hold `n` elements and only rank `r` writes its output;
            // the channels follow the ring (`Ring::channel`).
            let result = unsafe {
                ring_all_reduce::<_, T, O, E>(w, ch, r, self.nranks, src.get()[r], dst.get()[r], n, frame_elems)
            };
            if let Err(f) = result {
                panic!("rank {r}: {f}");
            }
        })
        .unwrap();
        assert_eq!(self.failures(), vec![None; self.nranks]);
        outputs
    }
}
