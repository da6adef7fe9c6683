//! The communicator: ranks that find each other through a TCP bootstrap, connect by a
//! transport, and run NCCL-shaped collectives whose frames are compressed on the wire.
//!
//! | call                                   | NCCL's                 | `count` is                          |
//! |----------------------------------------|------------------------|-------------------------------------|
//! | [`Communicator::all_reduce`]           | `ncclAllReduce`        | elements of the buffer              |
//! | [`Communicator::all_gather`]           | `ncclAllGather`        | elements each rank contributes      |
//! | [`Communicator::reduce_scatter`]       | `ncclReduceScatter`    | elements each rank receives         |
//! | [`Communicator::reduce`]               | `ncclReduce`           | elements of the buffer              |
//! | [`Communicator::broadcast`]            | `ncclBroadcast`        | elements of the buffer              |
//! | [`Communicator::all_to_all`]           | (grouped send/recv)    | elements per peer block             |
//! | [`Communicator::send`], [`Communicator::recv`], [`Communicator::group`] | `ncclSend`, `ncclRecv`, `ncclGroupStart/End` | elements |
//!
//! Initialization follows NCCL: one rank makes a [`UniqueId`], the others get it (an env var, a
//! file), every rank calls [`Communicator::init`]; the bootstrap then exchanges each rank's
//! connection information. Backends: the CPU simulator (one thread per rank, see [`run_sim`])
//! and CUDA GPUs (one process per GPU).
//!
//! Calls are stream-ordered and asynchronous, as NCCL's: a call checks its arguments, builds its
//! launch and enqueues it on the communicator's stream (on CUDA a non-blocking stream of its
//! own, [`Communicator::cuda_stream`], which [`DeviceBuffer`]'s copies use too), then returns
//! without waiting for it. Launches run in call
//! order; [`Communicator::synchronize`] waits for all of them. The simulator cannot run a launch
//! later, so it runs it at enqueue, but reports its outcome exactly as a GPU does:
//!
//! | what happened                                         | returned by                         | then |
//! |-------------------------------------------------------|-------------------------------------|------|
//! | invalid arguments (root, peer or a send/recv to self, buffer size, backend or device, count overflow, in-place all_to_all, more warps than the device holds at once) | the call: [`Error::InvalidArgument`] | nothing enqueued, still usable |
//! | a launch that could not be enqueued (a driver error, kernels not built) | the call: that error | failed |
//! | a failure while running (a peer that left or timed out, a rejected frame, [`Communicator::abort`], a kernel fault, a simulator panic) | the first of [`Communicator::synchronize`], [`Communicator::query`] or a later call to find it finished: [`Error::Collective`] (over NET the transport's own error if it has one), once | failed |
//! | anything, once the communicator has failed            | every call, `synchronize`, `query`: [`Error::Aborted`] | |
//!
//! What waits: `synchronize`; a call when [`Config::max_inflight`] calls are in flight (for the
//! oldest); with [`Lossless::Auto`] on a GPU, the first call of a shape (dtype and count) whose
//! decision needs a sample of its input, and [`Communicator::auto_plan`] (what Auto decides, and
//! why): the sample is copied on the stream after the calls before it, so they wait for them
//! (later calls of the shape decide from the latest sample that has arrived and wait for
//! nothing; the size-only gate, e.g. RAW on NVLink, samples nothing); [`DeviceBuffer::to_host`];
//! dropping the communicator
//! (for the calls in flight; a kernel whose peer died ends by its own timeout, and one still
//! running a timeout later is stopped by the abort word).
//!
//! CUDA graphs: a call enqueued while its stream ([`Options::stream`], or the communicator's)
//! is captured becomes nodes of the caller's graph (the plan's upload and the kernel), as
//! NCCL's do, and each replay runs it again; its plan lives in a slot of its own, kept until
//! the communicator is dropped (stop replaying a graph before that). Replays run in the order
//! the caller launches them, interleaved with uncaptured calls in the same order on every rank
//! (each kernel starts from the FIFOs' counters in memory). Their failures are not reported
//! back (nothing on the host checks a replay): a replay that fails stops at its timeout or at
//! the abort word. Under [`Lossless::Auto`] a captured call cannot wait for a sample: it
//! decides from the size alone or sends RAW.
//!
//! ```
//! use zipcoll_host::comm::{run_sim, Config, Data, Options};
//! use zipcoll_host::{DType, ReduceOp};
//! let sums = run_sim(3, Config::sim(), |comm| {
//!     let x: Vec<f32> = vec![comm.rank() as f32 + 0.5; 1000];
//!     let bytes: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
//!     let mut buf = comm.alloc(bytes.len())?;
//!     buf.copy_from_host(&bytes)?;
//!     comm.all_reduce(Data::InPlace(&mut buf), 1000, DType::F32, ReduceOp::Sum, Options::default())?;
//!     comm.synchronize()?; // the call's errors, if any
//!     let out = buf.to_host()?;
//!     Ok(f32::from_le_bytes(out[..4].try_into().unwrap()))
//! })?;
//! assert_eq!(sums, vec![4.5; 3]);
//! # Ok::<(), zipcoll_host::Error>(())
//! ```
//!
//! Compression is a policy of the communicator ([`Config::compression`]) that each call may
//! override ([`Options::compression`]). After a failure (a peer that timed out, a rejected frame,
//! [`Communicator::abort`]) the communicator is unusable: once the failure has been returned,
//! every call returns [`Error::Aborted`], as NCCL requires a new communicator.

pub mod bootstrap;
mod buffer;
pub mod calibration;
mod checks;
mod config;
mod connect;
mod control;
mod cuda_mem;
mod exec_cuda;
mod exec_sim;
mod fabric;
mod inflight;
pub mod launch;
mod lossy;
mod plan;
mod reduction;
mod samples;

pub use bootstrap::{Bootstrap, UniqueId};
pub use buffer::{DeviceBuffer, DeviceSlice};
pub use config::{Compression, Config, Lossless, TransportKind};
pub use inflight::CallTime;
pub use lossy::{Bound, Lossy, LossyCounts};
use reduction::KernelReduction;
pub use reduction::{DeviceScalar, Reduction};

use crate::backend::Backend;
use crate::dispatch::dispatch_dtype;
use crate::error::{Error, Result};
use checks::{CallShape, Checked, Checks};
use connect::Links;
use control::{Cause, CauseKind};
use fabric::Fabric;
use inflight::{Failed, Wait, CALL_NAMES};
use plan::{ChannelTeam, CollArgs, P2pOp, Plan};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;
use zipcoll_device::arbitrate::{Arbiter, Plan as ArbitrationPlan, TransportModel, NET, NVLINK};
use zipcoll_device::codec::{max_encoded_len, CodecId};
use zipcoll_device::dtype::DType;
use zipcoll_device::reduce::ReduceOp;
use zipcoll_primitives::collectives::Coll;

/// Loops each channel gets of a call whose frames are smaller than the largest
/// ([`Communicator::frame_elems`]): several, so that a channel's steps pipeline through its FIFO.
pub const LOOPS_PER_CHANNEL: usize = 4;

/// Per-call overrides of the communicator's settings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// This call's compression (`None`: the communicator's). Under a lossy policy it codes
    /// the quantized levels.
    pub compression: Option<Compression>,
    /// This call's lossy policy (`None`: the communicator's, [`Config::lossy`]); one the call
    /// cannot serve is an [`Error::InvalidArgument`] (see [`Lossy`]).
    pub lossy: Option<Lossy>,
    /// All_reduce's algorithm.
    pub algorithm: Algorithm,
    /// A stream of the caller's that the call is ordered with, as NCCL's `stream` argument
    /// (`None`: the communicator's stream alone orders it; the simulator takes none).
    pub stream: Option<CallStream>,
}

/// A CUDA stream of the caller's that a call is ordered with ([`Options::stream`]): the call
/// runs after the work enqueued on it before the call, and work enqueued on it after the call
/// returns runs after the call, as if the call were enqueued on it (NCCL's semantics). The
/// call itself runs on the communicator's stream, joined to this one by two events.
///
/// ```no_run
/// # use zipcoll_host::comm::{CallStream, Communicator, Data, Options};
/// # use zipcoll_host::{DType, ReduceOp};
/// # fn f(comm: &Communicator, mine: &zipcoll_host::cudarc::driver::CudaStream, buf: &mut zipcoll_host::comm::DeviceBuffer) -> Result<(), Box<dyn std::error::Error>> {
/// let opts = Options {
///     // SAFETY: `mine` is a live stream of the communicator's context, alive during the call
///     stream: Some(unsafe { CallStream::from_raw(mine.cu_stream()) }),
///     ..Options::default()
/// };
/// comm.all_reduce(Data::InPlace(buf), 1024, DType::F32, ReduceOp::Sum, opts)?;
/// mine.synchronize()?; // the sum is in `buf`, without the communicator's synchronize
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallStream(usize);

impl CallStream {
    /// The stream `stream` (a `CUstream`; cudarc's `CudaStream::cu_stream`).
    ///
    /// # Safety
    /// `stream` is a live CUDA stream of the context of the communicators it is given to
    /// (created on their device, not the legacy default stream), and stays live until every
    /// call given it has returned.
    pub unsafe fn from_raw(stream: cudarc::driver::sys::CUstream) -> CallStream {
        CallStream(stream as usize)
    }

    /// The `CUstream`.
    pub fn raw(self) -> cudarc::driver::sys::CUstream {
        self.0 as cudarc::driver::sys::CUstream
    }
}

/// How all_reduce runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Algorithm {
    /// Reduce-scatter then all-gather around a ring: `2 (k - 1)` hops, each chunk re-encoded
    /// at every hop.
    #[default]
    Ring,
    /// Every rank sends each peer its shard once, reduces its own shard, and sends the result
    /// to every peer: each byte is encoded once per phase.
    TwoShot,
}

impl Algorithm {
    /// The collective that runs an all_reduce with this algorithm.
    fn coll(self) -> Coll {
        match self {
            Algorithm::Ring => Coll::RingAllReduce,
            Algorithm::TwoShot => Coll::TwoShotAllReduce,
        }
    }
}

/// Where a collective reads and writes.
pub enum Data<'a> {
    /// One buffer, read and overwritten (for all_gather the contribution is its block `rank`;
    /// for reduce_scatter the result goes to its block `rank`, as in NCCL).
    InPlace(&'a mut DeviceBuffer),
    /// Separate input and output buffers.
    OutOfPlace {
        /// The input.
        src: &'a DeviceBuffer,
        /// The output.
        dst: &'a mut DeviceBuffer,
    },
    /// An input alone: a reduce on a rank that is not the root, whose output is not written.
    Input(&'a DeviceBuffer),
    /// An output alone: a broadcast on a rank that is not the root, whose input is not read.
    /// Under Auto such a rank forwards what it receives as the size alone decides (RAW unless
    /// the gate picks a codec without a sample): it has no input to sample.
    Output(&'a mut DeviceBuffer),
}

/// What [`Lossless::Auto`] decides for a call, and from what ([`Communicator::auto_plan`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AutoPlan {
    /// The link model it decides with: the link's preset (NVLink for P2P, the network for NET
    /// and the simulator's FIFOs), capped at the NET rate limit, with the coding rate of the
    /// channels on a GPU.
    pub link: TransportModel,
    /// The arbitration's plan: the codec it picked (none: RAW) and why, the predicted bytes
    /// and times.
    pub plan: ArbitrationPlan,
}

impl AutoPlan {
    /// The codec the call sends with (`Raw` when the plan picked none).
    pub fn codec(&self) -> CodecId {
        self.plan.choice.map_or(CodecId::Raw, |c| c.codec)
    }
}

/// One rank of a communicator (see the module docs).
pub struct Communicator {
    rank: usize,
    nranks: usize,
    backend: Backend,
    config: Config,
    /// The connections and the calls in flight (whose lock orders the calls: they share the
    /// FIFOs, each kernel continuing their step counters where the one before stopped).
    links: Links,
    /// Why the communicator stopped working, once it has (and its failure was returned).
    failed: Mutex<Option<String>>,
    /// Auto's checks of its choices against realized times (GPUs only, `checks.rs`).
    checks: Mutex<Checks>,
    /// What its lossy calls did.
    lossy: lossy::Counters,
}

/// Runs `f` as every rank of an `nranks` communicator on the simulator, one thread per rank;
/// returns the ranks' results in rank order, or the first rank's error.
pub fn run_sim<R: Send>(nranks: usize, config: Config, f: impl Fn(Communicator) -> Result<R> + Sync) -> Result<Vec<R>> {
    let id = UniqueId::new()?;
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..nranks)
            .map(|rank| {
                let (id, config, f) = (&id, config.clone(), &f);
                s.spawn(move || f(Communicator::init_with(id, rank, nranks, Backend::Sim, config)?))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(Error::Sim("a rank's thread panicked".into())))
            })
            .collect()
    })
}

impl Communicator {
    /// Rank `rank` of `nranks` on `device`, with the backend's default [`Config`] and the
    /// environment's overrides ([`Config::with_env`]).
    pub fn init(id: &UniqueId, rank: usize, nranks: usize, device: Backend) -> Result<Communicator> {
        Self::init_with(id, rank, nranks, device, Config::defaults_for(device).with_env()?)
    }

    /// Rank `rank` of `nranks` on `device` with `config` (every rank must pass the same
    /// transport, buffer size and channel count: checked, [`Error::InvalidArgument`] otherwise).
    pub fn init_with(
        id: &UniqueId,
        rank: usize,
        nranks: usize,
        device: Backend,
        config: Config,
    ) -> Result<Communicator> {
        config.validate()?;
        let bootstrap = Bootstrap::init(id, rank, nranks, config.timeout)?;
        let links = connect::connect(bootstrap, device, &config, id)?;
        Ok(Communicator {
            rank,
            nranks,
            backend: device,
            config,
            links,
            failed: Mutex::new(None),
            checks: Mutex::new(Checks::default()),
            lossy: lossy::Counters::default(),
        })
    }

    /// NCCL's `ncclCommInitAll`: one communicator per entry of `devices`, all in this process,
    /// rank `r` on `devices[r]` (the simulator, or CUDA GPUs; a GPU may appear more than once),
    /// each with `config`. The ranks are initialized side by side (a rendezvous needs them
    /// all). Ranks of one process reach each other over SIM on the simulator; on GPUs, over P2P
    /// at each other's addresses (peer access between GPUs; IPC does not map memory into the
    /// process that exported it), each rank on its own GPU: two ranks of one process on one GPU
    /// are an [`Error::InvalidArgument`], as in NCCL (their kernels may share a hardware queue
    /// and never run at once). Not yet run on several GPUs. The first rank's error, if any.
    pub fn init_all(devices: &[Backend], config: Config) -> Result<Vec<Communicator>> {
        let id = UniqueId::new()?;
        let n = devices.len();
        std::thread::scope(|s| {
            let ranks: Vec<_> = devices
                .iter()
                .enumerate()
                .map(|(rank, &device)| {
                    let (id, config) = (&id, config.clone());
                    s.spawn(move || Communicator::init_with(id, rank, n, device, config))
                })
                .collect();
            ranks
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(Error::Sim("a rank's initialization panicked".into())))
                })
                .collect()
        })
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// Ranks in the communicator.
    pub fn nranks(&self) -> usize {
        self.nranks
    }

    /// Where this rank's kernels run.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The settings in force.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The transport connecting this rank to its peers.
    pub fn transport(&self) -> TransportKind {
        self.links.kind()
    }

    /// The transport, how it was chosen and how it is set up, for people: which address NET
    /// listens on and why (`ZIPCOLL_NET_IP`, else the interface that reaches the bootstrap
    /// root), or why Auto chose NET over P2P on GPUs.
    pub fn transport_info(&self) -> &str {
        self.links.describe()
    }

    /// The CUDA stream this communicator enqueues its calls and its buffers' copies on: a
    /// non-blocking stream of its own, created with the communicator, so its calls wait for
    /// nothing else on the device and nothing else waits for them (not the legacy default
    /// stream, which every communicator and library on the device shares). `None` on the
    /// simulator. To order the caller's own stream with a call, use events: record one on the
    /// caller's stream and `wait` for it on this one before the call (and the other way round
    /// after it).
    pub fn cuda_stream(&self) -> Option<&std::sync::Arc<cudarc::driver::CudaStream>> {
        self.links.cuda_stream()
    }

    /// Bytes of frames (headers included) this rank has put on the wire so far, as its NET
    /// proxies count them: the measure of what compression saves on a link. `None` on the
    /// transports that do not count them (P2P and SIM, whose frames never leave the machine's
    /// memory). A call's bytes are all counted once every rank it sends to has finished it.
    pub fn wire_bytes_sent(&self) -> Option<u64> {
        self.links.wire_bytes_sent()
    }

    /// NCCL's `ncclCommSplit`: every rank of this communicator calls it; the ranks that pass
    /// the same `color` form a new communicator (on this rank's backend, with `config`, which
    /// the ranks of each new communicator must agree on), ranked by `key` and then by their
    /// rank here; `color: None` (NCCL's `NCCL_SPLIT_NOCOLOR`) joins none and returns
    /// `Ok(None)`. The rendezvous runs over this communicator's bootstrap ring, not its
    /// kernels, so calls in flight here are not waited for; this communicator stays usable.
    /// Each new communicator's lowest-ranked member starts its bootstrap root on the interface
    /// this rank's bootstrap uses.
    pub fn split(&self, color: Option<u32>, key: u32, config: Config) -> Result<Option<Communicator>> {
        self.check_usable()?;
        let boot = self.links.bootstrap();
        let mut mine = [0u8; 9];
        mine[0] = color.is_some() as u8;
        mine[1..5].copy_from_slice(&color.unwrap_or(0).to_le_bytes());
        mine[5..9].copy_from_slice(&key.to_le_bytes());
        let all = boot.allgather(&mine)?;
        let parse = |b: &[u8]| -> Option<(Option<u32>, u32)> {
            let b: &[u8; 9] = b.try_into().ok()?;
            let word = |at: usize| u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
            Some(((b[0] != 0).then(|| word(1)), word(5)))
        };
        let entries = all
            .iter()
            .enumerate()
            .map(|(r, b)| {
                parse(b).ok_or_else(|| Error::Remote {
                    rank: r,
                    reason: "sent a malformed split request".into(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        // this rank's new communicator: the ranks of its color by (key, rank)
        let mut members: Vec<usize> = match color {
            Some(c) => (0..self.nranks).filter(|&r| entries[r].0 == Some(c)).collect(),
            None => Vec::new(),
        };
        members.sort_by_key(|&r| (entries[r].1, r));
        let leader = members.first().copied();
        let id = match leader {
            Some(l) if l == self.rank => Some(UniqueId::new_on(std::net::SocketAddr::new(boot.local_ip(), 0))?),
            _ => None,
        };
        let text = id.as_ref().map(|i| i.to_string()).unwrap_or_default();
        let ids = boot.allgather(text.as_bytes())?;
        let Some(leader) = leader else {
            return Ok(None);
        };
        let id: UniqueId = match id {
            Some(id) => id,
            None => std::str::from_utf8(&ids[leader])
                .map_err(|_| Error::Remote {
                    rank: leader,
                    reason: "sent a malformed split id".into(),
                })?
                .parse()?,
        };
        let new_rank = members.iter().position(|&r| r == self.rank).unwrap_or(0);
        Communicator::init_with(&id, new_rank, members.len(), self.backend, config).map(Some)
    }

    /// Waits until every rank has called it (over the bootstrap ring, on the host): a barrier
    /// for the ranks' host code, not ordered with the calls in flight, which go on running.
    pub fn barrier(&self) -> Result<()> {
        self.check_usable()?;
        self.links.bootstrap().barrier()
    }

    /// `len` zeroed bytes in this rank's device memory.
    pub fn alloc(&self, len: usize) -> Result<DeviceBuffer> {
        self.links.alloc(len)
    }

    /// Stops the communicator: the calls in flight stop at their next wait, on this rank and
    /// on every peer (SIM and P2P: every rank's kernels poll one abort word, in rank 0's
    /// memory; NET: the proxies tell the peers), whose calls then fail naming this rank; and
    /// [`Communicator::synchronize`] and every later call return [`Error::Aborted`]. Safe from
    /// any thread, also while another one waits in this communicator.
    pub fn abort(&self) {
        // the cause first: NET's proxies send it with their ABORT once the word is raised
        self.links.publish(Cause {
            rank: self.rank,
            kind: CauseKind::Caller,
        });
        self.links.raise_abort();
        self.fail("aborted by the caller".into());
    }

    /// Waits for every call enqueued so far and checks how each ended: the first failure (see
    /// the module table), after which the communicator is failed; [`Error::Aborted`] when it
    /// already was.
    pub fn synchronize(&self) -> Result<()> {
        let found = self.links.calls().check(Wait::All);
        self.report(found)
    }

    /// NCCL's `ncclCommFinalize` and destroy: waits for every call enqueued so far and checks
    /// them ([`Communicator::synchronize`]), closes the NET transport gracefully (every frame
    /// reaches its peer and the peers close too, within the timeout), then frees everything as
    /// dropping does. Returns the first failure of those; dropping a communicator without it
    /// does the same work but cannot report.
    pub fn finalize(mut self) -> Result<()> {
        self.synchronize()?;
        self.links.close_net()
    }

    /// NCCL's `ncclCommGetAsyncError`: checks the calls that have finished, without waiting,
    /// and returns the communicator's first failure (the message of the error that failed it)
    /// if it has failed, every time it is asked; `None` while it is healthy.
    pub fn async_error(&self) -> Option<String> {
        let _ = self.query();
        self.failed.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// With [`Config::profile`]: the device time of every call checked since the last
    /// `call_times` (after [`Communicator::synchronize`], every call enqueued before it),
    /// oldest first; empty without profiling.
    pub fn call_times(&self) -> Vec<CallTime> {
        self.links.calls().take_times()
    }

    /// Whether every call enqueued so far has finished, without waiting for them (only for
    /// another thread that is enqueueing or synchronizing); checks those that have, and returns
    /// the first failure among them as [`Communicator::synchronize`] does.
    pub fn query(&self) -> Result<bool> {
        let mut calls = self.links.calls();
        let found = calls.check(Wait::No);
        let idle = calls.is_empty();
        drop(calls);
        self.report(found).map(|()| idle)
    }

    fn fail(&self, why: String) {
        let mut f = self.failed.lock().unwrap_or_else(PoisonError::into_inner);
        f.get_or_insert(why);
    }

    /// The error a check returns: [`Error::Aborted`] once the communicator has failed, else the
    /// failure it found (which fails the communicator), named by its root cause: a warp that
    /// stopped because another rank raised the abort word reports that rank's first failure
    /// (its rank, channel, step and reason) where the transport shares it (SIM), a rank's own
    /// failure is recorded for the others; over NET the transport's error names the rank.
    fn report(&self, found: Option<Failed>) -> Result<()> {
        if self.failed.lock().unwrap_or_else(PoisonError::into_inner).is_some() {
            return Err(Error::Aborted);
        }
        let Some(found) = found else {
            return Ok(());
        };
        let e = match found {
            Failed::Run(e) => {
                self.links.publish(Cause {
                    rank: self.rank,
                    kind: CauseKind::Run,
                });
                e
            }
            Failed::Warp { name, warp, failure } => {
                let own = Cause {
                    rank: self.rank,
                    kind: CauseKind::Warp {
                        name,
                        channel: warp,
                        failure,
                    },
                };
                // an abort: wait (bounded) for the rank that failed first to say why; a
                // timeout: another rank's recorded failure, if any, explains it
                let patience = match inflight::consequence(&failure) {
                    2 => self.config.timeout,
                    _ => Duration::ZERO,
                };
                let cause = match inflight::consequence(&failure) {
                    0 => None,
                    _ => self.links.cause(patience).filter(|c| c.rank != self.rank),
                };
                let cause = cause.unwrap_or_else(|| {
                    self.links.publish(own);
                    own
                });
                self.links.transport_error().unwrap_or_else(|| cause_error(cause))
            }
        };
        let mut failed = self.failed.lock().unwrap_or_else(PoisonError::into_inner);
        if failed.is_some() {
            return Err(Error::Aborted);
        }
        *failed = Some(e.to_string());
        Err(e)
    }

    /// All_reduce of `count` elements.
    pub fn all_reduce(
        &self,
        data: Data<'_>,
        count: usize,
        dtype: DType,
        op: impl Into<Reduction>,
        opts: Options,
    ) -> Result<()> {
        self.collective(opts.algorithm.coll(), data, count, dtype, op.into(), 0, opts)
    }

    /// All_gather: each rank contributes `count` elements; the output holds `nranks * count`.
    pub fn all_gather(&self, data: Data<'_>, count: usize, dtype: DType, opts: Options) -> Result<()> {
        self.collective(Coll::AllGather, data, count, dtype, ReduceOp::Sum.into(), 0, opts)
    }

    /// Reduce_scatter: the input holds `nranks * count`; each rank gets its `count` elements.
    pub fn reduce_scatter(
        &self,
        data: Data<'_>,
        count: usize,
        dtype: DType,
        op: impl Into<Reduction>,
        opts: Options,
    ) -> Result<()> {
        self.collective(Coll::ReduceScatter, data, count, dtype, op.into(), 0, opts)
    }

    /// Reduce of `count` elements into `root`'s output (other ranks' outputs are untouched; a
    /// rank other than the root may pass [`Data::Input`], no output at all).
    pub fn reduce(
        &self,
        data: Data<'_>,
        count: usize,
        dtype: DType,
        op: impl Into<Reduction>,
        root: usize,
        opts: Options,
    ) -> Result<()> {
        self.collective(Coll::Reduce, data, count, dtype, op.into(), root, opts)
    }

    /// Broadcast of `root`'s `count` input elements into every rank's output. A rank other
    /// than the root may pass [`Data::Output`] (its input is not read).
    pub fn broadcast(&self, data: Data<'_>, count: usize, dtype: DType, root: usize, opts: Options) -> Result<()> {
        self.collective(Coll::Broadcast, data, count, dtype, ReduceOp::Sum.into(), root, opts)
    }

    /// All_to_all: block `q` (of `count` elements) of the input goes to rank `q`, whose output
    /// block `rank` receives it. Out of place only.
    pub fn all_to_all(&self, data: Data<'_>, count: usize, dtype: DType, opts: Options) -> Result<()> {
        if matches!(data, Data::InPlace(_)) {
            return Err(Error::InvalidArgument("all_to_all is out of place only".into()));
        }
        self.collective(Coll::AllToAll, data, count, dtype, ReduceOp::Sum.into(), 0, opts)
    }

    /// Sends `count` elements of `buf` to `peer` (a group of one).
    pub fn send(&self, buf: &DeviceBuffer, count: usize, dtype: DType, peer: usize, opts: Options) -> Result<()> {
        let mut g = self.group();
        g.send(buf, count, dtype, peer)?;
        g.launch(opts)
    }

    /// Receives `count` elements from `peer` into `buf` (a group of one).
    pub fn recv(&self, buf: &mut DeviceBuffer, count: usize, dtype: DType, peer: usize, opts: Options) -> Result<()> {
        let mut g = self.group();
        g.recv(buf, count, dtype, peer)?;
        g.launch(opts)
    }

    /// MPI's `MPI_Alltoallv`, the shape of an MoE dispatch and combine: this rank sends
    /// `send[q] = (displacement, count)` elements of `src` (from element `displacement`) to
    /// rank `q`, and receives `recv[q]`'s `count` elements from `q` into `dst` at element
    /// `recv[q]`'s displacement; every rank calls it. `send[q].1` here must equal `recv[rank].1`
    /// on `q`, as in MPI (a mismatch fails on the receiver: frames of another length, or its
    /// timeout; never data in the wrong place); a range with no elements may lie anywhere. It
    /// runs as one group of sends and receives to
    /// every peer with a count (deadlock-free; compressed as send/recv are, per `opts`), and the
    /// part to this rank itself as a copy on the device. Argument errors
    /// ([`Error::InvalidArgument`], nothing enqueued): lists not of `nranks` entries, a range
    /// outside its buffer, receive ranges that overlap, a count to itself that differs from
    /// the one from itself.
    #[allow(clippy::too_many_arguments)]
    pub fn all_to_allv(
        &self,
        src: &DeviceBuffer,
        send: &[(usize, usize)],
        dst: &mut DeviceBuffer,
        recv: &[(usize, usize)],
        dtype: DType,
        opts: Options,
    ) -> Result<()> {
        self.check_usable()?;
        self.links.check_buffer(src)?;
        self.links.check_buffer(dst)?;
        let k = self.nranks;
        if send.len() != k || recv.len() != k {
            return Err(Error::InvalidArgument(format!(
                "all_to_allv: {} send and {} receive ranges for {k} ranks",
                send.len(),
                recv.len()
            )));
        }
        let size = dtype.size_bytes();
        // each range as bytes, inside its buffer
        let bytes_of = |what: &str, q: usize, (at, count): (usize, usize), len: usize| -> Result<(usize, usize)> {
            if count == 0 {
                return Ok((0, 0));
            }
            let range = at
                .checked_add(count)
                .and_then(|end| end.checked_mul(size))
                .filter(|&end| end <= len)
                .map(|end| (at * size, end));
            range.ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "all_to_allv: the {what} range of rank {q} (element {at}, {count} elements) is outside the {len}-byte buffer"
                ))
            })
        };
        let sends = (0..k)
            .map(|q| bytes_of("send", q, send[q], src.len()))
            .collect::<Result<Vec<_>>>()?;
        let recvs = (0..k)
            .map(|q| bytes_of("receive", q, recv[q], dst.len()))
            .collect::<Result<Vec<_>>>()?;
        let mut sorted: Vec<(usize, usize, usize)> = (0..k)
            .filter(|&q| recv[q].1 > 0)
            .map(|q| (recvs[q].0, recvs[q].1, q))
            .collect();
        sorted.sort_unstable();
        if let Some(w) = sorted.windows(2).find(|w| w[0].1 > w[1].0) {
            return Err(Error::InvalidArgument(format!(
                "all_to_allv: the receive ranges of ranks {} and {} overlap",
                w[0].2, w[1].2
            )));
        }
        let me = self.rank;
        if send[me].1 != recv[me].1 {
            return Err(Error::InvalidArgument(format!(
                "all_to_allv: {} elements to this rank itself but {} from it",
                send[me].1, recv[me].1
            )));
        }
        let (sp, dp) = (src.ptr(), dst.ptr());
        let mut g = self.group();
        for q in (0..k).filter(|&q| q != me) {
            if send[q].1 > 0 {
                let (lo, hi) = sends[q];
                g.push(true, sp.wrapping_add(lo), hi - lo, send[q].1, dtype, q)?;
            }
            if recv[q].1 > 0 {
                let (lo, hi) = recvs[q];
                g.push(false, dp.wrapping_add(lo), hi - lo, recv[q].1, dtype, q)?;
            }
        }
        g.launch(opts)?;
        let ((s_lo, s_hi), (d_lo, _)) = (sends[me], recvs[me]);
        if s_hi > s_lo {
            // SAFETY: both ranges lie inside their buffers (checked above), which are distinct
            // allocations (`&` and `&mut`), kept by the caller until its next synchronize.
            unsafe {
                self.links
                    .copy_within(dp.wrapping_add(d_lo), sp.wrapping_add(s_lo), s_hi - s_lo)
            }?;
        }
        Ok(())
    }

    /// A group of collectives, sends and receives that run together ([`Group::launch`]), so
    /// that a send and a receive to different peers cannot deadlock.
    pub fn group(&self) -> Group<'_> {
        Group {
            comm: self,
            ops: Vec::new(),
            colls: Vec::new(),
            _buffers: std::marker::PhantomData,
        }
    }

    /// The largest frame for `dtype`: the largest multiple of 64 elements whose frame fits a
    /// slot and a staging buffer, the same on every rank (their configs agree).
    pub fn max_frame_elems(&self, dtype: DType) -> usize {
        let slot = self.config.slot_bytes() as usize;
        let fits = |n: usize| dispatch_dtype!(dtype, |T| max_encoded_len::<T>(n)) <= slot;
        let mut n = slot / dtype.size_bytes() / 64 * 64;
        while n > 64 && !fits(n) {
            n -= 64;
        }
        n
    }

    /// Elements per frame of a call with `count` elements of `dtype` (the call's `count`
    /// argument; a group's send and receive use their own). Every collective cuts its data into
    /// frames of this size, so a reference that follows ring or two-shot all_reduce's reduction
    /// order needs it. Small calls get small frames, so that every channel has a few loops to
    /// pipeline ([`LOOPS_PER_CHANNEL`]):
    ///
    /// | `count / (nranks x channels x LOOPS_PER_CHANNEL)`, rounded up to a multiple of 64 | frame |
    /// |----------------------------------------------------|----------------------------------|
    /// | below the floor: a 64th of the largest frame (all of it over NET, whose proxies pay per frame) | the floor (at least 64) |
    /// | up to the largest frame ([`Communicator::max_frame_elems`]) | that                  |
    /// | above                                               | the largest frame                |
    ///
    /// It depends only on the arguments and the configuration, so every rank computes the same.
    pub fn frame_elems(&self, dtype: DType, count: usize) -> usize {
        let max = self.max_frame_elems(dtype);
        // NET's proxies pay per frame: on 2 H200s, 1 MiB of send/recv in about 130 frames of
        // 8 KiB ran at 1.15 GB/s against 7.7 GB/s in 3 whole-slot frames (all_reduce gained
        // from small frames, 0.75 against 0.28 GB/s; BENCHMARKS.md), so NET keeps whole slots
        let fraction = if self.links.kind() == TransportKind::Net { 1 } else { 64 };
        let floor = (max / fraction / 64 * 64).clamp(64.min(max), max);
        let loops = self.nranks * self.config.channels * LOOPS_PER_CHANNEL;
        let share = count.div_ceil(loops).next_multiple_of(64);
        share.clamp(floor, max)
    }

    /// The link model Auto decides with: the link's preset, on a GPU with the coding rate of
    /// this communicator's channels (a block channel's, [`TransportModel::with_block_coders`],
    /// or one warp's where channels are warps, [`TransportModel::with_coders`]); then the
    /// rates of [`Config::calibration`] if it was measured on this transport; then capped at the
    /// NET rate limit if one is set. The simulator keeps the presets' rates unless calibrated,
    /// so that Auto's codecs run there.
    fn link_model(&self) -> TransportModel {
        let kind = self.links.kind();
        let link = match kind {
            TransportKind::P2p => NVLINK,
            // the simulator's in-process FIFOs stand in for a network
            _ => NET,
        };
        let channels = self.config.channels as u32;
        let link = match self.backend {
            Backend::Sim | Backend::Sim64 => link,
            _ => match self.config.channel_threads {
                plan::ONE_WARP => link.with_coders(channels),
                _ => link.with_block_coders(channels),
            },
        };
        let measured = match &self.config.calibration {
            Some(c) if c.kind().ok() == Some(kind) => c.apply(link),
            _ => link,
        };
        match (kind, self.config.net.rate_limit_bytes_per_s) {
            (TransportKind::Net, Some(rate)) => measured.with_bandwidth_cap(rate as f32),
            _ => measured,
        }
    }

    /// What Auto would decide now for an all_reduce, reduce or broadcast of `count` elements of
    /// `dtype` whose input is `input` (all_gather's `count` too): the link model it decides with
    /// and the arbitration's plan (the codec, or RAW and why; predicted bytes and times), from a
    /// sample of `input` as it is once the calls enqueued before have run (waited for). A call
    /// decides the same from the same sample, but on a GPU a call of a shape seen before
    /// decides from that shape's latest sample that has arrived, possibly an earlier call's,
    /// and its shape's realized times may send RAW where the plan codes (`checks.rs`).
    /// It enqueues nothing but the sample's copy. Errors: those of a call's argument checks,
    /// and the sample's copy on a GPU.
    pub fn auto_plan(&self, input: &DeviceBuffer, count: usize, dtype: DType) -> Result<AutoPlan> {
        self.check_usable()?;
        self.links.check_buffer(input)?;
        let need = count
            .checked_mul(dtype.size_bytes())
            .ok_or_else(|| Error::InvalidArgument(format!("count {count} overflows")))?;
        check_len("input", input.len(), need)?;
        // ordered as a call: the sample is taken after the calls enqueued before
        let _calls = self.links.calls();
        self.auto(
            dtype,
            input.ptr().cast_const(),
            count,
            self.frame_elems(dtype, count),
            true,
        )
    }

    /// What call `name` sending `n` elements from `src` (null: nothing to sample, so Auto
    /// decides from the size alone or sends RAW), cut into frames of `fe`, sends with. A call
    /// `captured` into a CUDA graph cannot wait for a sample either: Auto decides it from the
    /// size alone or sends RAW, and the graph's replays send the same.
    #[allow(clippy::too_many_arguments)]
    fn codec_for(
        &self,
        opts: Options,
        captured: bool,
        name: &'static str,
        dtype: DType,
        src: *const u8,
        n: usize,
        fe: usize,
    ) -> Result<Sending> {
        let by_size = |codec| Sending {
            codec,
            every_rank_raw: codec == CodecId::Raw,
            checked: None,
        };
        match opts.compression.unwrap_or(self.config.compression) {
            // no coder is built for f64 and the 64-bit integers: they travel RAW whatever the policy
            _ if !dtype.coded() => Ok(by_size(CodecId::Raw)),
            Compression::Off => Ok(by_size(CodecId::Raw)),
            Compression::Lossless(Lossless::Force(c)) => Ok(by_size(c)),
            Compression::Lossless(Lossless::Auto) => {
                let link = self.link_model();
                let arbiter = Arbiter::new(link);
                // the size alone decides alike on every rank (same count, frames and link)
                if let Some(plan) = dispatch_dtype!(dtype, |T| arbiter.gate::<T>(n, fe, u64::MAX)) {
                    return Ok(by_size(AutoPlan { link, plan }.codec()));
                }
                if src.is_null() || captured {
                    return Ok(Sending {
                        every_rank_raw: false,
                        ..by_size(CodecId::Raw)
                    });
                }
                let modeled = self.auto(dtype, src, n, fe, false)?.codec();
                // on a GPU the call is timed, and its shape's realized times may overrule
                let checked = match self.backend {
                    Backend::Sim | Backend::Sim64 => None,
                    _ if !self.config.auto_checks => None,
                    _ => {
                        let shape = CallShape { name, dtype, count: n };
                        let coded = modeled != CodecId::Raw
                            && self.checks.lock().unwrap_or_else(PoisonError::into_inner).codes(shape);
                        Some(Checked { shape, coded })
                    }
                };
                let codec = match checked {
                    Some(Checked { coded: false, .. }) => CodecId::Raw,
                    _ => modeled,
                };
                // a sample decides per rank: a peer may send coded frames even if this rank
                // sends RAW
                Ok(Sending {
                    codec,
                    every_rank_raw: false,
                    checked,
                })
            }
        }
    }

    /// What drives each channel of a launch: blocks of [`Config::channel_threads`] (RAW only
    /// where every rank sends RAW, else coding with the channel's codec), or one warp where the
    /// config asks for one. The kind depends only on the config (agreed at init) and on
    /// `every_rank_raw` (the same on every rank), so every rank's kernel decodes what its peers
    /// send.
    fn channel_team(&self, sending: Sending) -> ChannelTeam {
        match (self.config.channel_threads, sending.every_rank_raw) {
            (plan::ONE_WARP, _) => ChannelTeam::Warp,
            (threads, true) => ChannelTeam::RawBlock(threads),
            (threads, false) => ChannelTeam::CodedBlock(threads),
        }
    }

    /// Auto's decision for `n` input elements at `src` cut into frames of `fe`: from the size
    /// alone where it can ([`Arbiter::gate`]); otherwise from a sample ([`Links::sample`]): on a
    /// GPU the latest of this shape that has arrived, or with `fresh` (and for a shape's first
    /// call) the input's own, copied on the stream after the calls enqueued before and waited
    /// for.
    fn auto(&self, dtype: DType, src: *const u8, n: usize, fe: usize, fresh: bool) -> Result<AutoPlan> {
        let link = self.link_model();
        let arbiter = Arbiter::new(link);
        // the gates decide from the size alone (RAW on NVLink): no sample to fetch
        if let Some(plan) = dispatch_dtype!(dtype, |T| arbiter.gate::<T>(n, fe, u64::MAX)) {
            return Ok(AutoPlan { link, plan });
        }
        let sample = self.links.sample(dtype, src, n, fresh)?;
        let plan = dispatch_dtype!(dtype, |T| arbiter.plan_sampled::<T>(&sample, n, fe, u64::MAX));
        Ok(AutoPlan { link, plan })
    }

    /// A launch of `warps` warps must have them all resident at once (they wait on each
    /// other's FIFOs): more than the device holds is an [`Error::InvalidArgument`] that leaves
    /// the communicator usable. An error finding the limit (a driver error, kernels not built)
    /// fails the communicator, as a launch that cannot be enqueued does.
    fn check_resident(&self, warps: usize, team: ChannelTeam, dtype: DType, op: ReduceOp) -> Result<()> {
        let threads = team.threads();
        let limit = self
            .links
            .max_warps(team, dtype, op)
            .inspect_err(|e| self.fail(e.to_string()))?;
        if warps > limit {
            return Err(Error::InvalidArgument(format!(
                "a launch of {warps} blocks of {threads} threads (one per channel and peer direction), but at most \
                 {limit} fit on the device at once: use fewer peers per group, fewer channels or fewer channel threads"
            )));
        }
        Ok(())
    }

    fn check_usable(&self) -> Result<()> {
        match &*self.failed.lock().unwrap_or_else(PoisonError::into_inner) {
            Some(_) => Err(Error::Aborted),
            None => Ok(()),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn collective(
        &self,
        coll: Coll,
        data: Data<'_>,
        count: usize,
        dtype: DType,
        op: Reduction,
        root: usize,
        opts: Options,
    ) -> Result<()> {
        let call = self.prepare(coll, data, count, dtype, op, root)?;
        match (self.lossy_for(&opts, coll, dtype, op)?, op) {
            (Some(lossy), Reduction::Op(op)) => self.lossy_collective(call, lossy, op, opts),
            _ => self.submit(call, opts),
        }
    }

    /// How many of this rank's lossy calls quantized, and how many traveled exactly and why
    /// (every rank of a call decides alike).
    pub fn lossy_counts(&self) -> LossyCounts {
        self.lossy.get()
    }

    /// Checks a collective's arguments (nothing is enqueued; an error leaves the communicator
    /// as it was) and resolves its buffers.
    fn prepare(
        &self,
        coll: Coll,
        data: Data<'_>,
        count: usize,
        dtype: DType,
        op: Reduction,
        root: usize,
    ) -> Result<Prepared> {
        self.check_usable()?;
        let (k, size) = (self.nranks, dtype.size_bytes());
        if root >= k {
            return Err(Error::InvalidArgument(format!("root {root} of {k} ranks")));
        }
        let KernelReduction {
            op: kernel_op,
            scalar,
            scalar_at,
        } = op.kernel(dtype, k)?;
        if let Some(at) = scalar_at {
            self.links.check_scalar(at)?;
        }
        let total = count
            .checked_mul(k)
            .and_then(|t| t.checked_mul(size))
            .filter(|&t| t <= isize::MAX as usize)
            .ok_or_else(|| Error::InvalidArgument(format!("count {count} x {k} ranks overflows")))?;
        let block = count * size;
        // (input bytes, output bytes, in place: input offset into the output buffer)
        let (in_bytes, out_bytes, in_place_src) = match coll {
            Coll::AllGather => (block, total, self.rank * block),
            Coll::ReduceScatter => (total, block, 0),
            Coll::AllToAll => (total, total, 0),
            _ => (block, block, 0),
        };
        let (src, dst) = match data {
            Data::InPlace(b) => {
                self.links.check_buffer(b)?;
                let need = in_bytes.max(out_bytes);
                check_len("buffer", b.len(), need)?;
                let base = b.ptr();
                match coll {
                    Coll::ReduceScatter => (base.cast_const(), base.wrapping_add(self.rank * block)),
                    _ => (base.wrapping_add(in_place_src).cast_const(), base),
                }
            }
            Data::OutOfPlace { src, dst } => {
                self.links.check_buffer(src)?;
                self.links.check_buffer(dst)?;
                check_len("input", src.len(), in_bytes)?;
                check_len("output", dst.len(), out_bytes)?;
                // views of the caller's memory may meet: only as the in-place layout (what the
                // kernels would reject, and fail the communicator for, is refused here)
                let (s, d) = (src.ptr() as usize, dst.ptr() as usize);
                let in_place = match coll {
                    Coll::RingAllReduce | Coll::TwoShotAllReduce => Some(s),
                    Coll::AllGather => s.checked_sub(self.rank * block),
                    Coll::ReduceScatter => s.checked_add(self.rank * block),
                    Coll::Reduce | Coll::Broadcast if self.rank == root => Some(s),
                    _ => None,
                };
                let touched = !matches!(coll, Coll::Reduce | Coll::Broadcast) || self.rank == root;
                if touched && s < d.saturating_add(out_bytes) && d < s.saturating_add(in_bytes) && in_place != Some(d) {
                    return Err(Error::InvalidArgument(format!(
                        "{}: the input and the output overlap other than in place",
                        coll_name(coll)
                    )));
                }
                (src.ptr().cast_const(), dst.ptr())
            }
            // the kernels neither read nor write a buffer a rank does not use (null is allowed)
            Data::Input(src) if coll == Coll::Reduce && self.rank != root => {
                self.links.check_buffer(src)?;
                check_len("input", src.len(), in_bytes)?;
                (src.ptr().cast_const(), std::ptr::null_mut())
            }
            Data::Output(dst) if coll == Coll::Broadcast && self.rank != root => {
                self.links.check_buffer(dst)?;
                check_len("output", dst.len(), out_bytes)?;
                (std::ptr::null(), dst.ptr())
            }
            Data::Input(_) | Data::Output(_) => {
                return Err(Error::InvalidArgument(format!(
                    "an input or an output alone serves only a reduce on a rank other than the root (input) or a \
                     broadcast on a rank other than the root (output); this is {} on rank {} with root {root}",
                    coll_name(coll),
                    self.rank
                )))
            }
        };
        Ok(Prepared {
            coll,
            src,
            dst,
            count,
            dtype,
            op: kernel_op,
            scalar,
            scalar_at: scalar_at.map_or(core::ptr::null(), |at| at.ptr() as *const u8),
            root,
            n: in_bytes / size.max(1),
        })
    }

    /// Enqueues a prepared collective with `opts`.
    fn submit(&self, c: Prepared, opts: Options) -> Result<()> {
        let fe = self.frame_elems(c.dtype, c.count);
        self.enqueue(
            coll_name(c.coll),
            c.dtype,
            c.op,
            opts.stream,
            |captured| self.codec_for(opts, captured, coll_name(c.coll), c.dtype, c.src, c.n, fe),
            |fabric| {
                let args = CollArgs {
                    coll: c.coll,
                    root: c.root,
                    src: c.src,
                    dst: c.dst,
                    count: c.count as u64,
                    frame_elems: fe as u64,
                    scalar: c.scalar,
                    scalar_at: c.scalar_at,
                };
                Plan::collective(fabric, args)
            },
        )
    }

    /// Enqueues one launch (the communicator's calls locked meanwhile, so launches follow call
    /// order): checks the calls that have finished (a failure among them is returned and
    /// nothing is enqueued), picks the codec, builds the plan with the frame size and runs it.
    fn enqueue(
        &self,
        name: &'static str,
        dtype: DType,
        op: ReduceOp,
        stream: Option<CallStream>,
        sending: impl FnOnce(bool) -> Result<Sending>,
        plan: impl FnOnce(&Fabric) -> Plan,
    ) -> Result<()> {
        let mut calls = self.links.calls();
        let found = calls.check(Wait::No);
        let realized = calls.take_realized();
        if !realized.is_empty() {
            let mut checks = self.checks.lock().unwrap_or_else(PoisonError::into_inner);
            for (checked, took) in realized {
                checks.record(checked, took);
            }
        }
        self.report(found)?;
        // after the caller's work on its stream (before the sample, which reads the input)
        if let Some(s) = stream {
            self.links.join_caller(s, false)?;
        }
        // a capture of the caller's stream has drawn the communicator's in (or the caller
        // captures that one): the call becomes nodes of the caller's CUDA graph
        let captured = self.links.capturing()?;
        let sending = sending(captured)?;
        let mut plan = plan(self.links.fabric());
        plan.team = self.channel_team(sending);
        self.check_resident(plan.warps(), plan.team, dtype, op)?;
        plan.set_codec(sending.codec);
        let timed = sending.checked.is_some();
        let launched = match captured {
            true => self.links.run_captured(&mut plan, dtype, op),
            false => self.links.run(&mut calls, name, &mut plan, dtype, op, timed),
        };
        if let (Ok(()), Some(checked)) = (&launched, sending.checked) {
            calls.time_last(checked);
        }
        let launched = match (launched, stream) {
            (Ok(()), Some(s)) => self.links.join_caller(s, true),
            (launched, _) => launched,
        };
        if let Err(e) = &launched {
            self.links.publish(Cause {
                rank: self.rank,
                kind: CauseKind::Run,
            });
            self.links.raise_abort();
            self.fail(e.to_string());
        }
        launched
    }
}

fn check_len(what: &str, have: usize, need: usize) -> Result<()> {
    if have < need {
        return Err(Error::InvalidArgument(format!(
            "{what} of {have} bytes, the call needs {need}"
        )));
    }
    Ok(())
}

fn coll_name(c: Coll) -> &'static str {
    CALL_NAMES[match c {
        Coll::RingAllReduce => 0,
        Coll::TwoShotAllReduce => 1,
        Coll::AllGather => 2,
        Coll::ReduceScatter => 3,
        Coll::Reduce => 4,
        Coll::Broadcast => 5,
        Coll::AllToAll => 6,
        Coll::Send => 7,
        Coll::Recv => 8,
    }]
}

/// The error of a communicator's first failure, as every rank reports it.
fn cause_error(c: Cause) -> Error {
    match c.kind {
        CauseKind::Warp { name, channel, failure } => Error::Collective {
            collective: name,
            rank: c.rank,
            channel,
            failure,
        },
        CauseKind::Caller | CauseKind::Run => Error::Remote {
            rank: c.rank,
            reason: c.reason(),
        },
    }
}

/// The codec a call sends with, and whether every rank of the call sends RAW (so that this
/// rank receives RAW frames only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Sending {
    codec: CodecId,
    every_rank_raw: bool,
    /// Auto's checks time the call.
    checked: Option<Checked>,
}

/// A collective whose arguments were checked, with its buffers' addresses (the borrows that
/// keep them alive are the caller's: the call's, or the [`Group`]'s).
#[derive(Clone, Copy)]
struct Prepared {
    coll: Coll,
    src: *const u8,
    dst: *mut u8,
    count: usize,
    dtype: DType,
    /// The kernels' operator ([`Reduction::kernel`]).
    op: ReduceOp,
    /// The descriptor's scalar for it ([`Reduction::kernel`]).
    scalar: u64,
    /// Null, or where the kernels read the scalar ([`Reduction::kernel`]).
    scalar_at: *const u8,
    root: usize,
    /// Input elements (what Auto samples).
    n: usize,
}

/// Collectives, sends and receives that run together, as between NCCL's `ncclGroupStart` and
/// `ncclGroupEnd` (see [`Communicator::group`]). The buffers stay borrowed until
/// [`Group::launch`].
pub struct Group<'a> {
    comm: &'a Communicator,
    ops: Vec<(DType, P2pOp)>,
    colls: Vec<Prepared>,
    _buffers: std::marker::PhantomData<&'a mut DeviceBuffer>,
}

impl<'a> Group<'a> {
    fn push(&mut self, send: bool, buf: *mut u8, len: usize, count: usize, dtype: DType, peer: usize) -> Result<()> {
        if peer >= self.comm.nranks {
            return Err(Error::InvalidArgument(format!(
                "peer {peer} of {} ranks",
                self.comm.nranks
            )));
        }
        if peer == self.comm.rank {
            return Err(Error::InvalidArgument(format!(
                "a {} to self (rank {peer}): copy the buffer instead",
                if send { "send" } else { "receive" }
            )));
        }
        let need = count
            .checked_mul(dtype.size_bytes())
            .ok_or_else(|| Error::InvalidArgument(format!("count {count} overflows")))?;
        check_len(if send { "send buffer" } else { "receive buffer" }, len, need)?;
        let op = P2pOp {
            send,
            peer,
            buf,
            count: count as u64,
        };
        self.ops.push((dtype, op));
        Ok(())
    }

    /// Adds an all_reduce with `algorithm` ([`Communicator::all_reduce`]). Each collective's
    /// arguments are checked when it is added.
    pub fn all_reduce(
        &mut self,
        data: Data<'a>,
        count: usize,
        dtype: DType,
        op: impl Into<Reduction>,
        algorithm: Algorithm,
    ) -> Result<()> {
        self.collective(algorithm.coll(), data, count, dtype, op.into(), 0)
    }

    /// Adds an all_gather ([`Communicator::all_gather`]).
    pub fn all_gather(&mut self, data: Data<'a>, count: usize, dtype: DType) -> Result<()> {
        self.collective(Coll::AllGather, data, count, dtype, ReduceOp::Sum.into(), 0)
    }

    /// Adds a reduce_scatter ([`Communicator::reduce_scatter`]).
    pub fn reduce_scatter(
        &mut self,
        data: Data<'a>,
        count: usize,
        dtype: DType,
        op: impl Into<Reduction>,
    ) -> Result<()> {
        self.collective(Coll::ReduceScatter, data, count, dtype, op.into(), 0)
    }

    /// Adds a reduce to `root` ([`Communicator::reduce`]).
    pub fn reduce(
        &mut self,
        data: Data<'a>,
        count: usize,
        dtype: DType,
        op: impl Into<Reduction>,
        root: usize,
    ) -> Result<()> {
        self.collective(Coll::Reduce, data, count, dtype, op.into(), root)
    }

    /// Adds a broadcast from `root` ([`Communicator::broadcast`]).
    pub fn broadcast(&mut self, data: Data<'a>, count: usize, dtype: DType, root: usize) -> Result<()> {
        self.collective(Coll::Broadcast, data, count, dtype, ReduceOp::Sum.into(), root)
    }

    /// Adds an all_to_all ([`Communicator::all_to_all`]; out of place only).
    pub fn all_to_all(&mut self, data: Data<'a>, count: usize, dtype: DType) -> Result<()> {
        if matches!(data, Data::InPlace(_)) {
            return Err(Error::InvalidArgument("all_to_all is out of place only".into()));
        }
        self.collective(Coll::AllToAll, data, count, dtype, ReduceOp::Sum.into(), 0)
    }

    fn collective(
        &mut self,
        coll: Coll,
        data: Data<'a>,
        count: usize,
        dtype: DType,
        op: Reduction,
        root: usize,
    ) -> Result<()> {
        let c = self.comm.prepare(coll, data, count, dtype, op, root)?;
        self.colls.push(c);
        Ok(())
    }

    /// Adds a send of `count` elements of `buf` to `peer`.
    pub fn send(&mut self, buf: &'a DeviceBuffer, count: usize, dtype: DType, peer: usize) -> Result<()> {
        self.comm.links.check_buffer(buf)?;
        self.push(true, buf.ptr(), buf.len(), count, dtype, peer)
    }

    /// Adds a receive of `count` elements from `peer` into `buf`.
    pub fn recv(&mut self, buf: &'a mut DeviceBuffer, count: usize, dtype: DType, peer: usize) -> Result<()> {
        self.comm.links.check_buffer(buf)?;
        self.push(false, buf.ptr(), buf.len(), count, dtype, peer)
    }

    /// Enqueues the group: its collectives first, in the order they were added (every rank
    /// adds the same ones in the same order, as NCCL asks), each its own launch; then its sends
    /// and receives, one launch per dtype, in `DType` order on every rank (a send and its
    /// receive have the same dtype, so they meet in the same launch). `opts` applies to every
    /// operation. A send/recv launch that cannot be resident is refused before anything of the
    /// group is enqueued.
    pub fn launch(self, opts: Options) -> Result<()> {
        let comm = self.comm;
        comm.check_usable()?;
        let mut dtypes: Vec<DType> = self.ops.iter().map(|(d, _)| *d).collect();
        dtypes.sort_by_key(|d| *d as u8);
        dtypes.dedup();
        let of =
            |dtype: DType| -> Vec<P2pOp> { self.ops.iter().filter(|(d, _)| *d == dtype).map(|(_, o)| *o).collect() };
        let policy_raw = every_send_raw(opts.compression.unwrap_or(comm.config.compression), comm.link_model());
        // a dtype without coders is sent RAW by every rank whatever the policy
        let group_sending = |dtype: DType| Sending {
            codec: CodecId::Raw,
            every_rank_raw: policy_raw || !dtype.coded(),
            checked: None,
        };
        // every launch of the group fits, or none is enqueued (a peer would wait for the rest)
        for &dtype in &dtypes {
            comm.check_resident(
                Plan::group_warps(&of(dtype), comm.config.channels),
                comm.channel_team(group_sending(dtype)),
                dtype,
                ReduceOp::Sum,
            )?;
        }
        for c in &self.colls {
            comm.submit(*c, opts)?;
        }
        for dtype in dtypes {
            let ops = of(dtype);
            let first_send = ops.iter().find(|o| o.send).copied();
            comm.enqueue(
                CALL_NAMES[9],
                dtype,
                ReduceOp::Sum,
                opts.stream,
                // a group's peers pick their codecs from their own sends: only a policy that
                // sends RAW at every size tells every rank that all of them send RAW
                |captured| match first_send {
                    Some(o) => {
                        let fe = comm.frame_elems(dtype, o.count as usize);
                        let sending =
                            comm.codec_for(opts, captured, CALL_NAMES[9], dtype, o.buf, o.count as usize, fe)?;
                        Ok(Sending {
                            every_rank_raw: group_sending(dtype).every_rank_raw,
                            ..sending
                        })
                    }
                    None => Ok(group_sending(dtype)),
                },
                |fabric| Plan::group(fabric, &ops, |count| comm.frame_elems(dtype, count as usize) as u64),
            )?;
        }
        Ok(())
    }
}

/// Whether `compression` sends RAW whatever a send's size and data on `link`, so that every rank
/// of a group of sends and receives (under one policy, on one link model) knows that every
/// frame it receives is RAW: compression off, RAW forced, or Auto on a link where no codec can
/// win at any size ([`Arbiter::never_codes`]: P2P with the collectives' coders).
fn every_send_raw(compression: Compression, link: TransportModel) -> bool {
    match compression {
        Compression::Off | Compression::Lossless(Lossless::Force(CodecId::Raw)) => true,
        Compression::Lossless(Lossless::Force(_)) => false,
        Compression::Lossless(Lossless::Auto) => Arbiter::new(link).never_codes(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zipcoll_device::arbitrate::Reason;

    #[test]
    fn a_group_under_auto_is_all_raw_where_no_codec_can_win() {
        let auto = Compression::Lossless(Lossless::Auto);
        // P2P as a GPU communicator of 64 channels models it: coding cannot keep up with NVLink
        assert!(every_send_raw(auto, NVLINK.with_coders(64)));
        // the network (and the simulator, which stands in for it) may code
        assert!(!every_send_raw(auto, NET));
        assert!(!every_send_raw(auto, NET.with_coders(64).with_bandwidth_cap(0.5e9)));
        assert!(every_send_raw(Compression::Off, NET));
        assert!(every_send_raw(
            Compression::Lossless(Lossless::Force(CodecId::Raw)),
            NET
        ));
        assert!(!every_send_raw(
            Compression::Lossless(Lossless::Force(CodecId::ExpAns)),
            NVLINK
        ));
    }

    #[test]
    fn a_calibration_replaces_the_presets_on_its_own_transport() {
        let n = 1 << 16;
        let data = crate::testdata::normal(DType::Bf16, n, 3);
        let link_with = |transport: &str| {
            let text = format!("transport = \"{transport}\"\nbandwidth_bytes_per_s = 1e6\nlatency_s = 0.5\n");
            let config = Config {
                calibration: Some(calibration::Calibration::parse(&text).unwrap()),
                ..Config::sim()
            };
            run_sim(2, config, |comm| {
                let mut buf = comm.alloc(data.len())?;
                buf.copy_from_host(&data)?;
                comm.auto_plan(&buf, n, DType::Bf16)
            })
            .unwrap()
            .remove(0)
        };
        let measured = link_with("sim");
        assert_eq!(
            (measured.link.bandwidth_bytes_per_s, measured.link.latency_s),
            (1e6, 0.5)
        );
        // at 1 MB/s with the presets' coders, coding pays
        assert_ne!(measured.codec(), CodecId::Raw, "{measured:?}");
        let other = link_with("net");
        assert_eq!(other.link, NET, "a calibration of another transport is not used");
    }

    #[test]
    fn auto_plan_shows_the_decision_a_call_makes() {
        let n = 1 << 16;
        let data = crate::testdata::normal(DType::Bf16, n, 3);
        let plans = run_sim(2, Config::sim(), |comm| {
            let mut buf = comm.alloc(data.len())?;
            buf.copy_from_host(&data)?;
            let big = comm.auto_plan(&buf, n, DType::Bf16)?;
            let tiny = comm.auto_plan(&buf, 8, DType::Bf16)?;
            let short = comm.auto_plan(&buf, n + 1, DType::Bf16);
            // the decision is the call's: the all_reduce runs with it
            let fe = comm.frame_elems(DType::Bf16, n);
            let sending = |captured| {
                comm.codec_for(
                    Options::default(),
                    captured,
                    CALL_NAMES[0],
                    DType::Bf16,
                    buf.ptr().cast_const(),
                    n,
                    fe,
                )
            };
            let codec = sending(false)?.codec;
            // a call captured into a CUDA graph cannot wait for a sample: RAW, and its peers
            // are not told that every rank sends RAW
            let captured = sending(true)?;
            assert_eq!((captured.codec, captured.every_rank_raw), (CodecId::Raw, false));
            Ok((big, tiny, short.is_err(), codec))
        })
        .unwrap();
        for (big, tiny, short_is_err, codec) in plans {
            // the simulator decides with the network's preset: N(0,1) bf16 compresses there
            assert_eq!(big.link.name, "net");
            assert_ne!(big.codec(), CodecId::Raw, "{big:?}");
            assert_eq!(big.plan.reason, Reason::Predicted);
            assert_eq!(codec, big.codec());
            assert_eq!((tiny.codec(), tiny.plan.reason), (CodecId::Raw, Reason::TooSmall));
            assert!(short_is_err);
        }
    }
}
