//! The lossy calls' kernels (`zipcoll_device::lossy::levels`): the statistics every rank
//! agrees on first, then the quantization of the input into integer levels, and after the
//! collective the levels scaled back.
//!
//! | kernel           | threads                       | reads                 | writes                         |
//! |------------------|-------------------------------|-----------------------|--------------------------------|
//! | [`lossy_stats`]  | one warp per bucket (warp-stride) | `n` elements      | [`STAT_WORDS`] `f32`s per bucket: max, -min, non-finite, norm |
//! | [`quantize`]     | one thread per element (grid-stride) | `n` elements, the bucket norms (QSGD) | `n` `i8` levels, a rejection word |
//! | [`dequantize`]   | one thread per element (grid-stride) | `n` levels, the scales | `n` elements          |
//!
//! A statistics record of a bucket holds its largest finite element (`-inf` if none), the
//! negated smallest, 1.0 if it holds a NaN or an infinity (else 0.0), and the L2 norm of its
//! finite elements; the records of several ranks combine by `max`, element by element (the
//! QSGD norm every rank quantizes a bucket with is then the largest rank's, which keeps every
//! element within it: still unbiased).

use zipcoll_codegen::kernel;
use zipcoll_device::dtype::{F32Exact, F32, F64};
use zipcoll_device::lossy::levels::{bound_level, qsgd_level, value};
use zipcoll_device::lossy::qsgd::norm_from_squares;
use zipcoll_device::reduce::{Max, RedOp, Sum};
use zipcoll_device::warp_reduce::warp_all_reduce;
use zipcoll_targets::{Scope, Warp};

/// `f32`s in a bucket's statistics record.
pub const STAT_WORDS: usize = 4;

/// The statistics record of each bucket of `bucket` elements of the `n` at `input` into
/// `stats + STAT_WORDS * b` (see the module docs).
///
/// # Safety
/// `input` is valid for `n` reads and `stats` for `STAT_WORDS * ceil(n / bucket)` writes;
/// `bucket >= 1`. Launch whole warps (the warp reductions need every lane).
#[kernel(dtype = [bf16, f16, f32], vendor = [nvptx])]
pub unsafe fn lossy_stats<W: Warp, T: F32Exact>(w: W, input: *const T::Bits, n: usize, bucket: usize, stats: *mut f32) {
    let (max, sum) = (Max::new::<F32>(1), Sum::new::<F64>(1));
    let lanes = W::WIDTH as usize;
    let warps = w.global_threads() / lanes;
    let mut b = w.global_idx() / lanes;
    while b * bucket < n {
        let (start, end) = (b * bucket, n.min((b + 1) * bucket));
        // each lane: the max, -min, non-finite flag and sum of squares of its elements
        // `start + lane, start + lane + WIDTH, ..`
        let (mut hi, mut lo, mut bad, mut squares) = (f32::NEG_INFINITY, f32::NEG_INFINITY, 0.0f32, 0.0f64);
        let mut i = start + w.lane_id() as usize;
        while i < end {
            // SAFETY: `i < n`.
            let x = T::to_f32(unsafe { input.add(i).read() });
            if x.is_finite() {
                hi = hi.max(x);
                lo = lo.max(-x);
                squares += x as f64 * x as f64;
            } else {
                bad = 1.0;
            }
            i += lanes;
        }
        // every lane: the bucket's values
        let hi = f32::from_bits(warp_all_reduce::<W, F32, _>(w, max, hi.to_bits()));
        let lo = f32::from_bits(warp_all_reduce::<W, F32, _>(w, max, lo.to_bits()));
        let bad = f32::from_bits(warp_all_reduce::<W, F32, _>(w, max, bad.to_bits()));
        let squares = f64::from_bits(warp_all_reduce::<W, F64, _>(w, sum, squares.to_bits()));
        if w.lane_id() == 0 {
            let record = [hi, lo, bad, norm_from_squares(squares)];
            for (k, v) in record.into_iter().enumerate() {
                // SAFETY: record `b` of `ceil(n / bucket)`.
                unsafe { stats.add(STAT_WORDS * b + k).write(v) };
            }
        }
        b += warps;
    }
}

/// Quantizes the `n` elements at `input` into `i8` levels at `out`: under the error bound `eb`
/// with levels within `qmax` (at most 127) when `levels == 0`, else QSGD with `levels` levels
/// on bucket `i / bucket`'s norm (`stats`, [`lossy_stats`]' records as agreed) and the draws of
/// `seed`. An element without a level (non-finite, or beyond `qmax`: the statistics the caller
/// checked rule both out) gets level 0 and sets `*rejected` to 1.
///
/// # Safety
/// `input` is valid for `n` reads, `out` for `n` writes, `rejected` for one word, and with
/// `levels > 0`, `stats` for the records of `ceil(n / bucket)` buckets.
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
    let mut i = w.global_idx();
    while i < n {
        // SAFETY: `i < n`.
        let x = T::to_f32(unsafe { input.add(i).read() });
        let level = match levels {
            0 => bound_level(x, eb, qmax.min(i8::MAX as u32) as i32),
            // SAFETY: bucket `i / bucket` has a record.
            _ if x.is_finite() => Some(qsgd_level(
                x,
                unsafe { stats.add(STAT_WORDS * (i / bucket) + 3).read() },
                levels,
                seed,
                i as u64,
            )),
            _ => None,
        };
        if level.is_none() {
            // SAFETY: one word; every writer stores the same value.
            unsafe { w.store_relaxed(rejected, 1u32, Scope::Gpu) };
        }
        // SAFETY: `i < n`; a level is within `qmax <= 127` or `levels <= 127`.
        unsafe { out.add(i).write(level.unwrap_or(0) as i8) };
        i += stride;
    }
}

/// Scales the `n` combined `i8` levels at `input` back into elements at `out`.
/// The output is made of sources of `block` elements each: element `i` comes from source
/// `i / block`, at position `p = first + i % block` of that source's input. Under the error
/// bound (`levels == 0`) its unit is `2 ebs[i / block]`; under QSGD `norm / levels` with the
/// norm of record `(i / block) * records + p / bucket` of `stats` (`records` per source). Every
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
    let stride = w.global_threads();
    let mut i = w.global_idx();
    while i < n {
        // SAFETY: `i < n`.
        let level = unsafe { input.add(i).read() } as i32;
        let source = i / block;
        // SAFETY: the source's entry, or the record of its bucket.
        let unit = unsafe {
            match levels {
                0 => 2.0 * ebs.add(source).read() as f64,
                _ => {
                    let record = source * records + (first + i % block) / bucket;
                    stats.add(STAT_WORDS * record + 3).read() as f64 / levels as f64
                }
            }
        };
        // SAFETY: `i < n`.
        unsafe { out.add(i).write(value::<T>(level, unit, divisor)) };
        i += stride;
    }
}
