//! Pacing: the per-peer token bucket of the rate limit, and how proxies wait for work.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The bytes a bucket may hold: a short burst (4 ms of the rate, at least 64 KiB), so that the
/// rate holds over any stretch longer than a few milliseconds (a 64 MiB transfer under 500 MiB/s
/// starts with 2 MiB of burst: 3% above the limit), while a writer that paused for less than
/// that loses none of its share.
fn burst_bytes(bytes_per_s: u64) -> f64 {
    (bytes_per_s as f64 / 250.0).max(64.0 * 1024.0)
}

/// A token bucket of bytes, shared by the writer threads of one peer. Tokens may go negative
/// ("debt"): a writer takes what its piece needs and waits the debt out (until the instant
/// [`TokenBucket::take`] returns), so concurrent writers queue up fairly and the long-run rate
/// is exact: `n` bytes taken back to back from a full bucket are due at `(n - burst) / rate`.
pub(super) struct TokenBucket {
    bytes_per_s: f64,
    burst: f64,
    state: Mutex<Bucket>,
}

struct Bucket {
    tokens: f64,
    refilled: Instant,
}

impl TokenBucket {
    /// A full bucket for `bytes_per_s`, as of `now`.
    pub fn new(bytes_per_s: u64, now: Instant) -> TokenBucket {
        let burst = burst_bytes(bytes_per_s);
        TokenBucket {
            bytes_per_s: bytes_per_s.max(1) as f64,
            burst,
            state: Mutex::new(Bucket {
                tokens: burst,
                refilled: now,
            }),
        }
    }

    /// Takes `bytes` tokens at `now` (an earlier `now` than a previous call's counts as that
    /// one); returns the instant from which the caller may send them (`now` if there were
    /// enough).
    pub fn take(&self, bytes: u64, now: Instant) -> Instant {
        let mut b = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let now = now.max(b.refilled);
        let earned = now.duration_since(b.refilled).as_secs_f64() * self.bytes_per_s;
        b.tokens = (b.tokens + earned).min(self.burst) - bytes as f64;
        b.refilled = now;
        if b.tokens >= 0.0 {
            return now;
        }
        let wait = Duration::try_from_secs_f64(-b.tokens / self.bytes_per_s).unwrap_or(Duration::MAX);
        now.checked_add(wait).unwrap_or(now + Duration::from_secs(1 << 30))
    }
}

/// Below this much time left, [`pace_step`] yields instead of sleeping (a sleep overshoots by
/// tens of microseconds, which at a few hundred MB/s is a few percent of a 64 KiB piece).
const SPIN_BELOW: Duration = Duration::from_micros(200);

/// What a thread waiting for an instant does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum PaceStep {
    /// The instant has come.
    Go,
    /// Sleep this long (then ask again).
    Sleep(Duration),
    /// Yield the CPU once (then ask again).
    Yield,
}

/// How a rate-limited writer waits for the instant its bucket named: sleeps for the bulk of
/// it (at most `slice` at a time, so that it rechecks its flags), then yields the last
/// [`SPIN_BELOW`], so that it sends on time.
pub(super) fn pace_step(due: Instant, now: Instant, slice: Duration) -> PaceStep {
    let left = due.saturating_duration_since(now);
    if left.is_zero() {
        PaceStep::Go
    } else if left <= SPIN_BELOW {
        PaceStep::Yield
    } else {
        PaceStep::Sleep((left - SPIN_BELOW / 2).min(slice))
    }
}

/// A proxy with work pending (or found within this long) spins: it yields instead of
/// sleeping, so the next frame or credit goes out at once.
const SPIN_FOR: Duration = Duration::from_millis(1);
/// The first sleep of an idle proxy.
const FIRST_SLEEP: Duration = Duration::from_micros(20);
/// The longest sleep of an idle proxy: the first frame after a pause may wait this long, and
/// an idle proxy costs about 2000 wake-ups a second.
const MAX_SLEEP: Duration = Duration::from_micros(500);

/// How a proxy waits for work: while work is pending (a frame published and not yet sent, as
/// the caller says) or for [`SPIN_FOR`] after the last work it spins (yields the CPU and
/// looks again: simulated kernels share the cores); after that it sleeps, doubling from
/// [`FIRST_SLEEP`] up to [`MAX_SLEEP`], so that an idle proxy costs little CPU.
pub(super) struct Backoff {
    /// When work was last found (or the back-off made).
    worked: Instant,
    sleep: Duration,
}

impl Backoff {
    /// A back-off that starts by spinning.
    pub fn new() -> Backoff {
        Backoff {
            worked: Instant::now(),
            sleep: FIRST_SLEEP,
        }
    }

    /// Work was found: the next waits spin again.
    pub fn reset(&mut self) {
        self.reset_at(Instant::now());
    }

    fn reset_at(&mut self, now: Instant) {
        self.worked = now;
        self.sleep = FIRST_SLEEP;
    }

    /// Nothing to do now; `pending`: work is waiting on something other than this proxy (a
    /// published frame without credit, say). Yields or sleeps (see the type's docs).
    pub fn snooze(&mut self, pending: bool) {
        match self.next_wait(Instant::now(), pending) {
            None => std::thread::yield_now(),
            Some(d) => std::thread::sleep(d),
        }
    }

    /// The wait at `now`: `None` to spin (yield once), or a sleep.
    fn next_wait(&mut self, now: Instant, pending: bool) -> Option<Duration> {
        if pending {
            self.reset_at(now);
            return None;
        }
        if now.saturating_duration_since(self.worked) < SPIN_FOR {
            return None;
        }
        let d = self.sleep;
        self.sleep = (self.sleep * 2).min(MAX_SLEEP);
        Some(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// `a - b` is `d`, to within a microsecond (the bucket computes in floating point).
    fn after(a: Instant, b: Instant, d: Duration) -> bool {
        a.duration_since(b).abs_diff(d) < Duration::from_micros(1)
    }

    #[test]
    fn a_bucket_allows_a_burst_then_charges_the_rate_exactly() {
        let t0 = Instant::now();
        let b = TokenBucket::new(1_000_000, t0);
        // the burst (64 KiB) goes at once
        assert_eq!(b.take(60_000, t0), t0);
        // 1 MB more at 1 MB/s: due when the debt (1 MB less the 5536 bytes left) is earned
        let due = b.take(1_000_000, t0);
        assert!(after(due, t0, Duration::from_micros(994_464)), "{:?}", due - t0);
        // a second taker queues behind the first, by its own bytes
        assert!(after(b.take(100_000, t0), due, 100 * MS));
        // time pays the debt: 2 s later the bucket is full again (capped at the burst)
        let later = t0 + 2000 * MS;
        assert_eq!(b.take(65_536, later), later);
        assert!(after(b.take(1_000, later), later, MS));
    }

    /// The long-run rate: 64 MiB in 64 KiB pieces, each sent when due, takes
    /// `(bytes - burst) / rate` to within a microsecond per piece, under a 500 MiB/s limit, so
    /// it reaches the limit to within the burst's share.
    #[test]
    fn a_bucket_holds_the_rate_over_a_long_transfer() {
        let rate = 500u64 << 20;
        let t0 = Instant::now();
        let b = TokenBucket::new(rate, t0);
        let (piece, total) = (64u64 << 10, 64u64 << 20);
        let mut now = t0;
        for _ in 0..total / piece {
            now = b.take(piece, now);
        }
        let exact = (total as f64 - burst_bytes(rate)) / rate as f64;
        let took = now.duration_since(t0).as_secs_f64();
        assert!(
            (took - exact).abs() < 1e-6 * (total / piece) as f64,
            "{took} s, exact {exact} s"
        );
        // the burst at the start keeps the whole transfer within 5% of the limit
        let reached = total as f64 / took;
        assert!(reached < 1.05 * rate as f64, "{reached} B/s under a limit of {rate}");
        // and a writer that is late does not make up for it beyond the burst
        let late = now + 1000 * MS;
        assert_eq!(b.take(burst_bytes(rate) as u64, late), late);
        assert!(b.take(piece, late) > late);
    }

    #[test]
    fn pacing_sleeps_the_bulk_and_yields_the_rest() {
        let t0 = Instant::now();
        let slice = 10 * MS;
        assert_eq!(pace_step(t0, t0, slice), PaceStep::Go);
        assert_eq!(pace_step(t0, t0 + MS, slice), PaceStep::Go);
        assert_eq!(pace_step(t0 + Duration::from_micros(150), t0, slice), PaceStep::Yield);
        assert_eq!(
            pace_step(t0 + MS, t0, slice),
            PaceStep::Sleep(Duration::from_micros(900))
        );
        assert_eq!(pace_step(t0 + 50 * MS, t0, slice), PaceStep::Sleep(slice));
    }

    #[test]
    fn a_proxy_spins_while_work_is_pending_and_sleeps_only_when_idle() {
        let t0 = Instant::now();
        let mut b = Backoff::new();
        b.reset_at(t0);
        // just after work: spin
        assert_eq!(b.next_wait(t0 + MS / 2, false), None);
        // pending work keeps it spinning however long it waits
        assert_eq!(b.next_wait(t0 + 50 * MS, true), None);
        assert_eq!(b.next_wait(t0 + 50 * MS + MS / 2, false), None);
        // idle for a millisecond: sleeps that double up to the cap
        let idle = t0 + 52 * MS;
        let sleeps: Vec<_> = (0..8).map(|_| b.next_wait(idle, false)).collect();
        let us = |n| Some(Duration::from_micros(n));
        assert_eq!(
            sleeps,
            [us(20), us(40), us(80), us(160), us(320), us(500), us(500), us(500)]
        );
        // work again: spin again
        b.reset_at(idle);
        assert_eq!(b.next_wait(idle + MS / 2, false), None);
    }
}
