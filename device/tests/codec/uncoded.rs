//! The dtypes without coders (`DType::coded` is false: f64 and the 64-bit integers): every coder writes
//! their frames RAW, byte for byte `encode_raw_frame`'s, the frames round-trip, and a frame
//! that claims one of them with a coder's id is `CodecNotBuilt`, never decoded.

use crate::corrupt::reseal;
use crate::harness::{decode_all, encode_all, Encoder, Moved, RawFrames, With};
use crate::util::Rng;
use zipcoll_device::codec::{CodecId, ExpAns, ExpWindow, FixedLen, Huffman};
use zipcoll_device::dtype::{DType, F64, I64, U64};
use zipcoll_device::frame::{FrameError, FrameHeader};
use zipcoll_targets::Word;

/// Inputs of `T` whose high bits repeat (what a coder would shrink): small integers of either
/// sign, and one frame of random bits.
fn inputs<T: Moved>(seed: u64) -> Vec<Vec<T::Bits>> {
    let mut g = Rng(seed);
    let small: Vec<T::Bits> = (0..257)
        .map(|_| T::Bits::from_bits64(g.below(64).wrapping_sub(32)))
        .collect();
    let random: Vec<T::Bits> = (0..100).map(|_| T::Bits::from_bits64(g.next_u64())).collect();
    vec![small, random, Vec::new()]
}

fn raw_from_every_coder<T: Moved>(seed: u64) {
    assert!(!T::DTYPE.coded());
    let inputs = inputs::<T>(seed);
    let raw = encode_all::<32, RawFrames, T>(&inputs);
    fn same<E: Encoder, T: Moved>(inputs: &[Vec<T::Bits>], raw: &[Vec<u8>]) {
        assert_eq!(encode_all::<32, E, T>(inputs), raw, "{:?} {:?}", T::DTYPE, E::ID);
    }
    same::<With<FixedLen>, T>(&inputs, &raw);
    same::<With<ExpWindow>, T>(&inputs, &raw);
    same::<With<ExpAns>, T>(&inputs, &raw);
    same::<With<Huffman>, T>(&inputs, &raw);
    let frames: Vec<&[u8]> = raw.iter().map(Vec::as_slice).collect();
    let caps: Vec<usize> = inputs.iter().map(|i| i.len() * T::DTYPE.size_bytes()).collect();
    let decoded: Vec<Vec<T::Bits>> = decode_all::<32, T>(&frames, &caps)
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(decoded, inputs, "{:?}: RAW round trip", T::DTYPE);
    // the first frame's header, made to claim each coder (payload and parameters as a coder's
    // would be are beside the point: the decoder must not get that far)
    for codec in [CodecId::FixedLen, CodecId::ExpWindow, CodecId::ExpAns, CodecId::Huffman] {
        let mut f = raw[0].clone();
        f[3] = codec as u8;
        reseal(&mut f);
        assert_eq!(FrameHeader::parse(&f).map(|h| h.codec_id()), Ok(Some(codec)));
        let got = decode_all::<32, T>(&[&f], &caps[..1]).remove(0);
        assert_eq!(got, Err(FrameError::CodecNotBuilt { codec }), "{:?}", T::DTYPE);
    }
}

#[test]
fn every_coder_writes_raw_frames_for_the_uncoded_dtypes() {
    raw_from_every_coder::<I64>(5);
    raw_from_every_coder::<U64>(6);
    raw_from_every_coder::<F64>(7);
    assert_eq!(DType::ALL.iter().filter(|d| !d.coded()).count(), 3);
}
