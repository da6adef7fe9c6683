//! [`Lanes`]: what the lanes of one warp can do together.
//!
//! Every operation takes the `mask` of lanes that take part, like CUDA's `*_sync` functions:
//! each lane named in `mask` must call the same operation with the same mask, and a lane reads
//! only from lanes in `mask`. The simulator checks both rules and panics when one is broken; on a
//! GPU breaking them is undefined behaviour.
//!
//! | operation        | every lane in `mask` receives                                           |
//! |------------------|-------------------------------------------------------------------------|
//! | `shfl_idx(v, s)` | `v` of lane `s % WIDTH`                                                  |
//! | `shfl_xor(v, m)` | `v` of lane `lane ^ m` (its own `v` if that lane is past the warp)       |
//! | `shfl_up_u32(v, d)` | `v` of lane `lane - d`, or its own `v` when `lane < d`                |
//! | `ballot(p)`      | the mask of lanes in `mask` whose `p` is true                            |
//! | `sync()`         | nothing; memory written before it is visible to the others after it      |

use crate::Word;

/// A set of lanes: bit `i` is lane `i`. One type serves warps of 32 and 64 lanes.
pub type LaneMask = u64;

/// Applies a 32-bit warp operation to each half of a [`Word`], written out (not through a
/// closure) so that `#[track_caller]` reports the caller's location to the simulator.
macro_rules! by_words {
    ($v:expr, |$x:ident| $op:expr) => {{
        let bits = $v.to_bits64();
        let lo = {
            let $x = bits as u32;
            $op
        } as u64;
        let hi = if T::WORDS == 2 {
            let $x = (bits >> 32) as u32;
            ($op as u64) << 32
        } else {
            0
        };
        T::from_bits64(lo | hi)
    }};
}

/// The lanes of one warp (NVIDIA) or wavefront (AMD), executing in lockstep.
pub trait Lanes: Copy {
    /// Lanes per warp: 32 or 64.
    const WIDTH: u32;
    /// The mask naming every lane of the warp.
    const FULL: LaneMask = if Self::WIDTH >= 64 {
        u64::MAX
    } else {
        (1u64 << Self::WIDTH) - 1
    };

    /// This lane's index within its warp, `0..WIDTH`.
    fn lane_id(self) -> u32;
    /// The lanes of this warp that are executing this call together (converged with this lane).
    fn active_mask(self) -> LaneMask;
    /// Waits until every lane in `mask` has reached a `sync` with the same mask; orders memory
    /// among them.
    fn sync(self, mask: LaneMask);
    /// `v` from lane `src % WIDTH`.
    fn shfl_idx_u32(self, mask: LaneMask, v: u32, src: u32) -> u32;
    /// `v` from lane `lane_id ^ lane_mask`; own `v` if that lane is outside the warp.
    fn shfl_xor_u32(self, mask: LaneMask, v: u32, lane_mask: u32) -> u32;
    /// `v` from lane `lane_id - delta`; own `v` for lanes below `delta`.
    fn shfl_up_u32(self, mask: LaneMask, v: u32, delta: u32) -> u32;
    /// The lanes of `mask` whose `pred` is true.
    fn ballot(self, mask: LaneMask, pred: bool) -> LaneMask;

    /// True on every lane if `pred` holds on any lane of `mask`.
    #[inline(always)]
    #[track_caller]
    fn any(self, mask: LaneMask, pred: bool) -> bool {
        self.ballot(mask, pred) != 0
    }
    /// True on every lane if `pred` holds on all lanes of `mask`.
    #[inline(always)]
    #[track_caller]
    fn all(self, mask: LaneMask, pred: bool) -> bool {
        self.ballot(mask, pred) == mask
    }
    /// [`Lanes::shfl_idx_u32`] for any [`Word`].
    #[inline(always)]
    #[track_caller]
    fn shfl_idx<T: Word>(self, mask: LaneMask, v: T, src: u32) -> T {
        by_words!(v, |x| self.shfl_idx_u32(mask, x, src))
    }
    /// [`Lanes::shfl_xor_u32`] for any [`Word`].
    #[inline(always)]
    #[track_caller]
    fn shfl_xor<T: Word>(self, mask: LaneMask, v: T, lane_mask: u32) -> T {
        by_words!(v, |x| self.shfl_xor_u32(mask, x, lane_mask))
    }
}
