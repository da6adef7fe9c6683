//! The CPU simulator's warp semantics, checked value by value at both widths: shuffles,
//! votes, match, active mask, barriers, shared memory, ordered memory and atomics across
//! lanes and blocks, and the errors it reports for broken kernels.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;
use zipcoll_targets::sim::{launch, LaunchConfig, SimError, SimWarp};
use zipcoll_targets::{AtomicOrder, Grid, Lanes, Memory, Scope, SharedMem, Warp};

/// Runs `f` on one block of `threads` threads of width `W` and returns each thread's result.
fn per_thread<const W: u32, R: Copy + Default + Send>(threads: u32, f: impl Fn(SimWarp<W>) -> R + Sync) -> Vec<R> {
    let out = Mutex::new(vec![R::default(); threads as usize]);
    launch::<W>(LaunchConfig::new(1, threads), |w| {
        let r = f(w);
        out.lock().unwrap()[w.thread_idx() as usize] = r;
    })
    .unwrap();
    out.into_inner().unwrap()
}

fn shuffles<const W: u32>() {
    let width = W as usize;
    let value = |lane: usize| (lane as u32).wrapping_mul(2654435761) ^ 0x5a5a;
    let idx = per_thread::<W, u32>(W, |w| {
        w.shfl_idx(SimWarp::<W>::FULL, value(w.lane_id() as usize), w.lane_id() * 5 + 3)
    });
    for (l, v) in idx.iter().enumerate() {
        assert_eq!(*v, value((l * 5 + 3) % width), "shfl_idx lane {l}");
    }
    for m in 0..W + 3 {
        let got = per_thread::<W, u32>(W, |w| w.shfl_xor(SimWarp::<W>::FULL, value(w.lane_id() as usize), m));
        for (l, v) in got.iter().enumerate() {
            let src = l ^ m as usize;
            assert_eq!(*v, value(if src < width { src } else { l }), "shfl_xor m={m} lane {l}");
        }
    }
    for d in [0, 1, 5, W - 1, W] {
        let up = per_thread::<W, u32>(W, |w| w.shfl_up_u32(SimWarp::<W>::FULL, value(w.lane_id() as usize), d));
        for (l, v) in up.iter().enumerate() {
            assert_eq!(
                *v,
                value(if l >= d as usize { l - d as usize } else { l }),
                "shfl_up d={d} lane {l}"
            );
        }
    }
    let wide = per_thread::<W, u64>(W, |w| w.shfl_xor(SimWarp::<W>::FULL, (w.lane_id() as u64) << 40 | 7, 1));
    for (l, v) in wide.iter().enumerate() {
        assert_eq!(*v, ((l ^ 1) as u64) << 40 | 7, "64-bit shuffle moves both halves");
    }
}

#[test]
fn shuffles_follow_cuda_semantics_at_both_widths() {
    shuffles::<32>();
    shuffles::<64>();
}

fn votes<const W: u32>() {
    let full = SimWarp::<W>::FULL;
    let r = per_thread::<W, (u64, bool, bool)>(W, |w| {
        let l = w.lane_id();
        (
            w.ballot(full, l % 3 == 0),
            w.any(full, l == W - 1),
            w.all(full, l < W - 1),
        )
    });
    let threes = (0..W).filter(|l| l % 3 == 0).fold(0u64, |m, l| m | 1 << l);
    for (ballot, any, all) in r.iter() {
        assert_eq!(*ballot, threes);
        assert!(*any);
        assert!(!*all);
    }
    // A sub-warp: only the low 16 lanes take part, with a mask that says so.
    let r = per_thread::<W, u64>(W, |w| {
        if w.lane_id() < 16 {
            w.ballot(0xffff, w.lane_id() % 2 == 1)
        } else {
            0
        }
    });
    assert!(r[..16].iter().all(|&m| m == 0xaaaa));
}

#[test]
fn votes_and_match_at_both_widths() {
    votes::<32>();
    votes::<64>();
}

#[test]
fn active_mask_is_the_converged_lanes() {
    let r = per_thread::<32, u64>(32, |w| {
        if w.lane_id() < 10 {
            w.active_mask()
        } else {
            w.active_mask() << 32
        }
    });
    assert!(r[..10].iter().all(|&m| m == 0x3ff));
    assert!(r[10..].iter().all(|&m| m == 0xffff_fc00 << 32));
}

#[test]
fn block_sync_orders_shared_memory_and_unwritten_shared_memory_is_poisoned() {
    let out = Mutex::new(vec![0u32; 96]);
    launch::<32>(LaunchConfig::new(2, 96).with_shared_bytes(96 * 4 + 4), |w| {
        let (base, bytes) = w.shared_mem();
        assert_eq!(bytes, 96 * 4 + 4);
        let smem = base.cast::<u32>();
        let t = w.thread_idx();
        // SAFETY: every thread writes its own word; reads happen after the barrier.
        unsafe { smem.add(t as usize).write(t * 10 + w.block_idx()) };
        w.block_sync();
        let next = unsafe { smem.add(((t + 1) % 96) as usize).read() };
        let poison = unsafe { smem.add(96).read() };
        assert_eq!(poison, 0xA5A5_A5A5);
        if w.block_idx() == 1 {
            out.lock().unwrap()[t as usize] = next;
        }
    })
    .unwrap();
    let out = out.into_inner().unwrap();
    for (t, v) in out.iter().enumerate() {
        assert_eq!(*v, ((t as u32 + 1) % 96) * 10 + 1);
    }
}

#[test]
fn ordered_memory_and_atomics_across_lanes_and_blocks() {
    let flag = AtomicU32::new(0);
    let data = AtomicU64::new(0);
    let counter = AtomicU32::new(0);
    let seen = AtomicU64::new(0);
    let max = AtomicU32::new(0);
    launch::<32>(LaunchConfig::new(4, 64), |w| unsafe {
        let (fp, dp) = (flag.as_ptr(), data.as_ptr());
        // Block 3 thread 5 publishes; block 0 thread 63 (another warp, another block) waits.
        if w.block_idx() == 3 && w.thread_idx() == 5 {
            w.store_relaxed(dp, 0xdead_beef_u64, Scope::System);
            w.store_release(fp, 1u32, Scope::System);
        }
        if w.block_idx() == 0 && w.thread_idx() == 63 {
            while w.load_acquire(fp, Scope::System) == 0 {}
            seen.store(w.load_relaxed(dp, Scope::System), Ordering::Relaxed);
        }
        w.atomic_add(counter.as_ptr(), 1u32, AtomicOrder::Relaxed, Scope::Gpu);
        let mut cur = w.load_volatile(max.as_ptr());
        let mine = w.global_idx() as u32;
        while cur < mine {
            let old = w.atomic_cas(max.as_ptr(), cur, mine, AtomicOrder::AcqRel, Scope::Gpu);
            if old == cur {
                break;
            }
            cur = old;
        }
    })
    .unwrap();
    assert_eq!(seen.load(Ordering::Relaxed), 0xdead_beef);
    assert_eq!(counter.load(Ordering::Relaxed), 4 * 64);
    assert_eq!(max.load(Ordering::Relaxed), 4 * 64 - 1);
    let word = AtomicU64::new(5);
    launch::<64>(LaunchConfig::new(1, 1), |w| unsafe {
        assert_eq!(
            w.atomic_cas(word.as_ptr(), 5u64, 9, AtomicOrder::Acquire, Scope::Block),
            5
        );
        w.fence_acq_rel(Scope::Gpu);
        w.store_volatile(word.as_ptr(), 11u64);
    })
    .unwrap();
    assert_eq!(word.load(Ordering::Relaxed), 11);
}

#[test]
fn partial_warps_and_geometry() {
    // 40 threads = one full warp of 32 and a warp of 8 lanes.
    let r = per_thread::<32, (u32, u32, u64)>(40, |w| {
        let mask = if w.warp_idx() == 0 { SimWarp::<32>::FULL } else { 0xff };
        (w.warp_idx(), w.warps_per_block(), w.ballot(mask, true))
    });
    assert!(r[..32]
        .iter()
        .all(|&(wi, n, m)| wi == 0 && n == 2 && m == u32::MAX as u64));
    assert!(r[32..].iter().all(|&(wi, n, m)| wi == 1 && n == 2 && m == 0xff));
    let ids = Mutex::new(Vec::new());
    launch::<32>(LaunchConfig::new(3, 5), |w| {
        ids.lock()
            .unwrap()
            .push((w.global_idx(), w.global_threads(), w.grid_dim()))
    })
    .unwrap();
    let mut ids = ids.into_inner().unwrap();
    ids.sort();
    assert_eq!(ids, (0..15).map(|i| (i, 15, 3)).collect::<Vec<_>>());
}

#[test]
fn invalid_geometry_is_an_error() {
    assert!(matches!(
        launch::<32>(LaunchConfig::new(0, 32), |_| {}),
        Err(SimError::InvalidConfig(_))
    ));
    assert!(matches!(
        launch::<32>(LaunchConfig::new(1, 1025), |_| {}),
        Err(SimError::InvalidConfig(_))
    ));
}

#[test]
fn a_barrier_nobody_else_reaches_is_a_deadlock() {
    // Thread 32 waits at the block barrier while the rest of its warp waits for it in a warp
    // sync: neither can complete.
    let r = launch::<32>(LaunchConfig::new(1, 64), |w| {
        if w.thread_idx() == 32 {
            w.block_sync();
        } else if w.warp_idx() == 1 {
            w.sync(SimWarp::<32>::FULL);
        }
    });
    match r {
        Err(SimError::Deadlock(where_)) => assert!(
            where_.contains("thread 33: Sync") && where_.contains("thread 32: block_sync"),
            "{where_}"
        ),
        other => panic!("expected a deadlock, got {other:?}"),
    }
}

#[test]
fn spinning_without_progress_times_out() {
    let never = AtomicU32::new(0);
    let r = launch::<32>(
        LaunchConfig::new(1, 32).with_timeout(Duration::from_millis(200)),
        |w| unsafe { while w.load_acquire(never.as_ptr(), Scope::System) == 0 {} },
    );
    assert!(
        matches!(r, Err(SimError::Timeout(ref s)) if s.contains("polling memory")),
        "{r:?}"
    );
}

fn panic_message(f: impl FnOnce()) -> String {
    let e = catch_unwind(AssertUnwindSafe(f)).expect_err("the kernel must panic");
    e.downcast_ref::<String>()
        .cloned()
        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[test]
fn broken_warp_rules_panic_with_the_call_site() {
    let m = panic_message(|| {
        let _ = launch::<32>(LaunchConfig::new(1, 32), |w| {
            if w.lane_id() != 3 {
                w.shfl_xor(SimWarp::<32>::FULL, 1u32, 1);
            }
        });
    });
    assert!(m.contains("lane 3 exited") && m.contains("sim_warp.rs"), "{m}");
    let m = panic_message(|| {
        let _ = launch::<32>(LaunchConfig::new(1, 32), |w| {
            w.shfl_idx(0xffff_fffe, 1u32, 0);
        });
    });
    assert!(m.contains("omits the calling lane") || m.contains("not in mask"), "{m}");
    let m = panic_message(|| {
        let _ = launch::<32>(LaunchConfig::new(1, 32), |w| {
            if w.lane_id() < 16 {
                w.shfl_idx(0xffff, 1u32, 20);
            }
        });
    });
    assert!(m.contains("reads lane 20, which is not in mask"), "{m}");
    let m = panic_message(|| {
        let _ = launch::<32>(LaunchConfig::new(2, 32), |w| {
            assert!(w.block_idx() != 1, "kernel assertion in block 1")
        });
    });
    assert!(m.contains("kernel assertion in block 1"), "{m}");
}
