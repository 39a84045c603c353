//! How the data path is doing, from the errors of a refresh and the wire counts, and how long to
//! wait before the next refresh (exponential back-off while unhealthy).

use std::time::Duration;

use crate::batch::{BatchError, ErrorKind, WireCounts};
use quotatop_model::{HealthState, PollHealth};

/// The health after a refresh that made `calls` operations and met `errors`.
pub fn assess(errors: &[BatchError], calls: usize, wire: WireCounts) -> PollHealth {
    let worst = |kind: ErrorKind| errors.iter().rev().find(|e| e.kind() == kind);
    let (state, last) = if errors.is_empty() {
        (HealthState::Healthy, None)
    } else if let Some(e) = worst(ErrorKind::NoCredentials) {
        (HealthState::NoCredentials, Some(e))
    } else if let Some(e) = worst(ErrorKind::Expired) {
        (HealthState::Expired, Some(e))
    } else if let Some(e) = worst(ErrorKind::Denied) {
        (HealthState::Denied, Some(e))
    } else if errors.len() >= calls
        && worst(ErrorKind::Unreachable).is_some()
        && wire.throttled == 0
    {
        // With 429s on the wire the endpoint did answer: sustained throttling ends in timeouts
        // (the SDK's rate limiter holds the retries back past the operation's deadline), which
        // is the throttled branch below, not an outage.
        (HealthState::Unreachable, worst(ErrorKind::Unreachable))
    } else if let Some(e) = worst(ErrorKind::Throttled) {
        (HealthState::Throttled, Some(e))
    } else if wire.throttled > 0 {
        // Calls cut by the refresh deadline while the API throttles: the SDK's rate limiter
        // is holding them back.
        (HealthState::Throttled, errors.last())
    } else {
        (HealthState::Degraded, errors.last())
    };
    PollHealth {
        state,
        calls_last_minute: wire.attempts,
        throttled_last_minute: wire.throttled,
        errors_last_minute: wire.failed,
        last_error: last.map(|e| {
            if state == HealthState::Throttled && e.kind() != ErrorKind::Throttled {
                format!(
                    "{e} ({} attempts answered HTTP 429 (TooManyRequestsException) in the last minute)",
                    wire.throttled
                )
            } else {
                e.to_string()
            }
        }),
        describe_rate: None,
        complete_in_s: None,
        from_history: false,
        in_progress: false,
        events_missed: 0,
    }
}

/// The wait before the next refresh: `interval`, doubled for each unhealthy refresh in a row,
/// at most `max`.
pub fn next_delay(interval: Duration, max: Duration, unhealthy_streak: u32) -> Duration {
    let factor = 1u32 << unhealthy_streak.min(16);
    interval.saturating_mul(factor).min(max.max(interval))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(kind: ErrorKind) -> BatchError {
        let op = crate::batch::Op::ListServiceJobs;
        let message = String::from("m");
        match kind {
            ErrorKind::Throttled => BatchError::Throttled { op, message },
            ErrorKind::Denied => BatchError::Denied { op, message },
            ErrorKind::Expired => BatchError::Expired { op, message },
            ErrorKind::NoCredentials => BatchError::NoCredentials { op, message },
            ErrorKind::NotFound => BatchError::NotFound { op, message },
            ErrorKind::Unreachable => BatchError::Unreachable { op, message },
            ErrorKind::Other => BatchError::Other { op, message },
        }
    }

    #[test]
    fn state_follows_the_worst_error() {
        let w = WireCounts::default();
        assert_eq!(assess(&[], 5, w).state, HealthState::Healthy);
        assert_eq!(assess(&[], 5, w).last_error, None);
        let t = [err(ErrorKind::Throttled), err(ErrorKind::Other)];
        assert_eq!(assess(&t, 5, w).state, HealthState::Throttled);
        let d = [err(ErrorKind::Throttled), err(ErrorKind::Denied)];
        assert_eq!(assess(&d, 5, w).state, HealthState::Denied);
        // Nothing to sign with is its own state, not "refused".
        let n = [err(ErrorKind::Denied), err(ErrorKind::NoCredentials)];
        assert_eq!(assess(&n, 5, w).state, HealthState::NoCredentials);
        let u = [err(ErrorKind::Unreachable), err(ErrorKind::Unreachable)];
        assert_eq!(assess(&u, 2, w).state, HealthState::Unreachable);
        assert_eq!(assess(&u, 9, w).state, HealthState::Degraded);
        // Every call timed out while the API answered 429: throttling, not an outage.
        let t429 = WireCounts {
            attempts: 3,
            throttled: 2,
            failed: 0,
        };
        let h = assess(&u, 2, t429);
        assert_eq!(h.state, HealthState::Throttled);
        assert!(
            h.last_error
                .unwrap()
                .contains("2 attempts answered HTTP 429")
        );
        let h = assess(&t, 5, w);
        assert_eq!(
            h.last_error.as_deref(),
            Some("ListServiceJobs: throttled by AWS Batch: m")
        );
    }

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let s = Duration::from_secs;
        assert_eq!(next_delay(s(5), s(60), 0), s(5));
        assert_eq!(next_delay(s(5), s(60), 2), s(20));
        assert_eq!(next_delay(s(5), s(60), 40), s(60));
    }
}
