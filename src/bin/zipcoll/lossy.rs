//! `zipcoll inspect --lossy SPEC`: a quantizer of `zipcoll_device::lossy` over each tensor, then
//! its symbols through the lossless coders, with the error checked on every element.
//!
//! | SPEC                         | quantizer                                                   |
//! |------------------------------|-------------------------------------------------------------|
//! | `error-bound:abs=EB`         | error-bounded, `|x - x'| <= EB` for every element           |
//! | `error-bound:rel=R`          | the same with `EB = R x (max - min)` of the tensor's finite values |
//! | `qsgd:bits=B[,bucket=N][,seed=S]` | QSGD with `2^(B-1) - 1` levels (B in 2..=8), buckets of N elements (default 512), seed S (default 0) |
//!
//! | line       | meaning                                                                      |
//! |------------|------------------------------------------------------------------------------|
//! | `lossy`    | the quantizer, its escapes, the largest error seen (and, for the error bound, whether every element kept it) |
//! | `quant`    | ratio of the 8-bit symbols + escapes + scales + a header per frame to the data |
//! | `+fixedlen`, `+huffman`, `+expans` | the same with the symbols coded by that coder (round trip of the symbols checked) |

use crate::common::{say, Fail};
use crate::inspect::Outcome;
use zipcoll::codec::analysis::elements;
use zipcoll::codec::{decode_symbols, encode_symbols};
use zipcoll::comm::{Bound, Lossy};
use zipcoll::{CodecId, DType, Error};
use zipcoll_device::dtype::{Bf16, F32Exact, F16, F32, F8E4M3, F8E5M2};
use zipcoll_device::frame::HEADER_BYTES;
use zipcoll_device::lossy::error_bound::relative_to_range;
use zipcoll_device::lossy::{Quantizer, ESCAPE};

/// `--lossy`'s value: a lossy policy of the communicator's form (`zipcoll::comm::Lossy`), not
/// `exact`.
pub fn parse_lossy(spec: &str) -> Result<Lossy, String> {
    match spec.parse::<Lossy>() {
        Ok(Lossy::Exact) => Err(format!("{spec:?}: exact quantizes nothing; expected error-bound:abs=EB, error-bound:rel=R or qsgd:bits=B[,bucket=N][,seed=S]")),
        Ok(l) => Ok(l),
        Err(Error::InvalidArgument(why)) => Err(why),
        Err(e) => Err(e.to_string()),
    }
}

/// The quantizer of `spec` for a tensor of finite range `[min, max]` (`None`: no finite value),
/// or why there is none.
fn quantizer(spec: Lossy, range: Option<(f32, f32)>) -> Result<Quantizer, String> {
    match spec {
        Lossy::ErrorBound(Bound::Abs(eb)) => Ok(Quantizer::ErrorBound { eb }),
        Lossy::ErrorBound(Bound::Rel(rel)) => range
            .and_then(|(min, max)| relative_to_range(rel, min, max))
            .map(|eb| Quantizer::ErrorBound { eb })
            .ok_or_else(|| "no positive finite bound from the value range (all zero or no finite value)".into()),
        Lossy::Qsgd { bucket, seed, .. } => Ok(Quantizer::Qsgd {
            levels: spec.levels(),
            bucket: bucket as usize,
            seed,
        }),
        Lossy::Exact => Err("exact quantizes nothing".into()),
    }
}

/// A tensor quantized: its symbols, each bucket's scale, how many elements escaped, and every
/// element as the receiver rebuilds it.
struct Quantized<B> {
    symbols: Vec<u8>,
    scales: Vec<f32>,
    escapes: usize,
    rebuilt: Vec<B>,
}

fn quantize<T: F32Exact>(q: &Quantizer, x: &[T::Bits]) -> Quantized<T::Bits> {
    let mut out = Quantized {
        symbols: Vec::with_capacity(x.len()),
        scales: Vec::new(),
        escapes: 0,
        rebuilt: Vec::with_capacity(x.len()),
    };
    let len = q.bucket().min(x.len().max(1));
    for (b, bucket) in x.chunks(len).enumerate() {
        let scale = q.scale::<T>(bucket);
        out.scales.push(scale);
        let first = b * len;
        for (i, &e) in bucket.iter().enumerate() {
            let s = q.symbol::<T>(e, scale, (first + i) as u64);
            out.symbols.push(s);
            if s == ESCAPE {
                out.escapes += 1;
                out.rebuilt.push(e);
            } else {
                out.rebuilt.push(q.value::<T>(s, scale));
            }
        }
    }
    out
}

/// Prints the `--lossy` report of one tensor of `dtype` (see the module table); `Mismatch` when
/// an element broke the error bound or a coded symbol stream did not decode to itself.
pub fn report(spec: Lossy, dtype: DType, data: &[u8], frame_elems: usize) -> Result<Outcome, Fail> {
    match dtype {
        DType::Bf16 => report_as::<Bf16>(spec, data, frame_elems),
        DType::F16 => report_as::<F16>(spec, data, frame_elems),
        DType::F32 => report_as::<F32>(spec, data, frame_elems),
        DType::F8E4M3 => report_as::<F8E4M3>(spec, data, frame_elems),
        DType::F8E5M2 => report_as::<F8E5M2>(spec, data, frame_elems),
        other => Err(Fail::Usage(format!(
            "--lossy quantizes float types reduced through f32, not {}",
            other.name()
        ))),
    }
}

fn report_as<T: F32Exact>(spec: Lossy, data: &[u8], frame_elems: usize) -> Result<Outcome, Fail> {
    let size = T::DTYPE.size_bytes();
    let x = elements::<T>(data);
    let finite = x.iter().map(|&e| T::to_f32(e)).filter(|v| v.is_finite());
    let range = finite.fold(None, |r: Option<(f32, f32)>, v| {
        Some(r.map_or((v, v), |(lo, hi)| (lo.min(v), hi.max(v))))
    });
    let q = match quantizer(spec, range) {
        Ok(q) => q,
        Err(why) => {
            say!("  lossy     {spec}: {why}");
            return Ok(Outcome::Mismatch);
        }
    };
    let z = quantize::<T>(&q, &x);
    let max_err = x
        .iter()
        .zip(&z.rebuilt)
        .map(|(&a, &b)| {
            let (a, b) = (T::to_f32(a), T::to_f32(b));
            if a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()) {
                0.0
            } else {
                (a as f64 - b as f64).abs()
            }
        })
        .fold(0.0f64, f64::max);
    let mut outcome = Outcome::AllEqual;
    let verdict = match q {
        Quantizer::ErrorBound { eb } if max_err <= eb as f64 => format!("<= eb {eb:.3e}: bound held"),
        Quantizer::ErrorBound { eb } => {
            outcome = Outcome::Mismatch;
            format!("> eb {eb:.3e}: BOUND BROKEN")
        }
        Quantizer::Qsgd { levels, .. } => format!("({levels} levels)"),
    };
    let n = x.len().max(1);
    say!(
        "  {:<9} {spec}: {} escapes ({:.3}%), max error {max_err:.3e} {verdict}",
        "lossy",
        z.escapes,
        100.0 * z.escapes as f64 / n as f64
    );
    // what travels besides the symbols: the escaped elements, the scales, a header per frame
    let frames = x.len().div_ceil(frame_elems).max(1);
    let side = (z.escapes * size + 4 * z.scales.len() + frames * HEADER_BYTES) as u64;
    let raw = data.len().max(1) as u64;
    say!(
        "  {:<9} ratio {:.4}  (8-bit symbols + escapes + scales + headers)",
        "quant",
        (z.symbols.len() as u64 + side) as f64 / raw as f64
    );
    for codec in [CodecId::FixedLen, CodecId::Huffman, CodecId::ExpAns] {
        let mut coded = 0u64;
        let mut ok = true;
        for chunk in z.symbols.chunks(frame_elems) {
            let c = encode_symbols(codec, chunk, 8).map_err(|e| Fail::Runtime(e.to_string()))?;
            match c {
                Some(c) => {
                    coded += c.bytes.len() as u64;
                    ok &= decode_symbols(&c).map_err(|e| Fail::Runtime(e.to_string()))? == chunk;
                }
                // the coder gave up: the frame carries the symbols as they are
                None => coded += chunk.len() as u64,
            }
        }
        if !ok {
            outcome = Outcome::Mismatch;
        }
        say!(
            "  +{:<8} ratio {:.4}  symbols round trip {}",
            codec.name(),
            (coded + side) as f64 / raw as f64,
            if ok { "ok" } else { "DIFFERS" }
        );
    }
    Ok(outcome)
}
