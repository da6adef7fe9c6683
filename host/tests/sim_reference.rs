//! The kernels on both simulators equal the scalar host references bit for bit, for every dtype
//! x op, on random data with NaN payloads, ±0, ±inf and subnormals.

use zipcoll_host::{reduce_copy, reference, testdata, warp_all_reduce, Backend, DType, ReduceOp};

/// The first element where two results differ, as (index, expected bytes, actual bytes).
fn first_mismatch(dtype: DType, want: &[u8], got: &[u8]) -> Option<(usize, Vec<u8>, Vec<u8>)> {
    let size = dtype.size_bytes();
    want.chunks(size)
        .zip(got.chunks(size))
        .position(|(a, b)| a != b)
        .map(|i| {
            let at = i * size..(i + 1) * size;
            (i, want[at.clone()].to_vec(), got[at].to_vec())
        })
}

/// Whether `(dtype, op)` is Avg of an integer, which these kernels refuse (an integer average
/// divides the sum once at the end, as only the collectives do): then `result` must be
/// `InvalidArgument` (and the caller checks the simulator refuses it too).
fn refuses_avg_of_integers(dtype: DType, op: ReduceOp, result: zipcoll_host::Result<Vec<u8>>) -> bool {
    let refused = dtype.is_integer() && op == ReduceOp::Avg;
    if refused {
        assert!(
            matches!(result, Err(zipcoll_host::Error::InvalidArgument(_))),
            "{dtype:?} {op:?}"
        );
    }
    refused
}

#[test]
fn sim_reduce_copy_matches_reference() {
    // Not a multiple of any block size; covers several blocks of the grid-stride loop.
    let n = 1037;
    for (seed, dtype) in DType::ALL.into_iter().enumerate() {
        let a = testdata::elements(dtype, n, 10 + seed as u64);
        let b = testdata::elements(dtype, n, 20 + seed as u64);
        for op in ReduceOp::ALL {
            for (backend, nranks) in [(Backend::Sim, 2), (Backend::Sim64, 3)] {
                if refuses_avg_of_integers(dtype, op, reference::reduce_copy(dtype, op, &a, &b, nranks)) {
                    assert!(reduce_copy(backend, dtype, op, &a, &b, nranks).is_err());
                    continue;
                }
                let want = reference::reduce_copy(dtype, op, &a, &b, nranks).unwrap();
                let got = reduce_copy(backend, dtype, op, &a, &b, nranks).unwrap();
                assert_eq!(got.len(), want.len());
                assert_eq!(first_mismatch(dtype, &want, &got), None, "{backend} {dtype:?} {op:?}");
            }
        }
    }
}

#[test]
fn sim_warp_all_reduce_matches_reference() {
    for (seed, dtype) in DType::ALL.into_iter().enumerate() {
        for op in ReduceOp::ALL {
            for backend in [Backend::Sim, Backend::Sim64] {
                let width = backend.warp_width();
                let n = width as usize * 19;
                let src = testdata::elements(dtype, n, 30 + seed as u64);
                if refuses_avg_of_integers(dtype, op, reference::warp_all_reduce(dtype, op, width, &src, width)) {
                    assert!(warp_all_reduce(backend, dtype, op, &src, width).is_err());
                    continue;
                }
                let want = reference::warp_all_reduce(dtype, op, width, &src, width).unwrap();
                let got = warp_all_reduce(backend, dtype, op, &src, width).unwrap();
                assert_eq!(got.len(), want.len());
                assert_eq!(first_mismatch(dtype, &want, &got), None, "{backend} {dtype:?} {op:?}");
            }
        }
    }
}

/// The references themselves, on values whose results are exact.
#[test]
fn references_on_exact_values() {
    let f32s = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let a = f32s(&[1.0, -0.0, 3.0, f32::INFINITY]);
    let b = f32s(&[2.0, 0.0, -5.0, 1.0]);
    let r = |op| reference::reduce_copy(DType::F32, op, &a, &b, 4).unwrap();
    assert_eq!(r(ReduceOp::Sum), f32s(&[3.0, 0.0, -2.0, f32::INFINITY]));
    assert_eq!(r(ReduceOp::Max), f32s(&[2.0, 0.0, 3.0, f32::INFINITY]));
    assert_eq!(r(ReduceOp::Min), f32s(&[1.0, -0.0, -5.0, 1.0]));
    assert_eq!(r(ReduceOp::Avg), f32s(&[0.75, 0.0, -0.5, f32::INFINITY]));

    let ones = f32s(&[1.0; 32]);
    assert_eq!(
        reference::warp_all_reduce(DType::F32, ReduceOp::Sum, 32, &ones, 1).unwrap(),
        f32s(&[32.0; 32])
    );
}

#[test]
fn empty_inputs_give_empty_outputs() {
    for backend in [Backend::Sim, Backend::Sim64] {
        assert!(reduce_copy(backend, DType::F16, ReduceOp::Prod, &[], &[], 1)
            .unwrap()
            .is_empty());
        assert!(warp_all_reduce(backend, DType::F16, ReduceOp::Prod, &[], 1)
            .unwrap()
            .is_empty());
    }
}

#[test]
fn testdata_is_deterministic_and_varied() {
    for dtype in DType::ALL {
        let a = testdata::elements(dtype, 4096, 5);
        assert_eq!(a.len(), 4096 * dtype.size_bytes());
        assert_eq!(a, testdata::elements(dtype, 4096, 5));
        assert_ne!(a, testdata::elements(dtype, 4096, 6));
        let distinct: std::collections::BTreeSet<&[u8]> = a.chunks(dtype.size_bytes()).collect();
        assert!(distinct.len() > 64, "{dtype:?}: {} distinct values", distinct.len());
    }
}

/// Every dtype's test data holds NaNs, both zeros, both infinities (e4m3 has none), subnormals
/// and normal values, read from the raw bit fields.
#[test]
fn testdata_covers_special_values() {
    // (dtype, exponent bits, mantissa bits, has infinities)
    let formats = [
        (DType::Bf16, 8, 7, true),
        (DType::F16, 5, 10, true),
        (DType::F32, 8, 23, true),
        (DType::F8E4M3, 4, 3, false),
        (DType::F8E5M2, 5, 2, true),
    ];
    for (dtype, e, m, has_inf) in formats {
        let size = dtype.size_bytes();
        let data = testdata::elements(dtype, 4096, 9);
        let words = data.chunks(size).map(|c| {
            let mut le = [0u8; 8];
            le[..size].copy_from_slice(c);
            u64::from_le_bytes(le)
        });
        let (exp_max, man_mask, sign) = ((1u64 << e) - 1, (1u64 << m) - 1, 1u64 << (e + m));
        let mut seen = std::collections::BTreeSet::new();
        for w in words {
            let (s, x, f) = (w & sign != 0, (w >> m) & exp_max, w & man_mask);
            let kind = match (x, f) {
                (0, 0) => {
                    if s {
                        "-0"
                    } else {
                        "+0"
                    }
                }
                (0, _) => "subnormal",
                (x, 0) if x == exp_max && has_inf => {
                    if s {
                        "-inf"
                    } else {
                        "+inf"
                    }
                }
                (x, _) if x == exp_max && (has_inf || f == man_mask) => "nan",
                _ => "normal",
            };
            seen.insert(kind);
        }
        let mut want = vec!["+0", "-0", "nan", "normal", "subnormal"];
        if has_inf {
            want.extend(["+inf", "-inf"]);
        }
        for k in want {
            assert!(seen.contains(k), "{dtype:?} test data has no {k}");
        }
    }
}
