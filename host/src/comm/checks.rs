//! Auto's check of its choices against the calls' realized times on a GPU. The cost model
//! predicts one batch over one link; a collective's time also holds its hops, its peers'
//! waits and the machine's load, and the model can be wrong for a collective or a link
//! (2026-12-05, one H100, 2 ranks over NET: coded all_gather of 64 MiB at 0.82x of RAW where
//! the model chose ExpAns). So each call of a shape (the call, dtype and count) that the model
//! would code is also timed (the kernel, between CUDA events), and the shape's realized times
//! decide:
//!
//! | a call whose model codes, and of its shape            | sends                                  |
//! |-------------------------------------------------------|----------------------------------------|
//! | no coded call timed yet                               | coded                                  |
//! | a coded call timed, no RAW one                        | RAW (once, to time it)                 |
//! | both timed                                            | the faster; every [`RECHECK`]th call the other, timed again |
//!
//! Opt-in (`Config::auto_checks`, `ZIPCOLL_AUTO_CHECKS=1`): on one H100 (2026-12-06, 2 ranks
//! over NET, 64 and 256 MiB bf16) Auto with these checks sent RAW in every timed call where
//! ExpAns ran all_reduce, all_gather and send/recv 1.4-2.3x faster than RAW, so a realized time
//! of one rank's kernel is not yet a sound judge (each rank decides alone, and a call's kernel
//! time holds its peer's choice too).
//!
//! A call the model sends RAW sends RAW. Times are averaged (each new one weighs half), so a
//! slower link or a different input moves the choice within a few re-checks. [`SHAPES`] shapes
//! are kept, the least recently used evicted. The simulator does not check (its coders run on
//! the CPU, and Auto's codecs must run there for the tests).

use super::samples::insert_evicting;
use std::time::Duration;
use zipcoll_device::dtype::DType;

/// Shapes whose times are kept.
pub(crate) const SHAPES: usize = 32;

/// Calls of a shape between two timings of the slower choice.
pub(crate) const RECHECK: u32 = 16;

/// What Auto's checks tell calls apart by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CallShape {
    /// The call's name (`CALL_NAMES`).
    pub name: &'static str,
    pub dtype: DType,
    /// Elements this rank sends from.
    pub count: usize,
}

/// A call timed for the checks: its shape and whether it sent coded frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Checked {
    pub shape: CallShape,
    pub coded: bool,
}

/// The realized times of the shapes seen (see the module docs).
#[derive(Default)]
pub(crate) struct Checks {
    shapes: Vec<Times>,
    /// Counts choices; a shape's `used` is the count at its last.
    clock: u64,
}

struct Times {
    shape: CallShape,
    /// Average seconds of the RAW calls timed and of the coded ones.
    raw_s: Option<f64>,
    coded_s: Option<f64>,
    /// Calls of the shape since the slower choice was last sent.
    since_slower: u32,
    used: u64,
}

impl Checks {
    /// Whether a call of `shape` whose model chose a codec sends it coded (see the module
    /// docs).
    pub fn codes(&mut self, shape: CallShape) -> bool {
        self.clock += 1;
        let clock = self.clock;
        let times = self.times(shape);
        times.used = clock;
        let (Some(raw_s), Some(coded_s)) = (times.raw_s, times.coded_s) else {
            return times.coded_s.is_none();
        };
        let coded_faster = coded_s <= raw_s;
        times.since_slower += 1;
        if times.since_slower >= RECHECK {
            times.since_slower = 0;
            return !coded_faster;
        }
        coded_faster
    }

    /// A timed call finished in `took`.
    pub fn record(&mut self, checked: Checked, took: Duration) {
        let times = self.times(checked.shape);
        let seconds = took.as_secs_f64();
        let average = match checked.coded {
            true => &mut times.coded_s,
            false => &mut times.raw_s,
        };
        *average = Some(average.map_or(seconds, |a| (a + seconds) / 2.0));
    }

    /// The times of `shape`, new (the least recently used evicted when full) if unknown.
    fn times(&mut self, shape: CallShape) -> &mut Times {
        let i = match self.shapes.iter().position(|t| t.shape == shape) {
            Some(i) => i,
            None => {
                let fresh = Times {
                    shape,
                    raw_s: None,
                    coded_s: None,
                    since_slower: 0,
                    used: self.clock,
                };
                insert_evicting(&mut self.shapes, SHAPES, |t| t.used, fresh)
            }
        };
        &mut self.shapes[i]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHAPE: CallShape = CallShape {
        name: "all_gather",
        dtype: DType::Bf16,
        count: 1 << 24,
    };

    /// Runs `calls` calls of `shape` as the checks choose, each taking `coded_ms` or `raw_ms`
    /// (per call index); returns what each sent.
    fn run(checks: &mut Checks, shape: CallShape, calls: usize, took_ms: impl Fn(usize, bool) -> u64) -> Vec<bool> {
        (0..calls)
            .map(|i| {
                let coded = checks.codes(shape);
                checks.record(Checked { shape, coded }, Duration::from_millis(took_ms(i, coded)));
                coded
            })
            .collect()
    }

    #[test]
    fn coding_that_loses_is_dropped_after_one_raw_call_and_rechecked() {
        let mut checks = Checks::default();
        // coded 10 ms, RAW 8 ms: code once, RAW once, then RAW but every RECHECK-th call
        let sent = run(
            &mut checks,
            SHAPE,
            2 + 2 * RECHECK as usize,
            |_, coded| if coded { 10 } else { 8 },
        );
        assert_eq!(sent[..3], [true, false, false]);
        let coded_calls: Vec<usize> = (0..sent.len()).filter(|&i| sent[i]).collect();
        assert_eq!(coded_calls, [0, 1 + RECHECK as usize, 1 + 2 * RECHECK as usize]);
    }

    #[test]
    fn coding_that_wins_stays_with_a_raw_call_every_recheck() {
        let mut checks = Checks::default();
        let sent = run(
            &mut checks,
            SHAPE,
            2 + 2 * RECHECK as usize,
            |_, coded| if coded { 6 } else { 8 },
        );
        assert_eq!(sent[..3], [true, false, true]);
        let raw_calls = sent.iter().filter(|c| !**c).count();
        assert_eq!(raw_calls, 3, "{sent:?}");
    }

    #[test]
    fn a_link_that_slows_down_turns_the_choice_within_a_few_rechecks() {
        let mut checks = Checks::default();
        // coded wins (6 against 8 ms) for 40 calls, then coding slows to 12 ms
        let sent = run(&mut checks, SHAPE, 40 + 3 * RECHECK as usize, |i, coded| {
            match (coded, i < 40) {
                (true, true) => 6,
                (true, false) => 12,
                (false, _) => 8,
            }
        });
        // from the first call after the slow one on, coded calls are the re-checks alone
        let coded_after: Vec<usize> = (41..sent.len()).filter(|&i| sent[i]).collect();
        assert!(coded_after.len() <= 3, "{sent:?}");
        assert!(
            coded_after.windows(2).all(|w| w[1] - w[0] == RECHECK as usize),
            "{coded_after:?}"
        );
        assert!(
            sent[..40].iter().filter(|c| !**c).count() <= 3,
            "coded while it won: {sent:?}"
        );
    }

    #[test]
    fn shapes_are_apart_and_at_most_shapes_are_kept() {
        let mut checks = Checks::default();
        run(&mut checks, SHAPE, 2, |_, coded| if coded { 10 } else { 8 });
        // another count of the same call starts with a coded call of its own
        let other = CallShape { count: 7, ..SHAPE };
        assert!(checks.codes(other));
        assert!(!checks.codes(SHAPE), "SHAPE's RAW is faster");
        for count in 0..SHAPES {
            checks.codes(CallShape { count, ..SHAPE });
        }
        assert_eq!(checks.shapes.len(), SHAPES);
        // SHAPE, the least recently used, was evicted: it starts over with a coded call
        assert!(checks.shapes.iter().all(|t| t.shape != SHAPE));
        assert!(checks.codes(SHAPE));
    }
}
