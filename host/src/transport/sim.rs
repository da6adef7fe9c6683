//! The SIM transport: simulated ranks of one process (one thread each) share FIFOs in host
//! memory, as GPUs share peer memory. Each rank allocates the FIFOs it receives on and
//! publishes them in a process-wide table under the communicator's magic; its peers look them
//! up after the bootstrap's allgather (which every rank enters only after publishing) and hold
//! them (`Arc`) for as long as they live, so a rank that leaves first frees nothing still in use.
//!
//! | memory (per rank `r`)           | written by                          | read by        |
//! |---------------------------------|-------------------------------------|----------------|
//! | recv FIFO from `q`, part `p`: slots, `tail` | rank `q`'s kernel (sender)   | rank `r`'s kernel |
//! | the same FIFO's `head`          | rank `r`'s kernel (receiver)        | rank `q`'s kernel |

use super::host_mem::HostBytes;
use crate::error::{Error, Result};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// The memory of the FIFOs one rank receives on (laid out by the communicator: FIFO
/// `q * parts + p` from rank `q`, part `p`; `q` = the rank itself is its loopback FIFO).
pub struct SimEndpoint {
    /// The region.
    pub region: HostBytes,
}

/// Endpoints alive in this process (see [`live_endpoints`]).
static LIVE: AtomicUsize = AtomicUsize::new(0);

impl SimEndpoint {
    /// A zeroed region of `bytes`.
    pub fn new(bytes: usize) -> Arc<SimEndpoint> {
        LIVE.fetch_add(1, Ordering::Relaxed);
        Arc::new(SimEndpoint {
            region: HostBytes::zeroed(bytes),
        })
    }
}

impl Drop for SimEndpoint {
    fn drop(&mut self) {
        LIVE.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Endpoints of this process whose memory is not freed yet: what the teardown-order test
/// watches (a rank's region must outlive its own communicator while a peer holds it, and be
/// freed after the last one).
#[doc(hidden)]
pub fn live_endpoints() -> usize {
    LIVE.load(Ordering::Relaxed)
}

type Table = Mutex<HashMap<(u64, usize), Arc<SimEndpoint>>>;

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(Default::default)
}

/// Publishes rank `rank`'s endpoint of communicator `magic`.
pub fn publish(magic: u64, rank: usize, e: &Arc<SimEndpoint>) {
    let mut t = table().lock().unwrap_or_else(PoisonError::into_inner);
    t.insert((magic, rank), Arc::clone(e));
}

/// Rank `rank`'s endpoint of communicator `magic`; an error when it is not in this process.
pub fn lookup(magic: u64, rank: usize) -> Result<Arc<SimEndpoint>> {
    let t = table().lock().unwrap_or_else(PoisonError::into_inner);
    t.get(&(magic, rank)).cloned().ok_or_else(|| {
        Error::InvalidArgument(format!(
            "the sim transport needs every rank in one process; rank {rank}'s FIFOs are not here \
             (use the net transport across processes)"
        ))
    })
}

/// Removes rank `rank`'s entry (its peers keep their `Arc`s).
pub fn withdraw(magic: u64, rank: usize) {
    let mut t = table().lock().unwrap_or_else(PoisonError::into_inner);
    t.remove(&(magic, rank));
}
