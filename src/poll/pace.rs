//! The describe budget under a rate limit: the poller learns the rate the API allows from the
//! describes that got through while it was throttling, and caps each refresh's describes to what
//! that rate allows until the next one, instead of being throttled every time. Pure, so the
//! policy is unit-tested without a network.

use std::time::Duration;

/// What the describes of one refresh met on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Phase {
    /// Attempts answered (not throttled, not failed).
    pub ok: u32,
    /// Attempts answered HTTP 429.
    pub throttled: u32,
    pub elapsed: Duration,
}

/// Raise of the learned rate after a refresh without throttling (probing for a higher limit).
const PROBE: f64 = 1.25;
/// Phases shorter than this say nothing about a rate.
const MIN_PHASE: Duration = Duration::from_millis(200);

/// The learned describe rate.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Pace {
    /// Describes a second the API allows; `None` until a describe was throttled.
    limit: Option<f64>,
    /// Describes a second the last phase of any length managed (without a limit, its latency
    /// and the concurrency bound it).
    throughput: Option<f64>,
    /// Refreshes in a row whose describes met no throttling.
    quiet: u32,
}

/// After this many refreshes in a row without a 429 the learned limit is dropped: throttling
/// that stopped (an outage of the API's patience, random 429s) must not slow the poller for
/// good, and a real limit is met again, and learned again, by the next backlog.
const QUIET_FORGET: u32 = 3;

impl Pace {
    /// Learns from one refresh's describes.
    pub fn observe(&mut self, phase: Phase) {
        if phase.ok == 0 || phase.elapsed.is_zero() {
            return;
        }
        let rate = phase.ok as f64 / phase.elapsed.as_secs_f64();
        self.throughput = Some(rate);
        if phase.throttled == 0 {
            self.quiet = self.quiet.saturating_add(1);
            if self.quiet >= QUIET_FORGET {
                self.limit = None;
            }
        } else {
            self.quiet = 0;
        }
        if phase.elapsed < MIN_PHASE {
            return;
        }
        if phase.throttled > 0 {
            self.limit = Some(rate);
        } else if let Some(limit) = self.limit.as_mut() {
            *limit *= PROBE;
        }
    }

    /// The rate learned from throttling, if any.
    pub fn limit(&self) -> Option<f64> {
        self.limit
    }

    /// The most describes a refresh should make when refreshes start every `interval`: `None`
    /// (no cap) until throttling was met.
    pub fn cap(&self, interval: Duration) -> Option<usize> {
        self.limit
            .map(|r| ((r * interval.as_secs_f64()).floor() as usize).max(1))
    }

    /// How long `pending` describes take: at the learned rate limit, else at `measured` (the
    /// describes a second of the refresh in progress), else at the last refresh's throughput;
    /// `None` when nothing is pending or nothing is known. The one definition of the time to a
    /// complete view (the status bar's "complete view in ~N s" shows it, in seconds).
    pub fn complete_in(&self, pending: usize, measured: Option<f64>) -> Option<Duration> {
        if pending == 0 {
            return None;
        }
        let rate = self
            .limit
            .or(measured)
            .or(self.throughput)
            .filter(|r| *r > 0.0)?;
        Some(Duration::from_secs_f64(pending as f64 / rate))
    }

    /// [`Pace::complete_in`] in whole seconds, rounded up (what snapshots carry).
    pub fn complete_in_s(&self, pending: usize, measured: Option<f64>) -> Option<u64> {
        self.complete_in(pending, measured)
            .map(|d| d.as_secs_f64().ceil() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phase(ok: u32, throttled: u32, ms: u64) -> Phase {
        Phase {
            ok,
            throttled,
            elapsed: Duration::from_millis(ms),
        }
    }

    #[test]
    fn no_cap_until_throttled_then_the_rate_that_got_through() {
        let mut p = Pace::default();
        let five = Duration::from_secs(5);
        p.observe(phase(400, 0, 2_000));
        assert_eq!(p.cap(five), None, "never throttled: no cap");
        assert_eq!(p.complete_in(400, None), Some(Duration::from_secs(2)));
        // The refresh in progress measures its own rate, used before the last throughput.
        assert_eq!(
            p.complete_in(400, Some(100.0)),
            Some(Duration::from_secs(4))
        );
        assert_eq!(Pace::default().complete_in(400, None), None);
        assert_eq!(Pace::default().complete_in_s(10, Some(3.0)), Some(4));
        // 30 describes in 3 s got through while 50 attempts were refused: 10/s.
        p.observe(phase(30, 50, 3_000));
        assert_eq!(p.limit(), Some(10.0));
        assert_eq!(p.cap(five), Some(50));
        // A learned limit is used before any measure.
        assert_eq!(
            p.complete_in(1_000, Some(50.0)),
            Some(Duration::from_secs(100))
        );
        assert_eq!(p.complete_in(0, None), None);
        // A quiet phase probes a little higher; a short one says nothing.
        p.observe(phase(50, 0, 5_000));
        assert_eq!(p.cap(five), Some(62));
        p.observe(phase(3, 9, 50));
        assert_eq!(p.cap(five), Some(62));
        // A slow limit still lets one describe through per refresh.
        p.observe(phase(1, 9, 10_000));
        assert_eq!(p.cap(five), Some(1));
        // Three refreshes in a row without a 429: the limit is forgotten.
        p.observe(phase(5, 0, 1_000));
        p.observe(phase(5, 0, 1_000));
        assert_eq!(p.cap(five), Some(1));
        p.observe(phase(5, 0, 1_000));
        assert_eq!(p.cap(five), None);
    }
}
