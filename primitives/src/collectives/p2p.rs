//! Send and receive: `count` elements from `src` to the peer's `dst`, in pieces of
//! `frame_elems` (the last partial), over one channel with only the needed side (loop `l` on the
//! warp with `part == l % nparts`).
//!
//! | op     | per piece | channel side |
//! |--------|-----------|--------------|
//! | `Send` | `send`    | send (the FIFO to the peer)   |
//! | `Recv` | `recv`    | recv (the FIFO from the peer) |
//!
//! A group (consecutive `Send` / `Recv` descriptors of one warp, [`super::run_works`]) advances
//! frame by frame: step `i` sends piece `i` of every send (in list order), then receives piece
//! `i` of every receive (in list order). Deadlock-free when every warp runs its group this way
//! and the peer's matching operations are in the same order, with at most
//! [`crate::conn::NSLOTS`] operations of one group on one FIFO: by induction over steps, once
//! every warp has finished step `i - 1` all earlier frames are consumed, so the sends of step
//! `i` find credit; so every receive of step `i` finds its frame. Data only moves
//! ([`crate::prims::NoPre`]); the result is the sent buffer bit for bit.

use super::two_shot::on;
use super::work::{validate, Coll, WorkDesc};
use crate::conn::Failure;
use crate::prims::{Compression, NoPre};
use zipcoll_device::dtype::Split;
use zipcoll_device::reduce::RedOp;
use zipcoll_device::team::Team;

/// Runs a group of `Send` / `Recv` descriptors as the module docs say.
///
/// # Safety
/// Every descriptor is a `Send` or `Recv` and [`super::run_work`]'s contract holds for each.
#[inline(never)]
pub(crate) unsafe fn group<M: Team, T: Split, O: RedOp, E: Compression>(
    team: M,
    works: &[WorkDesc],
) -> Result<(), Failure> {
    // every descriptor and channel checked before any traffic
    for work in works {
        // SAFETY: forwarded to the caller.
        if let Some(job) = unsafe { validate::<T>(work)? } {
            let op = NoPre(O::scaled(job.scalar));
            // SAFETY: forwarded to the caller.
            let _checked = unsafe { on::<M, T, _, E>(team, job.ring(), op, job.frame_elems)? };
        }
    }
    for step in 0.. {
        let mut more = false;
        for sending in [true, false] {
            for work in works {
                // SAFETY: forwarded to the caller (validated above).
                let Some(job) = (unsafe { validate::<T>(work)? }) else {
                    continue;
                };
                if (job.coll == Coll::Send) != sending {
                    continue;
                }
                let Some((s, len)) = job.piece(step) else { continue };
                more = true;
                let op = NoPre(O::scaled(job.scalar));
                // SAFETY: the piece lies in `0..count` and holds at most `frame_elems`; the
                // channel is this warp's own.
                unsafe {
                    let mut p = on::<M, T, _, E>(team, job.ring(), op, job.frame_elems)?;
                    if sending {
                        p.send(job.src.add(s), len)?;
                    } else {
                        p.recv(job.dst.add(s), len)?;
                    }
                }
            }
        }
        if !more {
            break;
        }
    }
    Ok(())
}
