//! Runs a [`Plan`] on the simulator: one simulated block per plan warp, every block co-resident
//! (they wait on each other's peers), the generic `run_works` instantiated for the call's dtype
//! and operator as the GPU kernels are: blocks of one warp with the dtype's `Coding::ByChannel`, or
//! blocks of [`Plan::team`]'s threads driving their channels as one team, with `RawOnly` or
//! `Coding::ByChannel` (whose block coders take the shared memory after the team's).

use super::plan::{ChannelTeam, Plan};
use crate::dispatch::dispatch;
use crate::error::{Error, Result};
use crate::transport::host_mem::HostWords;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;
use zipcoll_device::dtype::{DType, Split};
use zipcoll_device::reduce::{RedOp, ReduceOp};
use zipcoll_device::team::Block;
use zipcoll_primitives::collectives::{run_works, WorkDesc};
use zipcoll_primitives::conn::STATUS_WORDS;
use zipcoll_primitives::prims::{Coding, RawOnly};
use zipcoll_targets::sim::{launch, LaunchConfig, SimWarp};
use zipcoll_targets::{Grid, SharedMem};

/// The work lists shared with the simulated blocks.
struct Works<'a>(&'a [WorkDesc], &'a [u32]);

// SAFETY: the descriptors' pointers are used by the kernels under the FIFO protocol only.
unsafe impl Sync for Works<'_> {}

impl Works<'_> {
    /// Block `b`'s works.
    fn of(&self, b: usize) -> &[WorkDesc] {
        &self.0[self.1[b] as usize..self.1[b + 1] as usize]
    }
}

/// Runs `plan` with warps of `W` lanes (each channel sends with its own `codec`, as on a GPU);
/// returns each warp's status record. `wait` bounds the FIFO waits; the simulator's own
/// no-progress timeout is set beyond it so the kernels report first.
pub(crate) fn run<const W: u32>(
    plan: &mut Plan,
    dtype: DType,
    op: ReduceOp,
    wait: Duration,
) -> Result<Vec<[u32; STATUS_WORDS]>> {
    let warps = plan.warps();
    let status = HostWords::zeroed(warps * STATUS_WORDS);
    plan.bind(plan.channels.as_ptr(), status.ptr(0));
    let works = Works(&plan.works, &plan.warp_starts);
    let mut cfg = LaunchConfig::new(warps as u32, W).with_timeout(wait + Duration::from_secs(10));
    cfg.co_resident_blocks = warps as u32;
    // a block team is whole warps of `W` lanes
    let team = match plan.team {
        ChannelTeam::Warp => ChannelTeam::Warp,
        ChannelTeam::RawBlock(t) => ChannelTeam::RawBlock(t.next_multiple_of(W)),
        ChannelTeam::CodedBlock(t) => ChannelTeam::CodedBlock(t.next_multiple_of(W)),
    };
    if team != ChannelTeam::Warp {
        cfg.block_dim = team.threads();
        cfg.shared_bytes = team.shared_bytes();
    }
    // as on a GPU, where no coding block kernel is built for a dtype without coders
    if matches!(team, ChannelTeam::CodedBlock(_)) && !dtype.coded() {
        return Err(Error::Sim(format!(
            "no collective_block_coded kernel for {dtype:?}: its calls must run the RAW block kernel"
        )));
    }
    dispatch!(dtype, op, |T, O| go::<W, T, O>(cfg, team, &works))?;
    let words = status.load();
    Ok(words
        .chunks_exact(STATUS_WORDS)
        .map(|c| [c[0], c[1], c[2], c[3]])
        .collect())
}

/// The launch for one instantiation; a panic in a simulated kernel is an [`Error::Sim`].
fn go<const W: u32, T: Split + Coding, O: RedOp>(
    cfg: LaunchConfig,
    team: ChannelTeam,
    works: &Works<'_>,
) -> Result<()> {
    let threads = cfg.block_dim;
    let kernel = |w: SimWarp<W>| {
        let mine = works.of(w.block_idx() as usize);
        // SAFETY (both): the plan's descriptors point at live buffers, FIFOs and status records
        // of the communicator (checked by its call), and block `b` is the only user of its
        // channels; a failure is written to the channel's status record.
        if team == ChannelTeam::Warp {
            let _ = unsafe { run_works::<SimWarp<W>, T, O, <T as Coding>::ByChannel>(w, mine) };
            return;
        }
        let (base, len) = w.shared_mem();
        // SAFETY: the block's own shared memory, for its team alone.
        match (unsafe { Block::new(w, base, len as usize) }, team) {
            (Some(block), ChannelTeam::RawBlock(_)) => {
                let _ = unsafe { run_works::<Block<SimWarp<W>>, T, O, RawOnly>(block, mine) };
            }
            (Some(block), _) => {
                let _ = unsafe { run_works::<Block<SimWarp<W>>, T, O, <T as Coding>::ByChannel>(block, mine) };
            }
            // (the config checks channel threads: whole warps, at most 512)
            (None, _) => panic!("a block of {threads} threads cannot drive a channel"),
        }
    };
    match catch_unwind(AssertUnwindSafe(|| launch::<W>(cfg, kernel))) {
        Ok(r) => r.map_err(|e| Error::Sim(e.to_string())),
        Err(panic) => {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "a simulated kernel panicked".into());
            Err(Error::Sim(msg))
        }
    }
}
