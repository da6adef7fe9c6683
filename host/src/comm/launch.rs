//! Starting the ranks of a job, one process per GPU as NCCL expects: the parent makes the
//! [`UniqueId`] and starts `nranks` copies of the current executable with the same arguments
//! and three environment variables; each child finds its place with [`rank_env`].
//!
//! | variable             | value                                  |
//! |----------------------|----------------------------------------|
//! | `ZIPCOLL_UNIQUE_ID`  | the id's text form ([`UniqueId`]'s `Display`) |
//! | `ZIPCOLL_RANK`       | the child's rank                       |
//! | `ZIPCOLL_NRANKS`     | the number of ranks                    |
//!
//! [`child_communicator`] does both in a child: its place, then its communicator on GPU
//! `rank % devices`.
//!
//! ```no_run
//! use zipcoll_host::comm::launch::{rank_env, spawn_ranks};
//! match rank_env()? {
//!     None => std::process::exit(spawn_ranks(2)?), // the parent: start ranks 0 and 1, wait
//!     Some(me) => println!("rank {} of {}", me.rank, me.nranks),
//! }
//! # Ok::<(), zipcoll_host::Error>(())
//! ```

use super::{Communicator, Config, UniqueId};
use crate::backend::Backend;
use crate::error::{Error, Result};
use std::process::Command;

/// A child's place in the job.
#[derive(Clone, Debug)]
pub struct RankEnv {
    /// The job's unique id.
    pub id: UniqueId,
    /// This process's rank.
    pub rank: usize,
    /// Ranks in the job.
    pub nranks: usize,
}

/// This process's place, when it was started by [`spawn_ranks`] (`None` otherwise; malformed
/// variables are [`Error::InvalidArgument`]).
pub fn rank_env() -> Result<Option<RankEnv>> {
    let Ok(id) = std::env::var("ZIPCOLL_UNIQUE_ID") else {
        return Ok(None);
    };
    let number = |name: &str| -> Result<usize> {
        let v = std::env::var(name).map_err(|_| Error::InvalidArgument(format!("{name} is not set")))?;
        v.parse()
            .map_err(|_| Error::InvalidArgument(format!("{name}={v:?} is not a number")))
    };
    Ok(Some(RankEnv {
        id: id.parse()?,
        rank: number("ZIPCOLL_RANK")?,
        nranks: number("ZIPCOLL_NRANKS")?,
    }))
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

/// This process's communicator when [`spawn_ranks`] started it (`None` otherwise): rank `r`
/// uses CUDA device `r % devices`, with `config`.
pub fn child_communicator(config: Config) -> Result<Option<Communicator>> {
    let Some(me) = rank_env()? else {
        return Ok(None);
    };
    let devices = crate::cuda::device_count()?.max(1);
    let backend = Backend::Cuda {
        ordinal: me.rank % devices,
    };
    Communicator::init_with(&me.id, me.rank, me.nranks, backend, config).map(Some)
}
