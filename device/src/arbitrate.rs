//! Runtime arbitration (NCCLZ's REA): for each batch about to cross a link, decide whether to
//! send it RAW or coded, and with which codec, from a cost model of the link and the codecs and
//! a bounded sample of the data. no_std, integer and `f32` arithmetic only, so the host and a
//! GPU lane run the same decision.
//!
//! | step | what                                                                 | cost                |
//! |------|----------------------------------------------------------------------|---------------------|
//! | 1    | gates: batch below [`Policy::min_batch_bytes`]; no codec in [`Policy::available`]; no available codec can win even if its coded section were empty ([`lower_bound_bytes`]) | constant time |
//! | 2    | [`Sample::of`]: at most [`SAMPLE_MAX_BYTES`] in strided chunks; histograms of exponent symbols (the batch's and per region) and FixedLen widths | <= 64 KiB read |
//! | 3    | [`predict()`]: each codec's bytes, frames included, per group of regions | up to 16 groups: tens of us on a host |
//! | 4    | admissible: fits the capacity and is [`Policy::min_gain`] faster than RAW; the fastest is the [`Choice`] | constant |
//! | 5    | the caller encodes it; [`Choice::accept_realized`] checks the real size still wins, else RAW | one compare |
//!
//! [`Arbiter::plan`] runs steps 1-4; [`Arbiter::decide`] runs all five, taking a closure that
//! encodes with the chosen codec and returns the realized bytes.
//!
//! # The cost model
//!
//! A coded batch is pipelined through encode, wire and decode, frame by frame and channel by
//! channel ([`TransportModel::time_s`], [`mod@model`]): `T_c = latency + a_c + (1 - q) *
//! max(E_c, W_c, D_c) + q * (E_c + W_c + D_c)`, with `W_c = P_c / B_eff` for `P_c` predicted
//! bytes on the link, `E_c` and `D_c` the encode and decode time of the batch's uncompressed
//! bytes at the rate of the channels that code it, and `q` the part of the batch in the
//! channels' first frames (the fill and drain); RAW pays only `latency + n * size / B_eff`.
//! On a fast link (NVLink) encoding or decoding alone takes longer than sending the batch raw,
//! and the constant-time gate answers RAW without sampling; on a slow one (the network) the
//! wire is the slowest stage, and a codec that saves a third of the bytes wins once the batch
//! fills the channels' pipelines. The presets code with the whole GPU (one pipeline); a
//! communicator's model codes with its channels ([`TransportModel::with_block_coders`]).

//! # Where the constants come from
//!
//! | constant | value | source |
//! |----------|-------|--------|
//! | [`NVLINK`] `B_eff` | 327 GB/s | measured: NCCL 2.28.9 all_reduce, bf16, 1 GiB, busbw, 2x H200 NV18, 2026-11-30 (`shared/baselines/nccl_bw.py`; peer copies reached 394 GB/s) |
//! | [`NET`] `B_eff` | 4.6 GB/s | measured: NCCL send/recv of 1 GiB over the socket transport on loopback between the two GPUs of one host, same run (5.3 GB/s on another machine) |
//! | latencies | 3 us, 20 us | placeholders |
//! | `l_enc`, `l_dec` | 1 / (127, 123 GB/s) FixedLen; 1 / (99, 125) ExpWindow; 1 / (55, 103) ExpAns; 1 / (38, 107) Huffman | measured 2026-11-30 on one H200 with `zipcoll-bench codec --sizes 256M --dtype bf16` (BENCHMARKS.md): bf16 N(0,1), 256 MiB, frames of 8192 elements, median of 20 runs after 3 warm-up runs, GB/s of uncompressed bytes (f32 runs faster per byte: see [`model`]) |
//! | `a_c` | 2 us | placeholder |
//! | one channel's rates | a block channel's ExpAns 0.68 / 0.92 GB/s; other codecs one warp's (FixedLen 4.4 / 5.5 GB/s over 64 warps, ...) | measured: a CTA per 512 KiB frame (2026-12-04) and one warp per frame (2026-11-30) on one H200 (see [`model`]) |
//!
//! How the constants are calibrated: `zipcoll-bench codec` measures each codec's encode and
//! decode GB/s (per uncompressed byte) on the GPU, and `l_enc = 1 / enc_bandwidth`,
//! `l_dec = 1 / dec_bandwidth` ([`CodecCost::from_gbps`]); `a_c` would be the time of a batch of
//! one frame minus its bandwidth term (not measured yet); `B_eff` is the link's measured bus
//! bandwidth (NVLink ~350-390 GB/s busbw on 2x H200 NV18 with a good NCCL setting, the network's
//! socket transport ~5-10 GB/s). A [`TransportModel`] is plain data: build one from measured
//! numbers. With these, NVLink (327 GB/s) is faster than any codec's encode alone, so the gate
//! answers RAW there; the network (4.6 GB/s) is 8 to 25 times slower than the codecs, the wire
//! is the pipeline's slowest stage, and the bytes saved decide (on N(0,1) bf16 the smallest
//! codec, ExpAns, wins).
//!
//! # Predictions
//!
//! Each codec's size is predicted from the sample with that codec's own rule ([`mod@predict`]'s
//! table): FixedLen from the sampled sub-block widths, ExpWindow with the encoder's own window
//! choice ([`crate::codec::exp_window::choose_window`], one function for both) on the sampled
//! histogram, ExpAns from the cross-entropy under ExpAns's normalized table plus its table and
//! states, Huffman from a length-limited Huffman code of the histogram; every split codec also
//! pays the raw plane and a 32-byte header per frame. As the codecs fit a window or table to
//! each frame, the histogram rules apply per group of the sample's regions that share a frame,
//! and the groups are averaged ([`mod@predict`]): a batch whose parts differ in scale (a model's
//! layers) is predicted per part, not from the mixture. The order-0 entropy is
//! [`entropy_bits_q16`]. `device/tests/arbitrate.rs` holds the predictions to the realized sizes:
//! ExpWindow within 3% on N(0,1) bf16 and on fp8 e4m3 and e5m2, ExpWindow, ExpAns and Huffman
//! within 3% on two-scale tensors and on a GPT-like parameter tensor (the shape of the H200
//! runs' `weights_bf16`, where one histogram of the batch predicted 8% too large).

pub mod entropy;
pub mod model;
pub mod predict;
pub mod sample;

pub use self::entropy::{entropy_bits_q16, log2_q16, Q16_ONE};
pub use self::model::{CodecCost, TransportModel, CODECS, NET, NVLINK};
pub use self::predict::{lower_bound_bytes, predict, Predictions};
pub use self::sample::{sampled_elems, sampled_words, word_bytes, Sample, CHUNK_WORDS, REGIONS, SAMPLE_MAX_BYTES};

use crate::codec::CodecId;
use crate::dtype::Split;

/// Batches smaller than this go RAW: headers, tables and `a_c` dominate, and sampling would
/// cost about as much as sending.
pub const MIN_BATCH_BYTES: usize = 32 * 1024;
/// A codec must be predicted at least this much faster than RAW (a fraction of RAW's time).
pub const MIN_GAIN: f32 = 0.03;

/// A set of codecs (bit `CodecId as u8` set).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CodecSet(u8);

impl CodecSet {
    /// Every codec.
    pub const ALL: CodecSet = CodecSet((1 << CODECS) - 1);
    /// RAW alone.
    pub const RAW_ONLY: CodecSet = CodecSet(1);

    /// Exactly the codecs in `codecs`.
    pub const fn of(codecs: &[CodecId]) -> CodecSet {
        let mut bits = 0u8;
        let mut i = 0;
        while i < codecs.len() {
            bits |= 1 << codecs[i] as u8;
            i += 1;
        }
        CodecSet(bits)
    }
    /// This set and `codec`.
    pub const fn with(self, codec: CodecId) -> CodecSet {
        CodecSet(self.0 | 1 << codec as u8)
    }
    /// This set without `codec`.
    pub const fn without(self, codec: CodecId) -> CodecSet {
        CodecSet(self.0 & !(1 << codec as u8))
    }
    /// Whether `codec` is in the set.
    pub const fn contains(self, codec: CodecId) -> bool {
        self.0 & 1 << codec as u8 != 0
    }
}

/// The decision's knobs (see the module table).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Policy {
    /// Batches of fewer bytes go RAW without a look at the data.
    pub min_batch_bytes: usize,
    /// The fraction of RAW's time a codec must save.
    pub min_gain: f32,
    /// The codecs that may be chosen: those whose kernels were built for this dtype and whose
    /// decoder the receiver has (RAW is always possible).
    pub available: CodecSet,
}

impl Policy {
    /// [`MIN_BATCH_BYTES`], [`MIN_GAIN`], every codec.
    pub const DEFAULT: Policy = Policy {
        min_batch_bytes: MIN_BATCH_BYTES,
        min_gain: MIN_GAIN,
        available: CodecSet::ALL,
    };
}

impl Default for Policy {
    fn default() -> Self {
        Policy::DEFAULT
    }
}

/// Why a batch goes the way it goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// RAW: the batch is below [`Policy::min_batch_bytes`] (or empty).
    TooSmall,
    /// RAW: no codec but RAW is in [`Policy::available`], or none is built for the dtype
    /// ([`crate::dtype::DType::coded`]).
    NoCodecAvailable,
    /// RAW: no available codec could beat RAW by the gain within the capacity even with an
    /// empty coded section (decided without sampling).
    CannotWin,
    /// RAW: after sampling, no codec is predicted to fit and beat RAW by the gain.
    NoGain,
    /// A plan's codec: predicted to fit and win ([`Arbiter::decide`] turns it into
    /// `Accepted` or a RAW reason).
    Predicted,
    /// The chosen codec, encoded: its realized size passed [`Choice::accept_realized`].
    Accepted,
    /// RAW: the chosen codec's encoder failed.
    EncodeFailed,
    /// RAW: the chosen codec's realized size no longer wins.
    RealizedTooLarge {
        /// The realized bytes.
        realized: u64,
    },
}

impl core::fmt::Display for Reason {
    /// Why, in words (with [`MIN_GAIN`] as the gain a codec must reach).
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let gain = MIN_GAIN * 100.0;
        match self {
            Reason::TooSmall => f.write_str("the batch is below the size gate"),
            Reason::NoCodecAvailable => f.write_str("no codec is available"),
            Reason::CannotWin => write!(
                f,
                "coding costs more than it saves here: no codec can be {gain:.0}% faster than raw"
            ),
            Reason::NoGain => write!(f, "no codec is predicted {gain:.0}% faster than raw"),
            Reason::Predicted | Reason::Accepted => f.write_str("a codec wins"),
            Reason::EncodeFailed => f.write_str("the encoder failed"),
            Reason::RealizedTooLarge { realized } => write!(f, "the realized {realized} bytes no longer win"),
        }
    }
}

/// The codec a plan picked, and the largest realized size that still wins with it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Choice {
    /// The codec.
    pub codec: CodecId,
    /// Its predicted bytes.
    pub predicted_bytes: u64,
    /// Its predicted seconds.
    pub predicted_s: f32,
    /// The most bytes it may realize: within the capacity, and `min_gain` faster than RAW.
    pub max_bytes: u64,
}

impl Choice {
    /// Whether the batch, encoded to `realized` bytes, still fits the capacity and beats RAW by
    /// the gain (so the coded batch is sent; otherwise RAW is).
    pub fn accept_realized(&self, realized: u64) -> bool {
        realized <= self.max_bytes
    }
}

/// Steps 1-4 of the module table for one batch.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Plan {
    /// The batch's bytes.
    pub raw_bytes: u64,
    /// RAW's predicted seconds.
    pub raw_s: f32,
    /// Every codec's predicted bytes, when a sample was taken (not when a gate decided).
    pub predictions: Option<Predictions>,
    /// The codec to encode with, or `None` for RAW.
    pub choice: Option<Choice>,
    /// Why ([`Reason::Predicted`] when there is a choice).
    pub reason: Reason,
}

/// The outcome of [`Arbiter::decide`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Decision {
    /// The codec the batch is sent with ([`CodecId::Raw`]: as it is).
    pub codec: CodecId,
    /// Why.
    pub reason: Reason,
    /// The plan it came from.
    pub plan: Plan,
    /// The chosen codec's realized bytes, when it was encoded.
    pub realized: Option<u64>,
}

/// A cost model and a policy: decides per batch (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Arbiter {
    /// The link and the codecs' costs.
    pub transport: TransportModel,
    /// The gates and the gain.
    pub policy: Policy,
}

impl Arbiter {
    /// An arbiter for `transport` with [`Policy::DEFAULT`].
    pub const fn new(transport: TransportModel) -> Arbiter {
        Arbiter {
            transport,
            policy: Policy::DEFAULT,
        }
    }

    /// The most bytes `codec` may put on the link for a batch of `raw_bytes` in frames of
    /// `frame_bytes` and still beat RAW by the gain within `capacity` (0 if it cannot at all).
    fn max_bytes(&self, codec: CodecId, raw_bytes: u64, frame_bytes: u64, capacity: u64) -> u64 {
        let t = &self.transport;
        let budget = t.raw_time_s(raw_bytes) * (1.0 - self.policy.min_gain);
        t.max_wire_bytes(codec, raw_bytes, frame_bytes, budget).min(capacity)
    }

    /// The codecs other than RAW that may be chosen.
    fn candidates(&self) -> impl Iterator<Item = CodecId> + '_ {
        CodecId::ALL
            .into_iter()
            .filter(move |&c| c != CodecId::Raw && self.policy.available.contains(c))
    }

    /// Whether no codec can beat RAW on this link at any batch size: for every candidate,
    /// encoding or decoding a byte with every channel takes at least the wire time a byte must
    /// save (`(1 - min_gain) / bandwidth`), so that stage alone outlasts RAW's budget and the
    /// gate decides RAW for every `n` (fewer channels, fill and drain only add time). Depends
    /// on the link and the policy alone: every rank of a communicator computes the same, so
    /// each knows that its peers send RAW (NVLink with the collectives' coders; a network with
    /// few of them).
    pub fn never_codes(&self) -> bool {
        let t = &self.transport;
        let saved_per_byte = (1.0 - self.policy.min_gain) / t.bandwidth_bytes_per_s;
        self.candidates().all(|c| {
            let cost = t.cost(c);
            cost.enc_s_per_byte.max(cost.dec_s_per_byte) >= saved_per_byte
        })
    }

    /// Step 1 alone, for a batch of `n` elements of `T`: the plan when a gate decides RAW
    /// without looking at the data, else `None` (the caller then samples: [`Arbiter::plan`]).
    /// Lets a caller whose batch is far away (in device memory) skip fetching the sample.
    pub fn gate<T: Split>(&self, n: usize, frame_elems: usize, capacity: u64) -> Option<Plan> {
        let raw_bytes = (n * T::DTYPE.size_bytes()) as u64;
        let mut plan = Plan {
            raw_bytes,
            raw_s: self.transport.raw_time_s(raw_bytes),
            predictions: None,
            choice: None,
            reason: Reason::TooSmall,
        };
        if n == 0 || raw_bytes < self.policy.min_batch_bytes as u64 {
            return Some(plan);
        }
        if self.candidates().next().is_none() || !T::DTYPE.coded() {
            plan.reason = Reason::NoCodecAvailable;
            return Some(plan);
        }
        let floor = lower_bound_bytes::<T>(n, frame_elems);
        let frame_bytes = (frame_elems * T::DTYPE.size_bytes()) as u64;
        if self
            .candidates()
            .all(|c| floor > self.max_bytes(c, raw_bytes, frame_bytes, capacity))
        {
            plan.reason = Reason::CannotWin;
            return Some(plan);
        }
        None
    }

    /// Steps 1-4 for `data` (elements of `T`), to be sent in frames of `frame_elems` elements
    /// (`0`: one frame) into at most `capacity` bytes.
    pub fn plan<T: Split>(&self, data: &[T::Bits], frame_elems: usize, capacity: u64) -> Plan {
        let n = data.len();
        match self.gate::<T>(n, frame_elems, capacity) {
            Some(gated) => gated,
            None => self.plan_sampled::<T>(&Sample::of::<T>(data), n, frame_elems, capacity),
        }
    }

    /// Steps 1 and 3-4 for a batch of `n` elements of `T` whose sample (step 2) is `sample`:
    /// [`Arbiter::plan`] for a caller that took the sample itself, e.g. from a copy of the
    /// sampled ranges alone ([`Sample::of_compact`]) or from an earlier batch of the same shape.
    pub fn plan_sampled<T: Split>(&self, sample: &Sample, n: usize, frame_elems: usize, capacity: u64) -> Plan {
        if let Some(gated) = self.gate::<T>(n, frame_elems, capacity) {
            return gated;
        }
        let raw_bytes = (n * T::DTYPE.size_bytes()) as u64;
        let mut plan = Plan {
            raw_bytes,
            raw_s: self.transport.raw_time_s(raw_bytes),
            predictions: None,
            choice: None,
            reason: Reason::Predicted,
        };
        let predictions = predict::<T>(sample, n, frame_elems);
        plan.predictions = Some(predictions);
        let frame_bytes = (frame_elems * T::DTYPE.size_bytes()) as u64;
        plan.choice = self
            .candidates()
            .filter_map(|codec| {
                let predicted_bytes = predictions.get(codec);
                let max_bytes = self.max_bytes(codec, raw_bytes, frame_bytes, capacity);
                (predicted_bytes <= max_bytes).then(|| Choice {
                    codec,
                    predicted_bytes,
                    predicted_s: self.transport.time_s(codec, raw_bytes, predicted_bytes, frame_bytes),
                    max_bytes,
                })
            })
            .fold(None, |best: Option<Choice>, c| match best {
                Some(b) if b.predicted_s <= c.predicted_s => Some(b),
                _ => Some(c),
            });
        plan.reason = if plan.choice.is_some() {
            Reason::Predicted
        } else {
            Reason::NoGain
        };
        plan
    }

    /// All five steps: [`Arbiter::plan`], then `encode(codec)` materializes the chosen codec and
    /// returns its realized bytes (`None` if it failed); the codec is kept only if
    /// [`Choice::accept_realized`] passes. `encode` is not called when the plan is RAW.
    pub fn decide<T: Split>(
        &self,
        data: &[T::Bits],
        frame_elems: usize,
        capacity: u64,
        encode: impl FnOnce(CodecId) -> Option<u64>,
    ) -> Decision {
        let plan = self.plan::<T>(data, frame_elems, capacity);
        let mut d = Decision {
            codec: CodecId::Raw,
            reason: plan.reason,
            plan,
            realized: None,
        };
        if let Some(choice) = plan.choice {
            d.realized = encode(choice.codec);
            d.reason = match d.realized {
                None => Reason::EncodeFailed,
                Some(realized) if !choice.accept_realized(realized) => Reason::RealizedTooLarge { realized },
                Some(_) => {
                    d.codec = choice.codec;
                    Reason::Accepted
                }
            };
        }
        d
    }
}
