//! Runs zipcoll's collectives on GPUs (one process per GPU) or on the simulator, and checks or
//! times them.
//!
//! ```sh
//! zipcoll-comm check --transport p2p            # every collective x dtype x op x compression, bit for bit
//! zipcoll-comm check --transport net --dump out # also writes inputs/outputs for the NCCL comparison
//! zipcoll-comm kill --transport net             # rank 1 dies mid-run: the others must fail in time
//! zipcoll-comm bench --transport p2p --sizes 1M,16M,256M,1G
//! ```
//!
//! `check` compares every rank's output with the scalar reference of the same reduction order
//! (which the simulator matches bit for bit in CI) and, for the small cases, with the
//! simulator's own output for the same inputs, computed in the same process; it synchronizes
//! after each call (calls are asynchronous) so a failure is an error of its case. `bench`
//! enqueues its timed calls back to back and synchronizes once. The parent process
//! starts one child per rank (`--ranks`, default: one per GPU and at least 2, placed on the
//! GPUs round-robin); without GPUs the ranks are
//! simulator threads. Exit status non-zero on any mismatch or error.

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};
use zipcoll::comm::launch::{child_communicator, spawn_ranks};
use zipcoll::comm::{
    run_sim, Algorithm, Communicator, Compression, Config, Data, DeviceBuffer, Lossless, Options, TransportKind,
};
use zipcoll::reference::{collective, CollRef};
use zipcoll::{testdata, CodecId, DType, Error, ReduceOp};

#[derive(Parser)]
#[command(about = "Checks or times zipcoll's collectives across GPUs (one process each) or simulated ranks")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
    /// auto, p2p, net or sim.
    #[arg(long, global = true, default_value = "auto")]
    transport: String,
    /// Ranks (default: the number of GPUs, or 4 without GPUs).
    #[arg(long, global = true)]
    ranks: Option<usize>,
    /// Timeout of every wait, in milliseconds.
    #[arg(long, global = true, default_value_t = 30_000)]
    timeout_ms: u64,
}

#[derive(Subcommand, Clone)]
enum Cmd {
    /// Every collective x dtype x op x compression at several sizes, bit for bit.
    Check {
        /// Writes each rank's inputs and outputs of the NCCL-comparable cases here.
        #[arg(long)]
        dump: Option<PathBuf>,
    },
    /// Rank 1 exits in the middle of an all_reduce; every other rank must report an error
    /// within the timeout.
    Kill,
    /// Times bf16 all_reduce, all_gather and send/recv per size, compression off and Auto.
    Bench {
        /// Bytes per rank's buffer (K, M, G suffixes).
        #[arg(long, default_value = "1M,16M,128M,1G", value_delimiter = ',')]
        sizes: Vec<String>,
        /// Timed repetitions (after 3 warm-up calls), enqueued back to back and synchronized
        /// once; the mean time per call is reported.
        #[arg(long, default_value_t = 10)]
        iters: usize,
    },
}

/// One collective call of the check.
#[derive(Clone, Copy, Debug)]
enum Case {
    AllReduce(Algorithm),
    AllGather,
    ReduceScatter,
    Reduce(usize),
    Broadcast(usize),
    AllToAll,
    Shift,
}

impl Case {
    fn all(k: usize) -> Vec<Case> {
        let mut cases = vec![
            Case::AllReduce(Algorithm::Ring),
            Case::AllReduce(Algorithm::TwoShot),
            Case::AllGather,
            Case::ReduceScatter,
            Case::Reduce(k - 1),
            Case::Broadcast(k / 2),
            Case::AllToAll,
        ];
        // a shift sends to another rank: there is none with one rank
        if k > 1 {
            cases.push(Case::Shift);
        }
        cases
    }

    /// Elements of each rank's input and output for `count`.
    fn sizes(self, count: usize, k: usize) -> (usize, usize) {
        match self {
            Case::AllGather => (count, k * count),
            Case::ReduceScatter => (k * count, count),
            Case::AllToAll => (k * count, k * count),
            _ => (count, count),
        }
    }

    fn name(self) -> String {
        match self {
            Case::AllReduce(a) => format!("all_reduce_{a:?}").to_lowercase(),
            Case::AllGather => "all_gather".into(),
            Case::ReduceScatter => "reduce_scatter".into(),
            Case::Reduce(r) => format!("reduce_root{r}"),
            Case::Broadcast(r) => format!("broadcast_root{r}"),
            Case::AllToAll => "all_to_all".into(),
            Case::Shift => "send_recv_shift".into(),
        }
    }

    /// Runs the case on `comm`: `input` in, the output buffer's bytes out.
    fn run(
        self,
        comm: &Communicator,
        dtype: DType,
        op: ReduceOp,
        count: usize,
        input: &[u8],
        opts: Options,
    ) -> Result<Vec<u8>, Error> {
        let k = comm.nranks();
        let (_, out_elems) = self.sizes(count, k);
        let size = dtype.size_bytes();
        let mut src = comm.alloc(input.len())?;
        src.copy_from_host(input)?;
        let mut dst = comm.alloc(out_elems * size)?;
        let r = comm.rank();
        let oop = |dst| Data::OutOfPlace { src: &src, dst };
        match self {
            Case::AllReduce(a) => comm.all_reduce(oop(&mut dst), count, dtype, op, Options { algorithm: a, ..opts })?,
            Case::AllGather => comm.all_gather(oop(&mut dst), count, dtype, opts)?,
            Case::ReduceScatter => comm.reduce_scatter(oop(&mut dst), count, dtype, op, opts)?,
            Case::Reduce(root) => comm.reduce(oop(&mut dst), count, dtype, op, root, opts)?,
            Case::Broadcast(root) => comm.broadcast(oop(&mut dst), count, dtype, root, opts)?,
            Case::AllToAll => comm.all_to_all(oop(&mut dst), count, dtype, opts)?,
            Case::Shift => {
                let mut g = comm.group();
                g.send(&src, count, dtype, (r + 1) % k)?;
                g.recv(&mut dst, count, dtype, (r + k - 1) % k)?;
                g.launch(opts)?;
            }
        }
        comm.synchronize()?;
        dst.to_host()
    }

    /// What rank `rank` must hold, from every rank's input.
    fn expected(self, comm: &Communicator, dtype: DType, op: ReduceOp, inputs: &[Vec<u8>]) -> Result<Vec<u8>, Error> {
        let (rank, k) = (comm.rank(), comm.nranks());
        // all_reduce's count: the elements of a rank's input
        let frame_elems = comm.frame_elems(dtype, inputs[rank].len() / dtype.size_bytes());
        let c = match self {
            Case::AllReduce(Algorithm::Ring) => CollRef::RingAllReduce { frame_elems },
            Case::AllReduce(Algorithm::TwoShot) => CollRef::TwoShotAllReduce { frame_elems },
            Case::AllGather => CollRef::AllGather,
            Case::ReduceScatter => CollRef::ReduceScatter { rank },
            Case::Reduce(root) if root == rank => CollRef::Reduce { root },
            // a non-root's output of a reduce is not written: it stays zero
            Case::Reduce(_) => return Ok(vec![0; inputs[rank].len()]),
            Case::Broadcast(root) => CollRef::Broadcast { root },
            Case::AllToAll => CollRef::AllToAll { rank },
            Case::Shift => return Ok(inputs[(rank + k - 1) % k].clone()),
        };
        collective(c, dtype, op, inputs)
    }
}

fn parse_bytes(s: &str) -> Result<usize, Error> {
    let s = s.trim();
    let (num, mult) = match s.chars().last() {
        Some('K' | 'k') => (&s[..s.len() - 1], 1 << 10),
        Some('M' | 'm') => (&s[..s.len() - 1], 1 << 20),
        Some('G' | 'g') => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<usize>()
        .map(|n| n * mult)
        .map_err(|_| Error::InvalidArgument(format!("size {s:?}")))
}

fn policies() -> [(&'static str, Compression); 4] {
    [
        ("off", Compression::Off),
        ("auto", Compression::Lossless(Lossless::Auto)),
        ("expans", Compression::Lossless(Lossless::Force(CodecId::ExpAns))),
        ("expwindow", Compression::Lossless(Lossless::Force(CodecId::ExpWindow))),
    ]
}

/// A deterministic seed per (case, dtype, op, count, rank).
fn seed(parts: &[&str], count: usize, rank: usize) -> u64 {
    parts
        .iter()
        .flat_map(|p| p.bytes())
        .fold(count as u64 ^ 0xC0FF_EE00 ^ (rank as u64) << 48, |h, b| {
            (h ^ b as u64).wrapping_mul(0x100_0000_01B3)
        })
}

/// The check on one rank; returns the number of failed cases.
fn check(comm: &Communicator, cli: &Cli, dump: Option<&PathBuf>) -> Result<usize, Error> {
    let (rank, k) = (comm.rank(), comm.nranks());
    let mut failed = 0;
    let mut cases = 0;
    let combos: Vec<(DType, ReduceOp)> = [DType::Bf16, DType::F32, DType::F16, DType::F8E4M3]
        .into_iter()
        .flat_map(|d| [ReduceOp::Sum, ReduceOp::Max].map(|o| (d, o)))
        .chain([ReduceOp::Prod, ReduceOp::Min, ReduceOp::Avg].map(|o| (DType::Bf16, o)))
        .collect();
    let start = Instant::now();
    for case in Case::all(k) {
        for &(dtype, op) in &combos {
            for (pname, compression) in policies() {
                for count in [0usize, 1, 1000, 1_500_007] {
                    let (in_elems, _) = case.sizes(count, k);
                    let tag = [case.name(), format!("{dtype:?}"), format!("{op:?}")];
                    let inputs: Vec<Vec<u8>> = (0..k)
                        .map(|r| {
                            testdata::elements(dtype, in_elems, seed(&tag.each_ref().map(|s| s.as_str()), count, r))
                        })
                        .collect();
                    let opts = Options {
                        compression: Some(compression),
                        ..Options::default()
                    };
                    let got = case.run(comm, dtype, op, count, &inputs[rank], opts)?;
                    let want = case.expected(comm, dtype, op, &inputs)?;
                    cases += 1;
                    let mut ok = got == want;
                    if ok && count <= 1000 && rank == 0 && pname != "expwindow" {
                        ok = sim_output(comm, case, dtype, op, count, &inputs, opts, cli)? == got;
                    }
                    if !ok {
                        failed += 1;
                        let bad = got.iter().zip(&want).position(|(a, b)| a != b);
                        eprintln!(
                            "rank {rank}: MISMATCH {} {dtype:?} {op:?} {pname} count {count}: first differing byte {bad:?}",
                            case.name()
                        );
                    }
                    let comparable = count == 1_500_007 && pname == "auto" && op == ReduceOp::Sum;
                    if let (Some(dir), true) = (dump, comparable && matches!(dtype, DType::Bf16 | DType::F32)) {
                        let d = dir.join(format!("{}__{dtype:?}", case.name()));
                        std::fs::create_dir_all(&d)
                            .and_then(|_| {
                                std::fs::write(d.join(format!("rank{rank}.in")), &inputs[rank])?;
                                std::fs::write(d.join(format!("rank{rank}.out")), &got)
                            })
                            .map_err(|source| Error::Io {
                                what: format!("writing {}", d.display()),
                                source,
                            })?;
                    }
                }
            }
        }
    }
    if rank == 0 {
        println!(
            "check over {:?} on {:?}: {cases} cases per rank x {k} ranks, {failed} failed on rank 0, {:.1} s",
            comm.transport(),
            comm.backend(),
            start.elapsed().as_secs_f64()
        );
    }
    Ok(failed)
}

/// Rank 0's output of `case` when the same inputs run on the simulator (in this process).
#[allow(clippy::too_many_arguments)]
fn sim_output(
    comm: &Communicator,
    case: Case,
    dtype: DType,
    op: ReduceOp,
    count: usize,
    inputs: &[Vec<u8>],
    opts: Options,
    cli: &Cli,
) -> Result<Vec<u8>, Error> {
    let config = Config {
        buffer_bytes: comm.config().buffer_bytes,
        timeout: Duration::from_millis(cli.timeout_ms),
        ..Config::sim()
    };
    let outs = run_sim(comm.nranks(), config, |sim| {
        case.run(&sim, dtype, op, count, &inputs[sim.rank()], opts)
    })?;
    Ok(outs.into_iter().next().unwrap_or_default())
}

/// The kill test on one rank: rank 1 exits during the second all_reduce; the others enqueue
/// 50 and synchronize, and must get the error (from a call or from `synchronize`) in time.
fn kill(comm: &Communicator, cli: &Cli) -> Result<bool, Error> {
    if comm.nranks() < 2 {
        return Err(Error::InvalidArgument("kill needs at least 2 ranks".into()));
    }
    let count = 64 << 20;
    let mut buf = comm.alloc(count * 2)?;
    let opts = Options::default();
    comm.all_reduce(Data::InPlace(&mut buf), count, DType::Bf16, ReduceOp::Sum, opts)?;
    comm.synchronize()?;
    if comm.rank() == 1 {
        std::thread::spawn(|| {
            std::thread::sleep(Duration::from_millis(5));
            std::process::exit(0)
        });
        let _ = comm.all_reduce(Data::InPlace(&mut buf), count, DType::Bf16, ReduceOp::Sum, opts);
        let _ = comm.synchronize();
        std::thread::sleep(Duration::from_secs(60));
        return Ok(true);
    }
    let start = Instant::now();
    let outcome = (0..50)
        .try_for_each(|_| comm.all_reduce(Data::InPlace(&mut buf), count, DType::Bf16, ReduceOp::Sum, opts))
        .and_then(|()| comm.synchronize());
    let took = start.elapsed();
    let limit = Duration::from_millis(cli.timeout_ms) + Duration::from_secs(10);
    let ok = outcome.is_err() && took < limit;
    println!(
        "kill over {:?}: rank {} got {:?} after {:.2} s (limit {:.0} s): {}",
        comm.transport(),
        comm.rank(),
        outcome.err().map(|e| e.to_string()),
        took.as_secs_f64(),
        limit.as_secs_f64(),
        if ok { "ok" } else { "FAILED" }
    );
    Ok(ok)
}

/// Bf16 values like a layer's gradients (roughly normal), as element bytes.
fn gradients(n: usize, rank: usize) -> Vec<u8> {
    let mut s = 0x9E37_79B9_7F4A_7C15u64 ^ (rank as u64 + 7).wrapping_mul(0xD1B5_4A32_D192_ED03);
    (0..n)
        .flat_map(|_| {
            let mut u = || {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                (s >> 40) as f32 / (1u64 << 24) as f32
            };
            let x = (u() + u() + u() + u() - 2.0) * 1.7;
            ((x.to_bits() >> 16) as u16).to_le_bytes()
        })
        .collect()
}

/// Mean seconds per call of `iters` calls of `f`, enqueued back to back after 3 warm-up calls
/// and synchronized once at the end of the timed region.
fn time(comm: &Communicator, iters: usize, mut f: impl FnMut() -> Result<(), Error>) -> Result<f64, Error> {
    for _ in 0..3 {
        f()?;
    }
    comm.synchronize()?;
    let s = Instant::now();
    for _ in 0..iters {
        f()?;
    }
    comm.synchronize()?;
    Ok(s.elapsed().as_secs_f64() / iters.max(1) as f64)
}

/// The benchmark on one rank; rank 0 prints one line per (size, collective, compression).
fn bench(comm: &Communicator, sizes: &[String], iters: usize) -> Result<(), Error> {
    let (rank, k) = (comm.rank(), comm.nranks());
    for s in sizes {
        let bytes = parse_bytes(s)?;
        let n = bytes / 2;
        let data = gradients(n, rank);
        let mut src = comm.alloc(bytes)?;
        src.copy_from_host(&data)?;
        let mut dst: DeviceBuffer = comm.alloc(bytes * k)?;
        for (pname, compression) in [
            ("off", Compression::Off),
            ("auto", Compression::Lossless(Lossless::Auto)),
        ] {
            let opts = Options {
                compression: Some(compression),
                ..Options::default()
            };
            let ar = time(comm, iters, || {
                comm.all_reduce(
                    Data::OutOfPlace {
                        src: &src,
                        dst: &mut dst,
                    },
                    n,
                    DType::Bf16,
                    ReduceOp::Sum,
                    opts,
                )
            })?;
            let ag = time(comm, iters, || {
                comm.all_gather(
                    Data::OutOfPlace {
                        src: &src,
                        dst: &mut dst,
                    },
                    n,
                    DType::Bf16,
                    opts,
                )
            })?;
            let sr = time(comm, iters, || {
                let mut g = comm.group();
                match rank {
                    0 => g.send(&src, n, DType::Bf16, 1)?,
                    1 => g.recv(&mut dst, n, DType::Bf16, 0)?,
                    _ => {}
                }
                g.launch(opts)
            })?;
            if rank == 0 {
                let gb = |b: usize, t: f64| b as f64 / t / 1e9;
                let bus = 2.0 * (k - 1) as f64 / k as f64;
                println!(
                    "bench {:?} {k} ranks size {:>6} MiB {pname:4}: all_reduce {:8.3} ms algbw {:7.2} GB/s busbw {:7.2} | all_gather {:8.3} ms algbw {:7.2} GB/s busbw {:7.2} | send/recv {:8.3} ms {:7.2} GB/s",
                    comm.transport(),
                    bytes >> 20,
                    ar * 1e3,
                    gb(bytes, ar),
                    gb(bytes, ar) * bus,
                    ag * 1e3,
                    gb(bytes * k, ag),
                    gb(bytes * k, ag) * (k - 1) as f64 / k as f64,
                    sr * 1e3,
                    gb(bytes, sr)
                );
            }
        }
    }
    Ok(())
}

/// Runs the subcommand on one rank; `true` when it passed.
fn on_rank(comm: Communicator, cli: &Cli) -> Result<bool, Error> {
    match &cli.cmd {
        Cmd::Check { dump } => Ok(check(&comm, cli, dump.as_ref())? == 0),
        Cmd::Kill => kill(&comm, cli),
        Cmd::Bench { sizes, iters } => bench(&comm, sizes, *iters).map(|_| true),
    }
}

fn config(cli: &Cli, base: Config) -> Result<Config, Error> {
    let mut c = base.with_env()?;
    c.timeout = Duration::from_millis(cli.timeout_ms);
    if cli.transport != "auto" {
        c.transport = cli.transport.parse::<TransportKind>()?;
    }
    Ok(c)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = (|| -> Result<bool, Error> {
        if let Some(comm) = child_communicator(config(&cli, Config::gpu())?)? {
            return on_rank(comm, &cli);
        }
        if zipcoll::cuda::is_available() && cli.transport != "sim" {
            let gpus = zipcoll::cuda::device_count()?;
            return Ok(spawn_ranks(cli.ranks.unwrap_or(gpus.max(2)))? == 0);
        }
        let oks = run_sim(cli.ranks.unwrap_or(4), config(&cli, Config::sim())?, |comm| {
            on_rank(comm, &cli)
        })?;
        Ok(oks.into_iter().all(|ok| ok))
    })();
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
