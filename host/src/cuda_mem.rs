//! CUDA memory the communicator shares beyond its own context, over the driver API that
//! cudarc's safe layer does not wrap: the bottom layer (`sys` calls) with owned types above it.
//!
//! | type            | driver calls                                        | what for                                    |
//! |-----------------|-----------------------------------------------------|---------------------------------------------|
//! | [`DeviceAlloc`] | `cuMemAlloc`, `cuMemsetD8` (waited for), `cuIpcGetMemHandle`, `cuMemFree` | FIFOs other processes map (P2P)   |
//! | [`IpcMapping`]  | `cuIpcOpenMemHandle`, `cuIpcCloseMemHandle`         | a peer's FIFOs in this process              |
//! | [`PinnedHost`]  | `cuMemHostAlloc` (mapped), `cuMemHostGetDevicePointer`, `cuMemFreeHost` | memory kernels and host threads share (NET FIFOs, abort words, status records, plan images) |
//! | [`DeviceAlloc::copy_from_pinned_async`] | `cuMemcpyHtoDAsync` | a call's plan, from its pinned image to its device scratch, on the stream |
//! | [`copy_to_host_async`] | `cuMemcpyDtoHAsync` | Auto's sample of a call's input, on the stream |
//! | [`set_word_async`] | `cuMemsetD32Async`                              | raising the abort word in rank 0's mapped control block (P2P) |
//! | [`wait_for_stream`], [`order_after`] | `cuEventRecord`, `cuStreamWaitEvent` | a call ordered with the caller's stream (`Options::stream`) |
//! | [`device_of`]   | `cuPointerGetAttribute`                             | which GPU a call's buffer is on             |
//! | [`visible_uuids`] | `cuDeviceGetCount`, `cuDeviceGet`, `cuDeviceGetUuid` | the topology: GPUs by UUID, not ordinal  |
//! | [`enable_peer_access`] | `cuCtxEnablePeerAccess`                       | ranks of one process on different GPUs (P2P) |
//! | [`is_capturing`], [`RelaxedCapture`] | `cuStreamIsCapturing`, `cuThreadExchangeStreamCaptureMode` | a call captured into a CUDA graph |
//!
//! Each owned type frees its memory on drop, in the context it was made in (bound first).

use crate::error::{Error, Result};
use cudarc::driver::sys;
use cudarc::driver::{CudaContext, CudaEvent, CudaStream};
use std::sync::Arc;

/// A driver status as a typed error.
fn check(call: &'static str, r: sys::CUresult) -> Result<()> {
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(Error::Cuda {
            call,
            message: format!("{r:?}"),
        })
    }
}

fn bind(ctx: &Arc<CudaContext>) -> Result<()> {
    ctx.bind_to_thread().map_err(crate::cuda::cuda_error("cuCtxSetCurrent"))
}

/// Zeroed device memory from `cuMemAlloc` (not from a stream-ordered pool, so it can be
/// exported to other processes).
pub struct DeviceAlloc {
    ctx: Arc<CudaContext>,
    ptr: sys::CUdeviceptr,
    len: usize,
}

// SAFETY: the type owns a device allocation; the address is plain data.
unsafe impl Send for DeviceAlloc {}
// SAFETY: as above.
unsafe impl Sync for DeviceAlloc {}

impl DeviceAlloc {
    /// `len` (at least 1) zeroed bytes on `ctx`'s device, the zeroing complete when this
    /// returns (it waits for the legacy default stream).
    pub fn zeroed(ctx: &Arc<CudaContext>, len: usize) -> Result<DeviceAlloc> {
        bind(ctx)?;
        let mut ptr = 0;
        let len = len.max(1);
        // SAFETY: `ptr` is a valid out-pointer; the context is current.
        check("cuMemAlloc", unsafe { sys::cuMemAlloc_v2(&mut ptr, len) })?;
        let a = DeviceAlloc {
            ctx: Arc::clone(ctx),
            ptr,
            len,
        };
        // SAFETY: `len` bytes from `ptr` were just allocated and nothing else uses them yet.
        check("cuMemsetD8", unsafe { sys::cuMemsetD8_v2(ptr, 0, len) })?;
        // `cuMemsetD8` on device memory is asynchronous with respect to the host (the driver's
        // "API synchronization behavior"): it runs on the legacy default stream. Wait for that
        // stream, so that the zeros are in memory before anyone sees the allocation (a peer
        // that maps it by IPC reads an empty FIFO, not the memory's previous bytes).
        // SAFETY: the null stream is the context's legacy default stream; the context is current.
        check("cuStreamSynchronize", unsafe {
            sys::cuStreamSynchronize(std::ptr::null_mut())
        })?;
        Ok(a)
    }

    /// `len` (at least 1) bytes on `ctx`'s device, not zeroed: memory whose every byte a user
    /// writes before it reads it. Touches no stream, so it may be made while a stream of the
    /// context is captured (with [`RelaxedCapture`]).
    pub fn uninit(ctx: &Arc<CudaContext>, len: usize) -> Result<DeviceAlloc> {
        bind(ctx)?;
        let mut ptr = 0;
        let len = len.max(1);
        // SAFETY: `ptr` is a valid out-pointer; the context is current.
        check("cuMemAlloc", unsafe { sys::cuMemAlloc_v2(&mut ptr, len) })?;
        Ok(DeviceAlloc {
            ctx: Arc::clone(ctx),
            ptr,
            len,
        })
    }

    /// The device address.
    pub fn ptr(&self) -> u64 {
        self.ptr
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.len
    }

    /// A handle another process opens with [`IpcMapping::open`] (64 opaque bytes).
    pub fn ipc_handle(&self) -> Result<[u8; 64]> {
        bind(&self.ctx)?;
        let mut h = sys::CUipcMemHandle_st { reserved: [0; 64] };
        // SAFETY: `h` is a valid out-pointer; `ptr` is the base of a `cuMemAlloc` allocation.
        check("cuIpcGetMemHandle", unsafe { sys::cuIpcGetMemHandle(&mut h, self.ptr) })?;
        Ok(h.reserved.map(|c| c as u8))
    }

    /// Enqueues a copy of the first `len` bytes of `src` to the start of this allocation on
    /// `stream` (`cuMemcpyHtoDAsync`): it runs after the stream's earlier work and before its
    /// later work. More bytes than either holds is an [`Error::InvalidArgument`].
    ///
    /// # Safety
    /// `stream` belongs to this allocation's context. Until the copy has run (e.g. an event
    /// recorded after it has completed), neither allocation may be freed, nothing may write the
    /// first `len` bytes of `src`, and nothing but later work of `stream` may use this
    /// allocation's first `len` bytes.
    pub unsafe fn copy_from_pinned_async(&self, src: &PinnedHost, len: usize, stream: &CudaStream) -> Result<()> {
        if len > self.len || len > src.len {
            return Err(Error::InvalidArgument(format!(
                "a copy of {len} bytes from {} pinned bytes into {} device bytes",
                src.len, self.len
            )));
        }
        bind(&self.ctx)?;
        // SAFETY: `len` bytes lie in both allocations (checked above); the caller keeps both
        // alive and unused until the copy has run, on a stream of this context.
        check("cuMemcpyHtoDAsync", unsafe {
            sys::cuMemcpyHtoDAsync_v2(self.ptr, src.host.cast_const().cast(), len, stream.cu_stream())
        })
    }
}

/// Enqueues a copy of `dst.len()` bytes at device address `src` into `dst` on `stream`
/// (`cuMemcpyDtoHAsync`): it runs after the stream's earlier work. Into pageable memory (as
/// `dst` is here) the driver returns once the copy is done; synchronize the stream before
/// reading `dst` all the same.
///
/// # Safety
/// `src .. src + dst.len()` is device memory of `stream`'s context that stays allocated until
/// the copy has run, and `dst` is neither read nor freed before the stream has been
/// synchronized.
pub unsafe fn copy_to_host_async(stream: &CudaStream, src: u64, dst: &mut [u8]) -> Result<()> {
    bind(stream.context())?;
    // SAFETY: `dst` is writable for its length; the caller guarantees the device range and
    // that `dst` stays untouched until the stream is synchronized.
    check("cuMemcpyDtoHAsync", unsafe {
        sys::cuMemcpyDtoHAsync_v2(dst.as_mut_ptr().cast(), src, dst.len(), stream.cu_stream())
    })
}

/// Enqueues a copy of `len` bytes from device address `src` to device address `dst` on
/// `stream` (`cuMemcpyDtoDAsync`): it runs after the stream's earlier work.
///
/// # Safety
/// Both ranges are device memory of `stream`'s context and do not overlap; until the copy has
/// run both stay allocated, nothing writes `src`'s range and nothing but later work of
/// `stream` uses `dst`'s.
pub unsafe fn copy_device_async(stream: &CudaStream, dst: u64, src: u64, len: usize) -> Result<()> {
    bind(stream.context())?;
    // SAFETY: the caller guarantees both device ranges until the copy has run.
    check("cuMemcpyDtoDAsync", unsafe {
        sys::cuMemcpyDtoDAsync_v2(dst, src, len, stream.cu_stream())
    })
}

impl Drop for DeviceAlloc {
    fn drop(&mut self) {
        if bind(&self.ctx).is_ok() {
            // SAFETY: `ptr` came from `cuMemAlloc` and is freed once; no kernel of this
            // communicator runs (the owner synchronizes before dropping).
            let _ = unsafe { sys::cuMemFree_v2(self.ptr) };
        }
    }
}

/// Another process's [`DeviceAlloc`], mapped into this context.
pub struct IpcMapping {
    ctx: Arc<CudaContext>,
    ptr: sys::CUdeviceptr,
}

// SAFETY: the type owns a mapping; the address is plain data.
unsafe impl Send for IpcMapping {}
// SAFETY: as above.
unsafe impl Sync for IpcMapping {}

impl IpcMapping {
    /// Maps the allocation `handle` names (peer access enabled on demand).
    pub fn open(ctx: &Arc<CudaContext>, handle: &[u8; 64]) -> Result<IpcMapping> {
        bind(ctx)?;
        let h = sys::CUipcMemHandle_st {
            reserved: handle.map(|b| b as core::ffi::c_char),
        };
        let mut ptr = 0;
        let flags = sys::CUipcMem_flags_enum::CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS as u32;
        // SAFETY: `ptr` is a valid out-pointer; the driver validates the handle.
        check("cuIpcOpenMemHandle", unsafe {
            sys::cuIpcOpenMemHandle_v2(&mut ptr, h, flags)
        })?;
        Ok(IpcMapping {
            ctx: Arc::clone(ctx),
            ptr,
        })
    }

    /// The mapped base address.
    pub fn ptr(&self) -> u64 {
        self.ptr
    }
}

impl Drop for IpcMapping {
    fn drop(&mut self) {
        if bind(&self.ctx).is_ok() {
            // SAFETY: `ptr` came from `cuIpcOpenMemHandle` and is closed once.
            let _ = unsafe { sys::cuIpcCloseMemHandle(self.ptr) };
        }
    }
}

/// Pinned host memory mapped into the device: host threads use [`PinnedHost::host`], kernels
/// [`PinnedHost::device`].
pub struct PinnedHost {
    ctx: Arc<CudaContext>,
    host: *mut u8,
    device: u64,
    len: usize,
}

// SAFETY: the type owns a pinned allocation; access goes through raw pointers whose users
// follow the FIFO protocol.
unsafe impl Send for PinnedHost {}
// SAFETY: as above.
unsafe impl Sync for PinnedHost {}

impl PinnedHost {
    /// `len` (at least 1) zeroed bytes.
    pub fn zeroed(ctx: &Arc<CudaContext>, len: usize) -> Result<PinnedHost> {
        bind(ctx)?;
        let len = len.max(1);
        let mut host = std::ptr::null_mut();
        let flags = sys::CU_MEMHOSTALLOC_DEVICEMAP | sys::CU_MEMHOSTALLOC_PORTABLE;
        // SAFETY: `host` is a valid out-pointer.
        check("cuMemHostAlloc", unsafe { sys::cuMemHostAlloc(&mut host, len, flags) })?;
        let mut p = PinnedHost {
            ctx: Arc::clone(ctx),
            host: host.cast(),
            device: 0,
            len,
        };
        // SAFETY: `len` bytes from `host` were just allocated and nothing else uses them yet.
        unsafe { std::ptr::write_bytes(p.host, 0, len) };
        let mut device = 0;
        // SAFETY: `host` is a mapped pinned allocation; `device` a valid out-pointer.
        check("cuMemHostGetDevicePointer", unsafe {
            sys::cuMemHostGetDevicePointer_v2(&mut device, host, 0)
        })?;
        p.device = device;
        Ok(p)
    }

    /// The host address.
    pub fn host(&self) -> *mut u8 {
        self.host
    }

    /// The address kernels use.
    pub fn device(&self) -> u64 {
        self.device
    }

    /// Bytes held (at least 1).
    pub fn size(&self) -> usize {
        self.len
    }

    /// The bytes, as the host sees them.
    ///
    /// # Safety
    /// Nothing (no kernel, copy or other thread) writes them while the slice lives.
    pub unsafe fn host_bytes(&self) -> &[u8] {
        // SAFETY: `len` bytes from `host` are allocated for this value's life; the caller
        // excludes writers.
        unsafe { std::slice::from_raw_parts(self.host, self.len) }
    }

    /// The bytes, writable by the host.
    ///
    /// # Safety
    /// Nothing else (no kernel, copy or other thread) reads or writes them while the slice
    /// lives.
    pub unsafe fn host_bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: `len` bytes from `host` are allocated for this value's life; `&mut self` and
        // the caller exclude every other user.
        unsafe { std::slice::from_raw_parts_mut(self.host, self.len) }
    }
}

impl Drop for PinnedHost {
    fn drop(&mut self) {
        if bind(&self.ctx).is_ok() {
            // SAFETY: `host` came from `cuMemHostAlloc` and is freed once; no kernel or proxy
            // uses it any more (the owner stops them first).
            let _ = unsafe { sys::cuMemFreeHost(self.host.cast()) };
        }
    }
}

/// Enqueues `*ptr = value` for the `u32` at device address `ptr` on `stream`
/// (`cuMemsetD32Async`), without waiting: a host's way to raise a flag that kernels poll
/// (e.g. an abort word in a peer's memory mapped by IPC) while they run on another stream.
///
/// # Safety
/// `ptr` is a 4-aligned device address of `stream`'s context (its own memory or a mapping)
/// that stays valid until the write has run, and whoever else accesses it does so atomically.
pub unsafe fn set_word_async(stream: &CudaStream, ptr: u64, value: u32) -> Result<()> {
    bind(stream.context())?;
    // SAFETY: the caller guarantees the address for one u32 on this stream's context.
    check("cuMemsetD32Async", unsafe {
        sys::cuMemsetD32Async(ptr, value, 1, stream.cu_stream())
    })
}

/// Orders `stream` after `from`, a stream of the caller's: records `event` (of `stream`'s
/// context) on `from` and makes `stream` wait for it (`cuEventRecord`, `cuStreamWaitEvent`).
/// Work enqueued on `stream` afterwards runs after the work enqueued on `from` before. The
/// event may be recorded again at once: a wait holds on to the record it saw.
///
/// # Safety
/// `from` is a live stream of `stream`'s context (not the legacy default stream of another).
pub unsafe fn wait_for_stream(stream: &CudaStream, from: sys::CUstream, event: &CudaEvent) -> Result<()> {
    bind(stream.context())?;
    // SAFETY: the caller guarantees `from`; `event` is live and of this context.
    check("cuEventRecord", unsafe { sys::cuEventRecord(event.cu_event(), from) })?;
    // SAFETY: both handles are live.
    check("cuStreamWaitEvent", unsafe {
        sys::cuStreamWaitEvent(stream.cu_stream(), event.cu_event(), 0)
    })
}

/// Orders `to`, a stream of the caller's, after the work enqueued on `stream` so far: records
/// `event` on `stream` and makes `to` wait for it.
///
/// # Safety
/// As [`wait_for_stream`]: `to` is a live stream of `stream`'s context.
pub unsafe fn order_after(to: sys::CUstream, stream: &CudaStream, event: &CudaEvent) -> Result<()> {
    bind(stream.context())?;
    event.record(stream).map_err(crate::cuda::cuda_error("cuEventRecord"))?;
    // SAFETY: the caller guarantees `to`; `event` is live and of its context.
    check("cuStreamWaitEvent", unsafe {
        sys::cuStreamWaitEvent(to, event.cu_event(), 0)
    })
}

/// The device (`CUdevice`, the ordinal in this process) whose memory device address `ptr`
/// is; an address the driver does not know is an [`Error::InvalidArgument`].
pub fn device_of(ctx: &Arc<CudaContext>, ptr: u64) -> Result<i32> {
    bind(ctx)?;
    let mut ordinal: core::ffi::c_int = -1;
    // SAFETY: `ordinal` is a valid out-pointer of the size the attribute writes (an int); the
    // driver validates the address.
    let r = unsafe {
        sys::cuPointerGetAttribute(
            (&mut ordinal as *mut core::ffi::c_int).cast(),
            sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
            ptr,
        )
    };
    if r != sys::CUresult::CUDA_SUCCESS {
        return Err(Error::InvalidArgument(format!(
            "address {ptr:#x} is not CUDA device memory ({r:?})"
        )));
    }
    Ok(ordinal)
}

/// The UUIDs of the devices this process sees (`CUDA_VISIBLE_DEVICES` applied), by ordinal:
/// what identifies a GPU across processes, whose ordinals differ (each rank of a torchrun or
/// SLURM job that sees one GPU calls it device 0).
pub fn visible_uuids() -> Result<Vec<[u8; 16]>> {
    let count = cudarc::driver::CudaContext::device_count().map_err(crate::cuda::cuda_error("cuDeviceGetCount"))?;
    (0..count)
        .map(|ordinal| {
            let mut dev = 0;
            // SAFETY: `dev` is a valid out-pointer; the ordinal is below the device count.
            check("cuDeviceGet", unsafe { sys::cuDeviceGet(&mut dev, ordinal) })?;
            let uuid =
                cudarc::driver::result::device::get_uuid(dev).map_err(crate::cuda::cuda_error("cuDeviceGetUuid"))?;
            Ok(uuid.bytes.map(|b| b as u8))
        })
        .collect()
}

/// Whether `stream` is being captured into a CUDA graph: its work is recorded as graph nodes
/// instead of running, and nothing may wait for it on the host.
///
/// # Safety
/// `stream` is a live stream of the current context.
pub unsafe fn is_capturing(stream: sys::CUstream) -> Result<bool> {
    let mut status = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
    // SAFETY: the caller guarantees `stream`; `status` is a valid out-pointer.
    check("cuStreamIsCapturing", unsafe {
        sys::cuStreamIsCapturing(stream, &mut status)
    })?;
    match status {
        sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE => Ok(false),
        sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_ACTIVE => Ok(true),
        // a capture that an illegal call broke: the caller's capture has already failed
        _ => Err(Error::InvalidArgument(
            "the call's stream is in a CUDA graph capture that has been invalidated".into(),
        )),
    }
}

/// This thread in the relaxed stream-capture mode while the value lives (NCCL does the same):
/// allocations (`cuMemAlloc`, `cuMemHostAlloc`) are then allowed while a stream is captured,
/// which the global and thread-local modes refuse. Dropping it restores the thread's mode.
pub struct RelaxedCapture(sys::CUstreamCaptureMode);

impl RelaxedCapture {
    pub fn new() -> Result<RelaxedCapture> {
        let mut mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED;
        // SAFETY: `mode` is a valid in/out pointer.
        check("cuThreadExchangeStreamCaptureMode", unsafe {
            sys::cuThreadExchangeStreamCaptureMode(&mut mode)
        })?;
        Ok(RelaxedCapture(mode))
    }
}

impl Drop for RelaxedCapture {
    fn drop(&mut self) {
        // SAFETY: as in `new`; the mode is the one this thread had before.
        let _ = unsafe { sys::cuThreadExchangeStreamCaptureMode(&mut self.0) };
    }
}

/// Lets `ctx`'s kernels access the memory of device `peer_ordinal` (its primary context's
/// allocations) at their own addresses: ranks of one process on different GPUs use each
/// other's FIFOs so, as IPC cannot map memory of the process that exports it. Enabled once per
/// pair of contexts; a second call is no error.
pub fn enable_peer_access(ctx: &Arc<CudaContext>, peer_ordinal: usize) -> Result<()> {
    let peer = CudaContext::new(peer_ordinal).map_err(crate::cuda::cuda_error("cuDevicePrimaryCtxRetain"))?;
    bind(ctx)?;
    // SAFETY: both contexts are live; the driver validates the pair.
    match unsafe { sys::cuCtxEnablePeerAccess(peer.cu_ctx(), 0) } {
        sys::CUresult::CUDA_SUCCESS | sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => Ok(()),
        r => check("cuCtxEnablePeerAccess", r),
    }
}

/// Whether `ctx`'s device can access device `peer_ordinal`'s memory directly (NVLink or PCIe
/// peer access); `false` for the device itself.
pub fn can_access_peer(ctx: &Arc<CudaContext>, peer_ordinal: usize) -> Result<bool> {
    let mut peer = 0;
    let ordinal = core::ffi::c_int::try_from(peer_ordinal)
        .map_err(|_| Error::InvalidArgument(format!("device ordinal {peer_ordinal}")))?;
    // SAFETY: `peer` is a valid out-pointer; the driver validates the ordinal.
    check("cuDeviceGet", unsafe { sys::cuDeviceGet(&mut peer, ordinal) })?;
    let mine = ctx.cu_device();
    if mine == peer {
        return Ok(false);
    }
    let mut can = 0;
    // SAFETY: `can` is a valid out-pointer; both devices exist.
    check("cuDeviceCanAccessPeer", unsafe {
        sys::cuDeviceCanAccessPeer(&mut can, mine, peer)
    })?;
    Ok(can != 0)
}
