//! Bad arguments give typed errors, never panics, on every backend (they are checked before any
//! device is touched) and in the references.

use zipcoll_host::{reduce_copy, reference, warp_all_reduce, Backend, DType, Error, ReduceOp};

const BACKENDS: [Backend; 4] = [
    Backend::Sim,
    Backend::Sim64,
    Backend::Cuda { ordinal: 0 },
    Backend::Hip { ordinal: 0 },
];

fn assert_invalid<T: std::fmt::Debug>(r: Result<T, Error>, what: &str) {
    match r {
        Err(Error::InvalidArgument(msg)) => assert!(!msg.is_empty()),
        other => panic!("{what}: expected InvalidArgument, got {other:?}"),
    }
}

#[test]
fn reduce_copy_rejects_bad_arguments() {
    let four = [0u8; 4];
    let eight = [0u8; 8];
    for b in BACKENDS {
        assert_invalid(
            reduce_copy(b, DType::F32, ReduceOp::Sum, &four, &eight, 1),
            "length mismatch",
        );
        assert_invalid(
            reduce_copy(b, DType::F32, ReduceOp::Sum, &[0; 3], &[0; 3], 1),
            "partial element",
        );
        assert_invalid(
            reduce_copy(b, DType::Bf16, ReduceOp::Sum, &[0; 5], &[0; 4], 1),
            "partial element",
        );
        assert_invalid(reduce_copy(b, DType::F32, ReduceOp::Avg, &four, &four, 0), "nranks 0");
    }
    assert_invalid(
        reference::reduce_copy(DType::F32, ReduceOp::Sum, &four, &eight, 1),
        "reference",
    );
}

#[test]
fn warp_all_reduce_rejects_bad_arguments() {
    for b in BACKENDS {
        let width = b.warp_width() as usize;
        let short = vec![0u8; (width - 1) * 4];
        assert_invalid(
            warp_all_reduce(b, DType::F32, ReduceOp::Sum, &short, 1),
            "not whole warps",
        );
        let long = vec![0u8; (width + 1) * 4];
        assert_invalid(
            warp_all_reduce(b, DType::F32, ReduceOp::Sum, &long, 1),
            "not whole warps",
        );
        let odd = vec![0u8; width * 2 + 1];
        assert_invalid(
            warp_all_reduce(b, DType::F16, ReduceOp::Sum, &odd, 1),
            "partial element",
        );
        let whole = vec![0u8; width * 4];
        assert_invalid(warp_all_reduce(b, DType::F32, ReduceOp::Min, &whole, 0), "nranks 0");
    }
    // 32 elements are a whole warp on NVIDIA but half a wavefront on AMD.
    assert!(warp_all_reduce(Backend::Sim, DType::F32, ReduceOp::Sum, &[0; 128], 1).is_ok());
    assert_invalid(
        warp_all_reduce(Backend::Sim64, DType::F32, ReduceOp::Sum, &[0; 128], 1),
        "half a wavefront",
    );
    assert_invalid(
        reference::warp_all_reduce(DType::F32, ReduceOp::Sum, 0, &[0; 128], 1),
        "width 0",
    );
    assert_invalid(
        reference::warp_all_reduce(DType::F32, ReduceOp::Sum, 32, &[0; 124], 1),
        "reference",
    );
}

#[test]
fn errors_display_their_context() {
    let e = warp_all_reduce(Backend::Sim, DType::F32, ReduceOp::Sum, &[0; 4], 1).unwrap_err();
    assert!(e.to_string().contains("multiple of the warp width (32)"), "{e}");
    let e = reduce_copy(Backend::Sim, DType::F32, ReduceOp::Sum, &[0; 4], &[0; 8], 1).unwrap_err();
    assert!(e.to_string().contains("src0 has 1 elements but src1 has 2"), "{e}");
}
