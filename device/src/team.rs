//! [`Team`]: the threads that drive one channel together, a warp or a whole thread block, and
//! what they do together. The communication primitives are written once against it.
//!
//! | team            | `rank()`      | `size()`      | `barrier()`   | `sum_u32`, `leader_value`      | `solo(f)`                         | `codec_scratch()` |
//! |-----------------|---------------|---------------|---------------|-------------------------------|-----------------------------------|-------------------|
//! | any [`Warp`]    | lane          | `WIDTH`       | warp sync     | shuffles                      | `f(warp)` on every lane           | `None`            |
//! | [`Block<W>`]    | thread in block | `block_dim` | block barrier | through shared memory ([`BLOCK_TEAM_BYTES`]) | `f` on warp 0, its result shared with every thread | the shared memory after the team's |
//!
//! Rank 0 is the team's leader: the thread that polls and publishes a FIFO's counters. Every
//! method is called by every thread of the team, converged, with the same arguments (the value
//! a reduction takes excepted).
//!
//! ```
//! use zipcoll_device::team::{Block, Team, BLOCK_TEAM_BYTES};
//! use zipcoll_targets::sim::{launch, LaunchConfig, SimWarp};
//! use zipcoll_targets::SharedMem;
//! use std::sync::atomic::{AtomicU32, Ordering};
//! let got = AtomicU32::new(0);
//! let cfg = LaunchConfig::new(1, 128).with_shared_bytes(BLOCK_TEAM_BYTES as u32);
//! launch::<32>(cfg, |w: SimWarp<32>| {
//!     let (base, len) = w.shared_mem();
//!     let team = unsafe { Block::new(w, base, len as usize) }.unwrap();
//!     let total = team.sum_u32(team.rank());
//!     let seven = team.solo(|_warp| 7u64);
//!     if team.rank() == 0 {
//!         got.store(total + seven as u32, Ordering::Relaxed);
//!     }
//! })
//! .unwrap();
//! assert_eq!(got.load(Ordering::Relaxed), (0..128).sum::<u32>() + 7);
//! ```

use crate::bits::warp_sum_u32;
use crate::block::{block_sum, Scratch, REDUCE_WORDS};
use core::mem::{align_of, size_of, MaybeUninit};
use zipcoll_targets::{Warp, Word};

/// The threads driving one channel (see the module table).
pub trait Team: Copy {
    /// This thread's warp, for memory operations, the clock and warp-cooperative code.
    type Warp: Warp;
    /// Whether the team is a single warp (`solo` then runs on every thread).
    const IS_WARP: bool;

    /// This thread's warp handle.
    fn warp(self) -> Self::Warp;
    /// This thread's index in the team, `0..size()`; 0 is the leader.
    fn rank(self) -> u32;
    /// Threads in the team.
    fn size(self) -> u32;
    /// Waits for every thread of the team; orders memory among them (as CUDA's `__syncwarp` /
    /// `__syncthreads`).
    fn barrier(self);
    /// The wrapping sum of `v` over the team, on every thread.
    fn sum_u32(self, v: u32) -> u32;
    /// The leader's `v` on every thread.
    fn leader_value<V: Word>(self, v: V) -> V;
    /// Runs `f` with the team's first warp (every lane of it; on a warp team, the team itself)
    /// and returns its result on every thread of the team; the other warps wait. For the
    /// warp-cooperative code (the codecs) that a block-wide team runs on one warp.
    fn solo<R: Copy>(self, f: impl FnOnce(Self::Warp) -> R) -> R;
    /// The block-shared memory left to block-wide codecs (a block frame's tables): on a
    /// [`Block`], what follows the team's [`BLOCK_TEAM_BYTES`]; `None` on a warp, which codes
    /// warp frames only. The same on every thread; the codec that takes it owns it until it
    /// returns (every thread).
    fn codec_scratch(self) -> Option<Scratch>;
}

impl<W: Warp> Team for W {
    type Warp = W;
    const IS_WARP: bool = true;

    #[inline(always)]
    fn warp(self) -> W {
        self
    }
    #[inline(always)]
    fn rank(self) -> u32 {
        self.lane_id()
    }
    #[inline(always)]
    fn size(self) -> u32 {
        W::WIDTH
    }
    #[inline(always)]
    fn barrier(self) {
        zipcoll_targets::Lanes::sync(self, W::FULL);
    }
    #[inline(always)]
    fn sum_u32(self, v: u32) -> u32 {
        warp_sum_u32(self, v)
    }
    #[inline(always)]
    fn leader_value<V: Word>(self, v: V) -> V {
        self.shfl_idx(W::FULL, v, 0)
    }
    #[inline(always)]
    fn solo<R: Copy>(self, f: impl FnOnce(W) -> R) -> R {
        f(self)
    }
    #[inline(always)]
    fn codec_scratch(self) -> Option<Scratch> {
        None
    }
}

/// Bytes of the value [`Team::solo`] may share on a [`Block`] team.
pub const SHARE_BYTES: usize = 128;

/// Bytes of block-shared memory a [`Block`] team needs: the reductions' words, then the shared
/// value.
pub const BLOCK_TEAM_BYTES: usize = 4 * REDUCE_WORDS + SHARE_BYTES;

/// A whole thread block as one team (see the module table). Its shared memory: [`REDUCE_WORDS`]
/// u32 for the reductions, then [`SHARE_BYTES`] (16-byte aligned) for a shared value.
#[derive(Clone, Copy)]
pub struct Block<W> {
    w: W,
    /// `REDUCE_WORDS` u32 of block-shared memory, then the shared value's bytes.
    tmp: *mut u32,
    /// Bytes of block-shared memory at `tmp` in all (at least `BLOCK_TEAM_BYTES`).
    len: usize,
}

impl<W: Warp> Block<W> {
    /// The block of `w` as a team over the first [`BLOCK_TEAM_BYTES`] of `len` bytes of
    /// block-shared memory at `base`; `None` if they do not fit, `base` is not 16-byte aligned,
    /// or the block is not whole warps (at most [`REDUCE_WORDS`] of them).
    ///
    /// # Safety
    /// `base` is this block's shared memory, valid for `len` bytes, that nothing else uses while
    /// the team does; every thread of the block calls this with the same arguments.
    pub unsafe fn new(w: W, base: *mut u8, len: usize) -> Option<Self> {
        let whole = w.block_dim().is_multiple_of(W::WIDTH) && w.warps_per_block() as usize <= REDUCE_WORDS;
        let fits = len >= BLOCK_TEAM_BYTES && (base as usize).is_multiple_of(16);
        (whole && fits).then_some(Block {
            w,
            tmp: base.cast(),
            len,
        })
    }

    /// Where the shared value lives: after the reductions' words (16-byte aligned: `4 *
    /// REDUCE_WORDS` is a multiple of 16).
    fn share_ptr(self) -> *mut u8 {
        self.tmp.wrapping_add(REDUCE_WORDS).cast()
    }
}

impl<W: Warp> Team for Block<W> {
    type Warp = W;
    const IS_WARP: bool = false;

    #[inline(always)]
    fn warp(self) -> W {
        self.w
    }
    #[inline(always)]
    fn rank(self) -> u32 {
        self.w.thread_idx()
    }
    #[inline(always)]
    fn size(self) -> u32 {
        self.w.block_dim()
    }
    #[inline(always)]
    fn barrier(self) {
        self.w.block_sync();
    }
    #[inline(always)]
    fn sum_u32(self, v: u32) -> u32 {
        // SAFETY: `tmp` holds REDUCE_WORDS words of this block's shared memory used only by the
        // team, and the block is whole warps, at most REDUCE_WORDS (`new`'s checks).
        unsafe { block_sum(self.w, self.tmp, v) }
    }
    #[inline(always)]
    fn leader_value<V: Word>(self, v: V) -> V {
        self.solo(|w| w.shfl_idx(W::FULL, v, 0))
    }
    #[inline(always)]
    fn solo<R: Copy>(self, f: impl FnOnce(W) -> R) -> R {
        const {
            assert!(
                size_of::<R>() <= SHARE_BYTES && align_of::<R>() <= 16,
                "solo shares at most SHARE_BYTES"
            );
        }
        let at = self.share_ptr().cast::<MaybeUninit<R>>();
        // every thread: the previous use of the shared value is over before it is written
        self.w.block_sync();
        if self.w.warp_idx() == 0 {
            let r = f(self.w);
            if self.w.lane_id() == 0 {
                // SAFETY: `at` is SHARE_BYTES of the team's shared memory, 16-byte aligned (`new`),
                // which holds an `R` (the assert above); only lane 0 of warp 0 writes it.
                unsafe { at.write(MaybeUninit::new(r)) };
            }
        }
        // every thread: warp 0's lane 0 wrote the value before this barrier
        self.w.block_sync();
        // SAFETY: written before the barrier above and not written again before the next
        // `solo`'s first barrier; `R: Copy`, so the bytes are a whole `R`.
        unsafe { at.read().assume_init() }
    }
    #[inline(always)]
    fn codec_scratch(self) -> Option<Scratch> {
        let base = self.tmp.cast::<u8>().wrapping_add(BLOCK_TEAM_BYTES);
        // SAFETY: `new`'s contract: `len >= BLOCK_TEAM_BYTES` bytes of this block's shared
        // memory at `tmp`, used by the team alone; the team's own bytes come first.
        Some(unsafe { Scratch::new(base, self.len - BLOCK_TEAM_BYTES) })
    }
}
