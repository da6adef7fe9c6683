//! `record_cause`: the first failure of a communicator recorded in a control block that only
//! the device reaches atomically (P2P: device memory of rank 0, mapped by IPC), run by the host
//! on a stream of its own while the collectives it explains may still be running.

use crate::conn::record_cause as record;
use zipcoll_codegen::kernel;
use zipcoll_targets::Warp;

/// Thread 0 of the launch records the cause at `cause` in the control block at `block`
/// unless one is recorded already ([`crate::conn::record_cause`]); every other thread returns.
///
/// # Safety
/// As [`crate::conn::record_cause`]: `block` is a control block every other party accesses
/// atomically, `cause` holds [`crate::conn::Control::CAUSE_WORDS`] words the device reads.
#[kernel(vendor = [nvptx])]
pub unsafe fn record_cause<W: Warp>(w: W, block: *mut u32, cause: *const u32) {
    if w.global_idx() == 0 {
        // SAFETY: the caller's contract.
        unsafe { record(w, block, cause) };
    }
}
