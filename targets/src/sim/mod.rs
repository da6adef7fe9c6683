//! The CPU simulator: runs a whole grid on the host so device code is tested by `cargo test`.
//!
//! | GPU concept            | here                                                                |
//! |------------------------|---------------------------------------------------------------------|
//! | thread / lane          | a stackful coroutine ([`corosensei`]) with its own stack            |
//! | warp of 32 or 64 lanes | `SimWarp<32>` / `SimWarp<64>`: consecutive threads of a block       |
//! | warp operation         | every lane in the mask parks; the scheduler computes all results   |
//! | `block_sync`           | every live thread of the block parks; all resume together           |
//! | shared memory          | a per-block buffer, filled with `0xA5` so unwritten reads show      |
//! | block                  | runs on one OS thread; up to `co_resident_blocks` blocks at a time  |
//! |                        | (a grid of one block runs on the calling thread)                    |
//! | global memory          | host memory; ordered operations are host atomics                    |
//!
//! Lanes of a block run one at a time up to their next warp operation, barrier or ordered load,
//! so lanes meet at warp operations in lockstep at full warp width. A lane that breaks a warp
//! rule (a mask without itself, a read from a lane outside the mask, a lane exiting while
//! others wait for it) panics with the call site. A block whose lanes all wait for something
//! that cannot happen returns [`SimError::Deadlock`]; one whose lanes spin on memory with no
//! progress for `LaunchConfig::timeout` returns [`SimError::Timeout`].
//!
//! `active_mask` returns the lanes of the warp that reached the same `active_mask` call site in
//! the same scheduling round: the simulator's model of convergence.

mod abi;
mod lanes;
mod memory;
mod scheduler;
mod special;

pub use abi::{launch, LaunchConfig, SimError};

/// The simulator's warp of `W` lanes (32 or 64). A handle is valid only inside [`launch`].
#[derive(Clone, Copy, Debug)]
pub struct SimWarp<const W: u32> {
    _private: (),
}
