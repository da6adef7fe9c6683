//! The AMD backend: `core::arch::amdgpu` intrinsics and core atomics (`asm!` is not
//! supported on amdgpu).
//!
//! | file         | what                                                              |
//! |--------------|-------------------------------------------------------------------|
//! | `special.rs` | workitem/workgroup ids, geometry from the kernel ABI, `s_barrier` |
//! | `lanes.rs`   | `ds_bpermute` shuffles, `ballot`                                  |
//! | `memory.rs`  | loads, stores, fences and atomics through core atomics            |
//! | `abi.rs`     | the kernel ABI: leading `block_dim, grid_dim` parameters, panics  |
//!
//! Scopes: Rust atomics lower to LLVM's default (system) sync scope, so every [`crate::Scope`]
//! is served by system scope: never weaker than asked, sometimes slower.

mod abi;
mod lanes;
mod memory;
mod special;

/// A wavefront of `W` lanes: 64 on CDNA (gfx9: gfx942, gfx950), 32 on RDNA built with
/// `+wavefrontsize32`. Carries the launch geometry, which AMD kernels receive as parameters.
#[derive(Clone, Copy, Debug)]
pub struct Wave<const W: u32> {
    block_dim: u32,
    grid_dim: u32,
}

/// The wavefront of the CDNA targets zipcoll builds for (gfx942, gfx950).
pub type AmdWarp = Wave<64>;

impl<const W: u32> Wave<W> {
    /// The handle for a kernel launched with `grid_dim` blocks of `block_dim` threads: the two
    /// leading parameters of every AMD entry point (see `abi.rs`).
    #[inline(always)]
    pub fn from_launch(block_dim: u32, grid_dim: u32) -> Self {
        Self { block_dim, grid_dim }
    }
}
