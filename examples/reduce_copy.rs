//! Runs the first kernels, `reduce_copy` and `warp_all_reduce`, for every dtype x op they take
//! (integers without avg: their average divides once at the end, as only the collectives do) on a GPU (or the simulator), and checks every result bit for bit:
//! the GPU's against the simulator's, and the simulator's against the scalar host reference.
//!
//! ```sh
//! cargo run --release --example reduce_copy                    # the detected backend
//! cargo run --release --example reduce_copy -- --backend sim   # sim | sim64 | cuda[:N] | hip[:N] | auto
//! ```
//!
//! Inputs are deterministic (`--seed`) and mix normal values with NaN payloads, ±0, ±inf and
//! subnormals (`zipcoll::testdata`). Sizes: a few small counts that are not multiples of the
//! block size, plus about a million elements (`--large`); `warp_all_reduce` uses whole warps.
//! One line per (kernel, dtype, op). Exit statuses are those of every zipcoll tool
//! (`src/bin/common`): 0 all bit-identical, 1 a mismatch, 2 usage error, 3 a backend that
//! cannot run kernels or a failed launch (when nothing mismatched), 141 stdout closed early.

#[path = "../src/bin/common/mod.rs"]
mod common;

use clap::Parser;
use common::{say, Fail};
use std::process::ExitCode;
use std::time::Instant;
use zipcoll::{reference, testdata, Backend, DType, Error, ReduceOp};

#[derive(Parser)]
#[command(
    name = "reduce_copy",
    version,
    about = "Runs reduce_copy and warp_all_reduce for every dtype x op built and checks them bit for bit",
    after_help = common::EXIT_STATUSES
)]
struct Args {
    /// Where to run: auto (a GPU if present, else the simulator), sim, sim64, cuda[:N] or hip[:N].
    #[arg(long, default_value = "auto")]
    backend: String,
    /// Seed of the input generator.
    #[arg(long, default_value_t = 0x5eed)]
    seed: u64,
    /// Element count of the large case (`warp_all_reduce` rounds it down to whole warps).
    #[arg(long, default_value_t = 1 << 20)]
    large: usize,
}

/// A kernel under test: runs it on a backend, and computes its scalar reference.
#[derive(Clone, Copy)]
enum Kernel {
    ReduceCopy,
    WarpAllReduce,
}

impl Kernel {
    fn name(self) -> &'static str {
        match self {
            Kernel::ReduceCopy => "reduce_copy",
            Kernel::WarpAllReduce => "warp_all_reduce",
        }
    }

    /// Element counts for warps of `width` lanes: small ones off the block size, then `large`.
    fn sizes(self, width: usize, large: usize) -> Vec<usize> {
        match self {
            Kernel::ReduceCopy => vec![1, 37, 1000, large],
            Kernel::WarpAllReduce => vec![width, width * 37, (large / width).max(1) * width],
        }
    }

    /// `nranks` for a launch: two inputs for reduce_copy; one contribution per lane for
    /// warp_all_reduce (so Avg is the mean over the warp).
    fn nranks(self, width: u32) -> u32 {
        match self {
            Kernel::ReduceCopy => 2,
            Kernel::WarpAllReduce => width,
        }
    }

    fn run(self, backend: Backend, dtype: DType, op: ReduceOp, a: &[u8], b: &[u8]) -> zipcoll::Result<Vec<u8>> {
        let nranks = self.nranks(backend.warp_width());
        match self {
            Kernel::ReduceCopy => zipcoll::reduce_copy(backend, dtype, op, a, b, nranks),
            Kernel::WarpAllReduce => zipcoll::warp_all_reduce(backend, dtype, op, a, nranks),
        }
    }

    fn reference(self, width: u32, dtype: DType, op: ReduceOp, a: &[u8], b: &[u8]) -> zipcoll::Result<Vec<u8>> {
        let nranks = self.nranks(width);
        match self {
            Kernel::ReduceCopy => reference::reduce_copy(dtype, op, a, b, nranks),
            Kernel::WarpAllReduce => reference::warp_all_reduce(dtype, op, width, a, nranks),
        }
    }
}

/// The elements as hex words, for messages.
fn hex(dtype: DType, bytes: &[u8]) -> String {
    let mut le = [0u8; 8];
    le[..bytes.len()].copy_from_slice(bytes);
    format!("0x{:0w$x}", u64::from_le_bytes(le), w = 2 * dtype.size_bytes())
}

/// Describes the first element where `got` differs from `want`, if any.
fn first_mismatch(
    dtype: DType,
    n: usize,
    inputs: (&[u8], &[u8]),
    want: (&str, &[u8]),
    got: (&str, &[u8]),
) -> Option<String> {
    let size = dtype.size_bytes();
    if want.1.len() != got.1.len() {
        return Some(format!(
            "n={n}: {} has {} bytes, {} has {}",
            want.0,
            want.1.len(),
            got.0,
            got.1.len()
        ));
    }
    let i = want.1.chunks(size).zip(got.1.chunks(size)).position(|(x, y)| x != y)?;
    let at = i * size..(i + 1) * size;
    Some(format!(
        "n={n}, element {i}: {} {} vs {} {} (inputs {} {})",
        want.0,
        hex(dtype, &want.1[at.clone()]),
        got.0,
        hex(dtype, &got.1[at.clone()]),
        hex(dtype, &inputs.0[at.clone()]),
        hex(dtype, inputs.1.get(at).unwrap_or_default()),
    ))
}

/// What one (kernel, dtype, op) line reports.
enum Outcome {
    Identical,
    Mismatch(String),
    Failed(Error),
}

/// Runs one (kernel, dtype, op) over every size on `backend` and on its simulator twin, and
/// checks the simulator against the scalar reference.
fn check(args: &Args, backend: Backend, kernel: Kernel, dtype: DType, op: ReduceOp, seed: u64) -> Outcome {
    let sim = backend.sim_twin();
    let width = backend.warp_width();
    for (k, n) in kernel.sizes(width as usize, args.large).into_iter().enumerate() {
        let a = testdata::elements(dtype, n, seed.wrapping_add(2 * k as u64));
        let b = testdata::elements(dtype, n, seed.wrapping_add(2 * k as u64 + 1));
        let run = || -> zipcoll::Result<Option<String>> {
            let on_sim = kernel.run(sim, dtype, op, &a, &b)?;
            let want = kernel.reference(width, dtype, op, &a, &b)?;
            if let Some(m) = first_mismatch(dtype, n, (&a, &b), ("reference", &want), ("sim", &on_sim)) {
                return Ok(Some(m));
            }
            if backend.is_sim() {
                return Ok(None);
            }
            let on_backend = kernel.run(backend, dtype, op, &a, &b)?;
            let name = backend.to_string();
            Ok(first_mismatch(
                dtype,
                n,
                (&a, &b),
                ("sim", &on_sim),
                (&name, &on_backend),
            ))
        };
        match run() {
            Ok(None) => {}
            Ok(Some(m)) => return Outcome::Mismatch(m),
            Err(e) => return Outcome::Failed(e),
        }
    }
    Outcome::Identical
}

fn main() -> ExitCode {
    let args = Args::parse();
    let backend = match args.backend.as_str() {
        "auto" => Ok(Backend::detect()),
        b => b.parse::<Backend>().map_err(Fail::from),
    };
    common::exit(backend.and_then(|backend| run(&args, backend)))
}

/// Checks every (kernel, dtype, op), one line each: a mismatch is [`Fail::Check`], a failed
/// launch (with no mismatch) [`Fail::Runtime`].
fn run(args: &Args, backend: Backend) -> Result<(), Fail> {
    let verdict = if backend.is_sim() {
        "bit-identical to the scalar reference"
    } else {
        "bit-identical to sim"
    };
    let against = if backend.is_sim() {
        "the scalar reference".to_owned()
    } else {
        format!("{} and the scalar reference", backend.sim_twin())
    };
    let embedded = if zipcoll::kernels_embedded() {
        "yes"
    } else {
        "no (run `bash scripts/setup.sh`, then rebuild)"
    };
    say!(
        "backend {backend} (warp width {}), checked against {against}; GPU kernels embedded: {embedded}",
        backend.warp_width()
    );
    backend
        .prepare()
        .map_err(|e| Fail::Runtime(format!("{backend} cannot run kernels: {e}")))?;
    let start = Instant::now();
    let (mut lines, mut mismatches, mut errors) = (0usize, 0usize, 0usize);
    for kernel in [Kernel::ReduceCopy, Kernel::WarpAllReduce] {
        let sizes = kernel.sizes(backend.warp_width() as usize, args.large);
        let counts = sizes.iter().map(usize::to_string).collect::<Vec<_>>().join("+");
        for (d, dtype) in DType::ALL.into_iter().enumerate() {
            for (o, op) in ReduceOp::ALL.into_iter().enumerate() {
                if dtype.is_integer() && op == ReduceOp::Avg {
                    continue;
                }
                let seed = args
                    .seed
                    .wrapping_mul(1000)
                    .wrapping_add(100 * d as u64 + 10 * o as u64);
                let t = Instant::now();
                let outcome = check(args, backend, kernel, dtype, op, seed);
                let (name, dtype, op) = (kernel.name(), format!("{dtype:?}"), format!("{op:?}"));
                let head = format!("{name:<16} {dtype:<7} {op:<5} {backend:<7} n={counts:<22}");
                lines += 1;
                match outcome {
                    Outcome::Identical => say!("{head} {verdict} ({:.2} s)", t.elapsed().as_secs_f64()),
                    Outcome::Mismatch(m) => {
                        mismatches += 1;
                        say!("{head} MISMATCH: {m}");
                    }
                    Outcome::Failed(e) => {
                        errors += 1;
                        say!("{head} ERROR: {e}");
                    }
                }
            }
        }
    }
    say!(
        "{lines} checks, {} failed, {:.1} s",
        mismatches + errors,
        start.elapsed().as_secs_f64()
    );
    match (mismatches, errors) {
        (0, 0) => Ok(()),
        (0, e) => Err(Fail::Runtime(format!(
            "{e} of {lines} checks could not run (the ERROR lines)"
        ))),
        (m, _) => Err(Fail::Check(format!(
            "{m} of {lines} checks were not bit-identical (the MISMATCH lines)"
        ))),
    }
}
