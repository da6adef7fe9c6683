//! `zipcoll`: command-line tools over zipcoll's codecs and Auto's model.
//!
//! | command   | what it does                                                                      | exit status |
//! |-----------|-----------------------------------------------------------------------------------|-------------|
//! | `inspect` | per tensor of a file: each codec's ratio, round trip checked bit for bit, the order-0 exponent entropy bound, and the codec the arbitration picks for NVLink and for the network; with `--lossy`, a quantizer's ratios alone and with each coder, and its largest error | 0 all round trips equal (every element within the bound); 1 one differs (or broke the bound); 2 usage error; 3 the file or the GPU failed; 141 stdout closed early |
//!
//! | `calibrate` | the link's RAW bandwidth and latency and each codec's channel rates, measured by two ranks (GPU processes or simulator threads), into a TOML file that `ZIPCOLL_CALIBRATION` gives to communicators (`zipcoll/calibrate.rs`) | 0 written; 2 usage error; 3 a rank or the file failed |
//!
//! ```sh
//! zipcoll calibrate --transport net --out net.toml          # then ZIPCOLL_CALIBRATION=net.toml
//! zipcoll inspect weights.bin --dtype bf16                  # raw little-endian bf16
//! zipcoll inspect model.safetensors                         # every float tensor, its own dtype
//! zipcoll inspect model.safetensors --dtype bf16 --codec expans --gpu
//! zipcoll inspect grads.bin --dtype f32 --codec auto --frame-elems 16384
//! zipcoll inspect grads.bin --dtype f32 --lossy error-bound:abs=1e-3   # also rel=1e-4, qsgd:bits=8
//! ```
//!
//! A file whose name ends in `.safetensors` is read as safetensors: every tensor of dtype
//! BF16, F16, F32, F8_E4M3 or F8_E5M2 is inspected with its own dtype (others are skipped with a
//! note on stderr), and `--dtype`, if given, keeps only the tensors of that dtype. Any other file
//! is one tensor of raw little-endian elements of `--dtype` (then required).
//!
//! `--codec`: one of `raw`, `fixedlen`, `expwindow`, `expans`, `huffman`; `auto` encodes only
//! what the arbitration picks (and checks the realized size with `Choice::accept_realized`);
//! without it every codec. Frames are encoded on the CPU simulator, or with `--gpu` on CUDA
//! device 0 (an error, exit status 3, when there is none). `--frame-elems` is checked against
//! every tensor's dtype before anything is encoded. Exit statuses are those of every zipcoll
//! tool (`src/bin/common`).

#[path = "across_ranks/mod.rs"]
mod across_ranks;
#[path = "zipcoll/calibrate.rs"]
mod calibrate;
#[path = "common/mod.rs"]
mod common;
#[path = "zipcoll/input.rs"]
mod input;
#[path = "zipcoll/inspect.rs"]
mod inspect;
#[path = "zipcoll/lossy.rs"]
mod lossy;

use clap::{Parser, Subcommand};
use common::Fail;
use inspect::InspectArgs;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "zipcoll", version, about = "Command-line tools over zipcoll's codecs", after_help = common::EXIT_STATUSES)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Compression ratios, round trips, entropy bound and arbitration for the tensors of a file.
    #[command(after_help = common::EXIT_STATUSES)]
    Inspect(InspectArgs),
    /// Measures the link's and the coders' rates on this machine for Auto's cost model, into a
    /// file for ZIPCOLL_CALIBRATION.
    #[command(after_help = common::EXIT_STATUSES)]
    Calibrate(calibrate::CalibrateArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    common::exit(match cli.command {
        Command::Inspect(args) => inspect::run(&args).and_then(|outcome| match outcome {
            inspect::Outcome::AllEqual => Ok(()),
            inspect::Outcome::Mismatch => Err(Fail::Check(
                "a round trip did not give back the data bit for bit (or, with --lossy, an element broke the bound)"
                    .into(),
            )),
        }),
        Command::Calibrate(args) => calibrate::run(&args),
    })
}
