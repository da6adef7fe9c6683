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
//! Big tensors are encoded in batches of whole frames (about [`BATCH_BYTES`]); above
//! [`PROGRESS_BYTES`] a progress line per batch goes to stderr.

use crate::common::{say, Fail};
use crate::input::{self, Tensor};
use crate::lossy::{self, LossySpec};
use clap::Args;
use std::collections::BTreeMap;
use std::path::PathBuf;
use zipcoll::codec::{decode, encode, MAX_FRAME_DATA_BYTES};
use zipcoll::{Backend, CodecId, DType};
use zipcoll_device::arbitrate::sample::{split_word, words_of};
use zipcoll_device::arbitrate::{
    entropy_bits_q16, predict, Arbiter, Plan, Predictions, Reason, Sample, TransportModel, MIN_GAIN, NET, NVLINK,
    Q16_ONE,
};
use zipcoll_device::dtype::{Bf16, Elem, Split, F16, F32, F64, F8E4M3, F8E5M2, I32, I64, I8, U32, U64, U8};
use zipcoll_device::frame::HEADER_BYTES;
use zipcoll_targets::Word;

/// Data encoded per call of the codec (rounded to whole frames).
pub const BATCH_BYTES: usize = 8 << 20;
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
    pub lossy: Option<LossySpec>,
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

/// `a / b` (1 when `b` is 0).
fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        1.0
    } else {
        a as f64 / b as f64
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

/// What the arbitration and the entropy bound say about one tensor.
struct Analysis {
    /// Bits of one split word, and of its raw part.
    word_bits: u32,
    raw_bits: u32,
    /// Order-0 entropy of the exponent symbols, bits per word.
    entropy_bits: f64,
    /// The arbitration's predictions from its sample.
    predictions: Predictions,
    /// The plans for NVLink and NET.
    plans: [(TransportModel, Plan); 2],
}

/// The elements of `data` (little-endian, whole elements).
pub fn elements<T: Elem>(data: &[u8]) -> Vec<T::Bits> {
    data.chunks_exact(T::DTYPE.size_bytes())
        .map(|c| T::Bits::from_bits64(c.iter().rev().fold(0u64, |v, &b| v << 8 | b as u64)))
        .collect()
}

/// [`Analysis`] of `data`, elements of `T`.
fn analyze<T: Split>(data: &[u8], frame_elems: usize) -> Analysis {
    let elems = elements::<T>(data);
    let words = words_of::<T>(elems.len());
    let mut counts = [0u64; 256];
    for i in 0..words {
        counts[T::split(split_word::<T>(&elems, i)).0 as usize] += 1;
    }
    let h = entropy_bits_q16(&counts) as f64 / Q16_ONE as f64;
    let raw_bytes = data.len() as u64;
    let plan = |t: TransportModel| (t, Arbiter::new(t).plan::<T>(&elems, frame_elems, raw_bytes));
    Analysis {
        word_bits: 8 * (T::DTYPE.size_bytes() * T::ELEMS_PER_WORD) as u32,
        raw_bits: T::RAW_BITS,
        entropy_bits: h / words.max(1) as f64,
        predictions: predict::<T>(&Sample::of::<T>(&elems), elems.len(), frame_elems),
        plans: [plan(NVLINK), plan(NET)],
    }
}

/// A dtype the codecs are built for ([`DType::coded`]), called `name` on the command line.
pub fn parse_coded_dtype(name: &str) -> Result<DType, String> {
    let d = input::parse_dtype(name)?;
    if d.coded() {
        Ok(d)
    } else {
        Err(format!(
            "{} has no codec (the codecs take bf16, f16, f32, f8e4m3 and f8e5m2; the collectives move {} uncompressed)",
            d.name(),
            d.name()
        ))
    }
}

/// [`analyze`] for the marker type of `dtype`.
fn analyze_dtype(dtype: DType, data: &[u8], frame_elems: usize) -> Analysis {
    match dtype {
        DType::Bf16 => analyze::<Bf16>(data, frame_elems),
        DType::F16 => analyze::<F16>(data, frame_elems),
        DType::F32 => analyze::<F32>(data, frame_elems),
        DType::F8E4M3 => analyze::<F8E4M3>(data, frame_elems),
        DType::F8E5M2 => analyze::<F8E5M2>(data, frame_elems),
        DType::I8 => analyze::<I8>(data, frame_elems),
        DType::U8 => analyze::<U8>(data, frame_elems),
        DType::I32 => analyze::<I32>(data, frame_elems),
        DType::U32 => analyze::<U32>(data, frame_elems),
        DType::I64 => analyze::<I64>(data, frame_elems),
        DType::U64 => analyze::<U64>(data, frame_elems),
        DType::F64 => analyze::<F64>(data, frame_elems),
    }
}

/// Encodes `data` with `codec` in batches of whole frames, decodes every batch and compares it
/// with the data; returns the frames' bytes and the first differing byte, if any.
fn round_trip(
    backend: Backend,
    dtype: DType,
    codec: CodecId,
    data: &[u8],
    frame_elems: usize,
) -> Result<(u64, Option<usize>), Fail> {
    let frame_bytes = frame_elems.saturating_mul(dtype.size_bytes());
    let batch = (BATCH_BYTES / frame_bytes).max(1).saturating_mul(frame_bytes);
    let mut encoded = 0u64;
    let mut differs = None;
    let mut done = 0usize;
    for chunk in data.chunks(batch) {
        let enc = encode(backend, dtype, Some(codec), chunk, frame_elems)
            .map_err(|e| Fail::Runtime(format!("encoding with {}: {e}", codec.name())))?;
        encoded += enc.encoded_bytes();
        let back =
            decode(backend, &enc).map_err(|e| Fail::Runtime(format!("decoding {} frames: {e}", codec.name())))?;
        if differs.is_none() && back != chunk {
            let at = back
                .iter()
                .zip(chunk)
                .position(|(a, b)| a != b)
                .unwrap_or(back.len().min(chunk.len()));
            differs = Some(done + at);
        }
        done += chunk.len();
        if data.len() > PROGRESS_BYTES {
            eprintln!(
                "encoding {}: {}/{} MiB",
                codec.name(),
                done >> 20,
                data.len().div_ceil(1 << 20)
            );
        }
    }
    Ok((encoded, differs))
}

/// Why a plan is RAW, in words.
fn reason_text(reason: Reason) -> String {
    let gain = MIN_GAIN * 100.0;
    match reason {
        Reason::TooSmall => "the batch is below the size gate".into(),
        Reason::NoCodecAvailable => "no codec is available".into(),
        Reason::CannotWin => {
            format!("coding costs more than it saves here: no codec can be {gain:.0}% faster than raw")
        }
        Reason::NoGain => format!("no codec is predicted {gain:.0}% faster than raw"),
        Reason::Predicted | Reason::Accepted => "a codec wins".into(),
        Reason::EncodeFailed => "the encoder failed".into(),
        Reason::RealizedTooLarge { realized } => format!("the realized {realized} bytes no longer win"),
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
    let a = analyze_dtype(t.dtype, data, frame_elems);
    let raw = data.len() as u64;
    say!(
        "  {:<9} ratio {:.4}  (order-0 bound: {} raw + {:.3} exponent bits per {}-bit word)",
        "entropy",
        (a.raw_bits as f64 + a.entropy_bits) / a.word_bits as f64,
        a.raw_bits,
        a.entropy_bits,
        a.word_bits
    );
    let codecs: Vec<CodecId> = match choice {
        None => CodecId::ALL.to_vec(),
        Some(CodecChoice::One(c)) => vec![c],
        Some(CodecChoice::Auto) => {
            let mut picks: Vec<CodecId> = a
                .plans
                .iter()
                .map(|(_, p)| p.choice.map_or(CodecId::Raw, |c| c.codec))
                .collect();
            picks.dedup();
            picks
        }
    };
    let mut outcome = Outcome::AllEqual;
    let mut realized = BTreeMap::new();
    for codec in codecs {
        let (encoded, differs) = round_trip(backend, t.dtype, codec, data, frame_elems)?;
        realized.insert(codec, encoded);
        totals.add(codec, encoded, raw);
        let predicted = match codec {
            // RAW frames: the data and a header per frame
            CodecId::Raw => raw + (n.div_ceil(frame_elems) * HEADER_BYTES) as u64,
            c => a.predictions.get(c),
        };
        let verdict = match differs {
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
            ratio(predicted, raw)
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
            None => format!("{:<9} {}", "raw", reason_text(plan.reason)),
        };
        say!(
            "  {:<9} pick {line}  [{:.1} GB/s]",
            transport.name,
            transport.bandwidth_bytes_per_s / 1e9
        );
    }
    Ok(outcome)
}
