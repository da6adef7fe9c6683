//! Backend selection and availability on a machine without GPUs (this project's development and
//! CI machines): HIP reports itself unavailable with a typed error, detection falls back to the
//! simulator, and CUDA either reports why it cannot run or matches the simulator.

use zipcoll_host::{cuda, hip, reduce_copy, testdata, warp_all_reduce, Backend, DType, Error, ReduceOp};

/// No machine of this project has ROCm: every HIP entry point says the backend is unavailable.
#[test]
fn hip_without_runtime_is_backend_unavailable() {
    fn assert_hip_unavailable<T: std::fmt::Debug>(r: Result<T, Error>) {
        match r {
            Err(Error::BackendUnavailable { backend: "hip", reason }) => {
                assert!(reason.contains("libamdhip64"), "the reason names the library: {reason}")
            }
            other => panic!("expected BackendUnavailable for hip, got {other:?}"),
        }
    }
    assert!(!hip::is_available());
    assert_hip_unavailable(hip::device_count());
    assert_hip_unavailable(hip::HipDevice::open(0));
    assert_hip_unavailable(hip::HipGpu::get(0));
    assert_hip_unavailable(Backend::Hip { ordinal: 0 }.prepare());
    let a = testdata::elements(DType::F32, 64, 1);
    let b = testdata::elements(DType::F32, 64, 2);
    assert_hip_unavailable(reduce_copy(
        Backend::Hip { ordinal: 0 },
        DType::F32,
        ReduceOp::Sum,
        &a,
        &b,
        2,
    ));
    assert_hip_unavailable(warp_all_reduce(
        Backend::Hip { ordinal: 0 },
        DType::F32,
        ReduceOp::Sum,
        &a,
        64,
    ));
}

/// Without a GPU, detection picks the simulator.
#[test]
fn detect_is_sim_without_gpus() {
    assert!(Backend::Sim.prepare().is_ok() && Backend::Sim64.prepare().is_ok());
    if cuda::is_available() || hip::is_available() {
        assert!(!Backend::detect().is_sim(), "a GPU is present, so detection picks it");
    } else {
        assert_eq!(Backend::detect(), Backend::Sim);
    }
}

/// Whether the GPU path must run (`ZIPCOLL_REQUIRE_GPU=1`, set on the GPU machine): then a CUDA
/// test that finds no GPU or no kernels fails instead of reporting why it could not run.
fn gpu_required() -> bool {
    std::env::var("ZIPCOLL_REQUIRE_GPU").is_ok_and(|v| v == "1")
}

/// CUDA either runs and matches the simulator bit for bit, or says, typed, why it cannot
/// (which fails under `ZIPCOLL_REQUIRE_GPU=1`).
#[test]
fn cuda_matches_sim_or_reports_why() {
    let a = testdata::elements(DType::Bf16, 1000, 3);
    let b = testdata::elements(DType::Bf16, 1000, 4);
    let gpu = Backend::Cuda { ordinal: 0 };
    match reduce_copy(gpu, DType::Bf16, ReduceOp::Sum, &a, &b, 2) {
        Ok(out) => assert_eq!(
            out,
            reduce_copy(Backend::Sim, DType::Bf16, ReduceOp::Sum, &a, &b, 2).unwrap()
        ),
        Err(Error::BackendUnavailable {
            backend: "cuda",
            reason,
        }) => {
            assert!(
                !gpu_required(),
                "ZIPCOLL_REQUIRE_GPU=1 but CUDA is unavailable: {reason}"
            );
            assert!(!cuda::is_available(), "{reason}");
        }
        Err(Error::KernelsNotBuilt { hint }) => {
            assert!(
                !gpu_required(),
                "ZIPCOLL_REQUIRE_GPU=1 but the kernels are not built: {hint}"
            );
            assert!(!zipcoll_host::kernels_embedded());
            assert!(hint.contains("scripts/setup.sh"));
        }
        Err(e) => panic!("unexpected CUDA error: {e}"),
    }
}

#[test]
fn backend_text_round_trips() {
    for b in [
        Backend::Sim,
        Backend::Sim64,
        Backend::Cuda { ordinal: 0 },
        Backend::Hip { ordinal: 3 },
    ] {
        assert_eq!(b.to_string().parse::<Backend>().unwrap(), b);
    }
    assert_eq!("cuda".parse::<Backend>().unwrap(), Backend::Cuda { ordinal: 0 });
    assert_eq!("hip".parse::<Backend>().unwrap(), Backend::Hip { ordinal: 0 });
    for bad in ["", "gpu", "cuda:", "cuda:x", "sim:1", "hip:-1"] {
        assert!(
            matches!(bad.parse::<Backend>(), Err(Error::InvalidArgument(_))),
            "{bad:?}"
        );
    }
}

#[test]
fn warp_widths() {
    assert_eq!(Backend::Sim.warp_width(), 32);
    assert_eq!(Backend::Cuda { ordinal: 0 }.warp_width(), 32);
    assert_eq!(Backend::Sim64.warp_width(), 64);
    assert_eq!(Backend::Hip { ordinal: 0 }.warp_width(), 64);
    assert_eq!(Backend::Hip { ordinal: 0 }.sim_twin(), Backend::Sim64);
    assert_eq!(Backend::Cuda { ordinal: 0 }.sim_twin(), Backend::Sim);
}

/// A device ordinal past the last device is an error, never a panic.
#[test]
fn missing_device_ordinal_is_an_error() {
    let a = testdata::elements(DType::F32, 64, 1);
    for backend in [Backend::Cuda { ordinal: 1000 }, Backend::Hip { ordinal: 1000 }] {
        match reduce_copy(backend, DType::F32, ReduceOp::Sum, &a, &a, 2) {
            Err(Error::InvalidArgument(msg)) => assert!(msg.contains("does not exist"), "{msg}"),
            Err(Error::BackendUnavailable { .. }) => {}
            other => panic!("{backend}: expected an error, got {other:?}"),
        }
    }
}
