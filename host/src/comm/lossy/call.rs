//! One lossy call, in the order of the module docs: statistics, their exchange, the host's
//! decision, quantization, the escaping buckets' exact collective, the collective on the
//! levels, the levels scaled back and the escapes put in their places.

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
/// QSGD: an absolute bound takes no statistics), or why the source must travel exactly. The
/// records of buckets with a NaN or an infinity are left out: those buckets escape.
fn scale_of(lossy: Lossy, records: &[f32]) -> std::result::Result<Scale, Exact> {
    let finite = || records.chunks_exact(STAT_WORDS).filter(|r| r[2] == 0.0);
    let (mut hi, mut neg_lo) = (f32::NEG_INFINITY, f32::NEG_INFINITY);
    for r in finite() {
        hi = hi.max(r[0]);
        neg_lo = neg_lo.max(r[1]);
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
            return match finite().all(scales) {
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

/// The most buckets of one source that escape (travel exactly beside the levels) in a call
/// that quantizes; a source with more, or whose escaping buckets hold more than half its
/// elements, travels exactly as a whole (each escape is a copy on either side, and past half
/// the elements the levels and escapes of a 16-bit dtype outweigh its data).
const MAX_ESCAPES: usize = 64;

/// The buckets of each source that escape: they hold an element without a level (a NaN or an
/// infinity; under an absolute bound also a value beyond the levels), and travel exactly in a
/// collective of their own beside the levels' ([`Communicator::send_escapes`]).
#[derive(Debug)]
struct Escapes {
    /// Per source (a reduction has one), the escaping buckets in increasing order.
    buckets: Vec<Vec<usize>>,
    /// Elements per bucket.
    bucket: usize,
    /// Elements of a source's input.
    n: usize,
}

impl Escapes {
    /// Bucket `b`'s elements of a source: `start..end`.
    fn range(&self, b: usize) -> std::ops::Range<usize> {
        b * self.bucket..self.n.min((b + 1) * self.bucket)
    }

    /// Elements of `buckets` (a source's).
    fn elements_of(&self, buckets: &[usize]) -> usize {
        buckets.iter().map(|&b| self.range(b).len()).sum()
    }

    /// Elements of the largest source's escaping buckets: what each rank packs.
    fn packed(&self) -> usize {
        self.buckets.iter().map(|b| self.elements_of(b)).max().unwrap_or(0)
    }

    /// Whether `buckets` are too many to escape (see [`MAX_ESCAPES`]): the call travels
    /// exactly instead.
    fn too_many(&self, buckets: &[usize]) -> bool {
        buckets.len() > MAX_ESCAPES || 2 * self.elements_of(buckets) > self.n
    }

    /// Escaping buckets of every source.
    fn count(&self) -> usize {
        self.buckets.iter().map(Vec::len).sum()
    }

    /// Source `s`'s escaping buckets as (their first element's place in the source's packed
    /// elements, their elements of the source's input), in the order they are packed.
    fn packing(&self, s: usize) -> impl Iterator<Item = (usize, std::ops::Range<usize>)> + '_ {
        self.buckets[s].iter().scan(0, |at, &b| {
            let r = self.range(b);
            let place = *at;
            *at += r.len();
            Some((place, r))
        })
    }
}

/// What the ranks agreed from their statistics (steps 1 and 2): the records (a reduction's
/// combined, the moves' every source's), each source's scale and escaping buckets.
struct Agreed {
    stats: DeviceBuffer,
    scales: Vec<Scale>,
    escapes: Escapes,
}

/// The escaping buckets' exact elements combined across the ranks ([`Communicator::send_escapes`]),
/// alive until the call's synchronize.
struct Escaped {
    /// A reduction's: the packed buckets, all-reduced; the moves': every source's, gathered,
    /// `per_source` elements each.
    combined: DeviceBuffer,
    /// Elements each source's packed buckets take ([`Escapes::packed`]).
    per_source: usize,
    /// The moves' packed buckets of this rank, which the gather reads.
    _packed: Option<DeviceBuffer>,
}

/// The little-endian `u32` words of `bytes` (a device buffer read on the host); an `f32`
/// word is `f32::from_bits` of one.
fn le_words(bytes: &[u8]) -> Vec<u32> {
    (bytes.chunks_exact(4))
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

/// Whether the rejection words `words` (a source's, [`REJECTED_WORDS`] per bucket) reject an
/// element of a bucket outside `escaping` (in increasing order).
fn rejected_outside(words: &[u32], escaping: &[usize]) -> bool {
    let (rejected, _) = rejected_buckets(words);
    rejected.iter().any(|b| escaping.binary_search(b).is_err())
}

/// The buckets whose records (a source's) flag a NaN or an infinity.
fn flagged_records(records: &[f32]) -> Vec<usize> {
    (records.chunks_exact(STAT_WORDS).enumerate())
        .filter(|(_, r)| r[2] != 0.0)
        .map(|(b, _)| b)
        .collect()
}

/// The buckets whose rejection words (a source's, [`REJECTED_WORDS`] `u32`s per bucket) are
/// set, and whether one of them holds a NaN or an infinity.
fn rejected_buckets(words: &[u32]) -> (Vec<usize>, bool) {
    let buckets = (words.chunks_exact(REJECTED_WORDS).enumerate())
        .filter(|(_, w)| w.iter().any(|&x| x != 0))
        .map(|(b, _)| b)
        .collect();
    let not_finite = words.chunks_exact(REJECTED_WORDS).any(|w| w[1] != 0);
    (buckets, not_finite)
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
        // up to what a sum of `terms` leaves (which buckets escape is agreed after step 3);
        // the others' come from the statistics, and so do their escaping buckets
        let sources = if reducing { 1 } else { k };
        let (stats, scales, escapes) = match lossy {
            Lossy::ErrorBound(Bound::Abs(eb)) => {
                let scale = Scale {
                    eb,
                    qmax: MAX_LEVEL / terms,
                };
                (None, vec![scale; sources], None)
            }
            _ => match self.agree_on_statistics(&c, lossy, (has_input, reducing, terms), (bucket, records))? {
                Ok(Agreed { stats, scales, escapes }) => (Some(stats), scales, Some(escapes)),
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
        let (qin, mut rejected) = (self.alloc(c.n)?, self.alloc(4 * REJECTED_WORDS * records)?);
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
        let escapes = match escapes {
            Some(escapes) => escapes,
            None => {
                // the ranks agree which buckets hold an element without a level, and why
                let words = self.agree_on_rejections(&mut rejected, REJECTED_WORDS * records, reducing)?;
                let mut escapes = Escapes {
                    buckets: Vec::with_capacity(sources),
                    bucket,
                    n: c.n,
                };
                for words in words.chunks_exact(REJECTED_WORDS * records) {
                    let (buckets, not_finite) = rejected_buckets(words);
                    if escapes.too_many(&buckets) {
                        self.lossy.travels_exactly(match not_finite {
                            true => Exact::NotFinite,
                            false => Exact::TooFine,
                        });
                        return self.submit(c, opts);
                    }
                    escapes.buckets.push(buckets);
                }
                self.lossy.quantized();
                escapes
            }
        };
        self.lossy.escaped(escapes.count());
        // the escaping buckets' exact collective (their places in the output are written after
        // the levels', step 6)
        let escaped = self.send_escapes(&c, &escapes, op, (has_input, reducing))?;

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
        // 6. the escaping buckets' exact elements over their levels' values
        if let (Some(escaped), true) = (&escaped, has_output) {
            self.place_escapes(&c, &escapes, escaped)?;
        }
        if let Some(s) = opts.stream {
            let _order = self.links.calls();
            self.links.join_caller(s, true)?;
        }
        self.synchronize()?;
        drop(escaped);
        match stats {
            Some(_) => self.check_levels(&rejected, &escapes.buckets[if reducing { 0 } else { me }], coll),
            None => Ok(()),
        }
    }

    /// Steps 1 and 2 under a relative bound or QSGD: the statistics of this rank's input (in
    /// `records` buckets of `bucket` elements), their exchange (a max-all_reduce for a
    /// reduction, an all_gather for the moves), and from them each source's scale and escaping
    /// buckets, or why the call travels exactly, alike on every rank. `terms` is the ranks a
    /// sum adds (else 1).
    fn agree_on_statistics(
        &self,
        c: &Prepared,
        lossy: Lossy,
        (has_input, reducing, terms): (bool, bool, u64),
        (bucket, records): (usize, usize),
    ) -> Result<std::result::Result<Agreed, Exact>> {
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
        let host: Vec<f32> = le_words(&stats.to_host()?).into_iter().map(f32::from_bits).collect();
        let used = |s: usize| reducing || coll != Coll::Broadcast || s == c.root;
        let mut escapes = Escapes {
            buckets: Vec::new(),
            bucket,
            n: c.n,
        };
        let mut scales = Vec::new();
        for (s, r) in host.chunks(records * STAT_WORDS).enumerate() {
            if !used(s) {
                scales.push(Scale { eb: 0.0, qmax: 0 });
                escapes.buckets.push(Vec::new());
                continue;
            }
            let flagged = flagged_records(r);
            if escapes.too_many(&flagged) {
                return Ok(Err(Exact::NotFinite));
            }
            let scale = match scale_of(lossy, r) {
                Ok(sc) if terms * sc.qmax <= MAX_LEVEL => sc,
                _ => return Ok(Err(Exact::TooFine)),
            };
            scales.push(scale);
            escapes.buckets.push(flagged);
        }
        Ok(Ok(Agreed { stats, scales, escapes }))
    }

    /// Under an absolute bound, after step 3: the ranks' rejection words (`words` `u32`s per
    /// rank at `rejected`), a reduction's max-combined, the moves' gathered (each source's in
    /// turn), read on the host.
    fn agree_on_rejections(&self, rejected: &mut DeviceBuffer, words: usize, reducing: bool) -> Result<Vec<u32>> {
        let all = match reducing {
            true => {
                self.all_reduce(Data::InPlace(rejected), words, DType::U32, ReduceOp::Max, exact())?;
                None
            }
            false => {
                let mut all = self.alloc(self.nranks * 4 * words)?;
                self.all_gather(
                    Data::OutOfPlace {
                        src: rejected,
                        dst: &mut all,
                    },
                    words,
                    DType::U32,
                    exact(),
                )?;
                Some(all)
            }
        };
        self.synchronize()?;
        let bytes = match &all {
            Some(all) => all.to_host()?,
            None => rejected.to_host()?,
        };
        Ok(le_words(&bytes))
    }

    /// The escaping buckets' own exact collective (before the levels'): each rank packs its
    /// input's escaping buckets into a buffer of as many elements as the largest source's (a
    /// reduction's one source: the same buckets on every rank), then a reduction all-reduces
    /// the buffers with the call's operator and the moves all-gather them (each source's
    /// escapes reach every rank). `None` where nothing escapes.
    fn send_escapes(
        &self,
        c: &Prepared,
        escapes: &Escapes,
        op: ReduceOp,
        (has_input, reducing): (bool, bool),
    ) -> Result<Option<Escaped>> {
        let (m, size) = (escapes.packed(), c.dtype.size_bytes());
        if m == 0 {
            return Ok(None);
        }
        let mut packed = self.alloc(m * size)?;
        if has_input {
            for (at, r) in escapes.packing(if reducing { 0 } else { self.rank }) {
                // SAFETY: an escaping bucket of the checked input `c.src` (`c.n` elements), and
                // its place in `packed`, which has room for every escaping element of this
                // source; both stay allocated until the call's synchronize.
                unsafe {
                    self.links.copy_within(
                        packed.ptr().wrapping_add(at * size),
                        c.src.wrapping_add(r.start * size),
                        r.len() * size,
                    )
                }?;
            }
        }
        if reducing {
            self.all_reduce(Data::InPlace(&mut packed), m, c.dtype, op, exact())?;
            return Ok(Some(Escaped {
                combined: packed,
                per_source: m,
                _packed: None,
            }));
        }
        let mut all = self.alloc(self.nranks * m * size)?;
        self.all_gather(
            Data::OutOfPlace {
                src: &packed,
                dst: &mut all,
            },
            m,
            c.dtype,
            exact(),
        )?;
        Ok(Some(Escaped {
            combined: all,
            per_source: m,
            _packed: Some(packed),
        }))
    }

    /// Step 6: each escaping bucket's exact elements (from [`Self::send_escapes`]) over the
    /// values the levels gave them, where this rank's output holds them: element `i` of source
    /// `s`'s input lands at `base(s) + i - first` for `i` in `first..first + count` (the part
    /// of a source's input this rank's output has).
    fn place_escapes(&self, c: &Prepared, escapes: &Escapes, escaped: &Escaped) -> Result<()> {
        let (me, count, size, m) = (self.rank, c.count, c.dtype.size_bytes(), escaped.per_source);
        let (first, base): (usize, &dyn Fn(usize) -> usize) = match c.coll {
            Coll::ReduceScatter => (me * count, &|_| 0),
            Coll::AllGather => (0, &|s| s * count),
            Coll::AllToAll => (me * count, &|s| s * count),
            _ => (0, &|_| 0),
        };
        for s in 0..escapes.buckets.len() {
            for (at, r) in escapes.packing(s) {
                let at = s * m + at;
                let (lo, hi) = (r.start.max(first), r.end.min(first + count));
                if lo < hi {
                    // SAFETY: elements `lo..hi` of source `s`'s escapes in the combined buffer
                    // (`k m` or `m` elements), and their places in the checked output (`first..
                    // first + count` of the source's input map into it); both stay allocated
                    // until the call's synchronize.
                    unsafe {
                        self.links.copy_within(
                            c.dst.wrapping_add((base(s) + lo - first) * size),
                            escaped.combined.ptr().wrapping_add((at + lo - r.start) * size),
                            (hi - lo) * size,
                        )
                    }?;
                }
            }
        }
        Ok(())
    }

    /// The error of a quantization that found an element without a level outside the
    /// buckets that escape (`escaping`, this rank's source's): its input changed between the
    /// statistics and the quantization (a race in the caller). The communicator is aborted
    /// (its peers may have combined the levels of this rank's changed input).
    fn check_levels(&self, rejected: &DeviceBuffer, escaping: &[usize], coll: Coll) -> Result<()> {
        if !rejected_outside(&le_words(&rejected.to_host()?), escaping) {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Rejection words of `buckets` buckets with word `word` of each bucket in `set` at 1.
    fn words(buckets: usize, set: &[(usize, usize)]) -> Vec<u32> {
        let mut w = vec![0u32; REJECTED_WORDS * buckets];
        for &(b, word) in set {
            w[REJECTED_WORDS * b + word] = 1;
        }
        w
    }

    #[test]
    fn a_rejection_outside_the_escaping_buckets_is_an_input_that_changed() {
        assert!(!rejected_outside(&words(4, &[]), &[]));
        assert!(!rejected_outside(&words(4, &[(1, 1), (3, 0)]), &[1, 3]));
        assert!(rejected_outside(&words(4, &[(1, 1), (2, 1)]), &[1, 3]));
        assert!(rejected_outside(&words(4, &[(0, 0)]), &[]));
        assert!(rejected_outside(&words(4, &[(3, 1)]), &[0, 1, 2]));
    }

    #[test]
    fn rejected_buckets_and_their_reason() {
        assert_eq!(rejected_buckets(&words(5, &[(4, 0), (1, 0)])), (vec![1, 4], false));
        assert_eq!(rejected_buckets(&words(5, &[(2, 1), (2, 0)])), (vec![2], true));
        assert_eq!(rejected_buckets(&words(2, &[])), (vec![], false));
    }

    #[test]
    fn little_endian_words() {
        assert_eq!(
            le_words(&[1, 0, 0, 0, 0, 0, 0x80, 0xbf, 7]),
            vec![1, (-1.0f32).to_bits()]
        );
    }

    #[test]
    fn escaping_buckets_are_packed_in_order() {
        let e = Escapes {
            buckets: vec![vec![1, 9], vec![], vec![0]],
            bucket: 10,
            n: 95,
        };
        assert_eq!(e.packing(0).collect::<Vec<_>>(), vec![(0, 10..20), (10, 90..95)]);
        assert_eq!(e.packing(1).count(), 0);
        assert_eq!(e.packing(2).collect::<Vec<_>>(), vec![(0, 0..10)]);
        assert_eq!(e.packed(), 15);
    }

    #[test]
    fn escapes_are_too_many_past_64_buckets_or_half_the_elements() {
        let e = Escapes {
            buckets: vec![],
            bucket: 10,
            n: 2000,
        };
        assert!(!e.too_many(&(0..64).collect::<Vec<_>>()));
        assert!(e.too_many(&(0..65).collect::<Vec<_>>()));
        let small = Escapes { n: 95, ..e };
        // buckets of 10 and a last one of 5: 50 of 95 elements is past half, 45 is not
        assert!(!small.too_many(&[0, 1, 2, 3, 9]));
        assert!(small.too_many(&[0, 1, 2, 3, 4]));
        assert_eq!(small.range(9), 90..95);
    }
}
