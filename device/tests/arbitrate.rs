//! Tests of `zipcoll_device::arbitrate`: the fixed-point entropy, the sample, the predictions
//! against the frame codec's realized sizes on the CPU simulator, and the decisions.
//!
//! | test                                              | checks                                                       |
//! |---------------------------------------------------|--------------------------------------------------------------|
//! | `log2_q16_is_exact_to_16_bits`                    | `log2_q16` against f64's log2                                |
//! | `entropy_of_uniform_and_dyadic_histograms`        | `entropy_bits_q16` on histograms with known entropy          |
//! | `sample_is_bounded_and_whole_for_small_batches`   | at most 64 KiB sampled; small batches sampled whole          |
//! | `predictions_match_realized_sizes_on_normal_bf16` | predicted vs realized ratio within ±5%, every coded codec    |
//! | `predictions_are_sane_for_every_dtype` (proptest) | within ±10% over dtypes, scales, frame sizes   |
//! | `same_data_raw_on_nvlink_codec_on_net`            | N(0,1) bf16: RAW on NVLink (constant-time gate), a codec on NET, realized accepted |
//! | `incompressible_data_goes_raw_on_both`            | random bytes: RAW on NVLink and NET                          |
//! | `tiny_batches_go_raw`                             | below the size gate: RAW, no sample, no encode               |
//! | `gates_and_realized_checks`                       | no codec available, tiny capacity, encode failure, realized too large |

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use std::cell::UnsafeCell;
use zipcoll_device::arbitrate::{
    entropy_bits_q16, log2_q16, predict, Arbiter, CodecSet, Reason, Sample, NET, NVLINK, Q16_ONE, SAMPLE_MAX_BYTES,
};
use zipcoll_device::codec::{encode_frame, CodecId, ExpAns, ExpWindow, FixedLen, Huffman, LaneOut, SymbolCoder};
use zipcoll_device::dtype::{Bf16, Elem, Split, F16, F32, F8E4M3, F8E5M2};
use zipcoll_targets::sim::{launch, LaunchConfig, SimWarp};
use zipcoll_targets::Grid;

/// splitmix64.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// A standard normal sample (Box-Muller).
    fn normal(&mut self) -> f64 {
        let u1 = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let u2 = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        (-2.0 * (1.0 - u1).ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
}

/// `n` values of N(0, sigma^2) as elements of `T`.
fn normal<T: Elem>(n: usize, sigma: f64, seed: u64) -> Vec<T::Bits> {
    let mut rng = Rng(seed);
    (0..n).map(|_| T::from_f32((rng.normal() * sigma) as f32)).collect()
}

/// `n` elements of `T` with uniformly random bits.
fn random_bits<T: Elem>(n: usize, seed: u64) -> Vec<T::Bits> {
    use zipcoll_targets::Word;
    let mut rng = Rng(seed);
    (0..n).map(|_| T::Bits::from_bits64(rng.next_u64())).collect()
}

/// One output region per frame, written by that frame's warp through `LaneOut`.
struct Regions(UnsafeCell<Vec<u8>>);
// SAFETY: each block writes only its own region, through `LaneOut` (disjoint writes); the
// buffer is read only after `launch` returns.
unsafe impl Sync for Regions {}

/// Encodes `data` in frames of `frame_elems` with coder `C`, one 32-lane warp per frame on the
/// simulator; returns the total bytes of the frames.
fn realized<T: Split, C: SymbolCoder>(data: &[T::Bits], frame_elems: usize) -> u64
where
    T::Bits: Sync,
{
    let frames: Vec<&[T::Bits]> = data.chunks(frame_elems).collect();
    let region = frame_elems * T::DTYPE.size_bytes() + 32;
    let out = Regions(UnsafeCell::new(vec![0u8; region * frames.len()]));
    let sizes: Vec<std::sync::atomic::AtomicU64> = frames.iter().map(|_| 0.into()).collect();
    let base = unsafe { (*out.0.get()).as_mut_ptr() as usize };
    launch::<32>(LaunchConfig::new(frames.len() as u32, 32), |w: SimWarp<32>| {
        let b = w.block_idx() as usize;
        // SAFETY: region `b` of the buffer, written only by block `b`.
        let lane_out = unsafe { LaneOut::from_raw((base + b * region) as *mut u8, region) };
        let len = encode_frame::<_, T, C>(w, frames[b], lane_out).expect("encode");
        sizes[b].store(len as u64, std::sync::atomic::Ordering::Relaxed);
    })
    .expect("launch");
    drop(out);
    sizes.iter().map(|s| s.load(std::sync::atomic::Ordering::Relaxed)).sum()
}

/// Realized bytes of `codec` (RAW: the data as it is).
fn realized_codec<T: Split>(codec: CodecId, data: &[T::Bits], frame_elems: usize) -> u64
where
    T::Bits: Sync,
{
    match codec {
        CodecId::FixedLen => realized::<T, FixedLen>(data, frame_elems),
        CodecId::ExpWindow => realized::<T, ExpWindow>(data, frame_elems),
        CodecId::ExpAns => realized::<T, ExpAns>(data, frame_elems),
        CodecId::Huffman => realized::<T, Huffman>(data, frame_elems),
        CodecId::Raw => (data.len() * T::DTYPE.size_bytes()) as u64,
    }
}

/// The coding codecs.
const CODED: [CodecId; 4] = [CodecId::FixedLen, CodecId::ExpWindow, CodecId::ExpAns, CodecId::Huffman];

#[test]
fn log2_q16_is_exact_to_16_bits() {
    let mut rng = Rng(7);
    let mut xs: Vec<u64> = (1..5000).collect();
    xs.extend(
        (0..5000)
            .map(|_| rng.next_u64() >> (rng.next_u64() % 64))
            .filter(|&x| x != 0),
    );
    xs.extend([u64::MAX, 1 << 63, (1 << 32) + 1]);
    for x in xs {
        let got = log2_q16(x) as f64 / Q16_ONE as f64;
        let want = (x as f64).log2();
        assert!(
            got <= want + 1e-9 && want - got < 2.0 / Q16_ONE as f64,
            "log2({x}) = {got}, want {want}"
        );
    }
    assert_eq!(log2_q16(0), 0);
    assert_eq!(log2_q16(1024), 10 * Q16_ONE);
}

#[test]
fn entropy_of_uniform_and_dyadic_histograms() {
    assert_eq!(entropy_bits_q16::<u32>(&[]), 0);
    // u64 counts past u32: p = 3/4, 1/4 over 2^38 symbols
    assert_eq!(
        entropy_bits_q16(&[3u64 << 36, 1u64 << 36]),
        (8 * Q16_ONE - 3 * log2_q16(3)) << 36
    );
    assert_eq!(entropy_bits_q16(&[100u32]), 0);
    assert_eq!(entropy_bits_q16(&[5u32; 256]), 256 * 5 * 8 * Q16_ONE);
    // p = 1/2, 1/4, 1/8, 1/8: 1.75 bits per symbol
    assert_eq!(entropy_bits_q16(&[4u32, 2, 1, 1, 0]), 14 * Q16_ONE);
    let h = entropy_bits_q16(&[1u32, 2, 3]) as f64 / Q16_ONE as f64;
    let want: f64 = [1.0f64, 2.0, 3.0].iter().map(|c| c * (6.0 / c).log2()).sum();
    assert!((h - want).abs() < 1e-3, "{h} vs {want}");
}

#[test]
fn sample_is_bounded_and_whole_for_small_batches() {
    let big = normal::<Bf16>(3 << 20, 1.0, 1);
    let s = Sample::of::<Bf16>(&big);
    assert!(s.symbols as usize * 2 <= SAMPLE_MAX_BYTES && s.symbols as usize * 2 > SAMPLE_MAX_BYTES / 2);
    assert_eq!(s.counts.iter().sum::<u32>(), s.symbols);
    let small = normal::<F8E4M3>(1001, 1.0, 2);
    let s = Sample::of::<F8E4M3>(&small);
    // 1001 fp8 values are 501 split words, the last with one value
    assert_eq!(s.symbols, 501);
    assert_eq!(s.sub_blocks, 501usize.div_ceil(32) as u32);
}

/// Predicted and realized bytes of every coded codec for `data`.
fn predicted_vs_realized<T: Split>(data: &[T::Bits], frame_elems: usize) -> Vec<(CodecId, u64, u64)>
where
    T::Bits: Sync,
{
    let p = predict::<T>(&Sample::of::<T>(data), data.len(), frame_elems);
    CODED
        .iter()
        .map(|&c| (c, p.get(c), realized_codec::<T>(c, data, frame_elems)))
        .collect()
}

#[test]
fn predictions_match_realized_sizes_on_normal_bf16() {
    let n = 1 << 20;
    let data = normal::<Bf16>(n, 1.0, 42);
    let raw = (2 * n) as f64;
    for (codec, predicted, realized) in predicted_vs_realized::<Bf16>(&data, 1 << 16) {
        let (rp, rr) = (predicted as f64 / raw, realized as f64 / raw);
        println!("{codec:?}: predicted ratio {rp:.4}, realized {rr:.4}");
        assert!(
            (rp / rr - 1.0).abs() <= 0.05,
            "{codec:?}: predicted {rp:.4} vs realized {rr:.4}"
        );
    }
}

/// Predicted / realized for `data` of `T`, checked within ±10% for every coded codec.
fn check_sane<T: Split>(data: &[T::Bits], frame_elems: usize) -> Result<(), TestCaseError>
where
    T::Bits: Sync,
{
    for (codec, predicted, realized) in predicted_vs_realized::<T>(data, frame_elems) {
        let q = predicted as f64 / realized as f64;
        prop_assert!(
            (0.9..1.1).contains(&q),
            "{:?} {codec:?}: predicted {predicted}, realized {realized}",
            T::DTYPE
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 12,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct("tests/proptest-regressions/arbitrate.txt"))),
        ..ProptestConfig::default()
    })]
    #[test]
    fn predictions_are_sane_for_every_dtype(
        seed in any::<u64>(),
        log_sigma in -6.0f64..6.0,
        frame_log in 10u32..15,
        frames in 1usize..4,
        dtype in 0usize..5,
    ) {
        let frame_elems = 1usize << frame_log;
        let n = frame_elems * frames + (seed % 1000) as usize;
        let sigma = log_sigma.exp2();
        match dtype {
            0 => check_sane::<Bf16>(&normal::<Bf16>(n, sigma, seed), frame_elems)?,
            1 => check_sane::<F16>(&normal::<F16>(n, sigma.min(100.0), seed), frame_elems)?,
            2 => check_sane::<F32>(&normal::<F32>(n, sigma, seed), frame_elems)?,
            3 => check_sane::<F8E4M3>(&normal::<F8E4M3>(n, sigma.clamp(0.05, 20.0), seed), frame_elems)?,
            _ => check_sane::<F8E5M2>(&normal::<F8E5M2>(n, sigma.min(1000.0), seed), frame_elems)?,
        }
    }
}

#[test]
fn same_data_raw_on_nvlink_codec_on_net() {
    let n = 1 << 18;
    let frame_elems = 1 << 15;
    let data = normal::<Bf16>(n, 1.0, 3);
    let capacity = (2 * n) as u64;

    let nvlink = Arbiter::new(NVLINK).decide::<Bf16>(&data, frame_elems, capacity, |c| {
        panic!("NVLink must not encode ({c:?})")
    });
    assert_eq!(nvlink.codec, CodecId::Raw);
    assert_eq!(nvlink.reason, Reason::CannotWin);
    assert!(nvlink.plan.predictions.is_none(), "decided without a sample");

    let net = Arbiter::new(NET).decide::<Bf16>(&data, frame_elems, capacity, |c| {
        Some(realized_codec::<Bf16>(c, &data, frame_elems))
    });
    assert_ne!(net.codec, CodecId::Raw, "{net:?}");
    assert_eq!(net.reason, Reason::Accepted);
    let choice = net.plan.choice.expect("a choice");
    assert!(choice.predicted_s < net.plan.raw_s * 0.97);
    assert!(net.realized.expect("encoded") < capacity * 3 / 4);
    // ExpAns codes N(0,1) exponents best of the dispatched codecs
    assert_eq!(net.codec, CodecId::ExpAns);
}

#[test]
fn incompressible_data_goes_raw_on_both() {
    let n = 1 << 19;
    let data = random_bits::<Bf16>(n, 9);
    for arbiter in [Arbiter::new(NVLINK), Arbiter::new(NET)] {
        let d = arbiter.decide::<Bf16>(&data, 1 << 16, (2 * n) as u64, |c| {
            Some(realized_codec::<Bf16>(c, &data, 1 << 16))
        });
        assert_eq!(d.codec, CodecId::Raw, "{}: {d:?}", arbiter.transport.name);
        assert!(matches!(d.reason, Reason::CannotWin | Reason::NoGain), "{d:?}");
    }
    // f32 with random mantissas: the 24-bit raw plane leaves little to gain; random exponents none
    let data = random_bits::<F32>(n, 10);
    let d = Arbiter::new(NET).plan::<F32>(&data, 1 << 16, (4 * n) as u64);
    assert_eq!((d.choice, d.reason), (None, Reason::NoGain));
}

#[test]
fn tiny_batches_go_raw() {
    for n in [0usize, 1, 100, 16_383] {
        let data = normal::<Bf16>(n, 1.0, 5);
        for arbiter in [Arbiter::new(NVLINK), Arbiter::new(NET)] {
            let d = arbiter.decide::<Bf16>(&data, 1 << 16, u64::MAX, |_| panic!("tiny batches are not encoded"));
            assert_eq!((d.codec, d.reason), (CodecId::Raw, Reason::TooSmall));
            assert!(d.plan.predictions.is_none());
        }
    }
}

#[test]
fn gates_and_realized_checks() {
    let n = 1 << 18;
    let data = normal::<Bf16>(n, 1.0, 11);
    let cap = (2 * n) as u64;
    let mut net = Arbiter::new(NET);

    net.policy.available = CodecSet::RAW_ONLY;
    assert_eq!(net.plan::<Bf16>(&data, 1 << 16, cap).reason, Reason::NoCodecAvailable);

    net.policy.available = CodecSet::of(&[CodecId::Raw, CodecId::FixedLen]);
    let plan = net.plan::<Bf16>(&data, 1 << 16, cap);
    assert_eq!(plan.choice.map(|c| c.codec), Some(CodecId::FixedLen));
    assert!(CodecSet::ALL.without(CodecId::Huffman).contains(CodecId::ExpAns));

    net.policy.available = CodecSet::ALL;
    // a capacity below the headers and raw planes: no codec can fit
    assert_eq!(net.plan::<Bf16>(&data, 1 << 16, cap / 4).reason, Reason::CannotWin);
    // a capacity the prediction does not fit but the raw planes do
    assert_eq!(net.plan::<Bf16>(&data, 1 << 16, cap * 55 / 100).reason, Reason::NoGain);

    let failed = net.decide::<Bf16>(&data, 1 << 16, cap, |_| None);
    assert_eq!((failed.codec, failed.reason), (CodecId::Raw, Reason::EncodeFailed));
    let too_large = net.decide::<Bf16>(&data, 1 << 16, cap, |_| Some(cap));
    assert_eq!(too_large.codec, CodecId::Raw);
    assert_eq!(too_large.reason, Reason::RealizedTooLarge { realized: cap });
    let choice = too_large.plan.choice.expect("a choice");
    assert!(choice.accept_realized(choice.predicted_bytes));
    assert!(!choice.accept_realized(choice.max_bytes + 1));
}
