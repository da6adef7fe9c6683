//! The control block: the abort word every rank's kernels poll and the record of a
//! communicator's first failure, in rank 0's memory (SIM: host memory; P2P: device memory the
//! peers map). Zeroed memory is a block with nothing raised and no cause. The first rank to
//! record a cause claims it (`STATE` 0 -> 1 by compare-and-swap), writes the fields and then
//! `STATE = 2` with release, so a reader that acquires `STATE == 2` sees every field.
//!
//! | word | holds |
//! |------|-------|
//! | 0    | the abort word (nonzero: stop) |
//! | 1    | the cause: 0 none, 1 being written, 2 written |
//! | 2    | the cause's rank |
//! | 3    | its kind: [`Control::WARP`], [`Control::CALLER`] (`abort()`), [`Control::RUN`] (a launch that failed) |
//! | 4    | the call's name, an index into the communicator's table of names |
//! | 5    | the channel |
//! | 6..10 | the channel's status record ([`STATUS_WORDS`]) |
//!
//! The host records a cause itself where it can reach the block atomically (SIM); over P2P
//! the block is device memory, and the host runs [`record_cause`] on a stream of its own.

use super::STATUS_WORDS;
use zipcoll_targets::{AtomicOrder, Memory, Scope};

/// Bytes of a control block.
pub const CONTROL_BYTES: usize = 128;

/// The control block's word indices and kinds of cause (see the module table).
pub struct Control;

impl Control {
    pub const ABORT: usize = 0;
    pub const STATE: usize = 1;
    pub const RANK: usize = 2;
    pub const KIND: usize = 3;
    pub const NAME: usize = 4;
    pub const CHANNEL: usize = 5;
    pub const RECORD: usize = 6;
    /// Words of a cause: `RANK..RECORD + STATUS_WORDS`, which [`record_cause`] copies.
    pub const CAUSE_WORDS: usize = Control::RECORD + STATUS_WORDS - Control::RANK;
    /// A channel's failure, in its status record.
    pub const WARP: u32 = 1;
    /// The rank's caller called `abort()`.
    pub const CALLER: u32 = 2;
    /// The rank's launch failed (a driver error, a simulator panic).
    pub const RUN: u32 = 3;
    /// `STATE`: a cause is being written.
    pub const WRITING: u32 = 1;
    /// `STATE`: the cause is written.
    pub const WRITTEN: u32 = 2;
}

const _: () = assert!(4 * (Control::RECORD + STATUS_WORDS) <= CONTROL_BYTES);

/// Records `cause` (words `RANK..` of the block, [`Control::CAUSE_WORDS`] of them) in the
/// control block at `block` unless a cause is recorded already; returns whether this call
/// recorded it. One thread calls it.
///
/// # Safety
/// `block` is a control block ([`CONTROL_BYTES`], 4-aligned) that every other party accesses
/// atomically (System scope), and `cause` holds [`Control::CAUSE_WORDS`] readable words.
pub unsafe fn record_cause<M: Memory>(m: M, block: *mut u32, cause: *const u32) -> bool {
    // SAFETY: the caller guarantees the block's words and the cause's.
    unsafe {
        let state = block.add(Control::STATE);
        if m.atomic_cas(state, 0, Control::WRITING, AtomicOrder::AcqRel, Scope::System) != 0 {
            return false;
        }
        for i in 0..Control::CAUSE_WORDS {
            m.store_relaxed(
                block.add(Control::RANK + i),
                m.load_volatile(cause.add(i)),
                Scope::System,
            );
        }
        // release: the fields before the state that says they are written
        m.store_release(state, Control::WRITTEN, Scope::System);
    }
    true
}
