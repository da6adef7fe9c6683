//! Lossy calls (NCCLZ's decoupling): a call quantizes its input once, at the interface, into
//! integer levels on a scale every rank agreed; the collective then moves or reduces the
//! integers losslessly (coded as the call's compression says); the result is scaled back once.
//! Nothing is quantized twice, so the error does not grow with the hops.
//!
//! | policy ([`Lossy`])            | written as                         | guarantee per element of the result |
//! |-------------------------------|------------------------------------|-------------------------------------|
//! | `Exact` (the default)         | `exact`                            | the data travels bit for bit         |
//! | `ErrorBound(Bound::Abs(eb))`  | `error-bound:abs=EB`               | within `k x eb` of the exact result, `k` the ranks summed (1 for max, min, average and the moves), plus the result's rounding to its dtype |
//! | `ErrorBound(Bound::Rel(r))`   | `error-bound:rel=R`                | the same with `eb = r x (max - min)` of the finite inputs (of every rank for a reduction, of each source rank for the moves) |
//! | `Qsgd { bits, bucket, seed }` | `qsgd:bits=B[,bucket=N][,seed=S]`  | unbiased: `E[result] = exact` (QSGD with `2^(B-1) - 1` levels per bucket norm, the largest rank's for a reduction) |
//!
//! A communicator's policy ([`super::Config::lossy`], `ZIPCOLL_LOSSY`) applies to the calls it
//! can serve: all_reduce, reduce, reduce_scatter, all_gather, broadcast and all_to_all of f32,
//! bf16 and f16, with sum, average, max or min (QSGD: sum and average); other calls travel
//! exactly. A call's own policy ([`super::Options::lossy`]) that it cannot serve is an
//! [`crate::Error::InvalidArgument`]. How a call runs (`call.rs`):
//!
//! 1. every rank computes statistics records of its input (per bucket of 4096 elements, QSGD:
//!    of its bucket; max, min, a NaN or infinity seen, L2 norm) and the ranks exchange them: a
//!    max-all_reduce for a reduction, an all_gather for the moves (each source rank's scales);
//! 2. the host reads them (a lossy call waits for the device here). The buckets that hold a
//!    NaN or an infinity **escape**: they travel exactly, in a collective of their own (3), and
//!    the scale comes from the other buckets. Where the bound is too fine for the data's range
//!    (a level, or for a sum of `k` ranks `k` levels, beyond the `i8` levels' 127; under QSGD, a
//!    bucket's norm past `f32` or too small for its levels), or a source has more than 64
//!    escaping buckets or they hold more than half its elements, the call travels exactly
//!    instead, decided alike on every rank ([`LossyCounts`] says how often);
//! 3. quantize; each rank packs its escaping buckets' elements into one buffer, and a
//!    reduction all-reduces the packed buffers exactly (the same buckets on every rank: their
//!    union), the moves all-gather them (each source's);
//! 4. the collective on the levels (sum, max, min, or moved), scale back into the output, and
//!    the escaping buckets' exact elements over their places in it; the call returns once the
//!    result is in place (it checks that every element without a level lay in an escaping
//!    bucket: an input that changed under the call is [`crate::Error::InputChanged`], and the
//!    communicator is aborted, so the peers' next calls fail too).
//!
//! So a NaN or an infinity comes out where the exact call puts one, NaN payloads included in
//! the moves; the escaping buckets' finite elements are the exact call's too, up to the order
//! a reduction adds in.
//!
//! An absolute bound needs no statistics, so such a call reads its input once: it quantizes
//! at once with levels up to `127 / k` (`k` the ranks a sum adds, else 1), and the ranks
//! agree, by a max-all_reduce (the moves: an all_gather) of the quantizer's rejection words
//! per bucket of 4096, which buckets had an element without a level (a NaN, an infinity, or a
//! value beyond the levels): those escape, as in step 2, or the call travels exactly where
//! they are too many. It quantizes wherever the statistics' rule would, and also where that
//! rule, which keeps a level of margin (`floor(max |x| / 2 eb) + 1 <= 127 / k`), would not but
//! every level fits.
//!
//! Levels are `i8`, narrower than every dtype served (a quarter of f32's bytes, half of bf16's;
//! the lossless coders then take what the levels leave): a sum of `k` ranks under QSGD needs
//! `k x (2^(bits-1) - 1) <= 127` (bits 4 up to 18 ranks, bits 5 up to 8), a call that cannot
//! have it is not served. Wider levels would not shrink bf16 and f16, and the integer coders
//! code a 32-bit integer's top byte only, so they would not shrink f32 either.
//!
//! Lossy calls cannot be captured into a CUDA graph (step 2 reads on the host), and groups,
//! send/recv and all_to_allv travel exactly.

mod call;
mod kernels;

use crate::error::{Error, Result};
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use zipcoll_device::lossy::qsgd::MAX_LEVELS;

/// A bound on each element's error.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Bound {
    /// At most this much, absolutely.
    Abs(f32),
    /// At most this fraction of the value range `max - min` of the finite inputs.
    Rel(f32),
}

/// Whether calls quantize their data (see the module table).
///
/// ```
/// use zipcoll_host::comm::{run_sim, Config, Data, Lossy, Options};
/// use zipcoll_host::{DType, ReduceOp};
/// let eb = 0.05f32;
/// let sums = run_sim(2, Config::sim(), |comm| {
///     let x: Vec<f32> = (0..1000).map(|i| ((i * 7 + comm.rank()) % 13) as f32 * 0.1).collect();
///     let mut buf = comm.alloc(4 * x.len())?;
///     buf.copy_from_host(&x.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>())?;
///     let opts = Options { lossy: Some(format!("error-bound:abs={eb}").parse()?), ..Options::default() };
///     comm.all_reduce(Data::InPlace(&mut buf), x.len(), DType::F32, ReduceOp::Sum, opts)?;
///     assert_eq!(comm.lossy_counts().quantized, 1);
///     let out = buf.to_host()?;
///     Ok(f32::from_le_bytes(out[4..8].try_into().unwrap()))
/// })?;
/// // element 1: 0.7 + 0.8 on the two ranks, within 2 x eb
/// assert!((sums[0] - 1.5).abs() <= 2.0 * eb + 1e-6);
/// # Ok::<(), zipcoll_host::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum Lossy {
    /// Bit for bit.
    #[default]
    Exact,
    /// Error-bounded uniform quantization.
    ErrorBound(Bound),
    /// QSGD stochastic quantization.
    Qsgd {
        /// Bits of a level with its sign (`2..=8`): `2^(bits-1) - 1` levels.
        bits: u32,
        /// Elements per bucket, each with its own norm.
        bucket: u32,
        /// The draws' seed (mixed with the rank and the call's number: reproducible runs).
        seed: u64,
    },
}

// The bounds are checked finite and positive (`Lossy::validate`) before any use: equal
// policies compare equal.
impl Eq for Lossy {}

impl Lossy {
    /// QSGD's default bucket.
    pub const QSGD_BUCKET: u32 = 512;

    /// Checks the parameters: a finite positive bound, `bits` in `2..=8`, a bucket of at least
    /// one element; an [`Error::InvalidArgument`] saying which is not.
    pub fn validate(&self) -> Result<()> {
        let bad = |why: String| Err(Error::InvalidArgument(format!("lossy policy {self}: {why}")));
        match *self {
            Lossy::Exact => Ok(()),
            Lossy::ErrorBound(Bound::Abs(b) | Bound::Rel(b)) if !(b > 0.0 && b.is_finite()) => {
                bad("the bound must be a positive finite number".into())
            }
            Lossy::ErrorBound(_) => Ok(()),
            Lossy::Qsgd { bits, .. } if !(2..=8).contains(&bits) => bad(format!("bits {bits}: 2..=8")),
            Lossy::Qsgd { bucket: 0, .. } => bad("a bucket of 0 elements".into()),
            Lossy::Qsgd { .. } => Ok(()),
        }
    }

    /// QSGD's levels `s` (0 for the others).
    pub fn levels(&self) -> u32 {
        match *self {
            Lossy::Qsgd { bits, .. } => ((1u32 << (bits - 1)) - 1).min(MAX_LEVELS),
            _ => 0,
        }
    }
}

/// What a communicator's lossy calls did ([`super::Communicator::lossy_counts`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LossyCounts {
    /// Calls that quantized.
    pub quantized: u64,
    /// Calls that traveled exactly: an element was a NaN or an infinity.
    pub not_finite: u64,
    /// Calls that traveled exactly: the bound was too fine for the data's range.
    pub too_fine: u64,
    /// Buckets that escaped in calls that quantized: they held a NaN, an infinity or (under an
    /// absolute bound) a value beyond the levels, and traveled exactly beside the levels.
    pub escaped: u64,
}

/// The communicator's [`LossyCounts`], counted as calls decide.
#[derive(Debug, Default)]
pub(super) struct Counters {
    quantized: AtomicU64,
    not_finite: AtomicU64,
    too_fine: AtomicU64,
    escaped: AtomicU64,
}

impl Counters {
    /// Counts one quantized call; its number among them (QSGD's draws differ per call).
    fn quantized(&self) -> u64 {
        self.quantized.fetch_add(1, Ordering::Relaxed)
    }

    /// Counts one call sent exactly, for `why`.
    fn travels_exactly(&self, why: call::Exact) {
        let counter = match why {
            call::Exact::NotFinite => &self.not_finite,
            call::Exact::TooFine => &self.too_fine,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts `buckets` escaping buckets of a quantized call.
    fn escaped(&self, buckets: usize) {
        self.escaped.fetch_add(buckets as u64, Ordering::Relaxed);
    }

    /// The counts so far.
    pub(super) fn get(&self) -> LossyCounts {
        LossyCounts {
            quantized: self.quantized.load(Ordering::Relaxed),
            not_finite: self.not_finite.load(Ordering::Relaxed),
            too_fine: self.too_fine.load(Ordering::Relaxed),
            escaped: self.escaped.load(Ordering::Relaxed),
        }
    }
}

impl FromStr for Lossy {
    type Err = Error;
    /// `exact`, `error-bound:abs=EB`, `error-bound:rel=R` or `qsgd:bits=B[,bucket=N][,seed=S]`.
    fn from_str(spec: &str) -> Result<Lossy> {
        let usage = || {
            Error::InvalidArgument(format!(
                "lossy policy {spec:?}: expected exact, error-bound:abs=EB, error-bound:rel=R or \
                 qsgd:bits=B[,bucket=N][,seed=S]"
            ))
        };
        let spec = spec.trim();
        if matches!(spec, "exact" | "off") {
            return Ok(Lossy::Exact);
        }
        let (kind, args) = spec.split_once(':').ok_or_else(usage)?;
        let mut fields = args.split(',').map(|kv| kv.split_once('=').ok_or_else(usage));
        let bad = |k: &str, v: &str| Error::InvalidArgument(format!("lossy policy {spec:?}: bad {k}={v}"));
        let lossy = match kind {
            "error-bound" => {
                let (k, v) = fields.next().ok_or_else(usage)??;
                if fields.next().is_some() {
                    return Err(usage());
                }
                let b = v.parse::<f32>().map_err(|_| bad(k, v))?;
                match k {
                    "abs" => Lossy::ErrorBound(Bound::Abs(b)),
                    "rel" => Lossy::ErrorBound(Bound::Rel(b)),
                    _ => return Err(usage()),
                }
            }
            "qsgd" => {
                let (mut bits, mut bucket, mut seed) = (None, Lossy::QSGD_BUCKET, 0u64);
                for f in fields {
                    let (k, v) = f?;
                    match k {
                        "bits" => bits = Some(v.parse().map_err(|_| bad(k, v))?),
                        "bucket" => bucket = v.parse().map_err(|_| bad(k, v))?,
                        "seed" => seed = v.parse().map_err(|_| bad(k, v))?,
                        _ => return Err(usage()),
                    }
                }
                Lossy::Qsgd {
                    bits: bits.ok_or_else(usage)?,
                    bucket,
                    seed,
                }
            }
            _ => return Err(usage()),
        };
        lossy.validate().map(|()| lossy)
    }
}

impl fmt::Display for Lossy {
    /// What [`Lossy::from_str`] reads back (`error-bound:abs=0.001`, `qsgd:bits=8,bucket=512,seed=0`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Lossy::Exact => f.write_str("exact"),
            Lossy::ErrorBound(Bound::Abs(eb)) => write!(f, "error-bound:abs={eb}"),
            Lossy::ErrorBound(Bound::Rel(r)) => write!(f, "error-bound:rel={r}"),
            Lossy::Qsgd { bits, bucket, seed } => write!(f, "qsgd:bits={bits},bucket={bucket},seed={seed}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_parse_print_and_parse_back() {
        for s in [
            "exact",
            "error-bound:abs=0.001",
            "error-bound:rel=0.0001",
            "qsgd:bits=8,bucket=512,seed=0",
            "qsgd:bits=4,bucket=256,seed=3",
        ] {
            let l: Lossy = s.parse().unwrap();
            assert_eq!(l.to_string(), s);
            assert_eq!(l.to_string().parse::<Lossy>().unwrap(), l);
        }
        assert_eq!("qsgd:bits=8".parse::<Lossy>().unwrap().levels(), 127);
        assert_eq!("qsgd:bits=2".parse::<Lossy>().unwrap().levels(), 1);
        for bad in [
            "",
            "lossy",
            "error-bound:abs=0",
            "error-bound:abs=-1",
            "error-bound:rel=inf",
            "error-bound:abs=NaN",
            "error-bound:abs=1,rel=2",
            "error-bound:x=1",
            "qsgd:bits=9",
            "qsgd:bits=1",
            "qsgd:bucket=4",
            "qsgd:bits=8,bucket=0",
            "qsgd:bits=8,oops=1",
            "zfp:rate=4",
        ] {
            let e = bad.parse::<Lossy>().unwrap_err();
            assert!(matches!(e, Error::InvalidArgument(_)), "{bad}: {e}");
        }
    }
}
