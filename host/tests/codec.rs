//! The frame codec through the host API: every coded dtype x codec round-trips bit for bit on the
//! simulator (NaN payloads, ±0, ±inf, subnormals), the bytes do not depend on the warp width,
//! streams parse back, damaged streams and bad layouts give typed errors, and CUDA either
//! matches the simulator byte for byte or says, typed, why it cannot run.

use zipcoll_host::codec::cuda::CudaCodec;
use zipcoll_host::codec::{
    check_decode_status, decode, decode_stream, encode, encode_with, pack_slots, parse_stream, slot_bytes, Encoded,
    FrameUnit, FRAME_ALIGN,
};
use zipcoll_host::{cuda, testdata, Backend, CodecId, DType, Error, FrameError};

/// RAW and every codec with a symbol coder.
const CODECS: [Option<CodecId>; 5] = [
    None,
    Some(CodecId::FixedLen),
    Some(CodecId::ExpWindow),
    Some(CodecId::ExpAns),
    Some(CodecId::Huffman),
];

/// Elements per frame in these tests: small, so that every test has several frames.
const FRAME: usize = 512;

fn name(codec: Option<CodecId>) -> &'static str {
    codec.map_or("raw", CodecId::name)
}

/// The checks every encoding must pass: frame count, alignment, lengths inside the stream.
fn assert_layout(enc: &Encoded, n: usize, what: &str) {
    assert_eq!(enc.n, n, "{what}");
    assert_eq!(enc.nframes(), n.div_ceil(FRAME), "{what}");
    assert_eq!(enc.frame_offsets.len(), enc.nframes(), "{what}");
    for g in 0..enc.nframes() {
        assert_eq!(
            enc.frame_offsets[g] % FRAME_ALIGN as u64,
            0,
            "{what}: frame {g} alignment"
        );
        assert!(enc.frame(g).is_some(), "{what}: frame {g} inside the stream");
    }
    let last = enc.nframes() - 1;
    assert_eq!(
        enc.bytes.len() as u64,
        enc.frame_offsets[last] + u64::from(enc.frame_lens[last]),
        "{what}: nothing after the last frame"
    );
}

/// The dtypes without coders (f64, i64, u64) are refused by the codec API on every backend,
/// typed, before any work: the collectives move them uncompressed.
#[test]
fn the_codec_api_refuses_the_dtypes_without_coders() {
    for dtype in DType::ALL.into_iter().filter(|d| !d.coded()) {
        let data = testdata::elements(dtype, 100, 3);
        for backend in [Backend::Sim, Backend::Sim64, Backend::Cuda { ordinal: 0 }] {
            for codec in CODECS {
                let got = encode(backend, dtype, codec, &data, FRAME);
                assert!(
                    matches!(&got, Err(Error::InvalidArgument(why)) if why.contains("no codec is built")),
                    "{dtype:?} {} on {backend:?}: {:?}",
                    name(codec),
                    got.map(|e| e.nframes())
                );
            }
        }
        // a stream of another dtype's frames, relabelled, is refused the same way
        let mut enc = encode(
            Backend::Sim,
            DType::F32,
            None,
            &testdata::elements(DType::F32, 100, 3),
            FRAME,
        )
        .unwrap();
        enc.dtype = dtype;
        assert!(
            matches!(decode(Backend::Sim, &enc), Err(Error::InvalidArgument(_))),
            "{dtype:?}"
        );
    }
}

#[test]
fn every_dtype_and_codec_round_trips_on_the_simulator() {
    for dtype in DType::CODED {
        // Not a multiple of the frame; odd, so fp8's last split word is half empty.
        let n = 4 * FRAME + 77;
        let data = testdata::elements(dtype, n, 0xc0dec + dtype as u64);
        for codec in CODECS {
            let what = format!("{dtype:?} {}", name(codec));
            let enc = encode(Backend::Sim, dtype, codec, &data, FRAME).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_layout(&enc, n, &what);
            assert_eq!((enc.dtype, enc.codec), (dtype, codec), "{what}");
            assert_eq!(
                decode(Backend::Sim, &enc).unwrap_or_else(|e| panic!("{what}: {e}")),
                data,
                "{what}"
            );
            assert_eq!(
                decode_stream(Backend::Sim, dtype, &enc.bytes).unwrap_or_else(|e| panic!("{what}: {e}")),
                data,
                "{what}: decode_stream"
            );
        }
    }
}

#[test]
fn sim32_and_sim64_write_the_same_bytes_and_read_each_other() {
    for dtype in DType::CODED {
        let data = testdata::elements(dtype, 3 * FRAME + 5, 7);
        for codec in CODECS {
            let what = format!("{dtype:?} {}", name(codec));
            let e32 = encode(Backend::Sim, dtype, codec, &data, FRAME).unwrap();
            let e64 = encode(Backend::Sim64, dtype, codec, &data, FRAME).unwrap();
            assert_eq!(e32, e64, "{what}");
            assert_eq!(decode(Backend::Sim64, &e32).unwrap(), data, "{what}");
        }
    }
}

#[test]
fn normal_data_compresses() {
    let data = testdata::normal(DType::Bf16, 8 * FRAME, 3);
    for codec in CODECS {
        let enc = encode(Backend::Sim, DType::Bf16, codec, &data, FRAME).unwrap();
        let ratio = enc.ratio();
        match codec {
            // the headers cost a little
            None => assert!(ratio > 1.0, "raw: {ratio}"),
            Some(c) => assert!(ratio < 0.85, "{}: ratio {ratio} on N(0,1) bf16", c.name()),
        }
        assert_eq!(decode(Backend::Sim, &enc).unwrap(), data);
    }
}

#[test]
fn parse_stream_finds_every_frame() {
    let data = testdata::normal(DType::F16, 3 * FRAME + 1, 4);
    let enc = encode(Backend::Sim, DType::F16, Some(CodecId::ExpWindow), &data, FRAME).unwrap();
    let parsed = parse_stream(DType::F16, &enc.bytes).unwrap();
    assert_eq!(parsed, enc);
    // an empty stream is no data
    let empty = parse_stream(DType::F16, &[]).unwrap();
    assert_eq!((empty.n, empty.nframes()), (0, 0));
    assert_eq!(decode_stream(Backend::Sim, DType::F16, &[]).unwrap(), Vec::<u8>::new());
    // trailing zero padding up to the next alignment is allowed
    let mut padded = enc.bytes.clone();
    padded.resize(padded.len().next_multiple_of(FRAME_ALIGN), 0);
    assert_eq!(decode_stream(Backend::Sim, DType::F16, &padded).unwrap(), data);
}

/// Runs `decode_stream` on `bytes` and returns the error, which must be typed.
fn stream_error(dtype: DType, bytes: &[u8]) -> Error {
    match decode_stream(Backend::Sim, dtype, bytes) {
        Ok(_) => panic!("a damaged stream decoded"),
        Err(e) => e,
    }
}

#[test]
fn damaged_streams_are_typed_errors() {
    let dtype = DType::Bf16;
    let data = testdata::normal(dtype, 3 * FRAME, 5);
    let enc = encode(Backend::Sim, dtype, Some(CodecId::Huffman), &data, FRAME).unwrap();
    let second = enc.frame_offsets[1] as usize;

    // a header byte of the second frame
    let mut bytes = enc.bytes.clone();
    bytes[second + 9] ^= 0x10;
    assert!(
        matches!(
            stream_error(dtype, &bytes),
            Error::Frame {
                frame: 1,
                error: FrameError::HeaderChecksum { .. }
            }
        ),
        "header bit flip"
    );

    // a payload byte of the second frame: the coder or the checksum notices
    let mut bytes = enc.bytes.clone();
    bytes[second + 100] ^= 0x01;
    match stream_error(dtype, &bytes) {
        Error::Frame {
            frame: 1,
            error: FrameError::RawChecksum { .. },
        } => {}
        Error::Frame {
            frame: 1,
            error: FrameError::Corrupt { codec, reason, .. },
        } => {
            assert_eq!(codec, CodecId::Huffman);
            assert!(!reason.is_empty() && !reason.contains("simulator decodes"), "{reason}");
        }
        other => panic!("payload bit flip: {other:?}"),
    }

    // cut in the middle of the last frame
    let cut = &enc.bytes[..enc.bytes.len() - 10];
    assert!(matches!(
        stream_error(dtype, cut),
        Error::Frame {
            frame: 2,
            error: FrameError::Truncated { .. }
        }
    ));

    // not a frame at all
    assert!(matches!(
        stream_error(dtype, &[0x55; 64]),
        Error::Frame {
            frame: 0,
            error: FrameError::BadMagic { .. }
        }
    ));

    // another dtype
    assert!(matches!(
        stream_error(DType::F16, &enc.bytes),
        Error::Frame {
            frame: 0,
            error: FrameError::WrongDType {
                frame: DType::Bf16,
                expected: DType::F16
            }
        }
    ));

    // frames of different sizes
    let small = encode(Backend::Sim, dtype, None, &data[..2 * FRAME], FRAME / 2).unwrap();
    let mut mixed = enc.bytes[..enc.frame_offsets[1] as usize].to_vec();
    mixed.extend_from_slice(&small.bytes);
    assert!(matches!(stream_error(dtype, &mixed), Error::Stream { frame: 1, .. }));
}

#[test]
fn bad_layouts_and_arguments_are_typed_errors() {
    let dtype = DType::F32;
    let data = testdata::elements(dtype, 2 * FRAME, 6);
    let enc = encode(Backend::Sim, dtype, Some(CodecId::FixedLen), &data, FRAME).unwrap();

    let mut past_end = enc.clone();
    past_end.frame_offsets[1] = enc.bytes.len() as u64;
    assert!(matches!(
        decode(Backend::Sim, &past_end),
        Err(Error::Stream { frame: 1, .. })
    ));

    let mut missing = enc.clone();
    missing.frame_lens.pop();
    assert!(matches!(decode(Backend::Sim, &missing), Err(Error::Stream { .. })));

    let mut more = enc.clone();
    more.n += 1;
    assert!(matches!(decode(Backend::Sim, &more), Err(Error::Stream { .. })));

    // one element less: the last frame's data no longer fits its place
    let mut short = enc.clone();
    short.n -= 1;
    assert!(matches!(
        decode(Backend::Sim, &short),
        Err(Error::Frame {
            frame: 1,
            error: FrameError::BadRawLength { .. }
        })
    ));

    for backend in [
        Backend::Sim,
        Backend::Sim64,
        Backend::Cuda { ordinal: 0 },
        Backend::Hip { ordinal: 0 },
    ] {
        assert!(matches!(
            encode(backend, dtype, None, &[0u8; 7], FRAME),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            encode(backend, dtype, None, &data, 0),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            encode(backend, dtype, None, &data, usize::MAX),
            Err(Error::InvalidArgument(_))
        ));
    }
    assert!(matches!(slot_bytes(dtype, 0), Err(Error::InvalidArgument(_))));
    assert_eq!(slot_bytes(dtype, FRAME).unwrap() % FRAME_ALIGN, 0);
    let empty = encode(Backend::Sim, dtype, Some(CodecId::ExpAns), &[], FRAME).unwrap();
    assert_eq!((empty.nframes(), empty.bytes.len()), (0, 0));
    assert_eq!(decode(Backend::Sim, &empty).unwrap(), Vec::<u8>::new());
}

#[test]
fn failed_frames_and_status_records_map_back_to_frame_errors() {
    let dtype = DType::Bf16;
    let data = testdata::elements(dtype, 2 * FRAME, 8);
    let enc = encode(Backend::Sim, dtype, None, &data, FRAME).unwrap();
    let slot = slot_bytes(dtype, FRAME).unwrap();

    // an encoder that failed frame 1 with OutputTooSmall (code 11) left its record in the slot
    let mut slots = vec![0u8; 2 * slot];
    slots[..enc.frame_lens[0] as usize].copy_from_slice(enc.frame(0).unwrap());
    for (i, word) in [11u32, 1056, 40, 0].iter().enumerate() {
        slots[slot + 4 * i..slot + 4 * i + 4].copy_from_slice(&word.to_le_bytes());
    }
    let lens = [enc.frame_lens[0], u32::MAX];
    assert!(matches!(
        pack_slots(dtype, None, 2 * FRAME, FRAME, slot, &slots, &lens),
        Err(Error::Frame {
            frame: 1,
            error: FrameError::OutputTooSmall { need: 1056, have: 40 }
        })
    ));
    let ok = pack_slots(dtype, None, 2 * FRAME, FRAME, slot, &slots, &[enc.frame_lens[0]; 2]).unwrap();
    assert_eq!(ok.frame_offsets, [0, slot_offset(enc.frame_lens[0])]);

    // decoder records: fine, a checksum error (code 10), a short frame, an unknown code
    let fine = [0, 0, 0, FRAME as u32];
    let check = |second: [u32; 4]| check_decode_status(&enc, &[fine, second].concat());
    assert!(check(fine).is_ok());
    assert!(matches!(
        check([10, 1, 2, 0]),
        Err(Error::Frame {
            frame: 1,
            error: FrameError::RawChecksum { stored: 1, computed: 2 }
        })
    ));
    assert!(matches!(check([0, 0, 0, 3]), Err(Error::Stream { frame: 1, .. })));
    assert!(matches!(check([99, 0, 0, 0]), Err(Error::Stream { frame: 1, .. })));
    // a Corrupt record for a frame the simulator decodes fine keeps a reason that says so
    match check([9, CodecId::Raw as u32, 32, 0]) {
        Err(Error::Frame {
            frame: 1,
            error: FrameError::Corrupt { codec, offset, reason },
        }) => {
            assert_eq!((codec, offset), (CodecId::Raw, 32));
            assert!(reason.contains("simulator"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}

/// Where the second frame starts after a first frame of `len` bytes.
fn slot_offset(len: u32) -> u64 {
    u64::from(len).next_multiple_of(FRAME_ALIGN as u64)
}

/// Whether the GPU path must run (`ZIPCOLL_REQUIRE_GPU=1`, set on the GPU machine): then a CUDA
/// test that finds no GPU or no kernels fails instead of reporting why it could not run.
fn gpu_required() -> bool {
    std::env::var("ZIPCOLL_REQUIRE_GPU").is_ok_and(|v| v == "1")
}

/// CUDA either encodes exactly the simulator's bytes and decodes both ways, or says, typed,
/// why it cannot run (on machines without a GPU: no driver), which fails under
/// `ZIPCOLL_REQUIRE_GPU=1`.
#[test]
fn cuda_matches_sim_or_reports_why() {
    let gpu = Backend::Cuda { ordinal: 0 };
    let data = testdata::elements(DType::Bf16, 3 * FRAME + 3, 9);
    let sim = encode(Backend::Sim, DType::Bf16, Some(CodecId::ExpAns), &data, FRAME).unwrap();
    match encode(gpu, DType::Bf16, Some(CodecId::ExpAns), &data, FRAME) {
        Ok(enc) => {
            assert_eq!(enc, sim, "the GPU writes the simulator's frames");
            assert_eq!(decode(gpu, &sim).unwrap(), data);
            assert_eq!(decode_stream(Backend::Sim, DType::Bf16, &enc.bytes).unwrap(), data);
        }
        Err(e) => assert_gpu_unavailable(e, &sim),
    }
}

/// The error of a CUDA call on a machine where CUDA cannot run must say why, typed: no driver
/// (then every other CUDA entry fails the same way) or no kernels built; either fails under
/// `ZIPCOLL_REQUIRE_GPU=1`. `sim` is a stream the failing backend was given to decode.
fn assert_gpu_unavailable(e: Error, sim: &Encoded) {
    let gpu = Backend::Cuda { ordinal: 0 };
    match e {
        Error::BackendUnavailable {
            backend: "cuda",
            reason,
        } => {
            assert!(
                !gpu_required(),
                "ZIPCOLL_REQUIRE_GPU=1 but CUDA is unavailable: {reason}"
            );
            assert!(!cuda::is_available(), "{reason}");
            assert!(matches!(
                decode(gpu, sim),
                Err(Error::BackendUnavailable { backend: "cuda", .. })
            ));
            assert!(matches!(
                decode_stream(gpu, sim.dtype, &sim.bytes),
                Err(Error::BackendUnavailable { backend: "cuda", .. })
            ));
            assert!(matches!(
                CudaCodec::new(0),
                Err(Error::BackendUnavailable { backend: "cuda", .. })
            ));
        }
        Error::KernelsNotBuilt { hint } => {
            assert!(
                !gpu_required(),
                "ZIPCOLL_REQUIRE_GPU=1 but the kernels are not built: {hint}"
            );
            assert!(!zipcoll_host::kernels_embedded());
            assert!(hint.contains("scripts/setup.sh"));
        }
        e => panic!("unexpected CUDA error: {e}"),
    }
}

/// Block frames through the host API on the simulator: every dtype round-trips, the stream
/// parses back as block frames, and codecs without a block coder are argument errors.
#[test]
fn block_frames_round_trip_and_parse_back() {
    for dtype in DType::CODED {
        for codec in [None, Some(CodecId::ExpAns)] {
            let data = testdata::normal(dtype, 3 * 9000 + 5, 3);
            let enc = encode_with(Backend::Sim, FrameUnit::Block, dtype, codec, &data, 9000).unwrap();
            assert_eq!(enc.unit, FrameUnit::Block);
            assert_eq!(decode(Backend::Sim, &enc).unwrap(), data, "{dtype:?} {}", name(codec));
            let parsed = parse_stream(dtype, &enc.bytes).unwrap();
            assert_eq!(parsed, enc, "{dtype:?} {}", name(codec));
        }
    }
    let data = testdata::normal(DType::Bf16, 100, 1);
    assert!(matches!(
        encode_with(Backend::Sim, FrameUnit::Block, DType::Bf16, Some(CodecId::Huffman), &data, 64),
        Err(Error::InvalidArgument(m)) if m.contains("no block coder")
    ));
    assert!(matches!(
        encode_with(Backend::Sim64, FrameUnit::Block, DType::Bf16, None, &data, 64),
        Err(Error::InvalidArgument(_))
    ));
    // a block frame in a warp stream (or the other way) is a typed stream error
    let warp = encode(Backend::Sim, DType::Bf16, None, &data, 64).unwrap();
    let block = encode_with(Backend::Sim, FrameUnit::Block, DType::Bf16, None, &data, 64).unwrap();
    let mut mixed = warp.bytes[..warp.frame_offsets[1] as usize].to_vec();
    mixed.extend_from_slice(&block.bytes[block.frame_offsets[1] as usize..]);
    assert!(matches!(
        parse_stream(DType::Bf16, &mixed),
        Err(Error::Frame {
            frame: 1,
            error: FrameError::UnsupportedVersion { found: 2 }
        })
    ));
}

/// CUDA block frames are the simulator's bytes and decode both ways, or CUDA says why not.
#[test]
fn cuda_block_frames_match_sim_or_report_why() {
    let gpu = Backend::Cuda { ordinal: 0 };
    for dtype in [DType::Bf16, DType::F32, DType::F8E4M3, DType::I32, DType::U8] {
        let data = testdata::normal(dtype, 70_000, 4);
        let sim = encode_with(
            Backend::Sim,
            FrameUnit::Block,
            dtype,
            Some(CodecId::ExpAns),
            &data,
            32768,
        )
        .unwrap();
        match encode_with(gpu, FrameUnit::Block, dtype, Some(CodecId::ExpAns), &data, 32768) {
            Ok(enc) => {
                assert_eq!(enc, sim, "{dtype:?}: the GPU writes the simulator's block frames");
                assert_eq!(decode(gpu, &sim).unwrap(), data);
                assert_eq!(decode_stream(Backend::Sim, dtype, &enc.bytes).unwrap(), data);
            }
            Err(e) => return assert_gpu_unavailable(e, &sim),
        }
    }
}
