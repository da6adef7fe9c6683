//! [`Grid`]: where a thread sits in a launch, and the block barrier. [`SharedMem`]: the
//! block's dynamic shared memory, on the backends that expose it.
//!
//! Launches are one-dimensional: `grid_dim` blocks of `block_dim` threads; a block is split
//! into warps of [`crate::Lanes::WIDTH`] consecutive threads.

/// The position of this thread in a one-dimensional launch.
pub trait Grid: Copy {
    /// Index of this thread in its block, `0..block_dim`.
    fn thread_idx(self) -> u32;
    /// Threads per block.
    fn block_dim(self) -> u32;
    /// Index of this block in the grid, `0..grid_dim`.
    fn block_idx(self) -> u32;
    /// Blocks in the grid.
    fn grid_dim(self) -> u32;
    /// Barrier for every (non-exited) thread of the block; orders block-shared memory.
    fn block_sync(self);
    /// A wall clock in nanoseconds, for timeouts: monotonic within a launch, with a device-
    /// dependent resolution (about 1 us on NVIDIA's `%globaltimer`, 10 ns on AMD's 100 MHz
    /// `s_memrealtime`, the host's monotonic clock on the simulator). Only differences mean
    /// anything.
    fn clock_ns(self) -> u64;
}

/// The block's dynamic shared memory (sized at launch).
///
/// Implemented by the nvptx and sim backends. The amdgpu backend does not implement it yet:
/// rustc has no way to name a launch-sized LDS buffer on AMD (rust-lang/rust#135516), so kernels
/// that need shared memory say `W: Warp + SharedMem` and are not built for AMD.
pub trait SharedMem: Copy {
    /// Base of the block's dynamic shared memory (16-byte aligned) and its size in bytes.
    fn shared_mem(self) -> (*mut u8, u32);
}
