//! Encoding and decoding frames on simulated warps, generic over the coder, with the checks
//! every round trip makes.
//!
//! A coder under test is an [`Encoder`]: [`RawFrames`] (RAW frames only) or [`With`]`<C>` for
//! any `SymbolCoder` `C`. Adding a coder to every test is one line in `main.rs`'s
//! `codec_tests!` list.

use crate::util::{Rng, SharedBuf};
use std::marker::PhantomData;
use std::sync::Mutex;
use zipcoll_device::codec::SymbolCoder;
use zipcoll_device::codec::{decode_frame, encode_frame, encode_raw_frame, max_encoded_len, CodecId, LaneOut};
use zipcoll_device::dtype::Split;
use zipcoll_device::frame::{FrameError, FrameHeader};
use zipcoll_targets::sim::{launch, LaunchConfig, SimWarp};
use zipcoll_targets::{Lanes, Warp, Word};

/// A dtype whose storage words can be shared with simulated lanes.
pub trait Moved: Split<Bits: Send + Sync> {}
impl<T: Split<Bits: Send + Sync>> Moved for T {}

/// A coded dtype under test, with its test data (`data.rs` implements it for each).
pub trait Ty: Moved {
    /// A random special value: for a float ±0, ±inf, NaN with a random payload, a
    /// subnormal, a value near the largest, or ±1; for an integer 0, ±1, its least or largest
    /// value, or a random power of two.
    fn special(rng: &mut Rng) -> Self::Bits;
    /// `len` random elements of one of five kinds (`kind % 5`): random bits; typical values
    /// at a random scale; those with 10% specials; one value repeated; values of a narrow
    /// range with 2% random outliers.
    fn random_elems(kind: u32, seed: u64, len: usize) -> Vec<Self::Bits>;
    /// `len` typical values: for a float N(0, sigma^2) rounded to it; for an integer
    /// N(0, (64 sigma)^2) rounded (its magnitude for an unsigned type), wrapped to the type.
    fn typical(seed: u64, len: usize, sigma: f64) -> Vec<Self::Bits>;
}

/// A way to encode frames.
pub trait Encoder {
    /// The codec id of the frames it writes when they are not RAW.
    const ID: CodecId;
    fn encode<W: Warp, T: Split>(w: W, input: &[T::Bits], out: LaneOut<'_>) -> Result<usize, FrameError>;
}

/// RAW frames ([`encode_raw_frame`]).
pub struct RawFrames;

impl Encoder for RawFrames {
    const ID: CodecId = CodecId::Raw;
    fn encode<W: Warp, T: Split>(w: W, input: &[T::Bits], out: LaneOut<'_>) -> Result<usize, FrameError> {
        encode_raw_frame::<W, T>(w, input, out)
    }
}

/// Frames of symbol coder `C` ([`encode_frame`]).
pub struct With<C>(PhantomData<C>);

impl<C: SymbolCoder> Encoder for With<C> {
    const ID: CodecId = C::ID;
    fn encode<W: Warp, T: Split>(w: W, input: &[T::Bits], out: LaneOut<'_>) -> Result<usize, FrameError> {
        encode_frame::<W, T, C>(w, input, out)
    }
}

/// Warps per launch of [`per_warp`]: enough to keep the simulator's block threads busy; each
/// warp takes several items in turn (a simulated warp costs a stack per lane to set up).
const MAX_WARPS: usize = 32;

/// Runs `f(w, &items[i])` for every item on a launch of up to [`MAX_WARPS`] warps of `W`
/// lanes (4 warps per block; warp `j` takes items `j`, `j + warps`, ..); returns item `i`'s
/// result, after checking that all lanes of its warp returned the same.
pub fn per_warp<const W: u32, I: Sync, R: Clone + PartialEq + std::fmt::Debug + Send>(
    items: &[I],
    f: impl Fn(SimWarp<W>, &I) -> R + Sync,
) -> Vec<R> {
    if items.is_empty() {
        return Vec::new();
    }
    let warps_per_block = 4usize;
    let warps = items.len().min(MAX_WARPS);
    let results: Mutex<Vec<Vec<Option<R>>>> = Mutex::new(vec![vec![None; W as usize]; items.len()]);
    let blocks = warps.div_ceil(warps_per_block) as u32;
    launch::<W>(LaunchConfig::new(blocks, warps_per_block as u32 * W), |w| {
        let warp = w.global_idx() / W as usize;
        if warp < warps {
            for (i, item) in items.iter().enumerate().skip(warp).step_by(warps) {
                let r = f(w, item);
                results.lock().unwrap()[i][w.lane_id() as usize] = Some(r);
            }
        }
    })
    .unwrap();
    results
        .into_inner()
        .unwrap()
        .into_iter()
        .enumerate()
        .map(|(i, lanes)| {
            let first = lanes[0].clone().unwrap();
            for (l, r) in lanes.iter().enumerate() {
                assert_eq!(r.as_ref(), Some(&first), "item {i}: lane {l} disagrees with lane 0");
            }
            first
        })
        .collect()
}

/// Encodes each input as one frame on `W`-lane warps (a buffer of exactly `max_encoded_len`).
pub fn encode_all<const W: u32, E: Encoder, T: Moved>(inputs: &[Vec<T::Bits>]) -> Vec<Vec<u8>> {
    let bufs: Vec<SharedBuf> = inputs
        .iter()
        .map(|i| SharedBuf::new(max_encoded_len::<T>(i.len()), 0xA5))
        .collect();
    let items: Vec<(&Vec<T::Bits>, &SharedBuf)> = inputs.iter().zip(&bufs).collect();
    let lens = per_warp::<W, _, _>(&items, |w, (input, buf)| {
        E::encode::<_, T>(w, input, buf.out()).unwrap()
    });
    bufs.into_iter()
        .zip(lens)
        .map(|(b, len)| b.into_vec()[..len].to_vec())
        .collect()
}

/// Guard bytes after every decode output, checked untouched.
const GUARD: usize = 16;

/// Decodes frame `i` on a `W`-lane warp into a buffer of `capacities[i]` bytes; returns the
/// elements.
pub fn decode_all<const W: u32, T: Moved>(
    frames: &[&[u8]],
    capacities: &[usize],
) -> Vec<Result<Vec<T::Bits>, FrameError>> {
    let bufs: Vec<SharedBuf> = capacities.iter().map(|c| SharedBuf::new(*c + GUARD, 0x5A)).collect();
    let items: Vec<(&[u8], &SharedBuf, usize)> = frames
        .iter()
        .copied()
        .zip(&bufs)
        .zip(capacities)
        .map(|((f, b), c)| (f, b, *c))
        .collect();
    let results = per_warp::<W, _, _>(&items, |w, (frame, buf, cap)| {
        decode_frame::<_, T>(w, frame, buf.out_prefix(*cap))
    });
    bufs.into_iter()
        .zip(results)
        .zip(capacities)
        .enumerate()
        .map(|(i, ((b, r), cap))| {
            let bytes = b.into_vec();
            assert!(
                bytes[*cap..].iter().all(|b| *b == 0x5A),
                "frame {i}: decode wrote past its output"
            );
            let n = r?;
            Ok(elems_from_bytes::<T>(&bytes, n))
        })
        .collect()
}

/// The first `n` elements of little-endian `bytes`.
pub fn elems_from_bytes<T: Split>(bytes: &[u8], n: usize) -> Vec<T::Bits> {
    let size = T::DTYPE.size_bytes();
    (0..n)
        .map(|i| {
            let mut v = 0u64;
            for k in 0..size {
                v |= (bytes[i * size + k] as u64) << (8 * k);
            }
            T::Bits::from_bits64(v)
        })
        .collect()
}

/// What a round trip saw: how many frames were coded (not RAW) and their sizes.
#[derive(Debug, Default)]
pub struct Stats {
    pub frames: usize,
    pub coded: usize,
    pub raw_bytes: usize,
    pub frame_bytes: usize,
}

/// Encodes every input on 32- and 64-lane warps (the frames must be byte-identical), checks
/// each frame's header and size bound, decodes every frame on 32- and 64-lane warps (into a
/// buffer of exactly the data's size) and checks the elements are the input's, bit for bit.
pub fn roundtrip<E: Encoder, T: Ty>(inputs: &[Vec<T::Bits>]) -> Stats {
    roundtrip_on::<E, T>(inputs, true)
}

/// [`roundtrip`] at half the cost: encoded on 32 lanes, decoded on 64.
pub fn roundtrip_cross<E: Encoder, T: Ty>(inputs: &[Vec<T::Bits>]) -> Stats {
    roundtrip_on::<E, T>(inputs, false)
}

fn roundtrip_on<E: Encoder, T: Ty>(inputs: &[Vec<T::Bits>], both: bool) -> Stats {
    let f32s = encode_all::<32, E, T>(inputs);
    let f64s = if both {
        encode_all::<64, E, T>(inputs)
    } else {
        f32s.clone()
    };
    let mut stats = Stats::default();
    for (i, ((a, b), input)) in f32s.iter().zip(&f64s).zip(inputs).enumerate() {
        assert_eq!(
            a,
            b,
            "{:?} {:?} input {i}: frames from 32 and 64 lanes differ",
            E::ID,
            T::DTYPE
        );
        assert!(
            a.len() <= max_encoded_len::<T>(input.len()),
            "frame {i} longer than max_encoded_len"
        );
        let h = FrameHeader::parse(a).unwrap();
        assert!(
            h.codec == E::ID as u8 || h.codec == CodecId::Raw as u8,
            "frame {i}: codec {}",
            h.codec
        );
        assert_eq!(h.dtype, T::DTYPE as u8);
        assert_eq!(h.raw_bytes as usize, input.len() * T::DTYPE.size_bytes());
        stats.frames += 1;
        stats.coded += (h.codec != CodecId::Raw as u8) as usize;
        stats.raw_bytes += h.raw_bytes as usize;
        stats.frame_bytes += a.len();
    }
    // Exactly the frame (no trailing slack) into exactly the data's size.
    let frames: Vec<&[u8]> = f32s.iter().map(|f| f.as_slice()).collect();
    let capacities: Vec<usize> = inputs.iter().map(|i| i.len() * T::DTYPE.size_bytes()).collect();
    let d32 = if both {
        decode_all::<32, T>(&frames, &capacities)
    } else {
        Vec::new()
    };
    let d64 = decode_all::<64, T>(&frames, &capacities);
    for (i, input) in inputs.iter().enumerate() {
        for (lanes, d) in [(32, d32.get(i)), (64, d64.get(i))] {
            let Some(d) = d else { continue };
            let got = d
                .as_ref()
                .unwrap_or_else(|e| panic!("{:?} {:?} frame {i} on {lanes} lanes: {e}", E::ID, T::DTYPE));
            if got != input {
                let at = got.iter().zip(input).position(|(a, b)| a != b);
                panic!(
                    "{:?} {:?} frame {i} on {lanes} lanes: {} elements decoded, want {}; first difference at {at:?}",
                    E::ID,
                    T::DTYPE,
                    got.len(),
                    input.len()
                );
            }
        }
    }
    stats
}
