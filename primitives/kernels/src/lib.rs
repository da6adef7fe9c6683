//! zipcoll's GPU module. Building this crate for `nvptx64-nvidia-cuda` gives one PTX module
//! and for `amdgcn-amd-amdhsa` one code object, exporting every kernel entry point that
//! `zipcoll-primitives` generates (their symbols are listed in its typed manifest).
#![no_std]

pub use zipcoll_primitives::kernels;
