//! zipcoll-comm's fault checks beyond `kill`: a rank that calls `abort()` mid-collective
//! (`abort`), many init/abort cycles that must leave the process's resources where they
//! started (`cycles`), and a launch too big to be resident at once (`resident`).

use crate::common::say;
use std::time::{Duration, Instant};
use zipcoll::comm::{Communicator, Data, Options, UniqueId};
use zipcoll::{Backend, DType, Error, ReduceOp};

/// How soon the peers of a rank that calls `abort()` must fail.
const ABORT_LIMIT: Duration = Duration::from_secs(1);

/// The abort check on one rank: after a first all_reduce, rank 1 enters a second one and calls
/// `abort()` 20 ms later; every other rank enqueues 50 and synchronizes, and must get a peer
/// failure naming rank 1 and its caller's abort within [`ABORT_LIMIT`] of the abort (timed
/// from their first call, which starts with rank 1's), whatever the timeout.
pub fn abort(comm: Communicator) -> Result<bool, Error> {
    let count = if comm.backend().is_sim() { 1 << 16 } else { 16 << 20 };
    let mut buf = comm.alloc(count * 2)?;
    let opts = Options::default();
    comm.all_reduce(Data::InPlace(&mut buf), count, DType::Bf16, ReduceOp::Sum, opts)?;
    comm.synchronize()?;
    if comm.rank() == 1 {
        let _ = comm.all_reduce(Data::InPlace(&mut buf), count, DType::Bf16, ReduceOp::Sum, opts);
        std::thread::sleep(Duration::from_millis(20));
        comm.abort();
        say!("abort: rank 1 called abort() 20 ms into its second all_reduce");
        let _ = comm.synchronize();
        return Ok(true);
    }
    let start = Instant::now();
    let outcome = (0..50)
        .try_for_each(|_| comm.all_reduce(Data::InPlace(&mut buf), count, DType::Bf16, ReduceOp::Sum, opts))
        .and_then(|()| comm.synchronize());
    let took = start.elapsed();
    let limit = ABORT_LIMIT + Duration::from_millis(20);
    let (ok, what) = match &outcome {
        Ok(()) => (false, "no error: the 50 calls succeeded".to_owned()),
        Err(e) => (
            matches!(e, Error::Remote { rank: 1, reason } if reason.contains("its caller aborted")) && took < limit,
            format!("error `{e}`"),
        ),
    };
    say!(
        "abort over {:?}: rank {} got {what} after {:.3} s (limit {:.3} s, timeout {:.0} s): {}",
        comm.transport(),
        comm.rank(),
        took.as_secs_f64(),
        limit.as_secs_f64(),
        comm.config().timeout.as_secs_f64(),
        if ok { "ok" } else { "FAILED" }
    );
    Ok(ok)
}

/// What a cycle must give back: open files, threads, resident memory (pinned host memory is
/// resident) and the device's free memory.
#[derive(Clone, Copy, Debug)]
struct Usage {
    fds: usize,
    threads: usize,
    rss_kib: u64,
    device_free: Option<u64>,
}

impl Usage {
    /// [`Usage::now`] once two readings 20 ms apart agree on files and threads (at most 1 s):
    /// threads that were joined take a moment to leave /proc.
    fn settled(backend: Backend) -> Result<Usage, Error> {
        let mut u = Usage::now(backend)?;
        for _ in 0..50 {
            std::thread::sleep(Duration::from_millis(20));
            let v = Usage::now(backend)?;
            if (v.fds, v.threads) == (u.fds, u.threads) {
                return Ok(v);
            }
            u = v;
        }
        Ok(u)
    }

    fn now(backend: Backend) -> Result<Usage, Error> {
        let count = |d: &str| std::fs::read_dir(d).map_or(0, |e| e.count());
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let rss_kib = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0);
        let device_free = match backend {
            Backend::Cuda { ordinal } => {
                let gpu = zipcoll::cuda::CudaGpu::get(ordinal)?;
                let cuda = |call| {
                    move |e: zipcoll::cudarc::driver::DriverError| Error::Cuda {
                        call,
                        message: format!("{e:?}"),
                    }
                };
                gpu.context().bind_to_thread().map_err(cuda("cuCtxSetCurrent"))?;
                let (free, _) = zipcoll::cudarc::driver::result::mem_get_info().map_err(cuda("cuMemGetInfo"))?;
                Some(free as u64)
            }
            _ => None,
        };
        Ok(Usage {
            fds: count("/proc/self/fd"),
            threads: count("/proc/self/task"),
            rss_kib,
            device_free,
        })
    }
}

/// Bytes of a unique id's text, padded, broadcast from rank 0 to start the next cycle.
const ID_BYTES: usize = 256;

/// The next cycle's id: rank 0 makes it and broadcasts its text over `comm` (as bf16 elements).
fn next_id(comm: &Communicator) -> Result<UniqueId, Error> {
    let mut text = [b' '; ID_BYTES];
    if comm.rank() == 0 {
        let id = UniqueId::new()?.to_string();
        text[..id.len()].copy_from_slice(id.as_bytes());
    }
    let mut buf = comm.alloc(ID_BYTES)?;
    buf.copy_from_host(&text)?;
    comm.broadcast(
        Data::InPlace(&mut buf),
        ID_BYTES / 2,
        DType::Bf16,
        0,
        Options::default(),
    )?;
    comm.synchronize()?;
    let bytes = buf.to_host()?;
    String::from_utf8_lossy(&bytes).trim().parse()
}

/// The cycles check on one rank: `cycles` times a communicator (the first is the launcher's),
/// the next cycle's id broadcast, an all_reduce that rank 1 abandons with `abort()`, and the
/// drop. Every all_reduce of rank 0 must fail (a typed error), and in the last cycle each
/// rank's open files and threads must not be above where they were in the second (a leak per
/// cycle adds up; fewer is a thread of the first cycle that a loaded machine had not yet
/// removed from /proc when the second measured), its resident memory and the device's free
/// memory within 64 MiB (both ranks measure at the same point of a cycle: with a communicator
/// initialized, after the next id's broadcast).
pub fn cycles(comm: Communicator, cycles: u32) -> Result<bool, Error> {
    let (rank, nranks, backend, config) = (comm.rank(), comm.nranks(), comm.backend(), comm.config().clone());
    let start = Instant::now();
    let mut comm = Some(comm);
    let (mut first, mut last): (Option<Usage>, Option<Usage>) = (None, None);
    let mut missed = 0u32;
    for k in 0..cycles {
        let c = comm.take().expect("a communicator per cycle");
        let id = next_id(&c)?;
        // every rank measures between two host barriers, so no rank's kernels (the simulator's
        // are threads of this process when the ranks are) run meanwhile
        c.barrier()?;
        let mut usage = Usage::settled(backend)?;
        // threads that were joined (the last cycle's) may take a moment to leave /proc
        if let (Some(a), true) = (first, k + 1 == cycles) {
            for _ in 0..50 {
                if (usage.fds, usage.threads) == (a.fds, a.threads) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
                usage = Usage::now(backend)?;
            }
        }
        c.barrier()?;
        // the baseline is the second cycle's: like every later one (and unlike the first, the
        // launcher's), its communicator came from an id that rank 0 made
        if k == 1.min(cycles - 1) {
            first = Some(usage);
        }
        last = Some(usage);
        let mut buf = c.alloc(1 << 16)?;
        if rank == 1 {
            c.abort();
        } else {
            let r = c
                .all_reduce(
                    Data::InPlace(&mut buf),
                    1 << 15,
                    DType::Bf16,
                    ReduceOp::Sum,
                    Options::default(),
                )
                .and_then(|()| c.synchronize());
            missed += r.is_ok() as u32;
        }
        drop(buf);
        drop(c);
        if k + 1 < cycles {
            comm = Some(Communicator::init_with(&id, rank, nranks, backend, config.clone())?);
        }
    }
    let (Some(a), Some(b)) = (first, last) else {
        return Ok(true);
    };
    let mib = |kib: u64| kib as f64 / 1024.0;
    let close = |x: u64, y: u64, tolerance: u64| x.abs_diff(y) <= tolerance;
    let ok = missed == 0
        && b.fds <= a.fds
        && b.threads <= a.threads
        && close(a.rss_kib, b.rss_kib, 64 << 10)
        && match (a.device_free, b.device_free) {
            (Some(x), Some(y)) => close(x, y, 64 << 20),
            _ => true,
        };
    say!(
        "cycles: rank {rank}: {cycles} init/abort cycles in {:.1} s; {missed} all_reduce(s) not failed; \
         cycle {} -> {cycles}: open files {} -> {}, threads {} -> {}, resident {:.1} -> {:.1} MiB, \
         device free {} -> {}: {}",
        start.elapsed().as_secs_f64(),
        2.min(cycles),
        a.fds,
        b.fds,
        a.threads,
        b.threads,
        mib(a.rss_kib),
        mib(b.rss_kib),
        a.device_free
            .map_or("-".into(), |f| format!("{:.1} MiB", f as f64 / (1 << 20) as f64)),
        b.device_free
            .map_or("-".into(), |f| format!("{:.1} MiB", f as f64 / (1 << 20) as f64)),
        if ok { "ok" } else { "FAILED" }
    );
    Ok(ok)
}

/// The co-residency check on one rank: a group that sends to and receives from every peer on
/// every channel (2 x (ranks - 1) x channels warps in one launch). Either every warp fits on
/// the device at once and the exchange gives each rank its peers' data, or the call is refused
/// with `InvalidArgument` (nothing enqueued, no rank left waiting), after which a send/recv
/// between ranks 0 and 1 still works. Passes when one of the two happened, and says which.
pub fn resident(comm: Communicator) -> Result<bool, Error> {
    const N: usize = 64;
    let (me, k, d, o) = (comm.rank(), comm.nranks(), DType::F32, Options::default());
    let mine = |r: usize| -> Vec<u8> { (0..N).flat_map(|i| ((r * N + i) as f32).to_le_bytes()).collect() };
    let mut input = comm.alloc(N * 4)?;
    input.copy_from_host(&mine(me))?;
    let mut outs = (0..k).map(|_| comm.alloc(N * 4)).collect::<Result<Vec<_>, _>>()?;
    let mut g = comm.group();
    for (q, out) in outs.iter_mut().enumerate().filter(|(q, _)| *q != me) {
        g.send(&input, N, d, q)?;
        g.recv(out, N, d, q)?;
    }
    let warps = 2 * (k - 1) * comm.config().channels;
    let ok = match g.launch(o) {
        Ok(()) => {
            comm.synchronize()?;
            let wrong = (0..k)
                .filter(|&q| q != me && outs[q].to_host().ok() != Some(mine(q)))
                .count();
            say!(
                "resident: rank {me}: the group of {warps} warps fit and ran; {wrong} of {} peers' data wrong",
                k - 1
            );
            wrong == 0
        }
        Err(Error::InvalidArgument(why)) => {
            comm.synchronize()?;
            let mut out = comm.alloc(N * 4)?;
            match me {
                0 => comm.send(&input, N, d, 1, o)?,
                1 => comm.recv(&mut out, N, d, 0, o)?,
                _ => {}
            }
            comm.synchronize()?;
            let after = me != 1 || out.to_host()? == mine(0);
            say!(
                "resident: rank {me}: refused ({why}); the send/recv after it {}",
                if after { "worked" } else { "gave WRONG data" }
            );
            after
        }
        Err(e) => {
            say!("resident: rank {me}: the group failed with `{e}`, not a refusal: FAILED");
            false
        }
    };
    Ok(ok)
}
