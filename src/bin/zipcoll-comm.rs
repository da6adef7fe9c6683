//! Runs zipcoll's collectives on GPUs (one process per GPU) or on the simulator, and checks or
//! times them.
//!
//! ```sh
//! zipcoll-comm check --transport p2p            # every collective x dtype x op x compression, bit for bit
//! zipcoll-comm check --quick --transport sim    # a representative subset, well under a minute on the simulator
//! zipcoll-comm check --coll all_gather,reduce --dtype f16 --count 1000
//! zipcoll-comm check --transport net --dump out # also writes inputs/outputs for the NCCL comparison
//! zipcoll-comm kill --transport net             # rank 1 dies mid-run: the others must fail in time
//! zipcoll-comm abort --transport p2p            # rank 1 calls abort() mid-run: the others fail within 1 s
//! zipcoll-comm cycles --cycles 1000             # init/abort cycles leave files, threads and memory as they were
//! ZIPCOLL_CHANNELS=256 zipcoll-comm resident --ranks 4  # a group too big to be resident: refused, the communicator works
//! zipcoll-comm graph --transport p2p --replays 20   # collectives captured in a CUDA graph, replayed with new inputs
//! zipcoll-comm premulsum --transport p2p         # PreMulSum, scalar by value and in device memory, every dtype
//! zipcoll-comm lossy --transport p2p --count 100000  # lossy calls within their bound, the same bytes as the simulator
//! zipcoll-comm bench --transport p2p --sizes 1M,16M,256M,1G
//! ```
//!
//! `check` compares every rank's output with the scalar reference of the same reduction order
//! (which the simulator matches bit for bit in CI) and, on GPUs for the small cases, with the
//! simulator's own output for the same inputs, computed in the same process; it synchronizes
//! after each call (calls are asynchronous) so a failure is an error of its case. Rank 0 prints
//! a line per collective: cases done of the total, failures, elapsed time. `--quick` and the
//! filters (`--coll`, `--dtype`, `--op`, `--compression`, `--count`) pick a subset. `bench`
//! enqueues its timed calls back to back and synchronizes once. `kill`: after one all_reduce,
//! rank 1 dies: a GPU rank's process exits; a simulated rank (a thread: exiting would end
//! every rank) stops participating and abandons its communicator without any cleanup, as a
//! dead process would; the others must each get a typed error (a failed collective, a timeout
//! or a peer's report) within the timeout.
//!
//! The parent process starts one child per rank (`--ranks`, default: one per GPU and at least
//! 2, placed on the GPUs round-robin); without GPUs (or with `--transport sim`) the ranks are
//! simulator threads. Settings: a flag beats its environment variable
//! (`--timeout-ms` > `ZIPCOLL_TIMEOUT_MS`, `--net-rate-limit` > `ZIPCOLL_NET_RATE_LIMIT`), which
//! beats the built-in default (`zipcoll::comm::Config`). Sizes and rates take the suffixes of
//! `zipcoll::units` (`64K`, `16MiB`, `1G`: powers of 1024). Exit statuses are those of every
//! zipcoll tool (`src/bin/common`): 0 ok, 1 a case or the kill check failed, 2 usage error, 3
//! runtime error.

#[path = "across_ranks/mod.rs"]
mod across_ranks;
#[path = "common/mod.rs"]
mod common;
#[path = "faults/mod.rs"]
mod faults;
#[path = "graph/mod.rs"]
mod graph;
#[path = "lossy_check/mod.rs"]
mod lossy_check;
#[path = "scalars/mod.rs"]
mod scalars;

use across_ranks::across_ranks;
use clap::{Args, Parser, Subcommand, ValueEnum};
use common::{say, Fail};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};
use zipcoll::comm::launch::{child_communicator, spawn_ranks};
use zipcoll::comm::{
    run_sim, Algorithm, CallTime, Communicator, Compression, Config, Data, DeviceBuffer, Lossless, Options,
    TransportKind,
};
use zipcoll::reference::{collective, CollRef};
use zipcoll::{testdata, units, CodecId, DType, Error, ReduceOp};

#[derive(Parser)]
#[command(
    name = "zipcoll-comm",
    version,
    about = "Checks or times zipcoll's collectives across GPUs (one process each) or simulated ranks",
    after_help = common::EXIT_STATUSES
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
    /// auto (GPUs if present, one process each, else simulated ranks), p2p, net or sim.
    #[arg(long, global = true, default_value = "auto", value_parser = parse_transport)]
    transport: TransportKind,
    /// Ranks, at least 1 (kill and bench need 2) [default: the number of GPUs and at least 2;
    /// without GPUs 4 simulated ranks].
    #[arg(long, global = true, value_parser = clap::value_parser!(u16).range(1..))]
    ranks: Option<u16>,
    /// Timeout of every wait for a peer, in milliseconds (at least 1) [default:
    /// $ZIPCOLL_TIMEOUT_MS, else 20000 on the simulator and 60000 on GPUs].
    #[arg(long, global = true, value_parser = clap::value_parser!(u64).range(1..))]
    timeout_ms: Option<u64>,
    /// The NET transport's rate limit per peer in bytes per second (500M, 2G: powers of 1024;
    /// off) [default: $ZIPCOLL_NET_RATE_LIMIT, read the same way, else none].
    #[arg(long, global = true, value_parser = parse_rate)]
    net_rate_limit: Option<RateLimit>,
}

/// `--net-rate-limit`'s value: bytes per second, or no limit.
#[derive(Clone, Copy, Debug)]
struct RateLimit(Option<u64>);

fn parse_rate(s: &str) -> Result<RateLimit, units::UnitError> {
    units::parse_rate_limit(s).map(RateLimit)
}

fn parse_transport(s: &str) -> Result<TransportKind, String> {
    s.parse().map_err(|e: Error| reason(e))
}

#[derive(Subcommand, Clone)]
enum Cmd {
    /// Every collective x dtype x op x compression at several sizes, bit for bit (tens of
    /// minutes on the simulator; --quick: well under a minute).
    #[command(after_help = common::EXIT_STATUSES)]
    Check(CheckArgs),
    /// After one all_reduce rank 1 dies (a GPU rank's process exits; a simulated rank stops
    /// participating and abandons its communicator); every other rank must get a typed error
    /// within the timeout. Needs at least 2 ranks.
    #[command(after_help = common::EXIT_STATUSES)]
    Kill,
    /// After one all_reduce rank 1 calls `abort()` 20 ms into the next; every other rank must
    /// get a typed error naming rank 1 within a second, whatever the timeout. Needs at least 2
    /// ranks.
    #[command(after_help = common::EXIT_STATUSES)]
    Abort,
    /// A send/recv group to and from every peer on every channel (2 x (ranks - 1) x channels
    /// warps in one launch): it either fits on the device and moves the right data, or is
    /// refused with an argument error after which a send/recv still works. Needs at least 2
    /// ranks; set the channels with ZIPCOLL_CHANNELS.
    #[command(after_help = common::EXIT_STATUSES)]
    Resident,
    /// Init/abort cycles: a communicator, an all_reduce that rank 1 abandons with `abort()`,
    /// the drop; in the last cycle each rank's open files and threads must not be above where
    /// they were in the second, its resident memory and the GPU's free memory within 64 MiB.
    /// Needs at least 2 ranks.
    #[command(after_help = common::EXIT_STATUSES)]
    Cycles {
        /// Cycles, at least 1.
        #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..))]
        cycles: u32,
    },
    /// Collectives captured into a CUDA graph on the caller's stream (all_reduce, all_gather,
    /// a ring shift of f32), replayed with new inputs, an uncaptured all_reduce between
    /// replays; every output checked, compression off, ExpAns and Auto. GPUs only; needs at
    /// least 2 ranks.
    #[command(after_help = common::EXIT_STATUSES)]
    Graph {
        /// Replays per compression, at least 1.
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
        replays: u32,
    },
    /// PreMulSum with its scalar by value and in device memory (rewritten between calls),
    /// every dtype, ring and two-shot all_reduce, reduce_scatter and reduce, against the
    /// reference bit for bit.
    #[command(after_help = common::EXIT_STATUSES)]
    Premulsum,
    /// Lossy calls (error bound and QSGD) of every collective they serve, f32 and bf16: each
    /// element within its bound of the exact result, and (on GPUs) the bytes of the
    /// simulator's run of the same calls.
    #[command(after_help = common::EXIT_STATUSES)]
    Lossy {
        /// Elements per rank's block, at least 1.
        #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..))]
        count: u64,
    },
    /// Times bf16 all_reduce, all_gather and send/recv (rank 0 to rank 1) per size,
    /// compression off and Auto; a run's time is its slowest rank's (a send's calls end when
    /// its frames are in the FIFOs, not when they arrive). Needs at least 2 ranks.
    #[command(after_help = common::EXIT_STATUSES)]
    Bench {
        /// Bytes per rank's buffer, at least 2 (one bf16 element; rounded down to whole
        /// elements): 4096, 64K, 16MiB, 1G (powers of 1024).
        #[arg(long, default_value = "1M,16M,128M,1G", value_delimiter = ',', value_parser = parse_bench_size)]
        sizes: Vec<u64>,
        /// Calls per timed run, at least 1 (after 3 warm-up calls), enqueued back to back and
        /// synchronized once; a run's time per call is its time on the slowest rank over
        /// `iters`.
        #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..))]
        iters: u32,
        /// Timed runs, at least 1, each after a barrier of every rank; the median run is
        /// reported.
        #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
        repeats: u32,
    },
}

/// `check`'s selection: everything, `--quick`'s subset, narrowed by the filters.
#[derive(Args, Clone, Debug, Default)]
struct CheckArgs {
    /// Writes each rank's inputs and outputs of the NCCL-comparable cases here.
    #[arg(long)]
    dump: Option<PathBuf>,
    /// A representative subset: every collective and compression with bf16 sum, f32 max,
    /// f8e4m3 sum and f64 sum at 1, 1000 and 40000 elements (the filters still apply).
    #[arg(long)]
    quick: bool,
    /// Only these collectives (all_reduce selects both algorithms).
    #[arg(long, value_enum, value_delimiter = ',')]
    coll: Vec<CollName>,
    /// Only these dtypes: bf16, f16, f32, f8e4m3, f8e5m2, i8, u8, i32, u32, i64, u64, f64.
    #[arg(long, value_delimiter = ',', value_parser = parse_dtype)]
    dtype: Vec<DType>,
    /// Only these reductions. With --dtype: exactly those pairs; alone, each picks from the
    /// default pairs (bf16 with every op; f32, f16 and f8e4m3 with sum and max; f64 and i64
    /// with sum and min, u8 with max, i32 with prod).
    #[arg(long, value_enum, value_delimiter = ',')]
    op: Vec<OpName>,
    /// Only these compressions.
    #[arg(long, value_enum, value_delimiter = ',')]
    compression: Vec<PolicyName>,
    /// Only these element counts per rank, each at most 2^28 [default: 0, 1, 1000, 1500007;
    /// --quick: 1, 1000, 40000].
    #[arg(long, value_delimiter = ',', value_parser = parse_count)]
    count: Vec<usize>,
}

/// A collective of the check, as `--coll` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "snake_case")]
enum CollName {
    AllReduce,
    AllReduceRing,
    #[value(name = "all_reduce_twoshot")]
    AllReduceTwoShot,
    AllGather,
    ReduceScatter,
    Reduce,
    Broadcast,
    AllToAll,
    #[value(name = "all_to_allv")]
    AllToAllv,
    SendRecv,
}

impl CollName {
    fn selects(self, case: Case) -> bool {
        matches!(
            (self, case),
            (CollName::AllReduce, Case::AllReduce(_))
                | (CollName::AllReduceRing, Case::AllReduce(Algorithm::Ring))
                | (CollName::AllReduceTwoShot, Case::AllReduce(Algorithm::TwoShot))
                | (CollName::AllGather, Case::AllGather)
                | (CollName::ReduceScatter, Case::ReduceScatter)
                | (CollName::Reduce, Case::Reduce(_))
                | (CollName::Broadcast, Case::Broadcast(_))
                | (CollName::AllToAll, Case::AllToAll)
                | (CollName::AllToAllv, Case::AllToAllv)
                | (CollName::SendRecv, Case::Shift)
        )
    }
}

/// A reduction, as `--op` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum OpName {
    Sum,
    Prod,
    Min,
    Max,
    Avg,
}

impl OpName {
    fn op(self) -> ReduceOp {
        match self {
            OpName::Sum => ReduceOp::Sum,
            OpName::Prod => ReduceOp::Prod,
            OpName::Min => ReduceOp::Min,
            OpName::Max => ReduceOp::Max,
            OpName::Avg => ReduceOp::Avg,
        }
    }
}

/// A compression of the check, as `--compression` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum PolicyName {
    Off,
    Auto,
    Expans,
    Expwindow,
}

impl PolicyName {
    const ALL: [PolicyName; 4] = [
        PolicyName::Off,
        PolicyName::Auto,
        PolicyName::Expans,
        PolicyName::Expwindow,
    ];

    fn name(self) -> &'static str {
        match self {
            PolicyName::Off => "off",
            PolicyName::Auto => "auto",
            PolicyName::Expans => "expans",
            PolicyName::Expwindow => "expwindow",
        }
    }

    fn compression(self) -> Compression {
        match self {
            PolicyName::Off => Compression::Off,
            PolicyName::Auto => Compression::Lossless(Lossless::Auto),
            PolicyName::Expans => Compression::Lossless(Lossless::Force(CodecId::ExpAns)),
            PolicyName::Expwindow => Compression::Lossless(Lossless::Force(CodecId::ExpWindow)),
        }
    }
}

fn parse_dtype(s: &str) -> Result<DType, String> {
    DType::from_name(s).ok_or_else(|| format!("unknown dtype {s:?} ({})", dtype_names()))
}

/// Every dtype's name, for messages.
fn dtype_names() -> String {
    DType::ALL.map(DType::name).join(", ")
}

/// The most elements per rank `check --count` takes: the check holds every rank's input in
/// each process (an all_to_all's is `ranks x count`).
const MAX_CHECK_COUNT: usize = 1 << 28;

fn parse_count(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if n <= MAX_CHECK_COUNT => Ok(n),
        _ => Err(format!("expected a number of elements in 0..={MAX_CHECK_COUNT}")),
    }
}

fn parse_bench_size(s: &str) -> Result<u64, String> {
    match units::parse_size(s) {
        Ok(b) if b >= 2 => Ok(b),
        Ok(b) => Err(format!("{b} bytes holds no bf16 element: at least 2")),
        Err(e) => Err(e.to_string()),
    }
}

/// An [`Error::InvalidArgument`]'s message (other errors in full).
fn reason(e: Error) -> String {
    match e {
        Error::InvalidArgument(m) => m,
        e => e.to_string(),
    }
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
    /// Uneven counts: rank `r` sends [`Case::uneven`]`(count, r, q)` elements to `q`.
    AllToAllv,
    Shift,
}

impl Case {
    /// The elements all_to_allv's rank `from` sends `to` for `count`: 0 to `count`, uneven.
    fn uneven(count: usize, from: usize, to: usize) -> usize {
        count * ((from + 2 * to) % 3) / 2
    }

    fn all(k: usize) -> Vec<Case> {
        let mut cases = vec![
            Case::AllReduce(Algorithm::Ring),
            Case::AllReduce(Algorithm::TwoShot),
            Case::AllGather,
            Case::ReduceScatter,
            Case::Reduce(k - 1),
            Case::Broadcast(k / 2),
            Case::AllToAll,
            Case::AllToAllv,
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
            Case::AllToAll | Case::AllToAllv => (k * count, k * count),
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
            Case::AllToAllv => "all_to_allv".into(),
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
            Case::AllToAllv => {
                // block q of the input goes to rank q, block q of the output comes from it
                let send: Vec<_> = (0..k).map(|q| (q * count, Case::uneven(count, r, q))).collect();
                let recv: Vec<_> = (0..k).map(|q| (q * count, Case::uneven(count, q, r))).collect();
                comm.all_to_allv(&src, &send, &mut dst, &recv, dtype, opts)?
            }
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
            Case::AllToAllv => {
                // the output starts zeroed: only the received ranges are written
                let (size, count) = (dtype.size_bytes(), inputs[rank].len() / dtype.size_bytes() / k);
                let mut out = vec![0u8; inputs[rank].len()];
                for (q, input) in inputs.iter().enumerate() {
                    let n = Case::uneven(count, q, rank) * size;
                    let (at, from) = (q * count * size, rank * count * size);
                    out[at..at + n].copy_from_slice(&input[from..from + n]);
                }
                return Ok(out);
            }
            Case::Shift => return Ok(inputs[(rank + k - 1) % k].clone()),
        };
        collective(c, dtype, op, inputs)
    }
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

/// The (dtype, op) pairs of the full check: bf16 with every op, the other coded float dtypes
/// with sum and max; of the dtypes without coders (RAW-only kernels) the 8-byte ones with sum
/// and min; of the coded integers u8 with max and i32 with sum and prod (its products wrap to
/// words no coder shrinks: RAW frames of a coded dtype).
fn default_combos() -> Vec<(DType, ReduceOp)> {
    [DType::Bf16, DType::F32, DType::F16, DType::F8E4M3]
        .into_iter()
        .flat_map(|d| [ReduceOp::Sum, ReduceOp::Max].map(|o| (d, o)))
        .chain([ReduceOp::Prod, ReduceOp::Min, ReduceOp::Avg].map(|o| (DType::Bf16, o)))
        .chain(
            [DType::F64, DType::I64]
                .into_iter()
                .flat_map(|d| [ReduceOp::Sum, ReduceOp::Min].map(|o| (d, o))),
        )
        .chain([
            (DType::U8, ReduceOp::Max),
            (DType::I32, ReduceOp::Sum),
            (DType::I32, ReduceOp::Prod),
        ])
        .collect()
}

/// What `check` runs: the collectives, the (dtype, op) pairs, the compressions and the counts.
#[derive(Debug)]
struct Selection {
    cases: Vec<Case>,
    combos: Vec<(DType, ReduceOp)>,
    policies: Vec<PolicyName>,
    counts: Vec<usize>,
}

impl Selection {
    /// The selection `args` make for `k` ranks (see [`CheckArgs`]); [`Error::InvalidArgument`]
    /// (a usage error) when it is empty.
    fn new(args: &CheckArgs, k: usize) -> Result<Selection, Error> {
        let cases: Vec<Case> = Case::all(k)
            .into_iter()
            .filter(|&c| args.coll.is_empty() || args.coll.iter().any(|n| n.selects(c)))
            .collect();
        let ops: Vec<ReduceOp> = args.op.iter().map(|o| o.op()).collect();
        let combos: Vec<(DType, ReduceOp)> = match (args.dtype.is_empty(), ops.is_empty()) {
            (false, false) => args
                .dtype
                .iter()
                .flat_map(|&d| ops.iter().map(move |&o| (d, o)))
                .collect(),
            (true, true) if args.quick => vec![
                (DType::Bf16, ReduceOp::Sum),
                (DType::F32, ReduceOp::Max),
                (DType::F8E4M3, ReduceOp::Sum),
                (DType::F64, ReduceOp::Sum),
            ],
            _ => default_combos()
                .into_iter()
                .filter(|(d, o)| {
                    (args.dtype.is_empty() || args.dtype.contains(d)) && (ops.is_empty() || ops.contains(o))
                })
                .collect(),
        };
        let policies = match args.compression.is_empty() {
            true => PolicyName::ALL.to_vec(),
            false => args.compression.clone(),
        };
        let counts = match (args.count.is_empty(), args.quick) {
            (false, _) => args.count.clone(),
            (true, true) => vec![1, 1000, 40_000],
            (true, false) => vec![0, 1, 1000, 1_500_007],
        };
        if cases.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "--coll {:?} selects no collective with {k} rank(s) (send_recv needs 2)",
                args.coll
            )));
        }
        if combos.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "--dtype {:?} --op {:?} select no pair of the defaults (bf16 with every op; f32, f16, f8e4m3 with sum and max): give both to run exactly those",
                args.dtype, args.op
            )));
        }
        Ok(Selection {
            cases,
            combos,
            policies,
            counts,
        })
    }

    /// Cases per collective.
    fn per_case(&self) -> usize {
        self.combos.len() * self.policies.len() * self.counts.len()
    }
}

/// The check on one rank; returns the number of failed cases. Rank 0 prints a line before and
/// one per collective.
fn check(comm: &Communicator, args: &CheckArgs) -> Result<usize, Error> {
    let (rank, k) = (comm.rank(), comm.nranks());
    let sel = Selection::new(args, k)?;
    let total = sel.cases.len() * sel.per_case();
    let mut failed = 0;
    let mut cases = 0;
    let start = Instant::now();
    // On GPUs the small cases are also compared with the simulator's output; on the simulator
    // that would be a comparison with itself.
    let against_sim = !comm.backend().is_sim();
    if rank == 0 {
        say!(
            "check over {:?} on {:?}, {k} ranks: {total} cases per rank ({} collectives x {} dtype/op x {} compressions x {} counts){}",
            comm.transport(),
            comm.backend(),
            sel.cases.len(),
            sel.combos.len(),
            sel.policies.len(),
            sel.counts.len(),
            if against_sim { "; counts up to 1000 also against the simulator" } else { "" }
        );
    }
    for &case in &sel.cases {
        let failed_before = failed;
        for &(dtype, op) in &sel.combos {
            for &policy in &sel.policies {
                for &count in &sel.counts {
                    let pname = policy.name();
                    let (in_elems, _) = case.sizes(count, k);
                    let tag = [case.name(), format!("{dtype:?}"), format!("{op:?}")];
                    let inputs: Vec<Vec<u8>> = (0..k)
                        .map(|r| {
                            testdata::elements(dtype, in_elems, seed(&tag.each_ref().map(|s| s.as_str()), count, r))
                        })
                        .collect();
                    let opts = Options {
                        compression: Some(policy.compression()),
                        ..Options::default()
                    };
                    let got = case.run(comm, dtype, op, count, &inputs[rank], opts)?;
                    let want = case.expected(comm, dtype, op, &inputs)?;
                    cases += 1;
                    let mut ok = got == want;
                    if ok && against_sim && count <= 1000 && rank == 0 && policy != PolicyName::Expwindow {
                        ok = sim_output(comm, case, dtype, op, count, &inputs, opts)? == got;
                    }
                    if !ok {
                        failed += 1;
                        let bad = got.iter().zip(&want).position(|(a, b)| a != b);
                        eprintln!(
                            "rank {rank}: MISMATCH {} {dtype:?} {op:?} {pname} count {count}: first differing byte {bad:?}",
                            case.name()
                        );
                    }
                    let comparable = count == 1_500_007 && policy == PolicyName::Auto && op == ReduceOp::Sum;
                    if let (Some(dir), true) = (&args.dump, comparable && matches!(dtype, DType::Bf16 | DType::F32)) {
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
        if rank == 0 {
            say!(
                "check {:<22} {cases:>5}/{total} cases, {} failed here, {failed} in all, {:.1} s",
                case.name(),
                failed - failed_before,
                start.elapsed().as_secs_f64()
            );
        }
    }
    if sel.cases.iter().any(|c| matches!(c, Case::AllReduce(Algorithm::Ring))) {
        let (rounds, wrong) = repeated_calls(comm)?;
        cases += rounds;
        failed += wrong;
        if rank == 0 {
            say!("check repeated all_reduce {rounds} rounds on the same buffers, {wrong} failed (on a GPU, plans not uploaded again)");
        }
    }
    if rank == 0 {
        say!(
            "check over {:?} on {:?}: {cases} cases per rank x {k} ranks, {failed} failed on rank 0, {:.1} s",
            comm.transport(),
            comm.backend(),
            start.elapsed().as_secs_f64()
        );
    }
    Ok(failed)
}

/// The same all_reduce (same buffers, count and options, so on a GPU the same plan, which the
/// call slots then do not upload again) over new data each round, each result checked against
/// the reference: (rounds, rounds that failed).
fn repeated_calls(comm: &Communicator) -> Result<(usize, usize), Error> {
    let (rank, k) = (comm.rank(), comm.nranks());
    let (dtype, op, count) = (DType::Bf16, ReduceOp::Sum, 10_007);
    let case = Case::AllReduce(Algorithm::Ring);
    let mut src = comm.alloc(count * dtype.size_bytes())?;
    let mut dst = comm.alloc(count * dtype.size_bytes())?;
    let opts = Options {
        compression: Some(Compression::Off),
        ..Options::default()
    };
    // more rounds than call slots, so every slot runs the plan again
    let rounds = 2 * comm.config().max_inflight + 1;
    let mut failed = 0;
    for round in 0..rounds {
        let inputs: Vec<Vec<u8>> = (0..k)
            .map(|r| testdata::elements(dtype, count, seed(&["repeat"], round, r)))
            .collect();
        src.copy_from_host(&inputs[rank])?;
        comm.all_reduce(
            Data::OutOfPlace {
                src: &src,
                dst: &mut dst,
            },
            count,
            dtype,
            op,
            opts,
        )?;
        comm.synchronize()?;
        if dst.to_host()? != case.expected(comm, dtype, op, &inputs)? {
            failed += 1;
            eprintln!("rank {rank}: MISMATCH repeated all_reduce, round {round}");
        }
    }
    Ok((rounds, failed))
}

/// Rank 0's output of `case` when the same inputs run on the simulator (in this process).
fn sim_output(
    comm: &Communicator,
    case: Case,
    dtype: DType,
    op: ReduceOp,
    count: usize,
    inputs: &[Vec<u8>],
    opts: Options,
) -> Result<Vec<u8>, Error> {
    let config = Config {
        buffer_bytes: comm.config().buffer_bytes,
        timeout: comm.config().timeout,
        ..Config::sim()
    };
    let outs = run_sim(comm.nranks(), config, |sim| {
        case.run(&sim, dtype, op, count, &inputs[sim.rank()], opts)
    })?;
    Ok(outs.into_iter().next().unwrap_or_default())
}

/// Whether `e` is what a dead peer must cause: a failed collective, a timeout, a peer's report
/// (the NET transport's), or the abort its own timed-out kernel raised (what the NET transport
/// reports then). Anything else (an I/O, a device, an argument error) is not the death seen.
fn is_peer_failure(e: &Error) -> bool {
    matches!(
        e,
        Error::Collective { .. } | Error::Timeout { .. } | Error::Remote { .. } | Error::Aborted
    )
}

/// The kill test on one rank: after a first all_reduce rank 1 dies during the second (on the
/// simulator, before it: a thread rank stops participating and abandons its communicator, as a
/// dead process would, nothing dropped); the others enqueue 50 and synchronize, and must get a
/// peer failure (from a call or from `synchronize`) within the timeout and 10 s.
fn kill(comm: Communicator) -> Result<bool, Error> {
    // smaller on the simulator, whose first all_reduce would otherwise take minutes
    let count = if comm.backend().is_sim() { 1 << 16 } else { 64 << 20 };
    let mut buf = comm.alloc(count * 2)?;
    let opts = Options::default();
    comm.all_reduce(Data::InPlace(&mut buf), count, DType::Bf16, ReduceOp::Sum, opts)?;
    comm.synchronize()?;
    if comm.rank() == 1 {
        if comm.backend().is_sim() {
            say!("kill: rank 1 stops participating and abandons its communicator (a simulated rank's death)");
            std::mem::forget(buf);
            std::mem::forget(comm);
            return Ok(true);
        }
        std::thread::spawn(|| {
            std::thread::sleep(Duration::from_millis(5));
            std::process::exit(0)
        });
        let _ = comm.all_reduce(Data::InPlace(&mut buf), count, DType::Bf16, ReduceOp::Sum, opts);
        let _ = comm.synchronize();
        std::thread::sleep(Duration::from_secs(60));
        return Ok(false);
    }
    let start = Instant::now();
    let outcome = (0..50)
        .try_for_each(|_| comm.all_reduce(Data::InPlace(&mut buf), count, DType::Bf16, ReduceOp::Sum, opts))
        .and_then(|()| comm.synchronize());
    let took = start.elapsed();
    let limit = comm.config().timeout + Duration::from_secs(10);
    let (ok, what) = match &outcome {
        Ok(()) => (false, "no error: the 50 calls succeeded without rank 1".to_owned()),
        Err(e) => (is_peer_failure(e) && took < limit, format!("error `{e}`")),
    };
    say!(
        "kill over {:?}: rank {} got {what} after {:.2} s (limit {:.0} s): {}",
        comm.transport(),
        comm.rank(),
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

/// Bytes in the largest binary unit that keeps them whole or nearly (`64 KiB`, `1.50 MiB`).
fn binary_bytes(bytes: usize) -> String {
    let units = [("GiB", 30), ("MiB", 20), ("KiB", 10)];
    match units.iter().find(|&&(_, shift)| bytes >= 1 << shift) {
        Some(&(unit, shift)) if bytes.is_multiple_of(1 << shift) => format!("{} {unit}", bytes >> shift),
        Some(&(unit, shift)) => format!("{:.2} {unit}", bytes as f64 / (1u64 << shift) as f64),
        None => format!("{bytes} B"),
    }
}

/// Seconds as milliseconds.
fn millis(s: f64) -> String {
    format!("{:.3} ms", s * 1e3)
}

/// Bytes per second in GB/s, or MB/s below 1 GB/s (10^9 and 10^6 bytes, as NCCL's tests).
fn rate(bytes_per_s: f64) -> String {
    if bytes_per_s >= 1e9 {
        format!("{:.2} GB/s", bytes_per_s / 1e9)
    } else {
        format!("{:.2} MB/s", bytes_per_s / 1e6)
    }
}

/// A timed run's seconds per call: in all, and until the last call was enqueued (what the
/// host spent; the rest is the device's).
#[derive(Clone, Copy)]
struct PerCall {
    total: f64,
    enqueue: f64,
    /// With `Config::profile`, over every timed call: the median kernel time, the median
    /// upload time of the calls that uploaded their plan, and how many did (seconds).
    device: Option<DeviceTimes>,
}

#[derive(Clone, Copy)]
struct DeviceTimes {
    kernel: f64,
    upload: f64,
    uploads: usize,
    calls: usize,
}

impl DeviceTimes {
    /// The medians of `times` (`None` if there are none).
    fn of(times: &[CallTime]) -> Option<DeviceTimes> {
        let median = |mut v: Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v.get(v.len() / 2).copied().unwrap_or(0.0)
        };
        let uploads: Vec<f64> = times.iter().filter_map(|t| t.upload).map(|d| d.as_secs_f64()).collect();
        (!times.is_empty()).then(|| DeviceTimes {
            kernel: median(times.iter().map(|t| t.kernel.as_secs_f64()).collect()),
            uploads: uploads.len(),
            upload: median(uploads),
            calls: times.len(),
        })
    }

    /// `kernel 12.3 us, upload 2.1 us (1/20)`.
    fn describe(self) -> String {
        format!(
            "kernel {:6.1} us, upload {:5.1} us ({}/{})",
            self.kernel * 1e6,
            self.upload * 1e6,
            self.uploads,
            self.calls
        )
    }
}

/// Seconds per call of `f` (the run of median total time): `repeats` (at least 1) timed runs of
/// `iters` (at least 1) calls, each run enqueued back to back after a host barrier of every
/// rank (so no rank's clock starts while a peer is still in its previous run) and synchronized
/// once at its end; 3 warm-up calls first.
fn time(
    comm: &Communicator,
    iters: u32,
    repeats: u32,
    mut f: impl FnMut() -> Result<(), Error>,
) -> Result<PerCall, Error> {
    for _ in 0..3 {
        f()?;
    }
    comm.synchronize()?;
    let _warm_up = comm.call_times();
    let mut runs = Vec::with_capacity(repeats as usize);
    for _ in 0..repeats {
        comm.barrier()?;
        let s = Instant::now();
        for _ in 0..iters {
            f()?;
        }
        let enqueue = s.elapsed().as_secs_f64() / f64::from(iters);
        comm.synchronize()?;
        let total = s.elapsed().as_secs_f64() / f64::from(iters);
        runs.push(PerCall {
            total,
            enqueue,
            device: None,
        });
    }
    // the timed calls' device times, before the all_reduce below adds one
    let device = DeviceTimes::of(&comm.call_times());
    // a run lasts until its slowest rank is done: a sender's calls end once its frames are in
    // the FIFOs, which over NET (and with FIFOs as large as the data) is long before they
    // arrive, so a send/recv timed on the sender alone overstates the rate
    let slowest = across_ranks(comm, &runs.iter().map(|r| r.total).collect::<Vec<_>>(), ReduceOp::Max)?;
    for (run, total) in runs.iter_mut().zip(slowest) {
        run.total = total;
    }
    runs.sort_by(|a, b| a.total.total_cmp(&b.total));
    Ok(PerCall {
        device,
        ..runs[runs.len() / 2]
    })
}

/// The benchmark on one rank (at least 2 ranks: send/recv goes from rank 0 to rank 1); rank 0
/// prints one line per (size, compression).
fn bench(comm: &Communicator, sizes: &[u64], iters: u32, repeats: u32) -> Result<(), Error> {
    let (rank, k) = (comm.rank(), comm.nranks());
    for &size in sizes {
        let too_large = || Error::InvalidArgument(format!("--sizes {size}: x {k} ranks does not fit this machine"));
        let n = usize::try_from(size / 2).map_err(|_| too_large())?;
        let bytes = n * 2;
        let gathered = bytes.checked_mul(k).ok_or_else(too_large)?;
        let data = gradients(n, rank);
        let mut src = comm.alloc(bytes)?;
        src.copy_from_host(&data)?;
        let mut dst: DeviceBuffer = comm.alloc(gathered)?;
        for policy in [PolicyName::Off, PolicyName::Auto] {
            let pname = policy.name();
            let opts = Options {
                compression: Some(policy.compression()),
                ..Options::default()
            };
            let ar = time(comm, iters, repeats, || {
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
            let ag = time(comm, iters, repeats, || {
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
            let sr = time(comm, iters, repeats, || {
                let mut g = comm.group();
                match rank {
                    0 => g.send(&src, n, DType::Bf16, 1)?,
                    1 => g.recv(&mut dst, n, DType::Bf16, 0)?,
                    _ => {}
                }
                g.launch(opts)
            })?;
            if let (Some(a), Some(g)) = (ar.device, ag.device) {
                // ranks above 1 take no part in the send/recv
                let s = sr.device.map_or_else(|| "none".to_owned(), DeviceTimes::describe);
                say!(
                    "profile rank {rank} size {:>9} {pname:4}: all_reduce {} | all_gather {} | send/recv {s}",
                    binary_bytes(bytes),
                    a.describe(),
                    g.describe(),
                );
            }
            if rank == 0 {
                let bw = |b: usize, t: f64| b as f64 / t;
                let bus = 2.0 * (k - 1) as f64 / k as f64;
                say!(
                    "bench {:?} {k} ranks size {:>9} {pname:4}: all_reduce {:>10} algbw {:>11} busbw {:>11} (host {:>5.1} us) | all_gather {:>10} algbw {:>11} busbw {:>11} | send/recv {:>10} {:>11}",
                    comm.transport(),
                    binary_bytes(bytes),
                    millis(ar.total),
                    rate(bw(bytes, ar.total)),
                    rate(bw(bytes, ar.total) * bus),
                    ar.enqueue * 1e6,
                    millis(ag.total),
                    rate(bw(gathered, ag.total)),
                    rate(bw(gathered, ag.total) * (k - 1) as f64 / k as f64),
                    millis(sr.total),
                    rate(bw(bytes, sr.total))
                );
            }
        }
    }
    Ok(())
}

/// Runs the subcommand on one rank; `true` when it passed.
fn on_rank(comm: Communicator, cli: &Cli) -> Result<bool, Error> {
    match &cli.cmd {
        Cmd::Check(args) => Ok(check(&comm, args)? == 0),
        Cmd::Kill => kill(comm),
        Cmd::Abort => faults::abort(comm),
        Cmd::Cycles { cycles } => faults::cycles(comm, *cycles),
        Cmd::Resident => faults::resident(comm),
        Cmd::Graph { replays } => graph::graph(comm, *replays),
        Cmd::Premulsum => scalars::premulsum(&comm),
        Cmd::Lossy { count } => lossy_check::lossy(&comm, *count as usize),
        Cmd::Bench { sizes, iters, repeats } => bench(&comm, sizes, *iters, *repeats).map(|_| true),
    }
}

/// `base` with the environment's settings, then the flags' (a flag beats its variable).
fn config(cli: &Cli, base: Config) -> Result<Config, Error> {
    let mut c = base.with_env()?;
    if let Some(ms) = cli.timeout_ms {
        c.timeout = Duration::from_millis(ms);
    }
    if let Some(RateLimit(rate)) = cli.net_rate_limit {
        c.net.rate_limit_bytes_per_s = rate;
    }
    if cli.transport != TransportKind::Auto {
        c.transport = cli.transport;
    }
    Ok(c)
}

/// The usage errors that do not depend on a communicator: the ranks a command needs, what
/// `check` selects.
fn validate(cli: &Cli, nranks: usize) -> Result<(), Fail> {
    match &cli.cmd {
        Cmd::Kill if nranks < 2 => Err(Fail::Usage(format!(
            "kill --ranks {nranks}: needs at least 2 ranks (rank 1 dies, the others must notice)"
        ))),
        Cmd::Graph { .. } if nranks < 2 => Err(Fail::Usage(format!(
            "graph --ranks {nranks}: needs at least 2 ranks (its ring shift goes to another rank)"
        ))),
        Cmd::Abort | Cmd::Cycles { .. } | Cmd::Resident if nranks < 2 => Err(Fail::Usage(format!(
            "--ranks {nranks}: needs at least 2 ranks (rank 1 aborts, the others must notice)"
        ))),
        Cmd::Bench { .. } if nranks < 2 => Err(Fail::Usage(format!(
            "bench --ranks {nranks}: needs at least 2 ranks (its send/recv goes from rank 0 to rank 1)"
        ))),
        Cmd::Check(args) => Selection::new(args, nranks).map(|_| ()).map_err(Fail::from),
        _ => Ok(()),
    }
}

/// What the command's failure on some rank means.
fn failed(cli: &Cli) -> Fail {
    Fail::Check(
        match cli.cmd {
            Cmd::Check(_) => "cases failed (the MISMATCH lines above)",
            Cmd::Kill => "a rank did not get a peer failure in time (the kill lines above)",
            Cmd::Abort => "a rank did not get rank 1's abort in time (the abort lines above)",
            Cmd::Cycles { .. } => "the cycles left resources behind or a call did not fail (above)",
            Cmd::Resident => "a group was neither run right nor refused cleanly (the resident lines above)",
            Cmd::Graph { .. } => "a replayed graph gave wrong outputs (the graph lines above)",
            Cmd::Premulsum => "a PreMulSum differs from the reference (the premulsum lines above)",
            Cmd::Lossy { .. } => "a lossy call broke its bound or differs from the simulator (the lossy lines above)",
            Cmd::Bench { .. } => "the benchmark failed",
        }
        .into(),
    )
}

fn run(cli: &Cli) -> Result<(), Fail> {
    if let Some(comm) = child_communicator(config(cli, Config::gpu())?)? {
        return match on_rank(comm, cli)? {
            true => Ok(()),
            false => Err(failed(cli)),
        };
    }
    // the environment's settings are checked before any rank starts
    config(cli, Config::sim())?;
    let ranks = cli.ranks.map(usize::from);
    if zipcoll::cuda::is_available() && cli.transport != TransportKind::Sim {
        let nranks = ranks.unwrap_or(zipcoll::cuda::device_count()?.max(2));
        validate(cli, nranks)?;
        return match spawn_ranks(nranks)? {
            0 => Ok(()),
            // the rank said why on its stderr
            1 => Err(failed(cli)),
            2 => Err(Fail::Usage("a rank refused its arguments (above)".into())),
            code => Err(Fail::Runtime(format!("a rank failed with exit status {code} (above)"))),
        };
    }
    let nranks = ranks.unwrap_or(4);
    validate(cli, nranks)?;
    let oks = run_sim(nranks, config(cli, Config::sim())?, |comm| on_rank(comm, cli))?;
    match oks.into_iter().all(|ok| ok) {
        true => Ok(()),
        false => Err(failed(cli)),
    }
}

fn main() -> ExitCode {
    common::exit(run(&Cli::parse()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_rates_read_as_written() {
        assert_eq!(binary_bytes(1000), "1000 B");
        assert_eq!(binary_bytes(64 << 10), "64 KiB");
        assert_eq!(binary_bytes(3 << 19), "1.50 MiB");
        assert_eq!(binary_bytes(1 << 30), "1 GiB");
        assert_eq!(rate(2.5e9), "2.50 GB/s");
        assert_eq!(rate(1.2e6), "1.20 MB/s");
    }

    #[test]
    fn selections_follow_quick_and_the_filters() {
        let all = Selection::new(&CheckArgs::default(), 4).unwrap();
        assert_eq!((all.cases.len(), all.combos.len(), all.policies.len()), (9, 18, 4));
        assert_eq!(all.counts, vec![0, 1, 1000, 1_500_007]);
        let quick = CheckArgs {
            quick: true,
            ..CheckArgs::default()
        };
        let q = Selection::new(&quick, 4).unwrap();
        assert_eq!(
            (q.cases.len() * q.per_case(), q.counts.clone()),
            (432, vec![1, 1000, 40_000])
        );
        let f16 = CheckArgs {
            dtype: vec![DType::F16],
            coll: vec![CollName::AllReduce],
            ..quick.clone()
        };
        let s = Selection::new(&f16, 4).unwrap();
        assert_eq!(s.combos, vec![(DType::F16, ReduceOp::Sum), (DType::F16, ReduceOp::Max)]);
        assert_eq!(s.cases.len(), 2);
        let exact = CheckArgs {
            dtype: vec![DType::F8E5M2],
            op: vec![OpName::Avg],
            ..CheckArgs::default()
        };
        assert_eq!(
            Selection::new(&exact, 2).unwrap().combos,
            vec![(DType::F8E5M2, ReduceOp::Avg)]
        );
        let none = CheckArgs {
            dtype: vec![DType::F16],
            op: vec![],
            coll: vec![CollName::SendRecv],
            ..CheckArgs::default()
        };
        assert!(matches!(Selection::new(&none, 1), Err(Error::InvalidArgument(_))));
        let no_pair = CheckArgs {
            op: vec![OpName::Prod],
            dtype: vec![],
            ..CheckArgs::default()
        };
        assert_eq!(
            Selection::new(&no_pair, 2).unwrap().combos,
            vec![(DType::Bf16, ReduceOp::Prod), (DType::I32, ReduceOp::Prod)]
        );
    }
}
