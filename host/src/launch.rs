//! A kernel launch described independently of the backend that runs it: the buffers it uses
//! and its parameter list, which the CUDA and HIP runners turn into driver calls.
//!
//! ```text
//! Launch { grid_dim, block_dim, shared_bytes,
//!          bufs:   [In(src0), In(src1), Out(n_bytes)],      // uploaded / allocated zeroed
//!          params: [Buf(0), Buf(1), Buf(2), U64(n), U32(nranks)] }
//! run(...) -> [contents of each Out buffer, in order]
//! ```
//!
//! On AMD the runner adds the two leading `block_dim, grid_dim` parameters of the AMD kernel ABI;
//! `params` lists only the kernel's own parameters.

/// A device buffer of a launch.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Buf<'a> {
    /// Uploaded from these host bytes before the launch.
    In(&'a [u8]),
    /// This many zeroed bytes, downloaded after the launch.
    Out(usize),
}

/// One kernel parameter.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Param {
    /// The device address of buffer `i` of [`Launch::bufs`].
    Buf(usize),
    /// A 32-bit integer.
    U32(u32),
    /// A 64-bit integer (`usize` on the 64-bit GPU targets).
    U64(u64),
}

/// Geometry, buffers and parameters of one launch.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Launch<'a> {
    /// Blocks in the grid.
    pub grid_dim: u32,
    /// Threads per block.
    pub block_dim: u32,
    /// Dynamic shared memory per block, in bytes.
    pub shared_bytes: u32,
    /// The buffers, referred to by index from [`Param::Buf`].
    pub bufs: &'a [Buf<'a>],
    /// The kernel's parameters, in order.
    pub params: &'a [Param],
}
