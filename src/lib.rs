//! zipcoll: compression-enabled GPU collective communication.
//!
//! This crate is the public facade: it re-exports the host runtime ([`zipcoll_host`]), which
//! runs zipcoll's kernels on NVIDIA GPUs (CUDA), AMD GPUs (HIP) or the CPU simulator.
//!
//! | item                         | what it is                                           |
//! |------------------------------|------------------------------------------------------|
//! | [`Backend`]                  | where kernels run; [`Backend::detect`] picks a GPU   |
//! | [`reduce_copy`]              | `dst = op(src0, src1)` elementwise                   |
//! | [`warp_all_reduce`]          | each warp-sized group all-reduced by one warp        |
//! | [`zipcoll_host::reference`]  | scalar references every backend matches bit for bit  |
//! | [`Error`]                    | every failure, typed                                 |
//!
//! ```
//! use zipcoll::{reduce_copy, testdata, Backend, DType, ReduceOp};
//! let a = testdata::elements(DType::F16, 256, 1);
//! let b = testdata::elements(DType::F16, 256, 2);
//! let out = reduce_copy(Backend::Sim, DType::F16, ReduceOp::Min, &a, &b, 2)?;
//! assert_eq!(out.len(), a.len());
//! # Ok::<(), zipcoll::Error>(())
//! ```

pub use zipcoll_host::*;

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExamples;
