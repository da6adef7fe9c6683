//! The communicator's failures at the API level, ranks as threads on the simulator:
//!
//! | test                                              | what                                                        |
//! |---------------------------------------------------|-------------------------------------------------------------|
//! | `a_rank_that_leaves_fails_the_others_sim` / `_net` | a rank that drops its communicator: the others' collective is enqueued, `synchronize()` reports its failure within the timeout, then every call, `synchronize()` and `query()` are `Aborted` |
//! | `a_failure_is_reported_by_the_next_call_or_query` | the same failure, found by the next call (rank 0) or by `query()` (rank 1) instead |
//! | `abort_from_another_thread_sim` / `_net`          | `abort()` while the call waits for a peer that never joins: it returns at once, `synchronize()` and later calls fail |
//! | `abort_on_one_rank_stops_the_others_at_once_sim` / `_net` | a rank that calls `abort()` while its peers wait in a collective for it: their calls fail within 100 ms of the abort (NET: 500 ms; the timeout is 20 s), naming that rank |
//! | `a_failure_names_its_rank_channel_and_step_on_every_rank` | rank 1 calls all_reduce with another count: a rejected frame on one rank; every rank reports that failure (rank, channel, step, reason), none "aborted by another rank" |
//! | `invalid_arguments_have_no_effect`                | bad roots, peers, buffer sizes, in-place all_to_all, count overflow: `InvalidArgument`, buffers untouched, the communicator still works |
//! | `sends_to_self_are_refused_and_the_communicator_works` | a send or receive to self (alone or in a group): `InvalidArgument` at the call, nothing enqueued, a later exchange works |
//! | `a_launch_of_too_many_warps_is_refused_and_the_communicator_works` | a group of 10 ranks x 256 channels whose warps cannot all be resident: `InvalidArgument` at the call, a later send/recv works |
//! | `mismatched_configs_fail_init_on_every_rank`      | ranks with different channel counts (or buffer sizes): `InvalidArgument` on every rank |
//!
//! A corrupted frame (reported, never reduced) is covered at the primitives level
//! (`primitives/tests/ring_all_reduce.rs`).

use std::sync::Barrier;
use std::time::{Duration, Instant};
use zipcoll_host::comm::calibration::Calibration;
use zipcoll_host::comm::{run_sim, Communicator, Config, Data, DeviceBuffer, Options, TransportKind, UniqueId};
use zipcoll_host::{Backend, DType, Error, ReduceOp};
use zipcoll_primitives::conn::ConnError;

const COUNT: usize = 5000;
/// Elements per rank block in `invalid_arguments_have_no_effect`.
const N: usize = 100;

fn f32_bytes(n: usize, rank: usize) -> Vec<u8> {
    (0..n)
        .flat_map(|i| ((i % 91) as f32 * 0.5 - 3.0 + rank as f32).to_le_bytes())
        .collect()
}

/// Whether `e` is what a rank sees when a peer is gone or the call was stopped.
fn is_peer_failure(e: &Error) -> bool {
    match e {
        Error::Collective { failure, .. } => matches!(failure.error, ConnError::Timeout(_) | ConnError::Aborted),
        Error::Remote { .. } | Error::Timeout { .. } => true,
        _ => false,
    }
}

fn short(transport: TransportKind, timeout: Duration) -> Config {
    Config {
        transport,
        timeout,
        ..Config::sim()
    }
}

/// Rank 2 of 3 drops its communicator without joining; ranks 0 and 1 enqueue an all_reduce,
/// whose failure `synchronize()` must report within the timeout (plus the simulator's and the
/// proxies' slack), and then every call returns `Aborted`.
fn a_rank_that_leaves(transport: TransportKind) {
    let timeout = Duration::from_secs(2);
    let results = run_sim(3, short(transport, timeout), |comm| {
        if comm.rank() == 2 {
            drop(comm);
            return Ok(None);
        }
        let mut buf = comm.alloc(COUNT * 4)?;
        buf.copy_from_host(&f32_bytes(COUNT, comm.rank()))?;
        let t = Instant::now();
        let enqueued = comm.all_reduce(
            Data::InPlace(&mut buf),
            COUNT,
            DType::F32,
            ReduceOp::Sum,
            Options::default(),
        );
        let first = comm.synchronize();
        let elapsed = t.elapsed();
        let second = comm.all_reduce(
            Data::InPlace(&mut buf),
            COUNT,
            DType::F32,
            ReduceOp::Sum,
            Options::default(),
        );
        let third = comm.broadcast(Data::InPlace(&mut buf), 1, DType::F32, 0, Options::default());
        let later = [comm.synchronize(), comm.query().map(|_| ())];
        Ok(Some((enqueued, first, elapsed, second, third, later)))
    })
    .expect("every rank returns");
    for (rank, r) in results.into_iter().enumerate().take(2) {
        let (enqueued, first, elapsed, second, third, later) = r.unwrap();
        assert!(
            enqueued.is_ok(),
            "{transport:?} rank {rank}: the call reports later: {enqueued:?}"
        );
        let e = first.expect_err("the collective must fail without rank 2");
        assert!(is_peer_failure(&e), "{transport:?} rank {rank}: {e:?}");
        assert!(
            elapsed < timeout + Duration::from_secs(10),
            "{transport:?} rank {rank}: failed after {elapsed:?}"
        );
        assert!(matches!(second, Err(Error::Aborted)), "rank {rank}: {second:?}");
        assert!(matches!(third, Err(Error::Aborted)), "rank {rank}: {third:?}");
        for l in later {
            assert!(matches!(l, Err(Error::Aborted)), "rank {rank}: {l:?}");
        }
        eprintln!("{transport:?} rank {rank}: {e} after {elapsed:?}");
    }
}

#[test]
fn a_rank_that_leaves_fails_the_others_sim() {
    a_rank_that_leaves(TransportKind::Sim);
}

#[test]
fn a_rank_that_leaves_fails_the_others_net() {
    a_rank_that_leaves(TransportKind::Net);
}

/// As `a_rank_that_leaves`, but nobody synchronizes: rank 0's next call and rank 1's `query()`
/// find the failed all_reduce (on the simulator it has run when its call returns, as a GPU's
/// has once its kernel timed out) and return its failure, once; `synchronize()` then says
/// `Aborted`.
#[test]
fn a_failure_is_reported_by_the_next_call_or_query() {
    let results = run_sim(3, short(TransportKind::Sim, Duration::from_secs(1)), |comm| {
        if comm.rank() == 2 {
            drop(comm);
            return Ok(None);
        }
        let mut buf = comm.alloc(COUNT * 4)?;
        buf.copy_from_host(&f32_bytes(COUNT, comm.rank()))?;
        let (d, op, o) = (DType::F32, ReduceOp::Sum, Options::default());
        let enqueued = comm.all_reduce(Data::InPlace(&mut buf), COUNT, d, op, o);
        let found = match comm.rank() {
            0 => comm.all_reduce(Data::InPlace(&mut buf), COUNT, d, op, o),
            _ => comm.query().map(|_| ()),
        };
        let after = comm.synchronize();
        Ok(Some((enqueued, found, after)))
    })
    .expect("every rank returns");
    for (rank, r) in results.into_iter().enumerate().take(2) {
        let (enqueued, found, after) = r.unwrap();
        assert!(enqueued.is_ok(), "rank {rank}: {enqueued:?}");
        let e = found.expect_err("the failure is found");
        assert!(is_peer_failure(&e), "rank {rank}: {e:?}");
        assert!(matches!(after, Err(Error::Aborted)), "rank {rank}: {after:?}");
    }
}

/// Rank 1 of 2 never joins (it waits until rank 0 is done); rank 0's all_reduce is aborted
/// from another thread after 300 ms: the call (which waits on the simulator, where it runs at
/// enqueue) must return long before the (20 s) timeout, and `synchronize()` report the abort.
fn abort_from_another_thread(transport: TransportKind) {
    let done = Barrier::new(2);
    let results = run_sim(2, short(transport, Duration::from_secs(20)), |comm| {
        if comm.rank() == 1 {
            done.wait();
            return Ok(None);
        }
        let comm: &Communicator = &comm;
        let mut buf = comm.alloc(COUNT * 4)?;
        buf.copy_from_host(&f32_bytes(COUNT, 0))?;
        let t = Instant::now();
        let (first, elapsed) = std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(300));
                comm.abort();
            });
            let enqueued = comm.all_reduce(
                Data::InPlace(&mut buf),
                COUNT,
                DType::F32,
                ReduceOp::Max,
                Options::default(),
            );
            let first = enqueued.and_then(|()| comm.synchronize());
            (first, t.elapsed())
        });
        let second = comm.all_reduce(
            Data::InPlace(&mut buf),
            COUNT,
            DType::F32,
            ReduceOp::Max,
            Options::default(),
        );
        done.wait();
        Ok(Some((first, elapsed, second)))
    })
    .expect("every rank returns");
    let (first, elapsed, second) = results.into_iter().next().unwrap().unwrap();
    let e = first.expect_err("an aborted call fails at synchronize()");
    assert!(
        is_peer_failure(&e) || matches!(e, Error::Aborted),
        "{transport:?}: {e:?}"
    );
    assert!(
        elapsed < Duration::from_secs(5),
        "{transport:?}: returned after {elapsed:?}"
    );
    assert!(matches!(second, Err(Error::Aborted)), "{second:?}");
    eprintln!("{transport:?}: {e} after {elapsed:?}");
}

#[test]
fn abort_from_another_thread_sim() {
    abort_from_another_thread(TransportKind::Sim);
}

#[test]
fn abort_from_another_thread_net() {
    abort_from_another_thread(TransportKind::Net);
}

fn assert_invalid(r: zipcoll_host::Result<()>, what: &str) {
    assert!(matches!(r, Err(Error::InvalidArgument(_))), "{what}: {r:?}");
}

/// Every rank makes the same invalid calls (each rejected before anything runs), then a valid
/// all_reduce that must still work.
#[test]
fn invalid_arguments_have_no_effect() {
    let k = 3;
    let outputs = run_sim(k, Config::sim(), |comm| {
        let n = N;
        let (d, op, o) = (DType::F32, ReduceOp::Sum, Options::default());
        let input = f32_bytes(k * n, comm.rank());
        let mut small = comm.alloc(n * 4 - 1)?;
        let mut buf = comm.alloc(k * n * 4)?;
        buf.copy_from_host(&input)?;
        let src = comm.alloc(k * n * 4)?;
        let mut dst = comm.alloc(k * n * 4)?;
        // roots and peers out of range
        assert_invalid(comm.reduce(Data::InPlace(&mut buf), n, d, op, k, o), "reduce root");
        assert_invalid(
            comm.broadcast(Data::InPlace(&mut buf), n, d, k + 5, o),
            "broadcast root",
        );
        assert_invalid(comm.send(&buf, n, d, k, o), "send peer");
        assert_invalid(comm.recv(&mut dst, n, d, usize::MAX, o), "recv peer");
        let mut g = comm.group();
        assert_invalid(g.send(&buf, n, d, k), "group send peer");
        drop(g);
        // buffers too small, in place and out of place
        assert_invalid(
            comm.all_reduce(Data::InPlace(&mut small), n, d, op, o),
            "all_reduce in place",
        );
        assert_invalid(comm.all_reduce(oop(&src, &mut small), n, d, op, o), "all_reduce output");
        assert_invalid(
            comm.all_gather(Data::InPlace(&mut buf), n + 1, d, o),
            "all_gather in place",
        );
        assert_invalid(
            comm.all_gather(
                Data::OutOfPlace {
                    src: &small,
                    dst: &mut dst,
                },
                n,
                d,
                o,
            ),
            "all_gather input",
        );
        assert_invalid(
            comm.reduce_scatter(oop(&src, &mut small), n, d, op, o),
            "reduce_scatter output",
        );
        assert_invalid(
            comm.reduce_scatter(
                Data::OutOfPlace {
                    src: &small,
                    dst: &mut dst,
                },
                n,
                d,
                op,
                o,
            ),
            "reduce_scatter input",
        );
        assert_invalid(comm.reduce(oop(&src, &mut small), n, d, op, 0, o), "reduce output");
        assert_invalid(comm.broadcast(oop(&src, &mut small), n, d, 1, o), "broadcast output");
        assert_invalid(comm.all_to_all(oop(&src, &mut small), n, d, o), "all_to_all output");
        assert_invalid(comm.all_to_all(oop(&src, &mut dst), n + 1, d, o), "all_to_all input");
        assert_invalid(comm.send(&small, n, d, 0, o), "send buffer");
        assert_invalid(comm.recv(&mut small, n, d, 0, o), "recv buffer");
        // all_to_all is out of place only
        assert_invalid(comm.all_to_all(Data::InPlace(&mut buf), n, d, o), "in-place all_to_all");
        // counts whose bytes overflow
        for count in [usize::MAX, usize::MAX / 2, usize::MAX / k + 1, isize::MAX as usize / 4] {
            assert_invalid(
                comm.all_reduce(Data::InPlace(&mut buf), count, d, op, o),
                "all_reduce count",
            );
            assert_invalid(
                comm.all_gather(Data::InPlace(&mut buf), count, d, o),
                "all_gather count",
            );
            assert_invalid(
                comm.reduce_scatter(oop(&src, &mut dst), count, d, op, o),
                "reduce_scatter count",
            );
            assert_invalid(comm.all_to_all(oop(&src, &mut dst), count, d, o), "all_to_all count");
            assert_invalid(comm.send(&buf, count, d, 0, o), "send count");
        }
        // nothing was written, and the communicator still works
        assert_eq!(buf.to_host()?, input);
        assert_eq!(dst.to_host()?, vec![0; k * n * 4]);
        assert_eq!(small.to_host()?, vec![0; n * 4 - 1]);
        comm.all_reduce(Data::InPlace(&mut buf), n, d, ReduceOp::Max, o)?;
        comm.synchronize()?;
        buf.to_host()
    })
    .expect("the valid call after the invalid ones");
    // max over ranks of (i % 91) * 0.5 - 3 + rank: the last rank's input
    let want = f32_bytes(k * N, k - 1);
    for (r, out) in outputs.iter().enumerate() {
        assert_eq!(out[..N * 4], want[..N * 4], "rank {r}");
        assert_eq!(out[N * 4..], f32_bytes(k * N, r)[N * 4..], "rank {r}");
    }
}

/// A send or receive to self is refused at the call (a group of them too, before any of the
/// group is enqueued); the communicator then still exchanges data.
#[test]
fn sends_to_self_are_refused_and_the_communicator_works() {
    let k = 2;
    let outputs = run_sim(k, Config::sim(), |comm| {
        let (d, o, me) = (DType::F32, Options::default(), comm.rank());
        let other = 1 - me;
        let buf = comm.alloc(N * 4)?;
        let mut out = comm.alloc(N * 4)?;
        assert_invalid(comm.send(&buf, N, d, me, o), "send to self");
        assert_invalid(comm.recv(&mut out, N, d, me, o), "recv from self");
        let mut g = comm.group();
        g.send(&buf, N, d, other)?;
        assert_invalid(g.recv(&mut out, N, d, me), "group recv from self");
        drop(g);
        let mut input = comm.alloc(N * 4)?;
        input.copy_from_host(&f32_bytes(N, me))?;
        let mut g = comm.group();
        g.send(&input, N, d, other)?;
        g.recv(&mut out, N, d, other)?;
        g.launch(o)?;
        comm.synchronize()?;
        out.to_host()
    })
    .expect("the exchange after the refused calls");
    for (r, out) in outputs.iter().enumerate() {
        assert_eq!(*out, f32_bytes(N, 1 - r), "rank {r}");
    }
}

/// 10 ranks with 256 channels: a group that sends to and receives from every peer needs
/// 2 x 9 x 256 = 4608 warps, more than a launch may have resident at once; it is refused at the
/// call with `InvalidArgument` (nothing enqueued, no rank waits for it), and a send/recv after
/// it works.
#[test]
fn a_launch_of_too_many_warps_is_refused_and_the_communicator_works() {
    let k = 10;
    let config = Config {
        channels: 256,
        buffer_bytes: 8 * 1024,
        timeout: Duration::from_secs(20),
        ..Config::sim()
    };
    let outputs = run_sim(k, config, |comm| {
        let (d, o, me) = (DType::F32, Options::default(), comm.rank());
        let bufs = (0..k)
            .map(|_| comm.alloc(64 * 4))
            .collect::<zipcoll_host::Result<Vec<_>>>()?;
        let mut outs = (0..k)
            .map(|_| comm.alloc(64 * 4))
            .collect::<zipcoll_host::Result<Vec<_>>>()?;
        let mut g = comm.group();
        for (q, (b, out)) in bufs.iter().zip(outs.iter_mut()).enumerate().filter(|(q, _)| *q != me) {
            g.send(b, 64, d, q)?;
            g.recv(out, 64, d, q)?;
        }
        let refused = g.launch(o);
        let msg = match &refused {
            Err(Error::InvalidArgument(m)) => m.clone(),
            other => panic!("rank {me}: {other:?}"),
        };
        assert!(msg.contains("4608 blocks"), "{msg}");
        assert!(comm.query()?, "rank {me}: nothing was enqueued");
        // rank 0 sends to rank 1 only
        let mut input = comm.alloc(64 * 4)?;
        input.copy_from_host(&f32_bytes(64, me))?;
        let mut out = comm.alloc(64 * 4)?;
        match me {
            0 => comm.send(&input, 64, d, 1, o)?,
            1 => comm.recv(&mut out, 64, d, 0, o)?,
            _ => {}
        }
        comm.synchronize()?;
        Ok((msg, out.to_host()?))
    })
    .expect("the send/recv after the refused group");
    assert_eq!(outputs[1].1, f32_bytes(64, 0));
    eprintln!("refused: {}", outputs[0].0);
}

fn oop<'a>(src: &'a DeviceBuffer, dst: &'a mut DeviceBuffer) -> Data<'a> {
    Data::OutOfPlace { src, dst }
}

/// Ranks that disagree on the channel count (or the buffer size, the transport, the
/// calibration, the NET rate limit) fail init, every one of them, with `InvalidArgument`; a config that cannot work
/// fails at once.
#[test]
fn mismatched_configs_fail_init_on_every_rank() {
    let k = 3;
    for (what, vary) in [
        (
            "channels",
            Box::new(|c: &mut Config| c.channels = 3) as Box<dyn Fn(&mut Config) + Sync>,
        ),
        ("buffer_bytes", Box::new(|c: &mut Config| c.buffer_bytes *= 2)),
        ("transport", Box::new(|c: &mut Config| c.transport = TransportKind::Net)),
        (
            "rate limit",
            Box::new(|c: &mut Config| c.net.rate_limit_bytes_per_s = Some(1 << 20)),
        ),
        (
            "calibration",
            Box::new(|c: &mut Config| {
                c.calibration = Some(
                    Calibration::parse("transport = \"sim\"\nbandwidth_bytes_per_s = 1e9\nlatency_s = 0\n").unwrap(),
                )
            }),
        ),
    ] {
        let id = UniqueId::new().unwrap();
        let results: Vec<_> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..k)
                .map(|rank| {
                    let (id, vary) = (&id, &vary);
                    s.spawn(move || {
                        let mut config = Config {
                            timeout: Duration::from_secs(5),
                            ..Config::sim()
                        };
                        if rank == 1 {
                            vary(&mut config);
                        }
                        Communicator::init_with(id, rank, k, Backend::Sim, config).map(|_| ())
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for (rank, r) in results.into_iter().enumerate() {
            assert!(
                matches!(r, Err(Error::InvalidArgument(_))),
                "{what}: rank {rank}: {r:?}"
            );
        }
    }
    let id = UniqueId::new().unwrap();
    for bad in [
        Config {
            channels: 0,
            ..Config::sim()
        },
        Config {
            timeout: Duration::ZERO,
            ..Config::sim()
        },
        Config {
            buffer_bytes: 1024,
            ..Config::sim()
        },
    ] {
        let r = Communicator::init_with(&id, 0, 1, Backend::Sim, bad.clone()).map(|_| ());
        assert!(matches!(r, Err(Error::InvalidArgument(_))), "{bad:?}: {r:?}");
    }
}

/// NET's listener address: by default the interface that reaches the bootstrap root (here
/// loopback, as the root is), and the communicator says which it picked and why.
#[test]
fn net_says_which_address_it_listens_on() {
    let infos = run_sim(2, short(TransportKind::Net, Duration::from_secs(5)), |comm| {
        Ok(comm.transport_info().to_string())
    })
    .unwrap();
    for info in infos {
        assert!(info.starts_with("Net; NET listens on 127.0.0.1:"), "{info}");
        assert!(
            info.contains("the interface that reaches the bootstrap root 127.0.0.1:"),
            "{info}"
        );
        eprintln!("{info}");
    }
}

/// Ranks 0 and 2 of 3 enter an all_reduce; rank 1 calls `abort()` instead, 300 ms later. The
/// others' kernels stop at their next wait (SIM: they poll rank 0's abort word, which `abort()`
/// raises; NET: rank 1's proxies send ABORT), long before the 20 s timeout: their calls fail
/// within `after_abort` of the abort, and their error names rank 1; `async_error` then gives
/// that error's message, again when asked again.
fn abort_on_one_rank_stops_the_others(transport: TransportKind, after_abort: Duration) {
    let timeout = Duration::from_secs(20);
    let aborted = std::sync::OnceLock::new();
    let results = run_sim(3, short(transport, timeout), |comm| {
        if comm.rank() == 1 {
            std::thread::sleep(Duration::from_millis(300));
            aborted.set(Instant::now()).expect("one abort");
            comm.abort();
            return Ok(None);
        }
        let mut buf = comm.alloc(COUNT * 4)?;
        buf.copy_from_host(&f32_bytes(COUNT, comm.rank()))?;
        let t = Instant::now();
        let r = comm
            .all_reduce(
                Data::InPlace(&mut buf),
                COUNT,
                DType::F32,
                ReduceOp::Sum,
                Options::default(),
            )
            .and_then(|()| comm.synchronize());
        let done = Instant::now();
        // the first failure stays what `async_error` says, every time
        let said = (comm.async_error(), comm.async_error());
        Ok(Some((r, t.elapsed(), done, said)))
    })
    .expect("every rank returns");
    let aborted = *aborted.get().expect("rank 1 aborted");
    for (rank, r) in results.into_iter().enumerate().filter(|(r, _)| *r != 1) {
        let (r, elapsed, done, said) = r.unwrap();
        let e = r.expect_err("the peer aborted");
        assert_eq!(
            said.0.as_deref(),
            Some(e.to_string().as_str()),
            "{transport:?} rank {rank}"
        );
        assert_eq!(said.0, said.1, "{transport:?} rank {rank}");
        let since = done.saturating_duration_since(aborted);
        eprintln!("{transport:?} rank {rank}: {e} after {elapsed:?}, {since:?} after the abort");
        assert!(
            elapsed < Duration::from_secs(2) && since < after_abort,
            "{transport:?} rank {rank}: after {elapsed:?}, {since:?} after the abort: {e}"
        );
        // SIM names rank 1 as the error's rank; NET may name a rank that relayed rank 1's
        // ABORT first, with rank 1's reason in its own
        let named = match (&e, transport) {
            (Error::Remote { rank: 1, .. }, _) => true,
            (Error::Remote { reason, .. }, TransportKind::Net) => reason.contains("rank 1"),
            _ => false,
        };
        assert!(named, "{transport:?} rank {rank}: {e:?}");
        assert!(
            e.to_string().contains("its caller aborted the communicator"),
            "{transport:?} rank {rank}: the error names the root cause: {e}"
        );
    }
}

#[test]
fn abort_on_one_rank_stops_the_others_at_once_sim() {
    abort_on_one_rank_stops_the_others(TransportKind::Sim, Duration::from_millis(100));
}

#[test]
fn abort_on_one_rank_stops_the_others_at_once_net() {
    abort_on_one_rank_stops_the_others(TransportKind::Net, Duration::from_millis(500));
}

/// Rank 1 calls all_reduce with half the elements of ranks 0 and 2: frames of another length
/// arrive at ranks 1 and 2 (each from its ring predecessor), which reject them (or one is
/// stopped by the other's failure first and reports that). Rank 0, whose
/// kernel only sees the abort word, reports one of their failures with its rank, channel and
/// step, not "aborted by another rank"; no rank reports an abort or a timeout, and all report
/// long before the 20 s timeout.
#[test]
fn a_failure_names_its_rank_channel_and_step_on_every_rank() {
    let timeout = Duration::from_secs(20);
    let config = Config {
        channels: 1,
        ..short(TransportKind::Sim, timeout)
    };
    let results = run_sim(3, config, |comm| {
        let n = if comm.rank() == 1 { COUNT / 2 } else { COUNT };
        let mut buf = comm.alloc(COUNT * 4)?;
        buf.copy_from_host(&f32_bytes(COUNT, comm.rank()))?;
        let t = Instant::now();
        let (d, op, o) = (DType::F32, ReduceOp::Sum, Options::default());
        let r = comm
            .all_reduce(Data::InPlace(&mut buf), n, d, op, o)
            .and_then(|()| comm.synchronize());
        Ok((r.map_err(|e| e.to_string()), t.elapsed()))
    })
    .expect("every rank returns");
    let errors: Vec<String> = results
        .iter()
        .enumerate()
        .map(|(rank, (r, elapsed))| {
            let e = r.clone().expect_err("every rank fails");
            eprintln!("rank {rank}: {e} after {elapsed:?}");
            assert!(*elapsed < Duration::from_secs(5), "rank {rank}: after {elapsed:?}");
            assert!(e.contains("failed on rank ") && e.contains("step "), "rank {rank}: {e}");
            assert!(!e.contains("aborted") && !e.contains("timed out"), "rank {rank}: {e}");
            e
        })
        .collect();
    for e in &errors {
        assert!(
            e.contains("failed on rank 1,") || e.contains("failed on rank 2,"),
            "{e}"
        );
    }
    assert!(
        errors[0] == errors[1] || errors[0] == errors[2],
        "rank 0: {}",
        errors[0]
    );
}
