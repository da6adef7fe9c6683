//! One rank's connections, whatever the transport: for every peer `q` and part (channel) `p`,
//! the FIFO this rank sends to `q` on and the one it receives from `q` on, two staging buffers
//! (and over NET, whose FIFOs are in host memory, two frame stages beside them), the rank's
//! abort word, the wait limit and whether the FIFOs it receives on are trusted (P2P's:
//! RAW payloads used unverified, ARCHITECTURE.md "RAW over P2P"); and the [`ChannelDesc`]s the
//! collectives need, built from them.
//!
//! | channel                      | send FIFO            | recv FIFO             | staging            | used by                    |
//! |------------------------------|----------------------|-----------------------|--------------------|----------------------------|
//! | [`Fabric::ring`]`(p)`        | to `rank + 1`        | from `rank - 1`       | send side of `rank + 1` | ring collectives, reduce, broadcast |
//! | [`Fabric::peers`]`(p)[d]`    | to `rank + d`        | from `rank - d`       | send side of `rank + d` | two-shot all_reduce, all_to_all (entry 0 unused) |
//! | [`Fabric::sender`]`(q, p)`   | to `q`               | none                  | send side of `q`   | send                       |
//! | [`Fabric::receiver`]`(q, p)` | none                 | from `q`              | recv side of `q`   | recv                       |
//!
//! Connections are shared by every collective: only one collective of a communicator runs at a
//! time (calls are ordered), and each FIFO's step counters simply continue. The two staging
//! buffers per peer keep a send and a receive of one group (two warps) apart.

use zipcoll_primitives::conn::{ChannelDesc, ConnDesc, CONTROL_BYTES, NSLOTS};

/// A FIFO that does not exist (the absent side of a send-only or receive-only channel).
pub(crate) const NO_CONN: ConnDesc = ConnDesc {
    slots: core::ptr::null_mut(),
    head: core::ptr::null_mut(),
    tail: core::ptr::null_mut(),
    slot_bytes: 0,
};

/// One rank's connections (see the module table). Pointers are in the address space the
/// kernels run in: host memory for the simulator, device or mapped memory for GPUs.
pub(crate) struct Fabric {
    pub rank: usize,
    pub nranks: usize,
    pub parts: usize,
    /// `send[q * parts + p]`: the FIFO to `q` of part `p` (`q == rank`: the loopback FIFO, used
    /// only by the ring of a single rank: sends and receives to self are refused at the call).
    pub send: Vec<ConnDesc>,
    /// `recv[q * parts + p]`: the FIFO from `q` of part `p`.
    pub recv: Vec<ConnDesc>,
    /// `stage[(q * parts + p) * 2 + side]`, side 0 for sending to `q`, 1 for receiving from it.
    pub stage: Vec<*mut u8>,
    pub stage_bytes: u64,
    /// Indexed as `stage`: the frame stages (`ChannelDesc::frame_stage`) of FIFOs in host memory
    /// (NET's), or empty: frames are coded in their slots.
    pub frame_stage: Vec<*mut u8>,
    pub abort: *mut u32,
    pub timeout_ns: u64,
    /// Whether the recv FIFOs are trusted (`ChannelDesc::trusted`): P2P's, unless
    /// `Config::verify_p2p`.
    pub trusted: bool,
}

// SAFETY: the pointers are handed to kernels only; the fabric itself never dereferences them.
unsafe impl Send for Fabric {}
// SAFETY: as above.
unsafe impl Sync for Fabric {}

impl Fabric {
    fn at(&self, q: usize, p: usize) -> usize {
        q * self.parts + p
    }

    /// The channel over `send` and `recv` with staging buffer (and frame stage) `stage`, an
    /// index into [`Fabric::stage`].
    fn channel(&self, send: ConnDesc, recv: ConnDesc, stage: usize) -> ChannelDesc {
        ChannelDesc {
            send,
            recv,
            stage: self.stage[stage],
            stage_bytes: self.stage_bytes,
            abort: self.abort,
            codec: 0,
            timeout_ns: self.timeout_ns,
            trusted: u64::from(self.trusted && recv.present()),
            frame_stage: self.frame_stage.get(stage).copied().unwrap_or(core::ptr::null_mut()),
        }
    }

    /// The rank `d` places after this one.
    fn ahead(&self, d: usize) -> usize {
        (self.rank + d) % self.nranks
    }

    /// The rank `d` places before this one.
    fn behind(&self, d: usize) -> usize {
        (self.rank + self.nranks - d % self.nranks) % self.nranks
    }

    /// Part `p`'s ring channel.
    pub fn ring(&self, p: usize) -> ChannelDesc {
        self.peer(1, p)
    }

    /// Part `p`'s channel to `rank + d` and from `rank - d`.
    fn peer(&self, d: usize, p: usize) -> ChannelDesc {
        let (next, prev) = (self.ahead(d), self.behind(d));
        let send = self.send[self.at(next, p)];
        let recv = self.recv[self.at(prev, p)];
        self.channel(send, recv, self.at(next, p) * 2)
    }

    /// Part `p`'s channels by distance: entry `d` sends to `rank + d` and receives from
    /// `rank - d` (entry 0 has no FIFOs).
    pub fn peers(&self, p: usize) -> Vec<ChannelDesc> {
        (0..self.nranks)
            .map(|d| {
                if d == 0 {
                    self.channel(NO_CONN, NO_CONN, self.at(self.rank, p) * 2)
                } else {
                    self.peer(d, p)
                }
            })
            .collect()
    }

    /// Part `p`'s send-only channel to `q`.
    pub fn sender(&self, q: usize, p: usize) -> ChannelDesc {
        self.channel(self.send[self.at(q, p)], NO_CONN, self.at(q, p) * 2)
    }

    /// Part `p`'s receive-only channel from `q`.
    pub fn receiver(&self, q: usize, p: usize) -> ChannelDesc {
        self.channel(NO_CONN, self.recv[self.at(q, p)], self.at(q, p) * 2 + 1)
    }
}

/// Where the FIFOs of one region lie: `n` FIFOs, their slots back to back, then a 128-byte
/// counter block per FIFO (`head` at 0, `tail` at 64: separate cache lines, as the two are
/// written by different ranks), then a 128-byte control block ([`Control`]: rank 0's is the
/// communicator's over SIM and P2P, where every rank maps rank 0's region).
///
/// | offset                                  | bytes                   | holds              |
/// |-----------------------------------------|-------------------------|--------------------|
/// | `i * NSLOTS * slot`                     | `NSLOTS * slot`         | FIFO `i`'s slots   |
/// | `n * NSLOTS * slot + 128 i`             | 8                       | FIFO `i`'s `head`  |
/// | `n * NSLOTS * slot + 128 i + 64`        | 8                       | FIFO `i`'s `tail`  |
/// | `n * (NSLOTS * slot + 128)`             | 128                     | the control block  |
#[derive(Clone, Copy, Debug)]
pub(crate) struct FifoLayout {
    pub n: usize,
    pub slot: u64,
}

impl FifoLayout {
    fn slots_bytes(&self) -> u64 {
        NSLOTS * self.slot
    }

    /// Bytes of the region.
    pub fn bytes(&self) -> usize {
        self.n * (self.slots_bytes() as usize + 128) + CONTROL_BYTES
    }

    /// The control block of the region at `base`.
    pub fn control(&self, base: u64) -> u64 {
        base + self.n as u64 * (self.slots_bytes() + 128)
    }

    /// FIFO `i` of the region at `base` (zeroed memory is an empty FIFO).
    pub fn desc(&self, base: u64, i: usize) -> ConnDesc {
        let counters = base + self.n as u64 * self.slots_bytes() + 128 * i as u64;
        ConnDesc {
            slots: (base + i as u64 * self.slots_bytes()) as *mut u8,
            head: counters as *mut u64,
            tail: (counters + 64) as *mut u64,
            slot_bytes: self.slot,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fabric(trusted: bool, staged: bool) -> Fabric {
        let layout = FifoLayout { n: 4, slot: 256 };
        let descs: Vec<ConnDesc> = (0..4).map(|i| layout.desc(1 << 20, i)).collect();
        Fabric {
            rank: 0,
            nranks: 2,
            parts: 2,
            send: descs.clone(),
            recv: descs,
            stage: (0..8).map(|i| (4096 + 256 * i) as *mut u8).collect(),
            stage_bytes: 256,
            frame_stage: match staged {
                true => (0..8).map(|i| (8192 + 256 * i) as *mut u8).collect(),
                false => Vec::new(),
            },
            abort: std::ptr::null_mut(),
            timeout_ns: 1,
            trusted,
        }
    }

    #[test]
    fn only_channels_that_receive_on_trusted_fifos_are_trusted() {
        let trusted = fabric(true, false);
        for p in 0..2 {
            assert_eq!(trusted.ring(p).trusted, 1);
            assert_eq!(trusted.receiver(1, p).trusted, 1);
            assert_eq!(trusted.sender(1, p).trusted, 0, "no recv side");
            assert_eq!(trusted.peers(p)[0].trusted, 0, "entry 0 has no FIFOs");
            assert_eq!(trusted.peers(p)[1].trusted, 1);
        }
        let verified = fabric(false, false);
        assert_eq!(verified.ring(0).trusted, 0);
        assert_eq!(verified.receiver(1, 1).trusted, 0);
    }

    #[test]
    fn frame_stages_pair_with_staging_buffers_and_are_null_without_them() {
        let staged = fabric(false, true);
        for p in 0..2 {
            let ring = staged.ring(p);
            assert_eq!(ring.frame_stage as usize - ring.stage as usize, 8192 - 4096);
            let (tx, rx) = (staged.sender(1, p), staged.receiver(1, p));
            assert_eq!(tx.frame_stage as usize - tx.stage as usize, 8192 - 4096);
            assert_eq!(rx.frame_stage as usize - rx.stage as usize, 8192 - 4096);
            assert_ne!(
                tx.frame_stage, rx.frame_stage,
                "a send and a receive of one group run at once"
            );
        }
        assert!(fabric(true, false).ring(0).frame_stage.is_null());
    }
}
