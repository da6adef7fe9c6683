//! All_reduce through a zipcoll communicator, checked bit for bit against the scalar reference
//! of the same reduction order, with compression off, Auto and a forced codec; prints what ran
//! on what, the codec Auto chose and why, how fast, and whether each result is bit-identical.
//!
//! ```sh
//! cargo run --release --example all_reduce                   # GPUs if present (one process each), else 4 simulated ranks
//! cargo run --release --example all_reduce -- --backend sim --ranks 8 --transport net
//! ```
//!
//! On the simulator the ranks are threads of this process; on GPUs the example starts one copy
//! of itself per GPU (`zipcoll::comm::launch`) and rank `r` uses GPU `r % devices`. Each rank
//! holds bf16 values that look like a layer's gradients (roughly normal, a few exact zeros,
//! -0.0 and an infinity), different per rank. Calls are asynchronous: each all_reduce is
//! enqueued and `synchronize` waits for it (and reports its failure, if any) before the result
//! is read back. Auto's decision is shown with `Communicator::auto_plan`: the link model, the
//! codec and its predicted ratio and time against RAW's. On the simulator Auto keeps the GPU
//! presets (the network's bandwidth, an H200's coding rates) so that its codecs run there, and
//! picks a codec; the CPU simulator codes far slower than a GPU, so a coded all_reduce takes
//! many times RAW's time there (the forced codec's line shows the same cost; the decision
//! itself is timed on its own line, about 0.1 ms). The simulator runs a warp's 32 lanes as
//! coroutines that meet at every warp-cooperative step of the frame codec: a profile of this
//! example (perf, 2 ranks, 2026-12-01) spent about 70% in the simulator's scheduler
//! (`sim::scheduler::run_block`, `resolve`, `lanes::warp_op`) and about 15% coding. Exit statuses are those of every zipcoll tool
//! (`src/bin/common`): 0 every result bit-identical, 1 one is not, 2 usage error, 3 runtime
//! error.

#[path = "../src/bin/common/mod.rs"]
mod common;

use clap::{Parser, ValueEnum};
use common::{say, Fail};
use std::process::ExitCode;
use std::time::Instant;
use zipcoll::comm::launch::{child_communicator, spawn_ranks};
use zipcoll::comm::{run_sim, AutoPlan, Communicator, Compression, Config, Data, Lossless, Options, TransportKind};
use zipcoll::reference::{collective, CollRef};
use zipcoll::{CodecId, DType, Error, ReduceOp};

#[derive(Parser, Clone)]
#[command(
    name = "all_reduce",
    version,
    about = "All_reduce on a zipcoll communicator, checked against the reference",
    after_help = common::EXIT_STATUSES
)]
struct Args {
    /// Where the ranks run: auto (GPUs if present, else the simulator), sim or cuda.
    #[arg(long, value_enum, default_value = "auto")]
    backend: Where,
    /// Ranks, at least 1 [default: the number of GPUs, or 4 on the simulator].
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    ranks: Option<u16>,
    /// Elements per rank, at most 2^28 (every rank holds all the ranks' inputs for the
    /// reference).
    #[arg(long, default_value_t = 1 << 18, value_parser = parse_count)]
    count: usize,
    /// auto, sim, p2p or net.
    #[arg(long, default_value = "auto", value_parser = parse_transport)]
    transport: TransportKind,
}

/// `--backend`'s values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Where {
    Auto,
    Sim,
    Cuda,
}

fn parse_count(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if n <= 1 << 28 => Ok(n),
        _ => Err(format!("expected a number of elements in 0..={}", 1 << 28)),
    }
}

fn parse_transport(s: &str) -> Result<TransportKind, String> {
    s.parse().map_err(|e: Error| e.to_string())
}

/// Rank `r`'s input: bf16 words of roughly normal values with a few specials.
fn input(rank: usize, count: usize) -> Vec<u8> {
    let mut s = 0x243F_6A88_85A3_08D3u64 ^ (rank as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut uniform = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 40) as f32 / (1u64 << 24) as f32
    };
    (0..count)
        .flat_map(|i| {
            let x = match i % 997 {
                0 => 0.0,
                1 => -0.0,
                2 if rank == 1 => f32::INFINITY,
                _ => (uniform() + uniform() + uniform() + uniform() - 2.0) * 0.02,
            };
            ((x.to_bits() >> 16) as u16).to_le_bytes()
        })
        .collect()
}

/// Seconds in the unit that suits them.
fn seconds(s: f64) -> String {
    if s >= 1e-3 {
        format!("{:.3} ms", s * 1e3)
    } else {
        format!("{:.1} us", s * 1e6)
    }
}

/// What ran on what, in words (rank 0's view).
fn setup(comm: &Communicator, count: usize, frame_elems: usize) -> String {
    let nranks = comm.nranks();
    let ranks = if comm.backend().is_sim() {
        format!("{nranks} simulated ranks (threads of this process on the CPU simulator)")
    } else {
        format!("{nranks} GPU ranks (one process each; rank 0 on {})", comm.backend())
    };
    let transport = match comm.transport() {
        TransportKind::Sim => "the SIM transport (FIFOs in this process's memory)",
        TransportKind::P2p => "the P2P transport (FIFOs in the peer GPU's memory)",
        TransportKind::Net => "the NET transport (host FIFOs, TCP proxies)",
        TransportKind::Auto => "the transport Auto picked",
    };
    format!(
        "all_reduce sum of {count} bf16 elements ({:.2} MiB) per rank, ring, on {ranks}, over {transport}, {} channels, frames of {frame_elems} elements",
        (count * 2) as f64 / (1 << 20) as f64,
        comm.config().channels
    )
}

/// Bytes per second in the unit that suits them.
fn rate(bytes_per_s: f64) -> String {
    if bytes_per_s >= 1e9 {
        format!("{:.2} GB/s", bytes_per_s / 1e9)
    } else {
        format!("{:.2} MB/s", bytes_per_s / 1e6)
    }
}

/// What one rank's ring all_reduce of `bytes` codes on `nranks` ranks: it encodes what it
/// sends and decodes what it receives, `2 (k - 1) / k` of its buffer each.
fn coded_bytes(bytes: usize, nranks: usize) -> f64 {
    2.0 * 2.0 * (nranks - 1) as f64 / nranks as f64 * bytes as f64
}

/// What rank 0 saw of Auto: its decision, how long deciding took, and (on the simulator) the
/// extra seconds the coded call took over compression off.
struct AutoSeen {
    plan: AutoPlan,
    decided_s: f64,
    extra_s: f64,
}

/// Auto's decision in words: the codec (or RAW) and why; on the simulator, why it is slow.
fn decision(seen: &AutoSeen, raw_bytes: usize, nranks: usize, on_sim: bool) -> Vec<String> {
    let auto = &seen.plan;
    let link = &auto.link;
    let model = format!(
        "the `{}` link model ({:.1} GB/s{})",
        link.name,
        link.bandwidth_bytes_per_s / 1e9,
        if on_sim {
            ", an H200's coding rates: the simulator keeps the GPU presets so that Auto's codecs run here"
        } else {
            ""
        }
    );
    let mut lines = vec![match auto.plan.choice {
        Some(c) => format!(
            "auto chose {}: predicted ratio {:.3}, {} on the link against {} raw, by {model}",
            c.codec.name(),
            c.predicted_bytes as f64 / raw_bytes.max(1) as f64,
            seconds(f64::from(c.predicted_s)),
            seconds(f64::from(auto.plan.raw_s))
        ),
        None => format!(
            "auto chose raw ({:?}: no codec predicted to win) by {model}",
            auto.plan.reason
        ),
    }];
    lines.push(format!(
        "deciding took {} (a sample of the input, then the cost model): not what makes the call slow",
        seconds(seen.decided_s)
    ));
    let codec = auto.codec();
    if on_sim && codec != CodecId::Raw && nranks > 1 && seen.extra_s > 0.0 {
        let cost = auto.link.cost(codec);
        lines.push(format!(
            "why auto is slow here: the coding. The model codes {} at {} (encode) and {} (decode), an H200's rates; the CPU simulator, which runs a warp's 32 lanes as coroutines that meet at every step of the codec, coded about {} per rank ({} over compression off). The forced codec's line shows the same cost",
            codec.name(),
            rate(1.0 / f64::from(cost.enc_s_per_byte)),
            rate(1.0 / f64::from(cost.dec_s_per_byte)),
            rate(coded_bytes(raw_bytes, nranks) / seen.extra_s),
            seconds(seen.extra_s)
        ));
    }
    lines
}

/// Runs the checks on one rank; rank 0 prints the setup, a line per compression and Auto's
/// decision. `Ok(false)`: a result was not bit-identical.
fn run(comm: Communicator, count: usize) -> Result<bool, Error> {
    let (rank, nranks) = (comm.rank(), comm.nranks());
    let inputs: Vec<Vec<u8>> = (0..nranks).map(|r| input(r, count)).collect();
    let frame_elems = comm.frame_elems(DType::Bf16, count);
    let want = collective(
        CollRef::RingAllReduce { frame_elems },
        DType::Bf16,
        ReduceOp::Sum,
        &inputs,
    )?;
    if rank == 0 {
        say!("{}", setup(&comm, count, frame_elems));
    }
    let mut all_ok = true;
    let mut off_s = 0.0;
    let policies = [
        ("off", Compression::Off),
        ("auto", Compression::Lossless(Lossless::Auto)),
        ("expwindow", Compression::Lossless(Lossless::Force(CodecId::ExpWindow))),
    ];
    for (name, compression) in policies {
        let mut buf = comm.alloc(count * 2)?;
        buf.copy_from_host(&inputs[rank])?;
        let opts = Options {
            compression: Some(compression),
            ..Options::default()
        };
        // rank 0 shows what Auto decides for this input (every rank decides from its own)
        let auto = match (name, rank) {
            ("auto", 0) => {
                let start = Instant::now();
                let plan = comm.auto_plan(&buf, count, DType::Bf16)?;
                Some((plan, start.elapsed().as_secs_f64()))
            }
            _ => None,
        };
        let start = Instant::now();
        comm.all_reduce(Data::InPlace(&mut buf), count, DType::Bf16, ReduceOp::Sum, opts)?;
        comm.synchronize()?;
        let took = start.elapsed().as_secs_f64();
        let ok = buf.to_host()? == want;
        all_ok &= ok;
        if name == "off" {
            off_s = took;
        }
        if rank == 0 {
            say!(
                "  compression {name:9}: {:>10}, algbw {:>11}, {}",
                seconds(took),
                rate((count * 2) as f64 / took),
                if ok {
                    "bit-identical to the reference"
                } else {
                    "MISMATCH: not bit-identical to the reference"
                }
            );
        }
        if let Some((plan, decided_s)) = auto {
            let seen = AutoSeen {
                plan,
                decided_s,
                extra_s: took - off_s,
            };
            for line in decision(&seen, count * 2, nranks, comm.backend().is_sim()) {
                say!("    {line}");
            }
        }
    }
    Ok(all_ok)
}

fn config(args: &Args, base: Config) -> Result<Config, Error> {
    let mut c = base.with_env()?;
    if args.transport != TransportKind::Auto {
        c.transport = args.transport;
    }
    Ok(c)
}

/// Every rank's outcome: `Ok` when every result was bit-identical.
fn main_result(args: &Args) -> Result<(), Fail> {
    let mismatch = || Fail::Check("a result was not bit-identical to the reference".into());
    if let Some(comm) = child_communicator(config(args, Config::gpu())?)? {
        return if run(comm, args.count)? {
            Ok(())
        } else {
            Err(mismatch())
        };
    }
    let gpus = match args.backend {
        Where::Sim => 0,
        Where::Auto if !zipcoll::cuda::is_available() => 0,
        Where::Auto => zipcoll::cuda::device_count()?,
        Where::Cuda => match zipcoll::cuda::device_count() {
            Ok(n) if n > 0 => n,
            Ok(_) => return Err(Fail::Runtime("--backend cuda: no CUDA GPU found".into())),
            Err(e) => return Err(Fail::Runtime(format!("--backend cuda: {e}"))),
        },
    };
    let ranks = args.ranks.map(usize::from);
    if gpus > 0 {
        return match spawn_ranks(ranks.unwrap_or(gpus))? {
            0 => Ok(()),
            1 => Err(mismatch()),
            code => Err(Fail::Runtime(format!("a rank failed with exit status {code} (above)"))),
        };
    }
    let oks = run_sim(ranks.unwrap_or(4), config(args, Config::sim())?, |comm| {
        run(comm, args.count)
    })?;
    if oks.into_iter().all(|ok| ok) {
        Ok(())
    } else {
        Err(mismatch())
    }
}

fn main() -> ExitCode {
    common::exit(main_result(&Args::parse()))
}
