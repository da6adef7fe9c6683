//! Every collective on the simulator transport (`sim_net`), run through work descriptors
//! (`run_works`): every rank's output bit-identical to the scalar reference, for 2..=8 ranks,
//! 1 and 3 parts, in place and out of place, sizes 0, 1, under a loop and several loops with a
//! partial last one, compression off and every forced codec; every dtype x operator on one
//! size; one rank; channels driven by whole blocks (RAW only, and a forced codec, whose frames a
//! block codes on its first warp); trusted channels (P2P's: RAW payloads used unverified); FIFOs
//! in host memory (NET's: frames coded in a frame stage).

mod common;
mod sim_net;

use common::{check, check_on, sizes, Gen, Rng, COLLECTIVES};
use sim_net::{Channel, Link};
use zipcoll_device::codec::{ExpAns, ExpWindow, FixedLen, Huffman};
use zipcoll_device::dtype::{Bf16, F16, F32, F64, F8E4M3, F8E5M2, I32, I64, I8, U32, U64, U8};
use zipcoll_device::reduce::{Avg, Max, Min, Prod, RedOp, Sum};
use zipcoll_primitives::collectives::Coll;
use zipcoll_primitives::prims::{Compression, Force, Off, RawOnly};
use zipcoll_targets::Word;

/// One case of the sweep: `coll` on `k` ranks with a rotation of parts, in-place and roots.
fn case<T: Gen, O: RedOp, E: Compression>(coll: Coll, k: usize, i: usize, g: &mut Rng) {
    let s = sizes(coll, k, g);
    let nparts = [1, 3][i % 2];
    let in_place = coll != Coll::AllToAll && (i / 2) % 2 == 1;
    let root = g.range(0, k);
    // one of the small sizes and the several-loop size
    for count in [s[i % 3], s[3]] {
        check::<T, O, E>(coll, k, nparts, root, count, in_place, g.next() % 1000);
    }
}

/// The sweep of one compression: every collective, nranks 2..=8, bf16 and f32, sum and max.
fn sweep<E: Compression>(seed: u64) {
    let mut g = Rng(seed);
    for coll in COLLECTIVES {
        for k in 2..=8 {
            let i = k + coll as usize;
            case::<Bf16, Sum, E>(coll, k, i, &mut g);
            case::<Bf16, Max, E>(coll, k, i + 1, &mut g);
            case::<F32, Sum, E>(coll, k, i + 2, &mut g);
            case::<F32, Max, E>(coll, k, i + 3, &mut g);
        }
    }
}

#[test]
fn off_matches_the_references() {
    sweep::<Off>(1);
}

#[test]
fn fixed_len_matches_the_references() {
    sweep::<Force<FixedLen>>(2);
}

#[test]
fn exp_window_matches_the_references() {
    sweep::<Force<ExpWindow>>(3);
}

#[test]
fn exp_ans_matches_the_references() {
    sweep::<Force<ExpAns>>(4);
}

#[test]
fn huffman_matches_the_references() {
    sweep::<Force<Huffman>>(5);
}

/// `coll` with `T`, `O` on 3 ranks, several loops, the compression and parts rotating with `i`.
fn one<T: Gen, O: RedOp>(coll: Coll, i: usize, g: &mut Rng) {
    let (k, count) = (3, sizes(coll, 3, g)[3]);
    let nparts = [1, 3][i % 2];
    let in_place = coll != Coll::AllToAll && i % 3 == 1;
    let root = i % k;
    let seed = g.next() % 1000;
    match i % 5 {
        0 => check::<T, O, Off>(coll, k, nparts, root, count, in_place, seed),
        1 => check::<T, O, Force<FixedLen>>(coll, k, nparts, root, count, in_place, seed),
        2 => check::<T, O, Force<ExpWindow>>(coll, k, nparts, root, count, in_place, seed),
        3 => check::<T, O, Force<ExpAns>>(coll, k, nparts, root, count, in_place, seed),
        _ => check::<T, O, Force<Huffman>>(coll, k, nparts, root, count, in_place, seed),
    }
}

/// Every operator of `T` over every collective.
fn every_op<T: Gen>(g: &mut Rng) {
    for (c, coll) in COLLECTIVES.into_iter().enumerate() {
        one::<T, Sum>(coll, c, g);
        one::<T, Prod>(coll, c + 1, g);
        one::<T, Min>(coll, c + 2, g);
        one::<T, Max>(coll, c + 3, g);
        one::<T, Avg>(coll, c + 4, g);
    }
}

#[test]
fn every_dtype_and_op_bf16_f16() {
    let mut g = Rng(11);
    every_op::<Bf16>(&mut g);
    every_op::<F16>(&mut g);
}

#[test]
fn every_dtype_and_op_f32() {
    every_op::<F32>(&mut Rng(12));
}

#[test]
fn every_dtype_and_op_fp8() {
    let mut g = Rng(13);
    every_op::<F8E4M3>(&mut g);
    every_op::<F8E5M2>(&mut g);
}

/// Every operator but Avg of the integer `T` over every collective (the integer average and
/// PreMulSum go through the host API: `comm_api`'s `integers_average_and_pre_mul_sum_as_nccl`).
fn every_int_op<T: Gen>(g: &mut Rng) {
    for (c, coll) in COLLECTIVES.into_iter().enumerate() {
        one::<T, Sum>(coll, c, g);
        one::<T, Prod>(coll, c + 1, g);
        one::<T, Min>(coll, c + 2, g);
        one::<T, Max>(coll, c + 3, g);
    }
}

/// RAW frames only (`RawOnly`: the kernels of the dtypes without symbol coders, and the
/// RAW-only block kernel of every dtype), 2..=8 ranks: 8-byte elements take the RAW fast path's
/// two-word lanes and one-element tail.
fn raw_only_sweep<T: Gen, O: RedOp>(seed: u64) {
    let mut g = Rng(seed);
    for coll in COLLECTIVES {
        for k in 2..=8 {
            case::<T, O, RawOnly>(coll, k, k + coll as usize, &mut g);
        }
    }
}

#[test]
fn every_dtype_and_op_f64() {
    every_op::<F64>(&mut Rng(15));
    raw_only_sweep::<F64, Sum>(16);
    raw_only_sweep::<F64, Avg>(17);
}

#[test]
fn every_dtype_and_op_integers() {
    let mut g = Rng(18);
    every_int_op::<I8>(&mut g);
    every_int_op::<U8>(&mut g);
    every_int_op::<I32>(&mut g);
    every_int_op::<U32>(&mut g);
    every_int_op::<I64>(&mut g);
    every_int_op::<U64>(&mut g);
    raw_only_sweep::<I64, Sum>(19);
    raw_only_sweep::<U8, Max>(20);
    raw_only_sweep::<I32, Min>(21);
}

#[test]
fn one_rank_is_a_local_copy() {
    let mut g = Rng(14);
    for coll in COLLECTIVES {
        for (i, count) in sizes(coll, 1, &mut g).into_iter().enumerate() {
            let in_place = coll != Coll::AllToAll && i % 2 == 1;
            check::<F32, Avg, Off>(coll, 1, 1 + i % 2, 0, count, in_place, 3);
            check::<F8E5M2, Prod, Force<Huffman>>(coll, 1, 1, 0, count, in_place, 4);
        }
    }
}

#[test]
fn the_inputs_hold_special_values() {
    fn has<T: Gen>() {
        let x = common::input::<T>(1, 400, 0);
        let value = |b: T::Bits| T::DTYPE.float_value(b.to_bits64()).unwrap();
        let f: Vec<f64> = x.iter().map(|&b| value(b)).collect();
        assert!(f.iter().any(|v| v.is_nan()), "{:?}", T::DTYPE);
        assert!(f.iter().any(|v| *v == 0.0 && v.is_sign_negative()), "{:?}", T::DTYPE);
        assert!(f.iter().any(|v| *v != 0.0 && v.is_finite()), "{:?}", T::DTYPE);
        let nans: Vec<_> = x.iter().filter(|&&b| value(b).is_nan()).collect();
        assert!(
            nans.windows(2).any(|w| w[0] != w[1]),
            "{:?}: one NaN payload only",
            T::DTYPE
        );
    }
    has::<Bf16>();
    has::<F16>();
    has::<F32>();
    has::<F8E4M3>();
    has::<F8E5M2>();
    has::<F64>();
    let inf = common::input::<F32>(0, 400, 0);
    assert!(inf.iter().any(|&b| f32::from_bits(b).is_infinite()));
}

/// Channels driven by blocks of 3 warps (a team size that is not a power of two, so vectors
/// and tail words fall unevenly on threads): every collective, 2..=5 ranks, 1 and 3 parts, in
/// place and not, bf16 and f32, RAW only (the fast path over the whole block, by vectors, or
/// by words for chunks that are not 16-byte aligned) and ExpAns (coded on the block's first
/// warp).
#[test]
fn block_channels_match_the_references() {
    let mut g = Rng(15);
    let block = Channel::Block(96);
    for coll in COLLECTIVES {
        for k in 2..=5 {
            let s = sizes(coll, k, &mut g);
            let (nparts, in_place) = ([1, 3][k % 2], coll != Coll::AllToAll && k % 3 != 1);
            let flipped = coll != Coll::AllToAll && !in_place;
            let root = g.range(0, k);
            let seed = g.next() % 1000;
            for count in [s[1 + k % 2], s[3]] {
                check_on::<Bf16, Sum, RawOnly>(block, Link::Sim, coll, k, nparts, root, count, in_place, seed);
                check_on::<F32, Max, RawOnly>(block, Link::Sim, coll, k, nparts, root, count, flipped, seed);
            }
            check_on::<Bf16, Avg, Force<ExpAns>>(block, Link::Sim, coll, k, nparts, root, s[3], in_place, seed);
        }
    }
}

/// Trusted channels (`ChannelDesc::trusted`, as over P2P: the RAW fast path verifies nothing
/// it receives, so steps that combine into `dst` make one pass, not two): every collective,
/// 2..=5 ranks, warps and blocks, in place and not, bf16 sum (a partial last frame too, which
/// the tail words move) and f32 max, RAW only, and ExpAns (coded frames, which are always
/// verified).
#[test]
fn trusted_channels_match_the_references() {
    let mut g = Rng(16);
    for coll in COLLECTIVES {
        for k in 2..=5 {
            let s = sizes(coll, k, &mut g);
            let team = [Channel::Block(96), Channel::Warp][k % 2];
            let (nparts, in_place) = ([3, 1][k % 2], coll != Coll::AllToAll && k % 3 != 0);
            let root = g.range(0, k);
            let seed = g.next() % 1000;
            for count in [s[2], s[3]] {
                check_on::<Bf16, Sum, RawOnly>(team, Link::P2p, coll, k, nparts, root, count, in_place, seed);
            }
            let flipped = !in_place && coll != Coll::AllToAll;
            check_on::<F32, Max, Off>(team, Link::P2p, coll, k, nparts, root, s[3], flipped, seed);
            check_on::<Bf16, Sum, Force<ExpAns>>(team, Link::P2p, coll, k, nparts, root, s[3], in_place, seed);
        }
    }
}

/// FIFOs in host memory (NET's: coded frames made and read in a frame stage and copied by
/// vectors, `ChannelDesc::frame_stage`): every collective, 2..=5 ranks, warps and blocks, in
/// place and not, every codec forced (block frames on blocks for ExpAns) and RAW, bf16 and f32.
#[test]
fn net_channels_match_the_references() {
    let mut g = Rng(17);
    for coll in COLLECTIVES {
        for k in 2..=5 {
            let s = sizes(coll, k, &mut g);
            let team = [Channel::Warp, Channel::Block(96)][k % 2];
            let (nparts, in_place) = ([1, 2][k % 2], coll != Coll::AllToAll && k % 3 != 2);
            let root = g.range(0, k);
            let seed = g.next() % 1000;
            let count = s[3];
            check_on::<Bf16, Sum, Force<ExpAns>>(team, Link::Net, coll, k, nparts, root, count, in_place, seed);
            check_on::<F32, Max, RawOnly>(team, Link::Net, coll, k, nparts, root, count, in_place, seed);
            match k {
                2 => check_on::<Bf16, Sum, Force<FixedLen>>(
                    team,
                    Link::Net,
                    coll,
                    k,
                    nparts,
                    root,
                    count,
                    in_place,
                    seed,
                ),
                3 => {
                    check_on::<F32, Sum, Force<Huffman>>(team, Link::Net, coll, k, nparts, root, count, in_place, seed)
                }
                4 => check_on::<Bf16, Max, Force<ExpWindow>>(
                    team,
                    Link::Net,
                    coll,
                    k,
                    nparts,
                    root,
                    count,
                    in_place,
                    seed,
                ),
                _ => check_on::<F32, Avg, Off>(team, Link::Net, coll, k, nparts, root, count, in_place, seed),
            }
        }
    }
}
