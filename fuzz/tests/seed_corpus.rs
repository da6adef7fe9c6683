//! Writes the seed corpus under `fuzz/corpus/<target>/` (checked in): valid frames of every
//! codec for each dtype, data for the round trips, a valid header, bootstrap and NET records.
//! Run again after a format change: `cargo test -p zipcoll-fuzz --test seed_corpus -- --ignored`.

use std::path::PathBuf;
use zipcoll_device::dtype::{Bf16, Split, F16, F32, F8E4M3, F8E5M2};

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

fn frames<T: Split>(target: &str)
where
    T::Bits: Send + Sync,
{
    use zipcoll_device::codec::{ExpAns, ExpWindow, FixedLen, Huffman};
    let raw = data(300, 7);
    let input = zipcoll_fuzz::elems::<T>(&raw);
    let bytes = input.len() * T::DTYPE.size_bytes();
    let cap = (bytes as u16).to_le_bytes();
    for (name, frame) in [
        ("raw", zipcoll_fuzz::encode::<T, FixedLen>(&input, true)),
        ("fixed_len", zipcoll_fuzz::encode::<T, FixedLen>(&input, false)),
        ("exp_window", zipcoll_fuzz::encode::<T, ExpWindow>(&input, false)),
        ("exp_ans", zipcoll_fuzz::encode::<T, ExpAns>(&input, false)),
        ("huffman", zipcoll_fuzz::encode::<T, Huffman>(&input, false)),
    ] {
        write(target, name, &[&cap[..], &frame].concat());
        if target == "decode_bf16" {
            write("frame_header", name, &frame[..32]);
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
    for target in [
        "roundtrip_raw",
        "roundtrip_fixed_len",
        "roundtrip_exp_window",
        "roundtrip_exp_ans",
        "roundtrip_huffman",
    ] {
        for dtype in 0..5u8 {
            write(
                target,
                &format!("dtype{dtype}"),
                &[&[dtype][..], &data(200, 11 + dtype as u64)].concat(),
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
