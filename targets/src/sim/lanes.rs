//! Warp operations of the simulator: each parks the lane until the scheduler resolves it.

use super::scheduler::{current, park, Park, WarpOp};
use super::SimWarp;
use crate::{LaneMask, Lanes};
use core::panic::Location;

#[track_caller]
fn warp_op(op: WarpOp, mask: LaneMask, arg: u32, value: u64) -> u64 {
    park(Park::Warp {
        op,
        mask,
        arg,
        value,
        site: Location::caller(),
    })
}

impl<const W: u32> Lanes for SimWarp<W> {
    const WIDTH: u32 = {
        assert!(W == 32 || W == 64, "SimWarp lanes must be 32 or 64");
        W
    };
    fn lane_id(self) -> u32 {
        current().thread_idx % W
    }
    #[track_caller]
    fn active_mask(self) -> LaneMask {
        park(Park::ActiveMask {
            site: Location::caller(),
        })
    }
    #[track_caller]
    fn sync(self, mask: LaneMask) {
        warp_op(WarpOp::Sync, mask, 0, 0);
    }
    #[track_caller]
    fn shfl_idx_u32(self, mask: LaneMask, v: u32, src: u32) -> u32 {
        warp_op(WarpOp::ShflIdx, mask, src, v as u64) as u32
    }
    #[track_caller]
    fn shfl_xor_u32(self, mask: LaneMask, v: u32, lane_mask: u32) -> u32 {
        warp_op(WarpOp::ShflXor, mask, lane_mask, v as u64) as u32
    }
    #[track_caller]
    fn shfl_up_u32(self, mask: LaneMask, v: u32, delta: u32) -> u32 {
        warp_op(WarpOp::ShflUp, mask, delta, v as u64) as u32
    }
    #[track_caller]
    fn ballot(self, mask: LaneMask, pred: bool) -> LaneMask {
        warp_op(WarpOp::Ballot, mask, 0, pred as u64)
    }
}
