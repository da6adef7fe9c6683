//! Round trips: exhaustive over every word of the 16-bit splits (bf16, f16, and fp8 pairs),
//! special values, random frames (proptest), with frames encoded on 32 and 64 lanes compared
//! byte for byte and decoded on both.

use crate::data::{exhaustive_frames, fp8_frames};
use crate::harness::{roundtrip, roundtrip_cross, Encoder, Ty};
use crate::util::Rng;
use zipcoll_device::codec::CodecId;

/// Every word of a 16-bit split (bf16, f16) once, in frames of a few consecutive symbols
/// where every symbol and raw part meets every lane position (pass A: round trip on both
/// widths; a split coder must code every frame), then again with the symbol groups shifted by
/// half a group and the positions reshuffled (pass B: encoded on 32 lanes, decoded on 64).
pub fn exhaustive_16<E: Encoder, T: Ty>() {
    let a = exhaustive_frames::<T>(0, 11);
    let stats = roundtrip::<E, T>(&a);
    if E::ID != CodecId::Raw {
        assert_eq!(
            stats.coded,
            stats.frames,
            "{:?} {:?}: pass A frames should all be coded",
            E::ID,
            T::DTYPE
        );
    }
    let group = if T::SYMBOL_BITS == 8 { 8 } else { 4 };
    roundtrip_cross::<E, T>(&exhaustive_frames::<T>(group / 2, 12));
}

/// Every value of an fp8 type at every position of a 64-lane step, in frames of even and of
/// odd length.
pub fn exhaustive_fp8<E: Encoder, T: Ty>() {
    roundtrip::<E, T>(&fp8_frames::<T>(false));
    roundtrip::<E, T>(&fp8_frames::<T>(true));
}

/// Frames of special values, all-equal frames, and every length around the 32- and 64-lane
/// steps: lengths 0..=130 of a mix of specials and N(0,1) values, all-equal frames of random
/// lengths below 300, and one frame of each random kind.
pub fn specials_and_lengths<E: Encoder, T: Ty>() {
    let mut rng = Rng(21);
    let mut inputs: Vec<Vec<T::Bits>> = (0..=130)
        .map(|n| {
            (0..n)
                .map(|i| {
                    if i % 3 == 0 {
                        T::special(&mut rng)
                    } else {
                        T::random_elems(1, i as u64, 1)[0]
                    }
                })
                .collect()
        })
        .collect();
    for _ in 0..8 {
        let v = T::special(&mut rng);
        let n = rng.below(300) as usize;
        inputs.push(vec![v; n]);
    }
    for kind in 0..5 {
        inputs.push(T::random_elems(kind, 100 + kind as u64, 250 + kind as usize));
    }
    roundtrip::<E, T>(&inputs);
}

/// One proptest case: a batch of random frames of the given kinds, seeds and lengths.
pub fn random_batch<E: Encoder, T: Ty>(frames: &[(u32, u64, usize)]) {
    let inputs: Vec<Vec<T::Bits>> = frames.iter().map(|(k, s, n)| T::random_elems(*k, *s, *n)).collect();
    roundtrip::<E, T>(&inputs);
}

/// The proptest strategy of [`random_batch`]'s argument: up to 6 frames, each of a random kind,
/// seed and length `0..=3 * 64 + 1`.
pub fn batch_strategy() -> impl proptest::strategy::Strategy<Value = Vec<(u32, u64, usize)>> {
    use proptest::prelude::*;
    prop::collection::vec((0u32..5, any::<u64>(), 0usize..=193), 1..=6)
}
