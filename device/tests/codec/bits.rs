//! `zipcoll_device::bits` on the simulator, 32- and 64-lane warps: every lane's result against
//! a one-thread reference, over random inputs.

use crate::util::{one_warp, per_lane, ref_pack, Rng, SharedBuf};
use zipcoll_device::bits::{
    append_u16, append_u8, append_words, get_bit_planes, group_max_u32, group_min_u32, group_sum_u32, pack_fixed,
    pack_fixed_prefix, packed_bytes, put_bit_planes, read_bits, unpack_fixed, unpack_fixed_prefix, warp_checksum,
    warp_exclusive_scan, warp_max_u32, warp_min_u32, warp_sum_u32,
};
use zipcoll_device::codec::OutOfSpace;
use zipcoll_device::frame::checksum;
use zipcoll_targets::Lanes;

const ROUNDS: usize = 8;

/// `ROUNDS` rounds of random lane values (each round a different spread of magnitudes).
fn lane_values(w: u32, seed: u64) -> Vec<Vec<u32>> {
    let mut rng = Rng(seed);
    (0..ROUNDS)
        .map(|r| (0..w).map(|_| rng.next_u32() >> (r * 4)).collect())
        .collect()
}

fn reductions<const W: u32>() {
    let rounds = lane_values(W, 1 + W as u64);
    let got = per_lane::<W, _>(|w| {
        let l = w.lane_id() as usize;
        rounds
            .iter()
            .map(|v| {
                let x = v[l];
                let groups =
                    [2, 4, 8, 16, 32].map(|g| (group_sum_u32(w, x, g), group_max_u32(w, x, g), group_min_u32(w, x, g)));
                (
                    warp_sum_u32(w, x),
                    warp_max_u32(w, x),
                    warp_min_u32(w, x),
                    warp_exclusive_scan(w, x),
                    groups,
                )
            })
            .collect::<Vec<_>>()
    });
    for (r, v) in rounds.iter().enumerate() {
        let sum = v.iter().fold(0u32, |a, b| a.wrapping_add(*b));
        for (l, lane) in got.iter().enumerate() {
            let (s, mx, mn, (ex, total), groups) = lane[r];
            assert_eq!(s, sum, "sum W={W} round {r} lane {l}");
            assert_eq!(mx, *v.iter().max().unwrap());
            assert_eq!(mn, *v.iter().min().unwrap());
            assert_eq!(
                ex,
                v[..l].iter().fold(0u32, |a, b| a.wrapping_add(*b)),
                "scan W={W} lane {l}"
            );
            assert_eq!(total, sum);
            for (gi, g) in [2usize, 4, 8, 16, 32].into_iter().enumerate() {
                let grp = &v[l / g * g..l / g * g + g];
                let want = (
                    grp.iter().fold(0u32, |a, b| a.wrapping_add(*b)),
                    *grp.iter().max().unwrap(),
                    *grp.iter().min().unwrap(),
                );
                assert_eq!(groups[gi], want, "group {g} W={W} lane {l}");
            }
        }
    }
}

#[test]
fn reductions_and_scan_32() {
    reductions::<32>();
}

#[test]
fn reductions_and_scan_64() {
    reductions::<64>();
}

/// Rounds of appends of u32, u16 and u8 words with random emit masks, against a reference.
fn append<const W: u32>() {
    let mut rng = Rng(7 + W as u64);
    let rounds: Vec<Vec<(bool, u32)>> = (0..ROUNDS * 3)
        .map(|r| {
            let p = r % 4; // 0: none, 3: all, else random
            (0..W)
                .map(|_| ((p == 3) || (p != 0 && rng.below(3) == 0), rng.next_u32()))
                .collect()
        })
        .collect();
    let mut want = vec![0xEEu8; 3]; // start unaligned
    for (r, lanes) in rounds.iter().enumerate() {
        for (emit, word) in lanes {
            if *emit {
                match r % 3 {
                    0 => want.extend_from_slice(&word.to_le_bytes()),
                    1 => want.extend_from_slice(&(*word as u16).to_le_bytes()),
                    _ => want.push(*word as u8),
                }
            }
        }
    }
    for slack in [0usize, 1] {
        let buf = SharedBuf::new(want.len() + slack, 0xEE);
        let cursor = one_warp::<W, _>(|w| {
            let l = w.lane_id() as usize;
            let mut cursor = 3usize;
            for (r, lanes) in rounds.iter().enumerate() {
                let (emit, word) = lanes[l];
                // SAFETY: every lane of the one warp calls them converged with the same cursor;
                // nothing else writes the buffer.
                unsafe {
                    match r % 3 {
                        0 => append_words(w, emit, word, buf.out(), &mut cursor),
                        1 => append_u16(w, emit, word as u16, buf.out(), &mut cursor),
                        _ => append_u8(w, emit, word as u8, buf.out(), &mut cursor),
                    }
                }
                .unwrap();
            }
            cursor
        });
        assert_eq!(cursor, want.len());
        assert_eq!(&buf.into_vec()[..want.len()], &want[..], "W={W}");
    }
    // One byte short: every lane gets the error, the cursor stays, nothing is written.
    let buf = SharedBuf::new(4 * W as usize - 1, 0xEE);
    let got = one_warp::<W, _>(|w| {
        let mut cursor = 0usize;
        // SAFETY: every lane of the one warp calls it converged with the same arguments; nothing else
        // writes the buffer.
        let r = unsafe { append_words(w, true, 1, buf.out(), &mut cursor) };
        (r, cursor)
    });
    assert_eq!(got, (Err(OutOfSpace { offset: 0 }), 0));
    assert!(buf.into_vec().iter().all(|b| *b == 0xEE));
}

#[test]
fn append_32() {
    append::<32>();
}

#[test]
fn append_64() {
    append::<64>();
}

/// `pack_fixed` / `pack_fixed_prefix` for every width 0..=32 against the reference stream, and
/// the unpack functions back.
fn pack<const W: u32>() {
    let mut rng = Rng(99 + W as u64);
    let cases: Vec<(u32, u32, Vec<u32>)> = (0..=32u32)
        .flat_map(|bits| {
            let full: Vec<u32> = (0..W).map(|_| rng.next_u32()).collect();
            let lanes = rng.below(W as u64 + 1) as u32;
            let part: Vec<u32> = (0..W).map(|_| rng.next_u32()).collect();
            [(bits, W, full), (bits, lanes, part)]
        })
        .collect();
    let at = 5usize; // unaligned
    let size: usize = cases
        .iter()
        .map(|(bits, lanes, _)| packed_bytes(*lanes as usize, *bits))
        .sum();
    let buf = SharedBuf::new(at + size + 4, 0xEE);
    let input_len = at + size;
    one_warp::<W, _>(|w| {
        let l = w.lane_id() as usize;
        let mut off = at;
        for (bits, lanes, v) in &cases {
            // SAFETY: every lane of the one warp calls them converged with the same arguments;
            // nothing else writes the buffer.
            if *lanes == W {
                unsafe { pack_fixed(w, v[l], *bits, buf.out(), off) }.unwrap();
            } else {
                unsafe { pack_fixed_prefix(w, v[l], *bits, *lanes, buf.out(), off) }.unwrap();
            }
            off += packed_bytes(*lanes as usize, *bits);
        }
    });
    let bytes = buf.into_vec();
    let mut off = at;
    for (bits, lanes, v) in &cases {
        let masked: Vec<u32> = v[..*lanes as usize]
            .iter()
            .map(|x| x & zipcoll_device::bits::low_mask(*bits))
            .collect();
        let want = ref_pack(&masked, *bits);
        let got = &bytes[off..off + want.len()];
        assert_eq!(got, &want[..], "W={W} bits={bits} lanes={lanes}");
        for (i, m) in masked.iter().enumerate() {
            assert_eq!(read_bits(&bytes, off * 8 + i * *bits as usize, *bits), Some(*m));
        }
        off += want.len();
    }
    assert_eq!(&bytes[off..], &[0xEE; 4], "wrote past the streams");
    // Unpack on the warp.
    let input = &bytes[..input_len];
    let got = per_lane::<W, _>(|w| {
        let mut off = at;
        let mut r = Vec::new();
        for (bits, lanes, _) in &cases {
            r.push(if *lanes == W {
                unpack_fixed(w, *bits, input, off)
            } else {
                unpack_fixed_prefix(w, *bits, *lanes, input, off)
            });
            off += packed_bytes(*lanes as usize, *bits);
        }
        r
    });
    for (c, (bits, lanes, v)) in cases.iter().enumerate() {
        for l in 0..W as usize {
            let want = if (l as u32) < *lanes {
                v[l] & zipcoll_device::bits::low_mask(*bits)
            } else {
                0
            };
            assert_eq!(got[l][c], Some(want), "unpack W={W} bits={bits} lanes={lanes} lane {l}");
        }
    }
}

#[test]
fn pack_fixed_32() {
    pack::<32>();
}

#[test]
fn pack_fixed_64() {
    pack::<64>();
}

/// Out of space and short input: `Err`/`None` on every lane, nothing written.
fn pack_bounds<const W: u32>() {
    for bits in [1u32, 7, 8, 11, 24, 32] {
        let need = packed_bytes(W as usize, bits);
        let buf = SharedBuf::new(need + 2, 0xEE);
        // SAFETY: every lane of the one warp calls it converged with the same arguments; nothing else
        // writes the buffer.
        let r = one_warp::<W, _>(|w| unsafe { pack_fixed(w, 0xFFFF_FFFF, bits, buf.out(), 3) });
        assert_eq!(r, Err(OutOfSpace { offset: 3 }), "W={W} bits={bits}");
        assert!(buf.into_vec().iter().all(|b| *b == 0xEE));
        // SAFETY: as above.
        let r = one_warp::<W, _>(|w| unsafe { pack_fixed(w, 0, bits, SharedBuf::new(0, 0).out(), usize::MAX) });
        assert!(r.is_err());
        let input = vec![0u8; need + 2];
        assert_eq!(one_warp::<W, _>(|w| unpack_fixed(w, bits, &input, 3)), None);
        assert_eq!(one_warp::<W, _>(|w| unpack_fixed(w, bits, &input, usize::MAX)), None);
        assert!(one_warp::<W, _>(|w| unpack_fixed(w, bits, &input, 2)).is_some());
    }
    assert_eq!(read_bits(&[0xFF], 1, 8), None);
    assert_eq!(read_bits(&[0xFF], usize::MAX, 8), None);
    assert_eq!(read_bits(&[], 17, 0), Some(0));
}

#[test]
fn pack_fixed_bounds_32() {
    pack_bounds::<32>();
}

#[test]
fn pack_fixed_bounds_64() {
    pack_bounds::<64>();
}

/// Bit planes: each 32-lane group's planes at its own offset, with its own plane count.
fn planes<const W: u32>() {
    let mut rng = Rng(5 + W as u64);
    let values: Vec<u32> = (0..W).map(|_| rng.next_u32()).collect();
    let groups = W as usize / 32;
    let plane_counts = [5u32, 3];
    let offsets = [2usize, 2 + 4 * 5];
    let size = 2 + 4 * 8;
    for active_mask in 1..(1u32 << groups) {
        let buf = SharedBuf::new(size, 0xEE);
        one_warp::<W, _>(|w| {
            let l = w.lane_id() as usize;
            let g = l / 32;
            let active = active_mask >> g & 1 != 0;
            // SAFETY: every lane of the one warp calls it converged, the groups' arguments uniform
            // within them and their words disjoint; nothing else writes the buffer.
            unsafe { put_bit_planes(w, values[l], plane_counts[g], 5, active, buf.out(), offsets[g]) }.unwrap();
        });
        let bytes = buf.into_vec();
        for (g, (planes, at)) in plane_counts.iter().zip(offsets).enumerate().take(groups) {
            if active_mask >> g & 1 == 0 {
                assert!(bytes[at..at + 4 * *planes as usize].iter().all(|b| *b == 0xEE));
                continue;
            }
            for i in 0..32 {
                let want = values[g * 32 + i] & ((1 << planes) - 1);
                assert_eq!(
                    get_bit_planes(&bytes, at, *planes, i as u32),
                    Some(want),
                    "W={W} group {g} bit {i}"
                );
            }
        }
    }
    // An active group that does not fit: every lane gets the error and nothing is written.
    let buf = SharedBuf::new(4 * 5 - 1, 0xEE);
    // SAFETY: every lane of the one warp calls it converged with the same arguments; nothing else
    // writes the buffer.
    let r = one_warp::<W, _>(|w| unsafe { put_bit_planes(w, 0xFFFF_FFFF, 5, 5, true, buf.out(), 0) });
    assert_eq!(r, Err(OutOfSpace { offset: 0 }));
    assert!(buf.into_vec().iter().all(|b| *b == 0xEE));
    assert_eq!(get_bit_planes(&[0; 7], 0, 2, 0), None);
}

#[test]
fn bit_planes_32() {
    planes::<32>();
}

#[test]
fn bit_planes_64() {
    planes::<64>();
}

/// `warp_checksum` equals `frame::checksum` for every length 0..1000 of random bytes.
fn checksums<const W: u32>() {
    let mut rng = Rng(3);
    let bytes: Vec<u8> = (0..1000).map(|_| rng.next_u32() as u8).collect();
    let got = one_warp::<W, _>(|w| (0..1000).map(|n| warp_checksum(w, &bytes[..n])).collect::<Vec<_>>());
    for (n, c) in got.iter().enumerate() {
        assert_eq!(*c, checksum(&bytes[..n]), "W={W} length {n}");
    }
}

#[test]
fn warp_checksum_32() {
    checksums::<32>();
}

#[test]
fn warp_checksum_64() {
    checksums::<64>();
}
