//! Connecting a rank to its peers: the transport is chosen, the FIFOs and staging buffers are
//! allocated where that transport needs them, their addresses exchanged through the bootstrap,
//! and the resulting [`Fabric`] kept with everything that must outlive it ([`Links`]).
//!
//! | backend   | transport | region this rank receives on                | FIFOs it sends on                      |
//! |-----------|-----------|---------------------------------------------|----------------------------------------|
//! | simulator | SIM       | host memory, published in the process       | in each peer's region, looked up       |
//! | simulator | NET       | host memory, filled by its proxy            | its own host region, drained by its proxy |
//! | CUDA      | P2P       | device memory, exported by a CUDA IPC handle | in each peer's region, mapped by IPC  |
//! | CUDA      | NET       | pinned host memory mapped into the device   | its own pinned region, drained by its proxy |
//!
//! Regions are laid out by [`FifoLayout`]: FIFO `q * parts + p` is the one from (or to) rank `q`
//! of part `p`; FIFO `rank * parts + p` of the receive region is the loopback for sends to self.
//! Every rank first checks, through an allgather, that all ranks run the same backend kind,
//! transport request, FIFO size and channel count (they cut data into the same frames).
//!
//! [`Links`] also holds the calls in flight (`inflight.rs`; on CUDA with `Config::max_inflight`
//! call slots made here) and, when dropped, waits for them before anything is freed.

use super::buffer::DeviceBuffer;
use super::config::{Config, TransportKind};
use super::cuda_mem::CudaBuffer;
use super::exec_cuda::{self, Slot};
use super::exec_sim;
use super::fabric::{Fabric, FifoLayout};
use super::inflight::InFlight;
use super::plan::Plan;
use super::{Bootstrap, UniqueId};
use crate::backend::Backend;
use crate::cuda::CudaGpu;
use crate::cuda_mem::{DeviceAlloc, IpcMapping, PinnedHost};
use crate::error::{Error, Result};
use crate::transport::host_mem::{HostBytes, HostWords};
use crate::transport::net::{AbortWord, NetConfig, NetListener, NetTransport, RawFifo};
use crate::transport::sim::{self as sim_transport, SimEndpoint};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use zipcoll_device::dtype::DType;
use zipcoll_device::reduce::ReduceOp;

/// A rank's connections and the memory behind them.
pub(crate) struct Links {
    kind: TransportKind,
    backend: Backend,
    fabric: Fabric,
    engine: Engine,
    /// The NET proxies (dropped, their threads joined, before the memory they use).
    net: Option<NetTransport>,
    /// Keeps the FIFOs, staging buffers and peer mappings alive as long as the fabric points
    /// at them.
    _mem: Vec<Keep>,
    magic: u64,
    /// The calls enqueued and not yet checked; its lock orders the calls.
    calls: Mutex<InFlight<Slot>>,
    /// How long dropping waits for calls in flight before it raises the abort word.
    timeout: Duration,
    _bootstrap: Bootstrap,
}

/// Where kernels run, with the memory each launch needs.
pub(crate) enum Engine {
    Sim {
        abort: HostWords,
    },
    Cuda {
        gpu: Arc<CudaGpu>,
        /// The abort word (4 bytes), mapped into the device.
        abort: PinnedHost,
    },
}

/// Host memory holding (at least the sampled ranges of) a call's input.
pub(crate) enum SampleImage {
    /// The input itself, in host memory.
    Host(*const u8),
    /// A copy (8-aligned words; the unsampled ranges are zero).
    Copied(Vec<u64>),
}

impl SampleImage {
    /// The image's first byte (aligned for any element type).
    pub fn ptr(&self) -> *const u8 {
        match self {
            SampleImage::Host(p) => *p,
            SampleImage::Copied(v) => v.as_ptr().cast(),
        }
    }
}

/// Memory a fabric points into, held only to be freed after the fabric's last use.
type Keep = Box<dyn Send + Sync>;

/// Most warps one launch may have on a GPU (status records preallocated for them in each slot).
pub(crate) const MAX_WARPS: usize = 4096;

/// What every rank must agree on, as bytes for the allgather.
fn fingerprint(backend: Backend, config: &Config) -> Vec<u8> {
    let kind = match backend {
        Backend::Sim | Backend::Sim64 => format!("{backend:?}"),
        _ => "gpu".into(),
    };
    format!(
        "{kind} {:?} {} {}",
        config.transport, config.buffer_bytes, config.channels
    )
    .into_bytes()
}

/// This process and device, for the topology: `host pid ordinal`.
fn locality(backend: Backend) -> Vec<u8> {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let ordinal = match backend {
        Backend::Cuda { ordinal } | Backend::Hip { ordinal } => ordinal as i64,
        _ => -1,
    };
    format!("{} {} {ordinal}", host.trim(), std::process::id()).into_bytes()
}

/// Connects rank `b.rank()` (see the module table).
pub(crate) fn connect(b: Bootstrap, backend: Backend, config: &Config, id: &UniqueId) -> Result<Links> {
    let prints = b.allgather(&fingerprint(backend, config))?;
    if let Some(q) = prints.iter().position(|p| p != &prints[0]) {
        return Err(Error::InvalidArgument(format!(
            "rank {q} runs {:?} but rank 0 runs {:?}: backends, transports, buffer sizes and channels must agree",
            String::from_utf8_lossy(&prints[q]),
            String::from_utf8_lossy(&prints[0])
        )));
    }
    let places = b.allgather(&locality(backend))?;
    let pid_of = |p: &[u8]| {
        String::from_utf8_lossy(p)
            .split(' ')
            .take(2)
            .collect::<Vec<_>>()
            .join(" ")
    };
    let same_process = places.iter().all(|p| pid_of(p) == pid_of(&places[0]));
    let (rank, nranks, parts) = (b.rank(), b.nranks(), config.channels);
    let slot = config.slot_bytes();
    let layout = FifoLayout {
        n: nranks * parts,
        slot,
    };
    let gpu = match backend {
        Backend::Cuda { ordinal } => Some(CudaGpu::get(ordinal)?),
        Backend::Sim | Backend::Sim64 => None,
        Backend::Hip { .. } => {
            return Err(Error::BackendUnavailable {
                backend: "hip",
                reason: "HIP communicators are not built yet".into(),
            })
        }
    };
    let kind = match (config.transport, &gpu) {
        (TransportKind::Auto, None) if same_process => TransportKind::Sim,
        (TransportKind::Auto, None) => TransportKind::Net,
        (TransportKind::Auto, Some(gpu)) => {
            if peers_reachable(gpu, rank, &places)? {
                TransportKind::P2p
            } else {
                TransportKind::Net
            }
        }
        (k, _) => k,
    };
    let timeout_ns = config.timeout.as_nanos().min(u64::MAX as u128) as u64;
    let mut mem: Vec<Keep> = Vec::new();
    // staging buffers, the engine (abort word) and the call slots
    let stage_count = nranks * parts * 2;
    let (engine, stage_base, abort_ptr, slots) = match &gpu {
        None => {
            let stages = HostBytes::zeroed(stage_count * slot as usize);
            let base = stages.ptr() as u64;
            mem.push(Box::new(stages) as Keep);
            let abort = HostWords::zeroed(1);
            let ptr = abort.ptr(0);
            (Engine::Sim { abort }, base, ptr, Vec::new())
        }
        Some(gpu) => {
            let stages = DeviceAlloc::zeroed(gpu.context(), stage_count * slot as usize)?;
            let base = stages.ptr();
            mem.push(Box::new(stages) as Keep);
            let abort = PinnedHost::zeroed(gpu.context(), 4)?;
            let ptr = abort.device() as *mut u32;
            let bytes = exec_cuda::slot_bytes(nranks, parts);
            let slots = (0..config.max_inflight)
                .map(|_| Slot::new(gpu, bytes))
                .collect::<Result<Vec<_>>>()?;
            let engine = Engine::Cuda {
                gpu: Arc::clone(gpu),
                abort,
            };
            (engine, base, ptr, slots)
        }
    };
    let mut fabric = Fabric {
        rank,
        nranks,
        parts,
        send: Vec::new(),
        recv: Vec::new(),
        stage: (0..stage_count)
            .map(|i| (stage_base + i as u64 * slot) as *mut u8)
            .collect(),
        stage_bytes: slot,
        abort: abort_ptr,
        timeout_ns,
    };
    let magic = id.magic();
    let index = |q: usize, p: usize| q * parts + p;
    let mut net = None;
    match (kind, &gpu) {
        (TransportKind::Sim, None) => {
            if !same_process {
                return Err(Error::InvalidArgument(
                    "the sim transport needs every rank in one process".into(),
                ));
            }
            let own = SimEndpoint::new(layout.bytes());
            sim_transport::publish(magic, rank, &own);
            b.barrier()?;
            let peers = (0..nranks)
                .map(|q| sim_transport::lookup(magic, q))
                .collect::<Result<Vec<_>>>()?;
            b.barrier()?;
            sim_transport::withdraw(magic, rank);
            let own_base = own.region.ptr() as u64;
            fabric.recv = (0..layout.n).map(|i| layout.desc(own_base, i)).collect();
            for peer in &peers {
                let peer_base = peer.region.ptr() as u64;
                fabric
                    .send
                    .extend((0..parts).map(|p| layout.desc(peer_base, index(rank, p))));
            }
            mem.extend(peers.into_iter().map(|p| Box::new(p) as Keep));
        }
        (TransportKind::P2p, Some(gpu)) => {
            let own = DeviceAlloc::zeroed(gpu.context(), layout.bytes())?;
            let handles = b.allgather(&own.ipc_handle()?)?;
            fabric.recv = (0..layout.n).map(|i| layout.desc(own.ptr(), i)).collect();
            for (q, handle) in handles.iter().enumerate() {
                let base = if q == rank {
                    own.ptr()
                } else {
                    let h: [u8; 64] = handle.as_slice().try_into().map_err(|_| Error::Remote {
                        rank: q,
                        reason: format!("sent an IPC handle of {} bytes", handle.len()),
                    })?;
                    let m = IpcMapping::open(gpu.context(), &h)?;
                    let base = m.ptr();
                    mem.push(Box::new(m) as Keep);
                    base
                };
                for p in 0..parts {
                    fabric.send.push(layout.desc(base, index(rank, p)));
                }
            }
            mem.push(Box::new(own) as Keep);
            b.barrier()?;
        }
        (TransportKind::Net, _) => {
            // (host address, kernel address) of the send and the receive region
            let (send, recv) = match &gpu {
                None => {
                    let (s, r) = (HostBytes::zeroed(layout.bytes()), HostBytes::zeroed(layout.bytes()));
                    let addrs = ((s.ptr() as u64, s.ptr() as u64), (r.ptr() as u64, r.ptr() as u64));
                    mem.push(Box::new(s) as Keep);
                    mem.push(Box::new(r) as Keep);
                    addrs
                }
                Some(gpu) => {
                    let s = PinnedHost::zeroed(gpu.context(), layout.bytes())?;
                    let r = PinnedHost::zeroed(gpu.context(), layout.bytes())?;
                    let addrs = ((s.host() as u64, s.device()), (r.host() as u64, r.device()));
                    mem.push(Box::new(s) as Keep);
                    mem.push(Box::new(r) as Keep);
                    addrs
                }
            };
            let abort_host = engine.abort_word() as *const AtomicU32;
            net = Some(connect_net(&b, config, magic, layout, send.0, recv.0, abort_host)?);
            fabric.recv = (0..layout.n).map(|i| layout.desc(recv.1, i)).collect();
            fabric.send = (0..layout.n).map(|i| layout.desc(send.1, i)).collect();
            for p in 0..parts {
                fabric.send[index(rank, p)] = fabric.recv[index(rank, p)];
            }
            b.barrier()?;
        }
        (k, _) => {
            return Err(Error::InvalidArgument(format!(
                "transport {k:?} is not available on {backend:?}"
            )))
        }
    }
    Ok(Links {
        kind,
        backend,
        fabric,
        engine,
        net,
        _mem: mem,
        magic,
        calls: Mutex::new(InFlight::new(slots)),
        timeout: config.timeout,
        _bootstrap: b,
    })
}

/// Whether every peer is a GPU of this host that this GPU can access directly.
fn peers_reachable(gpu: &CudaGpu, rank: usize, places: &[Vec<u8>]) -> Result<bool> {
    let mine = String::from_utf8_lossy(&places[rank]).to_string();
    let host = mine.split(' ').next().unwrap_or_default().to_string();
    for p in places.iter().enumerate().filter(|(q, _)| *q != rank).map(|(_, p)| p) {
        let p = String::from_utf8_lossy(p);
        let fields: Vec<&str> = p.split(' ').collect();
        let ordinal: i64 = fields.get(2).and_then(|o| o.parse().ok()).unwrap_or(-1);
        if fields.first() != Some(&host.as_str()) || ordinal < 0 {
            return Ok(false);
        }
        if !crate::cuda_mem::can_access_peer(gpu.context(), ordinal as usize)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The NET transport between this rank's local regions and every peer's.
fn connect_net(
    b: &Bootstrap,
    config: &Config,
    magic: u64,
    layout: FifoLayout,
    send_host: u64,
    recv_host: u64,
    abort: *const AtomicU32,
) -> Result<NetTransport> {
    let (rank, nranks, parts) = (b.rank(), b.nranks(), config.channels);
    let ip = match std::env::var("ZIPCOLL_NET_IP") {
        Ok(v) => v
            .parse()
            .map_err(|_| Error::InvalidArgument(format!("ZIPCOLL_NET_IP={v:?} is not an IP address")))?,
        Err(_) => IpAddr::from([127, 0, 0, 1]),
    };
    let listener = NetListener::bind(ip)?;
    let addrs = b.allgather(listener.addr().to_string().as_bytes())?;
    let peers = addrs
        .iter()
        .enumerate()
        .filter(|(q, _)| *q != rank)
        .map(|(q, a)| {
            let a: SocketAddr = String::from_utf8_lossy(a).parse().map_err(|_| Error::Remote {
                rank: q,
                reason: "sent an unreadable listener address".into(),
            })?;
            Ok((q, a))
        })
        .collect::<Result<Vec<_>>>()?;
    // SAFETY: the abort word lives in `Links`' engine, which outlives the transport (dropped
    // first in `Links::drop`), and is only accessed atomically.
    let word = unsafe { AbortWord::from_ptr(abort.cast_mut().cast()) };
    let net_config = NetConfig {
        timeout: config.timeout,
        ..config.net.clone()
    };
    let mut net = NetTransport::connect(rank, listener, &peers, magic, word, &net_config)?;
    for q in (0..nranks).filter(|&q| q != rank) {
        for p in 0..parts {
            let i = q * parts + p;
            // SAFETY: the regions live in `Links` next to the transport, which is dropped (its
            // threads joined) before them; only the kernels and this transport use them.
            unsafe {
                net.add_send(q, p, RawFifo::from_desc(&layout.desc(send_host, i)))?;
                net.add_recv(q, p, RawFifo::from_desc(&layout.desc(recv_host, i)))?;
            }
        }
    }
    net.start()?;
    Ok(net)
}

impl Engine {
    /// The abort word, as the host sees it.
    pub fn abort_word(&self) -> &AtomicU32 {
        match self {
            Engine::Sim { abort } => abort.word(0),
            // SAFETY: the pinned allocation holds the 4-byte abort word, aligned (page-aligned
            // base), only accessed atomically, and lives as long as the engine.
            Engine::Cuda { abort, .. } => unsafe { AtomicU32::from_ptr(abort.host().cast()) },
        }
    }
}

impl Links {
    pub fn kind(&self) -> TransportKind {
        self.kind
    }

    pub fn fabric(&self) -> &Fabric {
        &self.fabric
    }

    pub fn abort_word(&self) -> &AtomicU32 {
        self.engine.abort_word()
    }

    /// Zeroed memory of `len` bytes where this rank's kernels run.
    pub fn alloc(&self, len: usize) -> Result<DeviceBuffer> {
        match &self.engine {
            Engine::Sim { .. } => Ok(DeviceBuffer::host(len)),
            Engine::Cuda { gpu, .. } => Ok(DeviceBuffer::cuda(CudaBuffer::zeroed(gpu, len)?)),
        }
    }

    /// A buffer this rank's kernels can use: host memory on the simulator, memory of this
    /// communicator's device on a GPU (a buffer of another GPU is refused).
    pub fn check_buffer(&self, b: &DeviceBuffer) -> Result<()> {
        let ok = match &self.engine {
            Engine::Sim { .. } => b.is_host(),
            Engine::Cuda { .. } => !b.is_host(),
        };
        if !ok {
            return Err(Error::InvalidArgument(format!(
                "a buffer of another backend passed to a {:?} communicator (allocate with Communicator::alloc)",
                self.backend
            )));
        }
        if let Engine::Cuda { gpu, .. } = &self.engine {
            let on = crate::cuda_mem::device_of(gpu.context(), b.ptr() as u64)?;
            let mine = gpu.context().ordinal();
            if usize::try_from(on).ok() != Some(mine) {
                return Err(Error::InvalidArgument(format!(
                    "a buffer of CUDA device {on} passed to a communicator of device {mine} (allocate with Communicator::alloc)"
                )));
            }
        }
        Ok(())
    }

    /// Most warps one launch of the `collective` kernel for (`dtype`, `op`) may have: as many
    /// as are resident at once (they wait on each other's FIFOs). The simulator runs every
    /// block on its own thread: [`MAX_WARPS`]; a GPU: what the occupancy API says its
    /// multiprocessors hold, at most [`MAX_WARPS`].
    pub fn max_warps(&self, dtype: DType, op: ReduceOp) -> Result<usize> {
        match &self.engine {
            Engine::Sim { .. } => Ok(MAX_WARPS),
            Engine::Cuda { gpu, .. } => Ok(exec_cuda::resident_blocks(gpu, dtype, op)?.min(MAX_WARPS)),
        }
    }

    /// The `n` elements of `dtype` at `src` (a checked call's input) as host memory for Auto's
    /// sample: the input itself on the simulator; on a GPU a host image of it in which only
    /// the ranges the sampler reads were copied.
    pub fn sample(&self, dtype: DType, src: *const u8, n: usize) -> Result<SampleImage> {
        match &self.engine {
            Engine::Sim { .. } => Ok(SampleImage::Host(src)),
            Engine::Cuda { gpu, .. } => exec_cuda::sample(gpu, dtype, src as u64, n).map(SampleImage::Copied),
        }
    }

    /// The calls in flight, locked: whoever holds the guard enqueues next.
    pub fn calls(&self) -> MutexGuard<'_, InFlight<Slot>> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Enqueues `plan` as call `name` into `calls` (this rank's, locked): the simulator runs it
    /// now (its outcome is checked later, as a GPU's), a GPU launches it with the next slot.
    /// An error: the launch itself failed.
    pub fn run(
        &self,
        calls: &mut InFlight<Slot>,
        name: &'static str,
        plan: &mut Plan,
        dtype: DType,
        op: ReduceOp,
        wait: Duration,
    ) -> Result<()> {
        match (&self.engine, self.backend) {
            (Engine::Sim { .. }, Backend::Sim64) => calls.ran(name, exec_sim::run::<64>(plan, dtype, op, wait)),
            (Engine::Sim { .. }, _) => calls.ran(name, exec_sim::run::<32>(plan, dtype, op, wait)),
            (Engine::Cuda { .. }, _) => return calls.launch(name, |slot| slot.launch(plan, dtype, op)),
        }
        Ok(())
    }

    /// The NET transport's first error, which explains a kernel's abort or timeout better.
    pub fn transport_error(&self) -> Option<Error> {
        self.net.as_ref().and_then(NetTransport::error)
    }
}

impl Drop for Links {
    fn drop(&mut self) {
        // Kernels still in flight use the FIFOs, staging buffers and slots freed after this:
        // wait for them (a kernel still running one timeout later is stopped by the abort word).
        let calls = self.calls.get_mut().unwrap_or_else(PoisonError::into_inner);
        calls.drain(self.timeout, self.engine.abort_word());
        // A communicator that has not failed closes its NET transport gracefully: frames its
        // last call published still reach the peers (a finished call's frames are all in the
        // local send FIFOs), and peers still running see a close, not a failure. After a
        // failure (the abort word is raised by every failure and by `abort()`) it is abrupt.
        if let Some(mut net) = self.net.take() {
            if self.engine.abort_word().load(Ordering::Acquire) == 0 {
                let _ = net.shutdown();
            }
        }
        sim_transport::withdraw(self.magic, self.fabric.rank);
    }
}
