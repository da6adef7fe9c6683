//! `warp_all_reduce` on the CPU simulator, 32- and 64-lane warps, every dtype and op: every
//! lane's result equals `warp_all_reduce_reference` of the warp's values bit for bit.

use crate::reference::{specials, Format, Rng};
use std::sync::atomic::{AtomicU32, Ordering};
use zipcoll_device::dtype::{Bf16, DType, F32Exact, F16, F32, F8E4M3, F8E5M2};
use zipcoll_device::reduce::{Avg, Max, Min, Prod, RedOp, Sum};
use zipcoll_device::warp_reduce::{warp_all_reduce, warp_all_reduce_reference};
use zipcoll_targets::sim::{launch, LaunchConfig, SimWarp};
use zipcoll_targets::{Grid, Warp, Word};

/// Blocks per launch and warps per block.
const GRID: u32 = 2;
const WARPS_PER_BLOCK: u32 = 2;
/// Reductions each lane performs per launch; round `r` draws inputs of kind `r % 3`.
const ROUNDS: usize = 30;

fn bits<T: F32Exact>(b: u32) -> T::Bits {
    T::Bits::from_bits64(b as u64)
}

fn raw<B: Word>(b: B) -> u32 {
    b.to_bits64() as u32
}

/// A random pattern of `d`. Kind 0: values near 1, subnormals, ±0; kind 1: also ±inf and the
/// largest values; kind 2: also NaNs with assorted payloads.
fn draw(d: DType, kind: usize, rng: &mut Rng) -> u32 {
    let (exp, man) = match d {
        DType::F32 => (8, 23),
        _ => (Format::of(d).exp, Format::of(d).man),
    };
    let bias = (1u64 << (exp - 1)) - 1;
    let sign = (rng.below(2) << (exp + man)) as u32;
    let mantissa = rng.below(1 << man) as u32;
    match rng.below(8) {
        0 if kind > 0 => {
            let s = specials(d);
            let s: Vec<u32> = s.into_iter().filter(|&x| kind == 2 || !is_nan(d, x)).collect();
            s[rng.below(s.len() as u64) as usize]
        }
        0 => sign,
        1 => sign | mantissa,
        _ => sign | ((bias + rng.below(7) - 3) << man) as u32 | mantissa,
    }
}

fn is_nan(d: DType, x: u32) -> bool {
    match d {
        DType::F32 => f32::from_bits(x).is_nan(),
        _ => Format::of(d).is_nan(x),
    }
}

/// Runs `ROUNDS` warp reductions on `W`-lane warps; checks every lane against the reference.
fn check<const W: u32, T: F32Exact, O: RedOp + Sync>(op: O, seed: u64) {
    let threads = (GRID * WARPS_PER_BLOCK * W) as usize;
    let mut rng = Rng(seed);
    let inputs: Vec<u32> = (0..ROUNDS * threads)
        .map(|i| draw(T::DTYPE, i / threads % 3, &mut rng))
        .collect();
    let out: Vec<AtomicU32> = inputs.iter().map(|_| AtomicU32::new(0)).collect();
    launch::<W>(LaunchConfig::new(GRID, WARPS_PER_BLOCK * W), |w: SimWarp<W>| {
        let t = w.global_idx();
        for r in 0..ROUNDS {
            let v = bits::<T>(inputs[r * threads + t]);
            let got = warp_all_reduce::<_, T, O>(w, op, v);
            out[r * threads + t].store(raw(got), Ordering::Relaxed);
        }
    })
    .unwrap();
    for (warp, (lanes, outs)) in inputs.chunks(W as usize).zip(out.chunks(W as usize)).enumerate() {
        let values: Vec<T::Bits> = lanes.iter().map(|&x| bits::<T>(x)).collect();
        let want = raw(warp_all_reduce_reference::<T, O>(&values, op).unwrap());
        for (lane, o) in outs.iter().enumerate() {
            let got = o.load(Ordering::Relaxed);
            assert_eq!(
                got,
                want,
                "{:?} {:?} W={W} warp {warp} lane {lane}: inputs {lanes:x?}",
                T::DTYPE,
                O::OP
            );
        }
    }
}

fn every_op<const W: u32, T: F32Exact>(seed: u64) {
    check::<W, T, Sum>(Sum, seed);
    check::<W, T, Prod>(Prod, seed + 1);
    check::<W, T, Min>(Min, seed + 2);
    check::<W, T, Max>(Max, seed + 3);
    check::<W, T, Avg>(Avg::new::<T>(W * GRID * WARPS_PER_BLOCK), seed + 4);
    check::<W, T, Avg>(Avg::new::<T>(3), seed + 5);
}

#[test]
fn warp32_bf16_f16() {
    every_op::<32, Bf16>(10);
    every_op::<32, F16>(20);
}

#[test]
fn warp32_f32_fp8() {
    every_op::<32, F32>(30);
    every_op::<32, F8E4M3>(40);
    every_op::<32, F8E5M2>(50);
}

#[test]
fn warp64_bf16_f16() {
    every_op::<64, Bf16>(60);
    every_op::<64, F16>(70);
}

#[test]
fn warp64_f32_fp8() {
    every_op::<64, F32>(80);
    every_op::<64, F8E4M3>(90);
    every_op::<64, F8E5M2>(100);
}

/// The order is part of the result: for these bf16 inputs the butterfly's tree and a sequential
/// left fold differ, and the warp returns the tree's bits.
#[test]
fn tree_order_is_observable() {
    // lane 0: 1.0; lanes 1..32: 2^-8, half an ulp of 1.0 each.
    let values: Vec<u16> = (0..32).map(|l| if l == 0 { 0x3F80 } else { 0x3B80 }).collect();
    let fold = values[1..]
        .iter()
        .fold(values[0], |acc, &x| Sum.combine::<Bf16>(acc, x));
    let tree = warp_all_reduce_reference::<Bf16, Sum>(&values, Sum).unwrap();
    // Each 1.0 + 2^-8 ties back to 1.0; the tree adds the small values first.
    assert_eq!(fold, 0x3F80);
    assert_ne!(tree, fold);
    let out: Vec<AtomicU32> = (0..32).map(|_| AtomicU32::new(0)).collect();
    launch::<32>(LaunchConfig::new(1, 32), |w: SimWarp<32>| {
        let t = w.thread_idx() as usize;
        out[t].store(
            warp_all_reduce::<_, Bf16, Sum>(w, Sum, values[t]) as u32,
            Ordering::Relaxed,
        );
    })
    .unwrap();
    assert!(out.iter().all(|o| o.load(Ordering::Relaxed) == tree as u32));
}

#[test]
fn reference_of_short_slices() {
    assert_eq!(warp_all_reduce_reference::<F32, Sum>(&[], Sum), None);
    let half = Avg::new::<F32>(2);
    assert_eq!(
        warp_all_reduce_reference::<F32, Avg>(&[3.0f32.to_bits()], half),
        Some(1.5f32.to_bits())
    );
    let v = [1.0f32, 2.0, 4.0, 8.0].map(f32::to_bits);
    assert_eq!(warp_all_reduce_reference::<F32, Avg>(&v, half), Some(7.5f32.to_bits()));
}
