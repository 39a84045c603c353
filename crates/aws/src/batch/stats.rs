//! Counts of HTTP attempts as the wire sees them, retries included: an SDK interceptor records
//! every attempt, so throttled responses that the SDK's retries absorbed still show in the
//! console's health line.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aws_sdk_batch::config::interceptors::FinalizerInterceptorContextRef;
use aws_sdk_batch::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_batch::error::BoxError;

use super::error::is_throttling_code;

/// The window the counts cover.
pub const WINDOW: Duration = Duration::from_secs(60);

/// What became of one HTTP attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attempt {
    Ok,
    Throttled,
    /// A server error, a refused request, or no response at all.
    Failed,
}

/// Attempts in the last [`WINDOW`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WireCounts {
    pub attempts: u32,
    pub throttled: u32,
    pub failed: u32,
}

/// A shared, time-windowed log of attempts (cheap to clone).
#[derive(Debug, Clone, Default)]
pub struct WireStats {
    log: Arc<Mutex<VecDeque<(Instant, Attempt)>>>,
}

impl WireStats {
    pub fn record(&self, outcome: Attempt) {
        self.record_at(Instant::now(), outcome);
    }

    fn record_at(&self, at: Instant, outcome: Attempt) {
        // A poisoned lock only means a panic elsewhere mid-push; the log is still usable.
        let mut log = self.log.lock().unwrap_or_else(|p| p.into_inner());
        log.push_back((at, outcome));
        prune(&mut log, at);
    }

    /// Counts over the last [`WINDOW`].
    pub fn last_minute(&self) -> WireCounts {
        self.counts_at(Instant::now())
    }

    /// Counts of the attempts recorded at or after `start` (within the last [`WINDOW`]).
    pub fn since(&self, start: Instant) -> WireCounts {
        let mut log = self.log.lock().unwrap_or_else(|p| p.into_inner());
        let mut c = WireCounts::default();
        for (_, a) in log.iter().filter(|(t, _)| *t >= start) {
            c.attempts += 1;
            match a {
                Attempt::Ok => {}
                Attempt::Throttled => c.throttled += 1,
                Attempt::Failed => c.failed += 1,
            }
        }
        prune(&mut log, Instant::now());
        c
    }

    fn counts_at(&self, now: Instant) -> WireCounts {
        let mut log = self.log.lock().unwrap_or_else(|p| p.into_inner());
        prune(&mut log, now);
        let mut c = WireCounts::default();
        for (_, a) in log.iter() {
            c.attempts += 1;
            match a {
                Attempt::Ok => {}
                Attempt::Throttled => c.throttled += 1,
                Attempt::Failed => c.failed += 1,
            }
        }
        c
    }
}

fn prune(log: &mut VecDeque<(Instant, Attempt)>, now: Instant) {
    while log
        .front()
        .is_some_and(|(t, _)| now.saturating_duration_since(*t) > WINDOW)
    {
        log.pop_front();
    }
}

/// The SDK interceptor that feeds [`WireStats`].
#[derive(Debug)]
pub(crate) struct StatsInterceptor(pub WireStats);

impl Intercept for StatsInterceptor {
    fn name(&self) -> &'static str {
        "quotatop-wire-stats"
    }

    fn read_after_attempt(
        &self,
        context: &FinalizerInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let outcome = match context.response() {
            None => Attempt::Failed,
            Some(r) => {
                let status = r.status().as_u16();
                let code = r.headers().get("x-amzn-errortype").unwrap_or("");
                let code = code.split(':').next().unwrap_or("");
                if status == 429 || is_throttling_code(code) {
                    Attempt::Throttled
                } else if status >= 400 {
                    Attempt::Failed
                } else {
                    Attempt::Ok
                }
            }
        };
        self.0.record(outcome);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_cover_only_the_last_minute() {
        let s = WireStats::default();
        let t0 = Instant::now();
        s.record_at(t0, Attempt::Throttled);
        s.record_at(t0 + Duration::from_secs(30), Attempt::Ok);
        s.record_at(t0 + Duration::from_secs(40), Attempt::Failed);
        assert_eq!(
            s.counts_at(t0 + Duration::from_secs(45)),
            WireCounts {
                attempts: 3,
                throttled: 1,
                failed: 1
            }
        );
        assert_eq!(
            s.counts_at(t0 + Duration::from_secs(61)),
            WireCounts {
                attempts: 2,
                throttled: 0,
                failed: 1
            }
        );
    }
}
