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

/// Describes of a progressive refresh before anything is known of the throughput.
pub const FIRST_LOOK: usize = 16;

/// The learned describe rate.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Pace {
    /// Describes a second the API allows; `None` until a describe was throttled.
    limit: Option<f64>,
    /// Describes a second the last phase of any length managed (without a limit, its latency
    /// and the concurrency bound it).
    throughput: Option<f64>,
    /// The progressive cap before a limit is known: [`FIRST_LOOK`], doubled after each refresh
    /// that met no throttling (a slow start, so an unknown limit is met by a few calls too many,
    /// not by an interval's worth at full speed). 0 reads as [`FIRST_LOOK`].
    window: usize,
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
            self.window = self.window.max(FIRST_LOOK).saturating_mul(2);
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

    /// [`Pace::cap`] for a console that shows each refresh as it comes (progressive load):
    /// without a learned limit, what the last throughput does in an interval, but no more than
    /// the slow start's window ([`FIRST_LOOK`] at first, doubling while nothing is throttled)
    /// and no fewer than [`FIRST_LOOK`], so the first snapshot arrives after the
    /// listings and a handful of describes (front of queue first) instead of after all of them.
    pub fn progressive_cap(&self, interval: Duration) -> usize {
        match (self.cap(interval), self.throughput) {
            (Some(cap), _) => cap,
            (None, Some(t)) => ((t * interval.as_secs_f64()) as usize)
                .min(self.window)
                .max(FIRST_LOOK),
            (None, None) => FIRST_LOOK,
        }
    }

    /// How long `pending` describes take at the learned rate (or, without one, at the last
    /// throughput); `None` when nothing is pending or nothing is known.
    pub fn complete_in(&self, pending: usize) -> Option<Duration> {
        if pending == 0 {
            return None;
        }
        let rate = self.limit.or(self.throughput)?;
        Some(Duration::from_secs_f64(pending as f64 / rate))
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
        assert_eq!(Pace::default().progressive_cap(five), FIRST_LOOK);
        // Slow start: twice the first look after one quiet refresh, not 5 s of 200/s.
        assert_eq!(p.progressive_cap(five), 2 * FIRST_LOOK);
        p.observe(phase(400, 0, 2_000));
        p.observe(phase(400, 0, 2_000));
        assert_eq!(p.progressive_cap(five), 8 * FIRST_LOOK);
        for _ in 0..10 {
            p.observe(phase(400, 0, 2_000));
        }
        assert_eq!(
            p.progressive_cap(five),
            1_000,
            "what 5 s of 200/s describe, at most"
        );
        assert_eq!(p.complete_in(400), Some(Duration::from_secs(2)));
        // 30 describes in 3 s got through while 50 attempts were refused: 10/s.
        p.observe(phase(30, 50, 3_000));
        assert_eq!(p.limit(), Some(10.0));
        assert_eq!(p.cap(five), Some(50));
        assert_eq!(p.complete_in(1_000), Some(Duration::from_secs(100)));
        assert_eq!(p.complete_in(0), None);
        // A quiet phase probes a little higher; a short one says nothing.
        p.observe(phase(50, 0, 5_000));
        assert_eq!(p.cap(five), Some(62));
        p.observe(phase(3, 9, 50));
        assert_eq!(p.cap(five), Some(62));
        assert_eq!(p.progressive_cap(five), 62);
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
