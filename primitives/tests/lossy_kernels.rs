//! The lossy kernels (`kernels::lossy`) on the simulator against element-by-element references
//! (`zipcoll_device::lossy`): lengths around a 16-byte vector of elements, input and output at
//! every offset (16-byte aligned or not: the vector and the element paths), buckets and
//! sources that do not divide a vector, and grids smaller than the data (the strided loops).
//!
//! | kernel        | reference, per element or bucket |
//! |---------------|-----------------------------------|
//! | `lossy_stats` | the non-finite flag exactly; in a bucket without a NaN or an infinity max and -min exactly, the norm within 4 `f32` ulps of `qsgd::norm_of` (the kernel sums a vector's squares in `f32`) and at least every |x|, with squares past `f32` in the data |
//! | `quantize`    | `bound_level` or `qsgd_level` with bucket `i / bucket`'s norm; each bucket's rejection word set exactly when an element of it has no level for its reason (beyond `qmax`, not finite) |
//! | `dequantize`  | `value` (error bound) or `qsgd_value` of `qsgd_unit` (QSGD) with source `i / block`'s unit at position `first + i % block`, summed and averaged |

use zipcoll_device::dtype::{Bf16, F32Exact, F16, F32};
use zipcoll_device::lossy::levels::{bound_level, qsgd_level, qsgd_unit, qsgd_value, value};
use zipcoll_device::lossy::qsgd::norm_of;
use zipcoll_primitives::kernels::lossy::{dequantize, lossy_stats, quantize, REJECTED_WORDS, STAT_WORDS};
use zipcoll_targets::sim::{launch, LaunchConfig, SimWarp};
use zipcoll_targets::{Word, V4};

/// Lengths around one and two vectors (4 `f32`s, 8 `bf16`s), and past what the test grid
/// covers in one stride.
const LENGTHS: [usize; 10] = [0, 1, 3, 4, 7, 8, 9, 17, 100, 2 * 64 * 8 + 37];

/// A grid of two blocks of 64 threads: fewer threads than chunks for the longest length.
fn grid() -> LaunchConfig {
    LaunchConfig::new(2, 64)
}

/// Room for `n` values of `B` at an offset of `offset` values from a 16-byte aligned start.
struct Aligned {
    storage: Vec<V4>,
}

impl Aligned {
    fn new(bytes: usize) -> Self {
        Self {
            storage: vec![V4::default(); bytes.div_ceil(16) + 2],
        }
    }
    fn at<B>(&mut self, offset: usize) -> *mut B {
        self.storage.as_mut_ptr().cast::<B>().wrapping_add(offset)
    }
}

/// `n` values of `T` from a fixed generator: normal-ish magnitudes over six decades, -0.0,
/// subnormals, values whose squares overflow `f32` (where `T` holds them), and (with
/// `specials`) a NaN and an infinity.
fn data<T: F32Exact>(n: usize, seed: u64, specials: bool) -> Vec<T::Bits> {
    let mut z = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|i| {
            z ^= z << 13;
            z ^= z >> 7;
            z ^= z << 17;
            let u = (z >> 11) as f64 / (1u64 << 53) as f64;
            let x = match i % 29 {
                3 => -0.0,
                7 => f32::from_bits(3),
                11 if specials => f32::NAN,
                13 if specials => f32::NEG_INFINITY,
                17 if T::to_f32(T::from_f32(3e25)).is_finite() => -3e25,
                _ => ((u - 0.5) * 10f64.powi((i % 6) as i32 - 3)) as f32,
            };
            T::from_f32(x)
        })
        .collect()
}

/// `lossy_stats`, `quantize` and `dequantize` of `T` against the references, at input offset
/// `offset` elements and level offset `out_offset` bytes.
fn check<T: F32Exact>(offset: usize, out_offset: usize) {
    for &n in &LENGTHS {
        for (bucket, levels, eb, specials) in [
            (16, 0, 0.5f32, false),
            (16, 0, 0.05, false),
            (7, 0, 2e-4, true),
            (7, 5, 0.0, false),
            (512, 127, 0.0, true),
        ] {
            let x = data::<T>(n, (n * 31 + bucket) as u64, specials);
            let mut input = Aligned::new((n + offset) * 4);
            let pi = input.at::<T::Bits>(offset);
            for (i, &v) in x.iter().enumerate() {
                // SAFETY: element `offset + i` of the storage.
                unsafe { pi.add(i).write(v) };
            }
            let records = n.div_ceil(bucket);
            let mut stats = vec![0f32; STAT_WORDS * records.max(1)];
            let ps = stats.as_mut_ptr() as usize;
            let pi = pi as usize;
            launch::<32>(grid(), |w: SimWarp<32>| unsafe {
                lossy_stats::<SimWarp<32>, T>(w, pi as *const T::Bits, n, bucket, ps as *mut f32)
            })
            .expect("stats launch");
            for (b, r) in stats.chunks_exact(STAT_WORDS).take(records).enumerate() {
                let xs = &x[b * bucket..n.min((b + 1) * bucket)];
                let finite: Vec<f32> = xs.iter().map(|&v| T::to_f32(v)).filter(|v| v.is_finite()).collect();
                let hi = finite.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
                let lo = finite.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(-v));
                let bad = (finite.len() < xs.len()) as u32 as f32;
                assert_eq!(r[2], bad, "{n} elements, bucket {b} of {bucket}: the flag");
                if bad != 0.0 {
                    // the other words are unspecified (such a call travels exactly)
                    continue;
                }
                assert_eq!((r[0], r[1]), (hi, lo), "{n} elements, bucket {b} of {bucket}");
                // the kernel sums a vector's squares in `f32` (in `f64` where they overflow it),
                // the reference every square in `f64`: a few ulps apart; the norm covers every |x|
                let norm = norm_of::<T>(xs);
                assert!(
                    r[3].to_bits().abs_diff(norm.to_bits()) <= 4 && r[3] >= hi.max(lo),
                    "bucket {b}: norm {} against {norm}",
                    r[3]
                );
            }

            let qmax = 100;
            let mut out = Aligned::new(n + out_offset);
            let mut rejected = vec![0u32; REJECTED_WORDS * records];
            let (po, pr) = (out.at::<i8>(out_offset) as usize, rejected.as_mut_ptr() as usize);
            launch::<32>(grid(), |w: SimWarp<32>| unsafe {
                quantize::<SimWarp<32>, T>(
                    w,
                    pi as *const T::Bits,
                    n,
                    ps as *const f32,
                    bucket,
                    eb,
                    qmax,
                    levels,
                    77,
                    po as *mut i8,
                    pr as *mut u32,
                )
            })
            .expect("quantize launch");
            // the rejection words the elements without a level call for
            let mut none = vec![0u32; REJECTED_WORDS * records];
            let got: Vec<i8> = (0..n).map(|i| unsafe { (po as *const i8).add(i).read() }).collect();
            for (i, (&v, &q)) in x.iter().zip(&got).enumerate() {
                let v = T::to_f32(v);
                let want = match levels {
                    0 => bound_level(v, eb, qmax as i32),
                    _ if v.is_finite() => Some(qsgd_level(
                        v,
                        stats[STAT_WORDS * (i / bucket) + 3],
                        levels,
                        77,
                        i as u64,
                    )),
                    _ => None,
                };
                if want.is_none() {
                    none[REJECTED_WORDS * (i / bucket) + !v.is_finite() as usize] = 1;
                }
                assert_eq!(
                    q as i32,
                    want.unwrap_or(0),
                    "element {i} of {n}: {v}, bucket {bucket}, levels {levels}"
                );
            }
            assert_eq!(rejected, none, "{n} elements, bucket {bucket}, levels {levels}");

            // the levels back, as `first.. + block` positions of sources with their own units,
            // summed (divisor 1: the error bound's `f32` path) and averaged over 3 ranks
            let shapes = [(n.max(1), 0), (5, 3), (16, 16), (40, 1)];
            for ((block, first), divisor) in shapes.into_iter().flat_map(|s| [(s, 1u32), (s, 3)]) {
                let sources = n.div_ceil(block);
                let ebs: Vec<f32> = (0..sources).map(|s| 1e-3 * (s + 1) as f32).collect();
                let per_source = (first + block).div_ceil(bucket);
                let norms: Vec<f32> = (0..sources * per_source * STAT_WORDS).map(|k| 0.5 + k as f32).collect();
                let mut y = Aligned::new((n + offset) * 4);
                let py = y.at::<T::Bits>(offset) as usize;
                let (pe, pn) = (ebs.as_ptr() as usize, norms.as_ptr() as usize);
                launch::<32>(grid(), |w: SimWarp<32>| unsafe {
                    dequantize::<SimWarp<32>, T>(
                        w,
                        po as *const i8,
                        n,
                        block,
                        first,
                        pn as *const f32,
                        per_source,
                        bucket,
                        pe as *const f32,
                        levels,
                        divisor,
                        py as *mut T::Bits,
                    )
                })
                .expect("dequantize launch");
                for (i, &q) in got.iter().enumerate() {
                    let (s, p) = (i / block, first + i % block);
                    let want = match levels {
                        0 => value::<T>(q as i32, 2.0 * ebs[s] as f64, divisor),
                        _ => {
                            let norm = norms[STAT_WORDS * (s * per_source + p / bucket) + 3];
                            qsgd_value::<T>(q as i32, qsgd_unit(norm, levels, divisor))
                        }
                    };
                    let y = unsafe { (py as *const T::Bits).add(i).read() };
                    assert_eq!(
                        y.to_bits64(),
                        want.to_bits64(),
                        "element {i} of {n}: block {block}, first {first}, bucket {bucket}, divisor {divisor}"
                    );
                }
            }
        }
    }
}

#[test]
fn f32_vectors_and_elements_match_the_references_at_every_offset() {
    for offset in 0..4 {
        check::<F32>(offset * 3 % 4, offset);
    }
    check::<F32>(4, 16);
}

#[test]
fn bf16_and_f16_vectors_and_elements_match_the_references_at_every_offset() {
    for offset in [0, 1, 5, 8] {
        check::<Bf16>(offset, offset % 3);
        check::<F16>(offset, 16 - offset % 3);
    }
}
