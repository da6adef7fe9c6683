//! What compression would do to a tensor, before anything is sent: the order-0 entropy bound of
//! its exponent symbols, the arbitration's predicted bytes per codec and its pick for NVLink and
//! for the network ([`analyze`]), and each codec's realized ratio with the round trip checked
//! bit for bit ([`round_trip`]). `zipcoll inspect` and the Python module's `inspect` print and
//! return these.
//!
//! ```
//! use zipcoll_host::codec::analysis::{analyze, round_trip};
//! use zipcoll_host::{testdata, Backend, CodecId, DType};
//! let data = testdata::elements(DType::Bf16, 4096, 1);
//! let a = analyze(DType::Bf16, &data, 1024)?;
//! assert!(a.entropy_ratio() > 0.0 && a.entropy_ratio() <= 1.0);
//! let r = round_trip(Backend::Sim, DType::Bf16, CodecId::ExpAns, &data, 1024, |_| {})?;
//! assert_eq!(r.differs, None);
//! # Ok::<(), zipcoll_host::Error>(())
//! ```

use super::{check_frame_elems, decode, elements as whole_elements, encode};
use crate::backend::Backend;
use crate::dispatch::{dispatch_dtype, words_from_le};
use crate::error::Result;
use zipcoll_device::arbitrate::sample::{split_word, words_of};
use zipcoll_device::arbitrate::{
    entropy_bits_q16, predict, Arbiter, Plan, Predictions, Sample, TransportModel, NET, NVLINK, Q16_ONE,
};
use zipcoll_device::codec::CodecId;
use zipcoll_device::dtype::{DType, Elem, Split};
use zipcoll_device::frame::HEADER_BYTES;

/// Data encoded per call of the codec in [`round_trip`] (rounded to whole frames).
pub const BATCH_BYTES: usize = 8 << 20;

/// What the arbitration and the entropy bound say about one tensor.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Analysis {
    /// The elements' type.
    pub dtype: DType,
    /// Elements in the tensor.
    pub elems: usize,
    /// Elements per frame the predictions assume.
    pub frame_elems: usize,
    /// Bits of one split word (the unit the exponent symbols are taken from).
    pub word_bits: u32,
    /// Bits of a word's raw part (stored as it is by every split codec).
    pub raw_bits: u32,
    /// Order-0 entropy of the exponent symbols, bits per word.
    pub entropy_bits: f64,
    /// The arbitration's predicted bytes per codec, from its sample.
    pub predictions: Predictions,
    /// The arbitration's plans on NVLink and on the network, in that order.
    pub plans: [(TransportModel, Plan); 2],
}

impl Analysis {
    /// Bytes of the tensor's data.
    pub fn raw_bytes(&self) -> u64 {
        (self.elems * self.dtype.size_bytes()) as u64
    }

    /// The order-0 bound as a ratio: `(raw_bits + entropy_bits) / word_bits`, the best any split
    /// codec can do per element.
    pub fn entropy_ratio(&self) -> f64 {
        (f64::from(self.raw_bits) + self.entropy_bits) / f64::from(self.word_bits)
    }

    /// The predicted bytes of the frames of `codec` (RAW: the data and a header per frame).
    pub fn predicted_bytes(&self, codec: CodecId) -> u64 {
        match codec {
            CodecId::Raw => self.raw_bytes() + (self.elems.div_ceil(self.frame_elems) * HEADER_BYTES) as u64,
            c => self.predictions.get(c),
        }
    }

    /// The codec each plan sends with (`Raw` where it picked none), without repeats.
    pub fn picks(&self) -> Vec<CodecId> {
        let mut picks: Vec<CodecId> = self.plans.iter().map(|(_, p)| plan_codec(p)).collect();
        picks.dedup();
        picks
    }

    /// The codec the network's plan sends with (`Raw` where it picked none): what compression
    /// is for.
    pub fn net_pick(&self) -> CodecId {
        plan_codec(&self.plans[1].1)
    }
}

/// The codec `plan` sends with (`Raw` where it picked none).
pub fn plan_codec(plan: &Plan) -> CodecId {
    plan.choice.map_or(CodecId::Raw, |c| c.codec)
}

/// `a / b` (1 when `b` is 0): a ratio of bytes.
pub fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        1.0
    } else {
        a as f64 / b as f64
    }
}

/// The elements of `data` (little-endian, whole elements) as `T`'s storage words.
pub fn elements<T: Elem>(data: &[u8]) -> Vec<T::Bits> {
    words_from_le(data)
}

/// [`Analysis`] of `data` (little-endian `dtype` elements) cut into frames of `frame_elems`.
///
/// Errors: [`crate::Error::InvalidArgument`] for data that is not whole elements or a
/// `frame_elems` outside `1..=MAX_FRAME_DATA_BYTES / size`.
pub fn analyze(dtype: DType, data: &[u8], frame_elems: usize) -> Result<Analysis> {
    whole_elements(dtype, data)?;
    check_frame_elems(dtype, frame_elems)?;
    Ok(dispatch_dtype!(dtype, |T| analyze_as::<T>(data, frame_elems)))
}

/// [`analyze`] for the marker type `T`.
fn analyze_as<T: Split>(data: &[u8], frame_elems: usize) -> Analysis {
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
        dtype: T::DTYPE,
        elems: elems.len(),
        frame_elems,
        word_bits: 8 * (T::DTYPE.size_bytes() * T::ELEMS_PER_WORD) as u32,
        raw_bits: T::RAW_BITS,
        entropy_bits: h / words.max(1) as f64,
        predictions: predict::<T>(&Sample::of::<T>(&elems), elems.len(), frame_elems),
        plans: [plan(NVLINK), plan(NET)],
    }
}

/// How one codec's round trip went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RoundTrip {
    /// Bytes of all frames, headers included.
    pub encoded_bytes: u64,
    /// The first byte where decode(encode(data)) differs from the data, if any.
    pub differs: Option<usize>,
}

/// Encodes `data` with `codec` on `backend` in batches of whole frames (about
/// [`BATCH_BYTES`]), decodes every batch and compares it with the data; calls `progress` with
/// the bytes done after each batch.
///
/// Errors: those of [`encode`] and [`decode`].
pub fn round_trip(
    backend: Backend,
    dtype: DType,
    codec: CodecId,
    data: &[u8],
    frame_elems: usize,
    mut progress: impl FnMut(usize),
) -> Result<RoundTrip> {
    check_frame_elems(dtype, frame_elems)?;
    let frame_bytes = frame_elems * dtype.size_bytes();
    let batch = (BATCH_BYTES / frame_bytes).max(1) * frame_bytes;
    let mut encoded_bytes = 0u64;
    let mut differs = None;
    let mut done = 0usize;
    for chunk in data.chunks(batch) {
        let enc = encode(backend, dtype, Some(codec), chunk, frame_elems)?;
        encoded_bytes += enc.encoded_bytes();
        let back = decode(backend, &enc)?;
        if differs.is_none() && back != chunk {
            let at = back
                .iter()
                .zip(chunk)
                .position(|(a, b)| a != b)
                .unwrap_or(back.len().min(chunk.len()));
            differs = Some(done + at);
        }
        done += chunk.len();
        progress(done);
    }
    Ok(RoundTrip { encoded_bytes, differs })
}
