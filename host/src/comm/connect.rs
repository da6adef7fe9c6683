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
use super::control::{Cause, CauseKind, ControlRef, DeviceControl};
use super::cuda_mem::CudaBuffer;
use super::exec_cuda::{self, PinnedSampleCopy, Slot};
use super::exec_sim;
use super::fabric::{Fabric, FifoLayout};
use super::inflight::InFlight;
use super::plan::{ChannelTeam, Plan, ONE_WARP};
use super::samples::Samples;
use super::CallStream;
use super::{Bootstrap, UniqueId};
use crate::backend::Backend;
use crate::cuda::{cuda_error, CudaGpu};
use crate::cuda_mem::{DeviceAlloc, IpcMapping, PinnedHost};
use crate::dispatch::dispatch_dtype;
use crate::error::{Error, Result};
use crate::transport::host_mem::{HostBytes, HostWords};
use crate::transport::net::{AbortWord, NetConfig, NetListener, NetTransport, RawFifo};
use crate::transport::sim::{self as sim_transport, SimEndpoint};
use cudarc::driver::{CudaEvent, CudaStream};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use zipcoll_device::arbitrate::Sample;
use zipcoll_device::dtype::{DType, Elem};
use zipcoll_device::reduce::ReduceOp;
use zipcoll_primitives::conn::Failure;

/// A rank's connections and the memory behind them.
pub(crate) struct Links {
    kind: TransportKind,
    backend: Backend,
    fabric: Fabric,
    engine: Engine,
    /// The NET proxies (dropped, their threads joined, before the memory they use).
    net: Option<NetTransport>,
    /// Keeps the FIFOs, staging buffers and SIM peers' regions alive as long as the fabric
    /// points at them.
    _mem: Vec<Keep>,
    /// P2P: the peers' regions, mapped by IPC (closed in `drop` between two barriers, before
    /// this rank's own region, which the peers map, is freed).
    mapped: Vec<Keep>,
    magic: u64,
    /// The calls enqueued and not yet checked; its lock orders the calls.
    calls: Mutex<InFlight<Slot>>,
    /// Rank 0's control block (SIM, P2P), whose abort word the kernels poll.
    control: Option<ControlRef>,
    /// How long dropping waits for calls in flight before it raises the abort word.
    timeout: Duration,
    /// How the transport was chosen and set up ([`Links::describe`]).
    description: String,
    bootstrap: Bootstrap,
}

/// Where kernels run, with the memory each launch needs.
pub(crate) enum Engine {
    Sim {
        abort: HostWords,
    },
    Cuda {
        gpu: Arc<CudaGpu>,
        /// The communicator's stream (non-blocking, its own): calls, buffer copies and frees,
        /// Auto's samples.
        stream: Arc<CudaStream>,
        /// The abort word (4 bytes), mapped into the device.
        abort: PinnedHost,
        /// Auto's samples, copied on `stream`.
        samples: Mutex<Samples<PinnedSampleCopy>>,
        /// Events that order a call with its caller's stream ([`Links::join_caller`]), used
        /// under the calls' lock.
        joins: [CudaEvent; 2],
        /// The slots of the calls captured into CUDA graphs ([`Links::run_captured`]): a graph
        /// replays its calls' uploads from them, so they live as long as the communicator.
        captured: Mutex<Vec<Slot>>,
    },
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
    // warp channels decode warp frames only: a rank whose channels are blocks may send block
    // frames
    let teams = match config.channel_threads {
        ONE_WARP => "warp",
        _ => "block",
    };
    // Auto's size-only gate must decide alike on every rank (a rank that gates to RAW runs
    // the RAW-only kernel, which cannot take a peer's coded frames): the same link model, so the
    // same calibration, if any, and the same NET rate limit
    let calibration = config.calibration.as_ref().map(|c| {
        let mut c = c.clone();
        c.about.clear();
        c.to_toml()
    });
    format!(
        "{kind} {:?} {} {} {teams} calibration {calibration:?} rate limit {:?}",
        config.transport, config.buffer_bytes, config.channels, config.net.rate_limit_bytes_per_s
    )
    .into_bytes()
}

/// Where a rank runs, for the topology: its host, its process and its GPU by UUID (the
/// ordinal means nothing to another process: with one visible GPU per process every rank
/// calls its GPU device 0). As bytes for the allgather: `host process uuid` (the process in
/// hex, `-` without a GPU).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Place {
    host: String,
    /// The process, as [`this_process`] names it.
    process: u64,
    gpu: Option<[u8; 16]>,
}

/// A name of this process that no other process shares, on this host or in another PID
/// namespace of it (containers reuse pids): the pid hashed with the process's random hasher
/// keys, drawn once.
fn this_process() -> u64 {
    use std::hash::BuildHasher;
    static TOKEN: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *TOKEN.get_or_init(|| std::collections::hash_map::RandomState::new().hash_one(std::process::id()))
}

impl Place {
    fn here(gpu: Option<&CudaGpu>) -> Result<Place> {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
        let gpu = match gpu {
            Some(g) => Some(
                g.context()
                    .uuid()
                    .map_err(cuda_error("cuDeviceGetUuid"))?
                    .bytes
                    .map(|b| b as u8),
            ),
            None => None,
        };
        Ok(Place {
            host: host.trim().to_string(),
            process: this_process(),
            gpu,
        })
    }

    fn to_bytes(&self) -> Vec<u8> {
        let gpu = self
            .gpu
            .map_or("-".to_string(), |u| u.iter().map(|b| format!("{b:02x}")).collect());
        format!("{} {:x} {gpu}", self.host, self.process).into_bytes()
    }

    fn parse(rank: usize, bytes: &[u8]) -> Result<Place> {
        let bad = || Error::Remote {
            rank,
            reason: format!("sent an unreadable place {:?}", String::from_utf8_lossy(bytes)),
        };
        let text = std::str::from_utf8(bytes).map_err(|_| bad())?;
        let fields: Vec<&str> = text.split(' ').collect();
        let [host, process, gpu] = fields[..] else {
            return Err(bad());
        };
        let gpu = match gpu {
            "-" => None,
            hex if hex.len() == 32 => {
                let mut u = [0u8; 16];
                for (i, b) in u.iter_mut().enumerate() {
                    *b = u8::from_str_radix(hex.get(2 * i..2 * i + 2).ok_or_else(bad)?, 16).map_err(|_| bad())?;
                }
                Some(u)
            }
            _ => return Err(bad()),
        };
        Ok(Place {
            host: host.to_string(),
            process: u64::from_str_radix(process, 16).map_err(|_| bad())?,
            gpu,
        })
    }
}

/// The first two ranks that run in one process on the same GPU, if any.
fn shared_gpu_in_one_process(places: &[Place]) -> Option<(usize, usize)> {
    places.iter().enumerate().find_map(|(a, p)| {
        places[a + 1..]
            .iter()
            .position(|q| p.gpu.is_some() && (&q.host, q.process, q.gpu) == (&p.host, p.process, p.gpu))
            .map(|i| (a, a + 1 + i))
    })
}

/// How this rank can reach a peer's GPU, as far as it can tell before trying.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PeerGpu {
    /// Another host (or no GPU): only NET.
    Unreachable,
    /// The GPU this rank runs on (another process on it maps its memory by IPC).
    Same,
    /// Another GPU this process sees: whether the driver says it can access it directly.
    Visible { can_access: bool },
    /// A GPU of this host that this process does not see (`CUDA_VISIBLE_DEVICES`): IPC works
    /// with such GPUs when they are peers, which only trying tells.
    Hidden,
}

/// This rank's view of every peer's GPU (its own entry is `Same`): by UUID, never by ordinal.
/// `can_access(ordinal)` asks the driver about a GPU this process sees.
fn peer_gpus(
    rank: usize,
    places: &[Place],
    visible: &[[u8; 16]],
    can_access: impl Fn(usize) -> Result<bool>,
) -> Result<Vec<PeerGpu>> {
    let me = &places[rank];
    places
        .iter()
        .map(|p| {
            Ok(match (me.gpu, p.gpu) {
                _ if p.host != me.host => PeerGpu::Unreachable,
                (Some(mine), Some(theirs)) if mine == theirs => PeerGpu::Same,
                (Some(_), Some(theirs)) => match visible.iter().position(|u| *u == theirs) {
                    Some(ordinal) => PeerGpu::Visible {
                        can_access: can_access(ordinal)?,
                    },
                    None => PeerGpu::Hidden,
                },
                _ => PeerGpu::Unreachable,
            })
        })
        .collect()
}

/// Whether P2P is worth trying from this rank's view: no peer is known to be out of reach.
fn p2p_worth_trying(views: &[PeerGpu]) -> bool {
    views.iter().all(|v| {
        matches!(
            v,
            PeerGpu::Same | PeerGpu::Hidden | PeerGpu::Visible { can_access: true }
        )
    })
}

/// The common decision from every rank's vote (`[1]`: yes): yes only if all say yes, so every
/// rank decides the same.
fn unanimous(votes: &[Vec<u8>]) -> bool {
    votes.iter().all(|v| v.as_slice() == [1])
}

/// `bytes` of zeroed memory for the kernels' buffers (staging buffers, frame stages): device
/// memory on a GPU, host memory on the simulator; kept alive in `mem`. Returns the kernels'
/// address of it.
fn stage_region(gpu: Option<&CudaGpu>, bytes: usize, mem: &mut Vec<Keep>) -> Result<u64> {
    Ok(match gpu {
        None => {
            let stages = HostBytes::zeroed(bytes);
            let base = stages.ptr() as u64;
            mem.push(Box::new(stages));
            base
        }
        Some(gpu) => {
            let stages = DeviceAlloc::zeroed(gpu.context(), bytes)?;
            let base = stages.ptr();
            mem.push(Box::new(stages));
            base
        }
    })
}

/// Connects rank `b.rank()` (see the module table).
pub(crate) fn connect(b: Bootstrap, backend: Backend, config: &Config, id: &UniqueId) -> Result<Links> {
    let prints = b.allgather(&fingerprint(backend, config))?;
    if let Some(q) = prints.iter().position(|p| p != &prints[0]) {
        return Err(Error::InvalidArgument(format!(
            "rank {q} runs {:?} but rank 0 runs {:?}: backends, transports, buffer sizes, channels, whether a channel is a warp, the calibration and the NET rate limit must agree",
            String::from_utf8_lossy(&prints[q]),
            String::from_utf8_lossy(&prints[0])
        )));
    }
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
    let places = b
        .allgather(&Place::here(gpu.as_deref())?.to_bytes())?
        .iter()
        .enumerate()
        .map(|(q, p)| Place::parse(q, p))
        .collect::<Result<Vec<_>>>()?;
    // Two ranks of one process on one GPU: their kernels wait for each other, but the device
    // may put both ranks' streams on one of its hardware queues (8 by default), and then the
    // second kernel waits behind the first forever. NCCL refuses such ranks too. Every rank
    // sees the same places, so every rank refuses.
    if let Some((first, second)) = shared_gpu_in_one_process(&places) {
        return Err(Error::InvalidArgument(format!(
            "ranks {first} and {second} run in one process on the same GPU: their kernels may share one of the \
             device's hardware queues and never run at once (NCCL refuses this too); run one process per \
             rank, or give each rank of a process its own GPU"
        )));
    }
    let same_process = places
        .iter()
        .all(|p| (&p.host, p.process) == (&places[0].host, places[0].process));
    // Auto on GPUs tries P2P when no rank knows of a peer it cannot reach (every rank votes, so
    // all decide alike), and falls back to NET if any rank then fails to map a peer's FIFOs
    // what the transport choice was based on, for `Links::describe`
    let mut notes: Vec<String> = Vec::new();
    let mut kind = match (config.transport, &gpu) {
        (TransportKind::Auto, None) if same_process => TransportKind::Sim,
        (TransportKind::Auto, None) => TransportKind::Net,
        (TransportKind::Auto, Some(gpu)) => {
            let visible = crate::cuda_mem::visible_uuids()?;
            let views = peer_gpus(rank, &places, &visible, |o| {
                crate::cuda_mem::can_access_peer(gpu.context(), o)
            })?;
            let votes = b.allgather(&[p2p_worth_trying(&views) as u8])?;
            if unanimous(&votes) {
                TransportKind::P2p
            } else {
                let q = votes.iter().position(|v| v.as_slice() != [1]).unwrap_or(rank);
                notes.push(format!(
                    "Auto chose NET: rank {q} has a peer on another host or a GPU without peer access"
                ));
                TransportKind::Net
            }
        }
        (k, _) => k,
    };
    let timeout_ns = config.timeout.as_nanos().min(u64::MAX as u128) as u64;
    let mut mem: Vec<Keep> = Vec::new();
    // staging buffers, the engine (abort word) and the call slots
    let stage_count = nranks * parts * 2;
    let stage_base = stage_region(gpu.as_deref(), stage_count * slot as usize, &mut mem)?;
    let (engine, abort_ptr, slots) = match &gpu {
        None => {
            let abort = HostWords::zeroed(1);
            let ptr = abort.ptr(0);
            (Engine::Sim { abort }, ptr, Vec::new())
        }
        Some(gpu) => {
            let abort = PinnedHost::zeroed(gpu.context(), 4)?;
            let ptr = abort.device() as *mut u32;
            let stream = gpu.context().new_stream().map_err(cuda_error("cuStreamCreate"))?;
            let bytes = exec_cuda::slot_bytes(nranks, parts);
            let slots = (0..config.max_inflight)
                .map(|_| Slot::new(gpu, &stream, bytes, config.profile))
                .collect::<Result<Vec<_>>>()?;
            let event = || {
                gpu.context()
                    .new_event(None)
                    .map_err(crate::cuda::cuda_error("cuEventCreate"))
            };
            let engine = Engine::Cuda {
                gpu: Arc::clone(gpu),
                abort,
                samples: Mutex::new(Samples::new()),
                joins: [event()?, event()?],
                captured: Mutex::new(Vec::new()),
                stream,
            };
            (engine, ptr, slots)
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
        frame_stage: Vec::new(),
        abort: abort_ptr,
        timeout_ns,
        trusted: false,
    };
    let magic = id.magic();
    let index = |q: usize, p: usize| q * parts + p;
    let mut net = None;
    let mut control = None;
    let mut mapped = Vec::new();
    if let (TransportKind::P2p, Some(gpu)) = (kind, &gpu) {
        match connect_p2p(&b, gpu, &places, magic, layout, parts, &mut fabric)? {
            Ok((maps, own)) => {
                mapped = maps;
                mem.push(own);
                control = Some(ControlRef::Device(DeviceControl::new(gpu, fabric.abort as u64)?));
            }
            Err(why) if config.transport == TransportKind::Auto => {
                notes.push(format!("Auto fell back from P2P to NET: {why}"));
                kind = TransportKind::Net;
            }
            Err(why) => return Err(why),
        }
    }
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
            // every rank's kernels poll the abort word of rank 0's control block
            let words = layout.control(peers[0].region.ptr() as u64) as *const AtomicU32;
            fabric.abort = words.cast::<u32>().cast_mut();
            control = Some(ControlRef::Host {
                words,
                _region: Arc::clone(&peers[0]),
            });
            mem.extend(peers.into_iter().map(|p| Box::new(p) as Keep));
        }
        (TransportKind::P2p, Some(_)) => b.barrier()?,
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
            net = Some(connect_net(
                &b,
                config,
                id.addr(),
                &mut notes,
                magic,
                layout,
                send.0,
                recv.0,
                abort_host,
            )?);
            // the slots are pinned host memory for the kernels: frames are coded in device
            // memory beside the staging buffers (`ChannelDesc::frame_stage`)
            let base = stage_region(gpu.as_deref(), stage_count * slot as usize, &mut mem)?;
            fabric.frame_stage = (0..stage_count).map(|i| (base + i as u64 * slot) as *mut u8).collect();
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
    // every rank must have chosen the same transport (each pair of ranks uses it)
    let chosen = b.allgather(format!("{kind:?}").as_bytes())?;
    if let Some(q) = chosen.iter().position(|c| c != &chosen[rank]) {
        return Err(Error::Remote {
            rank: q,
            reason: format!(
                "chose transport {} where rank {rank} chose {kind:?}",
                String::from_utf8_lossy(&chosen[q])
            ),
        });
    }
    // P2P delivers what the peer's kernel stored (ARCHITECTURE.md, "RAW over P2P")
    fabric.trusted = kind == TransportKind::P2p && !config.verify_p2p;
    Ok(Links {
        kind,
        backend,
        fabric,
        engine,
        net,
        _mem: mem,
        mapped,
        magic,
        calls: Mutex::new(InFlight::new(slots, config.profile)),
        control,
        timeout: config.timeout,
        description: std::iter::once(format!("{kind:?}"))
            .chain(notes)
            .collect::<Vec<_>>()
            .join("; "),
        bootstrap: b,
    })
}

/// P2P's FIFOs: this rank's receive region in device memory, exported by IPC, and every
/// peer's mapped (their FIFO from this rank is this rank's send FIFO); the kernels' abort word
/// becomes the one in rank 0's control block, mapped by every rank. A peer in this process
/// (`places`: the same host and process, as `Communicator::init_all` makes them) is used at the
/// address it allocated instead, which IPC cannot map in the exporting process, after enabling
/// peer access to its GPU (each rank of a process has its own GPU). Every rank then says
/// whether all its mappings worked: `Ok(Ok(memory to keep))` when all ranks' did, with the
/// fabric's FIFOs set; `Ok(Err(the first failure))` on every rank when one rank's did not
/// (nothing kept, so that NET can replace it); `Err` when the bootstrap failed. The memory:
/// the mappings, then this rank's region.
fn connect_p2p(
    b: &Bootstrap,
    gpu: &CudaGpu,
    places: &[Place],
    magic: u64,
    layout: FifoLayout,
    parts: usize,
    fabric: &mut Fabric,
) -> Result<Result<(Vec<Keep>, Keep)>> {
    let rank = b.rank();
    let own = Arc::new(DeviceAlloc::zeroed(gpu.context(), layout.bytes())?);
    // each rank's IPC handle (64 bytes), then its region's address (8 bytes, little-endian)
    let mut mine = own.ipc_handle()?.to_vec();
    mine.extend_from_slice(&own.ptr().to_le_bytes());
    let shared = InProcessRegion::share(magic, rank, &own);
    let regions = b.allgather(&mine)?;
    let visible = crate::cuda_mem::visible_uuids()?;
    let mut keep: Vec<Keep> = Vec::new();
    // in-process peers' regions, kept as this rank's own is (not closed between barriers)
    let mut here = vec![Arc::clone(&own)];
    let mut send = Vec::new();
    let mut bases = Vec::new();
    let mut failed = None;
    for (q, region) in regions.iter().enumerate() {
        let (handle, addr) = region.split_at(region.len().min(64));
        let in_process = (&places[q].host, places[q].process) == (&places[rank].host, places[rank].process);
        let opened = match (<[u8; 64]>::try_from(handle), <[u8; 8]>::try_from(addr)) {
            _ if q == rank => Ok(own.ptr()),
            (Ok(_), Ok(addr)) if in_process => {
                let base = u64::from_le_bytes(addr);
                // another GPU: two ranks of one process on one GPU were refused
                // (`shared_gpu_in_one_process`)
                visible
                    .iter()
                    .position(|u| Some(*u) == places[q].gpu)
                    .ok_or_else(|| format!("rank {q}'s GPU is not visible in its own process"))
                    .and_then(|o| crate::cuda_mem::enable_peer_access(gpu.context(), o).map_err(|e| e.to_string()))
                    .and_then(|()| InProcessRegion::get(magic, q, base))
                    .map(|region| {
                        here.push(region);
                        base
                    })
            }
            (Ok(h), Ok(_)) => IpcMapping::open(gpu.context(), &h).map_err(|e| e.to_string()).map(|m| {
                let base = m.ptr();
                keep.push(Box::new(m) as Keep);
                base
            }),
            _ => Err(format!("rank {q} sent a FIFO region of {} bytes, not 72", region.len())),
        };
        let base = opened.unwrap_or_else(|why| {
            failed.get_or_insert(format!("rank {rank} cannot map rank {q}'s FIFOs: {why}"));
            0
        });
        send.extend((0..parts).map(|p| layout.desc(base, rank * parts + p)));
        bases.push(base);
    }
    let outcomes = b.allgather(failed.as_deref().unwrap_or("").as_bytes())?;
    // every in-process peer has taken its reference by now
    drop(shared);
    if let Some((q, why)) = outcomes.iter().enumerate().find(|(_, o)| !o.is_empty()) {
        // every rank closes its mappings before any frees the region they map
        drop(keep);
        b.barrier()?;
        drop((here, own));
        return Ok(Err(Error::Remote {
            rank: q,
            reason: String::from_utf8_lossy(why).into_owned(),
        }));
    }
    fabric.recv = (0..layout.n).map(|i| layout.desc(own.ptr(), i)).collect();
    fabric.send = send;
    // every rank's kernels poll the abort word of rank 0's control block
    fabric.abort = layout.control(bases[0]) as *mut u32;
    Ok(Ok((keep, Box::new(here) as Keep)))
}

/// This process's P2P regions while their communicators connect, by (magic, rank): a rank of
/// the same process takes a reference to a peer's region instead of mapping it, so the region
/// lives until every rank that uses it has dropped (each after its own kernels have stopped),
/// with no barrier between ranks that one thread may drop one after the other
/// (`Communicator::init_all`).
struct InProcessRegion {
    magic: u64,
    rank: usize,
}

type RegionTable = Mutex<std::collections::HashMap<(u64, usize), Arc<DeviceAlloc>>>;

impl InProcessRegion {
    fn table() -> &'static RegionTable {
        static TABLE: std::sync::OnceLock<RegionTable> = std::sync::OnceLock::new();
        TABLE.get_or_init(Default::default)
    }

    /// Offers `region` to rank `rank`'s in-process peers until the result is dropped.
    fn share(magic: u64, rank: usize, region: &Arc<DeviceAlloc>) -> InProcessRegion {
        let mut table = Self::table().lock().unwrap_or_else(PoisonError::into_inner);
        table.insert((magic, rank), Arc::clone(region));
        InProcessRegion { magic, rank }
    }

    /// Rank `rank`'s region, which must start at `base` (what it said in the allgather).
    fn get(magic: u64, rank: usize, base: u64) -> std::result::Result<Arc<DeviceAlloc>, String> {
        let table = Self::table().lock().unwrap_or_else(PoisonError::into_inner);
        match table.get(&(magic, rank)) {
            Some(r) if r.ptr() == base => Ok(Arc::clone(r)),
            _ => Err(format!("rank {rank} of this process offers no region at {base:#x}")),
        }
    }
}

impl Drop for InProcessRegion {
    fn drop(&mut self) {
        let mut table = Self::table().lock().unwrap_or_else(PoisonError::into_inner);
        table.remove(&(self.magic, self.rank));
    }
}

/// The address of this host's interface that the route to `root` leaves by (NCCL's choice of
/// the bootstrap's interface): NET's default listener address, which peers on other hosts
/// reach as the root is reached. A UDP socket connected to `root` sends nothing.
fn route_to(root: SocketAddr) -> Result<IpAddr> {
    let io = |what: &str| {
        let what = format!("{what} (finding the interface to the bootstrap root {root}; set ZIPCOLL_NET_IP)");
        move |source| Error::Io { what, source }
    };
    let any: IpAddr = if root.is_ipv4() {
        IpAddr::from([0, 0, 0, 0])
    } else {
        IpAddr::from([0u16; 8])
    };
    let probe = std::net::UdpSocket::bind((any, 0)).map_err(io("binding a UDP probe"))?;
    probe.connect(root).map_err(io("routing a UDP probe"))?;
    Ok(probe.local_addr().map_err(io("the UDP probe's address"))?.ip())
}

/// The NET transport between this rank's local regions and every peer's.
#[allow(clippy::too_many_arguments)]
fn connect_net(
    b: &Bootstrap,
    config: &Config,
    root: SocketAddr,
    notes: &mut Vec<String>,
    magic: u64,
    layout: FifoLayout,
    send_host: u64,
    recv_host: u64,
    abort: *const AtomicU32,
) -> Result<NetTransport> {
    let (rank, nranks, parts) = (b.rank(), b.nranks(), config.channels);
    let (ip, why) = match std::env::var("ZIPCOLL_NET_IP") {
        Ok(v) => (
            v.parse()
                .map_err(|_| Error::InvalidArgument(format!("ZIPCOLL_NET_IP={v:?} is not an IP address")))?,
            "ZIPCOLL_NET_IP".to_string(),
        ),
        Err(_) => (
            route_to(root)?,
            format!("the interface that reaches the bootstrap root {root}"),
        ),
    };
    let listener = NetListener::bind(ip)?;
    notes.push(format!("NET listens on {} ({why})", listener.addr()));
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

    /// The transport and how it was chosen and set up: `Net; NET listens on 10.0.0.3:41234
    /// (the interface that reaches the bootstrap root 10.0.0.1:29500)`, or why Auto fell back.
    pub fn describe(&self) -> &str {
        &self.description
    }

    /// Closes the NET transport gracefully now (what dropping does when nothing failed) and
    /// returns how that went: every frame published reached its peer, and the peers closed
    /// too. Nothing to do for the other transports.
    pub fn close_net(&mut self) -> Result<()> {
        match self.net.take() {
            Some(mut net) => net.shutdown(),
            None => Ok(()),
        }
    }

    /// The communicator's bootstrap ring (for collectives of the host: split).
    pub fn bootstrap(&self) -> &Bootstrap {
        &self.bootstrap
    }

    pub fn fabric(&self) -> &Fabric {
        &self.fabric
    }

    /// Frame bytes this rank's NET proxies have sent so far; `None` on the other transports.
    pub fn wire_bytes_sent(&self) -> Option<u64> {
        self.net.as_ref().map(NetTransport::total_bytes_sent)
    }

    /// Where this rank's kernels run, and on the simulator with which warp width.
    pub(crate) fn engine(&self) -> (&Engine, Backend) {
        (&self.engine, self.backend)
    }

    /// The stream a CUDA communicator's calls run on (none for the simulator).
    pub fn cuda_stream(&self) -> Option<&Arc<CudaStream>> {
        match &self.engine {
            Engine::Cuda { stream, .. } => Some(stream),
            Engine::Sim { .. } => None,
        }
    }

    /// Raises the abort word the kernels poll: this rank's (NET: its proxies then tell the
    /// peers) and, over SIM and P2P, rank 0's, which every rank's kernels poll.
    pub fn raise_abort(&self) {
        self.engine.abort_word().store(1, Ordering::Release);
        if let Some(c) = &self.control {
            c.raise_abort();
        }
    }

    /// Records `cause` as the communicator's first failure where every rank sees it (SIM and
    /// P2P: rank 0's control block), unless a first failure is recorded already; over NET it
    /// becomes the reason of the ABORT the proxies send (call it before raising the abort word).
    pub fn publish(&self, cause: Cause) {
        if let Some(c) = &self.control {
            c.publish(cause);
        }
        if let Some(net) = &self.net {
            net.set_abort_reason(cause.reason());
        }
    }

    /// The communicator's first failure if a rank has recorded it ([`Links::publish`]),
    /// waiting for it up to `patience`; `None` where there is no shared record (NET).
    pub fn cause(&self, patience: Duration) -> Option<Cause> {
        self.control.as_ref()?.cause(patience)
    }

    /// Zeroed memory of `len` bytes where this rank's kernels run.
    pub fn alloc(&self, len: usize) -> Result<DeviceBuffer> {
        match &self.engine {
            Engine::Sim { .. } => Ok(DeviceBuffer::host(len)),
            Engine::Cuda { stream, .. } => Ok(DeviceBuffer::cuda(CudaBuffer::zeroed(stream, len)?)),
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

    /// Checks that a scalar the kernels read lies where they can read it: not null, and on a
    /// GPU in this communicator's device memory (the simulator cannot tell host addresses
    /// apart).
    pub fn check_scalar(&self, at: super::DeviceScalar) -> Result<()> {
        if at.ptr() == 0 {
            return Err(Error::InvalidArgument("a PreMulSum scalar at device address 0".into()));
        }
        if let Engine::Cuda { gpu, .. } = &self.engine {
            let on = crate::cuda_mem::device_of(gpu.context(), at.ptr())?;
            let mine = gpu.context().ordinal();
            if usize::try_from(on).ok() != Some(mine) {
                return Err(Error::InvalidArgument(format!(
                    "a PreMulSum scalar in memory of CUDA device {on} passed to a communicator of device {mine}"
                )));
            }
        }
        Ok(())
    }

    /// Copies `len` bytes from `src` to `dst` in this rank's memory, in call order: the
    /// simulator now (its calls ran at enqueue), a GPU on the communicator's stream after the
    /// calls enqueued before.
    ///
    /// # Safety
    /// Both ranges lie in buffers of this communicator ([`Links::check_buffer`]) that stay
    /// allocated until the copy has run (the caller's next synchronize), and do not overlap.
    pub unsafe fn copy_within(&self, dst: *mut u8, src: *const u8, len: usize) -> Result<()> {
        match &self.engine {
            // SAFETY: the caller's contract: both ranges valid host memory, disjoint.
            Engine::Sim { .. } => unsafe { std::ptr::copy_nonoverlapping(src, dst, len) },
            Engine::Cuda { stream, .. } => {
                // SAFETY: the caller's contract, on the stream the calls run on.
                unsafe { crate::cuda_mem::copy_device_async(stream, dst as u64, src as u64, len) }?
            }
        }
        Ok(())
    }

    /// Most blocks of `team` (a plan's "warps") one launch of the collective
    /// kernel for (`dtype`, `op`) may have: as many as are resident at once (they wait on each
    /// other's FIFOs). The simulator runs every block on its own thread: [`MAX_WARPS`]; a GPU:
    /// what the occupancy API says its multiprocessors hold, at most [`MAX_WARPS`].
    pub fn max_warps(&self, team: ChannelTeam, dtype: DType, op: ReduceOp) -> Result<usize> {
        match &self.engine {
            Engine::Sim { .. } => Ok(MAX_WARPS),
            Engine::Cuda { gpu, .. } => Ok(exec_cuda::resident_blocks(gpu, team, dtype, op)?.min(MAX_WARPS)),
        }
    }

    /// The sample Auto decides a call of `n` elements of `dtype` at `src` (its checked input)
    /// with: on the simulator the input's own; on a GPU the latest of the call's shape that
    /// has arrived, or with `fresh` (or the shape's first call) the call's own, which waits for
    /// the calls enqueued before it (`samples.rs`).
    pub fn sample(&self, dtype: DType, src: *const u8, n: usize, fresh: bool) -> Result<Sample> {
        match &self.engine {
            Engine::Sim { .. } => Ok(dispatch_dtype!(dtype, |T| {
                // SAFETY: on the simulator a checked input is host memory holding `n` elements
                // of `dtype`, aligned for it, and nothing writes it during the call.
                let data = unsafe { std::slice::from_raw_parts(src.cast::<<T as Elem>::Bits>(), n) };
                Sample::of::<T>(data)
            })),
            Engine::Cuda { stream, samples, .. } => {
                samples
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .sample(dtype, src as u64, n, fresh, || PinnedSampleCopy::new(stream))
            }
        }
    }

    /// Orders the calls enqueued from now on after the work enqueued on the caller's `stream`
    /// so far (`Options::stream`); with `after`, orders the work the caller enqueues on
    /// `stream` from now on after the calls enqueued so far instead. Call both around a call's
    /// enqueue, holding the calls' lock. The simulator has no streams: an
    /// [`Error::InvalidArgument`].
    pub fn join_caller(&self, stream: CallStream, after: bool) -> Result<()> {
        match &self.engine {
            Engine::Sim { .. } => Err(Error::InvalidArgument(
                "a CUDA stream (Options::stream) for a call on the simulator, which has none".into(),
            )),
            Engine::Cuda { stream: own, joins, .. } => match after {
                // SAFETY: `CallStream::from_raw`'s contract: a live stream of this context.
                false => unsafe { crate::cuda_mem::wait_for_stream(own, stream.raw(), &joins[0]) },
                // SAFETY: as above.
                true => unsafe { crate::cuda_mem::order_after(stream.raw(), own, &joins[1]) },
            },
        }
    }

    /// Whether the communicator's stream is being captured into a CUDA graph: after
    /// [`Links::join_caller`] a capture of the caller's stream has drawn it in, and a caller may
    /// capture it directly ([`super::Communicator::cuda_stream`]). Never on the simulator.
    pub fn capturing(&self) -> Result<bool> {
        match &self.engine {
            Engine::Sim { .. } => Ok(false),
            Engine::Cuda { stream, gpu, .. } => {
                gpu.context().bind_to_thread().map_err(cuda_error("cuCtxSetCurrent"))?;
                // SAFETY: the communicator's own stream, live as long as it is.
                unsafe { crate::cuda_mem::is_capturing(stream.cu_stream()) }
            }
        }
    }

    /// Enqueues `plan` into the CUDA graph that the communicator's stream is being captured
    /// into, with a slot of its own ([`Slot::captured`]), kept until the communicator is
    /// dropped. The call is not among those in flight: a graph's replays are not checked.
    pub fn run_captured(&self, plan: &mut Plan, dtype: DType, op: ReduceOp) -> Result<()> {
        match &self.engine {
            Engine::Sim { .. } => Err(Error::InvalidArgument("a CUDA graph capture on the simulator".into())),
            Engine::Cuda {
                gpu, stream, captured, ..
            } => {
                let slot = Slot::captured(gpu, stream, plan, dtype, op)?;
                captured.lock().unwrap_or_else(PoisonError::into_inner).push(slot);
                Ok(())
            }
        }
    }

    /// The calls in flight, locked: whoever holds the guard enqueues next.
    pub fn calls(&self) -> MutexGuard<'_, InFlight<Slot>> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Enqueues `plan` as call `name` into `calls` (this rank's, locked): the simulator runs it
    /// now (its outcome is checked later, as a GPU's), a GPU launches it with the next slot,
    /// its kernel timed if `timed`. An error: the launch itself failed.
    pub fn run(
        &self,
        calls: &mut InFlight<Slot>,
        name: &'static str,
        plan: &mut Plan,
        dtype: DType,
        op: ReduceOp,
        timed: bool,
    ) -> Result<()> {
        let wait = self.timeout;
        match (&self.engine, self.backend) {
            (Engine::Sim { .. }, backend) => {
                let start = std::time::Instant::now();
                let ran = match backend {
                    Backend::Sim64 => exec_sim::run::<64>(plan, dtype, op, wait),
                    _ => exec_sim::run::<32>(plan, dtype, op, wait),
                };
                let took = start.elapsed();
                // the run has ended: its own failure (not an abort) is the peers' explanation
                // now, not when this rank's caller next checks
                let rank = self.fabric.rank;
                match &ran {
                    Ok(records) => {
                        let own = records
                            .iter()
                            .enumerate()
                            .filter_map(|(w, r)| Failure::from_record(*r, "(reason not recorded)").map(|f| (w, f)))
                            .filter(|(_, f)| super::inflight::consequence(f) < 2)
                            .min_by_key(|(w, f)| (super::inflight::consequence(f), *w));
                        if let Some((channel, failure)) = own {
                            self.publish(Cause {
                                rank,
                                kind: CauseKind::Warp { name, channel, failure },
                            });
                        }
                    }
                    Err(_) => self.publish(Cause {
                        rank,
                        kind: CauseKind::Run,
                    }),
                }
                calls.ran(name, ran, took)
            }
            (Engine::Cuda { .. }, _) => return calls.launch(name, |slot| slot.launch(plan, dtype, op, timed)),
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
        let control = &self.control;
        let engine = &self.engine;
        calls.drain(self.timeout, || {
            engine.abort_word().store(1, Ordering::Release);
            if let Some(c) = control {
                c.raise_abort();
            }
        });
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
        // P2P: the peers map this rank's region and, on failure paths, their kernels may still
        // write it. Every rank closes its mappings after a barrier (no kernel runs any more on
        // any rank), then frees its own region (`_mem`, dropped after this) after a second
        // barrier (no rank maps it any more). Bounded by the bootstrap's timeout when a peer is
        // dead (its ring socket fails at once when its process is gone).
        if !self.mapped.is_empty() {
            let _ = self.bootstrap.barrier();
            self.mapped.clear();
            let _ = self.bootstrap.barrier();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place(host: &str, process: u64, gpu: u8) -> Place {
        Place {
            host: host.into(),
            process,
            gpu: Some([gpu; 16]),
        }
    }

    #[test]
    fn places_round_trip_and_bad_ones_are_remote_errors() {
        for p in [
            place("node-1", 7, 0xAB),
            Place {
                host: "h".into(),
                process: 1,
                gpu: None,
            },
        ] {
            assert_eq!(Place::parse(3, &p.to_bytes()).unwrap(), p);
        }
        for bad in [
            "",
            "h 1",
            "h x -",
            "h 1 abc",
            "h 1 - extra",
            "h 1 zz000000000000000000000000000000",
        ] {
            assert!(
                matches!(Place::parse(3, bad.as_bytes()), Err(Error::Remote { rank: 3, .. })),
                "{bad:?}"
            );
        }
    }

    /// Two ranks of one process on one GPU are found (NCCL refuses them, and so does
    /// `connect`); one process on several GPUs, one GPU shared by processes or hosts, and
    /// simulated ranks (no GPU) are not.
    #[test]
    fn ranks_of_one_process_on_one_gpu_are_found() {
        let with = |host: &str, process: u64, gpu: Option<u8>| Place {
            host: host.into(),
            process,
            gpu: gpu.map(|g| [g; 16]),
        };
        let found = |places: &[Place]| shared_gpu_in_one_process(places);
        assert_eq!(
            found(&[with("h", 1, Some(0)), with("h", 1, Some(1)), with("h", 1, Some(0))]),
            Some((0, 2))
        );
        assert_eq!(
            found(&[with("h", 1, Some(0)), with("h", 2, Some(0)), with("h", 2, Some(0))]),
            Some((1, 2))
        );
        assert_eq!(
            found(&[with("h", 1, Some(0)), with("h", 1, Some(1)), with("h", 1, Some(2))]),
            None
        );
        assert_eq!(
            found(&[with("h", 1, Some(0)), with("h", 2, Some(0)), with("g", 1, Some(0))]),
            None
        );
        assert_eq!(found(&[with("h", 1, None), with("h", 1, None)]), None);
        assert_eq!(found(&[with("h", 1, Some(0))]), None);
    }

    /// Ranks that each see only their own GPU (one per process, CUDA_VISIBLE_DEVICES) all
    /// report device 0: by UUID they are three different GPUs, hidden from each other, so P2P
    /// is worth trying; by ordinal (as before) every peer looked like the rank's own device.
    #[test]
    fn one_visible_gpu_per_process_is_judged_by_uuid() {
        let places = [place("n", 1, 1), place("n", 2, 2), place("n", 3, 3)];
        for rank in 0..3 {
            let visible = [[rank as u8 + 1; 16]];
            let views = peer_gpus(rank, &places, &visible, |_| panic!("no other GPU is visible")).unwrap();
            for (q, v) in views.iter().enumerate() {
                let want = if q == rank { PeerGpu::Same } else { PeerGpu::Hidden };
                assert_eq!(*v, want, "rank {rank} about {q}");
            }
            assert!(p2p_worth_trying(&views));
        }
    }

    /// Three ranks on two GPUs that see both: ranks 0 and 2 share GPU 1. Every rank's view
    /// allows P2P (the shared GPU is `Same`, not "no peer access"), so all vote the same way;
    /// another host or a GPU without peer access makes the vote, and so every rank, pick NET.
    #[test]
    fn three_ranks_on_two_gpus_agree() {
        let places = [place("n", 1, 1), place("n", 2, 2), place("n", 3, 1)];
        let visible = [[1; 16], [2; 16]];
        let votes: Vec<Vec<u8>> = (0..3)
            .map(|rank| {
                let views = peer_gpus(rank, &places, &visible, |_| Ok(true)).unwrap();
                vec![p2p_worth_trying(&views) as u8]
            })
            .collect();
        assert!(unanimous(&votes), "{votes:?}");
        let no_access: Vec<Vec<u8>> = (0..3)
            .map(|rank| {
                let views = peer_gpus(rank, &places, &visible, |_| Ok(false)).unwrap();
                vec![p2p_worth_trying(&views) as u8]
            })
            .collect();
        // ranks 0 and 2 share a GPU but cannot reach rank 1's: everyone picks NET
        assert_eq!(no_access, vec![vec![0], vec![0], vec![0]]);
        assert!(!unanimous(&no_access));
        assert!(!unanimous(&[vec![1], vec![0], vec![1]]), "one dissent is NET for all");
        let far = [place("n", 1, 1), place("m", 2, 2)];
        let views = peer_gpus(0, &far, &visible, |_| Ok(true)).unwrap();
        assert_eq!(views[1], PeerGpu::Unreachable);
        assert!(!p2p_worth_trying(&views));
    }

    #[test]
    fn the_route_to_a_loopback_root_is_loopback() {
        let ip = route_to(SocketAddr::from(([127, 0, 0, 1], 9))).unwrap();
        assert!(ip.is_loopback(), "{ip}");
    }
}
