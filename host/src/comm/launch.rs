//! Starting the ranks of a job, one process per GPU as NCCL expects, and finding a process's
//! place in a job that a launcher started. [`spawn_ranks`] makes the [`UniqueId`] and starts
//! `nranks` copies of the current executable with zipcoll's three variables; [`rank_env`]
//! reads those, or the variables of the launchers people use:
//!
//! | launcher | rank | ranks | local rank (picks the GPU) | bootstrap root | job key (part of the magic) |
//! |----------|------|-------|----------------------------|----------------|-----------------------------|
//! | [`spawn_ranks`] | `ZIPCOLL_RANK` | `ZIPCOLL_NRANKS` | - | in `ZIPCOLL_UNIQUE_ID` | in the id |
//! | torchrun | `RANK` | `WORLD_SIZE` | `LOCAL_RANK` | root address | `TORCHELASTIC_RUN_ID` |
//! | SLURM (`srun`) | `SLURM_PROCID` | `SLURM_NTASKS` | `SLURM_LOCALID` | root address | `SLURM_JOB_ID`.`SLURM_STEP_ID` |
//! | Open MPI (`mpirun`) | `OMPI_COMM_WORLD_RANK` | `OMPI_COMM_WORLD_SIZE` | `OMPI_COMM_WORLD_LOCAL_RANK` | root address | `OMPI_MCA_ess_base_jobid` |
//! | MPICH / PMI | `PMI_RANK` | `PMI_SIZE` | `MPI_LOCALRANKID` | root address | `PMI_KVSNAME` |
//!
//! The first launcher whose rank variable is set wins, in the table's order. Without an id to
//! hand around, the ranks agree on the root instead: it listens at `ZIPCOLL_ROOT` (`host:port`)
//! or else at `MASTER_ADDR` and port `ZIPCOLL_ROOT_PORT`, else `MASTER_PORT + 1` (torchrun's
//! store owns `MASTER_PORT`); rank 0 starts it there ([`UniqueId::root_with_magic`]), the
//! others connect to it (retrying until the bootstrap timeout), and the magic every rank must
//! present is a hash of the root's address, the rank count and the job key, so two jobs that
//! reuse an address do not mix.
//!
//! [`child_communicator`] does both in a process: its place, then its communicator on CUDA
//! device `local rank % devices` (the rank when there is no local rank).
//!
//! ```no_run
//! use zipcoll_host::comm::launch::{rank_env, spawn_ranks};
//! match rank_env()? {
//!     None => std::process::exit(spawn_ranks(2)?), // no launcher: start ranks 0 and 1, wait
//!     Some(me) => println!("rank {} of {} ({})", me.rank, me.nranks, me.launcher),
//! }
//! # Ok::<(), zipcoll_host::Error>(())
//! ```

use super::bootstrap::{env_root_timeout, UniqueId};
use super::{Communicator, Config};
use crate::backend::Backend;
use crate::error::{Error, Result};
use std::net::{SocketAddr, ToSocketAddrs};
use std::process::Command;

/// A process's place in the job.
#[derive(Clone, Debug)]
pub struct RankEnv {
    /// The job's unique id.
    pub id: UniqueId,
    /// This process's rank.
    pub rank: usize,
    /// Ranks in the job.
    pub nranks: usize,
    /// This process's rank among those on its host, when the launcher says.
    pub local_rank: Option<usize>,
    /// Which launcher started it (the table's first column).
    pub launcher: &'static str,
}

/// A launcher's variables (see the module table).
struct Launcher {
    name: &'static str,
    rank: &'static str,
    nranks: &'static str,
    local_rank: &'static str,
    job: &'static [&'static str],
}

/// The launchers [`rank_env`] recognizes after zipcoll's own, in order.
const LAUNCHERS: [Launcher; 4] = [
    Launcher {
        name: "torchrun",
        rank: "RANK",
        nranks: "WORLD_SIZE",
        local_rank: "LOCAL_RANK",
        job: &["TORCHELASTIC_RUN_ID"],
    },
    Launcher {
        name: "slurm",
        rank: "SLURM_PROCID",
        nranks: "SLURM_NTASKS",
        local_rank: "SLURM_LOCALID",
        job: &["SLURM_JOB_ID", "SLURM_STEP_ID"],
    },
    Launcher {
        name: "openmpi",
        rank: "OMPI_COMM_WORLD_RANK",
        nranks: "OMPI_COMM_WORLD_SIZE",
        local_rank: "OMPI_COMM_WORLD_LOCAL_RANK",
        job: &["OMPI_MCA_ess_base_jobid"],
    },
    Launcher {
        name: "pmi",
        rank: "PMI_RANK",
        nranks: "PMI_SIZE",
        local_rank: "MPI_LOCALRANKID",
        job: &["PMI_KVSNAME"],
    },
];

/// This process's place in its job (see the module table); `None` when no launcher's
/// variables are set. Malformed or inconsistent variables are [`Error::InvalidArgument`]
/// naming the variable. Rank 0 of a launcher's job starts the bootstrap root here.
pub fn rank_env() -> Result<Option<RankEnv>> {
    rank_env_from(|name| std::env::var(name).ok())
}

/// [`rank_env`] over the variables `var` gives.
pub fn rank_env_from(var: impl Fn(&str) -> Option<String>) -> Result<Option<RankEnv>> {
    let number = |name: &str| -> Result<Option<usize>> {
        var(name)
            .map(|v| {
                v.trim()
                    .parse()
                    .map_err(|_| Error::InvalidArgument(format!("{name}={v:?} is not a number")))
            })
            .transpose()
    };
    let required = |name: &str| number(name)?.ok_or_else(|| Error::InvalidArgument(format!("{name} is not set")));
    let place = |rank: usize, nranks: usize, rank_var: &str| -> Result<()> {
        match (nranks, rank < nranks) {
            (0, _) => Err(Error::InvalidArgument(format!("{rank_var}'s job has 0 ranks"))),
            (_, false) => Err(Error::InvalidArgument(format!(
                "{rank_var}={rank} is not below the {nranks} ranks"
            ))),
            _ => Ok(()),
        }
    };
    if let Some(id) = var("ZIPCOLL_UNIQUE_ID") {
        let (rank, nranks) = (required("ZIPCOLL_RANK")?, required("ZIPCOLL_NRANKS")?);
        place(rank, nranks, "ZIPCOLL_RANK")?;
        return Ok(Some(RankEnv {
            id: id.parse()?,
            rank,
            nranks,
            local_rank: None,
            launcher: "zipcoll",
        }));
    }
    let Some(l) = LAUNCHERS.iter().find(|l| var(l.rank).is_some()) else {
        return Ok(None);
    };
    let (rank, nranks) = (required(l.rank)?, required(l.nranks)?);
    place(rank, nranks, l.rank)?;
    let root = root_addr(&var)?;
    let job: Vec<String> = l.job.iter().map(|v| var(v).unwrap_or_default()).collect();
    let magic = job_magic(root, nranks, &job.join("."));
    let id = match rank {
        0 => UniqueId::root_with_magic(root, magic, env_root_timeout()?)?,
        _ => UniqueId::agreed(root, magic)?,
    };
    Ok(Some(RankEnv {
        id,
        rank,
        nranks,
        local_rank: number(l.local_rank)?,
        launcher: l.name,
    }))
}

/// Where a launcher's job's bootstrap root listens (see the module docs).
fn root_addr(var: &impl Fn(&str) -> Option<String>) -> Result<SocketAddr> {
    let resolve = |name: &str, host_port: &str| -> Result<SocketAddr> {
        let bad = |why: String| Error::InvalidArgument(format!("{name}: {host_port:?} {why}"));
        let mut addrs = host_port
            .to_socket_addrs()
            .map_err(|e| bad(format!("does not resolve: {e}")))?;
        // IPv4 first: what launchers' MASTER_ADDR usually means
        let v: Vec<SocketAddr> = addrs.by_ref().collect();
        v.iter()
            .find(|a| a.is_ipv4())
            .or(v.first())
            .copied()
            .ok_or_else(|| bad("resolves to no address".into()))
    };
    if let Some(root) = var("ZIPCOLL_ROOT") {
        return resolve("ZIPCOLL_ROOT", root.trim());
    }
    let Some(host) = var("MASTER_ADDR") else {
        return Err(Error::InvalidArgument(
            "no bootstrap root for this launcher's job: set ZIPCOLL_ROOT=host:port (or MASTER_ADDR)".into(),
        ));
    };
    let port = match (var("ZIPCOLL_ROOT_PORT"), var("MASTER_PORT")) {
        (Some(p), _) => p
            .trim()
            .parse::<u16>()
            .ok()
            .filter(|p| *p != 0)
            .ok_or_else(|| Error::InvalidArgument(format!("ZIPCOLL_ROOT_PORT={p:?} is not a port (1..=65535)")))?,
        (None, Some(p)) => p
            .trim()
            .parse::<u16>()
            .ok()
            .and_then(|p| p.checked_add(1))
            .ok_or_else(|| Error::InvalidArgument(format!("MASTER_PORT={p:?} is not a port below 65535")))?,
        (None, None) => {
            return Err(Error::InvalidArgument(
                "MASTER_ADDR is set but neither ZIPCOLL_ROOT_PORT nor MASTER_PORT".into(),
            ))
        }
    };
    resolve("MASTER_ADDR", &format!("{}:{port}", host.trim()))
}

/// The magic of a launcher's job: FNV-1a over the root's address, the rank count and the job
/// key, so every rank computes the same and two jobs at one address differ.
fn job_magic(root: SocketAddr, nranks: usize, job: &str) -> u64 {
    format!("{root}/{nranks}/{job}")
        .bytes()
        .fold(0xCBF2_9CE4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01B3)
        })
}

/// Starts `nranks` copies of this executable (same arguments) as ranks `0..nranks` of a new
/// job and waits for all; returns 0 when every child succeeded, else the first failing
/// child's exit code (1 when it was killed).
pub fn spawn_ranks(nranks: usize) -> Result<i32> {
    let id = UniqueId::new()?;
    let exe = std::env::current_exe().map_err(|source| Error::Io {
        what: "finding the current executable".into(),
        source,
    })?;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut children = Vec::with_capacity(nranks);
    for rank in 0..nranks {
        let child = Command::new(&exe)
            .args(&args)
            .env("ZIPCOLL_UNIQUE_ID", id.to_string())
            .env("ZIPCOLL_RANK", rank.to_string())
            .env("ZIPCOLL_NRANKS", nranks.to_string())
            .spawn()
            .map_err(|source| Error::Io {
                what: format!("starting rank {rank}"),
                source,
            })?;
        children.push(child);
    }
    let mut code = 0;
    for (rank, mut c) in children.into_iter().enumerate() {
        let status = c.wait().map_err(|source| Error::Io {
            what: format!("waiting for rank {rank}"),
            source,
        })?;
        if !status.success() && code == 0 {
            code = status.code().unwrap_or(1);
        }
    }
    Ok(code)
}

/// The device of a new communicator of `rank` when the caller names none (NCCL's rule): the GPU
/// whose CUDA context is current on the calling thread (the caller's `cudaSetDevice`), else GPU
/// `rank % devices`, else, without a CUDA GPU, the simulator.
pub fn device_for_rank(rank: usize) -> Result<Backend> {
    Ok(match Backend::detect() {
        Backend::Cuda { .. } => Backend::Cuda {
            ordinal: match crate::cuda::current_device()? {
                Some(d) => d,
                None => rank % crate::cuda::device_count()?.max(1),
            },
        },
        _ => Backend::Sim,
    })
}

/// This process's communicator when [`spawn_ranks`] or a launcher started it (`None`
/// otherwise): on CUDA device `local rank % devices` (the rank's when the launcher gives no
/// local rank), with `config`.
pub fn child_communicator(config: Config) -> Result<Option<Communicator>> {
    let Some(me) = rank_env()? else {
        return Ok(None);
    };
    let devices = crate::cuda::device_count()?.max(1);
    let backend = Backend::Cuda {
        ordinal: me.local_rank.unwrap_or(me.rank) % devices,
    };
    Communicator::init_with(&me.id, me.rank, me.nranks, backend, config).map(Some)
}
