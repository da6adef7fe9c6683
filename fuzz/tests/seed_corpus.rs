//! Writes the seed corpus under `fuzz/corpus/<target>/` (checked in): valid frames of every
//! codec for each dtype (version 1, and block frames), data for the round trips, a valid
//! header, bootstrap and NET records. The frames hold 256 bytes of data (4 groups of 32 split
//! words for the 16-bit types and fp8, 2 for f32): every codec's per-group and per-pass code,
//! at a fraction of the simulation time per execution that the 1200-byte frames before took.
//! Run again after a format change: `cargo test -p zipcoll-fuzz --test seed_corpus -- --ignored`.

use std::path::PathBuf;
use zipcoll_device::dtype::{Bf16, Split, F16, F32, F8E4M3, F8E5M2, I32, I8, U32, U8};

fn dir(target: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpus").join(target);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write(target: &str, name: &str, bytes: &[u8]) {
    std::fs::write(dir(target).join(name), bytes).unwrap();
}

/// Bytes of `n` values like a layer's activations (a few exponents common, some rare).
fn data(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n * 4)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // low bytes random, high bytes (exponents) concentrated
            if i % 2 == 1 {
                0x3C + (x % 5) as u8
            } else {
                x as u8
            }
        })
        .collect()
}

/// Block frames (RAW and ExpAns) of `T` for `decode_block`, whose first byte is `dtype`.
fn block_frames<T: Split>(dtype: u8)
where
    T::Bits: Send + Sync,
{
    for (name, raw) in [("raw", true), ("exp_ans", false)] {
        let frame = smallest_coded::<T>(|x| zipcoll_fuzz::try_encode_block::<T>(x, raw).unwrap(), raw);
        write(
            "decode_block",
            &format!("dtype{dtype}_{name}"),
            &[&[dtype][..], &frame].concat(),
        );
    }
}

/// The smallest frame (of data(32 k) for k = 2, 3, ..: at least 64 split words of f32, two
/// passes of a warp) that `encode` does not write RAW
/// (`encode` of RAW: the first), with its capacity prefix.
fn smallest_coded<T: Split>(encode: impl Fn(&[T::Bits]) -> Vec<u8>, raw: bool) -> Vec<u8> {
    for k in 2..=16 {
        let input = zipcoll_fuzz::elems::<T>(&data(32 * k, 7));
        let frame = encode(&input);
        if raw || frame[3] != 0 {
            let cap = ((input.len() * T::DTYPE.size_bytes()) as u16).to_le_bytes();
            return [&cap[..], &frame].concat();
        }
    }
    panic!("no coded frame up to 2 KiB of data");
}

fn frames<T: Split>(target: &str)
where
    T::Bits: Send + Sync,
{
    use zipcoll_device::codec::{ExpAns, ExpWindow, FixedLen, Huffman};
    use zipcoll_fuzz::encode;
    for (name, frame) in [
        ("raw", smallest_coded::<T>(|x| encode::<T, FixedLen>(x, true), true)),
        (
            "fixed_len",
            smallest_coded::<T>(|x| encode::<T, FixedLen>(x, false), false),
        ),
        (
            "exp_window",
            smallest_coded::<T>(|x| encode::<T, ExpWindow>(x, false), false),
        ),
        ("exp_ans", smallest_coded::<T>(|x| encode::<T, ExpAns>(x, false), false)),
        (
            "huffman",
            smallest_coded::<T>(|x| encode::<T, Huffman>(x, false), false),
        ),
    ] {
        write(target, name, &frame);
        if target == "decode_bf16" {
            write("frame_header", name, &frame[2..34]);
        }
    }
}

#[test]
#[ignore = "writes the checked-in corpus"]
fn write_seed_corpus() {
    frames::<Bf16>("decode_bf16");
    frames::<F16>("decode_f16");
    frames::<F32>("decode_f32");
    frames::<F8E4M3>("decode_f8e4m3");
    frames::<F8E5M2>("decode_f8e5m2");
    frames::<I8>("decode_i8");
    frames::<U8>("decode_u8");
    frames::<I32>("decode_i32");
    frames::<U32>("decode_u32");
    for target in [
        "roundtrip_raw",
        "roundtrip_fixed_len",
        "roundtrip_exp_window",
        "roundtrip_exp_ans",
        "roundtrip_huffman",
    ] {
        for dtype in 0..zipcoll_fuzz::CODED_DTYPES {
            write(
                target,
                &format!("dtype{dtype}"),
                &[&[dtype][..], &data(64, 11 + dtype as u64)].concat(),
            );
        }
    }
    block_frames::<Bf16>(0);
    block_frames::<F16>(1);
    block_frames::<F32>(2);
    block_frames::<F8E4M3>(3);
    block_frames::<F8E5M2>(4);
    block_frames::<I8>(5);
    block_frames::<U8>(6);
    block_frames::<I32>(7);
    block_frames::<U32>(8);
    // block round trips: ExpAns (bit 7 clear) and RAW (bit 7 set) per dtype
    for dtype in 0..zipcoll_fuzz::CODED_DTYPES {
        for raw in [0, 0x80] {
            write(
                "roundtrip_block",
                &format!("dtype{dtype}{}", if raw == 0 { "" } else { "_raw" }),
                &[&[dtype | raw][..], &data(64, 11 + dtype as u64)].concat(),
            );
        }
    }
    // bootstrap: a TABLE of one IPv4 address, a FAIL, a HELLO (version 1, magic, rank 0 of 2)
    write(
        "bootstrap_message",
        "table",
        &[2, 1, 0, 0, 0, 4, 127, 0, 0, 1, 0x39, 0x30],
    );
    write("bootstrap_message", "fail", &[3, 2, 0, 0, 0, b'n', b'o']);
    let mut hello = vec![1u8];
    hello.extend_from_slice(&1u32.to_le_bytes());
    hello.extend_from_slice(&0x1234_5678_9ABC_DEF0u64.to_le_bytes());
    hello.extend_from_slice(&0u32.to_le_bytes());
    hello.extend_from_slice(&2u32.to_le_bytes());
    hello.extend_from_slice(&[4, 10, 0, 0, 1, 0x39, 0x30]);
    write("bootstrap_message", "hello", &hello);
    // NET (wire version 2): a HELLO handshake (ZCNT, version 2, kind 1, magic, ranks 0 -> 1,
    // socket 0 of 8, pieces of at least 64 KiB, reserved) and a DATA piece (kind 1, connection
    // 0, step 3, 64 KiB at offset 128 KiB of a 512 KiB frame, reserved) followed by a striping
    // (1 + 7 = 8 sockets, pieces of at least 64 KiB)
    let mut hs = b"ZCNT".to_vec();
    hs.extend_from_slice(&2u16.to_le_bytes());
    hs.extend_from_slice(&1u16.to_le_bytes());
    hs.extend_from_slice(&7u64.to_le_bytes());
    for v in [0u32, 1, 0, 8, 65536, 0] {
        hs.extend_from_slice(&v.to_le_bytes());
    }
    write("net_wire", "handshake", &hs);
    let mut msg = 1u32.to_le_bytes().to_vec();
    msg.extend_from_slice(&0u32.to_le_bytes());
    msg.extend_from_slice(&3u64.to_le_bytes());
    for v in [65536u32, 131072, 524288, 0] {
        msg.extend_from_slice(&v.to_le_bytes());
    }
    msg.push(7);
    msg.extend_from_slice(&65536u32.to_le_bytes());
    write("net_wire", "data", &msg);
}
