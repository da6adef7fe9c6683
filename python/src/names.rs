//! The names Python passes for dtypes, codecs, reductions and devices, as the host's values.
//! The package maps numpy and torch dtypes to the dtype names (`zipcoll._tensors`).

use crate::errors::invalid;
use pyo3::prelude::*;
use zipcoll_host::{Backend, CodecId, DType, ReduceOp};

/// The dtype called `name` (`bf16`, `f16`, `f32`, `f64`, `f8e4m3`, `f8e5m2`, `i8`, `u8`, `i32`,
/// `u32`, `i64`, `u64`).
pub fn dtype(name: &str) -> PyResult<DType> {
    DType::from_name(name)
        .ok_or_else(|| invalid(format!("unknown dtype {name:?} (expected one of {:?})", dtype_names())))
}

/// Every dtype's name.
pub fn dtype_names() -> Vec<&'static str> {
    DType::ALL.iter().map(|d| d.name()).collect()
}

/// Every codec's name.
pub fn codec_names() -> Vec<&'static str> {
    CodecId::ALL.iter().map(|c| c.name()).collect()
}

/// The codec called `name`, or `None` for `auto`.
pub fn codec(name: &str) -> PyResult<Option<CodecId>> {
    if name.eq_ignore_ascii_case("auto") {
        return Ok(None);
    }
    CodecId::ALL
        .into_iter()
        .find(|c| c.name().eq_ignore_ascii_case(name))
        .map(Some)
        .ok_or_else(|| {
            invalid(format!(
                "unknown codec {name:?} (expected auto or one of {:?})",
                codec_names()
            ))
        })
}

/// The reduction called `name`: `sum`, `prod`, `min`, `max` or `avg` (its variant's name in
/// lower case, as `zipcoll-perf --op` reads it).
pub fn reduce_op(name: &str) -> PyResult<ReduceOp> {
    let want = name.trim().to_ascii_lowercase();
    ReduceOp::ALL
        .into_iter()
        .find(|o| format!("{o:?}").to_ascii_lowercase() == want)
        .ok_or_else(|| {
            invalid(format!(
                "unknown reduction {name:?} (expected sum, prod, min, max or avg)"
            ))
        })
}

/// The device called `name`: `sim` (the CPU simulator), `cuda` (GPU 0) or `cuda:N`.
pub fn device(name: &str) -> PyResult<Backend> {
    let bad = || invalid(format!("unknown device {name:?} (expected sim, cuda or cuda:N)"));
    match name.trim().to_ascii_lowercase().as_str() {
        "sim" | "cpu" => Ok(Backend::Sim),
        "cuda" => Ok(Backend::Cuda { ordinal: 0 }),
        other => {
            let ordinal = other.strip_prefix("cuda:").ok_or_else(bad)?;
            ordinal
                .parse()
                .map(|ordinal| Backend::Cuda { ordinal })
                .map_err(|_| bad())
        }
    }
}

/// The name [`device`] reads back for `backend`.
pub fn device_name(backend: Backend) -> String {
    match backend {
        Backend::Cuda { ordinal } => format!("cuda:{ordinal}"),
        Backend::Hip { ordinal } => format!("hip:{ordinal}"),
        Backend::Sim | Backend::Sim64 => "sim".into(),
    }
}
