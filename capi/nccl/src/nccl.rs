//! NCCL's names: each a [`forward!`]ed `zccl` function, a shim, or a call [`not_provided!`].
#![allow(non_snake_case)]

use crate::zccl::*;
use std::ffi::{c_char, c_int, c_void};
use zipcoll_host::Error;

/// `#[no_mangle] extern "C"` functions that call the `zccl` function of the same signature.
macro_rules! forward {
    ($($name:ident => $to:ident($($arg:ident: $ty:ty),*) -> $ret:ty;)*) => {$(
        #[doc = concat!("NCCL's `", stringify!($name), "`: [`", stringify!($to), "`].")]
        ///
        /// # Safety
        /// As NCCL's (and the zccl function's).
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> $ret {
            // SAFETY: the same contract.
            unsafe { $to($($arg),*) }
        }
    )*};
}

forward! {
    ncclGetUniqueId => zcclGetUniqueId(id: *mut zcclUniqueId) -> zcclResult_t;
    ncclCommInitRank => zcclCommInitRank(comm: *mut zcclComm_t, nranks: c_int, id: zcclUniqueId, rank: c_int) -> zcclResult_t;
    ncclCommInitRankConfig => zcclCommInitRankConfig(
        comm: *mut zcclComm_t, nranks: c_int, id: zcclUniqueId, rank: c_int, config: *mut zcclConfig_t
    ) -> zcclResult_t;
    ncclCommInitAll => zcclCommInitAll(comm: *mut zcclComm_t, ndev: c_int, devlist: *const c_int) -> zcclResult_t;
    ncclCommSplit => zcclCommSplit(
        comm: zcclComm_t, color: c_int, key: c_int, newcomm: *mut zcclComm_t, config: *mut zcclConfig_t
    ) -> zcclResult_t;
    ncclCommFinalize => zcclCommFinalize(comm: zcclComm_t) -> zcclResult_t;
    ncclCommDestroy => zcclCommDestroy(comm: zcclComm_t) -> zcclResult_t;
    ncclCommAbort => zcclCommAbort(comm: zcclComm_t) -> zcclResult_t;
    ncclCommCount => zcclCommCount(comm: zcclComm_t, count: *mut c_int) -> zcclResult_t;
    ncclCommUserRank => zcclCommUserRank(comm: zcclComm_t, rank: *mut c_int) -> zcclResult_t;
    ncclCommGetAsyncError => zcclCommGetAsyncError(comm: zcclComm_t, result: *mut zcclResult_t) -> zcclResult_t;
    ncclGetLastError => zcclGetLastError(comm: zcclComm_t) -> *const c_char;
    ncclCommRegister => zcclCommRegister(
        comm: zcclComm_t, buff: *mut c_void, size: usize, handle: *mut *mut c_void
    ) -> zcclResult_t;
    ncclCommDeregister => zcclCommDeregister(comm: zcclComm_t, handle: *mut c_void) -> zcclResult_t;
    ncclRedOpCreatePreMulSum => zcclRedOpCreatePreMulSum(
        op: *mut zcclRedOp_t, scalar: *mut c_void, datatype: zcclDataType_t, residence: zcclScalarResidence_t,
        comm: zcclComm_t
    ) -> zcclResult_t;
    ncclRedOpDestroy => zcclRedOpDestroy(op: zcclRedOp_t, comm: zcclComm_t) -> zcclResult_t;
    ncclAllReduce => zcclAllReduce(
        sendbuff: *const c_void, recvbuff: *mut c_void, count: usize, datatype: zcclDataType_t, op: zcclRedOp_t,
        comm: zcclComm_t, stream: *mut c_void
    ) -> zcclResult_t;
    ncclAllGather => zcclAllGather(
        sendbuff: *const c_void, recvbuff: *mut c_void, sendcount: usize, datatype: zcclDataType_t,
        comm: zcclComm_t, stream: *mut c_void
    ) -> zcclResult_t;
    ncclReduceScatter => zcclReduceScatter(
        sendbuff: *const c_void, recvbuff: *mut c_void, recvcount: usize, datatype: zcclDataType_t, op: zcclRedOp_t,
        comm: zcclComm_t, stream: *mut c_void
    ) -> zcclResult_t;
    ncclReduce => zcclReduce(
        sendbuff: *const c_void, recvbuff: *mut c_void, count: usize, datatype: zcclDataType_t, op: zcclRedOp_t,
        root: c_int, comm: zcclComm_t, stream: *mut c_void
    ) -> zcclResult_t;
    ncclBroadcast => zcclBroadcast(
        sendbuff: *const c_void, recvbuff: *mut c_void, count: usize, datatype: zcclDataType_t, root: c_int,
        comm: zcclComm_t, stream: *mut c_void
    ) -> zcclResult_t;
    ncclBcast => zcclBcast(
        buff: *mut c_void, count: usize, datatype: zcclDataType_t, root: c_int, comm: zcclComm_t, stream: *mut c_void
    ) -> zcclResult_t;
    ncclAlltoAll => zcclAlltoAll(
        sendbuff: *const c_void, recvbuff: *mut c_void, count: usize, datatype: zcclDataType_t, comm: zcclComm_t,
        stream: *mut c_void
    ) -> zcclResult_t;
    ncclSend => zcclSend(
        sendbuff: *const c_void, count: usize, datatype: zcclDataType_t, peer: c_int, comm: zcclComm_t,
        stream: *mut c_void
    ) -> zcclResult_t;
    ncclRecv => zcclRecv(
        recvbuff: *mut c_void, count: usize, datatype: zcclDataType_t, peer: c_int, comm: zcclComm_t,
        stream: *mut c_void
    ) -> zcclResult_t;
}

/// NCCL's `ncclGetErrorString`: [`zcclGetErrorString`].
#[no_mangle]
pub extern "C" fn ncclGetErrorString(result: zcclResult_t) -> *const c_char {
    zcclGetErrorString(result)
}

/// NCCL's `ncclGroupStart`: [`zcclGroupStart`].
#[no_mangle]
pub extern "C" fn ncclGroupStart() -> zcclResult_t {
    zcclGroupStart()
}

/// NCCL's `ncclGroupEnd`: [`zcclGroupEnd`].
#[no_mangle]
pub extern "C" fn ncclGroupEnd() -> zcclResult_t {
    zcclGroupEnd()
}

/// The NCCL API version this library implements (`NCCL_VERSION_CODE` of 2.28.0: 22800), the
/// one whose `ncclConfig_t` layout [`zcclConfig_t`] has.
pub const NCCL_API_VERSION: c_int = ZCCL_CONFIG_VERSION as c_int;

/// NCCL's `ncclGetVersion`: [`NCCL_API_VERSION`], the API this library implements.
///
/// # Safety
/// `version` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ncclGetVersion(version: *mut c_int) -> zcclResult_t {
    run(None, || {
        // SAFETY: the caller's contract.
        *unsafe { version.as_mut() }.ok_or_else(|| Error::InvalidArgument("version is NULL".into()))? =
            NCCL_API_VERSION;
        Ok(())
    })
}

/// NCCL's `ncclCommInitRankScalable`: [`zcclCommInitRankConfig`] with `commIds[0]` (NCCL
/// spreads the bootstrap over the `nId` ids; every rank passes the same ones, so the first
/// reaches them all).
///
/// # Safety
/// As NCCL's: `commIds` holds `nId` ids.
#[no_mangle]
pub unsafe extern "C" fn ncclCommInitRankScalable(
    newcomm: *mut zcclComm_t,
    nranks: c_int,
    myrank: c_int,
    nId: c_int,
    commIds: *mut zcclUniqueId,
    config: *mut zcclConfig_t,
) -> zcclResult_t {
    if nId < 1 || commIds.is_null() {
        return run(None, || {
            Err(Error::InvalidArgument(format!(
                "ncclCommInitRankScalable: {nId} ids at {commIds:?}"
            )))
        });
    }
    // SAFETY: the caller's contract: at least one id; the rest forwarded.
    unsafe { zcclCommInitRankConfig(newcomm, nranks, *commIds, myrank, config) }
}

/// `#[no_mangle] extern "C"` functions that zipcoll does not provide: each records why
/// (`ncclGetLastError(NULL)`) and returns `ncclInvalidArgument` without reading its arguments.
macro_rules! not_provided {
    ($($name:ident($($arg:ident: $ty:ty),*): $why:literal;)*) => {$(
        #[doc = concat!("NCCL's `", stringify!($name), "`: not provided (", $why, ").")]
        #[no_mangle]
        pub extern "C" fn $name($($arg: $ty),*) -> zcclResult_t {
            $(let _ = $arg;)*
            run(None, || Err(Error::InvalidArgument(format!(
                "{}: not provided by zipcoll's NCCL library ({})", stringify!($name), $why
            ))))
        }
    )*};
}

not_provided! {
    ncclMemAlloc(ptr: *mut *mut c_void, size: usize): "allocate with cudaMalloc; zipcoll needs no special memory";
    ncclMemFree(ptr: *mut c_void): "memory from ncclMemAlloc, which zipcoll does not hand out";
    ncclCommWindowRegister(
        comm: zcclComm_t, buff: *mut c_void, size: usize, win: *mut *mut c_void, winFlags: c_int
    ): "symmetric memory windows";
    ncclCommWindowDeregister(comm: zcclComm_t, win: *mut c_void): "symmetric memory windows";
    ncclDevCommCreate(comm: zcclComm_t, reqs: *const c_void, devComm: *mut c_void): "NCCL's device API";
    ncclDevCommDestroy(comm: zcclComm_t, devComm: *const c_void): "NCCL's device API";
    ncclCommShrink(
        comm: zcclComm_t, excludeRanksList: *mut c_int, excludeRanksCount: c_int, newcomm: *mut zcclComm_t,
        config: *mut zcclConfig_t, shrinkFlags: c_int
    ): "shrinking a communicator; every remaining rank may zcclCommSplit instead";
    ncclGroupSimulateEnd(simInfo: *mut c_void): "simulated groups";
}
