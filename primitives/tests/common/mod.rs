//! What the collective tests share: inputs, the buffers of one collective on every rank, and the
//! check against the scalar references.

#![allow(dead_code)]

use crate::sim_net::{Channel, Link, Net};
use zipcoll_device::dtype::{Elem, F32Exact, Split, F64};
use zipcoll_device::reduce::RedOp;
use zipcoll_primitives::collectives::{
    all_gather_reference, all_to_all_reference, reduce_reference, reduce_scatter_reference, ring_all_reduce_reference,
    two_shot_all_reduce_reference, Coll,
};
use zipcoll_primitives::prims::Compression;
use zipcoll_targets::Word;

/// Elements per frame in the sweeps: small, so a few hundred elements span several loops.
pub const FRAME_ELEMS: usize = 24;
/// Slots that fit a frame of `FRAME_ELEMS` f32 elements.
pub const SLOT_BYTES: usize = 512;

/// A small deterministic generator (xorshift64).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// Uniform in `lo..hi` (`lo < hi`).
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next() % (hi - lo) as u64) as usize
    }
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
}

/// A dtype the collective tests run: its values made from f32 samples.
pub trait Gen: Split {
    /// `x` as this type: rounded for the floats; `x * 8` truncated toward zero, wrapped to the
    /// width, for the integers (NaN becomes 0, infinities the extremes).
    fn from_f32(x: f32) -> Self::Bits;
    /// NaNs with different payloads and signs (none for the integers).
    fn nans() -> Vec<Self::Bits>;
}

/// `impl Gen` for float types reduced through f32: the canonical NaN, its negation, and (where
/// it is a NaN) the canonical one with the lowest bit cleared.
macro_rules! gen_f32_exact {
    ($($t:ident),*) => {$(
        impl Gen for zipcoll_device::dtype::$t {
            fn from_f32(x: f32) -> Self::Bits {
                <Self as F32Exact>::from_f32(x)
            }
            fn nans() -> Vec<Self::Bits> {
                let c = Self::CANONICAL_NAN.to_bits64();
                let sign = 1u64 << (8 * <Self as Elem>::DTYPE.size_bytes() - 1);
                [c, c | sign, c ^ 1]
                    .into_iter()
                    .map(<Self::Bits as Word>::from_bits64)
                    .filter(|&b| Self::to_f32(b).is_nan())
                    .collect()
            }
        }
    )*};
}
gen_f32_exact!(Bf16, F16, F32, F8E4M3, F8E5M2);

impl Gen for F64 {
    fn from_f32(x: f32) -> u64 {
        f64::from(x).to_bits()
    }
    fn nans() -> Vec<u64> {
        vec![0x7FFF_FFFF_FFFF_FFFF, 0xFFF8_0000_0000_0000, 0x7FF0_0000_0000_0001]
    }
}

/// `impl Gen` for the integer types.
macro_rules! gen_int {
    ($($t:ident),*) => {$(
        impl Gen for zipcoll_device::dtype::$t {
            fn from_f32(x: f32) -> Self::Bits {
                // `as` saturates (NaN to 0); then wrap into the width
                <Self::Bits as Word>::from_bits64((x * 8.0) as i64 as u64)
            }
            fn nans() -> Vec<Self::Bits> {
                Vec::new()
            }
        }
    )*};
}
gen_int!(I8, U8, I32, U32, I64, U64);

/// Rank `r`'s input of `n` elements (seeded): roughly normal values, with -0.0, infinities,
/// NaNs of several payloads and a large value sprinkled in (integers: values of either sign,
/// and the extremes of the width where the floats have infinities).
pub fn input<T: Gen>(r: usize, n: usize, seed: u64) -> Vec<T::Bits> {
    let mut g = Rng(0x9E37_79B9_7F4A_7C15 ^ (r as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03) ^ seed);
    let nans = T::nans();
    (0..n)
        .map(|i| {
            let x = match (i + 3 * r + seed as usize) % 97 {
                7 => -0.0,
                50 if r.is_multiple_of(3) => f32::INFINITY,
                51 if r % 4 == 1 => f32::NEG_INFINITY,
                66 if r % 2 == 1 && !nans.is_empty() => return nans[(i / 97 + r) % nans.len()],
                90 => 300.0,
                _ => (g.unit() + g.unit() + g.unit() - 1.5) * 2.0,
            };
            T::from_f32(x)
        })
        .collect()
}

/// A filler no collective writes (to see what stays untouched).
pub fn fill<T: Gen>() -> T::Bits {
    T::from_f32(-7.0)
}

/// Elements of `src` and `dst` per rank for `coll` with `count`.
pub fn lens(coll: Coll, k: usize, count: usize) -> (usize, usize) {
    match coll {
        Coll::AllGather => (count, k * count),
        Coll::ReduceScatter => (k * count, count),
        Coll::AllToAll => (k * count, k * count),
        _ => (count, count),
    }
}

/// What rank `r`'s output buffer must hold after `coll` (out of place: `dst`; in place: the one
/// buffer), from the inputs and, where nothing is written, the buffer's initial contents.
pub fn expected<T: Gen, O: RedOp>(
    coll: Coll,
    root: usize,
    count: usize,
    inputs: &[&[T::Bits]],
    r: usize,
    initial: &[T::Bits],
) -> Vec<T::Bits> {
    let mut out = initial.to_vec();
    let op = O::new::<T>(inputs.len() as u32);
    match coll {
        Coll::RingAllReduce => ring_all_reduce_reference::<T, O>(op, inputs, &mut out, FRAME_ELEMS),
        Coll::TwoShotAllReduce => two_shot_all_reduce_reference::<T, O>(op, inputs, &mut out, FRAME_ELEMS),
        Coll::AllGather => all_gather_reference::<T>(inputs, &mut out),
        Coll::ReduceScatter => {
            let mut block = vec![T::Bits::default(); count];
            reduce_scatter_reference::<T, O>(op, inputs, r, &mut block);
            let at = if out.len() == count { 0 } else { r * count };
            out[at..at + count].copy_from_slice(&block);
        }
        Coll::Reduce if r == root => reduce_reference::<T, O>(op, inputs, root, &mut out),
        Coll::Reduce => {}
        Coll::Broadcast => out.copy_from_slice(inputs[root]),
        Coll::AllToAll => all_to_all_reference::<T>(inputs, r, &mut out),
        Coll::Send | Coll::Recv => unreachable!("not a collective"),
    }
    out
}

/// Runs `coll` on a fresh net (`nranks` x `nparts`) with `count` and compression `E`, in place
/// or not, and checks every rank's output bit for bit against the reference.
#[allow(clippy::too_many_arguments)]
pub fn check<T: Gen, O: RedOp, E: Compression>(
    coll: Coll,
    nranks: usize,
    nparts: usize,
    root: usize,
    count: usize,
    in_place: bool,
    seed: u64,
) {
    check_on::<T, O, E>(
        Channel::Warp,
        Link::Sim,
        coll,
        nranks,
        nparts,
        root,
        count,
        in_place,
        seed,
    );
}

/// [`check`] with every channel driven by a team of the `channel`'s kind, over FIFOs of the
/// `link`'s kind.
#[allow(clippy::too_many_arguments)]
pub fn check_on<T: Gen, O: RedOp, E: Compression>(
    channel: Channel,
    link: Link,
    coll: Coll,
    nranks: usize,
    nparts: usize,
    root: usize,
    count: usize,
    in_place: bool,
    seed: u64,
) {
    let k = nranks;
    let (slen, dlen) = lens(coll, k, count);
    // the inputs as the reference sees them: `slen` elements per rank
    let inputs: Vec<Vec<T::Bits>> = (0..k).map(|r| input::<T>(r, slen, seed)).collect();
    // in place: one buffer per rank holding the input where the collective reads it
    let mut srcs: Vec<Vec<T::Bits>> = Vec::new();
    let mut dsts: Vec<Vec<T::Bits>> = (0..k)
        .map(|r| {
            let mut d = vec![fill::<T>(); dlen];
            if in_place {
                match coll {
                    Coll::AllGather => d[r * count..(r + 1) * count].copy_from_slice(&inputs[r]),
                    _ => d.copy_from_slice(&inputs[r][..dlen.min(slen)]),
                }
            }
            d
        })
        .collect();
    if in_place && coll == Coll::ReduceScatter {
        // the one buffer is `src` (k * count); `dst` is its block r
        dsts = inputs.clone();
    }
    if !in_place {
        srcs = inputs.clone();
    }
    let initial = dsts.clone();
    let mut net = Net::new(k, nparts, SLOT_BYTES);
    net.link = link;
    let size = T::DTYPE.size_bytes();
    let warps: Vec<Vec<_>> = (0..k * nparts)
        .map(|i| {
            let (r, part) = (i / nparts, i % nparts);
            let base = dsts[r].as_mut_ptr().cast::<u8>();
            let (src, dst) = if in_place {
                match coll {
                    Coll::AllGather => (base.wrapping_add(r * count * size).cast_const(), base),
                    Coll::ReduceScatter => (base.cast_const(), base.wrapping_add(r * count * size)),
                    _ => (base.cast_const(), base),
                }
            } else {
                (srcs[r].as_ptr().cast::<u8>(), base)
            };
            let mut work = net.work(coll, r, part, root, src, dst, count, FRAME_ELEMS);
            work.scalar = T::DTYPE.avg_scalar(k as u32).unwrap_or(0);
            vec![work]
        })
        .collect();
    let results = net.run_on::<T, O, E>(&warps, channel);
    let views: Vec<&[T::Bits]> = inputs.iter().map(Vec::as_slice).collect();
    for (i, result) in results.iter().enumerate() {
        assert_eq!(
            *result,
            Ok(()),
            "{coll:?} {:?} {:?} k {k} parts {nparts} count {count} in place {in_place} {channel:?} {link:?}: list {i}",
            T::DTYPE,
            O::OP
        );
    }
    for r in 0..k {
        let want = expected::<T, O>(coll, root, count, &views, r, &initial[r]);
        let got = &dsts[r];
        let bad = got.iter().zip(&want).position(|(a, b)| a != b);
        assert!(
            bad.is_none() && got.len() == want.len(),
            "{coll:?} {:?} {:?} k {k} parts {nparts} root {root} count {count} in place {in_place} seed {seed} {channel:?} \
             {link:?}: \
             rank {r} element {bad:?} differs: got {:?} want {:?}",
            T::DTYPE,
            O::OP,
            bad.map(|b| got[b]),
            bad.map(|b| want[b]),
        );
    }
}

/// The collectives (every [`Coll`] but send / recv).
pub const COLLECTIVES: [Coll; 7] = [
    Coll::RingAllReduce,
    Coll::TwoShotAllReduce,
    Coll::AllGather,
    Coll::ReduceScatter,
    Coll::Reduce,
    Coll::Broadcast,
    Coll::AllToAll,
];

/// Elements one loop of `coll` covers with `k` ranks.
pub fn loop_elems(coll: Coll, k: usize) -> usize {
    match coll {
        Coll::RingAllReduce | Coll::TwoShotAllReduce => k * FRAME_ELEMS,
        _ => FRAME_ELEMS,
    }
}

/// Sizes: 0, 1, less than a loop, and several loops with a partial last one.
pub fn sizes(coll: Coll, k: usize, g: &mut Rng) -> [usize; 4] {
    let l = loop_elems(coll, k);
    [0, 1, g.range(2, l), 3 * l + g.range(1, l)]
}
