//! zipcoll-perf: nccl-tests' `*_perf` for zipcoll. One collective swept over sizes, a line per
//! size with nccl-tests' columns and the codec each call sends with:
//!
//! ```sh
//! zipcoll-perf all_reduce -b 1M -e 1G -f 2 -d bf16 -o sum -n 20 -w 5 -c 1     # one process per GPU
//! zipcoll-perf sendrecv -b 64K -e 16M --transport sim --ranks 4                 # simulator threads
//! zipcoll-perf all_gather -b 64M -e 64M --compression expans --json
//! zipcoll-perf sendrecv -b 16M -e 256M -f 4 --compression off,auto,expans      # a row per setting
//! zipcoll-perf all_reduce -b 64M -e 64M -d f32 --compression off,auto,lossy:error-bound:rel=1e-4,lossy:qsgd:bits=4+bucket=256
//! ```
//!
//! | column      | meaning                                                                  |
//! |-------------|--------------------------------------------------------------------------|
//! | size        | bytes, as nccl-tests counts them (all_gather: the gathered output; reduce_scatter: the input; others: one rank's buffer) |
//! | count       | the call's `count` argument                                              |
//! | type, redop, root | the call's                                                         |
//! | time        | microseconds per call: `-n` calls enqueued back to back after `-w` warm-up calls, synchronized once, on the slowest rank |
//! | algbw       | size / time (GB/s, 10^9 bytes)                                           |
//! | busbw       | algbw x nccl-tests' factor: all_reduce 2(k-1)/k, all_gather, reduce_scatter and all_to_all (k-1)/k, the others 1 |
//! | #wrong      | with `-c 1`: elements that differ from the scalar reference of the same reduction order (zipcoll is bit-exact, so any is a failure), summed over ranks; `N/A` with `-c 0` and for lossy settings (`zipcoll-comm lossy` checks their bounds) |
//! | wire        | bytes on the wire per call over those of the same call with compression off (one untimed call), summed over ranks, frame headers included; `N/A` where the transport does not count them (P2P, SIM: only NET's proxies do) |
//! | codec       | what rank 0's calls send: `lossy` for a lossy setting (its levels coded as Auto decides), the forced codec, `raw` with compression off, or Auto's pick for this size and data (`Communicator::auto_plan`; on a GPU Auto's checks may send some calls RAW where coding ran slower, which the wire ratio shows) |
//! | compression | the setting the row ran with (`--compression` takes several, comma-separated: each size runs each in turn, on the same buffers and ranks); `lossy:SPEC` quantizes (`zipcoll::comm::Lossy`, its own fields joined by `+` here: `lossy:qsgd:bits=4+bucket=256`) |
//!
//! With several settings the table ends with each one's time over the first's per size
//! (`# auto / off: ...`), ratios measured in one invocation. `--plot FILE.png` draws busbw
//! against size, a line per setting (`perf/plot.rs`).
//!
//! The ranks are as `zipcoll-comm`'s: one child process per rank on GPUs (`--ranks`, default
//! one per GPU and at least 2), simulator threads without a GPU or with `--transport sim`.
//! Every rank's input is `zipcoll::testdata::normal` of its own seed (`--data normal`),
//! `zipcoll::testdata::uniform` (`--data random`: every bit pattern alike, incompressible), or
//! real data (`--data file:PATH`: raw little-endian elements of `-d`, or a `.safetensors` file
//! whose tensors of `-d` are taken in file order): rank `r` reads it from `r / k` of the way in,
//! wrapping around, so that ranks hold different parts. Either way each rank can compute every
//! rank's input, and so the reference. `sendrecv` is nccl-tests' ring shift: each rank sends to
//! the next and receives from the previous one, in one group. `--csv` and `--json` print the
//! columns as values; on a terminal, a sweep of several sizes shows on stderr which size runs.
//! Not yet here (issue 14): NCCL in the same invocation, the coding breakdown.

#[path = "across_ranks/mod.rs"]
mod across_ranks;
#[path = "common/mod.rs"]
mod common;
#[path = "zipcoll/input.rs"]
mod input;
#[path = "perf/plot.rs"]
mod plot;

use across_ranks::across_ranks;
use clap::{Parser, ValueEnum};
use common::{say, Fail};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Instant;
use zipcoll::comm::launch::{child_communicator, spawn_ranks};
use zipcoll::comm::{
    run_sim, Communicator, Compression, Config, Data, DeviceBuffer, Lossless, Lossy, Options, TransportKind,
};
use zipcoll::reference::{collective, CollRef};
use zipcoll::{testdata, units, DType, Error, ReduceOp};

#[derive(Parser, Debug)]
#[command(name = "zipcoll-perf", version, about = "Sweeps one collective over sizes, as nccl-tests' *_perf do", after_help = common::EXIT_STATUSES)]
struct Cli {
    /// The collective.
    #[arg(value_enum)]
    coll: Coll,
    /// The smallest size in bytes (`64K`, `1M`: powers of 1024).
    #[arg(short = 'b', long = "minbytes", default_value = "32M", value_parser = parse_bytes)]
    min: u64,
    /// The largest size in bytes.
    #[arg(short = 'e', long = "maxbytes", default_value = "32M", value_parser = parse_bytes)]
    max: u64,
    /// The factor from one size to the next (at least 2).
    #[arg(short = 'f', long = "stepfactor", default_value_t = 2, value_parser = clap::value_parser!(u64).range(2..))]
    factor: u64,
    /// The element type: bf16, f16, f32, f8e4m3, f8e5m2, f64, i8, u8, i32, u32, i64, u64.
    #[arg(short = 'd', long = "datatype", default_value = "bf16", value_parser = input::parse_dtype)]
    dtype: DType,
    /// The reduction: sum, prod, min, max, avg (all_reduce, reduce_scatter, reduce).
    #[arg(short = 'o', long = "op", default_value = "sum", value_parser = parse_op)]
    op: ReduceOp,
    /// The root of reduce and broadcast.
    #[arg(short = 'r', long, default_value_t = 0)]
    root: usize,
    /// Timed calls per size, at least 1.
    #[arg(short = 'n', long = "iters", default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    iters: u32,
    /// Warm-up calls per size.
    #[arg(short = 'w', long = "warmup_iters", default_value_t = 5)]
    warmup: u32,
    /// 1: check every rank's output against the reference (#wrong); 0: do not.
    #[arg(short = 'c', long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(0..=1))]
    check: u8,
    /// Ranks (at least 2); default one per GPU (at least 2), 4 on the simulator.
    #[arg(long, value_parser = clap::value_parser!(u16).range(2..))]
    ranks: Option<u16>,
    /// Compression: off, auto, a codec name (expans, expwindow, fixedlen, huffman), or
    /// lossy:SPEC (a lossy policy, its fields joined by `+`: lossy:error-bound:rel=1e-4,
    /// lossy:qsgd:bits=4+bucket=256); several, comma-separated, run one after the other at each
    /// size.
    #[arg(long, default_value = "auto", value_parser = parse_setting, value_delimiter = ',', num_args = 1..)]
    compression: Vec<Setting>,
    /// Transport: auto, p2p, net, sim (simulator threads).
    #[arg(long, default_value = "auto", value_parser = parse_transport)]
    transport: TransportKind,
    /// One JSON object per size instead of the table.
    #[arg(long, conflicts_with = "csv")]
    json: bool,
    /// Comma-separated values, a header line then a line per size, instead of the table.
    #[arg(long)]
    csv: bool,
    /// Draws busbw against size, a line per compression setting, into this PNG file.
    #[arg(long, value_name = "FILE.png")]
    plot: Option<PathBuf>,
    /// The inputs: `normal` (N(0,1) of each rank's seed; integers: N(0, 100^2), 8-bit ones
    /// N(0, 10^2)), `random` (every bit pattern alike:
    /// data that does not compress) or `file:PATH` (a raw file of `-d` elements, or a
    /// `.safetensors` file's tensors of `-d`).
    #[arg(long, default_value = "normal", value_parser = parse_data)]
    data: Source,
}

/// Where the ranks' inputs come from (see the module docs).
#[derive(Clone, Debug)]
enum Source {
    Normal,
    Random,
    File(PathBuf),
}

fn parse_data(s: &str) -> Result<Source, String> {
    match s.split_once(':') {
        _ if s == "normal" => Ok(Source::Normal),
        _ if s == "random" => Ok(Source::Random),
        Some(("file", path)) if !path.is_empty() => Ok(Source::File(PathBuf::from(path))),
        _ => Err(format!("{s:?}: expected normal, random or file:PATH")),
    }
}

/// The elements every rank's input is cut from, and what they are.
struct Pool {
    bytes: Vec<u8>,
    about: String,
}

impl Pool {
    /// The pool of `cli.data` (`None` for `normal`), read once per process before the ranks
    /// start.
    fn load(cli: &Cli) -> Result<Option<Pool>, Fail> {
        let Source::File(path) = &cli.data else {
            return Ok(None);
        };
        let file = input::read(path, Some(cli.dtype))?;
        let tensors: Vec<&input::Tensor> = file.tensors.iter().filter(|t| t.dtype == cli.dtype).collect();
        let bytes: Vec<u8> = tensors.iter().flat_map(|t| file.data(t).iter().copied()).collect();
        if bytes.is_empty() {
            return Err(Fail::Usage(format!(
                "{}: no {} elements in it",
                path.display(),
                cli.dtype.name()
            )));
        }
        let names: Vec<&str> = tensors.iter().take(3).map(|t| t.name.as_str()).collect();
        let about = format!(
            "{} ({}, {} elements of {} tensor(s): {}{}; {} skipped)",
            path.display(),
            file.format,
            bytes.len() / cli.dtype.size_bytes(),
            tensors.len(),
            names.join(", "),
            if tensors.len() > 3 { ", ..." } else { "" },
            file.skipped.len()
        );
        Ok(Some(Pool { bytes, about }))
    }

    /// `n` elements for rank `rank` of `k`: from `rank / k` of the way in, wrapping around.
    fn input(&self, elem: usize, n: usize, rank: usize, k: usize) -> Vec<u8> {
        let elems = self.bytes.len() / elem;
        let start = rank * elems / k;
        (0..n)
            .flat_map(|i| {
                let at = (start + i) % elems * elem;
                self.bytes[at..at + elem].iter().copied()
            })
            .collect()
    }
}

/// The collectives, by nccl-tests' names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "snake_case")]
enum Coll {
    AllReduce,
    AllGather,
    ReduceScatter,
    AllToAll,
    Broadcast,
    Reduce,
    Sendrecv,
}

impl Coll {
    /// nccl-tests' bus bandwidth factor for `k` ranks.
    fn bus_factor(self, k: usize) -> f64 {
        let k = k as f64;
        match self {
            Coll::AllReduce => 2.0 * (k - 1.0) / k,
            Coll::AllGather | Coll::ReduceScatter | Coll::AllToAll => (k - 1.0) / k,
            Coll::Broadcast | Coll::Reduce | Coll::Sendrecv => 1.0,
        }
    }

    /// Whether the operator applies.
    fn reduces(self) -> bool {
        matches!(self, Coll::AllReduce | Coll::ReduceScatter | Coll::Reduce)
    }
}

/// One size's buffers, in elements: the call's `count`, and each rank's input and output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Shape {
    count: usize,
    input: usize,
    output: usize,
}

/// The shape of `size` bytes of `coll` on `k` ranks (nccl-tests' conventions, see the module
/// table), rounded down to whole elements on every rank.
fn shape(coll: Coll, size: u64, elem: usize, k: usize) -> Shape {
    let elems = (size as usize) / elem;
    match coll {
        Coll::AllGather => {
            let count = elems / k;
            Shape {
                count,
                input: count,
                output: count * k,
            }
        }
        Coll::ReduceScatter => {
            let count = elems / k;
            Shape {
                count,
                input: count * k,
                output: count,
            }
        }
        Coll::AllToAll => {
            let count = elems / k;
            Shape {
                count,
                input: count * k,
                output: count * k,
            }
        }
        _ => Shape {
            count: elems,
            input: elems,
            output: elems,
        },
    }
}

/// The sizes from `min` to `max`, each `factor` times the last.
fn sizes(min: u64, max: u64, factor: u64) -> Vec<u64> {
    let mut out = Vec::new();
    let mut s = min.max(1);
    while s <= max {
        out.push(s);
        match s.checked_mul(factor) {
            Some(next) => s = next,
            None => break,
        }
    }
    out
}

fn parse_bytes(s: &str) -> Result<u64, String> {
    units::parse_size(s).map_err(|e| e.to_string())
}

fn parse_op(s: &str) -> Result<ReduceOp, String> {
    let want = s.trim().to_ascii_lowercase();
    ReduceOp::ALL
        .into_iter()
        .find(|o| format!("{o:?}").to_ascii_lowercase() == want)
        .ok_or_else(|| format!("unknown op {s:?}: sum, prod, min, max or avg"))
}

/// One `--compression` setting: a lossless policy, or a lossy one (whose levels Auto codes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Setting {
    Lossless(Compression),
    Lossy(Lossy),
}

impl Setting {
    /// The call options that apply it.
    fn options(self) -> Options {
        match self {
            Setting::Lossless(c) => Options {
                compression: Some(c),
                lossy: Some(Lossy::Exact),
                ..Options::default()
            },
            Setting::Lossy(l) => Options {
                compression: Some(Compression::Lossless(Lossless::Auto)),
                lossy: Some(l),
                ..Options::default()
            },
        }
    }
}

impl std::fmt::Display for Setting {
    /// As `--compression` takes it: a lossy policy's fields joined by `+` (commas separate
    /// settings).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Setting::Lossless(c) => write!(f, "{c}"),
            Setting::Lossy(l) => write!(f, "lossy:{}", l.to_string().replace(',', "+")),
        }
    }
}

fn parse_setting(s: &str) -> Result<Setting, String> {
    let parsed = match s.trim().strip_prefix("lossy:") {
        Some(spec) => spec.replace('+', ",").parse().map(Setting::Lossy),
        None => s.parse().map(Setting::Lossless),
    };
    parsed.map_err(|e: Error| e.to_string())
}

fn parse_transport(s: &str) -> Result<TransportKind, String> {
    s.parse().map_err(|e: Error| e.to_string())
}

/// One size's result on this rank.
struct Row {
    size: u64,
    shape: Shape,
    seconds: f64,
    wrong: Option<u64>,
    /// The wire ratio (`None` where the transport does not count bytes).
    wire: Option<f64>,
    codec: String,
    compression: Setting,
}

/// Every rank's result for `cli`'s sweep on inputs from `pool`; rank 0 prints it.
fn on_rank(comm: Communicator, cli: &Cli, pool: Option<&Pool>) -> Result<bool, Error> {
    let (rank, k) = (comm.rank(), comm.nranks());
    if cli.root >= k {
        return Err(Error::InvalidArgument(format!("--root {} of {k} ranks", cli.root)));
    }
    let elem = cli.dtype.size_bytes();
    let mut clean = true;
    if rank == 0 && cli.csv {
        say!("{}", CSV_COLUMNS.join(","));
    }
    if rank == 0 && !cli.json && !cli.csv {
        say!(
            "# zipcoll-perf {:?}: {k} ranks over {:?}, compression {}, {} calls after {} warm-up, data {}",
            cli.coll,
            comm.transport(),
            settings(&cli.compression),
            cli.iters,
            cli.warmup,
            match (pool, &cli.data) {
                (Some(p), _) => p.about.as_str(),
                (None, Source::Random) => "uniform random bits",
                (None, _) => "N(0,1)",
            }
        );
        say!(
            "# {:>12} {:>12} {:>7} {:>6} {:>5} {:>11} {:>9} {:>9} {:>7} {:>6} {:>10} {:>11}",
            "size",
            "count",
            "type",
            "redop",
            "root",
            "time (us)",
            "algbw",
            "busbw",
            "#wrong",
            "wire",
            "codec",
            "compression"
        );
    }
    let sweep = sizes(cli.min, cli.max, cli.factor);
    let progress = rank == 0 && sweep.len() > 1 && std::io::stderr().is_terminal();
    let mut rows = Vec::new();
    for (i, &size) in sweep.iter().enumerate() {
        if progress {
            eprint!("\r# size {} of {}: {size} bytes ", i + 1, sweep.len());
        }
        let shape = shape(cli.coll, size, elem, k);
        let sized = one_size(&comm, cli, pool, size, shape)?;
        if progress {
            eprint!("\r\x1b[K");
        }
        for row in sized {
            clean &= row.wrong.unwrap_or(0) == 0;
            if rank == 0 {
                report(cli, k, &row);
            }
            rows.push(row);
        }
    }
    if rank == 0 && !cli.json && !cli.csv {
        for line in ratios(&cli.compression, &rows) {
            say!("{line}");
        }
    }
    if let (0, Some(path)) = (rank, &cli.plot) {
        let lines: Vec<plot::Line> = cli
            .compression
            .iter()
            .map(|&c| plot::Line {
                name: c.to_string(),
                points: rows
                    .iter()
                    .filter(|r| r.compression == c)
                    .map(|r| (r.size, bandwidths(cli, k, r).1))
                    .collect(),
            })
            .collect();
        let title = format!(
            "{:?}, {k} ranks over {:?}, {}",
            cli.coll,
            comm.transport(),
            cli.dtype.name()
        );
        let drawn = plot::draw(path, &title, &lines).map_err(|e| Error::Io {
            what: "--plot".into(),
            source: std::io::Error::other(e),
        })?;
        if let Some(warning) = drawn {
            eprintln!("zipcoll-perf: {warning}");
        }
    }
    Ok(clean)
}

/// `row`'s algbw and busbw (GB/s) on `k` ranks.
fn bandwidths(cli: &Cli, k: usize, row: &Row) -> (f64, f64) {
    let algbw = match row.seconds > 0.0 {
        true => row.size as f64 / row.seconds / 1e9,
        false => 0.0,
    };
    (algbw, algbw * cli.coll.bus_factor(k))
}

/// The settings as `--compression` takes them.
fn settings(compression: &[Setting]) -> String {
    compression.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(",")
}

/// With several settings, a line per setting after the first: its time over the first's at
/// each size (below 1: faster), e.g. `# auto / off: 0.79 (67108864) 0.69 (268435456)`.
fn ratios(compression: &[Setting], rows: &[Row]) -> Vec<String> {
    let Some((first, others)) = compression.split_first() else {
        return Vec::new();
    };
    others
        .iter()
        .map(|other| {
            let per_size: Vec<String> = rows
                .iter()
                .filter(|r| r.compression == *other)
                .filter_map(|r| {
                    let base = rows.iter().find(|b| b.size == r.size && b.compression == *first)?;
                    Some(format!("{:.2} ({})", r.seconds / base.seconds, r.size))
                })
                .collect();
            format!("# time {other} / {first}: {}", per_size.join(" "))
        })
        .collect()
}

/// Times (and checks) one size, once per compression setting, on the same buffers.
fn one_size(comm: &Communicator, cli: &Cli, pool: Option<&Pool>, size: u64, shape: Shape) -> Result<Vec<Row>, Error> {
    let (rank, k, elem) = (comm.rank(), comm.nranks(), cli.dtype.size_bytes());
    let input = |r: usize| match (pool, &cli.data) {
        (Some(p), _) => p.input(elem, shape.input, r, k),
        (None, Source::Random) => testdata::uniform(cli.dtype, shape.input, 1000 + r as u64),
        (None, _) => testdata::normal(cli.dtype, shape.input, 1000 + r as u64),
    };
    let mut src = comm.alloc((shape.input * elem).max(1))?;
    src.copy_from_host(&input(rank))?;
    let mut dst = comm.alloc((shape.output * elem).max(1))?;
    // this rank's bytes on the wire for one call with compression off (untimed)
    let off = Options {
        compression: Some(Compression::Off),
        ..Options::default()
    };
    let raw_wire = on_the_wire(comm, || call(comm, cli, shape, &src, &mut dst, off))?;
    let inputs: Vec<Vec<u8>> = match cli.check {
        0 => Vec::new(),
        _ => (0..k).map(input).collect(),
    };
    let mut rows = Vec::new();
    for &compression in &cli.compression {
        let timed = timed(comm, cli, shape, &src, &mut dst, compression, raw_wire)?;
        let wrong = match (cli.check, compression) {
            (0, _) | (_, Setting::Lossy(_)) => None,
            _ => {
                let got = dst.to_host()?;
                let here = wrong_here(comm, cli, shape, &inputs, &got[..shape.output * elem])?;
                Some(across_ranks(comm, &[here as f64], ReduceOp::Sum)?[0] as u64)
            }
        };
        rows.push(Row {
            size,
            shape,
            wrong,
            compression,
            ..timed
        });
    }
    Ok(rows)
}

/// Times `cli.iters` calls of `shape` with `compression` after the warm-up calls: the row's
/// time, wire ratio (over `raw_wire`, this rank's bytes for one call with compression off) and
/// codec; its `wrong` is left for the caller.
fn timed(
    comm: &Communicator,
    cli: &Cli,
    shape: Shape,
    src: &DeviceBuffer,
    dst: &mut DeviceBuffer,
    compression: Setting,
    raw_wire: Option<u64>,
) -> Result<Row, Error> {
    let opts = compression.options();
    let codec = match compression {
        Setting::Lossy(_) => "lossy".to_owned(),
        Setting::Lossless(Compression::Off) => "raw".to_owned(),
        Setting::Lossless(Compression::Lossless(Lossless::Force(c))) => format!("{c:?}").to_ascii_lowercase(),
        Setting::Lossless(Compression::Lossless(Lossless::Auto)) if shape.count > 0 => {
            let plan = comm.auto_plan(src, shape.count, cli.dtype)?;
            format!("{:?}", plan.codec()).to_ascii_lowercase()
        }
        Setting::Lossless(Compression::Lossless(Lossless::Auto)) => "raw".to_owned(),
    };
    for _ in 0..cli.warmup {
        call(comm, cli, shape, src, dst, opts)?;
    }
    comm.synchronize()?;
    comm.barrier()?;
    let (before, start) = (comm.wire_bytes_sent(), Instant::now());
    for _ in 0..cli.iters {
        call(comm, cli, shape, src, dst, opts)?;
    }
    comm.synchronize()?;
    let mine = start.elapsed().as_secs_f64() / f64::from(cli.iters);
    comm.barrier()?;
    let coded_wire = before
        .zip(comm.wire_bytes_sent())
        .map(|(b, a)| (a - b) as f64 / f64::from(cli.iters));
    let seconds = across_ranks(comm, &[mine], ReduceOp::Max)?[0];
    let wire = match (raw_wire, coded_wire) {
        (Some(raw), Some(coded)) => {
            let sums = across_ranks(comm, &[raw as f64, coded], ReduceOp::Sum)?;
            (sums[0] > 0.0).then(|| sums[1] / sums[0])
        }
        _ => None,
    };
    Ok(Row {
        size: 0,
        shape,
        seconds,
        wrong: None,
        wire,
        codec,
        compression,
    })
}

/// This rank's bytes on the wire for `calls` (`None` where the transport does not count them),
/// read once every rank has finished them.
fn on_the_wire(comm: &Communicator, calls: impl FnOnce() -> Result<(), Error>) -> Result<Option<u64>, Error> {
    comm.synchronize()?;
    comm.barrier()?;
    let before = comm.wire_bytes_sent();
    calls()?;
    comm.synchronize()?;
    comm.barrier()?;
    Ok(before.zip(comm.wire_bytes_sent()).map(|(b, a)| a - b))
}

/// One call of `cli.coll` from `src` into `dst`.
fn call(
    comm: &Communicator,
    cli: &Cli,
    shape: Shape,
    src: &DeviceBuffer,
    dst: &mut DeviceBuffer,
    opts: Options,
) -> Result<(), Error> {
    let (rank, k) = (comm.rank(), comm.nranks());
    let (count, dtype, op, root) = (shape.count, cli.dtype, cli.op, cli.root);
    match cli.coll {
        Coll::AllReduce => comm.all_reduce(Data::OutOfPlace { src, dst }, count, dtype, op, opts),
        Coll::AllGather => comm.all_gather(Data::OutOfPlace { src, dst }, count, dtype, opts),
        Coll::ReduceScatter => comm.reduce_scatter(Data::OutOfPlace { src, dst }, count, dtype, op, opts),
        Coll::AllToAll => comm.all_to_all(Data::OutOfPlace { src, dst }, count, dtype, opts),
        Coll::Broadcast if rank == root => comm.broadcast(Data::OutOfPlace { src, dst }, count, dtype, root, opts),
        Coll::Broadcast => comm.broadcast(Data::Output(dst), count, dtype, root, opts),
        Coll::Reduce if rank == root => comm.reduce(Data::OutOfPlace { src, dst }, count, dtype, op, root, opts),
        Coll::Reduce => comm.reduce(Data::Input(src), count, dtype, op, root, opts),
        Coll::Sendrecv => {
            let mut g = comm.group();
            g.send(src, count, dtype, (rank + 1) % k)?;
            g.recv(dst, count, dtype, (rank + k - 1) % k)?;
            g.launch(opts)
        }
    }
}

/// Elements of this rank's output `got` that differ from the reference (0 where this rank has
/// no output: a reduce's non-root).
fn wrong_here(comm: &Communicator, cli: &Cli, shape: Shape, inputs: &[Vec<u8>], got: &[u8]) -> Result<usize, Error> {
    let (rank, k, elem) = (comm.rank(), comm.nranks(), cli.dtype.size_bytes());
    let reference = |c| collective(c, cli.dtype, cli.op, inputs);
    let want = match cli.coll {
        Coll::AllReduce => reference(CollRef::RingAllReduce {
            frame_elems: comm.frame_elems(cli.dtype, shape.count),
        })?,
        Coll::AllGather => reference(CollRef::AllGather)?,
        Coll::ReduceScatter => reference(CollRef::ReduceScatter { rank })?,
        Coll::AllToAll => reference(CollRef::AllToAll { rank })?,
        Coll::Broadcast => reference(CollRef::Broadcast { root: cli.root })?,
        Coll::Reduce if rank == cli.root => reference(CollRef::Reduce { root: cli.root })?,
        Coll::Reduce => return Ok(0),
        Coll::Sendrecv => inputs[(rank + k - 1) % k].clone(),
    };
    if want.len() != got.len() {
        return Ok(shape.output);
    }
    Ok(want
        .chunks_exact(elem)
        .zip(got.chunks_exact(elem))
        .filter(|(a, b)| a != b)
        .count())
}

/// The columns of `--csv`, in order.
const CSV_COLUMNS: [&str; 14] = [
    "coll",
    "ranks",
    "size",
    "count",
    "type",
    "redop",
    "root",
    "time_us",
    "algbw_gbps",
    "busbw_gbps",
    "wrong",
    "wire",
    "codec",
    "compression",
];

/// Rank 0's line (a table row, a JSON object or CSV values) for `row`.
fn report(cli: &Cli, k: usize, row: &Row) {
    let (algbw, busbw) = bandwidths(cli, k, row);
    let dtype = cli.dtype.name();
    let redop = match cli.coll.reduces() {
        true => format!("{:?}", cli.op).to_ascii_lowercase(),
        false => "none".to_owned(),
    };
    let root = match cli.coll {
        Coll::Broadcast | Coll::Reduce => cli.root.to_string(),
        _ => "-1".to_owned(),
    };
    let coll = format!("{:?}", cli.coll);
    let (size, count, time_us) = (row.size, row.shape.count, row.seconds * 1e6);
    let or = |v: Option<String>, none: &str| v.unwrap_or_else(|| none.to_owned());
    if cli.json {
        let wrong = or(row.wrong.map(|w| w.to_string()), "null");
        let wire = or(row.wire.map(|w| format!("{w:.4}")), "null");
        say!(
            "{{\"coll\":\"{coll}\",\"ranks\":{k},\"size\":{size},\"count\":{count},\"type\":\"{dtype}\",\"redop\":\"{redop}\",\"root\":{root},\"time_us\":{time_us:.3},\"algbw_gbps\":{algbw:.4},\"busbw_gbps\":{busbw:.4},\"wrong\":{wrong},\"wire\":{wire},\"codec\":\"{}\",\"compression\":\"{}\"}}",
            row.codec, row.compression
        );
        return;
    }
    let wrong = or(row.wrong.map(|w| w.to_string()), "N/A");
    let wire = or(row.wire.map(|w| format!("{w:.4}")), "N/A");
    if cli.csv {
        say!(
            "{coll},{k},{size},{count},{dtype},{redop},{root},{time_us:.3},{algbw:.4},{busbw:.4},{wrong},{wire},{},{}",
            row.codec,
            row.compression
        );
        return;
    }
    say!(
        "  {size:>12} {count:>12} {dtype:>7} {redop:>6} {root:>5} {time_us:>11.2} {algbw:>9.2} {busbw:>9.2} {wrong:>7} {wire:>6} {:>10} {:>11}",
        row.codec,
        row.compression.to_string()
    );
}

fn config(cli: &Cli, base: Config) -> Result<Config, Error> {
    let mut c = base.with_env()?;
    if let Some(Setting::Lossless(first)) = cli.compression.first() {
        c.compression = *first;
    }
    if cli.transport != TransportKind::Auto {
        c.transport = cli.transport;
    }
    Ok(c)
}

fn run(cli: &Cli) -> Result<(), Fail> {
    let failed = || Fail::Check("an output differs from the reference (#wrong above)".into());
    let pool = Pool::load(cli)?;
    if let Some(comm) = child_communicator(config(cli, Config::gpu())?)? {
        return match on_rank(comm, cli, pool.as_ref())? {
            true => Ok(()),
            false => Err(failed()),
        };
    }
    config(cli, Config::sim())?;
    let ranks = cli.ranks.map(usize::from);
    if zipcoll::cuda::is_available() && cli.transport != TransportKind::Sim {
        let nranks = ranks.unwrap_or(zipcoll::cuda::device_count()?.max(2));
        return match spawn_ranks(nranks)? {
            0 => Ok(()),
            1 => Err(failed()),
            2 => Err(Fail::Usage("a rank refused its arguments (above)".into())),
            code => Err(Fail::Runtime(format!("a rank failed with exit status {code} (above)"))),
        };
    }
    let oks = run_sim(ranks.unwrap_or(4), config(cli, Config::sim())?, |comm| {
        on_rank(comm, cli, pool.as_ref())
    })?;
    match oks.into_iter().all(|ok| ok) {
        true => Ok(()),
        false => Err(failed()),
    }
}

fn main() -> std::process::ExitCode {
    common::exit(run(&Cli::parse()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_follow_nccl_tests() {
        let s = |c| shape(c, 1 << 20, 2, 4);
        assert_eq!(
            s(Coll::AllReduce),
            Shape {
                count: 1 << 19,
                input: 1 << 19,
                output: 1 << 19
            }
        );
        assert_eq!(
            s(Coll::AllGather),
            Shape {
                count: 1 << 17,
                input: 1 << 17,
                output: 1 << 19
            }
        );
        assert_eq!(
            s(Coll::ReduceScatter),
            Shape {
                count: 1 << 17,
                input: 1 << 19,
                output: 1 << 17
            }
        );
        assert_eq!(
            s(Coll::AllToAll),
            Shape {
                count: 1 << 17,
                input: 1 << 19,
                output: 1 << 19
            }
        );
        // rounded down to whole elements on every rank
        assert_eq!(shape(Coll::AllGather, 1001, 2, 3).count, 166);
        assert_eq!(Coll::AllReduce.bus_factor(4), 1.5);
        assert_eq!(Coll::AllGather.bus_factor(4), 0.75);
        assert_eq!(Coll::Sendrecv.bus_factor(8), 1.0);
    }

    #[test]
    fn sizes_step_by_the_factor_up_to_the_largest() {
        assert_eq!(sizes(1 << 10, 1 << 13, 2), vec![1024, 2048, 4096, 8192]);
        assert_eq!(sizes(1000, 5000, 4), vec![1000, 4000]);
        assert_eq!(sizes(5, 4, 2), Vec::<u64>::new());
        assert_eq!(sizes(u64::MAX / 2 + 1, u64::MAX, 2), vec![u64::MAX / 2 + 1]);
    }
}
