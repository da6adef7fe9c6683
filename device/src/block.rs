//! Block algorithms: every thread of one block working together through block-shared memory
//! (CUDA shared memory; the simulator's per-block buffer). All functions here are called by
//! every thread of the block, converged at the call, with the same arguments; the block's
//! threads are whole warps.
//!
//! | item                      | what every thread gets                                          |
//! |---------------------------|-----------------------------------------------------------------|
//! | [`Scratch`], [`Region`]   | typed regions carved, in order, out of the block's shared memory |
//! | [`block_exclusive_scan`]  | the sum of `v` over the threads before it, and the total         |
//! | [`block_sum`], [`block_max`] | the sum / maximum of `v` over the block                       |
//! | [`block_any`]             | whether `pred` holds on any thread                              |
//!
//! Each reduction takes `tmp`, [`REDUCE_WORDS`] u32 of shared memory, and starts with a block
//! barrier, so consecutive reductions may reuse the same `tmp`.
//!
//! ```
//! use zipcoll_device::block::{block_exclusive_scan, Scratch, REDUCE_WORDS};
//! use zipcoll_targets::sim::{launch, LaunchConfig, SimWarp};
//! use zipcoll_targets::{Grid, SharedMem};
//! use std::sync::atomic::{AtomicU32, Ordering};
//! let out: Vec<AtomicU32> = (0..96).map(|_| 0.into()).collect();
//! launch::<32>(LaunchConfig::new(1, 96).with_shared_bytes(256), |w: SimWarp<32>| {
//!     let (base, len) = w.shared_mem();
//!     let mut scratch = unsafe { Scratch::new(base, len as usize) };
//!     let tmp = scratch.take::<u32>(REDUCE_WORDS).unwrap();
//!     let (before, total) = unsafe { block_exclusive_scan(w, tmp, 1) };
//!     out[w.thread_idx() as usize].store(before + 1000 * total, Ordering::Relaxed);
//! }).unwrap();
//! assert_eq!(out[5].load(Ordering::Relaxed), 5 + 96_000);
//! ```

use crate::bits::{warp_exclusive_scan, warp_max_u32, warp_sum_u32};
use zipcoll_targets::Warp;

/// u32 words of shared memory a reduction's `tmp` needs: one per warp of the largest block
/// (1024 threads of 32-lane warps).
pub const REDUCE_WORDS: usize = 32;

/// `len` values of `T` in block-shared memory, taken from a [`Scratch`]. Accesses are raw
/// (threads of the block share the region; a barrier orders one thread's writes before another's
/// reads), with the index checked in debug builds (the simulator's tests).
#[derive(Debug)]
pub struct Region<T> {
    ptr: *mut T,
    len: usize,
}

impl<T> Clone for Region<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Region<T> {}

impl<T: Copy> Region<T> {
    /// Values in the region.
    pub fn len(self) -> usize {
        self.len
    }
    /// True if the region holds no value.
    pub fn is_empty(self) -> bool {
        self.len == 0
    }
    /// The region's first value (for functions that take shared memory as a pointer).
    pub fn as_ptr(self) -> *mut T {
        self.ptr
    }
    /// The address of value `i`.
    ///
    /// # Safety
    /// `i < len`.
    #[inline(always)]
    pub unsafe fn at(self, i: usize) -> *mut T {
        debug_assert!(i < self.len, "shared index {i} of {}", self.len);
        // SAFETY: `i < len` (the caller): inside the region.
        unsafe { self.ptr.add(i) }
    }
    /// Value `i`.
    ///
    /// # Safety
    /// `i < len`, and no thread writes value `i` between the barrier that published it and this
    /// read.
    #[inline(always)]
    pub unsafe fn get(self, i: usize) -> T {
        // SAFETY: the caller's contract.
        unsafe { self.at(i).read() }
    }
    /// Writes value `i`.
    ///
    /// # Safety
    /// `i < len`, and no other thread reads or writes value `i` until the next barrier.
    #[inline(always)]
    pub unsafe fn set(self, i: usize, v: T) {
        // SAFETY: the caller's contract.
        unsafe { self.at(i).write(v) }
    }
}

/// The block's shared memory, handed out front to back in aligned, typed regions. Every thread
/// carves the same regions in the same order, so they agree on where each one is.
#[derive(Clone, Copy, Debug)]
pub struct Scratch {
    base: *mut u8,
    len: usize,
    used: usize,
}

impl Scratch {
    /// `len` bytes at `base`.
    ///
    /// # Safety
    /// `base` is the block's shared memory (or memory only this block's threads use), valid
    /// for `len` bytes for as long as the regions taken from it are used.
    pub unsafe fn new(base: *mut u8, len: usize) -> Self {
        Self { base, len, used: 0 }
    }
    /// The next `count` values of `T`, aligned for `T`; `None` when they do not fit.
    pub fn take<T>(&mut self, count: usize) -> Option<*mut T> {
        let align = core::mem::align_of::<T>();
        let start = self.used.checked_add(align - 1)? / align * align;
        let end = start.checked_add(count.checked_mul(core::mem::size_of::<T>())?)?;
        if end > self.len {
            return None;
        }
        self.used = end;
        // SAFETY: `start + count * size_of::<T>() <= len`: inside the region `new` was given.
        Some(unsafe { self.base.add(start) }.cast())
    }
    /// The next `count` values of `T` as a [`Region`]; `None` when they do not fit.
    pub fn region<T>(&mut self, count: usize) -> Option<Region<T>> {
        self.take::<T>(count).map(|ptr| Region { ptr, len: count })
    }
    /// Bytes in all.
    pub fn len(&self) -> usize {
        self.len
    }
    /// True if there are no bytes at all.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Bytes taken so far (including alignment padding).
    pub fn used(&self) -> usize {
        self.used
    }
}

/// The u32 at `p` in block-shared memory (e.g. a run of symbols a decoder staged there).
///
/// # Safety
/// `p` is 4-byte aligned, readable, and no thread writes it between the barrier that published
/// it and this read.
#[inline(always)]
pub unsafe fn shared_u32(p: *const u32) -> u32 {
    // SAFETY: the caller's contract.
    unsafe { p.read() }
}

/// The byte at `p` in block-shared memory (as [`shared_u32`]).
///
/// # Safety
/// As [`shared_u32`], for one byte.
#[inline(always)]
pub unsafe fn shared_u8(p: *const u8) -> u8 {
    // SAFETY: the caller's contract.
    unsafe { p.read() }
}

/// Exclusive prefix sum (wrapping) of `v` in thread order, and the block's total.
///
/// # Safety
/// `tmp` points to [`REDUCE_WORDS`] u32 of block-shared memory that no thread uses otherwise
/// during the call; the block has at most `REDUCE_WORDS` warps.
#[inline(always)]
pub unsafe fn block_exclusive_scan<W: Warp>(w: W, tmp: *mut u32, v: u32) -> (u32, u32) {
    let (before, warp_total) = warp_exclusive_scan(w, v);
    // lane l: the sum over lanes < l of its warp; every lane: its warp's total
    let warp = w.warp_idx() as usize;
    w.block_sync();
    if w.lane_id() == 0 {
        // SAFETY: `warp < REDUCE_WORDS` (contract); one writer per word.
        unsafe { tmp.add(warp).write(warp_total) };
    }
    w.block_sync();
    let (mut base, mut total) = (0u32, 0u32);
    for k in 0..w.warps_per_block() as usize {
        // SAFETY: written before the barrier above; read only until the next reduction's barrier.
        let t = unsafe { tmp.add(k).read() };
        if k < warp {
            base = base.wrapping_add(t);
        }
        total = total.wrapping_add(t);
    }
    (base.wrapping_add(before), total)
}

/// `op` over every thread's `v` (a commutative, associative `op`), on every thread, from each
/// warp's result `warp_value`.
///
/// # Safety
/// As [`block_exclusive_scan`].
#[inline(always)]
unsafe fn block_combine<W: Warp>(w: W, tmp: *mut u32, warp_value: u32, op: impl Fn(u32, u32) -> u32) -> u32 {
    w.block_sync();
    if w.lane_id() == 0 {
        // SAFETY: as in `block_exclusive_scan`.
        unsafe { tmp.add(w.warp_idx() as usize).write(warp_value) };
    }
    w.block_sync();
    // SAFETY: as in `block_exclusive_scan`; the block has at least one warp.
    let mut acc = unsafe { tmp.read() };
    for k in 1..w.warps_per_block() as usize {
        // SAFETY: as in `block_exclusive_scan`.
        acc = op(acc, unsafe { tmp.add(k).read() });
    }
    acc
}

/// Wrapping sum of `v` over the block.
///
/// # Safety
/// As [`block_exclusive_scan`].
#[inline(always)]
pub unsafe fn block_sum<W: Warp>(w: W, tmp: *mut u32, v: u32) -> u32 {
    // SAFETY: forwarded.
    unsafe { block_combine(w, tmp, warp_sum_u32(w, v), u32::wrapping_add) }
}

/// Maximum of `v` over the block.
///
/// # Safety
/// As [`block_exclusive_scan`].
#[inline(always)]
pub unsafe fn block_max<W: Warp>(w: W, tmp: *mut u32, v: u32) -> u32 {
    // SAFETY: forwarded.
    unsafe { block_combine(w, tmp, warp_max_u32(w, v), u32::max) }
}

/// True on every thread if `pred` holds on any thread of the block.
///
/// # Safety
/// As [`block_exclusive_scan`].
#[inline(always)]
pub unsafe fn block_any<W: Warp>(w: W, tmp: *mut u32, pred: bool) -> bool {
    // SAFETY: forwarded.
    unsafe { block_max(w, tmp, pred as u32) != 0 }
}
