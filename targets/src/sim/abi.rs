//! Launching a kernel on the simulator: the sim's kernel ABI is a Rust closure per thread.

use super::scheduler::run_block;
use super::SimWarp;
use core::fmt;
use core::sync::atomic::{AtomicU32, Ordering};
use core::time::Duration;
use std::string::String;
use std::vec::Vec;

/// Geometry and limits of a simulated launch.
#[derive(Clone, Debug)]
pub struct LaunchConfig {
    /// Blocks in the grid (at least 1).
    pub grid_dim: u32,
    /// Threads per block, `1..=1024`.
    pub block_dim: u32,
    /// Dynamic shared memory per block, in bytes.
    pub shared_bytes: u32,
    /// Blocks that run at the same time (each on its own OS thread; the calling thread when
    /// only one runs at a time: `co_resident_blocks` 1 or a grid of one block), like a GPU's occupancy:
    /// blocks that wait on each other must fit in it.
    pub co_resident_blocks: u32,
    /// Stack per simulated thread.
    pub stack_bytes: usize,
    /// How long lanes may spin on memory with no other progress before [`SimError::Timeout`].
    pub timeout: Duration,
}

impl LaunchConfig {
    /// `grid_dim` blocks of `block_dim` threads, no shared memory, defaults for the rest.
    pub fn new(grid_dim: u32, block_dim: u32) -> Self {
        Self {
            grid_dim,
            block_dim,
            shared_bytes: 0,
            co_resident_blocks: 8,
            stack_bytes: 256 * 1024,
            timeout: Duration::from_secs(60),
        }
    }
    /// The same launch with `bytes` of dynamic shared memory per block.
    pub fn with_shared_bytes(mut self, bytes: u32) -> Self {
        self.shared_bytes = bytes;
        self
    }
    /// The same launch with another spin timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

/// Why a simulated launch failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SimError {
    /// The geometry is not launchable (say which part).
    InvalidConfig(String),
    /// A thread's stack could not be allocated.
    Stack(String),
    /// Every live thread of a block waits for something that cannot happen; where each waits.
    Deadlock(String),
    /// Threads spun on memory with no progress for longer than the timeout; where each waits.
    Timeout(String),
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::InvalidConfig(s) => write!(f, "invalid simulated launch: {s}"),
            SimError::Stack(s) => write!(f, "cannot allocate a simulated thread's stack: {s}"),
            SimError::Deadlock(s) => write!(f, "simulated kernel deadlocked: {s}"),
            SimError::Timeout(s) => write!(f, "simulated kernel made no progress before the timeout: {s}"),
        }
    }
}

impl std::error::Error for SimError {}

/// Runs `kernel` once per thread of the grid described by `cfg`, with warps of `W` lanes.
///
/// Returns when every thread has returned. A panic in a thread propagates out of `launch`.
pub fn launch<const W: u32>(cfg: LaunchConfig, kernel: impl Fn(SimWarp<W>) + Sync) -> Result<(), SimError> {
    if cfg.grid_dim == 0 || cfg.block_dim == 0 || cfg.block_dim > 1024 {
        return Err(SimError::InvalidConfig(std::format!(
            "grid_dim {} and block_dim {} (need grid_dim >= 1 and 1 <= block_dim <= 1024)",
            cfg.grid_dim,
            cfg.block_dim
        )));
    }
    let width = <SimWarp<W> as crate::Lanes>::WIDTH;
    let per_thread = |_thread: u32| kernel(SimWarp { _private: () });
    let next_block = AtomicU32::new(0);
    let workers = cfg.co_resident_blocks.clamp(1, cfg.grid_dim);
    if workers == 1 {
        // one block at a time: the calling thread runs them in turn, as a worker would (a
        // thread spawned per launch cost a launch of one warp about 100 us)
        for b in 0..cfg.grid_dim {
            run_block(&cfg, width, b, &per_thread)?;
        }
        return Ok(());
    }
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| loop {
                    let b = next_block.fetch_add(1, Ordering::Relaxed);
                    if b >= cfg.grid_dim {
                        return Ok(());
                    }
                    run_block(&cfg, width, b, &per_thread)?;
                })
            })
            .collect();
        let mut result = Ok(());
        for h in handles {
            match h.join() {
                Ok(r) => result = result.and(r),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        result
    })
}
