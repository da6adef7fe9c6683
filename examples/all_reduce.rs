//! All_reduce through a zipcoll communicator, checked bit for bit against the scalar reference
//! of the same reduction order, with compression off, Auto and a forced codec.
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
//! is read back. The exit status is non-zero on any mismatch or error.

use clap::Parser;
use std::process::ExitCode;
use std::time::Instant;
use zipcoll::comm::launch::{child_communicator, spawn_ranks};
use zipcoll::comm::{run_sim, Communicator, Compression, Config, Data, Lossless, Options, TransportKind};
use zipcoll::reference::{collective, CollRef};
use zipcoll::{CodecId, DType, Error, ReduceOp};

#[derive(Parser, Clone)]
#[command(about = "All_reduce on a zipcoll communicator, checked against the reference")]
struct Args {
    /// auto (GPUs if present, else the simulator), sim, or cuda.
    #[arg(long, default_value = "auto")]
    backend: String,
    /// Ranks (default: the number of GPUs, or 4 on the simulator).
    #[arg(long)]
    ranks: Option<usize>,
    /// Elements per rank.
    #[arg(long, default_value_t = 1 << 18)]
    count: usize,
    /// auto, sim, p2p or net.
    #[arg(long, default_value = "auto")]
    transport: String,
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

/// Runs the checks on one rank; rank 0 prints a line per compression.
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
    let mut all_ok = true;
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
        let start = Instant::now();
        comm.all_reduce(Data::InPlace(&mut buf), count, DType::Bf16, ReduceOp::Sum, opts)?;
        comm.synchronize()?;
        let took = start.elapsed();
        let ok = buf.to_host()? == want;
        all_ok &= ok;
        if rank == 0 {
            println!(
                "all_reduce bf16 sum, {count} elements x {nranks} ranks on {:?} over {:?}, compression {name:9}: {:9.3} ms, {}",
                comm.backend(),
                comm.transport(),
                took.as_secs_f64() * 1e3,
                if ok { "bit-identical to the reference" } else { "MISMATCH" }
            );
        }
    }
    Ok(all_ok)
}

fn config(args: &Args, base: Config) -> Result<Config, Error> {
    let mut c = base.with_env()?;
    if args.transport != "auto" {
        c.transport = args.transport.parse::<TransportKind>()?;
    }
    Ok(c)
}

fn main() -> ExitCode {
    let args = Args::parse();
    let outcome = (|| -> Result<bool, Error> {
        if let Some(comm) = child_communicator(config(&args, Config::gpu())?)? {
            return run(comm, args.count);
        }
        let gpus = match args.backend.as_str() {
            "sim" => 0,
            "auto" if !zipcoll::cuda::is_available() => 0,
            "auto" | "cuda" => zipcoll::cuda::device_count()?,
            other => return Err(Error::InvalidArgument(format!("unknown backend {other:?}"))),
        };
        if gpus > 0 {
            return Ok(spawn_ranks(args.ranks.unwrap_or(gpus))? == 0);
        }
        let oks = run_sim(args.ranks.unwrap_or(4), config(&args, Config::sim())?, |comm| {
            run(comm, args.count)
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
