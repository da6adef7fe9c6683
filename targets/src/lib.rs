//! The warp abstraction: lanes that execute in lockstep, and the memory operations that
//! communication kernels need, written once and implemented per vendor.
//!
//! | module    | lanes                    | built when                        | instructions from         |
//! |-----------|--------------------------|-----------------------------------|---------------------------|
//! | [`nvptx`] | 32 (a warp)              | `target_arch = "nvptx64"`         | `asm!` (PTX)              |
//! | `amdgpu`  | 64 or 32 (a wavefront)   | `target_arch = "amdgpu"`          | `core::arch::amdgpu`, LLVM |
//! | [`sim`]   | 32 or 64, chosen by type | feature `sim` (host, with `std`)  | CPU coroutines + atomics  |
//!
//! Device code is generic over [`Warp`] and written per lane, as in CUDA: each lane runs the
//! same function and meets the others at warp operations ([`Lanes`]) and block barriers
//! ([`Grid::block_sync`]); what a thread does alone with special instructions is [`Thread`].
//! Only this crate touches `asm!` or vendor intrinsics.
//!
//! ```
//! use zipcoll_targets::{Lanes, Warp};
//! /// Every lane returns the sum of `v` over all lanes of its warp.
//! fn warp_sum<W: Warp>(w: W, v: u32) -> u32 {
//!     let mut acc = v;
//!     let mut m = 1;
//!     while m < W::WIDTH {
//!         // each lane now holds the sum over its aligned group of 2*m lanes
//!         acc = acc.wrapping_add(w.shfl_xor(W::FULL, acc, m));
//!         m <<= 1;
//!     }
//!     acc
//! }
//! # #[cfg(feature = "sim")] {
//! use zipcoll_targets::sim::{launch, LaunchConfig, SimWarp};
//! use zipcoll_targets::Grid;
//! let out: Vec<std::sync::atomic::AtomicU32> = (0..64).map(|_| 0.into()).collect();
//! launch::<32>(LaunchConfig::new(1, 64), |w: SimWarp<32>| {
//!     let t = w.thread_idx();
//!     out[t as usize].store(warp_sum(w, t), std::sync::atomic::Ordering::Relaxed);
//! }).unwrap();
//! assert_eq!(out[0].load(std::sync::atomic::Ordering::Relaxed), (0..32).sum::<u32>());
//! assert_eq!(out[40].load(std::sync::atomic::Ordering::Relaxed), (32..64).sum::<u32>());
//! # }
//! ```
#![no_std]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(asm_experimental_arch, stdarch_nvptx, link_llvm_intrinsics)
)]
// The NVPTX warp operations are LLVM intrinsics (`nvptx/lanes.rs`).
#![cfg_attr(target_arch = "nvptx64", allow(internal_features))]
#![cfg_attr(target_arch = "amdgpu", feature(stdarch_amdgpu, core_intrinsics))]
// `core::intrinsics::abort` is the only way to trap (s_trap) on amdgpu without `asm!`.
#![cfg_attr(target_arch = "amdgpu", allow(internal_features))]

#[cfg(feature = "sim")]
extern crate std;

mod grid;
mod lanes;
mod memory;
mod thread;
mod word;

pub use grid::{Grid, SharedMem};
pub use lanes::{LaneMask, Lanes};
pub use memory::{Atom, AtomKind, AtomicOrder, Memory, Scope};
pub use thread::{Thread, V4};
pub use word::Word;

/// Everything a device algorithm may ask of the lanes running it.
pub trait Warp: Lanes + Memory + Grid + Thread {
    /// Index of this lane's warp within its block.
    #[inline(always)]
    fn warp_idx(self) -> u32 {
        self.thread_idx() / Self::WIDTH
    }
    /// Number of warps in a block (the last one may be partial).
    #[inline(always)]
    fn warps_per_block(self) -> u32 {
        self.block_dim().div_ceil(Self::WIDTH)
    }
    /// Global index of this thread across the grid.
    #[inline(always)]
    fn global_idx(self) -> usize {
        self.block_idx() as usize * self.block_dim() as usize + self.thread_idx() as usize
    }
    /// Number of threads in the grid.
    #[inline(always)]
    fn global_threads(self) -> usize {
        self.grid_dim() as usize * self.block_dim() as usize
    }
}
impl<W: Lanes + Memory + Grid + Thread> Warp for W {}

#[cfg(target_arch = "amdgpu")]
pub mod amdgpu;
#[cfg(target_arch = "nvptx64")]
pub mod nvptx;
#[cfg(feature = "sim")]
pub mod sim;
