//! The `extern "C"` functions and their types (see the crate docs). Names follow NCCL's, hence
//! the camel case.
#![allow(non_camel_case_types, non_upper_case_globals, non_snake_case)]

use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_uint, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;
use zipcoll_host::comm::launch::device_for_rank;
use zipcoll_host::comm::{
    Algorithm, CallStream, Communicator, Config, Data, DeviceBuffer, DeviceScalar, DeviceSlice, Options, Reduction,
    UniqueId,
};
use zipcoll_host::{Backend, DType, Error, ReduceOp};

/// A call's outcome (NCCL's `ncclResult_t` values).
pub type zcclResult_t = c_int;
pub const zcclSuccess: zcclResult_t = 0;
pub const zcclUnhandledCudaError: zcclResult_t = 1;
pub const zcclSystemError: zcclResult_t = 2;
pub const zcclInternalError: zcclResult_t = 3;
pub const zcclInvalidArgument: zcclResult_t = 4;
pub const zcclInvalidUsage: zcclResult_t = 5;
pub const zcclRemoteError: zcclResult_t = 6;

/// An element type (NCCL's `ncclDataType_t` values and aliases).
pub type zcclDataType_t = c_int;
pub const zcclInt8: zcclDataType_t = 0;
pub const zcclChar: zcclDataType_t = 0;
pub const zcclUint8: zcclDataType_t = 1;
pub const zcclInt32: zcclDataType_t = 2;
pub const zcclInt: zcclDataType_t = 2;
pub const zcclUint32: zcclDataType_t = 3;
pub const zcclInt64: zcclDataType_t = 4;
pub const zcclUint64: zcclDataType_t = 5;
pub const zcclFloat16: zcclDataType_t = 6;
pub const zcclHalf: zcclDataType_t = 6;
pub const zcclFloat32: zcclDataType_t = 7;
pub const zcclFloat: zcclDataType_t = 7;
pub const zcclFloat64: zcclDataType_t = 8;
pub const zcclDouble: zcclDataType_t = 8;
pub const zcclBfloat16: zcclDataType_t = 9;
pub const zcclFloat8e4m3: zcclDataType_t = 10;
pub const zcclFloat8e5m2: zcclDataType_t = 11;

/// A reduction (NCCL's `ncclRedOp_t` values).
pub type zcclRedOp_t = c_int;
pub const zcclSum: zcclRedOp_t = 0;
pub const zcclProd: zcclRedOp_t = 1;
pub const zcclMax: zcclRedOp_t = 2;
pub const zcclMin: zcclRedOp_t = 3;
pub const zcclAvg: zcclRedOp_t = 4;
/// The built-in reductions; `zcclRedOpCreatePreMulSum` hands out values from here up.
pub const zcclNumOps: zcclRedOp_t = 5;

/// Where `zcclRedOpCreatePreMulSum`'s scalar lives (NCCL's `ncclScalarResidence_t`).
pub type zcclScalarResidence_t = c_int;
/// In device memory, read when the call runs (not supported: an invalid argument).
pub const zcclScalarDevice: zcclScalarResidence_t = 0;
/// In host memory, read once when the operator is created.
pub const zcclScalarHostImmediate: zcclScalarResidence_t = 1;

/// `zcclCommSplit`'s color for a rank that joins no new communicator.
pub const ZCCL_SPLIT_NOCOLOR: c_int = -1;

/// Bytes of a unique id.
pub const ZCCL_UNIQUE_ID_BYTES: usize = 128;

/// The rendezvous point of one communicator, as text (NUL-padded), copied to every rank.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct zcclUniqueId {
    pub internal: [c_char; ZCCL_UNIQUE_ID_BYTES],
}

/// `zcclConfig_t::magic` of a config set up by `ZCCL_CONFIG_INITIALIZER` (NCCL's value).
pub const ZCCL_CONFIG_MAGIC: c_uint = 0xcafe_beef;
/// `zcclConfig_t::version`: the NCCL version whose `ncclConfig_t` layout it has (2.28.0).
pub const ZCCL_CONFIG_VERSION: c_uint = 22800;
/// A `zcclConfig_t` field left unset (NCCL's `NCCL_CONFIG_UNDEF_INT`).
pub const ZCCL_CONFIG_UNDEF_INT: c_int = -2_147_483_648;

/// A new communicator's settings: NCCL's `ncclConfig_t` in its 2.28 layout, set up with
/// `ZCCL_CONFIG_INITIALIZER` and then the fields one wants. zipcoll reads `size`, `magic` and
/// `maxCTAs` (a cap on its channels, each a thread block); it accepts the others and ignores
/// them (initialization always completes before the call returns, whatever `blocking` says).
/// Its own settings come from the environment (`ZIPCOLL_COMPRESSION`, ...: the README).
#[repr(C)]
pub struct zcclConfig_t {
    pub size: usize,
    pub magic: c_uint,
    pub version: c_uint,
    pub blocking: c_int,
    pub cgaClusterSize: c_int,
    pub minCTAs: c_int,
    pub maxCTAs: c_int,
    pub netName: *const c_char,
    pub splitShare: c_int,
    pub trafficClass: c_int,
    pub commName: *const c_char,
    pub collnetEnable: c_int,
    pub CTAPolicy: c_int,
    pub shrinkShare: c_int,
    pub nvlsCTAs: c_int,
    pub nChannelsPerNetPeer: c_int,
    pub nvlinkCentricSched: c_int,
}

/// `base` with what `config` (NULL: nothing) sets.
///
/// # Safety
/// `config` is NULL or points at a `zcclConfig_t` of at least its `size` readable bytes.
unsafe fn settings(config: *const zcclConfig_t, mut base: Config) -> Result<Config, Error> {
    if config.is_null() {
        return Ok(base);
    }
    // SAFETY: the caller's contract; `size` and `magic` lead the struct in every NCCL version,
    // and each field is read alone (no reference to the whole struct, which may be shorter).
    let (size, magic) = unsafe { ((*config).size, (*config).magic) };
    if magic != ZCCL_CONFIG_MAGIC {
        return Err(Error::InvalidArgument(format!(
            "config: magic {magic:#x}, not {ZCCL_CONFIG_MAGIC:#x}: set it up with ZCCL_CONFIG_INITIALIZER"
        )));
    }
    if size >= std::mem::offset_of!(zcclConfig_t, maxCTAs) + std::mem::size_of::<c_int>() {
        // SAFETY: as above; the field lies within `size`.
        let max = unsafe { (*config).maxCTAs };
        if max != ZCCL_CONFIG_UNDEF_INT {
            let max = usize::try_from(max)
                .ok()
                .filter(|m| *m > 0)
                .ok_or_else(|| Error::InvalidArgument(format!("config maxCTAs {max}: at least 1")))?;
            base.channels = base.channels.min(max);
        }
    }
    Ok(base)
}

/// A communicator (opaque to C).
pub struct zcclComm {
    comm: Communicator,
    last_error: Mutex<String>,
    /// The PreMulSum operators created on it: entry `i` is operator `zcclNumOps + i` (its
    /// reduction, with the scalar's bits or its device address, and its dtype), `None` once
    /// destroyed.
    premul_ops: Mutex<Vec<Option<(Reduction, DType)>>>,
}

// C programs share a handle across threads (PyTorch's watchdog polls zcclCommGetAsyncError
// while its main thread enqueues calls): the communicator must be Send + Sync.
const _: fn() = || {
    fn shared<T: Send + Sync>() {}
    shared::<zcclComm>();
};

impl zcclComm {
    fn new(comm: Communicator) -> zcclComm {
        zcclComm {
            comm,
            last_error: Mutex::new(String::new()),
            premul_ops: Mutex::new(Vec::new()),
        }
    }

    /// The reduction `o` names for a call on `dtype`: a built-in one, or a PreMulSum operator
    /// created on this communicator for that dtype.
    fn reduction(&self, o: zcclRedOp_t, dtype: DType) -> Result<Reduction, Error> {
        if let Ok(op) = red_op(o) {
            return Ok(op.into());
        }
        let ops = self.premul_ops.lock().unwrap_or_else(|p| p.into_inner());
        let made = op_slot(o).and_then(|i| ops.get(i).copied().flatten());
        match made {
            Some((reduction, d)) if d == dtype => Ok(reduction),
            Some((_, d)) => Err(Error::InvalidArgument(format!(
                "reduction {o} was created for {d:?}, this call moves {dtype:?}"
            ))),
            None => Err(Error::InvalidArgument(format!(
                "reduction {o}: neither built in nor a live operator of this communicator"
            ))),
        }
    }
}

/// A communicator handle.
pub type zcclComm_t = *mut zcclComm;

/// The C result of `e`.
fn code(e: &Error) -> zcclResult_t {
    match e {
        Error::InvalidArgument(_) => zcclInvalidArgument,
        Error::Aborted => zcclInvalidUsage,
        Error::Remote { .. } | Error::Collective { .. } | Error::Timeout { .. } | Error::Bootstrap(_) => {
            zcclRemoteError
        }
        Error::Cuda { .. } | Error::BackendUnavailable { .. } => zcclUnhandledCudaError,
        Error::Io { .. } => zcclSystemError,
        _ => zcclInternalError,
    }
}

thread_local! {
    /// The message of this thread's last error that no communicator holds (init, the id).
    static LAST: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Runs `f`, catching panics; records an error's message on `comm` (or this thread).
pub(crate) fn run(comm: Option<&zcclComm>, f: impl FnOnce() -> Result<(), Error>) -> zcclResult_t {
    let (rc, msg) = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => return zcclSuccess,
        Ok(Err(e)) => (code(&e), e.to_string()),
        Err(_) => (zcclInternalError, "zipcoll panicked inside a C call".to_owned()),
    };
    match comm {
        Some(c) => *c.last_error.lock().unwrap_or_else(|p| p.into_inner()) = msg,
        None => LAST.with(|l| *l.borrow_mut() = msg),
    }
    rc
}

fn null(what: &str) -> Error {
    Error::InvalidArgument(format!("{what} is NULL"))
}

fn dtype(d: zcclDataType_t) -> Result<DType, Error> {
    Ok(match d {
        zcclInt8 => DType::I8,
        zcclUint8 => DType::U8,
        zcclInt32 => DType::I32,
        zcclUint32 => DType::U32,
        zcclInt64 => DType::I64,
        zcclUint64 => DType::U64,
        zcclFloat16 => DType::F16,
        zcclFloat32 => DType::F32,
        zcclFloat64 => DType::F64,
        zcclBfloat16 => DType::Bf16,
        zcclFloat8e4m3 => DType::F8E4M3,
        zcclFloat8e5m2 => DType::F8E5M2,
        other => {
            return Err(Error::InvalidArgument(format!(
                "datatype {other}: not one of NCCL's (0..=11)"
            )))
        }
    })
}

fn red_op(o: zcclRedOp_t) -> Result<ReduceOp, Error> {
    Ok(match o {
        zcclSum => ReduceOp::Sum,
        zcclProd => ReduceOp::Prod,
        zcclMax => ReduceOp::Max,
        zcclMin => ReduceOp::Min,
        zcclAvg => ReduceOp::Avg,
        other => return Err(Error::InvalidArgument(format!("reduction {other}"))),
    })
}

/// The entry of `zcclComm::premul_ops` that operator `o` would be.
fn op_slot(o: zcclRedOp_t) -> Option<usize> {
    o.checked_sub(zcclNumOps).and_then(|i| usize::try_from(i).ok())
}

fn index(v: c_int, what: &str) -> Result<usize, Error> {
    usize::try_from(v).map_err(|_| Error::InvalidArgument(format!("{what} {v}")))
}

/// The version, as NCCL encodes it (`major * 10000 + minor * 100 + patch`).
///
/// # Safety
/// `version` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn zcclGetVersion(version: *mut c_int) -> zcclResult_t {
    run(None, || {
        // SAFETY: the caller's contract.
        let v = unsafe { version.as_mut() }.ok_or_else(|| null("version"))?;
        let num = |s: &str| s.parse::<c_int>().unwrap_or(0);
        *v = num(env!("CARGO_PKG_VERSION_MAJOR")) * 10000
            + num(env!("CARGO_PKG_VERSION_MINOR")) * 100
            + num(env!("CARGO_PKG_VERSION_PATCH"));
        Ok(())
    })
}

/// A new unique id (its bootstrap root runs in this process), for every rank.
///
/// # Safety
/// `id` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn zcclGetUniqueId(id: *mut zcclUniqueId) -> zcclResult_t {
    run(None, || {
        // SAFETY: the caller's contract.
        let out = unsafe { id.as_mut() }.ok_or_else(|| null("id"))?;
        let text = UniqueId::new()?.to_string();
        if text.len() >= ZCCL_UNIQUE_ID_BYTES {
            return Err(Error::InvalidArgument(format!("the id {text:?} is too long")));
        }
        out.internal = [0; ZCCL_UNIQUE_ID_BYTES];
        for (o, b) in out.internal.iter_mut().zip(text.bytes()) {
            *o = b as c_char;
        }
        Ok(())
    })
}

/// The id a `zcclUniqueId` carries.
fn parse_id(id: &zcclUniqueId) -> Result<UniqueId, Error> {
    let bytes: Vec<u8> = id.internal.iter().map(|c| *c as u8).take_while(|b| *b != 0).collect();
    String::from_utf8_lossy(&bytes).parse()
}

/// Rank `rank` of `nranks` (NCCL's `ncclCommInitRankConfig`), with the environment's settings
/// and `config`'s (NULL: none), on the GPU whose context is current on the calling thread (the
/// caller's `cudaSetDevice`, as in NCCL), else GPU `rank % devices`, else the simulator.
///
/// # Safety
/// `comm` is NULL or writable; `config` NULL or a `zcclConfig_t` (see [`zcclConfig_t`]).
#[no_mangle]
pub unsafe extern "C" fn zcclCommInitRankConfig(
    comm: *mut zcclComm_t,
    nranks: c_int,
    id: zcclUniqueId,
    rank: c_int,
    config: *mut zcclConfig_t,
) -> zcclResult_t {
    run(None, || {
        // SAFETY: the caller's contract.
        let out = unsafe { comm.as_mut() }.ok_or_else(|| null("comm"))?;
        let (nranks, rank) = (index(nranks, "nranks")?, index(rank, "rank")?);
        let device = device_for_rank(rank)?;
        // SAFETY: the caller's contract.
        let settings = unsafe { settings(config, Config::defaults_for(device).with_env()?) }?;
        let c = Communicator::init_with(&parse_id(&id)?, rank, nranks, device, settings)?;
        *out = Box::into_raw(Box::new(zcclComm::new(c)));
        Ok(())
    })
}

/// [`zcclCommInitRankConfig`] with no config (NCCL's `ncclCommInitRank`).
///
/// # Safety
/// `comm` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn zcclCommInitRank(
    comm: *mut zcclComm_t,
    nranks: c_int,
    id: zcclUniqueId,
    rank: c_int,
) -> zcclResult_t {
    // SAFETY: forwarded.
    unsafe { zcclCommInitRankConfig(comm, nranks, id, rank, std::ptr::null_mut()) }
}

/// NCCL's `ncclCommInitAll`: `ndev` communicators of this process, rank `r` on GPU
/// `devlist[r]` (NULL: GPU `r`), written to `comm[0..ndev]`; on the simulator (no GPU) every
/// rank is simulated and `devlist` is not read.
///
/// # Safety
/// `comm` is NULL or `ndev` writable handles; `devlist` NULL or `ndev` readable ints.
#[no_mangle]
pub unsafe extern "C" fn zcclCommInitAll(comm: *mut zcclComm_t, ndev: c_int, devlist: *const c_int) -> zcclResult_t {
    run(None, || {
        let n = index(ndev, "ndev")?;
        if n == 0 || comm.is_null() {
            return Err(Error::InvalidArgument(format!("ndev {n} with comm {comm:?}")));
        }
        let devices = match Backend::detect() {
            Backend::Cuda { .. } => (0..n)
                .map(|r| match devlist.is_null() {
                    true => Ok(Backend::Cuda { ordinal: r }),
                    // SAFETY: the caller's contract: `ndev` ints.
                    false => {
                        index(unsafe { *devlist.add(r) }, "devlist entry").map(|ordinal| Backend::Cuda { ordinal })
                    }
                })
                .collect::<Result<Vec<_>, _>>()?,
            _ => vec![Backend::Sim; n],
        };
        let comms = Communicator::init_all(&devices, Config::defaults_for(devices[0]).with_env()?)?;
        // SAFETY: the caller's contract: `ndev` writable handles.
        let out = unsafe { std::slice::from_raw_parts_mut(comm, n) };
        for (o, c) in out.iter_mut().zip(comms) {
            *o = Box::into_raw(Box::new(zcclComm::new(c)));
        }
        Ok(())
    })
}

/// The handle's communicator.
///
/// # Safety
/// `comm` is NULL or a handle from `zcclCommInitRank`/`zcclCommSplit` not yet destroyed.
unsafe fn handle<'a>(comm: zcclComm_t) -> Result<&'a zcclComm, Error> {
    // SAFETY: the caller's contract.
    unsafe { comm.as_ref() }.ok_or_else(|| null("comm"))
}

/// Frees the communicator (after its calls in flight; NCCL's `ncclCommDestroy`).
///
/// # Safety
/// `comm` is NULL or a live handle, not used after this.
#[no_mangle]
pub unsafe extern "C" fn zcclCommDestroy(comm: zcclComm_t) -> zcclResult_t {
    run(None, || {
        if comm.is_null() {
            return Err(null("comm"));
        }
        // SAFETY: the caller's contract: a live handle, given up here.
        drop(unsafe { Box::from_raw(comm) });
        Ok(())
    })
}

/// Waits for the communicator's calls and reports how they ended (NCCL's
/// `ncclCommFinalize`); `zcclCommDestroy` then closes the transport (gracefully when nothing
/// failed) and frees it.
///
/// # Safety
/// `comm` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn zcclCommFinalize(comm: zcclComm_t) -> zcclResult_t {
    // SAFETY: the caller's contract.
    let Ok(c) = (unsafe { handle(comm) }) else {
        return zcclInvalidArgument;
    };
    run(Some(c), || c.comm.synchronize())
}

/// Stops the communicator's calls on every rank and frees it.
///
/// # Safety
/// `comm` is NULL or a live handle, not used after this.
#[no_mangle]
pub unsafe extern "C" fn zcclCommAbort(comm: zcclComm_t) -> zcclResult_t {
    // SAFETY: the caller's contract.
    let Ok(c) = (unsafe { handle(comm) }) else {
        return zcclInvalidArgument;
    };
    c.comm.abort();
    // SAFETY: as above.
    unsafe { zcclCommDestroy(comm) }
}

/// The ranks of the communicator.
///
/// # Safety
/// `comm` is NULL or a live handle; `count` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn zcclCommCount(comm: zcclComm_t, count: *mut c_int) -> zcclResult_t {
    // SAFETY: the caller's contract.
    let Ok(c) = (unsafe { handle(comm) }) else {
        return zcclInvalidArgument;
    };
    run(Some(c), || {
        // SAFETY: the caller's contract.
        *unsafe { count.as_mut() }.ok_or_else(|| null("count"))? = c.comm.nranks() as c_int;
        Ok(())
    })
}

/// This rank.
///
/// # Safety
/// `comm` is NULL or a live handle; `rank` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn zcclCommUserRank(comm: zcclComm_t, rank: *mut c_int) -> zcclResult_t {
    // SAFETY: the caller's contract.
    let Ok(c) = (unsafe { handle(comm) }) else {
        return zcclInvalidArgument;
    };
    run(Some(c), || {
        // SAFETY: the caller's contract.
        *unsafe { rank.as_mut() }.ok_or_else(|| null("rank"))? = c.comm.rank() as c_int;
        Ok(())
    })
}

/// `zcclSuccess` in `result` while the communicator is healthy, else the result of its first
/// failure (its message: `zcclGetLastError`).
///
/// # Safety
/// `comm` is NULL or a live handle; `result` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn zcclCommGetAsyncError(comm: zcclComm_t, result: *mut zcclResult_t) -> zcclResult_t {
    // SAFETY: the caller's contract.
    let Ok(c) = (unsafe { handle(comm) }) else {
        return zcclInvalidArgument;
    };
    // SAFETY: the caller's contract.
    let Some(out) = (unsafe { result.as_mut() }) else {
        return zcclInvalidArgument;
    };
    *out = match c.comm.async_error() {
        None => zcclSuccess,
        Some(m) => {
            *c.last_error.lock().unwrap_or_else(|p| p.into_inner()) = m;
            zcclRemoteError
        }
    };
    zcclSuccess
}

/// A static description of `result`.
#[no_mangle]
pub extern "C" fn zcclGetErrorString(result: zcclResult_t) -> *const c_char {
    let s: &'static [u8] = match result {
        zcclSuccess => b"no error\0",
        zcclUnhandledCudaError => b"unhandled cuda error\0",
        zcclSystemError => b"unhandled system error\0",
        zcclInternalError => b"internal error\0",
        zcclInvalidArgument => b"invalid argument\0",
        zcclInvalidUsage => b"invalid usage (the communicator failed or was aborted)\0",
        zcclRemoteError => b"remote process exited or there was a network error\0",
        _ => b"unknown result code\0",
    };
    s.as_ptr().cast()
}

/// The message of the communicator's last error (this thread's last one without a
/// communicator when `comm` is NULL), NUL-terminated, valid until the next call that fails.
///
/// # Safety
/// `comm` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn zcclGetLastError(comm: zcclComm_t) -> *const c_char {
    thread_local! {
        static TEXT: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    }
    // SAFETY: the caller's contract.
    let msg = match unsafe { comm.as_ref() } {
        Some(c) => c.last_error.lock().unwrap_or_else(|p| p.into_inner()).clone(),
        None => LAST.with(|l| l.borrow().clone()),
    };
    TEXT.with(|t| {
        let mut t = t.borrow_mut();
        *t = msg.replace('\0', " ").into_bytes();
        t.push(0);
        t.as_ptr().cast()
    })
}

/// One call of a group, kept until the outermost `zcclGroupEnd`.
#[derive(Clone, Copy)]
struct Pending {
    comm: zcclComm_t,
    what: Op,
    send: *const c_void,
    recv: *mut c_void,
    count: usize,
    dtype: DType,
    /// The caller's stream (NULL: the legacy default stream).
    stream: *mut c_void,
}

#[derive(Clone, Copy)]
enum Op {
    AllReduce(Reduction),
    AllGather,
    ReduceScatter(Reduction),
    Reduce(Reduction, usize),
    Broadcast(usize),
    AllToAll,
    Send(usize),
    Recv(usize),
}

thread_local! {
    /// The open groups' depth and their calls.
    static GROUP: RefCell<(u32, Vec<Pending>)> = const { RefCell::new((0, Vec::new())) };
}

/// Starts (or nests) a group: the calls until the matching `zcclGroupEnd` run together.
#[no_mangle]
pub extern "C" fn zcclGroupStart() -> zcclResult_t {
    GROUP.with(|g| g.borrow_mut().0 += 1);
    zcclSuccess
}

/// Ends a group; the outermost end launches its calls, per communicator in the order they
/// were made (collectives first, then the sends and receives together).
#[no_mangle]
pub extern "C" fn zcclGroupEnd() -> zcclResult_t {
    let calls = GROUP.with(|g| {
        let mut g = g.borrow_mut();
        match g.0 {
            0 => None,
            1 => {
                g.0 = 0;
                Some(std::mem::take(&mut g.1))
            }
            _ => {
                g.0 -= 1;
                Some(Vec::new())
            }
        }
    });
    let Some(calls) = calls else {
        LAST.with(|l| *l.borrow_mut() = "zcclGroupEnd without zcclGroupStart".into());
        return zcclInvalidUsage;
    };
    let mut comms: Vec<zcclComm_t> = calls.iter().map(|c| c.comm).collect();
    comms.dedup();
    comms.sort_unstable();
    comms.dedup();
    for comm in comms {
        let mine: Vec<Pending> = calls.iter().filter(|c| c.comm == comm).copied().collect();
        // SAFETY: every handle in a group was live when its call was made, and stays so until
        // the group ends (the caller's contract for any call).
        let Ok(c) = (unsafe { handle(comm) }) else {
            return zcclInvalidArgument;
        };
        // SAFETY: the pointers were given for these calls, which run now.
        let rc = run(Some(c), || unsafe { launch_group(&c.comm, &mine) });
        if rc != zcclSuccess {
            return rc;
        }
    }
    zcclSuccess
}

/// The views of one call's memory: its input and its output, where it has them.
///
/// # Safety
/// The pointers are the caller's memory of the sizes the call implies (NCCL's contract).
unsafe fn views<'a>(
    comm: &Communicator,
    p: &Pending,
) -> Result<(Option<DeviceSlice<'a>>, Option<DeviceSlice<'a>>), Error> {
    let (k, size) = (comm.nranks(), p.dtype.size_bytes());
    let elems = |n: usize| {
        n.checked_mul(size)
            .ok_or_else(|| Error::InvalidArgument(format!("count {} overflows", p.count)))
    };
    let (one, all) = (elems(p.count)?, elems(p.count.saturating_mul(k))?);
    let (send_bytes, recv_bytes) = match p.what {
        Op::AllGather => (one, all),
        Op::ReduceScatter(_) => (all, one),
        Op::AllToAll => (all, all),
        _ => (one, one),
    };
    let view = |ptr: *mut u8, bytes: usize| -> Option<DeviceSlice<'a>> {
        if ptr.is_null() {
            return None;
        }
        // SAFETY: the caller's contract; the communicator checks the memory's device.
        Some(unsafe {
            match comm.backend().is_sim() {
                true => DeviceSlice::host_raw(ptr, bytes),
                false => DeviceSlice::cuda_raw(ptr as u64, bytes),
            }
        })
    };
    Ok((view(p.send as *mut u8, send_bytes), view(p.recv as *mut u8, recv_bytes)))
}

/// The `Data` of a collective from its views: in place when the input is where NCCL's
/// in-place call puts it.
fn data<'b>(
    comm: &Communicator,
    p: &Pending,
    send: &'b mut Option<DeviceSlice<'_>>,
    recv: &'b mut Option<DeviceSlice<'_>>,
) -> Result<Data<'b>, Error> {
    let block = p.count * p.dtype.size_bytes();
    let (s, r) = (p.send as usize, p.recv as usize);
    let in_place = match p.what {
        Op::AllGather => Some(s) == r.checked_add(comm.rank() * block),
        Op::ReduceScatter(_) => Some(r) == s.checked_add(comm.rank() * block),
        _ => s == r,
    };
    // an in-place call's one buffer: all_gather's is its output, reduce_scatter's its input,
    // the others' both
    let one_is_output = !matches!(p.what, Op::ReduceScatter(_));
    Ok(
        match (in_place, one_is_output, send.as_deref_mut(), recv.as_deref_mut()) {
            (true, true, _, Some(r)) => Data::InPlace(r),
            (true, false, Some(s), _) => Data::InPlace(s),
            (_, _, Some(s), Some(r)) => Data::OutOfPlace { src: s, dst: r },
            (_, _, Some(s), None) => Data::Input(s),
            (_, _, None, Some(r)) => Data::Output(r),
            (_, _, None, None) => return Err(null("sendbuff and recvbuff")),
        },
    )
}

/// Runs one communicator's calls of a group as one `Group`, ordered with their stream (see the
/// crate docs).
///
/// # Safety
/// The calls' pointers are the caller's memory of the sizes they imply; their streams are NULL
/// or CUDA streams of the communicator's context.
unsafe fn launch_group(comm: &Communicator, calls: &[Pending]) -> Result<(), Error> {
    let streams = calls.iter().map(|p| p.stream);
    match ordering(comm.backend().is_sim(), streams) {
        // SAFETY: the caller's contract.
        Ordering::Unordered => unsafe { launch_group_on(comm, calls, None) },
        // SAFETY: the caller's contract: a live stream of the communicator's context.
        Ordering::Join(s) => unsafe { launch_group_on(comm, calls, Some(CallStream::from_raw(s.cast()))) },
        Ordering::OnHost(streams) => {
            for s in streams {
                // SAFETY: the caller's contract.
                unsafe { wait_on_host(s) }?;
            }
            // SAFETY: the caller's contract.
            unsafe { launch_group_on(comm, calls, None) }?;
            comm.synchronize()
        }
    }
}

/// How a group's calls are ordered with their streams ([`ordering`]).
#[derive(Debug, PartialEq, Eq)]
enum Ordering {
    /// The simulator: it has no streams.
    Unordered,
    /// Every call names this stream, one of the caller's: joined to it by events.
    Join(*mut c_void),
    /// The host waits for these streams before the group and for the group before returning:
    /// calls on several streams, or on the legacy default stream (NULL, NCCL's and PyTorch's
    /// synchronous collectives' stream; events are joined only with the caller's own streams,
    /// `CallStream`'s contract).
    OnHost(Vec<*mut c_void>),
}

/// How calls on `streams` are ordered on a GPU (`sim`: the simulator).
fn ordering(sim: bool, streams: impl Iterator<Item = *mut c_void>) -> Ordering {
    let mut streams: Vec<*mut c_void> = streams.collect();
    streams.sort();
    streams.dedup();
    match (sim, &streams[..]) {
        (true, _) | (false, []) => Ordering::Unordered,
        (false, [one]) if !one.is_null() => Ordering::Join(*one),
        (false, _) => Ordering::OnHost(streams),
    }
}

/// Waits on the host for the work enqueued on `stream` so far.
///
/// # Safety
/// `stream` is a live CUDA stream.
unsafe fn wait_on_host(stream: *mut c_void) -> Result<(), Error> {
    use zipcoll_host::cudarc::driver::sys;
    // SAFETY: the caller's contract.
    let r = unsafe { sys::cuStreamSynchronize(stream.cast()) };
    match r {
        sys::CUresult::CUDA_SUCCESS => Ok(()),
        _ => Err(Error::Cuda {
            call: "cuStreamSynchronize",
            message: format!("{r:?}"),
        }),
    }
}

/// [`launch_group`] with the group ordered with `stream` alone.
///
/// # Safety
/// As [`launch_group`].
unsafe fn launch_group_on(comm: &Communicator, calls: &[Pending], stream: Option<CallStream>) -> Result<(), Error> {
    // SAFETY: the caller's contract.
    let mut bufs = calls
        .iter()
        .map(|p| unsafe { views(comm, p) })
        .collect::<Result<Vec<_>, _>>()?;
    let mut g = comm.group();
    for (p, (send, recv)) in calls.iter().zip(bufs.iter_mut()) {
        match p.what {
            Op::Send(peer) => {
                let b: &DeviceBuffer = send.as_deref().ok_or_else(|| null("sendbuff"))?;
                g.send(b, p.count, p.dtype, peer)?
            }
            Op::Recv(peer) => {
                let b: &mut DeviceBuffer = recv.as_deref_mut().ok_or_else(|| null("recvbuff"))?;
                g.recv(b, p.count, p.dtype, peer)?
            }
            Op::AllReduce(o) => g.all_reduce(data(comm, p, send, recv)?, p.count, p.dtype, o, Algorithm::Ring)?,
            Op::AllGather => g.all_gather(data(comm, p, send, recv)?, p.count, p.dtype)?,
            Op::ReduceScatter(o) => g.reduce_scatter(data(comm, p, send, recv)?, p.count, p.dtype, o)?,
            Op::Reduce(o, root) => g.reduce(data(comm, p, send, recv)?, p.count, p.dtype, o, root)?,
            Op::Broadcast(root) => g.broadcast(data(comm, p, send, recv)?, p.count, p.dtype, root)?,
            Op::AllToAll => g.all_to_all(data(comm, p, send, recv)?, p.count, p.dtype)?,
        }
    }
    g.launch(Options {
        stream,
        ..Options::default()
    })
}

/// A call: queued in an open group, else run now as a group of one, ordered with `stream`
/// (see the crate docs).
///
/// # Safety
/// `comm` is NULL or a live handle; the pointers are the caller's memory of the sizes the call
/// implies; `stream` is NULL or a CUDA stream.
#[allow(clippy::too_many_arguments)]
unsafe fn call(
    comm: zcclComm_t,
    what: impl FnOnce(&zcclComm, DType) -> Result<Op, Error>,
    send: *const c_void,
    recv: *mut c_void,
    count: usize,
    datatype: zcclDataType_t,
    stream: *mut c_void,
) -> zcclResult_t {
    // SAFETY: the caller's contract.
    let Ok(c) = (unsafe { handle(comm) }) else {
        return zcclInvalidArgument;
    };
    run(Some(c), || {
        let dtype = dtype(datatype)?;
        let p = Pending {
            comm,
            what: what(c, dtype)?,
            send,
            recv,
            count,
            dtype,
            stream,
        };
        if GROUP.with(|g| g.borrow().0 > 0) {
            GROUP.with(|g| g.borrow_mut().1.push(p));
            return Ok(());
        }
        // SAFETY: the caller's contract.
        unsafe { launch_group(&c.comm, &[p]) }
    })
}

/// NCCL's `ncclRedOpCreatePreMulSum`: a reduction on `comm` for calls on `datatype` that
/// multiplies every contribution by `*scalar` (a value of `datatype`, integers included), then
/// sums. With `zcclScalarHostImmediate` the value is read now from host memory; with
/// `zcclScalarDevice` `scalar` is in the device memory of `comm`'s GPU (host memory on the
/// simulator) and each call reads the value there as it runs.
///
/// # Safety
/// `op` is NULL or writable; `scalar` is NULL or holds one value of `datatype` (with
/// `zcclScalarDevice`: until every call that uses the operator has completed); `comm` is NULL
/// or a live handle.
#[no_mangle]
pub unsafe extern "C" fn zcclRedOpCreatePreMulSum(
    op: *mut zcclRedOp_t,
    scalar: *mut c_void,
    datatype: zcclDataType_t,
    residence: zcclScalarResidence_t,
    comm: zcclComm_t,
) -> zcclResult_t {
    // SAFETY: the caller's contract.
    let Ok(c) = (unsafe { handle(comm) }) else {
        return zcclInvalidArgument;
    };
    run(Some(c), || {
        // SAFETY: the caller's contract.
        let out = unsafe { op.as_mut() }.ok_or_else(|| null("op"))?;
        let d = dtype(datatype)?;
        if scalar.is_null() {
            return Err(null("scalar"));
        }
        let reduction = match residence {
            zcclScalarHostImmediate => {
                let mut bytes = [0u8; 8];
                // SAFETY: the caller's contract: one value of `d` at `scalar` (any alignment).
                unsafe { std::ptr::copy_nonoverlapping(scalar.cast::<u8>(), bytes.as_mut_ptr(), d.size_bytes()) };
                Reduction::PreMulSumBits(u64::from_le_bytes(bytes))
            }
            // SAFETY: the caller's contract: one value of `d` at `scalar` for as long as calls
            // use the operator; each call checks it is in the communicator's device memory.
            zcclScalarDevice => Reduction::PreMulSumOnDevice(unsafe { DeviceScalar::new(scalar as u64) }),
            other => {
                return Err(Error::InvalidArgument(format!(
                    "scalar residence {other}: zcclScalarDevice ({zcclScalarDevice}) or zcclScalarHostImmediate \
                     ({zcclScalarHostImmediate})"
                )))
            }
        };
        let mut ops = c.premul_ops.lock().unwrap_or_else(|p| p.into_inner());
        let slot = match ops.iter().position(Option::is_none) {
            Some(i) => i,
            None => {
                ops.push(None);
                ops.len() - 1
            }
        };
        *out = zcclRedOp_t::try_from(slot)
            .ok()
            .and_then(|i| i.checked_add(zcclNumOps))
            .ok_or_else(|| Error::InvalidArgument("too many reduction operators".into()))?;
        ops[slot] = Some((reduction, d));
        Ok(())
    })
}

/// NCCL's `ncclRedOpDestroy`: frees a reduction made by `zcclRedOpCreatePreMulSum` on `comm`
/// (a built-in one, or one not made there, is an invalid argument).
///
/// # Safety
/// `comm` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn zcclRedOpDestroy(op: zcclRedOp_t, comm: zcclComm_t) -> zcclResult_t {
    // SAFETY: the caller's contract.
    let Ok(c) = (unsafe { handle(comm) }) else {
        return zcclInvalidArgument;
    };
    run(Some(c), || {
        let mut ops = c.premul_ops.lock().unwrap_or_else(|p| p.into_inner());
        match op_slot(op).and_then(|i| ops.get_mut(i)) {
            Some(entry @ Some(_)) => {
                *entry = None;
                Ok(())
            }
            _ => Err(Error::InvalidArgument(format!(
                "reduction {op} is not a live operator made by zcclRedOpCreatePreMulSum on this communicator"
            ))),
        }
    })
}

/// NCCL's `ncclAllReduce` (ring; in place when `sendbuff == recvbuff`).
///
/// # Safety
/// As NCCL's: the buffers hold `count` elements; `comm` a live handle; `stream` NULL or a
/// CUDA stream.
#[no_mangle]
pub unsafe extern "C" fn zcclAllReduce(
    sendbuff: *const c_void,
    recvbuff: *mut c_void,
    count: usize,
    datatype: zcclDataType_t,
    op: zcclRedOp_t,
    comm: zcclComm_t,
    stream: *mut c_void,
) -> zcclResult_t {
    // SAFETY: forwarded.
    unsafe {
        call(
            comm,
            |c, d| Ok(Op::AllReduce(c.reduction(op, d)?)),
            sendbuff,
            recvbuff,
            count,
            datatype,
            stream,
        )
    }
}

/// NCCL's `ncclAllGather`: `sendcount` elements from each rank, `nranks * sendcount` out.
///
/// # Safety
/// As NCCL's.
#[no_mangle]
pub unsafe extern "C" fn zcclAllGather(
    sendbuff: *const c_void,
    recvbuff: *mut c_void,
    sendcount: usize,
    datatype: zcclDataType_t,
    comm: zcclComm_t,
    stream: *mut c_void,
) -> zcclResult_t {
    // SAFETY: forwarded.
    unsafe {
        call(
            comm,
            |_, _| Ok(Op::AllGather),
            sendbuff,
            recvbuff,
            sendcount,
            datatype,
            stream,
        )
    }
}

/// NCCL's `ncclReduceScatter`: `nranks * recvcount` elements in, `recvcount` out.
///
/// # Safety
/// As NCCL's.
#[no_mangle]
pub unsafe extern "C" fn zcclReduceScatter(
    sendbuff: *const c_void,
    recvbuff: *mut c_void,
    recvcount: usize,
    datatype: zcclDataType_t,
    op: zcclRedOp_t,
    comm: zcclComm_t,
    stream: *mut c_void,
) -> zcclResult_t {
    // SAFETY: forwarded.
    unsafe {
        call(
            comm,
            |c, d| Ok(Op::ReduceScatter(c.reduction(op, d)?)),
            sendbuff,
            recvbuff,
            recvcount,
            datatype,
            stream,
        )
    }
}

/// NCCL's `ncclReduce` (`recvbuff` is used on `root` only and may be NULL elsewhere).
///
/// # Safety
/// As NCCL's.
#[no_mangle]
pub unsafe extern "C" fn zcclReduce(
    sendbuff: *const c_void,
    recvbuff: *mut c_void,
    count: usize,
    datatype: zcclDataType_t,
    op: zcclRedOp_t,
    root: c_int,
    comm: zcclComm_t,
    stream: *mut c_void,
) -> zcclResult_t {
    let what = |c: &zcclComm, d| Ok(Op::Reduce(c.reduction(op, d)?, index(root, "root")?));
    // SAFETY: forwarded.
    unsafe { call(comm, what, sendbuff, recvbuff, count, datatype, stream) }
}

/// NCCL's `ncclBroadcast` (`sendbuff` is used on `root` only and may be NULL elsewhere).
///
/// # Safety
/// As NCCL's.
#[no_mangle]
pub unsafe extern "C" fn zcclBroadcast(
    sendbuff: *const c_void,
    recvbuff: *mut c_void,
    count: usize,
    datatype: zcclDataType_t,
    root: c_int,
    comm: zcclComm_t,
    stream: *mut c_void,
) -> zcclResult_t {
    // SAFETY: forwarded.
    unsafe {
        call(
            comm,
            |_, _| Ok(Op::Broadcast(index(root, "root")?)),
            sendbuff,
            recvbuff,
            count,
            datatype,
            stream,
        )
    }
}

/// NCCL's `ncclBcast`: [`zcclBroadcast`] in place.
///
/// # Safety
/// As NCCL's.
#[no_mangle]
pub unsafe extern "C" fn zcclBcast(
    buff: *mut c_void,
    count: usize,
    datatype: zcclDataType_t,
    root: c_int,
    comm: zcclComm_t,
    stream: *mut c_void,
) -> zcclResult_t {
    // SAFETY: forwarded.
    unsafe { zcclBroadcast(buff, buff, count, datatype, root, comm, stream) }
}

/// NCCL's `ncclAlltoAll`: `count` elements to each rank, block `q` of `sendbuff` to rank `q`,
/// block `q` of `recvbuff` from it (out of place only).
///
/// # Safety
/// As NCCL's: both buffers hold `nranks * count` elements.
#[no_mangle]
pub unsafe extern "C" fn zcclAlltoAll(
    sendbuff: *const c_void,
    recvbuff: *mut c_void,
    count: usize,
    datatype: zcclDataType_t,
    comm: zcclComm_t,
    stream: *mut c_void,
) -> zcclResult_t {
    // SAFETY: forwarded.
    unsafe {
        call(
            comm,
            |_, _| Ok(Op::AllToAll),
            sendbuff,
            recvbuff,
            count,
            datatype,
            stream,
        )
    }
}

/// NCCL's `ncclSend`.
///
/// # Safety
/// As NCCL's.
#[no_mangle]
pub unsafe extern "C" fn zcclSend(
    sendbuff: *const c_void,
    count: usize,
    datatype: zcclDataType_t,
    peer: c_int,
    comm: zcclComm_t,
    stream: *mut c_void,
) -> zcclResult_t {
    let what = |_: &zcclComm, _| Ok(Op::Send(index(peer, "peer")?));
    // SAFETY: forwarded.
    unsafe { call(comm, what, sendbuff, std::ptr::null_mut(), count, datatype, stream) }
}

/// NCCL's `ncclRecv`.
///
/// # Safety
/// As NCCL's.
#[no_mangle]
pub unsafe extern "C" fn zcclRecv(
    recvbuff: *mut c_void,
    count: usize,
    datatype: zcclDataType_t,
    peer: c_int,
    comm: zcclComm_t,
    stream: *mut c_void,
) -> zcclResult_t {
    let what = |_: &zcclComm, _| Ok(Op::Recv(index(peer, "peer")?));
    // SAFETY: forwarded.
    unsafe { call(comm, what, std::ptr::null(), recvbuff, count, datatype, stream) }
}

/// NCCL's `ncclCommSplit` (every rank calls it; `ZCCL_SPLIT_NOCOLOR` joins none and gets
/// NULL). The new communicator takes the parent's settings and `config`'s (NULL: none).
///
/// # Safety
/// `comm` a live handle; `newcomm` NULL or writable; `config` NULL or a `zcclConfig_t`.
#[no_mangle]
pub unsafe extern "C" fn zcclCommSplit(
    comm: zcclComm_t,
    color: c_int,
    key: c_int,
    newcomm: *mut zcclComm_t,
    config: *mut zcclConfig_t,
) -> zcclResult_t {
    // SAFETY: the caller's contract.
    let Ok(c) = (unsafe { handle(comm) }) else {
        return zcclInvalidArgument;
    };
    run(Some(c), || {
        // SAFETY: the caller's contract.
        let out = unsafe { newcomm.as_mut() }.ok_or_else(|| null("newcomm"))?;
        let color = match color {
            ZCCL_SPLIT_NOCOLOR => None,
            c => Some(u32::try_from(c).map_err(|_| Error::InvalidArgument(format!("color {c}")))?),
        };
        // keys order as ints do: flipping the sign bit maps i32 order onto u32 order
        let key = (key as u32) ^ 0x8000_0000;
        // SAFETY: the caller's contract.
        let config = unsafe { settings(config, c.comm.config().clone()) }?;
        *out = match c.comm.split(color, key, config)? {
            Some(n) => Box::into_raw(Box::new(zcclComm::new(n))),
            None => std::ptr::null_mut(),
        };
        Ok(())
    })
}

/// NCCL's `ncclCommRegister`: zipcoll moves data through its own buffers and needs no
/// registration, so this checks the arguments and gives a handle for `zcclCommDeregister`.
///
/// # Safety
/// `comm` is NULL or a live handle; `reg_handle` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn zcclCommRegister(
    comm: zcclComm_t,
    buff: *mut c_void,
    size: usize,
    reg_handle: *mut *mut c_void,
) -> zcclResult_t {
    // SAFETY: the caller's contract.
    let Ok(c) = (unsafe { handle(comm) }) else {
        return zcclInvalidArgument;
    };
    run(Some(c), || {
        // SAFETY: the caller's contract.
        let out = unsafe { reg_handle.as_mut() }.ok_or_else(|| null("handle"))?;
        if buff.is_null() || size == 0 {
            return Err(Error::InvalidArgument(format!("register {size} bytes at {buff:?}")));
        }
        *out = buff;
        Ok(())
    })
}

/// NCCL's `ncclCommDeregister` of a handle from `zcclCommRegister`.
///
/// # Safety
/// `comm` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn zcclCommDeregister(comm: zcclComm_t, reg_handle: *mut c_void) -> zcclResult_t {
    // SAFETY: the caller's contract.
    let Ok(c) = (unsafe { handle(comm) }) else {
        return zcclInvalidArgument;
    };
    run(Some(c), || match reg_handle.is_null() {
        true => Err(null("handle")),
        false => Ok(()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_null_stream_is_the_legacy_stream_waited_for_on_the_host() {
        let (a, b) = (0x10 as *mut c_void, 0x20 as *mut c_void);
        let null = std::ptr::null_mut();
        assert_eq!(ordering(false, [a, a].into_iter()), Ordering::Join(a));
        assert_eq!(ordering(false, [null].into_iter()), Ordering::OnHost(vec![null]));
        assert_eq!(ordering(false, [a, null].into_iter()), Ordering::OnHost(vec![null, a]));
        assert_eq!(ordering(false, [b, a, b].into_iter()), Ordering::OnHost(vec![a, b]));
        assert_eq!(ordering(true, [null, a].into_iter()), Ordering::Unordered);
        assert_eq!(ordering(false, std::iter::empty()), Ordering::Unordered);
    }
}
