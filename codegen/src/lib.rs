//! `#[kernel]`: one generic device fn becomes the GPU entry points for every supported dtype,
//! reduction, codec and vendor, plus a typed manifest that the host looks entry points up in.
//!
//! Device code is written once, generic over the warp (`W: Warp`), the element type
//! (`T: Elem`, or `T: Split` for the codecs), the reduction (`O: RedOp`) and the symbol coder
//! (`C: SymbolCoder`), and runs unchanged on the CPU simulator. A GPU
//! needs monomorphic `extern "gpu-kernel"` functions with unmangled names; this attribute writes
//! them, and records which ones exist so the host never formats a symbol name itself.
//!
//! ```text
//! use zipcoll_codegen::kernel;
//! use zipcoll_device::{dtype::Elem, reduce::RedOp};
//! use zipcoll_targets::Warp;
//!
//! #[kernel(dtype = [bf16, f16, f32, f8e4m3, f8e5m2], op = [sum, prod, min, max, avg], vendor = [nvptx, amdgpu])]
//! pub unsafe fn reduce_copy<W: Warp, T: Elem, O: RedOp>(
//!     w: W, src0: *const T::Bits, src1: *const T::Bits, dst: *mut T::Bits, n: usize, nranks: u32,
//! ) { /* ... */ }
//!
//! // on the host:
//! use zipcoll_primitives::manifest::{Kernel, Vendor};
//! let desc = ReduceCopy::find(Some(DType::Bf16), Some(ReduceOp::Sum), Vendor::Nvptx).unwrap();
//! assert_eq!(desc.symbol, "zc_reduce_copy__bf16__sum");
//! ```
//!
//! # The kernel fn
//!
//! Its generic type parameters are told apart by their trait bounds (the last path segment,
//! inline or in the `where` clause; other bounds may sit beside them, as in
//! `W: Warp + SharedMem`):
//!
//! | bound           | role                         | required                          |
//! |-----------------|------------------------------|-----------------------------------|
//! | `Warp`          | the vendor's warp            | yes; the first parameter is `w: W` |
//! | `Elem`, `Split`, `F32Exact` | the dtype dimension | iff `dtype = [...]` is given      |
//! | `RedOp`         | the op dimension             | iff `op = [...]` is given         |
//! | `SymbolCoder`   | the codec dimension          | iff `codec = [...]` is given      |
//!
//! Every other parameter is a plain identifier with a type the entry points can name; the fn
//! returns nothing and may be `unsafe` or safe. The fn itself is emitted unchanged, so tests call
//! it with the simulator's warp: `reduce_copy::<SimWarp<32>, Bf16, Sum>(w, ...)`. On the host the
//! entry points are compiled out, so a kernel fn that is not `pub` is dead code there unless
//! something else calls it.
//!
//! # Attribute grammar
//!
//! ```text
//! #[kernel(arg, ...)]
//! arg    := dtype  = [dtype, ...]     the dtypes to build (iff a parameter is bounded by Elem)
//!         | op     = [op, ...]        the reductions to build (iff a parameter is bounded by RedOp)
//!         | codec  = [codec, ...]     the symbol coders to build (iff a parameter is bounded by SymbolCoder)
//!         | vendor = [vendor, ...]    the vendors to build for; default: all of them
//!         | equiv  = bits             one entry point per storage width (needs dtype)
//! dtype  := bf16 | f16 | f32 | f8e4m3 | f8e5m2 | i8 | u8 | i32 | u32 | i64 | u64 | f64
//! op     := sum | prod | min | max | avg
//! codec  := fixedlen | expwindow | expans | huffman
//! vendor := nvptx | amdgpu
//! ```
//!
//! Lists hold at least one name and no repeats; each argument is given at most once.
//!
//! # What it emits
//!
//! For `reduce_copy` above, next to the fn itself:
//!
//! - for each built (dtype, op, codec) and vendor, an entry point named
//!   `zc_<fn>__<dtype>__<op>__<codec>` (a part is left out when its dimension is: a codec kernel
//!   without an op is `zc_encode_frames__bf16__huffman`), under `#[cfg(target_arch = "nvptx64")]` or
//!   `#[cfg(target_arch = "amdgpu")]`. It takes the fn's parameters after `w`, with the generic
//!   parameters replaced by the variant's types, builds the vendor's warp and calls the fn:
//!
//!   ```text
//!   #[cfg(target_arch = "nvptx64")]
//!   #[unsafe(no_mangle)]
//!   pub unsafe extern "gpu-kernel" fn zc_reduce_copy__bf16__sum(
//!       src0: *const u16, src1: *const u16, dst: *mut u16, n: usize, nranks: u32,
//!   ) {
//!       unsafe {
//!           reduce_copy::<
//!               ::zipcoll_targets::nvptx::NvptxWarp,
//!               ::zipcoll_device::dtype::Bf16,
//!               ::zipcoll_device::reduce::Sum,
//!           >(::zipcoll_targets::nvptx::NvptxWarp::new(), src0, src1, dst, n, nranks)
//!       }
//!   }
//!   ```
//!
//!   The amdgpu entry point takes two leading parameters, `zc_block_dim: u32, zc_grid_dim: u32`
//!   (the host passes the launch geometry), and builds its warp with
//!   `::zipcoll_targets::amdgpu::AmdWarp::from_launch(zc_block_dim, zc_grid_dim)`.
//!
//!   In parameter types, `T` becomes `::zipcoll_device::dtype::Bf16` (`O`, `C`, `W` likewise;
//!   a codec `huffman` is `::zipcoll_device::codec::Huffman`) and `T::Assoc` becomes
//!   `<::zipcoll_device::dtype::Bf16 as ::zipcoll_device::dtype::Elem>::Assoc` (`as Split` when
//!   `T` is bounded by `Split`),
//!   except `T::Bits` (or `<T as Elem>::Bits`), which becomes the storage word (`u16` for bf16 and
//!   f16, `u32` for f32, `u8` for the fp8 types): rustc's `improper_gpu_kernel_arg` lint reads
//!   entry-point signatures before normalizing them and would flag `*const <Bf16 as Elem>::Bits`.
//!   The call into the fn checks that the word is right.
//! - the manifest type `ReduceCopy` (the fn's name in CamelCase, with the fn's visibility, not
//!   cfg-gated), implementing `::zipcoll_primitives::manifest::Kernel` with
//!   `NAME = "reduce_copy"` and one `KernelDesc { dtype, op, codec, vendors, symbol }` per built
//!   variant (`codec` is a `::zipcoll_device::codec::CodecId`). The host asks
//!   `ReduceCopy::find(Some(DType::Bf16), Some(ReduceOp::Sum), Vendor::Amdgpu)`, or for a codec
//!   kernel `EncodeFrames::find_codec(Some(DType::Bf16), None, Some(CodecId::Huffman), Vendor::Nvptx)`.
//!
//! Paths are absolute (`::zipcoll_device`, `::zipcoll_targets`, `::zipcoll_primitives`), so the
//! crate that uses the attribute depends on those three (`zipcoll_primitives` itself declares
//! `extern crate self as zipcoll_primitives;`). The entry points need
//! `#![feature(abi_gpu_kernel)]` in the GPU build.
//!
//! # Support table
//!
//! A variant is built when the dtype x op table admits its pair, and for the listed vendors that
//! the warp's capabilities leave; the manifest type's docs list what was left out and why. Every
//! codec is built for every dtype (each dtype's `Split` feeds every symbol coder).
//!
//! | family | op     | built | reason |
//! |--------|--------|-------|--------|
//! | float  | `sum`  | yes   | added in f32 (f64 natively), rounded back to nearest-even, as NCCL does |
//! | float  | `prod` | yes   | multiplied in f32 (f64 natively), rounded back to nearest-even, as NCCL does |
//! | float  | `min`  | yes   | compared in f32 (f64 natively; exact for every float dtype), NaN propagates |
//! | float  | `max`  | yes   | compared in f32 (f64 natively; exact for every float dtype), NaN propagates |
//! | float  | `avg`  | yes   | NCCL's PreMulSum: each input times 1/nranks in f32 (f64 natively), then summed |
//! | int    | `sum`  | yes   | wrapping (two's complement), as NCCL does; a descriptor scalar above 1 divides the result toward zero (NCCL's SumPostDiv, the integer average) |
//! | int    | `prod` | yes   | wrapping (two's complement), as NCCL does |
//! | int    | `min`  | yes   | compared signed or unsigned as the type |
//! | int    | `max`  | yes   | compared signed or unsigned as the type |
//! | int    | `avg`  | yes   | NCCL's PreMulSum with an integer scalar, wrapping (an integer average runs the sum kernels, which divide the result: SumPostDiv) |
//!
//! The float family is bf16, f16, f32, f8e4m3, f8e5m2 and f64; the int family i8, u8, i32, u32,
//! i64 and u64. Rows are per family.
//!
//! | warp bound  | vendor left out | reason |
//! |-------------|-----------------|--------|
//! | `SharedMem` | amdgpu          | the AMD backend has no shared memory yet (rustc cannot name a launch-sized LDS buffer) |
//!
//! A kernel for which nothing is left is an error.
//!
//! # Equivalence map
//!
//! `equiv = bits` declares that the kernel depends on `T` only through `T::Bits` (a copy, say).
//! Dtypes of one storage width then share one entry point, built with the class's first listed
//! dtype and named after the class: bf16 and f16 share `zc_<fn>__b16`, f8e4m3, f8e5m2, i8 and
//! u8 `zc_<fn>__b8`, f32, i32 and u32 `zc_<fn>__b32`, f64, i64 and u64 `zc_<fn>__b64`. The manifest still has a row per dtype, pointing at the
//! shared symbol (as NCCL serves signed-integer sums with the unsigned kernel).
//!
//! # Developer filter
//!
//! `ZIPCOLL_KERNEL_FILTER`, read when the macro expands, holds comma-separated `fn:dtype:op:codec`
//! patterns where `*` matches anything, e.g. `reduce_copy:bf16:*,*:f32:sum,encode_frames:bf16::huffman`;
//! empty parts and parts left out at the end are `*`, and a dimension the kernel lacks matches any
//! part. When it is set (and not blank), only the variants some pattern matches get entry points
//! and manifest rows: a fast edit-build loop on one variant. A part without `*` must name a known
//! dtype, op or codec. The expansion holds
//! `option_env!("ZIPCOLL_KERNEL_FILTER")`, so cargo rebuilds the crate when the variable changes.
//!
//! # Errors
//!
//! Bad arguments and unsupported signatures are compile errors at the offending tokens (unknown
//! or repeated names, empty lists, a missing `Warp` parameter, a first parameter that is not the
//! warp, a dimension without its argument or an argument without its dimension, `self`,
//! destructuring patterns, ...). The macro does not panic.

mod args;
mod expand;
mod filter;
mod signature;
mod support;
#[cfg(test)]
mod tests;

use proc_macro::TokenStream;

/// Builds a generic device fn's GPU entry points and its manifest type; see the crate docs.
#[proc_macro_attribute]
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    match expand::expand(attr.into(), item.clone().into()) {
        Ok(tokens) => tokens.into(),
        Err(error) => {
            // The fn stays, so that its callers do not add errors of their own.
            let mut tokens: TokenStream = error.to_compile_error().into();
            tokens.extend(item);
            tokens
        }
    }
}
