//! Runs a [`Plan`] on a CUDA GPU, ordered on the communicator's stream (a non-blocking stream of
//! its own, not the device's legacy default stream): each call takes a [`Slot`] of
//! the communicator's ring (`Config::max_inflight` of them, see `inflight.rs`), writes the plan
//! into the slot's pinned image, zeroes the slot's status records, and enqueues a copy of the
//! image into the slot's device scratch (`cuMemcpyHtoDAsync`; skipped when the scratch already
//! holds these bytes: a call repeated with the same buffers and counts), the manifest's
//! `collective` entry point for the call's dtype and op (one block per plan warp; each channel
//! names its codec) and the slot's event. Nothing waits for the kernel: the slot is reused, its
//! records read, only once its event has completed. A timed launch (Auto's checks,
//! `checks.rs`, or every launch with `Config::profile`) records one more event before the
//! kernel, and profiling one before the upload.
//!
//! | per slot         | memory                        | holds                                           |
//! |------------------|-------------------------------|-------------------------------------------------|
//! | scratch          | device                        | the plan: its `ChannelDesc`s at 0, its `WorkDesc`s from `channels` (8-aligned), then `warps + 1` `u32` warp starts |
//! | image            | pinned host                   | the same bytes, written by the host, copied to the scratch on the stream |
//! | status           | pinned host, mapped           | `MAX_WARPS` status records, one per warp of the call |
//! | event            | `CUevent`                     | recorded after the launch: the call has finished when it has completed |
//! | started          | `CUevent`                     | recorded before the kernel of a timed launch    |
//! | before upload    | `CUevent` (profiling)         | recorded before the upload                      |
//!
//! Scratch and image are sized for a collective at connection time and grown (both replaced)
//! when a plan needs more, which may wait for the device.

use super::connect::MAX_WARPS;
use super::inflight::{Finish, Record};
use super::plan::{ChannelTeam, Plan};
use super::samples::SampleCopy;
use crate::cuda::{cuda_error, CudaGpu};
use crate::cuda_mem::{copy_to_host_async, DeviceAlloc, PinnedHost};
use crate::error::{Error, Result};
use cudarc::driver::sys::{CUevent_flags, CUfunction_attribute};
use cudarc::driver::{CudaEvent, CudaFunction, CudaStream, LaunchConfig, PushKernelArg};
use std::sync::Arc;
use std::time::Duration;
use zipcoll_device::arbitrate::SAMPLE_MAX_BYTES;
use zipcoll_device::dtype::DType;
use zipcoll_device::reduce::ReduceOp;
use zipcoll_primitives::collectives::WorkDesc;
use zipcoll_primitives::conn::{ChannelDesc, STATUS_WORDS};
use zipcoll_primitives::kernels::{Collective, CollectiveBlock, CollectiveBlockCoded};

/// Bytes of one status record.
const RECORD_BYTES: usize = 4 * STATUS_WORDS;

/// The bytes of a slice of plain `#[repr(C)]` records.
fn bytes_of<T: Copy>(v: &[T]) -> &[u8] {
    // SAFETY: `T` is a `Copy` `#[repr(C)]` record (ChannelDesc, WorkDesc, u32) whose bytes are
    // all initialized (8-byte fields, no padding); the slice is borrowed for the result's life.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast(), std::mem::size_of_val(v)) }
}

/// Where a plan's parts lie in a slot's scratch (see the module table).
#[derive(Clone, Copy, Debug)]
struct Layout {
    channels_bytes: usize,
    works_at: usize,
    starts_at: usize,
    total: usize,
}

impl Layout {
    fn new(channels: usize, works: usize, warps: usize) -> Layout {
        let channels_bytes = channels * std::mem::size_of::<ChannelDesc>();
        let works_at = channels_bytes.next_multiple_of(8);
        let starts_at = works_at + works * std::mem::size_of::<WorkDesc>();
        Layout {
            channels_bytes,
            works_at,
            starts_at,
            total: starts_at + 4 * (warps + 1),
        }
    }

    fn of(plan: &Plan) -> Layout {
        Layout::new(plan.channels.len(), plan.works.len(), plan.warps())
    }

    /// Writes `plan` (bound to the scratch) into `image`, which holds at least `total` bytes.
    fn write(&self, plan: &Plan, image: &mut [u8]) {
        image[..self.channels_bytes].copy_from_slice(bytes_of(&plan.channels));
        image[self.works_at..self.starts_at].copy_from_slice(bytes_of::<WorkDesc>(&plan.works));
        image[self.starts_at..self.total].copy_from_slice(bytes_of(&plan.warp_starts));
    }
}

/// The scratch a collective over `nranks` ranks and `parts` channels needs at most (a channel
/// per peer and part), which every slot starts with.
pub(crate) fn slot_bytes(nranks: usize, parts: usize) -> usize {
    Layout::new(nranks * parts, parts, parts).total.next_power_of_two()
}

/// One call's resources on the GPU (see the module table).
pub(crate) struct Slot {
    gpu: Arc<CudaGpu>,
    /// The communicator's stream, which every call is enqueued on.
    stream: Arc<CudaStream>,
    scratch: DeviceAlloc,
    image: PinnedHost,
    status: PinnedHost,
    /// Recorded after the kernel (timing enabled: the end of a timed launch).
    event: CudaEvent,
    /// Recorded before the kernel of a timed launch.
    started: CudaEvent,
    /// With profiling: recorded before the upload (every launch is then timed).
    before_upload: Option<CudaEvent>,
    /// Whether the launch last enqueued recorded `started`.
    timed: bool,
    /// Bytes at the start of `image` that the scratch is known to hold (0: unknown).
    uploaded: usize,
    /// The next plan's bytes, compared with `image` before they replace it.
    next: Vec<u8>,
    /// Warps of the call launched last, whose records `poll` reads (0 before any).
    warps: usize,
    /// Whether the call launched last uploaded its plan.
    did_upload: bool,
}

impl Slot {
    /// A free slot on `gpu` whose calls go on `stream` (one of `gpu`'s) and whose scratch and
    /// image hold `bytes`; with `profile`, its events time every launch's upload and kernel
    /// (without, only the kernels of launches asked to be timed).
    pub fn new(gpu: &Arc<CudaGpu>, stream: &Arc<CudaStream>, bytes: usize, profile: bool) -> Result<Slot> {
        let scratch = DeviceAlloc::zeroed(gpu.context(), bytes)?;
        Slot::with_scratch(gpu, stream, scratch, profile)
    }

    /// A slot of its own for one call captured into a CUDA graph, launched: the graph holds
    /// the plan's upload (a copy from this slot's image, which nothing writes again) and the
    /// kernel, and every replay runs them. Nothing waits for its event (a captured event cannot
    /// be waited for): the caller keeps the slot as long as the graph may be replayed. Made in
    /// the relaxed capture mode, touching no other stream, as a capture requires.
    pub fn captured(
        gpu: &Arc<CudaGpu>,
        stream: &Arc<CudaStream>,
        plan: &mut Plan,
        dtype: DType,
        op: ReduceOp,
    ) -> Result<Slot> {
        let _relaxed = crate::cuda_mem::RelaxedCapture::new()?;
        let bytes = Layout::of(plan).total;
        let scratch = DeviceAlloc::uninit(gpu.context(), bytes)?;
        let mut slot = Slot::with_scratch(gpu, stream, scratch, false)?;
        slot.launch(plan, dtype, op, false)?;
        Ok(slot)
    }

    fn with_scratch(gpu: &Arc<CudaGpu>, stream: &Arc<CudaStream>, scratch: DeviceAlloc, profile: bool) -> Result<Slot> {
        let ctx = gpu.context();
        let event = || {
            ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(cuda_error("cuEventCreate"))
        };
        let bytes = scratch.bytes();
        Ok(Slot {
            gpu: Arc::clone(gpu),
            stream: Arc::clone(stream),
            scratch,
            image: PinnedHost::zeroed(ctx, bytes)?,
            status: PinnedHost::zeroed(ctx, MAX_WARPS * RECORD_BYTES)?,
            event: event()?,
            started: event()?,
            before_upload: match profile {
                true => Some(event()?),
                false => None,
            },
            timed: false,
            uploaded: 0,
            next: Vec::new(),
            warps: 0,
            did_upload: false,
        })
    }

    /// Enqueues `plan` (see the module docs), its kernel timed if `timed` or profiling. The
    /// slot must be free: the call it ran last has finished (its event completed), which the
    /// ring guarantees. On an error, whatever was enqueued has run when this returns (the
    /// stream is synchronized), so the slot is free.
    pub fn launch(&mut self, plan: &mut Plan, dtype: DType, op: ReduceOp, timed: bool) -> Result<()> {
        self.warps = 0;
        let warps = plan.warps();
        if warps > MAX_WARPS {
            return Err(Error::InvalidArgument(format!(
                "{warps} warps in one launch, at most {MAX_WARPS}"
            )));
        }
        let f = collective_kernel(&self.gpu, plan.team, dtype, op)?;
        let layout = Layout::of(plan);
        if self.scratch.bytes() < layout.total {
            let ctx = self.gpu.context();
            let bytes = layout.total.next_power_of_two();
            self.uploaded = 0;
            self.scratch = DeviceAlloc::zeroed(ctx, bytes)?;
            self.image = PinnedHost::zeroed(ctx, bytes)?;
        }
        plan.bind(
            self.scratch.ptr() as *const ChannelDesc,
            self.status.device() as *mut u32,
        );
        self.next.resize(layout.total, 0);
        layout.write(plan, &mut self.next);
        // SAFETY: the slot is free: no copy reads its image and no kernel writes its records.
        let (image, status) = unsafe { (self.image.host_bytes_mut(), self.status.host_bytes_mut()) };
        // the kernels only read the scratch, so it still holds the last upload
        let upload = !(self.uploaded == layout.total && image[..layout.total] == self.next[..]);
        if upload {
            image[..layout.total].copy_from_slice(&self.next);
        }
        status[..warps * RECORD_BYTES].fill(0);
        self.timed = (timed || self.before_upload.is_some()) && warps > 0;
        let enqueued = self.enqueue(&f, layout, warps, plan.team, upload);
        match enqueued {
            Ok(()) => {
                self.warps = warps;
                self.did_upload = upload && warps > 0;
                if upload {
                    // a launch of no warps copies nothing: the image then differs from the scratch
                    self.uploaded = if self.did_upload { layout.total } else { 0 };
                }
            }
            Err(_) => {
                self.uploaded = 0;
                self.timed = false;
                // whatever was enqueued must be done before the slot is written again
                let _ = self.stream.synchronize();
            }
        }
        enqueued
    }

    /// The copy (if `upload`), the kernel and the event, on the stream (and, when profiling,
    /// `before_upload` before the copy; when timed, `started` before the kernel).
    fn enqueue(&self, f: &CudaFunction, layout: Layout, warps: usize, team: ChannelTeam, upload: bool) -> Result<()> {
        let stream = &self.stream;
        let ctx = self.gpu.context();
        ctx.bind_to_thread().map_err(cuda_error("cuCtxSetCurrent"))?;
        let mark = |event: Option<&CudaEvent>| match event {
            Some(e) => e.record(stream).map_err(cuda_error("cuEventRecord")),
            None => Ok(()),
        };
        if warps > 0 {
            mark(self.before_upload.as_ref())?;
            if upload {
                // SAFETY: the stream is the slot's context's; the slot keeps the image and the
                // scratch until its event, recorded after the kernel, has completed, and the
                // host writes the image only while the slot is free (that event completed).
                unsafe { self.scratch.copy_from_pinned_async(&self.image, layout.total, stream) }?;
            }
            mark(self.timed.then_some(&self.started))?;
            let base = self.scratch.ptr();
            let (works_ptr, starts_ptr) = (base + layout.works_at as u64, base + layout.starts_at as u64);
            let cfg = LaunchConfig {
                grid_dim: (warps as u32, 1, 1),
                block_dim: (team.threads(), 1, 1),
                shared_mem_bytes: team.shared_bytes(),
            };
            let mut launch = stream.launch_builder(f);
            launch.arg(&works_ptr).arg(&starts_ptr);
            // SAFETY: both entry points take `(works: *const u8, starts: *const u32)` (the block
            // one with its team's shared memory, given above); `starts`
            // holds `warps + 1` ascending indices into the works (copied before the kernel on
            // the same stream), whose pointers (buffers checked by the call, FIFOs, staging
            // buffers, this slot's status records) are live device or mapped memory.
            unsafe { launch.launch(cfg) }.map_err(cuda_error("cuLaunchKernel"))?;
            ctx.check_err().map_err(cuda_error("an earlier asynchronous call"))?;
        }
        self.event.record(stream).map_err(cuda_error("cuEventRecord"))
    }
}

impl Finish for Slot {
    fn times(&self) -> Option<(Option<Duration>, Duration)> {
        if !self.timed || self.warps == 0 {
            return None;
        }
        let ms = |a: &CudaEvent, b: &CudaEvent| {
            a.elapsed_ms(b)
                .ok()
                .map(|t| Duration::from_secs_f64(f64::from(t.max(0.0)) / 1e3))
        };
        let upload = match (&self.before_upload, self.did_upload) {
            (Some(before_upload), true) => Some(ms(before_upload, &self.started)?),
            _ => None,
        };
        Some((upload, ms(&self.started, &self.event)?))
    }

    fn poll(&self, block: bool) -> Result<Option<Vec<Record>>> {
        self.gpu
            .context()
            .bind_to_thread()
            .map_err(cuda_error("cuCtxSetCurrent"))?;
        let done = if block {
            self.event.synchronize().map_err(cuda_error("cuEventSynchronize"))?;
            true
        } else {
            self.event.try_is_complete().map_err(cuda_error("cuEventQuery"))?
        };
        if !done {
            return Ok(None);
        }
        // SAFETY: the call has finished (its event completed): nothing writes the records.
        let bytes = unsafe { self.status.host_bytes() };
        let records = bytes[..self.warps * RECORD_BYTES]
            .chunks_exact(RECORD_BYTES)
            .map(|r| std::array::from_fn(|i| u32::from_ne_bytes([r[4 * i], r[4 * i + 1], r[4 * i + 2], r[4 * i + 3]])))
            .collect();
        Ok(Some(records))
    }
}

/// The collective kernel that runs channels driven by `team` (see [`ChannelTeam`]), allowed
/// the team's dynamic shared memory (a block coder's scratch takes more than the 48 KiB a
/// launch gets without asking: `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`).
fn collective_kernel(gpu: &CudaGpu, team: ChannelTeam, dtype: DType, op: ReduceOp) -> Result<CudaFunction> {
    let registry = gpu.registry();
    let f = match team {
        ChannelTeam::Warp => registry.function::<Collective>(Some(dtype), Some(op)),
        ChannelTeam::RawBlock(_) => registry.function::<CollectiveBlock>(Some(dtype), Some(op)),
        ChannelTeam::CodedBlock(_) => registry.function::<CollectiveBlockCoded>(Some(dtype), Some(op)),
    }?;
    let shared = team.shared_bytes();
    if shared > DEFAULT_SHARED_BYTES {
        gpu.context().bind_to_thread().map_err(cuda_error("cuCtxSetCurrent"))?;
        f.set_attribute(
            CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            shared as i32,
        )
        .map_err(cuda_error("cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)"))?;
    }
    Ok(f)
}

/// Dynamic shared memory a launch may have without opting in (CUDA's 48 KiB).
const DEFAULT_SHARED_BYTES: u32 = 48 << 10;

/// Blocks of `team`'s kernel for (`dtype`, `op`) that `gpu` holds at once: the occupancy API's
/// blocks per multiprocessor (with the team's threads and shared memory) times the
/// multiprocessors.
pub(crate) fn resident_blocks(gpu: &CudaGpu, team: ChannelTeam, dtype: DType, op: ReduceOp) -> Result<usize> {
    let f = collective_kernel(gpu, team, dtype, op)?;
    gpu.context().bind_to_thread().map_err(cuda_error("cuCtxSetCurrent"))?;
    let per_sm = f
        .occupancy_max_active_blocks_per_multiprocessor(team.threads(), team.shared_bytes() as usize, None)
        .map_err(cuda_error("cuOccupancyMaxActiveBlocksPerMultiprocessor"))?;
    let sms = gpu
        .context()
        .attribute(cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        .map_err(cuda_error("cuDeviceGetAttribute"))?;
    Ok(per_sm as usize * sms.max(0) as usize)
}

/// Auto's copier of sampled ranges on a GPU ([`SampleCopy`]): the ranges copied one after the
/// other into pinned host memory on the communicator's stream (so after the calls enqueued
/// before), and an event recorded after them.
pub(crate) struct PinnedSampleCopy {
    stream: Arc<CudaStream>,
    /// Recorded after the copies last started.
    event: CudaEvent,
    /// [`SAMPLE_MAX_BYTES`], the most a sample reads.
    buffer: PinnedHost,
}

impl PinnedSampleCopy {
    pub fn new(stream: &Arc<CudaStream>) -> Result<PinnedSampleCopy> {
        let ctx = stream.context();
        Ok(PinnedSampleCopy {
            stream: Arc::clone(stream),
            event: ctx.new_event(None).map_err(cuda_error("cuEventCreate"))?,
            buffer: PinnedHost::zeroed(ctx, SAMPLE_MAX_BYTES)?,
        })
    }
}

impl SampleCopy for PinnedSampleCopy {
    fn start(&mut self, src: u64, ranges: &[(usize, usize)]) -> Result<()> {
        let mut at = 0;
        for &(offset, len) in ranges.iter().filter(|r| r.1 > 0) {
            // SAFETY: the host reads the buffer only after the event recorded below has
            // completed ([`SampleCopy::bytes`]), and earlier copies into it are ordered before
            // these on the same stream.
            let buffer = unsafe { self.buffer.host_bytes_mut() };
            let dst = buffer
                .get_mut(at..at + len)
                .ok_or_else(|| Error::InvalidArgument(format!("a sample of more than {SAMPLE_MAX_BYTES} bytes")))?;
            // SAFETY: the ranges are inside the call's input (device memory of this context
            // that the call checked and borrows until it has run, after these copies); `dst`
            // is pinned memory this value keeps until the copies have arrived (`Drop`).
            unsafe { copy_to_host_async(&self.stream, src + offset as u64, dst) }?;
            at += len;
        }
        self.event.record(&self.stream).map_err(cuda_error("cuEventRecord"))
    }

    fn arrived(&self) -> Result<bool> {
        self.event.try_is_complete().map_err(cuda_error("cuEventQuery"))
    }

    fn wait(&self) -> Result<()> {
        self.event.synchronize().map_err(cuda_error("cuEventSynchronize"))
    }

    fn bytes(&self, len: usize) -> &[u8] {
        // SAFETY: called once the copies have arrived; no copy into the buffer starts while
        // the slice lives (`start` takes `&mut self`).
        let bytes = unsafe { self.buffer.host_bytes() };
        &bytes[..len.min(bytes.len())]
    }
}

impl Drop for PinnedSampleCopy {
    fn drop(&mut self) {
        // copies in flight write the buffer until the event completes
        let _ = self.event.synchronize();
    }
}
