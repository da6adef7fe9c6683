//! The lossy calls' kernels (`zipcoll_device::lossy::levels`): the statistics every rank
//! agrees on first, then the quantization of the input into integer levels, and after the
//! collective the levels scaled back.
//!
//! | kernel           | threads                       | reads                 | writes                         |
//! |------------------|-------------------------------|-----------------------|--------------------------------|
//! | [`lossy_stats`]  | one warp per bucket (warp-stride), a lane per 16 bytes of elements | `n` elements | [`STAT_WORDS`] `f32`s per bucket: max, -min, non-finite, norm |
//! | [`quantize`]     | one thread per [`QUANTIZE_UNIT`] (8) elements (grid-stride) | `n` elements, the bucket norms (QSGD) | `n` `i8` levels, [`REJECTED_WORDS`] rejection words per bucket |
//! | [`dequantize`]   | one thread per 16 bytes of elements (grid-stride) | `n` levels, the scales | `n` elements |
//!
//! Where the element array (and the levels) start 16-byte aligned, a thread reads or writes
//! its elements as 16-byte vectors (4 `f32`s or 8 `bf16` / `f16`s, consecutive lanes on
//! consecutive vectors; [`quantize`] takes 8 elements at a time, two `f32` vectors) and their
//! levels as one 4- or 8-byte word; the elements past the last whole unit, and every element
//! of an unaligned array, go one per thread. Either way each
//! element gets the same value, so the output depends neither on alignment nor on the target
//! or the launch shape.
//!
//! A statistics record of a bucket holds its largest element (`-inf` if none), the negated
//! smallest, 1.0 if it holds a NaN or an infinity (else 0.0: in a record with 1.0 the other
//! three words are unspecified, as such a call travels exactly), and the L2 norm of its
//! elements (each vector's squares summed in `f32`, and never below the largest `|x|`, so
//! that QSGD's levels stay within `s` whatever the rounding). The records of several ranks
//! combine by `max`, element by element (the QSGD norm every rank quantizes a bucket with is
//! then the largest rank's, which keeps every element within it: still unbiased).

use core::mem::size_of;
use zipcoll_codegen::kernel;
use zipcoll_device::bits::warp_max_u32;
use zipcoll_device::divisor::Divisor;
use zipcoll_device::dtype::{Elem, F32Exact, F64};
use zipcoll_device::lossy::exact::integer_byte;
use zipcoll_device::lossy::levels::{bound_value, qsgd_unit, qsgd_value, value, BoundLevels};
use zipcoll_device::lossy::qsgd::{self, norm_from_squares, uniforms};
use zipcoll_device::reduce::{RedOp, Sum};
use zipcoll_device::warp_reduce::warp_all_reduce;
use zipcoll_targets::{Scope, Warp, Word, V4};

/// `f32`s in a bucket's statistics record.
pub const STAT_WORDS: usize = 4;

/// [`quantize`]'s rejection words (`u32`) of a bucket, each 1 where an element of the bucket
/// had no level for its reason: word 0 a finite element beyond `qmax`, word 1 a NaN or an
/// infinity. Several ranks' words combine by `max`.
pub const REJECTED_WORDS: usize = 2;

/// Elements of `T` in one 16-byte vector: 4 (`f32`) or 8 (`bf16`, `f16`).
pub const fn per_vector<T: Elem>() -> usize {
    16 / size_of::<T::Bits>()
}

/// Whether `p` is 16-byte aligned: the vector loop's condition.
#[inline(always)]
fn aligned<B>(p: *const B) -> bool {
    (p as usize).is_multiple_of(16)
}

/// The 16 bytes of vector `v` of the array at `p` (16-byte aligned), as one little-endian
/// number: element `k` of the vector is bits `k x 8 size..` of it.
///
/// # Safety
/// `p` is 16-byte aligned and valid for reads of vector `v`.
#[inline(always)]
unsafe fn load_vector<W: Warp, B>(w: W, p: *const B, v: usize) -> u128 {
    // SAFETY: the caller's contract.
    let [a, b, c, d] = unsafe { w.load_v4(p.cast::<V4>().add(v)) }.0;
    a as u128 | (b as u128) << 32 | (c as u128) << 64 | (d as u128) << 96
}

/// Element `k` of `vector` (see [`load_vector`]).
#[inline(always)]
fn element<T: Elem>(vector: u128, k: usize) -> T::Bits {
    T::Bits::from_bits64((vector >> (8 * size_of::<T::Bits>() * k)) as u64)
}

/// The statistics record of each bucket of `bucket` elements of the `n` at `input` into
/// `stats + STAT_WORDS * b` (see the module docs).
///
/// # Safety
/// `input` is valid for `n` reads and `stats` for `STAT_WORDS * ceil(n / bucket)` writes;
/// `bucket >= 1`. Launch whole warps (the warp reductions need every lane).
#[kernel(dtype = [bf16, f16, f32], vendor = [nvptx])]
pub unsafe fn lossy_stats<W: Warp, T: F32Exact>(w: W, input: *const T::Bits, n: usize, bucket: usize, stats: *mut f32) {
    let sum = Sum::new::<F64>(1);
    let (lanes, per) = (W::WIDTH as usize, per_vector::<T>());
    let warps = w.global_threads() / lanes;
    let mut b = w.global_idx() / lanes;
    while b * bucket < n {
        let (start, end) = (b * bucket, n.min((b + 1) * bucket));
        // SAFETY: `start < n`.
        let at = unsafe { input.add(start) };
        let vectors = if aligned(at) { (end - start) / per } else { 0 };
        // each lane: the max, -min, non-finite flag and sum of squares of its elements: vectors
        // `lane, lane + WIDTH, ..` of the bucket, then elements `start + per vectors + lane, ..`
        // (a NaN or an infinity sets the flag, and then the other three are unspecified: a call
        // with one travels exactly; NaN leaves the maxima as they were)
        let (mut hi, mut lo, mut bad, mut squares) = (f32::NEG_INFINITY, f32::NEG_INFINITY, false, 0.0f64);
        let mut v = w.lane_id() as usize;
        while v < vectors {
            // SAFETY: vector `v` of the bucket's aligned `vectors`.
            let vector = unsafe { load_vector(w, at, v) };
            // the vector's squares summed in `f32`, one `f64` add per vector (the norm is a
            // scale, and is at least the largest |x| below)
            let mut part = 0.0f32;
            for k in 0..per {
                let x = T::to_f32(element::<T>(vector, k));
                hi = hi.max(x);
                lo = lo.max(-x);
                part += x * x;
            }
            // one test per vector: `part` is finite unless an element is a NaN or an infinity,
            // or a square overflows `f32` (an element past 1.8e19); then the squares in `f64`,
            // which also tell the two apart
            match part.is_finite() {
                true => squares += part as f64,
                false => {
                    let (part, not_finite) = squares_f64::<T>(vector);
                    squares += part;
                    bad |= not_finite;
                }
            }
            v += lanes;
        }
        let mut i = start + per * vectors + w.lane_id() as usize;
        while i < end {
            // SAFETY: `i < n`.
            let x = T::to_f32(unsafe { input.add(i).read() });
            hi = hi.max(x);
            lo = lo.max(-x);
            bad |= !x.is_finite();
            squares += x as f64 * x as f64;
            i += lanes;
        }
        // every lane: the bucket's values (the maxima as integers that order as the values do,
        // which any order of the butterfly takes to the same bits; `hi` and `lo` are not NaN)
        let hi = unordered(warp_max_u32(w, ordered(hi)));
        let lo = unordered(warp_max_u32(w, ordered(lo)));
        let bad = w.any(W::FULL, bad) as u32 as f32;
        let squares = f64::from_bits(warp_all_reduce::<W, F64, _>(w, sum, squares.to_bits()));
        if w.lane_id() == 0 {
            // the norm at least every |x|, whatever the sums' rounding: QSGD's levels stay
            // within `s` (`-inf` where the bucket has no finite element)
            let norm = norm_from_squares(squares).max(hi).max(lo);
            // SAFETY: record `b` of `ceil(n / bucket)` (four stores: a loop over an array of
            // the four kept it in local memory)
            unsafe {
                let record = stats.add(STAT_WORDS * b);
                record.write(hi);
                record.add(1).write(lo);
                record.add(2).write(bad);
                record.add(3).write(norm);
            }
        }
        b += warps;
    }
}

/// `x` (not NaN) as a `u32` that orders as `x` does (`-0.0` below `+0.0`).
#[inline(always)]
fn ordered(x: f32) -> u32 {
    let b = x.to_bits();
    if b >> 31 == 1 {
        !b
    } else {
        b | 1 << 31
    }
}

/// The `f32` that [`ordered`] took to `k`.
#[inline(always)]
fn unordered(k: u32) -> f32 {
    f32::from_bits(if k >> 31 == 1 { k & !(1 << 31) } else { !k })
}

/// The squares of `vector`'s elements summed in `f64`, and whether one of them is a NaN or an
/// infinity ([`lossy_stats`]' cold path).
#[cold]
#[inline(never)]
fn squares_f64<T: F32Exact>(vector: u128) -> (f64, bool) {
    let (mut squares, mut not_finite) = (0.0f64, false);
    for k in 0..per_vector::<T>() {
        let x = T::to_f32(element::<T>(vector, k));
        squares += x as f64 * x as f64;
        not_finite |= !x.is_finite();
    }
    (squares, not_finite)
}

/// Quantizes the `n` elements at `input` into `i8` levels at `out`: under the error bound `eb`
/// with levels within `qmax` (at most 127) when `levels == 0`, else QSGD with `levels` levels
/// on bucket `i / bucket`'s norm (`stats`, [`lossy_stats`]' records as agreed) and the draws of
/// `seed`. An element without a level gets level 0 and sets its reason's word of its bucket's
/// [`REJECTED_WORDS`] at `rejected` to 1 (bucket `b`'s at `rejected + REJECTED_WORDS b`).
///
/// # Safety
/// `input` is valid for `n` reads, `out` for `n` writes, `rejected` for [`REJECTED_WORDS`]
/// words per bucket (of `ceil(n / bucket)`), and with `levels > 0`, `stats` for the records
/// of as many buckets; `bucket >= 1`.
#[kernel(dtype = [bf16, f16, f32], vendor = [nvptx])]
#[allow(clippy::too_many_arguments)]
pub unsafe fn quantize<W: Warp, T: F32Exact>(
    w: W,
    input: *const T::Bits,
    n: usize,
    stats: *const f32,
    bucket: usize,
    eb: f32,
    qmax: u32,
    levels: u32,
    seed: u64,
    out: *mut i8,
    rejected: *mut u32,
) {
    let stride = w.global_threads();
    let bound = BoundLevels::new(eb, qmax.min(i8::MAX as u32) as i32);
    let buckets = Divisor::new(bucket);
    // the QSGD norm of bucket `b`
    // SAFETY: bucket `b` has a record.
    let norm_of = |b: usize| unsafe { stats.add(STAT_WORDS * b + 3).read() };
    // element `i`'s level as a byte, QSGD's (`qsgd`) on the bucket norm `norm`; where it has
    // none, the bit of its rejection word (1: beyond `qmax`, 2: not finite)
    let level = |i: usize, bits: T::Bits, norm: f32, qsgd: bool| -> Result<u8, u32> {
        let x = T::to_f32(bits);
        let q = match qsgd {
            false => bound.level(x),
            true if x.is_finite() => Some(qsgd::level(x, norm, levels, seed, i as u64)),
            true => None,
        };
        // a level is within `qmax <= 127` or `levels <= 127`
        q.map(|q| q as i8 as u8).ok_or(if x.is_finite() { 1 } else { 2 })
    };
    // elements `i0 ..` had no level for the reasons in `bad` (two bits per element)
    // SAFETY: the caller's `rejected` and `bucket`; the elements are below `n`.
    let reject = |i0: usize, bad: u32| unsafe { reject(w, rejected, bucket, i0, bad) };
    let units = if aligned(input) && aligned(out) {
        n / QUANTIZE_UNIT
    } else {
        0
    };
    let each = Each {
        input,
        out,
        units,
        buckets,
    };
    // SAFETY: the units of the aligned arrays, as above.
    unsafe {
        match levels {
            0 => quantize_units::<W, T, false>(w, each, (levels, seed), level, norm_of, reject),
            _ => quantize_units::<W, T, true>(w, each, (levels, seed), level, norm_of, reject),
        }
    }
    let mut i = QUANTIZE_UNIT * units + w.global_idx();
    while i < n {
        let norm = if levels == 0 { 0.0 } else { norm_of(buckets.div(w, i)) };
        // SAFETY: `i < n`.
        let q = level(i, unsafe { input.add(i).read() }, norm, levels > 0);
        if let Err(bits) = q {
            reject(i, bits);
        }
        // SAFETY: `i < n`.
        unsafe { out.add(i).write(q.unwrap_or(0) as i8) };
        i += stride;
    }
}

/// Sets the rejection words of elements `i0 ..` that had no level: element `i0 + k`'s reasons
/// are bits `2k` and `2k + 1` of `bad` (word 0 and word 1 of its bucket's [`REJECTED_WORDS`]).
/// Out of line and cold: a kernel's hot loop only tests `bad`.
///
/// # Safety
/// `rejected` is valid for the rejection words of every bucket (of `bucket >= 1` elements)
/// that the elements marked in `bad` fall in.
#[cold]
#[inline(never)]
unsafe fn reject<W: Warp>(w: W, rejected: *mut u32, bucket: usize, i0: usize, bad: u32) {
    for k in 0..QUANTIZE_UNIT {
        let at = REJECTED_WORDS * ((i0 + k) / bucket);
        for word in 0..REJECTED_WORDS {
            if bad >> (2 * k + word) & 1 != 0 {
                // SAFETY: word `word` of the bucket's `REJECTED_WORDS` (the caller's
                // contract); every writer stores the same value.
                unsafe { w.store_relaxed(rejected.add(at + word), 1u32, Scope::Gpu) }
            }
        }
    }
}

/// The whole units of elements one of [`quantize`]'s or [`dequantize`]'s threads takes at a
/// time: the arrays (16-byte aligned), the number of units ([`QUANTIZE_UNIT`] elements for
/// [`quantize`], a 16-byte vector for [`dequantize`]), and the elements per bucket (a divisor).
#[derive(Clone, Copy)]
struct Each<I, O> {
    input: *const I,
    out: *mut O,
    units: usize,
    buckets: Divisor,
}

/// Elements a thread of [`quantize`] takes at a time: one 16-byte vector of `bf16` or `f16`,
/// two of `f32`; their levels are one 8-byte word. (Under QSGD the unit's scale, a division,
/// and its bucket's index are then one per 8 elements, not per 4.)
pub const QUANTIZE_UNIT: usize = 8;

/// [`quantize`]'s loop over this thread's units `v` (elements `8 v .. 8 v + 8`, one or two
/// vectors, their levels one word), compiled once per quantizer (`QSGD`) so that each unrolls
/// its elements with no test of the quantizer in it; under QSGD a unit within one bucket takes
/// its norm's [`qsgd::scale`] once and draws its elements a pair at a time ([`uniforms`]: one
/// hash per pair). `(levels, seed)` are QSGD's, `level`, `norm_of` and `reject` the kernel's.
///
/// # Safety
/// `each`'s arrays are 16-byte aligned and hold `each.units` units of elements and levels.
#[inline(always)]
unsafe fn quantize_units<W: Warp, T: F32Exact, const QSGD: bool>(
    w: W,
    each: Each<T::Bits, i8>,
    (levels, seed): (u32, u64),
    level: impl Fn(usize, T::Bits, f32, bool) -> Result<u8, u32>,
    norm_of: impl Fn(usize) -> f32,
    reject: impl Fn(usize, u32),
) {
    const { assert!(QUANTIZE_UNIT == 8) };
    let (per, stride) = (per_vector::<T>(), w.global_threads());
    let mut v = w.global_idx();
    while v < each.units {
        // this thread: elements `i0 .. i0 + 8`, from vectors `8 v / per ..`
        let i0 = QUANTIZE_UNIT * v;
        let first = i0 / per;
        // SAFETY: vector `first`, and for `f32` `first + 1`, of unit `v` of the aligned `units`.
        let (vector, next) = unsafe {
            match per {
                4 => (load_vector(w, each.input, first), load_vector(w, each.input, first + 1)),
                _ => (load_vector(w, each.input, first), 0),
            }
        };
        // element `k` of the unit (`k` is a constant once the loops below unroll)
        let elem = |k: usize| match k < per {
            true => element::<T>(vector, k),
            false => element::<T>(next, k - per),
        };
        // the levels as two 32-bit words (bytes 0-3 and 4-7), by shifts (an array indexed by
        // `k` would go to local memory)
        let (mut low, mut high, mut bad) = (0u32, 0u32, 0u32);
        let mut put = |k: usize, byte: u32| match k < 4 {
            true => low |= byte << (8 * k),
            false => high |= byte << (8 * (k - 4)),
        };
        // element `k`'s level's byte, or 0 and its reasons' bits in bits `2k..2k + 2` of `bad`
        let mut byte = |k: usize, q: Result<u8, u32>| match q {
            Ok(q) => q as u32,
            Err(reasons) => {
                bad |= reasons << (2 * k);
                0
            }
        };
        if !QSGD {
            for k in 0..QUANTIZE_UNIT {
                put(k, byte(k, level(i0 + k, elem(k), 0.0, false)));
            }
        } else {
            // the unit's bucket `b`, unless it straddles two
            let (b, r) = each.buckets.div_rem(w, i0);
            if r + QUANTIZE_UNIT <= each.buckets.get() {
                let scale = qsgd::scale(norm_of(b), levels);
                for pair in 0..QUANTIZE_UNIT / 2 {
                    let draws = uniforms(seed, (i0 / 2 + pair) as u64);
                    for (h, &u) in draws.iter().enumerate() {
                        let k = 2 * pair + h;
                        let x = T::to_f32(elem(k));
                        // a level is within `levels <= 127`, its byte taken without a
                        // conversion; a non-finite element has none (`level_f32` is computed
                        // for it too, branch-free, and dropped)
                        let q = integer_byte(qsgd::level_f32(x, scale, levels, u)) as u32;
                        let finite = x.is_finite();
                        bad |= if finite { 0 } else { 2 << (2 * k) };
                        put(k, if finite { q } else { 0 });
                    }
                }
            } else {
                for k in 0..QUANTIZE_UNIT {
                    let norm = norm_of(each.buckets.div(w, i0 + k));
                    put(k, byte(k, level(i0 + k, elem(k), norm, true)));
                }
            }
        }
        if bad != 0 {
            reject(i0, bad);
        }
        // SAFETY: levels `i0 .. i0 + 8` of the units, 8-byte aligned.
        unsafe { each.out.add(i0).cast::<u64>().write(low as u64 | (high as u64) << 32) };
        v += stride;
    }
}

/// Scales the `n` combined `i8` levels at `input` back into elements at `out`.
/// The output is made of sources of `block` elements each: element `i` comes from source
/// `i / block`, at position `p = first + i % block` of that source's input. Under the error
/// bound (`levels == 0`) its unit is `2 ebs[i / block]`; under QSGD [`qsgd_unit`] of the norm
/// of record `(i / block) * records + p / bucket` of `stats` (`records` per source). Every
/// value is divided by `divisor` (an average's rank count, else 1).
///
/// # Safety
/// `input` is valid for `n` reads, `out` for `n` writes; `ebs` for every
/// source's entry (`levels == 0`), else `stats` for every source's records; `block`,
/// `bucket >= 1`.
#[kernel(dtype = [bf16, f16, f32], vendor = [nvptx])]
#[allow(clippy::too_many_arguments)]
pub unsafe fn dequantize<W: Warp, T: F32Exact>(
    w: W,
    input: *const i8,
    n: usize,
    block: usize,
    first: usize,
    stats: *const f32,
    records: usize,
    bucket: usize,
    ebs: *const f32,
    levels: u32,
    divisor: u32,
    out: *mut T::Bits,
) {
    let (per, stride) = (per_vector::<T>(), w.global_threads());
    let (blocks, buckets) = (Divisor::new(block), Divisor::new(bucket));
    // the unit of a level of `source` in bucket `b` of its input (see `to_value`): the
    // source's bound, or QSGD's unit of the bucket
    // SAFETY: the source's entry, or the record of its bucket.
    let unit = |source: usize, b: usize| unsafe {
        match levels {
            0 => ebs.add(source).read(),
            _ => qsgd_unit(
                stats.add(STAT_WORDS * (source * records + b) + 3).read(),
                levels,
                divisor,
            ),
        }
    };
    // element `i`'s source and position (one source, the reductions': no division)
    let place = |i: usize| match n <= block {
        true => (0, first + i),
        false => {
            let (source, r) = blocks.div_rem(w, i);
            (source, first + r)
        }
    };
    let vectors = if aligned(input) && aligned(out) { n / per } else { 0 };
    let each = Each {
        input,
        out,
        units: vectors,
        buckets,
    };
    let shape = (first + block, levels == 0);
    let mode = match (levels, divisor) {
        (0, 1) => BOUND_SUM,
        (0, _) => BOUND_AVERAGE,
        _ => QSGD,
    };
    // SAFETY: the vectors of the aligned arrays, as above.
    unsafe {
        match mode {
            BOUND_SUM => dequantize_vectors::<W, T, BOUND_SUM>(w, each, shape, divisor, unit, place),
            BOUND_AVERAGE => dequantize_vectors::<W, T, BOUND_AVERAGE>(w, each, shape, divisor, unit, place),
            _ => dequantize_vectors::<W, T, QSGD>(w, each, shape, divisor, unit, place),
        }
    }
    let mut i = per * vectors + w.global_idx();
    while i < n {
        let (s, p) = place(i);
        let u = unit(s, buckets.div(w, p));
        // SAFETY: `i < n`.
        let l = unsafe { input.add(i).read() } as i32;
        let x = match mode {
            BOUND_SUM => to_value::<T, BOUND_SUM>(l, u, divisor),
            BOUND_AVERAGE => to_value::<T, BOUND_AVERAGE>(l, u, divisor),
            _ => to_value::<T, QSGD>(l, u, divisor),
        };
        // SAFETY: `i < n`.
        unsafe { out.add(i).write(x) };
        i += stride;
    }
}

/// How [`to_value`] scales a combined level back, with the unit `u` of [`dequantize`]:
/// the error bound's sums in `f32` ([`bound_value`], `u` the bound `eb`)...
const BOUND_SUM: u8 = 0;
/// ... its averages in `f64` ([`value`] of `2 eb`, divided by the ranks)...
const BOUND_AVERAGE: u8 = 1;
/// ... and QSGD in `f32` ([`qsgd_value`], `u` its [`qsgd_unit`], the ranks divided already).
const QSGD: u8 = 2;

/// The value of combined level `l` with unit `u`, scaled back as `MODE` says.
#[inline(always)]
fn to_value<T: F32Exact, const MODE: u8>(l: i32, u: f32, divisor: u32) -> T::Bits {
    match MODE {
        BOUND_SUM => bound_value::<T>(l, u),
        BOUND_AVERAGE => value::<T>(l, 2.0 * u as f64, divisor),
        _ => qsgd_value::<T>(l, u),
    }
}

/// [`dequantize`]'s loop over this thread's vectors `v` (elements `per v ..` from one word of
/// levels), compiled once per `MODE` (see [`to_value`]); a vector whose elements share one
/// unit (one source and, under QSGD, one bucket: `shape` is the end `first + block` of a
/// source's positions and whether the units are per source alone) unrolls its elements with
/// that unit. `unit` (of a source and a bucket) and `place` are the kernel's.
///
/// # Safety
/// `each`'s arrays are 16-byte aligned and hold `each.units` vectors of levels and elements.
#[inline(always)]
unsafe fn dequantize_vectors<W: Warp, T: F32Exact, const MODE: u8>(
    w: W,
    each: Each<i8, T::Bits>,
    (end, per_source): (usize, bool),
    divisor: u32,
    unit: impl Fn(usize, usize) -> f32,
    place: impl Fn(usize) -> (usize, usize),
) {
    let (per, stride, buckets) = (per_vector::<T>(), w.global_threads(), each.buckets);
    let mut v = w.global_idx();
    while v < each.units {
        // this thread: elements `i0 .. i0 + per` from one word of levels
        let i0 = per * v;
        let (s0, p0) = place(i0);
        // SAFETY: levels `i0 .. i0 + per` of the vectors, `per`-byte aligned.
        let word = unsafe {
            match per {
                4 => each.input.add(i0).cast::<u32>().read() as u64,
                _ => each.input.add(i0).cast::<u64>().read(),
            }
        };
        let level = |k: usize| (word >> (8 * k)) as u8 as i8 as i32;
        // element `k`'s bits at bit `8 size k` of the 16-byte vector (shifts, not an array
        // indexed by `k`: the slow path's loop is not unrolled, and would put it in local memory)
        let mut vector = 0u128;
        let mut put = |k: usize, x: T::Bits| vector |= (x.to_bits64() as u128) << (8 * size_of::<T::Bits>() * k);
        // the first element's bucket, and whether the vector's elements share its unit
        let (b0, one_unit) = match per_source {
            true => (0, p0 + per <= end),
            false => {
                let (b, r) = buckets.div_rem(w, p0);
                (b, p0 + per <= end && r + per <= buckets.get())
            }
        };
        if one_unit {
            let u0 = unit(s0, b0);
            for k in 0..per {
                put(k, to_value::<T, MODE>(level(k), u0, divisor));
            }
        } else {
            for k in 0..per {
                let (s, p) = place(i0 + k);
                put(k, to_value::<T, MODE>(level(k), unit(s, buckets.div(w, p)), divisor));
            }
        }
        let v4 = V4([
            vector as u32,
            (vector >> 32) as u32,
            (vector >> 64) as u32,
            (vector >> 96) as u32,
        ]);
        // SAFETY: vector `v` of the aligned `vectors`.
        unsafe { w.store_v4(each.out.cast::<V4>().add(v), v4) };
        v += stride;
    }
}
