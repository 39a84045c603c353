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

/// The longest wait a throttling answer's `Retry-After` is followed for.
pub const RETRY_AFTER_MAX: Duration = Duration::from_secs(300);

/// A shared, time-windowed log of attempts (cheap to clone).
#[derive(Debug, Clone, Default)]
pub struct WireStats {
    log: Arc<Mutex<VecDeque<(Instant, Attempt)>>>,
    /// Not before this instant: what a throttling answer's `Retry-After` or
    /// `x-amz-retry-after` asked for (the latest of them).
    not_before: Arc<Mutex<Option<Instant>>>,
    /// Answers whose bytes were not all UTF-8, read with U+FFFD in their place.
    not_utf8: Arc<std::sync::atomic::AtomicUsize>,
}

/// The wait a throttling answer asks for: `x-amz-retry-after` (milliseconds) or
/// `Retry-After` (seconds; an HTTP date is not followed), at most [`RETRY_AFTER_MAX`].
pub fn retry_after_of(amz_ms: Option<&str>, seconds: Option<&str>) -> Option<Duration> {
    let ms = amz_ms.and_then(|v| v.trim().parse::<u64>().ok());
    let secs = seconds.and_then(|v| v.trim().parse::<u64>().ok());
    ms.map(Duration::from_millis)
        .or(secs.map(Duration::from_secs))
        .map(|d| d.min(RETRY_AFTER_MAX))
}

impl WireStats {
    /// An answer was not all UTF-8 (its invalid bytes were replaced).
    pub fn not_utf8(&self) {
        self.not_utf8
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// How many answers were not all UTF-8 so far.
    pub fn not_utf8_answers(&self) -> usize {
        self.not_utf8.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// A throttling answer asked for `wait` before the next call.
    pub fn retry_after(&self, wait: Duration) {
        let at = Instant::now() + wait;
        let mut nb = self.not_before.lock().unwrap_or_else(|p| p.into_inner());
        *nb = Some(nb.map_or(at, |t| t.max(at)));
    }

    /// How much of the wait a throttling answer asked for is left (`None`: none asked, or it
    /// has passed).
    pub fn retry_after_left(&self) -> Option<Duration> {
        let nb = self.not_before.lock().unwrap_or_else(|p| p.into_inner());
        nb.and_then(|t| t.checked_duration_since(Instant::now()))
            .filter(|d| !d.is_zero())
    }

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
                    let h = r.headers();
                    if let Some(wait) =
                        retry_after_of(h.get("x-amz-retry-after"), h.get("retry-after"))
                    {
                        self.0.retry_after(wait);
                    }
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
mod retry_after_tests {
    use super::*;

    #[test]
    fn a_throttling_answer_s_wait_is_kept_and_bounded() {
        assert_eq!(
            retry_after_of(None, Some("3")),
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            retry_after_of(Some("1500"), Some("3")),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            retry_after_of(None, Some("Wed, 21 Oct 2026 07:28:00 GMT")),
            None
        );
        assert_eq!(retry_after_of(None, Some("86400")), Some(RETRY_AFTER_MAX));
        let s = WireStats::default();
        assert_eq!(s.retry_after_left(), None);
        s.retry_after(Duration::from_secs(5));
        s.retry_after(Duration::from_secs(1));
        let left = s.retry_after_left().unwrap_or_default();
        assert!(
            left > Duration::from_secs(4) && left <= Duration::from_secs(5),
            "{left:?}"
        );
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
