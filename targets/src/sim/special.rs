//! Thread position, block barrier and shared memory of the simulator.

use super::scheduler::{current, park, Park};
use super::SimWarp;
use crate::{Grid, SharedMem};

impl<const W: u32> Grid for SimWarp<W> {
    fn thread_idx(self) -> u32 {
        current().thread_idx
    }
    fn block_dim(self) -> u32 {
        current().block.block_dim
    }
    fn block_idx(self) -> u32 {
        current().block.block_idx
    }
    fn grid_dim(self) -> u32 {
        current().block.grid_dim
    }
    #[track_caller]
    fn block_sync(self) {
        park(Park::Barrier {
            site: core::panic::Location::caller(),
        });
    }
    fn clock_ns(self) -> u64 {
        static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        START.get_or_init(std::time::Instant::now).elapsed().as_nanos() as u64
    }
}

impl<const W: u32> SharedMem for SimWarp<W> {
    fn shared_mem(self) -> (*mut u8, u32) {
        let b = &current().block;
        (b.shared, b.shared_bytes)
    }
}

impl<const W: u32> crate::Thread for SimWarp<W> {}
