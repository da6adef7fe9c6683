//! Damaged and hostile frames: every header bit flipped, payload bits flipped, every
//! truncation, random changes with a resealed header, and crafted headers (version, dtype,
//! lengths). Decoding must return `Err`, or `Ok` with exactly the original data; it must never
//! panic or write outside the output (guard bytes after it). Reads outside the frame cannot be
//! seen here: the decoders get the frame as a slice and read it through `get` (out of range is
//! `None`, never a panic), so `decoders_read_their_input_only_through_slices` checks the
//! sources for the raw reads that could leave it.

use crate::data::normal_elems;
use crate::harness::{decode_all, encode_all, Encoder, Ty};
use crate::util::{Rng, SharedBuf};
use zipcoll_device::codec::{encode_frame, max_encoded_len, CodecId, FixedLen};
use zipcoll_device::dtype::{Bf16, DType, F16, F32, F8E4M3, F8E5M2};
use zipcoll_device::frame::{checksum, frame_len, FrameError, FrameHeader, BLOCK_FRAME_VERSION, HEADER_BYTES};

/// The frame under test: N(0,1) values (an odd count, so fp8 has a half-filled last word),
/// and its input.
fn sample<E: Encoder, T: Ty>() -> (Vec<T::Bits>, Vec<u8>) {
    let input = T::typical(77, 101, 1.0);
    let frame = encode_all::<32, E, T>(std::slice::from_ref(&input)).remove(0);
    (input, frame)
}

/// Recomputes the header checksum after an edit of the header's first 28 bytes.
pub fn reseal(frame: &mut [u8]) {
    let c = checksum(&frame[..28]);
    frame[28..32].copy_from_slice(&c.to_le_bytes());
}

/// Decodes every variant on 32 lanes, and with `both` on 64 lanes too (output buffer: exactly
/// `capacity`), and checks each result with `check(variant index, result)`. The harness checks
/// that all lanes return the same result and that nothing is written past the output.
fn decode_variants<T: Ty>(
    variants: &[Vec<u8>],
    capacity: usize,
    both: bool,
    check: impl Fn(usize, &Result<Vec<T::Bits>, FrameError>),
) {
    let frames: Vec<&[u8]> = variants.iter().map(|v| v.as_slice()).collect();
    let caps = vec![capacity; frames.len()];
    let mut all = vec![decode_all::<32, T>(&frames, &caps)];
    if both {
        all.push(decode_all::<64, T>(&frames, &caps));
    }
    for results in all {
        for (i, r) in results.iter().enumerate() {
            check(i, r);
        }
    }
}

/// `Err`, or `Ok` with the original data.
fn err_or_same<'a, T: Ty>(input: &'a [T::Bits], what: &str) -> impl Fn(usize, &Result<Vec<T::Bits>, FrameError>) + 'a {
    let what = what.to_string();
    move |i, r| {
        if let Ok(got) = r {
            assert_eq!(got, input, "{what} {i}: decoded Ok with different data");
        }
    }
}

/// Every bit of the header flipped: always `Err` (on 32 and 64 lanes).
pub fn header_bits<E: Encoder, T: Ty>() {
    let (input, frame) = sample::<E, T>();
    let variants: Vec<Vec<u8>> = (0..HEADER_BYTES * 8)
        .map(|bit| {
            let mut f = frame.clone();
            f[bit / 8] ^= 1 << (bit % 8);
            f
        })
        .collect();
    decode_variants::<T>(&variants, input.len() * T::DTYPE.size_bytes(), true, |i, r| {
        assert!(
            r.is_err(),
            "{:?} {:?}: header bit {i} flipped decoded Ok",
            E::ID,
            T::DTYPE
        );
    });
}

/// Payload bits flipped (an evenly spread sample of about 300, every bit position within a byte
/// included): `Err`, or `Ok` with the original data (a padding bit).
pub fn payload_bits<E: Encoder, T: Ty>() {
    let (input, frame) = sample::<E, T>();
    let bits = (frame.len() - HEADER_BYTES) * 8;
    let stride = bits.div_ceil(300).max(1) | 1;
    let variants: Vec<Vec<u8>> = (0..bits)
        .step_by(stride)
        .map(|bit| {
            let mut f = frame.clone();
            f[HEADER_BYTES + bit / 8] ^= 1 << (bit % 8);
            f
        })
        .collect();
    let cap = input.len() * T::DTYPE.size_bytes();
    decode_variants::<T>(&variants, cap, false, err_or_same::<T>(&input, "payload bit flip"));
}

/// Every truncation of the frame: `Err`.
pub fn truncated<E: Encoder, T: Ty>() {
    let (input, frame) = sample::<E, T>();
    let variants: Vec<Vec<u8>> = (0..frame.len()).map(|n| frame[..n].to_vec()).collect();
    decode_variants::<T>(&variants, input.len() * T::DTYPE.size_bytes(), false, |n, r| {
        assert!(
            r.is_err(),
            "{:?} {:?}: frame cut to {n} bytes decoded Ok",
            E::ID,
            T::DTYPE
        );
    });
}

/// Random edits that keep the header valid (resealed): payload bytes overwritten, `params`,
/// `params2`, `payload_bytes` (shorter) and `raw_bytes` changed. `Err`, or `Ok` with the data.
pub fn resealed<E: Encoder, T: Ty>() {
    let (input, frame) = sample::<E, T>();
    let mut rng = Rng(31);
    let payload = frame.len() - HEADER_BYTES;
    let variants: Vec<Vec<u8>> = (0..200)
        .map(|_| {
            let mut f = frame.clone();
            let edits = 1 + rng.below(3);
            for _ in 0..edits {
                match rng.below(6) {
                    0 | 1 if payload > 0 => {
                        let at = HEADER_BYTES + rng.below(payload as u64) as usize;
                        f[at] = rng.next_u32() as u8;
                    }
                    2 => f[6..8].copy_from_slice(&(rng.next_u32() as u16).to_le_bytes()),
                    3 => f[20..24].copy_from_slice(&(rng.next_u32() >> rng.below(32)).to_le_bytes()),
                    4 => {
                        let p = rng.below(payload as u64 + 1) as u32;
                        f[12..16].copy_from_slice(&p.to_le_bytes());
                    }
                    _ => {
                        let r = rng.below(input.len() as u64 * 4 + 1) as u32;
                        f[8..12].copy_from_slice(&r.to_le_bytes());
                    }
                }
            }
            reseal(&mut f);
            f
        })
        .collect();
    // Room for any raw_bytes the edits chose: only the checks may reject it.
    let cap = input.len() * 4;
    decode_variants::<T>(&variants, cap, false, err_or_same::<T>(&input, "resealed edit"));
}

/// Headers crafted to be wrong in one way each, with a valid header checksum, and an encoder
/// given too little room.
pub fn crafted<E: Encoder, T: Ty>() {
    let (input, frame) = sample::<E, T>();
    let raw = input.len() * T::DTYPE.size_bytes();
    let edit = |f: &dyn Fn(&mut Vec<u8>)| {
        let mut v = frame.clone();
        f(&mut v);
        reseal(&mut v);
        v
    };
    let h = FrameHeader::parse(&frame).unwrap();
    let other = if T::DTYPE == DType::Bf16 {
        DType::F16
    } else {
        DType::Bf16
    };
    let cases: Vec<(Vec<u8>, usize, FrameError)> = vec![
        (edit(&|f| f[2] = 2), raw, FrameError::UnsupportedVersion { found: 2 }),
        (edit(&|f| f[3] = 9), raw, FrameError::UnknownCodec { found: 9 }),
        (edit(&|f| f[4] = 200), raw, FrameError::UnknownDType { found: 200 }),
        (
            edit(&|f| f[4] = other as u8),
            raw,
            FrameError::WrongDType {
                frame: other,
                expected: T::DTYPE,
            },
        ),
        (edit(&|f| f[5] = 1), raw, FrameError::Reserved),
        (
            edit(&|f| f[12..16].copy_from_slice(&(h.payload_bytes + 1).to_le_bytes())),
            raw,
            FrameError::Truncated {
                need: frame.len() + 1,
                have: frame.len(),
            },
        ),
        (
            edit(&|f| f[12..16].copy_from_slice(&u32::MAX.to_le_bytes())),
            raw,
            FrameError::Truncated {
                need: HEADER_BYTES + u32::MAX as usize,
                have: frame.len(),
            },
        ),
        (
            frame.clone(),
            raw - 1,
            FrameError::BadRawLength {
                raw_bytes: raw as u32,
                capacity: raw - 1,
            },
        ),
        (
            edit(&|f| f[8..12].copy_from_slice(&u32::MAX.to_le_bytes())),
            raw,
            FrameError::BadRawLength {
                raw_bytes: u32::MAX,
                capacity: raw,
            },
        ),
    ];
    let frames: Vec<&[u8]> = cases.iter().map(|c| c.0.as_slice()).collect();
    let caps: Vec<usize> = cases.iter().map(|c| c.1).collect();
    for results in [decode_all::<32, T>(&frames, &caps), decode_all::<64, T>(&frames, &caps)] {
        for (i, (r, case)) in results.iter().zip(&cases).enumerate() {
            assert_eq!(
                r.as_ref().err(),
                Some(&case.2),
                "{:?} {:?}: crafted case {i}",
                E::ID,
                T::DTYPE
            );
        }
    }
    if T::DTYPE.size_bytes() > 1 {
        // raw_bytes not a whole number of elements
        let odd = edit(&|f| f[8..12].copy_from_slice(&(raw as u32 - 1).to_le_bytes()));
        let r = decode_all::<32, T>(&[&odd], &[raw]).remove(0);
        assert_eq!(
            r.err(),
            Some(FrameError::BadRawLength {
                raw_bytes: raw as u32 - 1,
                capacity: raw
            })
        );
    }
    // An encoder given one byte less than max_encoded_len.
    let need = max_encoded_len::<T>(input.len());
    let buf = SharedBuf::new(need - 1, 0);
    let r = crate::util::one_warp::<32, _>(|w| E::encode::<_, T>(w, &input, buf.out()));
    assert_eq!(r, Err(FrameError::OutputTooSmall { need, have: need - 1 }));
    assert!(h.codec == E::ID as u8 || h.codec == CodecId::Raw as u8);
}

/// A frame of one dtype decoded as each other dtype: `WrongDType`.
#[test]
fn wrong_dtype_every_pair() {
    let input = normal_elems::<Bf16>(5, 64, 1.0);
    let buf = SharedBuf::new(max_encoded_len::<Bf16>(64), 0);
    let n = crate::util::one_warp::<32, _>(|w| encode_frame::<_, Bf16, FixedLen>(w, &input, buf.out()).unwrap());
    let frame = buf.into_vec()[..n].to_vec();
    fn expect<T: Ty>(frame: &[u8]) {
        let r = decode_all::<32, T>(&[frame], &[1024]).remove(0);
        assert_eq!(
            r.err(),
            Some(FrameError::WrongDType {
                frame: DType::Bf16,
                expected: T::DTYPE
            })
        );
    }
    expect::<F16>(&frame);
    expect::<F32>(&frame);
    expect::<F8E4M3>(&frame);
    expect::<F8E5M2>(&frame);
}

/// What `frame::checksum` guarantees and what it does not: every single-bit change of a frame
/// changes it (here every bit of 4 random frames), but a swap of two different words can leave
/// it unchanged: two such words are found by a birthday search (the swap is undetected when
/// `term(a, 0) - term(a, 1) == term(b, 0) - term(b, 1)`).
#[test]
fn checksum_detects_one_word_changes_but_not_every_swap() {
    use zipcoll_device::frame::checksum_term;
    let mut rng = Rng(17);
    for len in [1usize, 5, 64, 101] {
        let bytes: Vec<u8> = (0..len).map(|_| rng.next_u32() as u8).collect();
        let c = checksum(&bytes);
        for bit in 0..8 * len {
            let mut b = bytes.clone();
            b[bit / 8] ^= 1 << (bit % 8);
            assert_ne!(checksum(&b), c, "len {len}: bit {bit} flipped, checksum unchanged");
        }
    }
    let diff = |w: u32| checksum_term(w, 0).wrapping_sub(checksum_term(w, 1));
    let mut seen = std::collections::HashMap::new();
    let (a, b) = (0u32..1 << 22)
        .find_map(|w| seen.insert(diff(w), w).map(|v| (v, w)))
        .expect("a colliding pair among 2^22 words");
    assert_ne!(a, b);
    let ab: Vec<u8> = [a, b].iter().flat_map(|w| w.to_le_bytes()).collect();
    let ba: Vec<u8> = [b, a].iter().flat_map(|w| w.to_le_bytes()).collect();
    assert_ne!(ab, ba);
    assert_eq!(checksum(&ab), checksum(&ba), "words {a:#x} and {b:#x} swapped");
}

/// The decoders' input is read only through safe slice accesses: in the codec, frame and bit
/// sources there is no `get_unchecked`, no `from_raw_parts`, and no raw-pointer read except of
/// the output buffer (`out.ptr`, read back after the warp wrote it).
#[test]
fn decoders_read_their_input_only_through_slices() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = vec![src.join("bits.rs"), src.join("frame.rs")];
    let mut dirs = vec![src.join("codec")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                files.push(p);
            }
        }
    }
    assert!(files.len() > 8, "{files:?}");
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for raw in ["get_unchecked", "from_raw_parts", "read_unaligned", "read_volatile"] {
                assert!(!code.contains(raw), "{}:{}: {raw}: {line}", f.display(), i + 1);
            }
            if code.contains(".read()") {
                assert!(
                    code.contains("out.ptr"),
                    "{}:{}: a raw read: {line}",
                    f.display(),
                    i + 1
                );
            }
        }
    }
}

/// What a transport moves of a slot: exactly a valid frame (warp or block format), the whole
/// slot for anything else, never more.
#[test]
fn frame_len_is_exact_for_valid_frames_and_the_slot_otherwise() {
    let data = [7u8; 100];
    let h = FrameHeader::new(CodecId::Raw, DType::F8E4M3, 0, 0, 100, 100, checksum(&data));
    let mut slot = vec![0u8; 256];
    slot[..32].copy_from_slice(&h.to_bytes());
    slot[32..132].copy_from_slice(&data);
    assert_eq!(frame_len(&slot), 132);
    slot[..32].copy_from_slice(&h.with_version(BLOCK_FRAME_VERSION).to_bytes());
    assert_eq!(frame_len(&slot), 132);
    // a header claiming more than the slot holds
    let big = FrameHeader::new(CodecId::Raw, DType::F8E4M3, 0, 0, 1000, 1000, 0);
    slot[..32].copy_from_slice(&big.to_bytes());
    assert_eq!(frame_len(&slot), 256);
    // garbage, and a slot shorter than a header
    slot[0] ^= 0xff;
    assert_eq!(frame_len(&slot), 256);
    assert_eq!(frame_len(&slot[..16]), 16);
}
