//! The device-function library's bodies (`device_fns`) on the CPU simulator, as a CUDA C++
//! caller would use them (raw pointers, the block's shared memory): bit-exact round trips of
//! every dtype with NaN payloads, infinities, -0.0 and subnormals; the same frame bytes as
//! zipcoll's own block encoder from another block size; every rejection a typed status, never
//! an access outside the buffers; the predictor equal to the arbitration's; and the C
//! header's constants equal to the Rust source's.

mod common;

use common::{block, scratch, Rng, SharedBuf};
use zipcoll_device::arbitrate::{predict as arbitrate_predict, Sample};
use zipcoll_device::codec::block_frame::encode_block_frame;
use zipcoll_device::codec::{CodecId, ExpAns};
use zipcoll_device::device_fns::{self as f, FrameInfo, INVALID_ARGUMENT, SAMPLE_ALIGN, SAMPLE_BYTES};
use zipcoll_device::dtype::{Bf16, DType, Elem, F32Exact, Split, F16, F32, F8E4M3, F8E5M2};
use zipcoll_device::frame::status::code;
use zipcoll_device::frame::BLOCK_FRAME_VERSION;
use zipcoll_targets::sim::SimWarp;
use zipcoll_targets::{SharedMem, Word};

/// The scratch pointer and size a CUDA caller passes: the block's shared memory.
fn smem(w: SimWarp<32>) -> (*mut u8, u32) {
    w.shared_mem()
}

/// `zc_encode_<T>` of `input` with `codec` by a block of `threads` threads into `cap` bytes;
/// the result and the bytes written.
fn encode<T: Split>(input: &[T::Bits], codec: u32, threads: u32, cap: usize) -> (i64, Vec<u8>)
where
    T::Bits: Sync,
{
    let buf = SharedBuf::new(cap, 0xEE);
    let r = block::<32, _>(threads, f::encode_scratch_bytes(threads), |w| {
        let (s, sb) = smem(w);
        let out = buf.out();
        // SAFETY: `input` and `out` are valid and disjoint; every thread passes the same
        // arguments; `s` is the block's shared memory.
        unsafe {
            f::encode::<_, T>(
                w,
                input.as_ptr(),
                input.len() as u64,
                codec,
                out.as_mut_ptr(),
                cap as u64,
                s,
                sb,
            )
        }
    });
    let mut bytes = buf.into_vec();
    bytes.truncate(r.max(0) as usize);
    (r, bytes)
}

/// `zc_decode_<T>` of `frame` into room for `cap` elements by a block of `threads` threads,
/// with `scratch_bytes` of its shared memory (`None`: what the decoder needs).
fn decode<T: Split>(frame: &[u8], cap: usize, threads: u32, scratch_bytes: Option<u32>) -> (i64, Vec<u64>) {
    let size = T::DTYPE.size_bytes();
    // 16 bytes of guard on each side: a write outside the output would show there
    let buf = SharedBuf::new(cap * size + 32, 0xA5);
    let need = f::decode_scratch_bytes(threads);
    let r = block::<32, _>(threads, need, |w| {
        let (s, sb) = smem(w);
        // SAFETY: as in `encode`; the output starts 16 bytes into `buf`, aligned for `T`.
        unsafe {
            let out = buf.out().as_mut_ptr().add(16).cast::<T::Bits>();
            f::decode::<_, T>(
                w,
                frame.as_ptr(),
                frame.len() as u64,
                out,
                cap as u64,
                s,
                scratch_bytes.unwrap_or(sb),
            )
        }
    });
    let bytes = buf.into_vec();
    assert!(bytes[..16].iter().all(|&b| b == 0xA5), "a write before the output");
    assert!(
        bytes[16 + cap * size..].iter().all(|&b| b == 0xA5),
        "a write past the output"
    );
    let elems = (0..r.max(0) as usize)
        .map(|i| (0..size).fold(0u64, |v, k| v | (bytes[16 + i * size + k] as u64) << (8 * k)))
        .collect();
    (r, elems)
}

/// Elements that exercise everything: N(0,1) values at mixed scales, and every special bit
/// pattern class (NaN payloads of both signs, infinities, -0.0, subnormals) sprinkled in.
fn data<T: Split + F32Exact>(n: usize, seed: u64) -> Vec<T::Bits> {
    let mut rng = Rng(seed);
    let bits = T::DTYPE.size_bytes() * 8;
    let (exp_bits, man_bits) = match T::DTYPE {
        DType::Bf16 => (8, 7),
        DType::F16 => (5, 10),
        DType::F32 => (8, 23),
        DType::F8E4M3 => (4, 3),
        _ => (5, 2),
    };
    let exp_mask = ((1u64 << exp_bits) - 1) << man_bits;
    let sign = 1u64 << (bits - 1);
    (0..n)
        .map(|i| {
            let v = match i % 16 {
                0 => exp_mask | (rng.next_u64() & ((1 << man_bits) - 1)) | 1, // NaN / inf-class payload
                1 => sign | exp_mask | 1,                                     // a negative NaN
                2 => sign,                                                    // -0.0
                3 => rng.next_u64() & ((1 << man_bits) - 1),                  // a subnormal
                4 => rng.next_u64() & ((1 << bits) - 1),                      // any bits
                _ => {
                    let x = rng.normal() * if i % 1024 < 512 { 1.0 } else { 0.03 };
                    T::from_f32(x as f32).to_bits64()
                }
            };
            T::Bits::from_bits64(v & ((1u64 << bits) - 1))
        })
        .collect()
}

fn bits_of<T: Elem>(v: &[T::Bits]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits64()).collect()
}

/// Round trips of `T` with RAW and ExpAns, several lengths, encoded by 64 threads and decoded
/// by 160; ExpAns's frame equals zipcoll's own encoder's from a block of 128 threads.
fn round_trips<T: Split + F32Exact>()
where
    T::Bits: Sync,
{
    for (n, seed) in [(1usize, 1u64), (31, 2), (4096, 3), (40_000, 4)] {
        let input = data::<T>(n, seed);
        let cap = f::max_frame_bytes::<T>(n as u64) as usize;
        for codec in [CodecId::Raw, CodecId::ExpAns] {
            let (r, frame) = encode::<T>(&input, codec as u32, 64, cap);
            assert!(
                r > 0 && r as usize <= cap,
                "{:?} {codec:?} n={n}: encode gave {r}",
                T::DTYPE
            );
            let mut info = FrameInfo::default();
            // SAFETY: `frame` and `info` are valid.
            let len = unsafe { f::check_frame(frame.as_ptr(), frame.len() as u64, &mut info) };
            assert_eq!(len, r);
            assert_eq!(info.elements as usize, n);
            assert_eq!(info.dtype, T::DTYPE as u32);
            assert_eq!(info.version, BLOCK_FRAME_VERSION as u32);
            assert!(codec == CodecId::ExpAns || info.codec == CodecId::Raw as u32);
            let (d, back) = decode::<T>(&frame, n, 160, None);
            assert_eq!(d, n as i64, "{:?} {codec:?} n={n}", T::DTYPE);
            assert_eq!(
                back,
                bits_of::<T>(&input),
                "{:?} {codec:?} n={n}: not bit-exact",
                T::DTYPE
            );
            if codec == CodecId::ExpAns {
                let own = SharedBuf::new(cap, 0xEE);
                let len = block::<32, _>(128, f::encode_scratch_bytes(128), |w| {
                    encode_block_frame::<_, T, ExpAns>(w, scratch(w), &input, own.out())
                })
                .expect("zipcoll's encoder");
                assert_eq!(
                    own.into_vec()[..len],
                    frame[..],
                    "{:?} n={n}: other bytes than zipcoll's",
                    T::DTYPE
                );
            }
        }
    }
}

#[test]
fn every_dtype_round_trips_bit_exactly_with_zipcolls_bytes() {
    round_trips::<Bf16>();
    round_trips::<F16>();
    round_trips::<F32>();
    round_trips::<F8E4M3>();
    round_trips::<F8E5M2>();
}

#[test]
fn expans_compresses_normal_bf16() {
    let mut rng = Rng(9);
    let input: Vec<u16> = (0..65536).map(|_| Bf16::from_f32(rng.normal() as f32)).collect();
    let cap = f::max_frame_bytes::<Bf16>(input.len() as u64) as usize;
    let (r, frame) = encode::<Bf16>(&input, CodecId::ExpAns as u32, 128, cap);
    let ratio = r as f64 / (2.0 * input.len() as f64);
    assert!(ratio < 0.70, "ExpAns on N(0,1) bf16: ratio {ratio}");
    let mut info = FrameInfo::default();
    // SAFETY: valid pointers.
    unsafe { f::check_frame(frame.as_ptr(), frame.len() as u64, &mut info) };
    assert_eq!(info.codec, CodecId::ExpAns as u32);
}

#[test]
fn bad_arguments_are_statuses() {
    let input = data::<Bf16>(1000, 5);
    let cap = f::max_frame_bytes::<Bf16>(1000) as usize;
    let status = |c: u32| -(c as i64);
    // an output too small, an unknown codec, a codec without a block coder
    assert_eq!(encode::<Bf16>(&input, 0, 64, cap - 1).0, status(code::OUTPUT_TOO_SMALL));
    assert_eq!(encode::<Bf16>(&input, 9, 64, cap).0, status(code::UNKNOWN_CODEC));
    assert_eq!(encode::<Bf16>(&input, 300, 64, cap).0, status(code::UNKNOWN_CODEC));
    assert_eq!(
        encode::<Bf16>(&input, CodecId::FixedLen as u32, 64, cap).0,
        status(code::CODEC_NOT_BUILT)
    );
    // a null input with elements, a null output with room
    let r = block::<32, _>(32, f::encode_scratch_bytes(32), |w| {
        let (s, sb) = smem(w);
        // SAFETY: the null pointers are refused before any access.
        unsafe {
            [
                f::encode::<_, Bf16>(w, core::ptr::null(), 4, 0, core::ptr::null_mut(), 0, s, sb),
                f::encode::<_, Bf16>(w, input.as_ptr(), 4, 0, core::ptr::null_mut(), 64, s, sb),
            ]
        }
    });
    assert_eq!(r, [INVALID_ARGUMENT; 2]);
    // shared memory too small for the coder
    let buf = SharedBuf::new(cap, 0);
    let r = block::<32, _>(64, f::encode_scratch_bytes(64), |w| {
        let (s, _) = smem(w);
        // SAFETY: valid buffers; the scratch size is understated, never overstated.
        unsafe { f::encode::<_, Bf16>(w, input.as_ptr(), 1000, 3, buf.out().as_mut_ptr(), cap as u64, s, 1024) }
    });
    assert_eq!(r, status(code::SCRATCH_TOO_SMALL));
    // a decode output not aligned for its elements
    let (_, frame) = encode::<F32>(&data::<F32>(100, 6), 3, 32, f::max_frame_bytes::<F32>(100) as usize);
    let out = SharedBuf::new(512, 0);
    let r = block::<32, _>(32, f::decode_scratch_bytes(32), |w| {
        let (s, sb) = smem(w);
        // SAFETY: refused before any access (the pointer is misaligned for u32).
        unsafe {
            let p = out.out().as_mut_ptr().add(2).cast::<u32>();
            f::decode::<_, F32>(w, frame.as_ptr(), frame.len() as u64, p, 100, s, sb)
        }
    });
    assert_eq!(r, INVALID_ARGUMENT);
}

#[test]
fn damaged_frames_are_rejected_inside_their_buffers() {
    let n = 5000;
    let input = data::<Bf16>(n, 7);
    let (_, frame) = encode::<Bf16>(
        &input,
        CodecId::ExpAns as u32,
        64,
        f::max_frame_bytes::<Bf16>(n as u64) as usize,
    );
    let status = |c: u32| -(c as i64);
    // the header's fields
    let mut bad = frame.clone();
    bad[0] ^= 1;
    assert_eq!(decode::<Bf16>(&bad, n, 64, None).0, status(code::BAD_MAGIC));
    // SAFETY: valid pointers; a null `info` is not written.
    assert_eq!(
        unsafe { f::check_frame(bad.as_ptr(), bad.len() as u64, core::ptr::null_mut()) },
        status(code::BAD_MAGIC)
    );
    let mut bad = frame.clone();
    bad[9] ^= 0x40;
    assert_eq!(decode::<Bf16>(&bad, n, 64, None).0, status(code::HEADER_CHECKSUM));
    // cut short, too little room, another dtype, too little shared memory
    assert_eq!(
        decode::<Bf16>(&frame[..frame.len() - 1], n, 64, None).0,
        status(code::TRUNCATED)
    );
    // SAFETY: valid pointers.
    assert_eq!(
        unsafe { f::check_frame(frame.as_ptr(), 20, core::ptr::null_mut()) },
        status(code::TRUNCATED)
    );
    assert!(decode::<Bf16>(&frame, n - 1, 64, None).0 < 0);
    assert_eq!(decode::<F16>(&frame, n, 64, None).0, status(code::WRONG_DTYPE));
    assert_eq!(
        decode::<Bf16>(&frame, n, 64, Some(100)).0,
        status(code::SCRATCH_TOO_SMALL)
    );
    // every single-bit flip of the payload: a status or, where the flip lands in bits the
    // decoder never reads, the original elements; never a write outside the output (`decode`
    // checks its guard bands)
    let mut rng = Rng(8);
    for _ in 0..300 {
        let mut bad = frame.clone();
        let at = 32 + rng.below((frame.len() - 32) as u64) as usize;
        bad[at] ^= 1 << rng.below(8);
        let (r, back) = decode::<Bf16>(&bad, n, 64, None);
        assert!(
            r < 0 || back == bits_of::<Bf16>(&input),
            "byte {at}: {r} and other elements"
        );
        if r < 0 {
            assert!((1..=15).contains(&-r), "byte {at}: {r} is no status");
        }
    }
}

/// The predictor's bytes equal the arbitration's for the same batch.
fn predicts_like_the_arbitration<T: Split + F32Exact>(n: usize, frame_elems: usize) {
    let input = data::<T>(n, n as u64);
    let want = arbitrate_predict::<T>(&Sample::of::<T>(&input), n, frame_elems);
    // a Vec of u64 is aligned for a Sample (SAMPLE_ALIGN is 8)
    let mut work = vec![0xFFu64; SAMPLE_BYTES.div_ceil(8)];
    let mut bytes = [0u64; CodecId::ALL.len()];
    // SAFETY: every buffer is valid and as large as `predict` asks.
    let r = unsafe {
        f::predict::<T>(
            input.as_ptr(),
            n as u64,
            frame_elems as u64,
            work.as_mut_ptr().cast(),
            bytes.as_mut_ptr(),
        )
    };
    assert_eq!(r, 0);
    assert_eq!(bytes, want.bytes, "{:?} n={n}", T::DTYPE);
}

#[test]
fn the_predictor_is_the_arbitrations() {
    assert_eq!(SAMPLE_ALIGN, 8);
    predicts_like_the_arbitration::<Bf16>(300_000, 32768);
    predicts_like_the_arbitration::<F32>(5000, 0);
    predicts_like_the_arbitration::<F8E4M3>(70_001, 8192);
    let mut bytes = [0u64; 5];
    let mut work = vec![0u64; SAMPLE_BYTES.div_ceil(8)];
    // SAFETY: the null input and the misaligned work memory are refused before any access.
    unsafe {
        assert_eq!(
            f::predict::<F16>(core::ptr::null(), 3, 0, work.as_mut_ptr().cast(), bytes.as_mut_ptr()),
            INVALID_ARGUMENT
        );
        let misaligned = work.as_mut_ptr().cast::<u8>().add(4);
        assert_eq!(
            f::predict::<F16>([0u16; 3].as_ptr(), 3, 0, misaligned, bytes.as_mut_ptr()),
            INVALID_ARGUMENT
        );
    }
}

/// The value of `#define NAME VALUE` in the header (`VALUE` an integer, maybe in parentheses).
fn define(header: &str, name: &str) -> i64 {
    header
        .lines()
        .find_map(|l| l.strip_prefix("#define ")?.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|v| v.split("/*").next())
        .map(|v| {
            v.trim()
                .trim_start_matches('(')
                .trim_end_matches(')')
                .parse()
                .expect("an integer")
        })
        .unwrap_or_else(|| panic!("the header defines {name}"))
}

/// The `(a, b)` of `#define NAME(threads) (au + bu * (((threads) + 31u) / 32u))`.
fn per_warp(header: &str, name: &str) -> (usize, usize) {
    let line = header
        .lines()
        .find(|l| l.starts_with(&format!("#define {name}(threads)")))
        .unwrap_or_else(|| panic!("the header defines {name}"));
    let nums: Vec<usize> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect();
    // the digits on the line: a, b, 31, 32
    assert_eq!(nums[2..], [31, 32], "{line}");
    (nums[0], nums[1])
}

#[test]
fn the_c_header_agrees_with_the_source() {
    let header = include_str!("../fns/include/zipcoll_device_fns.h");
    let statuses = [
        ("TRUNCATED", code::TRUNCATED),
        ("BAD_MAGIC", code::BAD_MAGIC),
        ("UNSUPPORTED_VERSION", code::UNSUPPORTED_VERSION),
        ("UNKNOWN_CODEC", code::UNKNOWN_CODEC),
        ("UNKNOWN_DTYPE", code::UNKNOWN_DTYPE),
        ("RESERVED", code::RESERVED),
        ("HEADER_CHECKSUM", code::HEADER_CHECKSUM),
        ("BAD_RAW_LENGTH", code::BAD_RAW_LENGTH),
        ("CORRUPT", code::CORRUPT),
        ("RAW_CHECKSUM", code::RAW_CHECKSUM),
        ("OUTPUT_TOO_SMALL", code::OUTPUT_TOO_SMALL),
        ("WRONG_DTYPE", code::WRONG_DTYPE),
        ("INPUT_TOO_LARGE", code::INPUT_TOO_LARGE),
        ("SCRATCH_TOO_SMALL", code::SCRATCH_TOO_SMALL),
        ("CODEC_NOT_BUILT", code::CODEC_NOT_BUILT),
    ];
    for (name, value) in statuses {
        assert_eq!(
            define(header, &format!("ZC_STATUS_{name}")),
            value as i64,
            "ZC_STATUS_{name}"
        );
    }
    assert_eq!(
        header.matches("#define ZC_STATUS_").count(),
        statuses.len(),
        "a status of the header not checked here"
    );
    assert_eq!(define(header, "ZC_INVALID_ARGUMENT"), INVALID_ARGUMENT);
    for id in CodecId::ALL {
        assert_eq!(
            define(header, &format!("ZC_CODEC_{}", id.name().to_uppercase())),
            id as i64
        );
    }
    assert_eq!(define(header, "ZC_CODECS"), CodecId::ALL.len() as i64);
    assert_eq!(define(header, "ZC_SAMPLE_BYTES"), SAMPLE_BYTES as i64);
    assert_eq!(define(header, "ZC_SAMPLE_ALIGN"), SAMPLE_ALIGN as i64);
    // every dtype of the library: its id, and its four functions declared
    macro_rules! dtypes {
        ($([$t:ident, $suffix:ident])*) => {{
            let mut n = 0;
            $(
                let suffix = stringify!($suffix);
                assert_eq!(define(header, &format!("ZC_DTYPE_{}", suffix.to_uppercase())), DType::$t as i64);
                for f in ["encode", "decode", "predict", "max_frame_bytes"] {
                    assert!(header.contains(&format!(" zc_{f}_{suffix}(")), "zc_{f}_{suffix} is declared");
                }
                n += 1;
            )*
            n
        }};
    }
    let n = zipcoll_device::for_each_device_fn_dtype!((dtypes) {});
    assert_eq!(header.matches("#define ZC_DTYPE_").count(), n);
    // the scratch formulas, for every block of whole warps up to 1024 threads
    let (ea, eb) = per_warp(header, "ZC_ENCODE_SCRATCH_BYTES");
    let (da, db) = per_warp(header, "ZC_DECODE_SCRATCH_BYTES");
    for warps in 1..=32usize {
        let threads = 32 * warps as u32;
        assert_eq!(ea + eb * warps, f::encode_scratch_bytes(threads), "{threads} threads");
        assert_eq!(da + db * warps, f::decode_scratch_bytes(threads), "{threads} threads");
    }
    assert!(header.contains("zipcoll launches 128 threads: 40372 bytes to encode, 17364 to decode"));
    assert_eq!(
        (f::encode_scratch_bytes(128), f::decode_scratch_bytes(128)),
        (40372, 17364)
    );
    // the info struct: six u32 fields in this order
    let fields: Vec<&str> = header
        .split("typedef struct zc_frame_info {")
        .nth(1)
        .and_then(|s| s.split('}').next())
        .expect("the struct")
        .lines()
        .filter_map(|l| l.trim().strip_prefix("uint32_t ")?.split(';').next())
        .collect();
    assert_eq!(
        fields,
        ["frame_bytes", "raw_bytes", "elements", "codec", "dtype", "version"]
    );
    assert_eq!(core::mem::size_of::<FrameInfo>(), 4 * fields.len());
    assert_eq!(define(header, "ZC_DTYPE_BF16"), DType::Bf16 as i64);
}
