//! `zipcoll inspect`: for each tensor of a file, every codec's (or one codec's) ratio with the
//! round trip checked bit for bit, the order-0 exponent entropy bound, and the arbitration's
//! pick for NVLink and for the network.
//!
//! | line        | meaning                                                                          |
//! |-------------|----------------------------------------------------------------------------------|
//! | `entropy`   | `(RAW_BITS + H) / bits per word`: the best any split codec can do per element, `H` the order-0 entropy of all the tensor's exponent symbols |
//! | codec name  | `ratio` = frames' bytes (headers included) / data bytes; `predicted` = the arbitration's prediction from its 64 KiB sample; `round trip` = decode(encode(data)) == data |
//! | `nvlink`, `net` | the arbitration's plan on that link (`zipcoll_device::arbitrate`): the codec and its predicted time against RAW's, or RAW and why |
//!
//! The numbers come from `zipcoll::codec::analysis`, which encodes big tensors in batches of
//! whole frames; above [`PROGRESS_BYTES`] a progress line per batch goes to stderr.

use crate::common::{say, Fail};
use crate::input::{self, Tensor};
use crate::lossy;
use clap::Args;
use std::collections::BTreeMap;
use std::path::PathBuf;
use zipcoll::codec::analysis::{analyze, ratio, round_trip};
use zipcoll::codec::MAX_FRAME_DATA_BYTES;
use zipcoll::comm::Lossy;
use zipcoll::{Backend, CodecId, DType};
/// Tensors larger than this get progress lines.
pub const PROGRESS_BYTES: usize = 4 << 20;

/// The arguments of `zipcoll inspect`.
#[derive(Args)]
pub struct InspectArgs {
    /// The file: raw little-endian elements of --dtype, or a .safetensors file.
    pub file: PathBuf,
    /// bf16, f16, f32, f8e4m3 or f8e5m2: the elements of a raw file (required); for a
    /// .safetensors file, only the tensors of this dtype are inspected (default: all).
    #[arg(long, value_parser = parse_coded_dtype)]
    pub dtype: Option<DType>,
    /// raw, fixedlen, expwindow, expans or huffman; `auto`: only the codecs the arbitration
    /// picks [default: every codec].
    #[arg(long, value_parser = parse_codec)]
    pub codec: Option<CodecChoice>,
    /// Encode and decode on CUDA device 0 instead of the CPU simulator.
    #[arg(long)]
    pub gpu: bool,
    /// Elements per frame: 1 up to 1 GiB of data per frame (1073741824 fp8, 536870912 bf16 or
    /// f16, 268435456 f32 elements), checked against every tensor's dtype before any work.
    #[arg(long, default_value_t = 65536, value_parser = clap::value_parser!(u64).range(1..=MAX_FRAME_DATA_BYTES as u64))]
    pub frame_elems: u64,
    /// Quantize first, then code the quantizer's symbols: error-bound:abs=EB,
    /// error-bound:rel=R (of the value range) or qsgd:bits=B[,bucket=N][,seed=S]; reports the
    /// ratios and the largest error instead of the lossless codecs (on the simulator).
    #[arg(long, value_parser = lossy::parse_lossy, conflicts_with_all = ["codec", "gpu"])]
    pub lossy: Option<Lossy>,
}

/// What `--codec` asks for.
#[derive(Clone, Copy, Debug)]
pub enum CodecChoice {
    /// This codec only.
    One(CodecId),
    /// The arbitration's picks only.
    Auto,
}

/// `--codec`'s value.
fn parse_codec(name: &str) -> Result<CodecChoice, String> {
    if name.eq_ignore_ascii_case("auto") {
        return Ok(CodecChoice::Auto);
    }
    CodecId::ALL
        .into_iter()
        .find(|c| c.name().eq_ignore_ascii_case(name))
        .map(CodecChoice::One)
        .ok_or_else(|| format!("unknown codec {name:?} (expected raw, fixedlen, expwindow, expans, huffman or auto)"))
}

/// How the round trips went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every round trip gave back the data bit for bit (with `--lossy`: every element within
    /// the bound, every coded symbol stream back as it was).
    AllEqual,
    /// At least one did not.
    Mismatch,
}

/// Runs `zipcoll inspect`.
pub fn run(args: &InspectArgs) -> Result<Outcome, Fail> {
    // in 1..=MAX_FRAME_DATA_BYTES (clap's range), which fits a usize
    let frame_elems = args.frame_elems as usize;
    let input = input::read(&args.file, args.dtype)?;
    for s in &input.skipped {
        eprintln!("note: skipping {s}");
    }
    if input.tensors.is_empty() {
        return Err(Fail::Runtime(format!("{}: no tensor to inspect", args.file.display())));
    }
    for t in &input.tensors {
        let most = MAX_FRAME_DATA_BYTES / t.dtype.size_bytes();
        if frame_elems > most {
            return Err(Fail::Usage(format!(
                "--frame-elems {frame_elems}: frames of {} ({}) hold at most {most} elements (1 GiB)",
                t.dtype.name(),
                t.name
            )));
        }
    }
    let backend = if args.gpu {
        let b = Backend::Cuda { ordinal: 0 };
        b.prepare()
            .map_err(|e| Fail::Runtime(format!("--gpu needs a usable CUDA GPU: {e}")))?;
        b
    } else {
        Backend::Sim
    };
    let total: usize = input.tensors.iter().map(|t| t.range.len()).sum();
    say!(
        "{}: {}, {} tensor(s), {}; frames of {frame_elems} elements, on {backend}",
        args.file.display(),
        input.format,
        input.tensors.len(),
        mib(total as u64)
    );
    let mut totals = Totals::default();
    let mut outcome = Outcome::AllEqual;
    for t in &input.tensors {
        let got = match args.lossy {
            Some(spec) => {
                tensor_line(t, input.data(t), frame_elems);
                lossy::report(spec, t.dtype, input.data(t), frame_elems)?
            }
            None => inspect_tensor(backend, t, input.data(t), frame_elems, args.codec, &mut totals)?,
        };
        if got == Outcome::Mismatch {
            outcome = Outcome::Mismatch;
        }
    }
    if input.tensors.len() > 1 {
        totals.print();
    }
    Ok(outcome)
}

/// Encoded and raw bytes per codec over all tensors.
#[derive(Default)]
struct Totals(BTreeMap<CodecId, (u64, u64)>);

impl Totals {
    fn add(&mut self, codec: CodecId, encoded: u64, raw: u64) {
        let e = self.0.entry(codec).or_default();
        e.0 += encoded;
        e.1 += raw;
    }
    fn print(&self) {
        say!("all tensors:");
        for (codec, (encoded, raw)) in &self.0 {
            say!("  {:<9} ratio {:.4}", codec.name(), ratio(*encoded, *raw));
        }
    }
}

/// Bytes as MiB with two decimals.
fn mib(bytes: u64) -> String {
    format!("{:.2} MiB", bytes as f64 / (1u64 << 20) as f64)
}

/// Seconds in the unit that suits them.
fn seconds(s: f32) -> String {
    if s >= 1e-3 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{:.1} us", s * 1e6)
    }
}

/// A dtype the codecs are built for ([`DType::coded`]), called `name` on the command line.
pub fn parse_coded_dtype(name: &str) -> Result<DType, String> {
    let d = input::parse_dtype(name)?;
    if d.coded() {
        Ok(d)
    } else {
        Err(format!(
            "{} has no codec (the codecs take {}; the collectives move {} uncompressed)",
            d.name(),
            DType::CODED.map(DType::name).join(", "),
            d.name()
        ))
    }
}

/// Prints the line that opens a tensor's report; returns its number of elements.
fn tensor_line(t: &Tensor, data: &[u8], frame_elems: usize) -> usize {
    let n = data.len() / t.dtype.size_bytes();
    say!(
        "tensor {}: {}, {n} elements, {}, {} frame(s)",
        t.name,
        t.dtype.name(),
        mib(data.len() as u64),
        n.div_ceil(frame_elems)
    );
    n
}

/// Prints the report of one tensor; encodes with the codecs `choice` asks for.
fn inspect_tensor(
    backend: Backend,
    t: &Tensor,
    data: &[u8],
    frame_elems: usize,
    choice: Option<CodecChoice>,
    totals: &mut Totals,
) -> Result<Outcome, Fail> {
    let n = tensor_line(t, data, frame_elems);
    if n == 0 {
        say!("  empty: nothing to encode");
        return Ok(Outcome::AllEqual);
    }
    let a = analyze(t.dtype, data, frame_elems).map_err(|e| Fail::Runtime(format!("analyzing {}: {e}", t.name)))?;
    let raw = data.len() as u64;
    say!(
        "  {:<9} ratio {:.4}  (order-0 bound: {} raw + {:.3} exponent bits per {}-bit word)",
        "entropy",
        a.entropy_ratio(),
        a.raw_bits,
        a.entropy_bits,
        a.word_bits
    );
    let codecs: Vec<CodecId> = match choice {
        None => CodecId::ALL.to_vec(),
        Some(CodecChoice::One(c)) => vec![c],
        Some(CodecChoice::Auto) => a.picks(),
    };
    let mut outcome = Outcome::AllEqual;
    let mut realized = BTreeMap::new();
    for codec in codecs {
        let progress = |done: usize| {
            if data.len() > PROGRESS_BYTES {
                eprintln!(
                    "encoding {}: {}/{} MiB",
                    codec.name(),
                    done >> 20,
                    data.len().div_ceil(1 << 20)
                );
            }
        };
        let trip = round_trip(backend, t.dtype, codec, data, frame_elems, progress)
            .map_err(|e| Fail::Runtime(format!("round trip with {}: {e}", codec.name())))?;
        let encoded = trip.encoded_bytes;
        realized.insert(codec, encoded);
        totals.add(codec, encoded, raw);
        let verdict = match trip.differs {
            None => "ok".to_owned(),
            Some(at) => {
                outcome = Outcome::Mismatch;
                format!("DIFFERS from byte {at}")
            }
        };
        say!(
            "  {:<9} ratio {:.4}  predicted {:.4}  round trip {verdict}",
            codec.name(),
            ratio(encoded, raw),
            ratio(a.predicted_bytes(codec), raw)
        );
    }
    for (transport, plan) in &a.plans {
        let line = match plan.choice {
            Some(c) => {
                let mut s = format!(
                    "{:<9} predicted ratio {:.4}: {} vs raw {}",
                    c.codec.name(),
                    ratio(c.predicted_bytes, raw),
                    seconds(c.predicted_s),
                    seconds(plan.raw_s)
                );
                if let (Some(CodecChoice::Auto), Some(&r)) = (choice, realized.get(&c.codec)) {
                    let verdict = if c.accept_realized(r) {
                        "accepted"
                    } else {
                        "rejected: raw"
                    };
                    s += &format!("; realized {:.4}, {verdict}", ratio(r, raw));
                }
                s
            }
            None => format!("{:<9} {}", "raw", plan.reason),
        };
        say!(
            "  {:<9} pick {line}  [{:.1} GB/s]",
            transport.name,
            transport.bandwidth_bytes_per_s / 1e9
        );
    }
    Ok(outcome)
}
