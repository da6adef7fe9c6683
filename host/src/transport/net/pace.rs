//! Pacing: the per-peer token bucket of the rate limit, and the back-off of idle proxies.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The bytes a bucket may hold: a short burst (10 ms of the rate, at least 64 KiB), so that
/// the rate holds over any stretch longer than a few milliseconds.
fn burst_bytes(bytes_per_s: u64) -> f64 {
    (bytes_per_s as f64 / 100.0).max(64.0 * 1024.0)
}

/// A token bucket of bytes, shared by the writer threads of one peer's sockets. Tokens may go
/// negative ("debt"): a writer takes what its message needs and waits the debt out, so
/// concurrent writers queue up fairly and the long-run rate is exact.
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
    /// A full bucket for `bytes_per_s`.
    pub fn new(bytes_per_s: u64) -> TokenBucket {
        let burst = burst_bytes(bytes_per_s);
        TokenBucket {
            bytes_per_s: bytes_per_s.max(1) as f64,
            burst,
            state: Mutex::new(Bucket {
                tokens: burst,
                refilled: Instant::now(),
            }),
        }
    }

    /// Takes `bytes` tokens; returns how long the caller must wait before sending them.
    pub fn take(&self, bytes: u64) -> Duration {
        let mut b = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        let earned = now.duration_since(b.refilled).as_secs_f64() * self.bytes_per_s;
        b.tokens = (b.tokens + earned).min(self.burst) - bytes as f64;
        b.refilled = now;
        if b.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::try_from_secs_f64(-b.tokens / self.bytes_per_s).unwrap_or(Duration::MAX)
        }
    }
}

/// Polls before an idle proxy starts sleeping.
const SPINS: u32 = 64;
/// The first sleep of an idle proxy.
const FIRST_SLEEP: Duration = Duration::from_micros(5);
/// The longest sleep of a proxy that was busy recently (the latency it may add to the next
/// frame).
const MAX_SLEEP: Duration = Duration::from_micros(100);
/// After this long without work a proxy sleeps [`DEEP_SLEEP`] at a time.
const DEEP_AFTER: Duration = Duration::from_millis(20);
/// The sleep of a proxy idle for [`DEEP_AFTER`]: the first frame after a pause may wait this
/// long, and an idle proxy costs a few hundred wake-ups a second.
const DEEP_SLEEP: Duration = Duration::from_micros(500);

/// How a proxy waits for work: a few spins, then sleeps that double up to [`MAX_SLEEP`], and
/// [`DEEP_SLEEP`] once nothing happened for [`DEEP_AFTER`], so that idle proxies cost little
/// CPU (simulated kernels share the cores).
pub(super) struct Backoff {
    spins: u32,
    sleep: Duration,
    /// When the first sleep of this idle stretch began.
    idle_since: Option<Instant>,
}

impl Backoff {
    /// A back-off that starts by spinning.
    pub fn new() -> Backoff {
        Backoff {
            spins: 0,
            sleep: FIRST_SLEEP,
            idle_since: None,
        }
    }

    /// Work was found: the next wait spins again.
    pub fn reset(&mut self) {
        *self = Backoff::new();
    }

    /// Nothing to do: waits a little, longer the longer nothing happens.
    pub fn snooze(&mut self) {
        if self.spins < SPINS {
            self.spins += 1;
            std::hint::spin_loop();
            return;
        }
        let since = *self.idle_since.get_or_insert_with(Instant::now);
        if since.elapsed() >= DEEP_AFTER {
            std::thread::sleep(DEEP_SLEEP);
            return;
        }
        std::thread::sleep(self.sleep);
        self.sleep = (self.sleep * 2).min(MAX_SLEEP);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_allows_a_burst_then_charges_the_rate() {
        let b = TokenBucket::new(1_000_000);
        // the burst (64 KiB) goes at once
        assert_eq!(b.take(60_000), Duration::ZERO);
        // 1 MB more at 1 MB/s: about a second of debt
        let wait = b.take(1_000_000);
        assert!(wait >= Duration::from_millis(900), "{wait:?}");
        // a second taker queues behind the first
        assert!(b.take(100_000) > wait);
    }
}
