//! zipcoll as NCCL: `libnccl.so` (soname `libnccl.so.2`) exports NCCL's own symbols over
//! zipcoll's C ABI, so that an unchanged program that calls NCCL (PyTorch's ProcessGroupNCCL
//! among them) runs on zipcoll, with compression chosen by `ZIPCOLL_COMPRESSION`:
//!
//! ```sh
//! cargo build --release -p zipcoll-nccl
//! LD_PRELOAD=target/release/libnccl.so python3 train.py         # ours ahead of NCCL's
//! ln -s $PWD/target/release/libnccl.so /tmp/zccl/libnccl.so.2   # or in libnccl.so.2's place:
//! LD_LIBRARY_PATH=/tmp/zccl ./nccl_program
//! ```
//!
//! | symbols | what they do |
//! |---------|--------------|
//! | [`ncclAllReduce`], [`ncclAllGather`], ..., [`ncclCommSplit`] | the `zccl` function of the same name (`capi/include/zipcoll.h`: the same types, values and semantics) |
//! | [`ncclGetVersion`] | the NCCL API this library implements, 2.28 (22800); zipcoll's own version is `zcclGetVersion`'s |
//! | [`ncclCommInitRankScalable`] | [`ncclCommInitRankConfig`] with the first id (every rank passes the same ids) |
//! | [`ncclMemAlloc`], [`ncclCommWindowRegister`], [`ncclDevCommCreate`], [`ncclCommShrink`], [`ncclGroupSimulateEnd`], ... | not provided: `ncclInvalidArgument`, and `ncclGetLastError` names the call |
//!
//! The list of symbols is PyTorch 2.11's: every NCCL symbol `libtorch_cuda.so` imports
//! (`torch-imports.txt`, read off the library with `nm -D --undefined-only`; the tests check
//! that each one is exported). The `zccl` functions are exported too (the C ABI's source is
//! compiled in), so a program may call either name.

/// The C ABI (`capi/src/ffi.rs`, the source of `libzipcoll.so`), compiled in.
#[path = "../../src/ffi.rs"]
pub mod zccl;

mod nccl;

pub use nccl::*;
