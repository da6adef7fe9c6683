//! Test plumbing shared by the test binaries of this crate (`mod common;`, or
//! `#[path = "../common/mod.rs"] mod common;` from a binary in a folder): a deterministic random
//! source, a byte buffer that every simulated lane writes through a `LaneOut`, one-warp
//! launches, and coded sections built by one thread (`sections`). Each binary uses only part
//! of it.
#![allow(dead_code)]

pub mod sections;

use std::cell::UnsafeCell;
use std::sync::Mutex;
use zipcoll_device::block::Scratch;
use zipcoll_device::codec::LaneOut;
use zipcoll_targets::sim::{launch, LaunchConfig, SimWarp};
use zipcoll_targets::{Grid, SharedMem};

/// splitmix64: a small deterministic random source.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn next_u32(&mut self) -> u32 {
        self.next_u64() as u32
    }
    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
    /// Uniform in `[0, 1)`: 53 random bits.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// A standard normal sample (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        let (u1, u2) = (self.unit(), self.unit());
        (-2.0 * (1.0 - u1).ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
}

/// A byte buffer shared by the lanes of a simulated launch (lanes write disjoint bytes through
/// [`SharedBuf::out`], as on a GPU).
pub struct SharedBuf(UnsafeCell<Box<[u8]>>);

// SAFETY: lanes access the buffer only through `LaneOut`, whose contract is disjoint writes; the
// simulator runs the lanes of a block on one OS thread, and the buffer is read only after `launch`.
unsafe impl Sync for SharedBuf {}

impl SharedBuf {
    /// `len` bytes of `fill`.
    pub fn new(len: usize, fill: u8) -> Self {
        SharedBuf(UnsafeCell::new(vec![fill; len].into_boxed_slice()))
    }
    /// The whole buffer as a `LaneOut`.
    pub fn out(&self) -> LaneOut<'_> {
        // SAFETY: the box lives as long as `self`; writes go through `LaneOut` only.
        unsafe {
            let b = &mut *self.0.get();
            LaneOut::from_raw(b.as_mut_ptr(), b.len())
        }
    }
    /// The first `len` bytes (at most all) as a `LaneOut`: the rest is a guard band.
    pub fn out_prefix(&self, len: usize) -> LaneOut<'_> {
        // SAFETY: as `out`, over a prefix of the buffer.
        unsafe {
            let b = &mut *self.0.get();
            LaneOut::from_raw(b.as_mut_ptr(), len.min(b.len()))
        }
    }
    /// The bytes, once no lane writes any more.
    pub fn into_vec(self) -> Vec<u8> {
        self.0.into_inner().into_vec()
    }
}

/// Runs `f` on every lane of one warp of `W` lanes; returns every lane's result in lane order.
pub fn per_lane<const W: u32, R: Clone + Send>(f: impl Fn(SimWarp<W>) -> R + Sync) -> Vec<R> {
    let results: Mutex<Vec<Option<R>>> = Mutex::new(vec![None; W as usize]);
    launch::<W>(LaunchConfig::new(1, W), |w| {
        let r = f(w);
        let lane = zipcoll_targets::Lanes::lane_id(w) as usize;
        results.lock().unwrap()[lane] = Some(r);
    })
    .unwrap();
    results.into_inner().unwrap().into_iter().map(Option::unwrap).collect()
}

/// Runs `f` on every lane of one warp of `W` lanes; returns lane 0's result after checking
/// that every lane returned the same.
pub fn one_warp<const W: u32, R: Clone + PartialEq + std::fmt::Debug + Send>(f: impl Fn(SimWarp<W>) -> R + Sync) -> R {
    let results = per_lane::<W, R>(f);
    for (lane, r) in results.iter().enumerate() {
        assert_eq!(r, &results[0], "lane {lane} disagrees with lane 0");
    }
    results[0].clone()
}

/// The scratch of a simulated block.
pub fn scratch<const L: u32>(w: SimWarp<L>) -> Scratch {
    let (base, len) = w.shared_mem();
    // SAFETY: the simulator's per-block shared buffer, alive for the launch.
    unsafe { Scratch::new(base, len as usize) }
}

/// Runs `f` on one block of `threads` threads of `L`-lane warps with `shared` bytes of shared
/// memory; checks that every thread returned the same and returns it.
pub fn block<const L: u32, R: Clone + PartialEq + std::fmt::Debug + Send>(
    threads: u32,
    shared: usize,
    f: impl Fn(SimWarp<L>) -> R + Sync,
) -> R {
    let results: Mutex<Vec<Option<R>>> = Mutex::new(vec![None; threads as usize]);
    launch::<L>(LaunchConfig::new(1, threads).with_shared_bytes(shared as u32), |w| {
        let r = f(w);
        results.lock().unwrap()[w.thread_idx() as usize] = Some(r);
    })
    .unwrap();
    let all: Vec<R> = results.into_inner().unwrap().into_iter().map(Option::unwrap).collect();
    for (t, r) in all.iter().enumerate() {
        assert_eq!(r, &all[0], "thread {t} disagrees with thread 0");
    }
    all[0].clone()
}
