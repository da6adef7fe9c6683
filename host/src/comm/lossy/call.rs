//! One lossy call, in the order of the module docs: statistics, their exchange, the host's
//! decision, quantization, the collective on the levels, and the levels scaled back.

use super::kernels::{self, Dequantizing, Levels, Quantizing};
use super::{Bound, Lossy};
use crate::comm::{Communicator, Compression, Data, DeviceBuffer, Options, Prepared, Reduction};
use crate::error::{Error, Result};
use zipcoll_device::dtype::DType;
use zipcoll_device::lossy::error_bound::relative_to_range;
use zipcoll_device::lossy::qsgd;
use zipcoll_device::reduce::ReduceOp;
use zipcoll_primitives::collectives::Coll;
use zipcoll_primitives::kernels::lossy::{REJECTED_WORDS, STAT_WORDS};

/// Elements per statistics record under the error bound (QSGD: its bucket).
const BOUND_BUCKET: usize = 4096;

/// Bytes of one statistics record: [`STAT_WORDS`] `f32`s.
const RECORD_BYTES: usize = STAT_WORDS * 4;

/// Whether `coll` reduces (one agreed scale) rather than moves (each source rank's scales).
fn reduces(coll: Coll) -> bool {
    matches!(
        coll,
        Coll::RingAllReduce | Coll::TwoShotAllReduce | Coll::Reduce | Coll::ReduceScatter
    )
}

/// The largest level: levels are `i8`.
const MAX_LEVEL: u64 = i8::MAX as u64;

/// The scales of one source of data (every rank's, agreed, for a reduction).
#[derive(Clone, Copy, Debug)]
struct Scale {
    /// The error bound's `eb` (QSGD: unused, 0).
    eb: f32,
    /// The largest level in magnitude an element may get.
    qmax: u64,
}

/// Why a source travels exactly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Exact {
    /// A NaN or an infinity.
    NotFinite,
    /// The bound is too fine for the range (or no positive bound comes from it), or a QSGD
    /// bucket's norm is past `f32` or too small for its levels (`levels / norm` overflows).
    TooFine,
}

/// The scale of a source from its statistics `records` under `lossy` (a relative bound or
/// QSGD: an absolute bound takes no statistics), or why the source must travel exactly.
fn scale_of(lossy: Lossy, records: &[f32]) -> std::result::Result<Scale, Exact> {
    let (mut hi, mut neg_lo, mut bad) = (f32::NEG_INFINITY, f32::NEG_INFINITY, false);
    for r in records.chunks_exact(STAT_WORDS) {
        hi = hi.max(r[0]);
        neg_lo = neg_lo.max(r[1]);
        bad |= r[2] != 0.0;
    }
    if bad {
        return Err(Exact::NotFinite);
    }
    let biggest = hi.max(neg_lo).max(0.0);
    let eb = match lossy {
        // all zeros (or no element): any bound serves
        Lossy::ErrorBound(Bound::Rel(rel)) => relative_to_range(rel, -neg_lo, hi)
            .or((biggest == 0.0).then_some(1.0))
            .ok_or(Exact::TooFine)?,
        _ => {
            // QSGD: every bucket's levels must come from its norm (a nonzero scale), or it is 0
            let levels = lossy.levels();
            let scales = |r: &[f32]| r[3] == 0.0 || qsgd::scale(r[3], levels) != 0.0;
            return match records.chunks_exact(STAT_WORDS).all(scales) {
                true => Ok(Scale {
                    eb: 0.0,
                    qmax: levels as u64,
                }),
                false => Err(Exact::TooFine),
            };
        }
    };
    let qmax = (biggest as f64 / (2.0 * eb as f64)).floor() + 1.0;
    match qmax <= MAX_LEVEL as f64 {
        true => Ok(Scale { eb, qmax: qmax as u64 }),
        false => Err(Exact::TooFine),
    }
}

/// The options of the calls a lossy call makes on its statistics and rejection words.
fn exact() -> Options {
    Options {
        compression: Some(Compression::Off),
        lossy: Some(Lossy::Exact),
        ..Options::default()
    }
}

/// SplitMix64's finalizer: the seed of one rank's draws in one call.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Why a call travels exactly, from [`REJECTED_WORDS`] little-endian words of rejections
/// (every rank's, combined by `max`); `None` where every element had a level.
fn rejection(words: &[u8]) -> Option<Exact> {
    let word = |w: usize| words[4 * w..4 * w + 4] != [0; 4];
    match (word(0), word(1)) {
        (_, true) => Some(Exact::NotFinite),
        (true, false) => Some(Exact::TooFine),
        (false, false) => None,
    }
}

impl Communicator {
    /// The policy a call runs with: `Some` (not exact) where it quantizes. A call's own policy
    /// that it cannot serve is an [`Error::InvalidArgument`]; the communicator's leaves such a
    /// call exact.
    pub(in crate::comm) fn lossy_for(
        &self,
        opts: &Options,
        coll: Coll,
        dtype: DType,
        op: Reduction,
    ) -> Result<Option<Lossy>> {
        let lossy = opts.lossy.unwrap_or(self.config.lossy);
        if lossy == Lossy::Exact {
            return Ok(None);
        }
        lossy.validate()?;
        let qsgd = matches!(lossy, Lossy::Qsgd { .. });
        let why = if !matches!(dtype, DType::F32 | DType::Bf16 | DType::F16) {
            Some(format!("it quantizes f32, bf16 and f16, not {dtype:?}"))
        } else if reduces(coll)
            && !matches!(op, Reduction::Op(ReduceOp::Sum | ReduceOp::Avg))
            && (qsgd || !matches!(op, Reduction::Op(ReduceOp::Max | ReduceOp::Min)))
        {
            Some(format!(
                "{op:?} is not among its reductions (sum and average{})",
                if qsgd { "" } else { ", max, min" }
            ))
        } else if qsgd && reduces(coll) && lossy.levels() as u64 * self.nranks as u64 > MAX_LEVEL {
            Some(format!(
                "a sum of {} ranks' levels of up to {} exceeds the 8-bit levels' {MAX_LEVEL}: fewer bits",
                self.nranks,
                lossy.levels()
            ))
        } else if self.links.capturing()? {
            Some("it reads its agreed scales on the host, which a call captured into a CUDA graph cannot".into())
        } else {
            None
        };
        match (why, opts.lossy.is_some()) {
            (None, _) => Ok(Some(lossy)),
            (Some(_), false) => Ok(None),
            (Some(why), true) => Err(Error::InvalidArgument(format!(
                "lossy policy {lossy} on this call: {why}"
            ))),
        }
    }

    /// Runs the checked collective `c` under `lossy` (see the module docs); `op` is the call's.
    pub(in crate::comm) fn lossy_collective(
        &self,
        c: Prepared,
        lossy: Lossy,
        op: ReduceOp,
        opts: Options,
    ) -> Result<()> {
        let (k, me) = (self.nranks, self.rank);
        let (coll, count, dtype) = (c.coll, c.count, c.dtype);
        if count == 0 {
            return self.submit(c, opts);
        }
        let reducing = reduces(coll);
        // a broadcast's input is the root's alone
        let has_input = !c.src.is_null() && (coll != Coll::Broadcast || me == c.root);
        let has_output = !c.dst.is_null() && (coll != Coll::Reduce || me == c.root);
        let n_out = match coll {
            Coll::AllGather | Coll::AllToAll => k * count,
            _ => count,
        };
        let bucket = match lossy {
            Lossy::Qsgd { bucket, .. } => bucket as usize,
            _ => BOUND_BUCKET,
        };
        let records = c.n.div_ceil(bucket);
        // the levels of a sum of `terms` ranks add up
        let terms = match reducing && matches!(op, ReduceOp::Sum | ReduceOp::Avg) {
            true => k as u64,
            false => 1,
        };
        if let Some(s) = opts.stream {
            let _order = self.links.calls();
            self.links.join_caller(s, false)?;
        }

        // 1.-2. every source's scale, agreed: an absolute bound's is the policy's, with levels
        // up to what a sum of `terms` leaves (whether every element has one is agreed after
        // step 3); the others' come from the statistics
        let (stats, scales) = match lossy {
            Lossy::ErrorBound(Bound::Abs(eb)) => {
                let sources = if reducing { 1 } else { k };
                let scale = Scale {
                    eb,
                    qmax: MAX_LEVEL / terms,
                };
                (None, vec![scale; sources])
            }
            _ => match self.agree_on_statistics(&c, lossy, (has_input, reducing, terms), (bucket, records))? {
                Ok((stats, scales)) => (Some(stats), scales),
                Err(why) => {
                    self.lossy.travels_exactly(why);
                    return self.submit(c, opts);
                }
            },
        };
        let stats_at = |offset: usize| match &stats {
            Some(stats) => stats.ptr().wrapping_add(offset),
            None => std::ptr::null_mut(),
        };
        // QSGD's draws differ per call: the call's number among the quantized ones
        let call = match stats {
            Some(_) => self.lossy.quantized(),
            None => 0,
        };

        // 3. quantize this rank's input with its source's scale
        let own = if reducing { scales[0] } else { scales[me] };
        let own_records = if reducing { 0 } else { me * records * RECORD_BYTES };
        let seed = match lossy {
            Lossy::Qsgd { seed, .. } => mix(seed ^ mix(((me as u64) << 40) ^ call)),
            _ => 0,
        };
        let how = Levels {
            levels: lossy.levels(),
            bucket,
            seed,
        };
        let ebs: Vec<u8> = scales.iter().flat_map(|s| s.eb.to_le_bytes()).collect();
        let mut ebs_buf = self.alloc(ebs.len())?;
        ebs_buf.copy_from_host(&ebs)?;
        let (qin, mut rejected) = (self.alloc(c.n)?, self.alloc(4 * REJECTED_WORDS)?);
        if has_input {
            let q = Quantizing {
                input: c.src,
                n: c.n,
                stats: stats_at(own_records),
                how,
                eb: own.eb,
                qmax: own.qmax as u32,
                out: qin.ptr(),
                rejected: rejected.ptr(),
            };
            // SAFETY: `c.src` holds `c.n` elements; `qin` room for as many levels, `rejected`
            // its words, `stats` (QSGD) this source's records at `own_records`.
            unsafe { kernels::quantize(self.links.engine(), dtype, q) }?;
        }
        if stats.is_none() {
            // the ranks agree whether any element had no level, and why
            self.all_reduce(
                Data::InPlace(&mut rejected),
                REJECTED_WORDS,
                DType::U32,
                ReduceOp::Max,
                exact(),
            )?;
            self.synchronize()?;
            if let Some(why) = rejection(&rejected.to_host()?) {
                self.lossy.travels_exactly(why);
                return self.submit(c, opts);
            }
            self.lossy.quantized();
        }

        // 4. the collective on the levels, coded as the call's compression says
        let int_op = match op {
            ReduceOp::Max | ReduceOp::Min if reducing => op,
            _ => ReduceOp::Sum,
        };
        let mut qout = self.alloc(if has_output { n_out } else { 0 })?;
        let levels = match (has_input, has_output) {
            (true, true) => Data::OutOfPlace {
                src: &qin,
                dst: &mut qout,
            },
            (true, false) => Data::Input(&qin),
            _ => Data::Output(&mut qout),
        };
        let inner = self.prepare(coll, levels, count, DType::I8, int_op.into(), c.root)?;
        self.submit(
            inner,
            Options {
                lossy: Some(Lossy::Exact),
                stream: None,
                ..opts
            },
        )?;

        // 5. the levels scaled back into the output
        if has_output {
            let (block, first, source) = match coll {
                Coll::AllGather => (count, 0, 0),
                Coll::AllToAll => (count, me * count, 0),
                Coll::Broadcast => (count, 0, c.root),
                Coll::ReduceScatter => (n_out, me * count, 0),
                _ => (n_out, 0, 0),
            };
            let divisor = if op == ReduceOp::Avg && reducing { k as u32 } else { 1 };
            let d = Dequantizing {
                input: qout.ptr(),
                n: n_out,
                block,
                first,
                stats: stats_at(source * records * RECORD_BYTES),
                records,
                how,
                ebs: ebs_buf.ptr().wrapping_add(source * 4),
                divisor,
                out: c.dst,
            };
            // SAFETY: `qout` holds `n_out` levels, `c.dst` room for `n_out` elements (checked by
            // `prepare`), `ebs_buf` (the error bound) or `stats` (QSGD) every source's bound or
            // records from `source` on.
            unsafe { kernels::dequantize(self.links.engine(), dtype, d) }?;
        }
        if let Some(s) = opts.stream {
            let _order = self.links.calls();
            self.links.join_caller(s, true)?;
        }
        self.synchronize()?;
        match stats {
            Some(_) => self.check_levels(&rejected, coll),
            None => Ok(()),
        }
    }

    /// Steps 1 and 2 under a relative bound or QSGD: the statistics of this rank's input (in
    /// `records` buckets of `bucket` elements), their exchange (a max-all_reduce for a
    /// reduction, an all_gather for the moves), and from them each source's scale, or why the
    /// call travels exactly, alike on every rank. `terms` is the ranks a sum adds (else 1).
    fn agree_on_statistics(
        &self,
        c: &Prepared,
        lossy: Lossy,
        (has_input, reducing, terms): (bool, bool, u64),
        (bucket, records): (usize, usize),
    ) -> Result<std::result::Result<(DeviceBuffer, Vec<Scale>), Exact>> {
        let (k, coll, dtype) = (self.nranks, c.coll, c.dtype);
        let mut mine = self.alloc(records * RECORD_BYTES)?;
        if has_input {
            // SAFETY: `c.src` holds `c.n` elements (checked by `prepare`), `mine` the records.
            unsafe { kernels::stats(self.links.engine(), dtype, c.src, c.n, bucket, mine.ptr()) }?;
        }
        let stats = if reducing {
            self.all_reduce(
                Data::InPlace(&mut mine),
                records * STAT_WORDS,
                DType::F32,
                ReduceOp::Max,
                exact(),
            )?;
            mine
        } else {
            let mut all = self.alloc(k * records * RECORD_BYTES)?;
            self.all_gather(
                Data::OutOfPlace {
                    src: &mine,
                    dst: &mut all,
                },
                records * STAT_WORDS,
                DType::F32,
                exact(),
            )?;
            all
        };
        self.synchronize()?;
        let host: Vec<f32> = stats
            .to_host()?
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes")))
            .collect();
        let used = |s: usize| reducing || coll != Coll::Broadcast || s == c.root;
        let scales: std::result::Result<Vec<Scale>, Exact> = host
            .chunks(records * STAT_WORDS)
            .enumerate()
            .map(|(s, r)| match used(s) {
                true => scale_of(lossy, r).and_then(|sc| match terms * sc.qmax <= MAX_LEVEL {
                    true => Ok(sc),
                    false => Err(Exact::TooFine),
                }),
                false => Ok(Scale { eb: 0.0, qmax: 0 }),
            })
            .collect();
        Ok(scales.map(|scales| (stats, scales)))
    }

    /// The error of a quantization that found an element without a level: its input changed
    /// between the statistics and the quantization (a race in the caller). The communicator
    /// is aborted (its peers may have combined the levels of this rank's changed input).
    fn check_levels(&self, rejected: &DeviceBuffer, coll: Coll) -> Result<()> {
        if rejected.to_host()?.iter().all(|&b| b == 0) {
            return Ok(());
        }
        let why = format!(
            "lossy {} on rank {}: an input element changed while the call read it (a NaN, an infinity or a \
             value beyond the agreed range appeared after the statistics)",
            super::super::coll_name(coll),
            self.rank
        );
        self.abort();
        self.fail(why.clone());
        Err(Error::InputChanged(why))
    }
}
