//! Rate limits of the fault spec (`rate=N/s[,burst=B]`): a token bucket per operation, in real
//! time. The syntax is documented with the rest of the spec in `faults.rs`.

use std::time::Instant;

use super::error::EmulatorError;
use super::faults::bad;

/// A token bucket: `per_s` tokens a second, at most `burst` held (real time).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimit {
    pub per_s: f64,
    pub burst: u32,
}

/// The tokens an operation's bucket holds and when they were counted.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    pub(super) fn full(limit: RateLimit, now: Instant) -> Self {
        Self {
            tokens: limit.burst as f64,
            at: now,
        }
    }

    /// Refills at `limit`'s rate up to `now` (never past its burst) and takes a token; `false`
    /// when none is left, and then nothing is taken.
    pub(super) fn take(&mut self, limit: RateLimit, now: Instant) -> bool {
        let refilled = now
            .checked_duration_since(self.at)
            .map_or(0.0, |d| d.as_secs_f64() * limit.per_s);
        self.tokens = (self.tokens + refilled).min(limit.burst as f64);
        self.at = self.at.max(now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// One second's worth of `per_s`, at least 1.
pub(super) fn default_burst(per_s: f64) -> u32 {
    (per_s.ceil() as u32).max(1)
}

/// `rate=OP:REST` (the operation inside the setting) as `OP:rate=REST`; `None` for any other
/// rule.
pub(super) fn rate_with_op(rule_text: &str) -> Option<String> {
    let rest = rule_text.strip_prefix("rate=")?;
    let (ops, rate) = rest.split_once(':')?;
    Some(format!("{ops}:rate={rate}"))
}

/// The most calls a second a rate may allow (a million: more is no limit at all).
const MAX_RATE_PER_S: f64 = 1_000_000.0;

/// `N/s`, `N/m` or `N` (per second); `none` is `None`.
pub(super) fn parse_rate(s: &str) -> Result<Option<f64>, EmulatorError> {
    if s.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    let (number, per) = if let Some(n) = s.strip_suffix("/s") {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix("/m") {
        (n, 60.0)
    } else {
        (s, 1.0)
    };
    match number.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v / per <= MAX_RATE_PER_S => Ok(Some(v / per)),
        _ => Err(bad(format!(
            "{s:?} is not a rate such as 10/s or 30/m (above 0, at most 1000000/s), nor none"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::faults::{Decision, FaultInjector, FaultSpec};
    use super::*;

    #[test]
    fn parses_rates_both_spellings_bursts_and_overrides() {
        let s = FaultSpec::parse("rate=20/s; describeservicejob:rate=10/s,burst=25").unwrap();
        let limit = |op: &str| s.for_op(op).rate;
        assert_eq!(
            limit("listservicejobs"),
            Some(RateLimit {
                per_s: 20.0,
                burst: 20
            })
        );
        assert_eq!(
            limit("describeservicejob"),
            Some(RateLimit {
                per_s: 10.0,
                burst: 25
            })
        );
        // The operation inside the setting is the same rule.
        let t = FaultSpec::parse("rate=describeservicejob|listservicejobs:30/m,burst=3").unwrap();
        let want = Some(RateLimit {
            per_s: 0.5,
            burst: 3,
        });
        assert_eq!(t.for_op("describeservicejob").rate, want);
        assert_eq!(t.for_op("listservicejobs").rate, want);
        assert_eq!(t.for_op("getjobqueuesnapshot").rate, None);
        // A fractional rate has a burst of one; `none` lifts an earlier limit.
        let u = FaultSpec::parse("rate=0.2/s;getjobqueuesnapshot:rate=none").unwrap();
        assert_eq!(
            u.for_op("listquotashares").rate,
            Some(RateLimit {
                per_s: 0.2,
                burst: 1
            })
        );
        assert_eq!(u.for_op("getjobqueuesnapshot").rate, None);
        for bad in [
            "rate=0",
            "rate=-1/s",
            "rate=fast",
            "rate=10/h",
            "burst=0",
            "rate=nosuchop:1/s",
            "rate=2000000/s",
        ] {
            assert!(FaultSpec::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn refuses_beyond_the_bucket_and_refills_at_the_rate() {
        let inj =
            FaultInjector::new(FaultSpec::parse("rate=describeservicejob:10/s,burst=5").unwrap());
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let calls = |ms: u64, n: usize| -> Vec<Decision> {
            (0..n)
                .map(|_| inj.decide_at("describeservicejob", at(ms)).1)
                .collect()
        };
        // The burst at once, then 429s.
        let first = calls(0, 8);
        assert_eq!(
            first.iter().filter(|d| **d == Decision::Proceed).count(),
            5,
            "{first:?}"
        );
        assert_eq!(&first[5..], [Decision::Throttle; 3]);
        // 10/s: one token per 100 ms; refused calls took none.
        assert_eq!(calls(99, 1), [Decision::Throttle]);
        assert_eq!(calls(100, 2), [Decision::Proceed, Decision::Throttle]);
        assert_eq!(
            calls(350, 3),
            [Decision::Proceed, Decision::Proceed, Decision::Throttle]
        );
        // Idle for long: the bucket holds its burst, no more.
        let later = calls(60_000, 7);
        assert_eq!(later.iter().filter(|d| **d == Decision::Proceed).count(), 5);
        // Other operations have no limit; the refusals are counted as rate limited.
        assert!(calls(60_000, 0).is_empty());
        assert_eq!(inj.decide_at("listservicejobs", at(0)).1, Decision::Proceed);
        let stats = inj.stats();
        assert_eq!(
            (stats.throttled, stats.rate_limited),
            (3 + 1 + 1 + 1 + 2, 8)
        );
        // Over a simulated minute of calls every 10 ms the rate holds: burst + 10/s.
        let inj = FaultInjector::new(FaultSpec::parse("rate=10/s,burst=5").unwrap());
        let ok = (0..6_000)
            .filter(|i| inj.decide_at("listservicejobs", at(i * 10)).1 == Decision::Proceed)
            .count();
        assert!((600..=606).contains(&ok), "{ok}");
    }
}
