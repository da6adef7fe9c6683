//! zipcoll's host side: runs the kernels of `zipcoll-primitives` on an NVIDIA GPU (CUDA, through
//! [`cudarc`]), an AMD GPU (HIP, loaded at run time) or the CPU simulator, behind one API.
//!
//! | module          | what it holds                                                     |
//! |-----------------|-------------------------------------------------------------------|
//! | [`backend`]     | [`Backend`]: where kernels run, and [`Backend::detect`]           |
//! | [`codec`]       | [`codec::encode`], [`codec::decode`], [`codec::decode_stream`]: data <-> frames on any backend |
//! | [`ops`]         | [`reduce_copy`], [`warp_all_reduce`] on raw element bytes         |
//! | [`reference`](mod@reference) | scalar host references every backend must match bit for bit       |
//! | [`registry`]    | entry-point lookup by marker type + dtype + op via the manifest   |
//! | [`cuda`]        | CUDA devices, the embedded PTX, checked launches                  |
//! | [`hip`]         | HIP devices, the embedded code objects, checked launches (`sys` -> `result` -> safe types) |
//! | [`testdata`]    | deterministic inputs with NaN payloads, ±0, ±inf and subnormals   |
//! | [`error`]       | [`Error`]: every failure as a typed value                         |
//! | [`units`]       | sizes and rates as people write them (`64K`, `16MiB`, `500M/s`): one parser for every setting and flag |
//!
//! ```
//! use zipcoll_host::{reduce_copy, testdata, Backend, DType, ReduceOp};
//! let a = testdata::elements(DType::Bf16, 100, 1);
//! let b = testdata::elements(DType::Bf16, 100, 2);
//! // `Backend::detect()` picks a GPU when there is one; the simulator runs anywhere.
//! let sum = reduce_copy(Backend::Sim, DType::Bf16, ReduceOp::Sum, &a, &b, 2)?;
//! assert_eq!(sum, zipcoll_host::reference::reduce_copy(DType::Bf16, ReduceOp::Sum, &a, &b, 2)?);
//! # Ok::<(), zipcoll_host::Error>(())
//! ```

pub mod backend;
pub mod codec;
pub mod comm;
pub mod cuda;
pub mod cuda_mem;
mod dispatch;
mod embedded;
pub mod error;
pub mod hip;
mod launch;
pub mod ops;
pub mod reference;
pub mod registry;
mod sim;
pub mod testdata;
pub mod transport;
pub mod units;

/// The CUDA driver bindings this crate uses, for callers that hold device buffers of their own
/// (e.g. [`codec::cuda::CudaCodec`]'s arguments, events for timing).
pub use cudarc;

pub use backend::Backend;
pub use embedded::{AmdArch, NvArch};
pub use error::{Error, Result};
pub use ops::{reduce_copy, warp_all_reduce};
pub use zipcoll_device::codec::CodecId;
pub use zipcoll_device::dtype::DType;
pub use zipcoll_device::frame::FrameError;
pub use zipcoll_device::reduce::ReduceOp;
pub use zipcoll_primitives::kernels::{DecodeFrames, EncodeFrames, EncodeRawFrames, ReduceCopy, WarpAllReduce};
pub use zipcoll_primitives::manifest::{Kernel, KernelDesc, Vendor};

/// Whether any GPU module was embedded at build time (for this machine's GPUs, or the
/// architectures `ZIPCOLL_GPU_ARCHS` named, with the GPU toolchain of `scripts/setup.sh`
/// installed). Without them only the simulators run kernels; GPU backends return
/// [`Error::KernelsNotBuilt`].
pub fn kernels_embedded() -> bool {
    [NvArch::Sm90, NvArch::Sm80]
        .into_iter()
        .any(|a| embedded::ptx(a).is_some())
        || [AmdArch::Gfx942, AmdArch::Gfx950]
            .into_iter()
            .any(|a| embedded::amd_code_object(a).is_some())
}
