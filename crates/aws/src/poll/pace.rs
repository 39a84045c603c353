//! The describe budget under a rate limit. The rate DescribeServiceJob is allowed is learned
//! by the client's per-operation pacer (`batch::pacer`, from its own 429s only); the poller
//! follows it ([`Pace::follow`]) to cap a recorder's refresh to what that rate allows in an
//! interval and to say how long a complete view will take. It does not learn a rate of its
//! own: a refresh's wire throttling includes the listings' 429s, and a rate learned from it
//! (describes that got through over the refresh) held the describes at what the listings left,
//! 2.3/s against 10/s allowed at 10,000 jobs. Pure, so the policy is unit-tested without a
//! network.

use std::time::Duration;

/// What the describes of one refresh met on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Phase {
    /// Describes answered (not throttled, not failed).
    pub ok: u32,
    /// Attempts answered HTTP 429 (of any operation during the phase).
    pub throttled: u32,
    pub elapsed: Duration,
}

/// The describe rate: the client's learned limit and the poller's measured throughput.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Pace {
    /// Describes a second the API allows, as the client's pacer learned it; `None` while
    /// DescribeServiceJob is unlimited (no 429 met, or forgotten).
    limit: Option<f64>,
    /// Describes a second the last phase of any length managed (without a limit, its latency
    /// and the concurrency bound it).
    throughput: Option<f64>,
}

impl Pace {
    /// Takes the client's learned DescribeServiceJob rate (`BatchClient::learned_rate`).
    pub fn follow(&mut self, client_limit: Option<f64>) {
        self.limit = client_limit.filter(|r| *r > 0.0);
    }

    /// Learns the throughput from one refresh's describes.
    pub fn observe(&mut self, phase: Phase) {
        if phase.ok == 0 || phase.elapsed.is_zero() {
            return;
        }
        self.throughput = Some(phase.ok as f64 / phase.elapsed.as_secs_f64());
    }

    /// The rate limit followed, if any.
    pub fn limit(&self) -> Option<f64> {
        self.limit
    }

    /// The most describes a refresh should make when refreshes start every `interval`: `None`
    /// (no cap) while DescribeServiceJob is unlimited.
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
    fn no_cap_until_the_client_learned_a_limit_then_that_limit() {
        let mut p = Pace::default();
        let five = Duration::from_secs(5);
        p.observe(phase(400, 0, 2_000));
        assert_eq!(p.cap(five), None, "no limit: no cap");
        assert_eq!(p.complete_in(400, None), Some(Duration::from_secs(2)));
        // The refresh in progress measures its own rate, used before the last throughput.
        assert_eq!(
            p.complete_in(400, Some(100.0)),
            Some(Duration::from_secs(4))
        );
        assert_eq!(Pace::default().complete_in(400, None), None);
        assert_eq!(Pace::default().complete_in_s(10, Some(3.0)), Some(4));
        // Throttling seen on the wire (the listings' 429s among it) teaches nothing: a refresh
        // whose describes got through slowly does not become the limit.
        p.observe(phase(47, 50, 20_000));
        assert_eq!(p.limit(), None);
        assert_eq!(p.cap(five), None);
        // The client's pacer learned 10/s: followed.
        p.follow(Some(10.0));
        assert_eq!(p.limit(), Some(10.0));
        assert_eq!(p.cap(five), Some(50));
        // A learned limit is used before any measure.
        assert_eq!(
            p.complete_in(1_000, Some(50.0)),
            Some(Duration::from_secs(100))
        );
        assert_eq!(p.complete_in(0, None), None);
        // A slow limit still lets one describe through per refresh.
        p.follow(Some(0.1));
        assert_eq!(p.cap(five), Some(1));
        // The client forgot it: no cap.
        p.follow(None);
        assert_eq!(p.cap(five), None);
    }
}
