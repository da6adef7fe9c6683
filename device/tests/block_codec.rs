//! Block frames (`codec::block_frame`) on the CPU simulator: round trips (exhaustive over every
//! 16-bit split word and every fp8 pair, f32 specials, lengths across segment edges), the same
//! bytes from every block geometry, ratios and degenerate data, and damaged frames (errors,
//! or canonical: the encoder's frame of what they decode to).

mod common;

use common::{block, scratch, Rng, SharedBuf};
use zipcoll_device::codec::block_frame::{
    decode_block_frame, decode_scratch_bytes, encode_block_frame, encode_block_raw_frame, encode_scratch_bytes,
};
use zipcoll_device::codec::{encode_frame, max_encoded_len, CodecId, ExpAns, LaneOut};
use zipcoll_device::dtype::{Bf16, Elem, Split, F16, F32, F8E4M3, F8E5M2, I32, I8, U32, U8};
use zipcoll_device::frame::{FrameError, FrameHeader, BLOCK_FRAME_VERSION, FRAME_VERSION};
use zipcoll_targets::Word;

/// The block frame of `input` with ExpAns, from a block of `threads` threads of `L` lanes.
fn encode<const L: u32, T: Split>(input: &[T::Bits], threads: u32) -> Vec<u8>
where
    T::Bits: Sync,
{
    let buf = SharedBuf::new(max_encoded_len::<T>(input.len()), 0xEE);
    let len = block::<L, _>(threads, encode_scratch_bytes::<ExpAns>(threads), |w| {
        encode_block_frame::<_, T, ExpAns>(w, scratch(w), input, buf.out())
    })
    .unwrap();
    let mut v = buf.into_vec();
    v.truncate(len);
    v
}

/// `frame` decoded by a block of `threads` threads into room for `capacity` elements.
fn decode<const L: u32, T: Split>(frame: &[u8], capacity: usize, threads: u32) -> Result<Vec<T::Bits>, FrameError> {
    decode_at::<L, T>(frame, capacity, threads, 0)
}

/// [`decode`] into an output that starts `misalign` bytes past a 16-byte boundary (the
/// decoder stores 16 bytes at a time only into aligned output).
fn decode_at<const L: u32, T: Split>(
    frame: &[u8],
    capacity: usize,
    threads: u32,
    misalign: usize,
) -> Result<Vec<T::Bits>, FrameError> {
    let size = T::DTYPE.size_bytes();
    let buf = SharedBuf::new(capacity * size + 32, 0xEE);
    let skip = (misalign + 16 - buf.out().as_mut_ptr() as usize % 16) % 16;
    let n = block::<L, _>(threads, decode_scratch_bytes(threads), |w| {
        let out = buf.out().tail(skip).expect("the guard band");
        decode_block_frame::<_, T>(w, scratch(w), frame, out)
    })?;
    let bytes = buf.into_vec();
    let bytes = &bytes[skip..];
    Ok((0..n)
        .map(|i| {
            let mut v = 0u64;
            for k in 0..size {
                v |= (bytes[i * size + k] as u64) << (8 * k);
            }
            T::Bits::from_bits64(v)
        })
        .collect())
}

fn bits_of<T: Elem>(v: &[T::Bits]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits64()).collect()
}

/// Encodes with 128 threads, checks the header, decodes with 96 threads; returns the frame.
fn round_trip<T: Split>(input: &[T::Bits]) -> Vec<u8>
where
    T::Bits: Sync,
{
    let frame = encode::<32, T>(input, 128);
    let h = FrameHeader::parse_version(&frame, BLOCK_FRAME_VERSION).expect("a valid block frame");
    assert_eq!(h.raw_bytes as usize, input.len() * T::DTYPE.size_bytes());
    assert!(frame.len() <= max_encoded_len::<T>(input.len()));
    let back = decode::<32, T>(&frame, input.len(), 96).expect("its own frame decodes");
    assert_eq!(
        bits_of::<T>(&back),
        bits_of::<T>(input),
        "{:?}: {} elements",
        T::DTYPE,
        input.len()
    );
    frame
}

fn codec_of(frame: &[u8]) -> CodecId {
    FrameHeader::parse_version(frame, BLOCK_FRAME_VERSION)
        .unwrap()
        .codec_id()
        .unwrap()
}

/// The elements of split words (fp8: two elements per word, low byte first).
fn elems_of<T: Split>(words: &[u32]) -> Vec<T::Bits> {
    let bits = 8 * T::DTYPE.size_bytes();
    words
        .iter()
        .flat_map(|&w| {
            (0..T::ELEMS_PER_WORD).map(move |k| T::Bits::from_bits64(((w as u64) >> (bits * k)) & ((1u64 << bits) - 1)))
        })
        .collect()
}

/// Every 16-bit split word once, in frames of `per_frame` consecutive symbols (shuffled inside
/// each frame): every frame round-trips, and the compressible ones are ExpAns frames.
fn exhaustive<T: Split>(per_frame: usize)
where
    T::Bits: Sync,
{
    let symbols = 1usize << T::SYMBOL_BITS;
    let raws = 1usize << T::RAW_BITS;
    let mut rng = Rng(7);
    let mut coded = 0;
    for f in 0..symbols / per_frame {
        let mut words: Vec<u32> = (0..per_frame * raws)
            .map(|k| {
                let s = (f * per_frame + k / raws) as u8;
                T::join(s, T::Raw::from_bits64((k % raws) as u64)).to_bits64() as u32
            })
            .collect();
        for i in (1..words.len()).rev() {
            words.swap(i, rng.below(i as u64 + 1) as usize);
        }
        let frame = round_trip::<T>(&elems_of::<T>(&words));
        coded += (codec_of(&frame) == CodecId::ExpAns) as usize;
    }
    assert!(coded > 0, "{:?}: no frame was coded", T::DTYPE);
}

#[test]
fn exhaustive_bf16_small_and_multi_segment_frames() {
    exhaustive::<Bf16>(8);
    exhaustive::<Bf16>(64);
}

#[test]
fn exhaustive_f16() {
    exhaustive::<F16>(4);
}

#[test]
fn exhaustive_fp8_pairs() {
    exhaustive::<F8E4M3>(8);
    exhaustive::<F8E5M2>(8);
}

#[test]
fn exhaustive_int8_pairs() {
    exhaustive::<I8>(8);
    exhaustive::<U8>(8);
}

/// f32 specials (NaN payloads, +-0, subnormals, +-inf) among normal values.
fn f32_specials(n: usize, seed: u64) -> Vec<u32> {
    let specials = [
        0x8000_0000,
        0,
        0x7F80_0000,
        0xFF80_0000,
        0x7FC0_0001,
        0xFFFF_FFFF,
        0x7F80_0001,
        0x0000_0001,
        0x807F_FFFF,
    ];
    let mut rng = Rng(seed);
    (0..n)
        .map(|i| match rng.below(8) {
            0 => specials[i % specials.len()],
            _ => (rng.normal() as f32).to_bits(),
        })
        .collect()
}

#[test]
fn lengths_around_segment_edges_every_dtype() {
    for n in [0, 1, 2, 3, 31, 33, 64, 100, 8191, 8192, 8193, 16385, 40000] {
        let f = f32_specials(n, n as u64);
        round_trip::<F32>(&f);
        let half: Vec<u16> = f.iter().map(|x| (x >> 16) as u16).collect();
        round_trip::<Bf16>(&half);
        round_trip::<F16>(&half);
        let bytes: Vec<u8> = f.iter().map(|x| (x >> 24) as u8).collect();
        round_trip::<F8E4M3>(&bytes);
        round_trip::<F8E5M2>(&bytes);
        round_trip::<I8>(&bytes);
        round_trip::<U8>(&bytes);
        // integers whose top bytes repeat, with 0, -1 and the extremes among them
        let ints: Vec<u32> = f.iter().map(|x| ((*x as i32) >> 12) as u32).collect();
        round_trip::<I32>(&ints);
        round_trip::<U32>(&ints);
    }
}

/// Encodes `input` from every offset within 16 bytes (aligned input is read with 16-byte
/// loads, the rest element by element): the same frame each time. Then decodes it into
/// outputs at every misalignment that matters (the whole chunks of aligned output are joined in
/// registers and stored 16 bytes at a time, the others word by word): the same elements each
/// time.
fn any_alignment<T: Split>(input: &[T::Bits])
where
    T::Bits: Sync,
{
    let frame = encode::<32, T>(input, 128);
    assert_eq!(codec_of(&frame), CodecId::ExpAns, "{:?}", T::DTYPE);
    for shift in 1..16 / T::DTYPE.size_bytes() {
        let mut moved = vec![input[0]; shift];
        moved.extend_from_slice(input);
        assert_eq!(
            encode::<32, T>(&moved[shift..], 128),
            frame,
            "{:?}, input moved by {shift}",
            T::DTYPE
        );
    }
    for misalign in [0, 1, 2, 4, 8, 12] {
        let got = decode_at::<32, T>(&frame, input.len(), 128, misalign).unwrap();
        assert_eq!(
            bits_of::<T>(&got),
            bits_of::<T>(input),
            "{:?}, misaligned by {misalign}",
            T::DTYPE
        );
    }
}

#[test]
fn any_input_and_output_alignment_gives_the_same_frame_and_elements() {
    let mut rng = Rng(5);
    // a partial last chunk and a partial last run
    let n = 2 * 8192 + 2048 + 77;
    let f: Vec<u32> = (0..n).map(|_| (rng.normal() as f32).to_bits()).collect();
    any_alignment::<F32>(&f);
    let half: Vec<u16> = f.iter().map(|x| (x >> 16) as u16).collect();
    any_alignment::<Bf16>(&half);
    let h: Vec<u16> = f
        .iter()
        .map(|x| half::f16::from_f32(f32::from_bits(*x)).to_bits())
        .collect();
    any_alignment::<F16>(&h);
    let bytes: Vec<u8> = f.iter().map(|x| (x >> 24) as u8 ^ (*x as u8 & 0x7)).collect();
    any_alignment::<F8E4M3>(&bytes);
    any_alignment::<F8E5M2>(&bytes[1..]);
    let ints: Vec<u32> = f.iter().map(|x| ((*x as i32) >> 14) as u32).collect();
    any_alignment::<I32>(&ints);
    any_alignment::<U32>(&ints[1..]);
    let small: Vec<u8> = ints.iter().map(|x| (*x as i32 >> 12) as u8).collect();
    any_alignment::<I8>(&small);
    any_alignment::<U8>(&small[1..]);
}

#[test]
fn every_geometry_writes_the_same_bytes_and_reads_the_others() {
    let mut rng = Rng(3);
    let input: Vec<u16> = (0..20_000)
        .map(|_| ((rng.normal() as f32).to_bits() >> 16) as u16)
        .collect();
    let reference = encode::<32, Bf16>(&input, 128);
    assert_eq!(codec_of(&reference), CodecId::ExpAns);
    for threads in [32, 64, 96, 256] {
        assert_eq!(encode::<32, Bf16>(&input, threads), reference, "{threads} threads");
    }
    assert_eq!(encode::<64, Bf16>(&input, 128), reference, "64-lane warps");
    for threads in [32, 256] {
        assert_eq!(
            bits_of::<Bf16>(&decode::<32, Bf16>(&reference, input.len(), threads).unwrap()),
            bits_of::<Bf16>(&input)
        );
    }
    assert_eq!(
        bits_of::<Bf16>(&decode::<64, Bf16>(&reference, input.len(), 128).unwrap()),
        bits_of::<Bf16>(&input)
    );
}

#[test]
fn normal_bf16_compresses_like_the_warp_frames() {
    let mut rng = Rng(11);
    let input: Vec<u16> = (0..32_768)
        .map(|_| ((rng.normal() as f32).to_bits() >> 16) as u16)
        .collect();
    let frame = round_trip::<Bf16>(&input);
    let ratio = frame.len() as f64 / (2 * input.len()) as f64;
    assert_eq!(codec_of(&frame), CodecId::ExpAns);
    assert!(ratio < 0.672, "ratio {ratio}");
}

#[test]
fn constant_data_codes_without_stream_words() {
    for v in [0u16, 0x3F80, 0x8000] {
        let frame = round_trip::<Bf16>(&vec![v; 10_000]);
        let h = FrameHeader::parse_version(&frame, BLOCK_FRAME_VERSION).unwrap();
        assert_eq!(h.codec_id(), Some(CodecId::ExpAns));
        assert_eq!(h.params2, 0, "one symbol needs no renormalization words");
    }
}

#[test]
fn raw_frames_round_trip_and_match_the_split_fallback() {
    let mut rng = Rng(5);
    let input: Vec<u32> = (0..5000).map(|_| rng.next_u32()).collect();
    let frame = round_trip::<F32>(&input);
    assert_eq!(codec_of(&frame), CodecId::Raw, "random bits do not compress");
    let buf = SharedBuf::new(max_encoded_len::<F32>(input.len()), 0);
    let len = block::<32, _>(64, 256, |w| {
        encode_block_raw_frame::<_, F32>(w, scratch(w), &input, buf.out())
    })
    .unwrap();
    assert_eq!(&buf.into_vec()[..len], &frame[..]);
}

#[test]
fn warp_and_block_frames_reject_each_other() {
    let input: Vec<u16> = (0..3000).map(|i| (i % 7) as u16 + 0x3F00).collect();
    let block_frame = encode::<32, Bf16>(&input, 64);
    assert_eq!(decode::<32, Bf16>(&block_frame, 3000, 64).map(|v| v.len()), Ok(3000));
    let buf = SharedBuf::new(max_encoded_len::<Bf16>(input.len()), 0);
    let len = common::one_warp::<32, _>(|w| encode_frame::<_, Bf16, ExpAns>(w, &input, buf.out())).unwrap();
    let warp_frame = buf.into_vec()[..len].to_vec();
    assert_eq!(
        decode::<32, Bf16>(&warp_frame, 3000, 64),
        Err(FrameError::UnsupportedVersion { found: FRAME_VERSION })
    );
    let out = SharedBuf::new(6000, 0);
    let r = common::one_warp::<32, _>(|w| zipcoll_device::codec::decode_frame::<_, Bf16>(w, &block_frame, out.out()));
    assert_eq!(
        r,
        Err(FrameError::UnsupportedVersion {
            found: BLOCK_FRAME_VERSION
        })
    );
}

#[test]
fn too_little_scratch_is_an_error() {
    let input = vec![0x3F80u16; 1000];
    let buf = SharedBuf::new(max_encoded_len::<Bf16>(1000), 0);
    let r = block::<32, _>(64, 1024, |w| {
        encode_block_frame::<_, Bf16, ExpAns>(w, scratch(w), &input, buf.out())
    });
    assert!(
        matches!(r, Err(FrameError::ScratchTooSmall { have: 1024, .. })),
        "{r:?}"
    );
    let frame = encode::<32, Bf16>(&input, 64);
    assert_eq!(codec_of(&frame), CodecId::ExpAns);
    let r = block::<32, _>(64, 1024, |w| {
        decode_block_frame::<_, Bf16>(w, scratch(w), &frame, LaneOut::new(&mut [])).or_else(|e| {
            if matches!(e, FrameError::BadRawLength { .. }) {
                Ok(0)
            } else {
                Err(e)
            }
        })
    });
    assert_eq!(r, Ok(0), "the output is checked before the scratch");
    let out = SharedBuf::new(2000, 0);
    let r = block::<32, _>(64, 1024, |w| {
        decode_block_frame::<_, Bf16>(w, scratch(w), &frame, out.out())
    });
    assert!(
        matches!(r, Err(FrameError::ScratchTooSmall { have: 1024, .. })),
        "{r:?}"
    );
}

/// Re-seals a damaged header's checksum so that the damage reaches the payload's checks.
fn reseal(frame: &mut [u8]) {
    let sum = zipcoll_device::frame::checksum(&frame[..28]);
    frame[28..32].copy_from_slice(&sum.to_le_bytes());
}

#[test]
fn damaged_frames_are_errors_or_the_original() {
    let mut rng = Rng(9);
    let input: Vec<u16> = (0..9000)
        .map(|_| ((rng.normal() as f32).to_bits() >> 16) as u16)
        .collect();
    let frame = encode::<32, Bf16>(&input, 64);
    assert_eq!(codec_of(&frame), CodecId::ExpAns);
    let h = FrameHeader::parse_version(&frame, BLOCK_FRAME_VERSION).unwrap();
    let plane = 32 + 9000;
    // every byte of the coded section, and a sample of the plane, flipped in one bit
    let positions: Vec<usize> = (plane..frame.len()).chain((32..plane).step_by(97)).collect();
    let mut rejected = 0;
    for &at in &positions {
        let mut bad = frame.clone();
        bad[at] ^= 1 << (at % 8);
        match decode::<32, Bf16>(&bad, input.len(), 64) {
            Ok(v) => assert_eq!(
                bits_of::<Bf16>(&v),
                bits_of::<Bf16>(&input),
                "byte {at} changed the data silently"
            ),
            Err(_) => rejected += 1,
        }
    }
    assert!(
        rejected * 10 >= positions.len() * 9,
        "{rejected} of {} damaged frames rejected",
        positions.len()
    );
    // crafted headers: params, params2, payload length
    for (field, value) in [
        (6usize, 12u32),
        (6, 8),
        (20, h.params2 + 1),
        (20, h.params2.wrapping_sub(1)),
        (12, h.payload_bytes - 2),
    ] {
        let mut bad = frame.clone();
        if field == 6 {
            bad[6..8].copy_from_slice(&(value as u16).to_le_bytes());
        } else {
            bad[field..field + 4].copy_from_slice(&value.to_le_bytes());
        }
        reseal(&mut bad);
        assert!(
            decode::<32, Bf16>(&bad, input.len(), 64).is_err(),
            "field {field} = {value} accepted"
        );
    }
    // random payloads behind valid headers: never a panic or a read outside the frame
    for trial in 0..200 {
        let mut bad = frame.clone();
        for b in bad[plane..].iter_mut() {
            if rng.below(4) == 0 || trial % 10 == 0 {
                *b = rng.next_u32() as u8;
            }
        }
        let cut = plane + rng.below((frame.len() - plane) as u64) as usize;
        let mut bad = bad[..if trial % 3 == 0 { cut } else { bad.len() }].to_vec();
        let payload = (bad.len() - 32) as u32;
        bad[12..16].copy_from_slice(&payload.to_le_bytes());
        bad[20..24].copy_from_slice(&(rng.below(3000) as u32).to_le_bytes());
        reseal(&mut bad);
        if let Ok(v) = decode::<32, Bf16>(&bad, input.len(), 64) {
            assert_eq!(bits_of::<Bf16>(&v), bits_of::<Bf16>(&input));
        }
    }
}

/// Flips bits of the payload of `input`'s block frame, one at a time (every bit of the coded
/// section and of the raw plane's last 8 bytes, where its padding and an fp8 frame's missing
/// element lie; every 7th bit of the rest of the plane): each damaged frame is an error, or
/// decodes to data whose block frame is exactly the damaged frame (decoding is canonical).
/// Returns how many flips decoded.
fn flips_are_rejected_or_canonical<T: Split>(input: &[T::Bits]) -> usize
where
    T::Bits: Sync,
{
    let frame = encode::<32, T>(input, 64);
    assert_eq!(codec_of(&frame), CodecId::ExpAns, "{:?}", T::DTYPE);
    let words = input.len().div_ceil(T::ELEMS_PER_WORD);
    let dense = 8 * (32 + (words * T::RAW_BITS as usize).div_ceil(32) * 4 - 8);
    let mut decoded = 0;
    for bit in (8 * 32..dense).step_by(7).chain(dense..8 * frame.len()) {
        let mut bad = frame.clone();
        bad[bit / 8] ^= 1 << (bit % 8);
        if let Ok(v) = decode::<32, T>(&bad, input.len(), 64) {
            decoded += 1;
            assert!(
                encode::<32, T>(&v, 64) == bad,
                "{:?}: flipping bit {bit} of {} gives a frame that decodes and that the encoder never writes",
                T::DTYPE,
                8 * frame.len()
            );
        }
    }
    decoded
}

#[test]
fn damaged_frames_decode_canonically_or_not_at_all() {
    let mut rng = Rng(23);
    let normal16 = |rng: &mut Rng, n: usize| -> Vec<u16> {
        (0..n).map(|_| ((rng.normal() as f32).to_bits() >> 16) as u16).collect()
    };
    // fp8 with an odd count: the last word's missing element and the plane's padding are bits
    // that the data's checksum does not cover
    let fp8 = |rng: &mut Rng, mantissa_bits: u32| -> Vec<u8> {
        // sign, a bell-shaped exponent around the middle of its range, any mantissa
        let bias = 1 << (6 - mantissa_bits);
        (0..1001)
            .map(|_| {
                let e = (bias as f64 + rng.normal()).round().clamp(1.0, (2 * bias - 1) as f64) as u32;
                (rng.below(2) << 7 | (e as u64) << mantissa_bits | rng.below(1 << mantissa_bits)) as u8
            })
            .collect()
    };
    flips_are_rejected_or_canonical::<F8E4M3>(&fp8(&mut rng, 3));
    flips_are_rejected_or_canonical::<F8E5M2>(&fp8(&mut rng, 2));
    flips_are_rejected_or_canonical::<Bf16>(&normal16(&mut rng, 299));
    let f32s: Vec<u32> = normal16(&mut rng, 1001)
        .iter()
        .map(|&b| (b as u32) << 16 | 0x1234)
        .collect();
    flips_are_rejected_or_canonical::<F32>(&f32s);
}
