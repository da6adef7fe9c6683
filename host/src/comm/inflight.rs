//! The calls a communicator has enqueued and not yet checked, oldest first, and the ring of
//! per-call GPU slots they run with.
//!
//! | backend   | a call at enqueue                          | has finished            | its status records     |
//! |-----------|--------------------------------------------|-------------------------|------------------------|
//! | simulator | runs to its end ([`InFlight::ran`])        | at once                 | kept with the call     |
//! | CUDA      | takes the next slot, launches ([`InFlight::launch`]) | when the slot's event has completed | in the slot's pinned memory |
//!
//! The slots are used in turn, so the next one is the oldest call's when all are in flight: a
//! call first waits for that one (and checks it). Checking a finished call reads its records;
//! the first failure found is kept until a check returns it ([`InFlight::check`]), so a failure
//! found while making room for a launch is reported by the next check.

use super::checks::Checked;
use crate::error::{Error, Result};
use std::collections::VecDeque;
use std::time::{Duration, Instant};
use zipcoll_primitives::conn::{ConnError, Failure, STATUS_WORDS};

/// The names of the calls (the communicator's collectives and groups), by which a failure's
/// call is named across ranks (an index into this table).
pub(crate) const CALL_NAMES: [&str; 10] = [
    "all_reduce (ring)",
    "all_reduce (two-shot)",
    "all_gather",
    "reduce_scatter",
    "reduce",
    "broadcast",
    "all_to_all",
    "send",
    "recv",
    "send/recv group",
];

/// One warp's status record.
pub(crate) type Record = [u32; STATUS_WORDS];

/// Something a call runs with that knows when the call has finished.
pub(crate) trait Finish {
    /// The call's status records once it has finished, `None` while it runs; with `block`,
    /// waits for it. An error: the run itself failed (e.g. a CUDA error).
    fn poll(&self, block: bool) -> Result<Option<Vec<Record>>>;
    /// Once `poll` has returned the records: the device time of the plan's upload (`None`
    /// when none was needed) and of the kernel, if this slot measures them.
    fn times(&self) -> Option<(Option<Duration>, Duration)> {
        None
    }
}

/// Where the time of one finished call went, as the device measured it ([`Config::profile`];
/// [`Communicator::call_times`]).
///
/// [`Config::profile`]: super::Config::profile
/// [`Communicator::call_times`]: super::Communicator::call_times
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CallTime {
    /// The call (`"all_reduce (ring)"`, `"send/recv group"`, ...).
    pub name: &'static str,
    /// Copying the call's plan (its work and channel descriptors) to the GPU, between CUDA
    /// events on the call's stream; `None` when the slot already held the same plan (a call
    /// repeated with the same buffers and counts) or on the simulator.
    pub upload: Option<Duration>,
    /// The collective kernel from its launch to its end (CUDA events on the stream: includes
    /// the launch latency and every wait for the peers); on the simulator, the run's wall time.
    pub kernel: Duration,
}

/// Why a call failed.
#[derive(Debug)]
pub(crate) enum Failed {
    /// Its run failed (a CUDA error, a simulator panic).
    Run(Error),
    /// Warp `warp` of call `name`, the first whose record says so.
    Warp {
        name: &'static str,
        warp: usize,
        failure: Failure,
    },
}

/// How long a check may wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wait {
    /// Not at all: the calls that have finished are checked.
    No,
    /// Until every call has finished.
    All,
}

/// Where an enqueued call's outcome is.
enum Run {
    /// It ran at enqueue: its records, or why it could not run; and how long it ran.
    Done(Result<Vec<Record>>, Duration),
    /// It runs with this slot.
    Slot(usize),
}

struct Call {
    name: &'static str,
    run: Run,
    /// Auto's checks time this call ([`InFlight::take_realized`]).
    checked: Option<Checked>,
}

/// The enqueued calls (see the module docs).
pub(crate) struct InFlight<S> {
    calls: VecDeque<Call>,
    /// One per call that may be in flight on a GPU, used in turn (none on the simulator).
    slots: Vec<S>,
    /// The slot the next launch uses.
    next: usize,
    /// The first failure found and not yet returned by a check.
    found: Option<Failed>,
    /// The times of the calls checked since the last [`InFlight::take_times`], when profiling.
    times: Option<Vec<CallTime>>,
    /// The kernel times of the calls Auto's checks time, finished since the last
    /// [`InFlight::take_realized`].
    realized: Vec<(Checked, Duration)>,
}

impl<S: Finish> InFlight<S> {
    /// No calls, with these slots; with `profile`, keeping each checked call's [`CallTime`].
    pub fn new(slots: Vec<S>, profile: bool) -> InFlight<S> {
        InFlight {
            calls: VecDeque::new(),
            slots,
            next: 0,
            found: None,
            times: profile.then(Vec::new),
            realized: Vec::new(),
        }
    }

    /// The kernel times of the timed calls ([`InFlight::time_last`]) finished since the last
    /// take, oldest first (a call whose slot could not time it is left out).
    pub fn take_realized(&mut self) -> Vec<(Checked, Duration)> {
        std::mem::take(&mut self.realized)
    }

    /// Marks the call enqueued last as timed for Auto's checks (its slot must have been asked
    /// to time it).
    pub fn time_last(&mut self, checked: Checked) {
        if let Some(call) = self.calls.back_mut() {
            call.checked = Some(checked);
        }
    }

    /// The times of the calls checked since the last take, oldest first (none unless profiling).
    pub fn take_times(&mut self) -> Vec<CallTime> {
        self.times.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Whether every enqueued call has been checked.
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// Records call `name`, which ran at enqueue for `took`.
    pub fn ran(&mut self, name: &'static str, outcome: Result<Vec<Record>>, took: Duration) {
        self.calls.push_back(Call {
            name,
            run: Run::Done(outcome, took),
            checked: None,
        });
    }

    /// Launches call `name` with the next slot (`launch` enqueues it there); first waits for
    /// the call that slot ran, if it is still pending, and checks it. With no slots (the
    /// simulator) this is an [`Error::InvalidArgument`].
    pub fn launch(&mut self, name: &'static str, launch: impl FnOnce(&mut S) -> Result<()>) -> Result<()> {
        let next = self.next;
        if next >= self.slots.len() {
            return Err(Error::InvalidArgument(
                "a launch on a communicator without call slots".into(),
            ));
        }
        while self.calls.iter().any(|c| matches!(c.run, Run::Slot(s) if s == next)) {
            if !self.settle_oldest(true) {
                return Err(Error::Cuda {
                    call: "cuEventSynchronize",
                    message: "a call slot was still in use after waiting for it".into(),
                });
            }
        }
        launch(&mut self.slots[next])?;
        self.calls.push_back(Call {
            name,
            run: Run::Slot(next),
            checked: None,
        });
        self.next = (next + 1) % self.slots.len();
        Ok(())
    }

    /// Checks the enqueued calls oldest first (the finished ones, or waiting for all); returns
    /// the first failure found since the last check that returned one.
    pub fn check(&mut self, wait: Wait) -> Option<Failed> {
        while !self.calls.is_empty() && self.settle_oldest(wait == Wait::All) {}
        self.found.take()
    }

    /// Waits for every call, for `patience` and then, after `raise` (which raises the abort
    /// word: kernels stop at their next wait), until they have stopped. Failures are dropped.
    pub fn drain(&mut self, patience: Duration, raise: impl FnOnce()) {
        let start = Instant::now();
        while !self.calls.is_empty() && start.elapsed() < patience {
            self.check(Wait::No);
            if !self.calls.is_empty() {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        if !self.calls.is_empty() {
            raise();
            self.check(Wait::All);
        }
        self.found = None;
    }

    /// Checks the oldest call if it has finished (waits for it with `block`); whether it had.
    fn settle_oldest(&mut self, block: bool) -> bool {
        let Some(call) = self.calls.front() else {
            return false;
        };
        let polled = match call.run {
            Run::Done(..) => None,
            Run::Slot(s) => match self.slots[s].poll(block) {
                Ok(None) => return false,
                Ok(Some(records)) => Some((Ok(records), self.slots[s].times())),
                Err(e) => Some((Err(e), None)),
            },
        };
        let Some(Call { name, run, checked }) = self.calls.pop_front() else {
            return false;
        };
        let (outcome, times) = match run {
            Run::Done(outcome, took) => (outcome, Some((None, took))),
            Run::Slot(_) => polled.unwrap_or_else(|| (Ok(Vec::new()), None)),
        };
        if let (Some(kept), Some((upload, kernel))) = (self.times.as_mut(), times) {
            kept.push(CallTime { name, upload, kernel });
        }
        if let (Some(checked), Some((_, kernel)), Ok(_)) = (checked, times, &outcome) {
            self.realized.push((checked, kernel));
        }
        let failed = match outcome {
            Err(e) => Some(Failed::Run(e)),
            Ok(records) => records
                .iter()
                .enumerate()
                .filter_map(|(warp, r)| {
                    Failure::from_record(*r, "(reason not recorded)").map(|failure| (warp, failure))
                })
                .min_by_key(|(warp, f)| (consequence(f), *warp))
                .map(|(warp, failure)| Failed::Warp { name, warp, failure }),
        };
        if self.found.is_none() {
            self.found = failed;
        }
        true
    }
}

/// How much of a consequence of another failure `f` may be, for picking a call's root cause
/// among its warps' records: 0 a failure of its own (a rejected frame, a bad descriptor), 1 a
/// timeout (a peer that stopped, or a sibling warp that stopped feeding it), 2 an abort (some
/// other failure raised the word).
pub(crate) fn consequence(f: &Failure) -> u8 {
    match f.error {
        ConnError::Aborted => 2,
        ConnError::Timeout(_) => 1,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::{Cell, RefCell};
    use std::rc::Rc;
    use std::sync::atomic::{AtomicU32, Ordering};
    use zipcoll_primitives::conn::Wait as FifoWait;

    /// A record that says "timed out waiting for data at step 7".
    fn timeout_record() -> Record {
        Failure {
            step: 7,
            error: ConnError::Timeout(FifoWait::Data),
        }
        .record()
    }

    /// Every blocking wait for an unfinished call: (slot, its launch number).
    type Waits = Rc<RefCell<Vec<(usize, usize)>>>;

    /// A slot whose call finishes when the test says (or when waited for).
    struct Fake {
        id: usize,
        /// Launches so far; the last one's records.
        launches: Cell<usize>,
        records: Cell<Option<Record>>,
        done: Cell<bool>,
        waits: Waits,
        /// The kernel time the slot measured, if it timed its call.
        took: Cell<Option<Duration>>,
    }

    impl Finish for Fake {
        fn times(&self) -> Option<(Option<Duration>, Duration)> {
            self.took.get().map(|t| (None, t))
        }

        fn poll(&self, block: bool) -> Result<Option<Vec<Record>>> {
            if block && !self.done.get() {
                self.waits.borrow_mut().push((self.id, self.launches.get()));
                self.done.set(true);
            }
            Ok(self.done.get().then(|| vec![self.records.get().unwrap_or_default(); 2]))
        }
    }

    fn ring(n: usize) -> (InFlight<Fake>, Waits) {
        let waits = Waits::default();
        let slots = (0..n)
            .map(|id| Fake {
                id,
                launches: Cell::new(0),
                records: Cell::new(None),
                done: Cell::new(true),
                waits: Rc::clone(&waits),
                took: Cell::new(None),
            })
            .collect();
        (InFlight::new(slots, false), waits)
    }

    /// A launch that makes the slot busy with `records`.
    fn busy(records: Option<Record>) -> impl FnOnce(&mut Fake) -> Result<()> {
        move |s: &mut Fake| {
            assert!(s.done.get(), "slot {} launched while its call runs", s.id);
            s.launches.set(s.launches.get() + 1);
            s.records.set(records);
            s.done.set(false);
            Ok(())
        }
    }

    #[test]
    fn more_calls_than_slots_wait_for_the_oldest_in_turn() {
        let (mut f, waits) = ring(2);
        for _ in 0..5 {
            f.launch("c", busy(None)).unwrap();
        }
        // calls 3, 4, 5 each waited for the call two before them: slot 0, 1, 0
        assert_eq!(*waits.borrow(), vec![(0, 1), (1, 1), (0, 2)]);
        assert!(!f.is_empty());
        assert!(f.check(Wait::No).is_none());
        assert!(!f.is_empty(), "two calls still run");
        assert!(f.check(Wait::All).is_none());
        assert!(f.is_empty());
        assert_eq!(waits.borrow().len(), 5);
    }

    #[test]
    fn a_check_stops_at_the_first_unfinished_call() {
        let (mut f, _) = ring(3);
        f.launch("a", busy(None)).unwrap();
        f.launch("b", busy(Some(timeout_record()))).unwrap();
        f.slots[1].done.set(true);
        // b has finished but a has not: nothing is checked
        assert!(f.check(Wait::No).is_none());
        assert_eq!(f.calls.len(), 2);
        f.slots[0].done.set(true);
        let Some(Failed::Warp { name, warp, failure }) = f.check(Wait::No) else {
            panic!("b's failure")
        };
        assert_eq!((name, warp, failure.step), ("b", 0, 7));
        assert!(f.is_empty());
    }

    #[test]
    fn a_failure_found_making_room_is_returned_once_by_the_next_check() {
        let (mut f, _) = ring(1);
        f.launch("first", busy(Some(timeout_record()))).unwrap();
        f.launch("second", busy(Some(timeout_record()))).unwrap();
        let found = f.check(Wait::All);
        assert!(matches!(found, Some(Failed::Warp { name: "first", .. })), "{found:?}");
        assert!(f.check(Wait::All).is_none(), "returned once");
    }

    /// The root cause among a call's warps: a warp's own failure (a rejected frame) over a
    /// lower-indexed sibling's timeout or abort, a timeout over an abort.
    #[test]
    fn a_call_reports_its_root_cause_not_the_lowest_failing_warp() {
        let (mut f, _) = ring(0);
        let aborted = Failure {
            step: 2,
            error: ConnError::Aborted,
        }
        .record();
        let rejected = Failure {
            step: 5,
            error: ConnError::FrameLength { expected: 4, found: 3 },
        }
        .record();
        f.ran(
            "c",
            Ok(vec![[0; STATUS_WORDS], aborted, timeout_record(), rejected]),
            Duration::ZERO,
        );
        let found = f.check(Wait::No);
        assert!(
            matches!(
                found,
                Some(Failed::Warp {
                    warp: 3,
                    failure: Failure { step: 5, .. },
                    ..
                })
            ),
            "{found:?}"
        );
        f.ran("d", Ok(vec![aborted, timeout_record()]), Duration::ZERO);
        let found = f.check(Wait::No);
        assert!(matches!(found, Some(Failed::Warp { warp: 1, .. })), "{found:?}");
    }

    #[test]
    fn simulated_runs_report_at_the_next_check() {
        let (mut f, _) = ring(0);
        f.ran("ok", Ok(vec![[0; STATUS_WORDS]; 3]), Duration::ZERO);
        f.ran("panicked", Err(Error::Sim("boom".into())), Duration::ZERO);
        f.ran("late", Ok(vec![timeout_record()]), Duration::ZERO);
        let found = f.check(Wait::No);
        assert!(
            matches!(&found, Some(Failed::Run(Error::Sim(m))) if m == "boom"),
            "{found:?}"
        );
        assert!(f.is_empty());
        assert!(f.launch("x", busy(None)).is_err(), "no slots on the simulator");
    }

    #[test]
    fn the_calls_autos_checks_time_report_their_kernel_times_once() {
        use super::super::checks::CallShape;
        use zipcoll_device::dtype::DType;
        let checked = |count, coded| Checked {
            shape: CallShape {
                name: "all_gather",
                dtype: DType::Bf16,
                count,
            },
            coded,
        };
        let (mut f, _) = ring(3);
        let ms = Duration::from_millis;
        // a timed call, a call not marked, a marked call its slot did not time
        f.slots[0].took.set(Some(ms(3)));
        f.launch("a", busy(None)).unwrap();
        f.time_last(checked(1, true));
        f.slots[1].took.set(Some(ms(4)));
        f.launch("b", busy(None)).unwrap();
        f.launch("c", busy(None)).unwrap();
        f.time_last(checked(2, false));
        assert!(f.check(Wait::All).is_none());
        assert_eq!(f.take_realized(), [(checked(1, true), ms(3))]);
        assert!(f.take_realized().is_empty(), "taken once");
        // on the simulator, the run's wall time; a run that failed is left out
        let (mut sim, _) = ring(0);
        sim.ran("ok", Ok(vec![[0; STATUS_WORDS]]), ms(5));
        sim.time_last(checked(3, false));
        sim.ran("failed", Err(Error::Sim("boom".into())), ms(6));
        sim.time_last(checked(4, true));
        sim.check(Wait::No);
        assert_eq!(sim.take_realized(), [(checked(3, false), ms(5))]);
    }

    #[test]
    fn drain_raises_the_abort_word_only_for_calls_that_outlast_it() {
        let (mut f, _) = ring(2);
        let abort = AtomicU32::new(0);
        f.launch("a", busy(None)).unwrap();
        f.slots[0].done.set(true);
        f.drain(Duration::from_millis(50), || abort.store(1, Ordering::Release));
        assert_eq!(abort.load(Ordering::Acquire), 0);
        assert!(f.is_empty());
        f.launch("b", busy(None)).unwrap();
        f.drain(Duration::from_millis(20), || abort.store(1, Ordering::Release));
        assert_eq!(abort.load(Ordering::Acquire), 1);
        assert!(f.is_empty());
    }
}
