//! Tests of `zipcoll_device::arbitrate`: the fixed-point entropy, the sample, the predictions
//! against the frame codec's realized sizes on the CPU simulator, and the decisions.
//!
//! | test                                              | checks                                                       |
//! |---------------------------------------------------|--------------------------------------------------------------|
//! | `log2_q16_is_exact_to_16_bits`                    | `log2_q16` against f64's log2                                |
//! | `entropy_of_uniform_and_dyadic_histograms`        | `entropy_bits_q16` on histograms with known entropy          |
//! | `sample_is_bounded_and_whole_for_small_batches`   | at most 64 KiB sampled; small batches sampled whole; region histograms |
//! | `predictions_match_realized_sizes_on_normal_bf16` | predicted vs realized ratio within ±5%, every coded codec    |
//! | `predictions_are_sane_for_every_dtype` (proptest) | within ±10% over dtypes, scales, frame sizes   |
//! | `window_choice_is_the_encoders`                   | `choose_window` on a host histogram = the window the warp encoder wrote |
//! | `expwindow_predictions_within_3_percent`          | ExpWindow within ±3%: N(0,1) bf16, e4m3 N(0,1) and N(0,0.03^2), e5m2 N(0,1) and N(0,0.5^2) |
//! | `two_scale_tensors_are_predicted_per_frame`       | half N(0,1), half N(0,1e-6): ExpWindow, ExpAns, Huffman within ±3%, in separate frames (bf16, e5m2) and in one frame |
//! | `gpt_like_weights_are_predicted_per_frame`        | a GPT's parameters concatenated (bf16, e4m3): ExpWindow, ExpAns, Huffman within ±3% |
//! | `same_data_raw_on_nvlink_codec_on_net`            | N(0,1) bf16: RAW on NVLink (constant-time gate), ExpAns on NET (the wire is the slowest stage: the smallest codec wins), realized accepted |
//! | `incompressible_data_goes_raw_on_both`            | random bytes: RAW on NVLink and NET                          |
//! | `tiny_batches_go_raw`                             | below the size gate: RAW, no sample, no encode               |
//! | `gates_and_realized_checks`                       | no codec available, tiny capacity, encode failure, realized too large |
//! | `few_coding_warps_go_raw_unless_the_link_is_slow` | one-warp channels: RAW on NET unless capped; never faster than the whole GPU |
//! | `block_channels_decide_as_measured`               | 64 block channels over NET: ExpAns once the batch fills them, RAW for a batch of one frame per channel, ExpAns under 500 MB/s |
//! | `never_codes_means_the_gate_decides_raw_at_every_size` | `never_codes` against the gate at every size |
//! | `pipeline_model_fills_then_streams` (proptest)    | the pipeline model: RAW ignores frames, one frame per channel adds the stages, long batches approach the slowest; `max_wire_bytes` inverts `time_s` |

mod common;

use common::{Rng, SharedBuf};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use std::sync::atomic::{AtomicU64, Ordering};
use zipcoll_device::arbitrate::{
    entropy_bits_q16, log2_q16, predict, Arbiter, CodecSet, Reason, Sample, CHUNK_WORDS, NET, NVLINK, Q16_ONE, REGIONS,
    SAMPLE_MAX_BYTES,
};
use zipcoll_device::codec::exp_window::{choose_window, window_bin, Window, BINS};
use zipcoll_device::codec::{encode_frame, CodecId, ExpAns, ExpWindow, FixedLen, Huffman, SymbolCoder};
use zipcoll_device::dtype::{Bf16, Elem, F32Exact, Split, F16, F32, F8E4M3, F8E5M2};
use zipcoll_targets::sim::{launch, LaunchConfig, SimWarp};
use zipcoll_targets::Grid;

/// `n` values of N(0, sigma^2) as elements of `T`.
fn normal<T: F32Exact>(n: usize, sigma: f64, seed: u64) -> Vec<T::Bits> {
    let mut rng = Rng(seed);
    (0..n).map(|_| T::from_f32((rng.normal() * sigma) as f32)).collect()
}

/// `n` elements of `T` with uniformly random bits.
fn random_bits<T: Elem>(n: usize, seed: u64) -> Vec<T::Bits> {
    use zipcoll_targets::Word;
    let mut rng = Rng(seed);
    (0..n).map(|_| T::Bits::from_bits64(rng.next_u64())).collect()
}

/// Encodes `data` in frames of `frame_elems` (`0`: one frame) with coder `C`, one 32-lane warp
/// per frame on the simulator, each into its own buffer; returns the total bytes of the frames.
fn realized<T: Split, C: SymbolCoder>(data: &[T::Bits], frame_elems: usize) -> u64
where
    T::Bits: Sync,
{
    let frames: Vec<&[T::Bits]> = data
        .chunks(if frame_elems == 0 { data.len() } else { frame_elems })
        .collect();
    let bufs: Vec<SharedBuf> = frames
        .iter()
        .map(|f| SharedBuf::new(f.len() * T::DTYPE.size_bytes() + 32, 0))
        .collect();
    let sizes: Vec<AtomicU64> = frames.iter().map(|_| 0.into()).collect();
    launch::<32>(LaunchConfig::new(frames.len() as u32, 32), |w: SimWarp<32>| {
        let b = w.block_idx() as usize;
        let len = encode_frame::<_, T, C>(w, frames[b], bufs[b].out()).expect("encode");
        sizes[b].store(len as u64, Ordering::Relaxed);
    })
    .expect("launch");
    sizes.iter().map(|s| s.load(Ordering::Relaxed)).sum()
}

/// Realized bytes of `codec` in frames of `frame_elems` (`0`: one frame; RAW: the data as it is).
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
    // the regions: equal parts of the batch, summing to the batch's histogram
    assert_eq!(s.batch_words, 3 << 20);
    assert_eq!((s.region_of(0), s.region_of((3 << 20) - 1)), (0, REGIONS - 1));
    assert_eq!(s.region_of(3 << 16), 1);
    assert_eq!(s.region_of((3 << 16) - 1), 0);
    for sym in 0..256 {
        assert_eq!(s.region_counts.iter().map(|r| r[sym]).sum::<u32>(), s.counts[sym]);
    }
    for r in &s.region_counts {
        let n = r.iter().sum::<u32>();
        assert!(n.abs_diff(s.symbols / REGIONS as u32) <= CHUNK_WORDS as u32, "{n}");
    }
    let small = normal::<F8E4M3>(1001, 1.0, 2);
    let s = Sample::of::<F8E4M3>(&small);
    // 1001 fp8 values are 501 split words, the last with one value
    assert_eq!(s.symbols, 501);
    assert_eq!(s.sub_blocks, 501usize.div_ceil(32) as u32);
    // sampled whole: region r holds the words i with i * 16 / 501 == r
    for (r, counts) in s.region_counts.iter().enumerate() {
        let words = (0..501).filter(|i| i * REGIONS / 501 == r).count();
        assert_eq!(counts.iter().sum::<u32>() as usize, words, "region {r}");
    }
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

#[test]
fn window_choice_is_the_encoders() {
    let mut rng = Rng(13);
    let mut cases: Vec<(&str, u32, Vec<u8>)> = vec![
        (
            "bf16 N(0,1)",
            8,
            (0..5000)
                .map(|_| (Bf16::from_f32(rng.normal() as f32) >> 7) as u8)
                .collect(),
        ),
        ("uniform bytes", 8, (0..3000).map(|_| rng.next_u64() as u8).collect()),
        (
            "5-bit, skewed",
            5,
            (0..3000)
                .map(|_| (rng.next_u64().trailing_zeros() % 32) as u8)
                .collect(),
        ),
        ("3-bit", 3, (0..700).map(|_| rng.below(8) as u8).collect()),
    ];
    // e4m3 N(0, 0.03^2) pairs, with zeros and a far outlier channel
    let e4m3 = normal::<F8E4M3>(8000, 0.03, 14);
    let mut pairs: Vec<u8> = e4m3
        .chunks(2)
        .map(|p| F8E4M3::split(p[0] as u16 | (p[1] as u16) << 8).0)
        .collect();
    pairs.iter_mut().step_by(97).for_each(|s| *s = 0xF0);
    pairs.iter_mut().step_by(13).for_each(|s| *s = 0);
    cases.push(("e4m3 pairs, zeros and outliers", 8, pairs));
    for (name, bits, syms) in &cases {
        let mut counts = [0u32; 256];
        syms.iter().for_each(|&s| counts[s as usize] += 1);
        let host = choose_window(syms.len(), *bits, |lo, shift| {
            let mut bins = [0u32; BINS];
            for (s, &c) in counts.iter().enumerate() {
                if let Some(d) = window_bin(s as u32, lo, shift) {
                    bins[d] += c;
                }
            }
            bins
        });
        let buf = SharedBuf::new(ExpWindow::max_coded_len(syms.len(), *bits), 0);
        let coded = common::one_warp::<32, _>(|w| ExpWindow::encode(w, syms.len(), *bits, |i| syms[i], buf.out()))
            .expect("encode");
        let warp = Window {
            k: (coded.params >> 8) as u32,
            base: (coded.params & 0xFF) as u32,
            escapes: coded.params2 as usize,
        };
        assert_eq!(host, warp, "{name}");
        assert_eq!(host.coded_bytes(syms.len()), coded.len, "{name}");
    }
}

/// `predicted / realized - 1` of `codec` for `data` in frames of `frame_elems`, printed.
fn prediction_error<T: Split>(what: &str, codec: CodecId, data: &[T::Bits], frame_elems: usize) -> f64
where
    T::Bits: Sync,
{
    let predicted = predict::<T>(&Sample::of::<T>(data), data.len(), frame_elems).get(codec);
    let realized = realized_codec::<T>(codec, data, frame_elems);
    let raw = (data.len() * T::DTYPE.size_bytes()) as f64;
    let error = predicted as f64 / realized as f64 - 1.0;
    println!(
        "{what}, {codec:?}: predicted ratio {:.4}, realized {:.4}, error {:+.2}%",
        predicted as f64 / raw,
        realized as f64 / raw,
        100.0 * error
    );
    error
}

#[test]
fn expwindow_predictions_within_3_percent() {
    let (n, frame) = (1 << 20, 1 << 16);
    let errors = [
        prediction_error::<Bf16>("bf16 N(0,1)", CodecId::ExpWindow, &normal::<Bf16>(n, 1.0, 21), frame),
        prediction_error::<F8E4M3>("e4m3 N(0,1)", CodecId::ExpWindow, &normal::<F8E4M3>(n, 1.0, 22), frame),
        // weight-like: most values subnormal or in the lowest binades
        prediction_error::<F8E4M3>(
            "e4m3 N(0,0.03^2)",
            CodecId::ExpWindow,
            &normal::<F8E4M3>(n, 0.03, 25),
            frame,
        ),
        prediction_error::<F8E5M2>("e5m2 N(0,1)", CodecId::ExpWindow, &normal::<F8E5M2>(n, 1.0, 23), frame),
        // gradient-like: N(0, 2^-12) scaled by 2^12 as for an e5m2 all-reduce
        prediction_error::<F8E5M2>(
            "e5m2 N(0,0.5^2)",
            CodecId::ExpWindow,
            &normal::<F8E5M2>(n, 0.5, 24),
            frame,
        ),
    ];
    for e in errors {
        assert!(e.abs() <= 0.03, "ExpWindow predicted {:+.2}% off", 100.0 * e);
    }
}

/// Half N(0,1), half N(0, 1e-3^2) (the first `n / 2` elements, then the rest) as elements of `T`.
fn two_scales<T: F32Exact>(n: usize, seed: u64) -> Vec<T::Bits> {
    let mut data = normal::<T>(n / 2, 1.0, seed);
    data.extend(normal::<T>(n - n / 2, 1e-3, seed + 1));
    data
}

#[test]
fn two_scale_tensors_are_predicted_per_frame() {
    let (n, frame) = (1 << 20, 1 << 16);
    let bf16 = two_scales::<Bf16>(n, 31);
    let e5m2 = two_scales::<F8E5M2>(n, 33);
    let one = two_scales::<Bf16>(1 << 17, 35);
    let mut errors = Vec::new();
    for codec in [CodecId::ExpWindow, CodecId::ExpAns, CodecId::Huffman] {
        // the two halves in separate frames: every frame's own table codes one scale
        errors.push((codec, prediction_error::<Bf16>("bf16 two scales", codec, &bf16, frame)));
        errors.push((
            codec,
            prediction_error::<F8E5M2>("e5m2 two scales", codec, &e5m2, frame),
        ));
        // both halves in one frame: its table codes the mixture, and the prediction must see that
        errors.push((
            codec,
            prediction_error::<Bf16>("bf16 two scales, one frame", codec, &one, 0),
        ));
    }
    for (codec, e) in errors {
        assert!(e.abs() <= 0.03, "{codec:?}: predicted {:+.2}% off", 100.0 * e);
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
    // ExpAns codes N(0,1) exponents best of the dispatched codecs ...
    let predictions = net.plan.predictions.expect("sampled");
    for c in [CodecId::FixedLen, CodecId::ExpWindow, CodecId::Huffman] {
        assert!(
            predictions.get(CodecId::ExpAns) < predictions.get(c),
            "{c:?}: {predictions:?}"
        );
    }
    // ... and the wire is the slowest stage on NET, so the smallest codec is the fastest;
    // ExpWindow, 6% larger and 1.8 times as fast to encode, is predicted slower
    assert_eq!(net.codec, CodecId::ExpAns);
    let frame_bytes = 2 * frame_elems as u64;
    let window_s = NET.time_s(
        CodecId::ExpWindow,
        capacity,
        predictions.get(CodecId::ExpWindow),
        frame_bytes,
    );
    assert!(
        choice.predicted_s < window_s && window_s < choice.predicted_s * 1.1,
        "{window_s} vs {choice:?}"
    );
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

/// A small GPT's parameters concatenated in `model.parameters()` order, as
/// `benches/gpu/make_tensors.py` writes its weights (a quarter of its width and an eighth of its
/// vocabulary, two layers: 3.76 M values, 58 frames of 65536): the
/// embedding N(0,1), positions N(0, 0.02^2), per layer LayerNorms near 1 and 0, the attention
/// and MLP matrices and biases uniform within PyTorch's initialization bounds, then the head.
fn gpt_like_weights<T: F32Exact>(seed: u64) -> Vec<T::Bits> {
    let (vocab, d, layers, seq) = (4000, 256, 2, 512);
    let mut rng = Rng(seed);
    let mut w: Vec<f64> = Vec::new();
    let mut normal = |w: &mut Vec<f64>, n: usize, mean: f64, sigma: f64| {
        w.extend((0..n).map(|_| mean + sigma * rng.normal()));
    };
    let mut rng2 = Rng(seed ^ 0x5555);
    let mut uniform = |w: &mut Vec<f64>, n: usize, a: f64| w.extend((0..n).map(|_| a * (2.0 * rng2.unit() - 1.0)));
    let df = d as f64;
    normal(&mut w, vocab * d, 0.0, 1.0);
    normal(&mut w, seq * d, 0.0, 0.02);
    for _ in 0..layers {
        normal(&mut w, d, 1.0, 0.003);
        normal(&mut w, d, 0.0, 0.003);
        uniform(&mut w, 3 * d * d, (6.0 / (4.0 * df)).sqrt());
        normal(&mut w, 3 * d, 0.0, 0.003);
        uniform(&mut w, d * d, 1.0 / df.sqrt());
        normal(&mut w, d, 0.0, 0.003);
        normal(&mut w, d, 1.0, 0.003);
        normal(&mut w, d, 0.0, 0.003);
        uniform(&mut w, 4 * d * d, 1.0 / df.sqrt());
        uniform(&mut w, 4 * d, 1.0 / df.sqrt());
        uniform(&mut w, 4 * d * d, 1.0 / (4.0 * df).sqrt());
        uniform(&mut w, d, 1.0 / (4.0 * df).sqrt());
    }
    normal(&mut w, d, 1.0, 0.003);
    normal(&mut w, d, 0.0, 0.003);
    uniform(&mut w, vocab * d, 1.0 / df.sqrt());
    w.into_iter().map(|x| T::from_f32(x as f32)).collect()
}

#[test]
fn gpt_like_weights_are_predicted_per_frame() {
    // the shape of the weights the H200 runs measured (realized vs predicted, one histogram of the
    // whole batch): weights_bf16 ExpWindow 0.6965 vs 0.7524, ExpAns 0.6448 vs 0.6988
    let frame = 1 << 16;
    let bf16 = gpt_like_weights::<Bf16>(41);
    let e4m3 = gpt_like_weights::<F8E4M3>(41);
    let mut errors = Vec::new();
    for codec in [CodecId::ExpWindow, CodecId::ExpAns, CodecId::Huffman] {
        errors.push((
            codec,
            prediction_error::<Bf16>("bf16 GPT-like weights", codec, &bf16, frame),
        ));
        errors.push((
            codec,
            prediction_error::<F8E4M3>("e4m3 GPT-like weights", codec, &e4m3, frame),
        ));
    }
    for (codec, e) in errors {
        assert!(e.abs() <= 0.03, "{codec:?}: predicted {:+.2}% off", 100.0 * e);
    }
}

#[test]
fn few_coding_warps_go_raw_unless_the_link_is_slow() {
    let n = 1 << 18;
    let frame_elems = 1 << 15;
    let data = normal::<Bf16>(n, 1.0, 3);
    let capacity = (2 * n) as u64;
    // 16 warps code ExpWindow at ~1.2 GB/s: slower than sending RAW over the 4.6 GB/s link
    let net16 = NET.with_coders(16);
    let d = Arbiter::new(net16).plan::<Bf16>(&data, frame_elems, capacity);
    assert_eq!(d.choice, None, "{d:?}");
    assert_eq!(d.reason, Reason::CannotWin);
    // the 8 of those 16 warps that have a frame of this batch beat a 50 MB/s link
    let slow = Arbiter::new(net16.with_bandwidth_cap(50e6)).plan::<Bf16>(&data, frame_elems, capacity);
    assert!(slow.choice.is_some(), "{slow:?}");
    // enough warps reach the whole-GPU rates, and no more
    let wide = NET.with_coders(1 << 20);
    for c in CodecId::ALL {
        assert_eq!(wide.cost(c), NET.cost(c), "{c:?}");
    }
    let some = NET.with_coders(64);
    for c in CodecId::ALL {
        let (one, all) = (some.cost(c), NET.cost(c));
        assert!(one.enc_s_per_byte >= all.enc_s_per_byte && one.dec_s_per_byte >= all.dec_s_per_byte);
        if c != CodecId::Raw {
            assert!(
                one.enc_s_per_byte > all.enc_s_per_byte,
                "{c:?}: 64 warps are below the GPU's rate"
            );
        }
    }
}

/// Block channels code ExpAns with the whole block, the other codecs with one warp; never faster
/// than the whole GPU. With 64 of them over the NET preset ExpAns wins once every channel has a
/// frame (32 MiB of frames of 512 KiB: predicted 1.18x; measured on an H200 over loopback at
/// 64 MiB: 1.28x send/recv, 1.97x all_reduce, BENCHMARKS.md 2026-12-05), a batch of one frame per
/// channel for 16 of them goes RAW (encode, wire and decode one after another), and under a
/// 500 MB/s cap ExpAns wins at either size (1.49-1.52x measured, 2026-12-04).
#[test]
fn block_channels_decide_as_measured() {
    for channels in [1, 16, 64, 256] {
        let (warps, blocks) = (NET.with_coders(channels), NET.with_block_coders(channels));
        for c in CodecId::ALL {
            let (w, b, all) = (warps.cost(c), blocks.cost(c), NET.cost(c));
            assert!(b.enc_s_per_byte >= all.enc_s_per_byte && b.dec_s_per_byte >= all.dec_s_per_byte);
            if !matches!(c, CodecId::ExpAns | CodecId::Raw) {
                assert_eq!(b, w, "{c:?}: coded by the block's first warp");
            }
        }
    }
    let frame_elems = 1 << 18;
    let base = normal::<Bf16>(1 << 20, 1.0, 4);
    let net = NET.with_block_coders(64);
    let decide = |link, n: usize| {
        let data = base.repeat(n >> 20);
        Arbiter::new(link).plan::<Bf16>(&data, frame_elems, (2 * n) as u64)
    };
    let filled = decide(net, 1 << 24);
    let choice = filled.choice.expect("ExpAns once the channels are full");
    assert_eq!(choice.codec, CodecId::ExpAns, "{filled:?}");
    let gain = filled.raw_s / choice.predicted_s;
    assert!((1.1..1.3).contains(&gain), "{gain}");
    let one_frame_each = decide(net, 1 << 22);
    assert_eq!(
        (one_frame_each.choice, one_frame_each.reason),
        (None, Reason::CannotWin)
    );
    for n in [1 << 22, 1 << 24] {
        let slow = decide(net.with_bandwidth_cap(500e6), n);
        assert_eq!(slow.choice.map(|c| c.codec), Some(CodecId::ExpAns), "{slow:?}");
    }
    // NVLink: encoding alone is slower than the link with any number of block channels
    for channels in [64, 256, 1 << 20] {
        assert!(Arbiter::new(NVLINK.with_block_coders(channels)).never_codes());
    }
}

/// `never_codes` is exact where it says yes: the gate then decides RAW at every size and frame
/// size; where it says no, some batch gets past the gate (to be sampled).
#[test]
fn never_codes_means_the_gate_decides_raw_at_every_size() {
    let links = [
        (NVLINK.with_coders(64), true),
        (NVLINK, true),
        (NVLINK.with_bandwidth_cap(10e9), false),
        (NET.with_coders(16), true),
        (NET.with_coders(64), true),
        (NET, false),
        (NET.with_coders(16).with_bandwidth_cap(100e6), false),
        (NET.with_block_coders(64), false),
        (NVLINK.with_block_coders(64), true),
    ];
    for (link, never) in links {
        let arbiter = Arbiter::new(link);
        assert_eq!(arbiter.never_codes(), never, "{}: {link:?}", link.name);
        let mut passed = false;
        for log_n in 0..31 {
            for frame_elems in [64, 4096, 1 << 18] {
                let gated = arbiter.gate::<Bf16>(1 << log_n, frame_elems, u64::MAX);
                assert!(
                    !never || gated.is_some(),
                    "{}: n 2^{log_n} frames {frame_elems}",
                    link.name
                );
                passed |= gated.is_none();
            }
        }
        assert_eq!(
            passed, !never,
            "{}: a batch reaches the sample iff a codec may win",
            link.name
        );
    }
}

/// RAW's time is the wire's alone, bit for bit, whatever the frames and channels: the case
/// the pipeline property below once found 1 ulp apart (`(1 - q) w + q w` rounds).
#[test]
fn raw_time_ignores_frames_exactly() {
    for channels in [1, 10, 64] {
        for gbps in [0.5f32, 2.496489, 25.0] {
            let link = NET.with_bandwidth_cap(gbps * 1e9).with_block_coders(channels);
            for log_raw in 16..34 {
                let raw = 1u64 << log_raw;
                for log_frame in 12..22 {
                    let t = link.time_s(CodecId::Raw, raw, raw, 1 << log_frame);
                    assert_eq!(
                        t,
                        link.raw_time_s(raw),
                        "{channels} channels, {gbps} GB/s, 2^{log_raw} in 2^{log_frame}"
                    );
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 512,
        failure_persistence: Some(Box::new(FileFailurePersistence::Off)),
        ..ProptestConfig::default()
    })]

    /// The pipeline model (`model`'s docs): RAW's time ignores frames and channels; a batch with
    /// one frame per channel pays encode, wire and decode one after another; a batch of many
    /// frames per channel approaches its slowest stage; time grows with the wire bytes, and
    /// `max_wire_bytes` is the most that stays within a budget.
    #[test]
    fn pipeline_model_fills_then_streams(
        log_raw in 16u32..34,
        log_frame in 12u32..22,
        channels in 1u32..300,
        gbps in 0.1f32..400.0,
        cut in 0.01f32..1.0,
        spare in 0.5f32..4.0,
    ) {
        let link = NET.with_bandwidth_cap(gbps * 1e9).with_block_coders(channels);
        let (raw, frame) = (1u64 << log_raw, 1u64 << log_frame);
        let wire = (raw as f32 * cut) as u64;
        let c = CodecId::ExpAns;
        let (t, b) = (|w, f| link.time_s(c, raw, w, f), link.bandwidth_bytes_per_s);
        prop_assert_eq!(link.time_s(CodecId::Raw, raw, raw, frame), link.raw_time_s(raw));
        prop_assert!((link.raw_time_s(raw) - link.latency_s - raw as f32 / b).abs() <= 1e-6 * link.raw_time_s(raw));
        // the stages of this batch at the rate of the channels that have a frame
        let active = raw.div_ceil(frame).min(channels as u64) as f32;
        let (one, all) = (link.coders.expect("block coders").one[c as usize], NET.cost(c));
        let e = (one.enc_s_per_byte / active).max(all.enc_s_per_byte) * raw as f32;
        let d = (one.dec_s_per_byte / active).max(all.dec_s_per_byte) * raw as f32;
        let (w_s, fixed) = (wire as f32 / b, link.latency_s + all.fixed_s);
        let serial = fixed + e + w_s + d;
        let streamed = fixed + e.max(w_s).max(d);
        let got = t(wire, frame);
        prop_assert!(got <= serial * 1.0001 && got >= streamed * 0.9999, "{} not in [{}, {}]", got, streamed, serial);
        if raw <= frame * channels as u64 {
            prop_assert!((got - serial).abs() <= 1e-4 * serial, "one frame each: {} vs {}", got, serial);
        }
        // fill and drain are the channels' first frames: a quarter of the batch or less
        if raw >= 4 * frame * channels as u64 {
            let filled = streamed + (serial - streamed) / 4.0;
            prop_assert!(got <= filled * 1.0001, "{} over {} ({} .. {})", got, filled, streamed, serial);
        }
        // more frames per channel: closer to the slowest stage
        prop_assert!(t(wire, frame / 2) <= got * 1.0001);
        prop_assert!(t(wire + raw / 8, frame) >= got);
        // max_wire_bytes inverts time_s
        let budget = streamed * spare;
        let most = link.max_wire_bytes(c, raw, frame, budget);
        if most > 0 {
            prop_assert!(t(most, frame) <= budget * 1.001, "{} over {}", t(most, frame), budget);
        }
        let more = most + most / 100 + 1 + (b * 1e-6) as u64;
        prop_assert!(t(more, frame) > budget * 0.999, "{} within {} at {} bytes", t(more, frame), budget, more);
    }
}
