//! The two sides of a FIFO as the team driving a channel sees them (the protocol is in the
//! module docs of [`super`]; the team is a warp or a block, [`Team`]). Every thread of the team
//! calls every method together with the same arguments; the leader (rank 0) does the counter
//! traffic and the team agrees on what it saw.

use super::desc::{ChannelDesc, ConnDesc, NSLOTS};
use super::status::{ConnError, Failure, Wait};
use zipcoll_device::codec::LaneOut;
use zipcoll_device::team::Team;
use zipcoll_targets::{Grid, Memory, Scope};

/// What every wait of a channel shares: the abort word and the time limit.
#[derive(Clone, Copy)]
struct Watch {
    abort: *mut u32,
    timeout_ns: u64,
}

impl Watch {
    /// Polls `counter` (acquire, System scope) until `ready(value)`; returns on every thread of
    /// the team, after a team sync that orders every thread's later accesses after the acquire.
    ///
    /// Only the leader spins (with no team operation inside the loop, as NCCL's single polling
    /// thread); the others wait for it where the team shares the outcome. The abort word and the
    /// clock are read once per [`Memory::POLLS_PER_CHECK`] polls (on a GPU 256: the abort word lives in
    /// rank 0's memory, another GPU's over P2P, and changes once in a communicator's life; an
    /// abort is still seen within microseconds); the wait gives up once `timeout_ns` have
    /// passed since it began. On the simulator a spinning leader with the others parked is "no progress", so
    /// the scheduler's own timeout must be longer than `timeout_ns`.
    ///
    /// # Safety
    /// `counter` and `self.abort` are valid, aligned, and only accessed atomically by others.
    unsafe fn wait<M: Team>(
        self,
        team: M,
        counter: *const u64,
        step: u64,
        what: Wait,
        ready: impl Fn(u64) -> bool,
    ) -> Result<(), Failure> {
        let w = team.warp();
        // the leader: 0 ready, 1 aborted, 2 timed out; the others: nothing yet
        let mut outcome = 0u32;
        if team.rank() == 0 {
            let start = w.clock_ns();
            let mut polls = 0u32;
            // SAFETY: forwarded from the caller.
            while !ready(unsafe { w.load_acquire(counter, Scope::System) }) {
                polls = polls.wrapping_add(1);
                if !polls.is_multiple_of(<M::Warp as Memory>::POLLS_PER_CHECK) {
                    continue;
                }
                // SAFETY: forwarded from the caller.
                if unsafe { w.load_relaxed(self.abort, Scope::System) } != 0 {
                    outcome = 1;
                    break;
                }
                if w.clock_ns().wrapping_sub(start) > self.timeout_ns {
                    outcome = 2;
                    break;
                }
            }
        }
        // every thread: the leader's outcome (a warp shares it by a shuffle, a block through
        // shared memory between two barriers, which also order the acquire before the reads)
        let error = match team.leader_value(outcome) {
            0 => {
                if M::IS_WARP {
                    team.barrier();
                }
                return Ok(());
            }
            1 => ConnError::Aborted,
            _ => ConnError::Timeout(what),
        };
        Err(Failure { step, error })
    }
}

/// The sending side of a FIFO: step counter, credit, publication.
pub struct SendConn {
    conn: ConnDesc,
    watch: Watch,
    /// The next step to write (frames published so far).
    step: u64,
}

/// The receiving side of a FIFO: step counter, data wait, consumption.
pub struct RecvConn {
    conn: ConnDesc,
    watch: Watch,
    /// The next step to read (frames consumed so far).
    step: u64,
}

impl SendConn {
    /// The sending side of `ch.send`, continuing from its published `tail`.
    ///
    /// # Safety
    /// `ch` describes live memory as its module table says, and this team is the FIFO's only
    /// sender while the value lives.
    pub unsafe fn new<M: Team>(team: M, ch: &ChannelDesc) -> Self {
        // SAFETY: `tail` is valid (the caller's contract) and only this team writes it.
        let step = unsafe { team.warp().load_relaxed(ch.send.tail, Scope::System) };
        Self {
            conn: ch.send,
            watch: Watch {
                abort: ch.abort,
                timeout_ns: ch.timeout_ns,
            },
            step: team.leader_value(step),
        }
    }

    /// The step the next frame gets.
    pub fn step(&self) -> u64 {
        self.step
    }

    /// Continues at `step`, the value [`SendConn::step`] has on the thread of the team that
    /// moved the connection (a block team's first warp runs the general path alone).
    pub fn set_step(&mut self, step: u64) {
        self.step = step;
    }

    /// Waits until the receiver has freed the slot of the next step; returns it (all of its
    /// `slot_bytes`) for the team to write one frame into.
    pub fn wait_slot<M: Team>(&self, team: M) -> Result<LaneOut<'_>, Failure> {
        let step = self.step;
        // SAFETY: `head` and `abort` are valid and atomically accessed (`new`'s contract).
        unsafe {
            self.watch
                .wait(team, self.conn.head, step, Wait::Credit, |head| step < head + NSLOTS)?;
        }
        let offset = (step % NSLOTS) * self.conn.slot_bytes;
        // SAFETY: slot `step % NSLOTS` lies inside `slots` (`NSLOTS * slot_bytes` bytes); the
        // receiver is done with it (credit acquired above) and only this team writes it.
        Ok(unsafe { LaneOut::from_raw(self.conn.slots.add(offset as usize), self.conn.slot_bytes as usize) })
    }

    /// Publishes the frame the team has written into the slot of [`SendConn::wait_slot`]: the
    /// team meets (every thread's part of the frame is written), then the leader makes the frame
    /// visible system-wide and stores `tail` with release (NCCL's pattern: the barrier orders
    /// the others' writes before the leader's fence).
    pub fn post<M: Team>(&mut self, team: M) {
        team.barrier();
        self.step += 1;
        if team.rank() == 0 {
            let w = team.warp();
            w.fence_acq_rel(Scope::System);
            // SAFETY: `tail` is valid and only this team writes it (`new`'s contract).
            unsafe { w.store_release(self.conn.tail, self.step, Scope::System) };
        }
    }
}

impl RecvConn {
    /// The receiving side of `ch.recv`, continuing from its published `head`.
    ///
    /// # Safety
    /// `ch` describes live memory as its module table says, and this team is the FIFO's only
    /// receiver while the value lives.
    pub unsafe fn new<M: Team>(team: M, ch: &ChannelDesc) -> Self {
        // SAFETY: `head` is valid (the caller's contract) and only this team writes it.
        let step = unsafe { team.warp().load_relaxed(ch.recv.head, Scope::System) };
        Self {
            conn: ch.recv,
            watch: Watch {
                abort: ch.abort,
                timeout_ns: ch.timeout_ns,
            },
            step: team.leader_value(step),
        }
    }

    /// The step the next frame has.
    pub fn step(&self) -> u64 {
        self.step
    }

    /// Continues at `step` (as [`SendConn::set_step`]).
    pub fn set_step(&mut self, step: u64) {
        self.step = step;
    }

    /// Waits until the sender has published the next step; returns its slot (all of its
    /// `slot_bytes`; the frame inside says how long it is). The bytes are whatever the sender
    /// wrote: validate before use.
    pub fn wait_frame<M: Team>(&self, team: M) -> Result<&[u8], Failure> {
        let step = self.step;
        // SAFETY: `tail` and `abort` are valid and atomically accessed (`new`'s contract).
        unsafe {
            self.watch
                .wait(team, self.conn.tail, step, Wait::Data, |tail| step < tail)?;
        }
        let offset = (step % NSLOTS) * self.conn.slot_bytes;
        // SAFETY: slot `step % NSLOTS` lies inside `slots`; the sender published it (acquired
        // above) and writes it again only after `release` gives the credit back.
        Ok(unsafe { core::slice::from_raw_parts(self.conn.slots.add(offset as usize), self.conn.slot_bytes as usize) })
    }

    /// Gives the slot of [`RecvConn::wait_frame`] back to the sender; every thread of the team
    /// is done reading it.
    pub fn release<M: Team>(&mut self, team: M) {
        // every thread: no more reads of the slot after this meeting point
        team.barrier();
        self.step += 1;
        if team.rank() == 0 {
            // SAFETY: `head` is valid and only this team writes it (`new`'s contract).
            unsafe { team.warp().store_release(self.conn.head, self.step, Scope::System) };
        }
    }
}
