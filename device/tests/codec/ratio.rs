//! Compression on N(0,1) data (printed with `--nocapture`), and checks of what the coders
//! chose: ExpWindow's window and escapes, FixedLen's sub-block widths.

use crate::data::normal_elems;
use crate::harness::{encode_all, roundtrip, Encoder, Ty, With};
use crate::util::Rng;
use zipcoll_device::codec::{ExpAns, ExpWindow, FixedLen, Huffman};
use zipcoll_device::dtype::{Bf16, F16, F32, F8E4M3, F8E5M2, I32, U32, U8};
use zipcoll_device::frame::{FrameHeader, HEADER_BYTES};

/// Bits per element of `inputs` in frames of encoder `E` (one frame per input).
fn coded_bits<E: Encoder, T: Ty>(inputs: &[Vec<T::Bits>]) -> f64 {
    let n: usize = inputs.iter().map(Vec::len).sum();
    encode_all::<32, E, T>(inputs).iter().map(Vec::len).sum::<usize>() as f64 * 8.0 / n as f64
}

/// Bits per element over 4 frames of 4096 N(0, sigma^2) elements of `T` with encoder `E`.
fn bits_per_value<E: Encoder, T: Ty>(sigma: f64) -> f64 {
    coded_bits::<E, T>(&(0..4).map(|s| T::typical(s, 4096, sigma)).collect::<Vec<_>>())
}

#[test]
fn ratios_on_normal_data() {
    fn row<T: Ty>(sigma: f64) -> (f64, f64) {
        let bits = 8.0 * T::DTYPE.size_bytes() as f64;
        let f = bits_per_value::<With<FixedLen>, T>(sigma);
        let e = bits_per_value::<With<ExpWindow>, T>(sigma);
        println!(
            "{:>7?} N(0,{sigma}^2): fixedlen {f:5.2} bits/value (ratio {:.3}), expwindow {e:5.2} bits/value (ratio {:.3})",
            T::DTYPE,
            bits / f,
            bits / e
        );
        (f, e)
    }
    let (f, e) = row::<Bf16>(1.0);
    assert!(e < 11.5, "ExpWindow bf16 N(0,1): {e} bits/value");
    assert!(f < 12.0, "FixedLen bf16 N(0,1): {f} bits/value");
    let (f2, e2) = row::<Bf16>(0.02);
    assert!(
        (f2 - f).abs() < 0.2 && (e2 - e).abs() < 0.2,
        "the scale should not matter"
    );
    let (f, e) = row::<F16>(1.0);
    assert!(f < 15.0 && e < 15.0);
    let (f, e) = row::<F32>(1.0);
    assert!(f < 28.0 && e < 28.0);
    row::<F8E4M3>(1.0);
    row::<F8E5M2>(1.0);
}

/// [`coded_bits`] of `inputs` for FixedLen, ExpWindow, ExpAns and Huffman (printed).
fn int_bits<T: Ty>(what: &str, inputs: &[Vec<T::Bits>]) -> [f64; 4] {
    let got = [
        coded_bits::<With<FixedLen>, T>(inputs),
        coded_bits::<With<ExpWindow>, T>(inputs),
        coded_bits::<With<ExpAns>, T>(inputs),
        coded_bits::<With<Huffman>, T>(inputs),
    ];
    println!(
        "{:?} {what}: fixedlen {:.2}, expwindow {:.2}, expans {:.2}, huffman {:.2} bits/value",
        T::DTYPE,
        got[0],
        got[1],
        got[2],
        got[3]
    );
    got
}

/// The integers' coders save bytes where the high bits repeat: the raw part (24 bits of i32,
/// the low nibble of u8) stays, the symbol (top byte, high nibble) shrinks to what it holds.
#[test]
fn integers_code_below_their_width_where_high_bits_repeat() {
    // i32 N(0, 64^2): top byte 0x00 or 0xFF, one bit; the entropy coders stay near 25 bits
    let signed: Vec<Vec<u32>> = (0..4).map(|s| I32::typical(s, 4096, 1.0)).collect();
    let [_, _, ans, huf] = int_bits::<I32>("N(0, 64^2)", &signed);
    assert!(ans < 25.5 && huf < 25.5, "i32: expans {ans}, huffman {huf} bits/value");
    // u32 magnitudes below 2^24: top byte 0, every coder within about a bit of 24 bits
    // (FixedLen's and ExpWindow's per-block widths and windows cost 0.5-1 bit)
    let unsigned: Vec<Vec<u32>> = (0..4).map(|s| U32::typical(s, 4096, 1.0)).collect();
    for (b, codec) in
        int_bits::<U32>("|N(0, 64^2)|", &unsigned)
            .iter()
            .zip(["fixedlen", "expwindow", "expans", "huffman"])
    {
        assert!(*b < 25.5, "u32 {codec}: {b} bits/value");
    }
    // u8 below 16: both high nibbles 0; 4 raw bits a value and at most 0.6 more
    let mut rng = Rng(5);
    let small: Vec<Vec<u8>> = (0..4)
        .map(|_| (0..4096).map(|_| rng.below(16) as u8).collect())
        .collect();
    for (b, codec) in int_bits::<U8>("below 16", &small)
        .iter()
        .zip(["fixedlen", "expwindow", "expans", "huffman"])
    {
        assert!(*b < 4.75, "u8 {codec}: {b} bits/value");
    }
}

/// On N(0,1) bf16 ExpWindow picks k = 3 with a few percent escapes.
#[test]
fn exp_window_choice_on_normal_data() {
    let input = normal_elems::<Bf16>(9, 8192, 1.0);
    let frame = encode_all::<32, With<ExpWindow>, Bf16>(&[input]).remove(0);
    let h = FrameHeader::parse(&frame).unwrap();
    let (k, base, escapes) = (h.params >> 8, h.params & 0xFF, h.params2);
    println!(
        "ExpWindow on N(0,1) bf16: k = {k}, window {base}..={}, {escapes} escapes of 8192",
        base + 6
    );
    assert_eq!(k, 3);
    assert!((121..=124).contains(&base), "window base {base}");
    assert!(escapes > 0 && escapes < 8192 / 20, "{escapes} escapes");
}

/// Every exponent escaped at least once: a dense window plus one value of every exponent.
#[test]
fn exp_window_escapes_every_symbol() {
    let mut input = normal_elems::<Bf16>(3, 4096, 1.0);
    for s in 0..=255u16 {
        let at = (s as usize * 37 + 5) % input.len();
        input.insert(at, s << 7 | (s & 0x7F) | if s % 2 == 0 { 0x8000 } else { 0 });
    }
    let stats = roundtrip::<With<ExpWindow>, Bf16>(&[input.clone()]);
    assert_eq!(stats.coded, 1);
    let frame = encode_all::<32, With<ExpWindow>, Bf16>(&[input]).remove(0);
    let h = FrameHeader::parse(&frame).unwrap();
    assert!(h.params2 >= 256 - 7, "{} escapes", h.params2);
}

/// FixedLen uses every sub-block width 0..=8: sub-block `b` spans `2^(b % 9) - 1` symbols.
#[test]
fn fixed_len_every_width() {
    let blocks = 9 * 8;
    let input: Vec<u16> = (0..blocks * 32)
        .map(|i| {
            let (b, j) = (i / 32, i % 32);
            let range = (1u32 << (b % 9)) - 1;
            let base = if b % 9 == 8 { 0 } else { (b * 3 % 64) as u32 };
            let s = match j {
                0 => base,
                1 => base + range,
                _ => base + j as u32 * 7 % (range + 1),
            } as u16;
            s << 7 | (i as u16 & 0x807F)
        })
        .collect();
    let stats = roundtrip::<With<FixedLen>, Bf16>(std::slice::from_ref(&input));
    assert_eq!(stats.coded, 1);
    let frame = encode_all::<32, With<FixedLen>, Bf16>(&[input]).remove(0);
    // Header section right after the 8-bit raw plane.
    let at = HEADER_BYTES + blocks * 32;
    for b in 0..blocks {
        let width = frame[at + 2 * b + 1] as usize;
        assert_eq!(width, b % 9, "sub-block {b}");
    }
}

/// Zeros, infinities and NaNs do not pull ExpWindow's window off the bulk: N(0,1) bf16 with
/// 25% zeros and 1% ±inf/NaN still codes near the clean rate plus the escapes' bytes.
#[test]
fn exp_window_robust_to_zeros_and_specials() {
    let mut rng = crate::util::Rng(8);
    let input: Vec<u16> = normal_elems::<Bf16>(4, 8192, 1.0)
        .into_iter()
        .map(|x| match rng.below(100) {
            0..=24 => 0,
            25 => 0x7F80 | (rng.next_u32() as u16 & 0x807F),
            _ => x,
        })
        .collect();
    let frame = encode_all::<32, With<ExpWindow>, Bf16>(std::slice::from_ref(&input)).remove(0);
    let h = FrameHeader::parse(&frame).unwrap();
    let bits = frame.len() as f64 * 8.0 / input.len() as f64;
    println!(
        "ExpWindow on N(0,1) bf16 + 25% zeros + 1% inf/NaN: {bits:.2} bits/value, k = {}, base {}, {} escapes",
        h.params >> 8,
        h.params & 0xFF,
        h.params2
    );
    assert!(bits < 11.25 + 0.27 * 8.0 + 0.2, "{bits} bits/value");
    roundtrip::<With<ExpWindow>, Bf16>(&[input]);
}

/// A frame of more than 65535 symbols (ExpWindow sums its bins one per warp sum).
#[test]
fn exp_window_large_frame() {
    let input = normal_elems::<Bf16>(6, 70_000, 1.0);
    let stats = crate::harness::roundtrip_cross::<With<ExpWindow>, Bf16>(&[input]);
    assert_eq!(stats.coded, 1);
    assert!(stats.frame_bytes * 8 < 70_000 * 23 / 2, "{} bytes", stats.frame_bytes);
}
