//! The per-block scheduler: runs the lanes of one block as coroutines, one at a time, and
//! resolves warp operations and barriers once every lane involved has parked.

use super::abi::{LaunchConfig, SimError};
use crate::LaneMask;
use core::cell::{Cell, RefCell};
use core::fmt::Write as _;
use core::panic::Location;
use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use std::string::String;
use std::time::Instant;
use std::vec::Vec;

/// What the block's threads share: geometry and the shared-memory buffer.
pub(crate) struct BlockInfo {
    pub block_idx: u32,
    pub block_dim: u32,
    pub grid_dim: u32,
    pub shared: *mut u8,
    pub shared_bytes: u32,
}

/// One thread's view while it runs: its index, its block, and the way back to the scheduler.
pub(crate) struct LaneCtx<'b> {
    pub thread_idx: u32,
    pub block: &'b BlockInfo,
    yielder: Cell<*const Yielder<u64, Park>>,
}

std::thread_local! {
    static CURRENT: Cell<*const LaneCtx<'static>> = const { Cell::new(core::ptr::null()) };
    /// Stacks of lanes that finished, with the size asked for, for the next block this OS
    /// thread runs: mapping and unmapping 32 stacks cost a launch of one warp hundreds of
    /// microseconds (a fuzz target launches one per input).
    static STACKS: RefCell<Vec<(usize, DefaultStack)>> = const { RefCell::new(Vec::new()) };
}

/// Stacks kept per OS thread at most (of 256 KiB by default: 64 MiB of address space). Under
/// AddressSanitizer, corosensei's `sanitizer` feature must be on (fuzz/libfuzzer turns it on):
/// it clears a finished lane's stack of the poison its frames left, before the stack is reused.
const POOLED_STACKS: usize = 256;

/// A stack of `bytes` for a lane: a pooled one of that size, or a new one.
fn take_stack(bytes: usize) -> Result<DefaultStack, SimError> {
    let pooled = STACKS.with(|p| {
        let mut p = p.borrow_mut();
        let i = p.iter().rposition(|(b, _)| *b == bytes)?;
        Some(p.swap_remove(i).1)
    });
    match pooled {
        Some(stack) => Ok(stack),
        None => DefaultStack::new(bytes).map_err(|e| SimError::Stack(std::format!("{e}"))),
    }
}

/// Keeps `stack` (of `bytes` asked for) for a later block, up to [`POOLED_STACKS`].
fn give_stack(bytes: usize, stack: DefaultStack) {
    STACKS.with(|p| {
        let mut p = p.borrow_mut();
        if p.len() < POOLED_STACKS {
            p.push((bytes, stack));
        }
    });
}

/// The running lane's context.
///
/// Panics if called outside a simulated kernel: a `SimWarp` is only meaningful inside `launch`.
pub(crate) fn current() -> &'static LaneCtx<'static> {
    let p = CURRENT.with(Cell::get);
    assert!(!p.is_null(), "SimWarp used outside zipcoll_targets::sim::launch");
    // SAFETY: the scheduler sets CURRENT to a context that outlives the lane's resume, and
    // clears it when the lane parks; the reference does not escape a warp call.
    unsafe { &*p }
}

/// Suspends the running lane with `p`; returns the value the scheduler resumes it with.
pub(crate) fn park(p: Park) -> u64 {
    let y = current().yielder.get();
    // SAFETY: `yielder` was set by this lane's coroutine body and lives as long as the coroutine.
    unsafe { (*y).suspend(p) }
}

/// The warp operations that park a lane until every lane of its mask arrives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WarpOp {
    Sync,
    ShflIdx,
    ShflXor,
    ShflUp,
    Ballot,
}

/// Why a lane handed control back to the scheduler.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Park {
    Warp {
        op: WarpOp,
        mask: LaneMask,
        arg: u32,
        value: u64,
        site: &'static Location<'static>,
    },
    ActiveMask {
        site: &'static Location<'static>,
    },
    Barrier {
        site: &'static Location<'static>,
    },
    /// An ordered load: let the others run, then continue.
    Poll,
}

enum Status {
    Runnable(u64),
    Parked(Park),
    Done,
}

/// Runs block `block_idx` of `kernel` to completion.
pub(crate) fn run_block<F: Fn(u32) + Sync>(
    cfg: &LaunchConfig,
    width: u32,
    block_idx: u32,
    kernel: &F,
) -> Result<(), SimError> {
    let n = cfg.block_dim as usize;
    let mut shared = std::vec![0xA5A5_A5A5_A5A5_A5A5_A5A5_A5A5_A5A5_A5A5u128; (cfg.shared_bytes as usize).div_ceil(16)];
    let info = BlockInfo {
        block_idx,
        block_dim: cfg.block_dim,
        grid_dim: cfg.grid_dim,
        shared: shared.as_mut_ptr().cast(),
        shared_bytes: cfg.shared_bytes,
    };
    let ctxs: Vec<LaneCtx<'_>> = (0..n as u32)
        .map(|t| LaneCtx {
            thread_idx: t,
            block: &info,
            yielder: Cell::new(core::ptr::null()),
        })
        .collect();
    let mut lanes = Vec::with_capacity(n);
    for ctx in &ctxs {
        let stack = take_stack(cfg.stack_bytes)?;
        let body = move |y: &Yielder<u64, Park>, _: u64| {
            ctx.yielder.set(y);
            kernel(ctx.thread_idx)
        };
        // SAFETY: `body` borrows `ctxs`, `info` and `kernel`, which outlive `lanes`: every
        // coroutine is driven to completion or dropped (unwinding its stack) before this
        // function returns.
        lanes.push(unsafe { Coroutine::with_stack_unchecked(stack, body) });
    }
    let r = drive(&mut lanes, &ctxs, cfg, width, block_idx);
    if r.is_ok() {
        for lane in lanes {
            give_stack(cfg.stack_bytes, lane.into_stack());
        }
    }
    r
}

/// Runs the lanes of a block (`ctxs[t]` is lane `t`'s context) until all have returned, or the
/// block deadlocks or times out. Not generic, so that the scheduler is compiled once, in this
/// crate, whatever the kernel (the fuzz build leaves this crate uninstrumented: see
/// scripts/fuzz-rustc-wrapper.sh).
#[inline(never)]
fn drive(
    lanes: &mut [Coroutine<u64, Park, ()>],
    ctxs: &[LaneCtx<'_>],
    cfg: &LaunchConfig,
    width: u32,
    block_idx: u32,
) -> Result<(), SimError> {
    let n = lanes.len();
    let mut status: Vec<Status> = (0..n).map(|_| Status::Runnable(0)).collect();
    let mut last_progress = Instant::now();
    // the context of the lane this block runs inside, if any (a launch from inside a lane)
    let outer = CURRENT.with(Cell::get);
    loop {
        let mut done = 0;
        for (t, lane) in lanes.iter_mut().enumerate() {
            if let Status::Runnable(v) = status[t] {
                CURRENT.with(|c| c.set((&ctxs[t] as *const LaneCtx<'_>).cast()));
                let r = lane.resume(v);
                CURRENT.with(|c| c.set(outer));
                status[t] = match r {
                    CoroutineResult::Yield(p) => Status::Parked(p),
                    CoroutineResult::Return(()) => Status::Done,
                };
            }
            done += usize::from(matches!(status[t], Status::Done));
        }
        if done == n {
            return Ok(());
        }
        let (progressed, polling) = resolve(&mut status, width, block_idx);
        if progressed {
            last_progress = Instant::now();
        } else if !polling {
            return Err(SimError::Deadlock(describe(&status, width, block_idx)));
        } else if last_progress.elapsed() > cfg.timeout {
            return Err(SimError::Timeout(describe(&status, width, block_idx)));
        } else {
            std::thread::yield_now();
        }
    }
}

/// Resolves what can be resolved after a round in which every live lane parked. Returns
/// (whether a warp operation, active mask or barrier completed, whether any lane polls).
fn resolve(status: &mut [Status], width: u32, block_idx: u32) -> (bool, bool) {
    let n = status.len();
    let mut progressed = false;
    let mut polling = false;
    for s in status.iter_mut() {
        if let Status::Parked(Park::Poll) = s {
            *s = Status::Runnable(0);
            polling = true;
        }
    }
    for warp_start in (0..n).step_by(width as usize) {
        let warp_end = (warp_start + width as usize).min(n);
        let released = resolve_warp_ops(&mut status[warp_start..warp_end], warp_start, block_idx);
        progressed |= released;
        if !released {
            progressed |= resolve_active_masks(&mut status[warp_start..warp_end]);
        }
    }
    let (mut live_at_barrier, mut live) = (0, 0);
    for s in status.iter() {
        live_at_barrier += usize::from(matches!(s, Status::Parked(Park::Barrier { .. })));
        live += usize::from(!matches!(s, Status::Done));
    }
    if live_at_barrier > 0 && live_at_barrier == live {
        for s in status.iter_mut() {
            if matches!(s, Status::Parked(Park::Barrier { .. })) {
                *s = Status::Runnable(0);
            }
        }
        progressed = true;
    }
    (progressed, polling)
}

/// Completes every warp operation whose mask has fully arrived. `warp` holds the warp's lanes.
fn resolve_warp_ops(warp: &mut [Status], first_thread: usize, block_idx: u32) -> bool {
    let width = warp.len();
    let mut released = false;
    for lane in 0..width {
        let Status::Parked(Park::Warp { op, mask, site, .. }) = warp[lane] else {
            continue;
        };
        let where_ = || std::format!("block {block_idx} thread {} at {site}", first_thread + lane);
        assert!(
            mask >> lane & 1 == 1,
            "{op:?} with mask {mask:#x} that omits the calling lane ({})",
            where_()
        );
        assert!(
            width == 64 || mask >> width == 0,
            "{op:?} with mask {mask:#x} names lanes past the warp's {width} ({})",
            where_()
        );
        let mut ready = true;
        for other in (0..width).filter(|&o| mask >> o & 1 == 1) {
            match warp[other] {
                Status::Done => panic!(
                    "lane {other} exited while lanes of mask {mask:#x} wait in {op:?} ({})",
                    where_()
                ),
                Status::Parked(Park::Warp { op: o2, mask: m2, .. }) if o2 == op && m2 == mask => {}
                _ => ready = false,
            }
        }
        if !ready {
            continue;
        }
        // the lanes' arguments and values (0 outside the mask), and the ballot, which every
        // lane of the mask gets
        let (mut args, mut values) = ([0u32; 64], [0u64; 64]);
        let mut ballot = 0u64;
        for l in 0..width {
            if let Status::Parked(Park::Warp { arg, value, .. }) = warp[l] {
                if mask >> l & 1 == 1 {
                    (args[l], values[l]) = (arg, value);
                    ballot |= u64::from(value != 0) << l;
                }
            }
        }
        let mut rest = mask;
        while rest != 0 {
            let l = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            let (arg, own) = (args[l], values[l]);
            let read = |src: usize| {
                assert!(
                    mask >> src & 1 == 1,
                    "{op:?}: lane {l} reads lane {src}, which is not in mask {mask:#x} ({})",
                    where_()
                );
                values[src]
            };
            let result = match op {
                WarpOp::Sync => 0,
                WarpOp::ShflIdx => read(arg as usize % width),
                WarpOp::ShflXor => {
                    let src = l ^ arg as usize;
                    if src < width {
                        read(src)
                    } else {
                        own
                    }
                }
                WarpOp::ShflUp => l.checked_sub(arg as usize).map_or(own, read),
                WarpOp::Ballot => ballot,
            };
            warp[l] = Status::Runnable(result);
        }
        released = true;
    }
    released
}

/// Answers `active_mask` calls: the lanes parked at the same call site form the mask.
fn resolve_active_masks(warp: &mut [Status]) -> bool {
    if !warp
        .iter()
        .any(|s| matches!(s, Status::Parked(Park::ActiveMask { .. })))
    {
        return false;
    }
    let mut sites: [Option<&'static Location<'static>>; 64] = [None; 64];
    for (site, s) in sites.iter_mut().zip(warp.iter()) {
        if let Status::Parked(Park::ActiveMask { site: at }) = s {
            *site = Some(*at);
        }
    }
    let sites = &sites[..warp.len()];
    let mut any = false;
    for (l, site) in sites.iter().enumerate() {
        if let Some(site) = site {
            let mask = sites
                .iter()
                .enumerate()
                .filter(|(_, s)| **s == Some(*site))
                .fold(0u64, |m, (o, _)| m | 1 << o);
            warp[l] = Status::Runnable(mask);
            any = true;
        }
    }
    any
}

/// A listing of where each live thread waits, for deadlock and timeout errors.
fn describe(status: &[Status], width: u32, block_idx: u32) -> String {
    let mut s = std::format!("block {block_idx} (warps of {width}):");
    for (t, st) in status.iter().enumerate() {
        let what = match st {
            Status::Done => continue,
            Status::Runnable(_) | Status::Parked(Park::Poll) => "polling memory".into(),
            Status::Parked(Park::Warp { op, mask, site, .. }) => std::format!("{op:?} mask {mask:#x} at {site}"),
            Status::Parked(Park::ActiveMask { site }) => std::format!("active_mask at {site}"),
            Status::Parked(Park::Barrier { site }) => std::format!("block_sync at {site}"),
        };
        let _ = write!(s, "\n  thread {t}: {what}");
    }
    s
}
