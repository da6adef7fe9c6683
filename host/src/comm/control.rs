//! The communicator's control block ([`Control`], in rank 0's region) as this rank reaches it:
//! raising the abort word every rank's kernels poll, recording the first failure (its
//! [`Cause`]) and reading it back, so that every rank reports the root cause.
//!
//! | transport | the block is                  | abort            | record                          | read back                  |
//! |-----------|-------------------------------|------------------|---------------------------------|----------------------------|
//! | SIM       | host memory (rank 0's region) | atomic store     | compare-and-swap, then the fields (host atomics) | atomic loads    |
//! | P2P       | device memory, mapped by IPC  | `cuMemsetD32Async` | the `record_cause` kernel (the device's compare-and-swap) | `cuMemcpyDtoHAsync` |
//! | NET       | none (the proxies forward an abort with its reason) | | | |
//!
//! Over P2P everything runs on a stream of its own: the communicator's stream is busy with the
//! kernels the abort stops. Nothing here waits for the device without a bound.

use super::inflight::CALL_NAMES;
use crate::cuda::{cuda_error, CudaGpu};
use crate::cuda_mem::{copy_to_host_async, set_word_async, PinnedHost};
use crate::error::Result;
use crate::transport::sim::SimEndpoint;
use cudarc::driver::{CudaEvent, CudaStream, LaunchConfig, PushKernelArg};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use zipcoll_primitives::conn::{Control, Failure, CONTROL_BYTES};
use zipcoll_primitives::kernels::RecordCause;

/// The first failure of a communicator, on whichever rank it happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Cause {
    pub rank: usize,
    pub kind: CauseKind,
}

/// What failed first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CauseKind {
    /// Channel (warp) `channel` of call `name` failed with `failure`.
    Warp {
        name: &'static str,
        channel: usize,
        failure: Failure,
    },
    /// The rank's caller called `abort()`.
    Caller,
    /// The rank's launch failed.
    Run,
}

impl Cause {
    /// What failed, as the other ranks are told: "its caller aborted the communicator", "its
    /// launch failed", or the channel's failure with the call and channel.
    pub fn reason(&self) -> String {
        match self.kind {
            CauseKind::Warp { name, channel, failure } => format!("{name} failed on channel {channel}: {failure}"),
            CauseKind::Caller => "its caller aborted the communicator".into(),
            CauseKind::Run => "its launch failed".into(),
        }
    }
}

/// A cause as the block's words `RANK..` hold it.
type CauseWords = [u32; Control::CAUSE_WORDS];

impl Cause {
    fn words(&self) -> CauseWords {
        let mut w = [0; Control::CAUSE_WORDS];
        let mut set = |i: usize, v: u32| w[i - Control::RANK] = v;
        set(Control::RANK, self.rank as u32);
        match self.kind {
            CauseKind::Warp { name, channel, failure } => {
                set(Control::KIND, Control::WARP);
                set(
                    Control::NAME,
                    CALL_NAMES.iter().position(|n| *n == name).unwrap_or(usize::MAX) as u32,
                );
                set(Control::CHANNEL, channel as u32);
                for (i, v) in failure.record().into_iter().enumerate() {
                    set(Control::RECORD + i, v);
                }
            }
            CauseKind::Caller => set(Control::KIND, Control::CALLER),
            CauseKind::Run => set(Control::KIND, Control::RUN),
        }
        w
    }

    /// The cause the words hold; `None` for a record whose status code is no failure.
    fn from_words(w: &CauseWords) -> Option<Cause> {
        let get = |i: usize| w[i - Control::RANK];
        let kind = match get(Control::KIND) {
            Control::WARP => CauseKind::Warp {
                name: CALL_NAMES.get(get(Control::NAME) as usize).copied().unwrap_or("a call"),
                channel: get(Control::CHANNEL) as usize,
                failure: Failure::from_record(
                    std::array::from_fn(|i| get(Control::RECORD + i)),
                    "(reason not recorded)",
                )?,
            },
            Control::CALLER => CauseKind::Caller,
            _ => CauseKind::Run,
        };
        Some(Cause {
            rank: get(Control::RANK) as usize,
            kind,
        })
    }
}

/// Rank 0's control block as this rank reaches it.
pub(crate) enum ControlRef {
    /// SIM: host memory (rank 0's region, held).
    Host {
        words: *const AtomicU32,
        _region: Arc<SimEndpoint>,
    },
    /// P2P: device memory (rank 0's region, mapped by the `Links` that holds this).
    Device(DeviceControl),
}

// SAFETY: the host words are only accessed atomically, in memory held by the value
// (`_region`); `DeviceControl` is Send + Sync.
unsafe impl Send for ControlRef {}
// SAFETY: as above.
unsafe impl Sync for ControlRef {}

/// A control block in device memory and what this rank needs to reach it.
pub(crate) struct DeviceControl {
    gpu: Arc<CudaGpu>,
    /// The block's device address (its abort word first).
    block: u64,
    /// A stream of the communicator's context, not the device's.
    stream: Arc<CudaStream>,
    /// The cause this rank records, for `record_cause` to read: written once, before that
    /// kernel is enqueued (`recorded`), and allocated until the stream has run.
    staged: PinnedHost,
    recorded: AtomicBool,
    /// Where the block is read back, and the event that says a copy has landed.
    readback: Mutex<(PinnedHost, CudaEvent)>,
}

impl DeviceControl {
    /// The control block at device address `block`, mapped into `gpu`'s context.
    pub fn new(gpu: &Arc<CudaGpu>, block: u64) -> Result<DeviceControl> {
        let ctx = gpu.context();
        let stream = ctx.new_stream().map_err(cuda_error("cuStreamCreate"))?;
        Ok(DeviceControl {
            gpu: Arc::clone(gpu),
            block,
            stream,
            staged: PinnedHost::zeroed(ctx, 4 * Control::CAUSE_WORDS)?,
            recorded: AtomicBool::new(false),
            readback: Mutex::new((
                PinnedHost::zeroed(ctx, CONTROL_BYTES)?,
                ctx.new_event(None).map_err(cuda_error("cuEventCreate"))?,
            )),
        })
    }

    /// Enqueues `record_cause` with `cause` (this rank's first; later ones are dropped).
    fn record(&self, cause: &CauseWords) -> Result<()> {
        if self.recorded.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        // SAFETY: the swap makes this the one write of `staged` (its `CAUSE_WORDS` words),
        // before the only kernel that reads it is enqueued.
        let bytes = unsafe { std::slice::from_raw_parts_mut(self.staged.host(), 4 * Control::CAUSE_WORDS) };
        for (b, w) in bytes.chunks_exact_mut(4).zip(cause) {
            b.copy_from_slice(&w.to_ne_bytes());
        }
        let f = self.gpu.registry().function::<RecordCause>(None, None)?;
        let (block, words) = (self.block, self.staged.device());
        let mut launch = self.stream.launch_builder(&f);
        launch.arg(&block).arg(&words);
        let cfg = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (32, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the entry point takes `(block: *mut u32, cause: *const u32)`: the mapped
        // control block, which every rank's kernels and copies access atomically, and
        // `CAUSE_WORDS` mapped pinned words, allocated until the stream has run (`drop`).
        unsafe { launch.launch(cfg) }.map_err(cuda_error("cuLaunchKernel"))?;
        Ok(())
    }

    /// The block's words as one copy read them, waiting for the copy up to `deadline`.
    fn read(&self, deadline: Instant) -> Result<Option<[u32; CONTROL_BYTES / 4]>> {
        let mut guard = self.readback.lock().unwrap_or_else(PoisonError::into_inner);
        let (buf, event) = &mut *guard;
        // SAFETY: the block is `CONTROL_BYTES` of device memory mapped for as long as `self`;
        // `buf` is read only after the event recorded behind the copy has completed.
        unsafe { copy_to_host_async(&self.stream, self.block, &mut buf.host_bytes_mut()[..CONTROL_BYTES]) }?;
        event.record(&self.stream).map_err(cuda_error("cuEventRecord"))?;
        while !event.try_is_complete().map_err(cuda_error("cuEventQuery"))? {
            if Instant::now() > deadline {
                return Ok(None);
            }
            std::thread::sleep(Duration::from_micros(100));
        }
        // SAFETY: the copy has landed (its event completed) and nothing else writes `buf`.
        let bytes = unsafe { buf.host_bytes() };
        Ok(Some(std::array::from_fn(|i| {
            u32::from_ne_bytes([bytes[4 * i], bytes[4 * i + 1], bytes[4 * i + 2], bytes[4 * i + 3]])
        })))
    }
}

impl Drop for DeviceControl {
    fn drop(&mut self) {
        // the staged cause and the readback buffer stay allocated until what reads or writes
        // them on the stream has run (a tiny kernel and copies: the collectives have ended)
        let _ = self.stream.synchronize();
    }
}

impl ControlRef {
    /// Word `i` of a host control block.
    pub fn word(&self, i: usize) -> Option<&AtomicU32> {
        match self {
            // SAFETY: the block holds `CONTROL_BYTES / 4` aligned words, alive as long as `self`
            // (`_region`) and only accessed atomically.
            ControlRef::Host { words, .. } if i < CONTROL_BYTES / 4 => Some(unsafe { &*words.add(i) }),
            _ => None,
        }
    }

    /// Raises the abort word. Over P2P a failure to enqueue the write leaves the peers' kernels
    /// to their timeouts.
    pub fn raise_abort(&self) {
        match self {
            ControlRef::Host { .. } => {
                if let Some(w) = self.word(Control::ABORT) {
                    w.store(1, Ordering::Release);
                }
            }
            ControlRef::Device(d) => {
                // SAFETY: `block` starts with the mapped abort word (4 aligned bytes of a
                // mapping held as long as `d`), on a stream of its context; the kernels access
                // it atomically.
                let _ = unsafe { set_word_async(&d.stream, d.block, 1) };
            }
        }
    }

    /// Records `cause` as the communicator's first failure unless one is recorded already.
    /// Over P2P a failure to enqueue it leaves the peers to report "aborted by another rank".
    pub fn publish(&self, cause: Cause) {
        let words = cause.words();
        match self {
            ControlRef::Host { .. } => {
                let Some(state) = self.word(Control::STATE) else { return };
                if state
                    .compare_exchange(0, Control::WRITING, Ordering::AcqRel, Ordering::Acquire)
                    .is_err()
                {
                    return;
                }
                for (i, v) in words.into_iter().enumerate() {
                    if let Some(w) = self.word(Control::RANK + i) {
                        w.store(v, Ordering::Relaxed);
                    }
                }
                // release: the fields before the state that says they are written
                state.store(Control::WRITTEN, Ordering::Release);
            }
            ControlRef::Device(d) => {
                let _ = d.record(&words);
            }
        }
    }

    /// The communicator's first failure if a rank has recorded it, waiting for it up to
    /// `patience` (the rank that failed first records it when its launch ends, which the
    /// abort word makes prompt).
    pub fn cause(&self, patience: Duration) -> Option<Cause> {
        let deadline = Instant::now() + patience;
        loop {
            let block = match self {
                ControlRef::Host { .. } => {
                    let state = self.word(Control::STATE)?;
                    // acquire: the fields written before the state
                    (state.load(Ordering::Acquire) == Control::WRITTEN)
                        .then(|| std::array::from_fn(|i| self.word(i).map_or(0, |w| w.load(Ordering::Relaxed))))
                }
                // a copy that saw the state written is followed by one that reads the fields
                // after it (a copy engine's reads have no order of their own)
                ControlRef::Device(d) => match d.read(deadline).ok()? {
                    Some(b) if b[Control::STATE] == Control::WRITTEN => d.read(deadline).ok()?,
                    _ => None,
                },
            };
            if let Some(b) = block {
                return Cause::from_words(&std::array::from_fn(|i| b[Control::RANK + i]));
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }
}
