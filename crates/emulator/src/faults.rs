//! Fault injection: seeded and per operation.
//!
//! # Spec syntax (`--faults SPEC`, or `faults = "SPEC"` in a scenario)
//!
//! ```text
//! SPEC     := RULE (';' RULE)*
//! RULE     := [OPS ':'] SETTING (',' SETTING)*
//! OPS      := '*' | OP ('|' OP)*           OP = lowercase operation name as in the URL path,
//!                                          e.g. listservicejobs, describeservicejob,
//!                                          tagresource, untagresource, listtagsforresource
//! SETTING  := latency=DUR['+'DUR]          fixed delay plus uniform jitter in [0, second DUR]
//!           | throttle=P                   HTTP 429 TooManyRequestsException with probability P
//!           | throttle-first=N             throttle the first N calls of each matching operation
//!           | error=P                      HTTP 500 ServerException with probability P
//!           | drop=P                       close the connection without any response
//!           | lose-answer=P                carry the call out, then close the connection
//!                                          without its answer (a lost 200: the client's
//!                                          retry meets the change already made)
//!           | hold=DUR                     receive the call in full, then hold it DUR before
//!                                          carrying it out, also when the client has gone
//!                                          meanwhile (a call held in flight: it lands after
//!                                          its client gave up or was killed)
//!           | lose-answer-first=N          lose the answers of the first N calls of each
//!                                          matching operation (counted from when a spec is
//!                                          set: the emulator counts no calls without one)
//!           | deny=P                       HTTP 403 AccessDeniedException with probability P
//!           | expired-token=P              HTTP 403 ExpiredTokenException with probability P
//!           | rate=RATE                    a token bucket per operation (one for the whole
//!                                          emulator, every region and queue): a call takes a
//!                                          token, and is answered HTTP 429
//!                                          TooManyRequestsException when none is left
//!           | burst=B                      the bucket's size (default: one second's worth of the
//!                                          rate, at least 1); full at start
//!           | seed=N                       seed of all fault draws (global; default 0)
//! RATE     := N['/s'|'/m'] | 'none'        calls per second (or per minute); 'none' lifts a limit
//!                                          an earlier rule set; real time, not simulated
//! DUR      := N['ms'|'s'|'m'|'h']          a decimal number (50ms, 1.5s); milliseconds when no
//!                                          unit; real time, not simulated; at most 1h
//! P        := 0..1 or a percentage ('5%')
//! ```
//!
//! A rule without `OPS` applies to every operation. Rules apply in order, so a later rule
//! overrides the settings it names for the operations it matches:
//! `latency=20ms+30ms,throttle=5%;submitservicejob:error=0.1;describeservicejob:drop=0.02`.
//!
//! Each operation draws from its own generator (seeded from the seed and the operation's name),
//! so what one operation sees does not depend on how calls to others interleave with it. Per
//! request the order is: latency, then drop, then the credential faults (deny, expired-token;
//! checked before throttling, as AWS authenticates a request before it meters it), then
//! throttle, then server error, then a lost answer (the call is handled; only its answer is
//! lost). A lost answer draws from a generator of its own too. The credential faults draw from a generator of their own, so
//! adding them to a spec does not change what the other settings draw.
//!
//! Sustained throttling (every call answered 429, so the SDK's retries run out) is `throttle=1`.
//!
//! A rate limit is also written `rate=OP:N/s[,burst=B]` (the operation inside the setting), the
//! same as `OP:rate=N/s[,burst=B]`. The rate limit is checked where `throttle` is (after the
//! credential faults); a call throttled by it takes no token. It draws nothing, so adding a rate
//! limit does not change the other settings' draws.

use std::collections::HashMap;
use std::sync::{Mutex, RwLock};
use std::time::{Duration, Instant};

use super::error::EmulatorError;
pub use super::rate_limit::RateLimit;
use super::rate_limit::{Bucket, default_burst, parse_rate, rate_with_op};
use super::routes::OPERATIONS;
use quotatop_engine::Rng;
use quotatop_model::Millis;

/// The faults of one operation.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Faults {
    pub latency_ms: u64,
    pub jitter_ms: u64,
    pub throttle: f64,
    pub throttle_first: u32,
    pub error: f64,
    pub drop: f64,
    /// HTTP 403 `AccessDeniedException` (the credentials do not allow the call).
    pub deny: f64,
    /// HTTP 403 `ExpiredTokenException` (the session token has expired).
    pub expired_token: f64,
    /// Probability that the call is carried out and its answer lost (the connection closed).
    pub lose_answer: f64,
    /// The first N calls of the operation are carried out and their answers lost.
    pub lose_answer_first: u32,
    /// The operation's token bucket, when it is rate limited.
    pub rate: Option<RateLimit>,
    /// A received call is held this long before it is carried out, whether or not its client
    /// is still there.
    pub hold_ms: u64,
}

#[derive(Debug, Clone, Default, PartialEq)]
struct Rule {
    ops: Option<Vec<String>>,
    latency: Option<(u64, u64)>,
    throttle: Option<f64>,
    throttle_first: Option<u32>,
    error: Option<f64>,
    drop: Option<f64>,
    deny: Option<f64>,
    expired_token: Option<f64>,
    lose_answer: Option<f64>,
    lose_answer_first: Option<u32>,
    hold: Option<u64>,
    /// `Some(None)`: `rate=none`, lifting an earlier rule's limit.
    rate: Option<Option<f64>>,
    burst: Option<u32>,
}

/// A parsed fault spec.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FaultSpec {
    pub seed: u64,
    rules: Vec<Rule>,
}

impl FaultSpec {
    /// No faults.
    pub fn none() -> Self {
        Self::default()
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    pub fn parse(spec: &str) -> Result<Self, EmulatorError> {
        let mut out = FaultSpec::default();
        for rule_text in spec.split(';').map(str::trim).filter(|r| !r.is_empty()) {
            let rewritten = rate_with_op(rule_text);
            let rule_text = rewritten.as_deref().unwrap_or(rule_text);
            let (ops, settings) = match rule_text.split_once(':') {
                Some((ops, rest)) => (Some(ops.trim()), rest),
                None => (None, rule_text),
            };
            let mut rule = Rule {
                ops: match ops {
                    None | Some("*") => None,
                    Some(list) => Some(parse_ops(list)?),
                },
                ..Rule::default()
            };
            for setting in settings.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                let (key, value) = setting
                    .split_once('=')
                    .ok_or_else(|| bad(format!("{setting:?} is not KEY=VALUE")))?;
                let value = value.trim();
                match key.trim() {
                    "latency" => {
                        let (fixed, jitter) = match value.split_once('+') {
                            Some((f, j)) => (parse_latency(f)?, parse_latency(j)?),
                            None => (parse_latency(value)?, 0),
                        };
                        rule.latency = Some((fixed, jitter));
                    }
                    "hold" => rule.hold = Some(parse_latency(value)?),
                    "throttle" => rule.throttle = Some(parse_probability(value)?),
                    "throttle-first" => {
                        rule.throttle_first = Some(value.parse().map_err(|_| {
                            bad(format!("throttle-first needs a count, got {value:?}"))
                        })?)
                    }
                    "error" => rule.error = Some(parse_probability(value)?),
                    "drop" => rule.drop = Some(parse_probability(value)?),
                    "deny" => rule.deny = Some(parse_probability(value)?),
                    "expired-token" => rule.expired_token = Some(parse_probability(value)?),
                    "lose-answer" => rule.lose_answer = Some(parse_probability(value)?),
                    "lose-answer-first" => {
                        rule.lose_answer_first = Some(value.parse().map_err(|_| {
                            bad(format!("lose-answer-first needs a count, got {value:?}"))
                        })?)
                    }
                    "rate" => rule.rate = Some(parse_rate(value)?),
                    "burst" => {
                        rule.burst = Some(match value.parse::<u32>() {
                            Ok(n) if n >= 1 => n,
                            _ => {
                                return Err(bad(format!(
                                    "burst needs a count of at least 1, got {value:?}"
                                )));
                            }
                        })
                    }
                    "seed" => {
                        out.seed = value
                            .parse()
                            .map_err(|_| bad(format!("seed needs an integer, got {value:?}")))?
                    }
                    other => {
                        return Err(bad(format!(
                            "unknown setting {other:?} (latency, hold, throttle, throttle-first, error, drop, deny, expired-token, lose-answer, lose-answer-first, rate, burst, seed)"
                        )));
                    }
                }
            }
            out.rules.push(rule);
        }
        Ok(out)
    }

    /// The merged faults of one operation.
    pub fn for_op(&self, op: &str) -> Faults {
        let mut f = Faults::default();
        let (mut rate, mut burst) = (None, None);
        for r in &self.rules {
            if r.ops
                .as_ref()
                .is_some_and(|ops| !ops.iter().any(|o| o == op))
            {
                continue;
            }
            if let Some((l, j)) = r.latency {
                f.latency_ms = l;
                f.jitter_ms = j;
            }
            if let Some(p) = r.throttle {
                f.throttle = p;
            }
            if let Some(n) = r.throttle_first {
                f.throttle_first = n;
            }
            if let Some(p) = r.error {
                f.error = p;
            }
            if let Some(p) = r.drop {
                f.drop = p;
            }
            if let Some(p) = r.deny {
                f.deny = p;
            }
            if let Some(p) = r.expired_token {
                f.expired_token = p;
            }
            if let Some(p) = r.lose_answer {
                f.lose_answer = p;
            }
            if let Some(n) = r.lose_answer_first {
                f.lose_answer_first = n;
            }
            if let Some(h) = r.hold {
                f.hold_ms = h;
            }
            if let Some(r) = r.rate {
                rate = r;
            }
            if let Some(b) = r.burst {
                burst = Some(b);
            }
        }
        f.rate = rate.map(|per_s| RateLimit {
            per_s,
            burst: burst.unwrap_or_else(|| default_burst(per_s)),
        });
        f
    }
}

pub(super) fn bad(message: String) -> EmulatorError {
    EmulatorError::Faults(message)
}

fn parse_ops(list: &str) -> Result<Vec<String>, EmulatorError> {
    list.split('|')
        .map(|o| {
            let o = o.trim().to_ascii_lowercase();
            if OPERATIONS.contains(&o.as_str()) {
                Ok(o)
            } else {
                Err(bad(format!("unknown operation {o:?}")))
            }
        })
        .collect()
}

/// The longest latency or jitter a fault spec may ask for: one hour.
const MAX_LATENCY_MS: Millis = 3_600_000;

/// A `DUR` of the spec: [`quotatop_model::parse_duration`]'s syntax (`50ms`, `1.5s`, plain
/// milliseconds), at most [`MAX_LATENCY_MS`].
fn parse_latency(s: &str) -> Result<u64, EmulatorError> {
    match quotatop_model::parse_duration(s) {
        Ok(ms) if ms <= MAX_LATENCY_MS => Ok(ms.unsigned_abs()),
        _ => Err(bad(format!(
            "{:?} is not a duration such as 50ms or 1.5s (at most 1h)",
            s.trim()
        ))),
    }
}

fn parse_probability(s: &str) -> Result<f64, EmulatorError> {
    let (number, scale) = match s.strip_suffix('%') {
        Some(n) => (n, 100.0),
        None => (s, 1.0),
    };
    match number.trim().parse::<f64>() {
        Ok(v) if (0.0..=scale).contains(&v) => Ok(v / scale),
        _ => Err(bad(format!(
            "{s:?} is not a probability in 0..1 or a percentage"
        ))),
    }
}

/// What to do with one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Proceed,
    Throttle,
    ServerError,
    Drop,
    /// HTTP 403 `AccessDeniedException`.
    AccessDenied,
    /// HTTP 403 `ExpiredTokenException`.
    ExpiredToken,
    /// Carry the call out, then close the connection without its answer.
    LoseAnswer,
}

/// Counts of injected faults, for tests and the operator.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FaultStats {
    pub delayed: u64,
    pub throttled: u64,
    pub server_errors: u64,
    pub dropped: u64,
    /// Requests answered 403 (access denied or expired token).
    pub denied: u64,
    /// Of `throttled`, the requests refused by a rate limit (an empty token bucket).
    pub rate_limited: u64,
    /// Requests carried out whose answers were lost.
    pub answers_lost: u64,
    /// Requests received in full and held (`hold=DUR`), counted as the hold starts.
    pub held: u64,
}

struct OpState {
    rng: Rng,
    /// The credential faults' own draws (so they do not shift `rng`'s sequence).
    auth_rng: Rng,
    /// The lost answers' own draws.
    lost_rng: Rng,
    calls: u64,
    /// Of `calls`, those refused by the rate limit.
    rate_limited: u64,
    /// The rate limit's token bucket (made full on the first call that meets a limit).
    bucket: Option<Bucket>,
}

/// Draws the faults of each request, and counts requests per operation.
pub struct FaultInjector {
    /// Replaceable at runtime ([`FaultInjector::set_spec`]): tests turn faults on and off.
    spec: RwLock<FaultSpec>,
    state: Mutex<(HashMap<String, OpState>, FaultStats)>,
    /// Requests per operation, faulted or not.
    calls: Mutex<HashMap<String, u64>>,
}

impl FaultInjector {
    pub fn new(spec: FaultSpec) -> Self {
        Self {
            spec: RwLock::new(spec),
            state: Mutex::new((HashMap::new(), FaultStats::default())),
            calls: Mutex::new(HashMap::new()),
        }
    }

    /// Replaces the fault spec; the next request uses it. Each operation's draw sequence
    /// continues (it is not reseeded).
    pub fn set_spec(&self, spec: FaultSpec) {
        *self.spec.write().unwrap_or_else(|p| p.into_inner()) = spec;
    }

    /// Requests of `op` (lowercase name) received so far.
    pub fn calls(&self, op: &str) -> u64 {
        let calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
        calls.get(op).copied().unwrap_or(0)
    }

    /// Calls of `op` refused by its rate limit (answered 429 for an empty token bucket).
    pub fn rate_limited(&self, op: &str) -> u64 {
        let guard = self.state.lock().unwrap_or_else(|p| p.into_inner());
        guard.0.get(op).map_or(0, |st| st.rate_limited)
    }

    pub fn stats(&self) -> FaultStats {
        match self.state.lock() {
            Ok(g) => g.1,
            Err(p) => p.into_inner().1,
        }
    }

    /// How long a received call of `op` is held before it is carried out (`hold=DUR`); a
    /// held call is counted in [`FaultStats::held`].
    pub fn hold(&self, op: &str) -> Duration {
        let hold = {
            let spec = self.spec.read().unwrap_or_else(|p| p.into_inner());
            Duration::from_millis(spec.for_op(op).hold_ms)
        };
        if !hold.is_zero() {
            match self.state.lock() {
                Ok(mut g) => g.1.held += 1,
                Err(p) => p.into_inner().1.held += 1,
            }
        }
        hold
    }

    /// The delay and the fate of the next call of `op`.
    pub fn decide(&self, op: &str) -> (Duration, Decision) {
        self.decide_at(op, Instant::now())
    }

    /// [`FaultInjector::decide`] with the rate limits' clock at `now` (tests move it by hand).
    pub fn decide_at(&self, op: &str, now: Instant) -> (Duration, Decision) {
        *self
            .calls
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(op.to_string())
            .or_insert(0) += 1;
        let (f, seed) = {
            let spec = self.spec.read().unwrap_or_else(|p| p.into_inner());
            if spec.is_empty() {
                return (Duration::ZERO, Decision::Proceed);
            }
            (spec.for_op(op), spec.seed)
        };
        // A poisoned lock only means another request panicked mid-draw; the counters are
        // still usable.
        let mut guard = match self.state.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        let (ops, stats) = &mut *guard;
        let seed = seed ^ fnv1a(op);
        let st = ops.entry(op.to_string()).or_insert_with(|| OpState {
            rng: Rng::new(seed),
            auth_rng: Rng::new(seed ^ 0x5eed_a074_0000_0001),
            lost_rng: Rng::new(seed ^ 0x5eed_1057_0000_0002),
            calls: 0,
            rate_limited: 0,
            bucket: None,
        });
        st.calls += 1;
        let delay = f.latency_ms + st.rng.upto(f.jitter_ms);
        // Always draw all three so one setting does not shift the others' sequence.
        let (d, t, e) = (st.rng.unit(), st.rng.unit(), st.rng.unit());
        let (a, x) = (st.auth_rng.unit(), st.auth_rng.unit());
        let lost = st.lost_rng.unit();
        let decision = if d < f.drop {
            stats.dropped += 1;
            Decision::Drop
        } else if a < f.deny {
            stats.denied += 1;
            Decision::AccessDenied
        } else if x < f.expired_token {
            stats.denied += 1;
            Decision::ExpiredToken
        } else if f.rate.is_some_and(|limit| {
            !st.bucket
                .get_or_insert_with(|| Bucket::full(limit, now))
                .take(limit, now)
        }) {
            stats.throttled += 1;
            stats.rate_limited += 1;
            st.rate_limited += 1;
            Decision::Throttle
        } else if st.calls <= f.throttle_first as u64 || t < f.throttle {
            stats.throttled += 1;
            Decision::Throttle
        } else if e < f.error {
            stats.server_errors += 1;
            Decision::ServerError
        } else if st.calls <= f.lose_answer_first as u64 || lost < f.lose_answer {
            stats.answers_lost += 1;
            Decision::LoseAnswer
        } else {
            Decision::Proceed
        };
        if delay > 0 {
            stats.delayed += 1;
        }
        (Duration::from_millis(delay), decision)
    }
}

fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01B3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_rules_and_later_rules_override() {
        let s = FaultSpec::parse(
            "latency=20ms+30ms,throttle=5%; submitservicejob|describeservicejob:error=0.1,latency=1s; seed=9",
        )
        .unwrap();
        assert_eq!(s.seed, 9);
        let list = s.for_op("listservicejobs");
        assert_eq!((list.latency_ms, list.jitter_ms), (20, 30));
        assert!((list.throttle - 0.05).abs() < 1e-12);
        assert_eq!(list.error, 0.0);
        let submit = s.for_op("submitservicejob");
        assert_eq!((submit.latency_ms, submit.jitter_ms), (1000, 0));
        assert_eq!(submit.error, 0.1);
        assert!((submit.throttle - 0.05).abs() < 1e-12);
    }

    #[test]
    fn rejects_bad_specs_with_a_reason() {
        for bad in [
            "throttle=2",
            "latency=fast",
            "nosuchop:error=0.1",
            "jitter=1",
            "drop",
            "throttle-first=-1",
            "latency=2h",
            "latency=60.001m",
            "latency=3600001",
            "deny=yes",
            "expired-token=1.5",
            "lose-answer=2",
            "lose-answer-first=x",
        ] {
            assert!(FaultSpec::parse(bad).is_err(), "{bad}");
        }
        assert!(FaultSpec::parse("").unwrap().is_empty());
        let s = FaultSpec::parse("latency=1.5s+50 ms").unwrap();
        let f = s.for_op("listservicejobs");
        assert_eq!((f.latency_ms, f.jitter_ms), (1_500, 50));
        let s = FaultSpec::parse("latency=1h+250").unwrap();
        let f = s.for_op("listservicejobs");
        assert_eq!((f.latency_ms, f.jitter_ms), (3_600_000, 250));
    }

    #[test]
    fn hold_is_per_operation_and_counted() {
        let spec = FaultSpec::parse("updateservicejob:hold=1.5s").unwrap();
        assert_eq!(spec.for_op("updateservicejob").hold_ms, 1500);
        assert_eq!(spec.for_op("listservicejobs").hold_ms, 0);
        assert!(FaultSpec::parse("hold=2h").is_err(), "at most an hour");
        let f = FaultInjector::new(spec);
        assert_eq!(f.hold("listservicejobs"), Duration::ZERO);
        assert_eq!(f.hold("updateservicejob"), Duration::from_millis(1500));
        assert_eq!(f.stats().held, 1);
    }

    #[test]
    fn draws_are_seeded_per_operation_and_rates_hold() {
        let run = |interleave: bool| {
            let inj = FaultInjector::new(FaultSpec::parse("throttle=0.3,seed=4").unwrap());
            (0..1000)
                .map(|_| {
                    if interleave {
                        inj.decide("describeservicejob");
                    }
                    inj.decide("listservicejobs").1
                })
                .collect::<Vec<_>>()
        };
        let a = run(false);
        assert_eq!(a, run(true));
        let throttled = a.iter().filter(|d| **d == Decision::Throttle).count();
        assert!((200..400).contains(&throttled), "{throttled}");
    }

    #[test]
    fn spec_changes_at_runtime_and_calls_are_counted() {
        let inj = FaultInjector::new(FaultSpec::parse("throttle=1").unwrap());
        assert_eq!(inj.decide("listservicejobs").1, Decision::Throttle);
        inj.set_spec(FaultSpec::none());
        assert_eq!(inj.decide("listservicejobs").1, Decision::Proceed);
        inj.decide("describeservicejob");
        assert_eq!(inj.calls("listservicejobs"), 2);
        assert_eq!(inj.calls("describeservicejob"), 1);
        assert_eq!(inj.calls("getjobqueuesnapshot"), 0);
    }

    #[test]
    fn lost_answers_come_after_the_other_faults_and_leave_their_draws_alone() {
        let inj = FaultInjector::new(
            FaultSpec::parse(
                "createquotashare:lose-answer-first=1;deletequotashare:throttle=1,lose-answer=1",
            )
            .unwrap(),
        );
        let d: Vec<Decision> = (0..2).map(|_| inj.decide("createquotashare").1).collect();
        assert_eq!(d, [Decision::LoseAnswer, Decision::Proceed]);
        // A throttled call never reaches the handler, so it has no answer to lose.
        assert_eq!(inj.decide("deletequotashare").1, Decision::Throttle);
        assert_eq!(inj.stats().answers_lost, 1);
        let run = |spec: &str| {
            let inj = FaultInjector::new(FaultSpec::parse(spec).unwrap());
            (0..200)
                .map(|_| inj.decide("listservicejobs").1)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            run("throttle=0.3,error=0.2,seed=2"),
            run("throttle=0.3,error=0.2,lose-answer=0,seed=2")
        );
        let lost = run("lose-answer=0.5,seed=3")
            .iter()
            .filter(|d| **d == Decision::LoseAnswer)
            .count();
        assert!((60..140).contains(&lost), "{lost}");
    }

    #[test]
    fn throttle_first_then_proceed() {
        let inj =
            FaultInjector::new(FaultSpec::parse("describejobqueues:throttle-first=2").unwrap());
        let d: Vec<Decision> = (0..3).map(|_| inj.decide("describejobqueues").1).collect();
        assert_eq!(
            d,
            [Decision::Throttle, Decision::Throttle, Decision::Proceed]
        );
        assert_eq!(inj.decide("listservicejobs").1, Decision::Proceed);
        assert_eq!(inj.stats().throttled, 2);
    }

    #[test]
    fn credential_faults_answer_403_before_throttling_and_leave_other_draws_alone() {
        let spec =
            FaultSpec::parse("deny=1,throttle=1;describeservicejob:deny=0,expired-token=100%")
                .unwrap();
        assert_eq!(spec.for_op("listservicejobs").deny, 1.0);
        let inj = FaultInjector::new(spec);
        assert_eq!(inj.decide("listservicejobs").1, Decision::AccessDenied);
        assert_eq!(inj.decide("describeservicejob").1, Decision::ExpiredToken);
        assert_eq!(inj.stats().denied, 2);
        assert_eq!(inj.stats().throttled, 0);
        // A spec with a credential fault that never fires draws the same throttles as without.
        let run = |spec: &str| {
            let inj = FaultInjector::new(FaultSpec::parse(spec).unwrap());
            (0..200)
                .map(|_| inj.decide("listservicejobs").1)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            run("throttle=0.3,seed=2"),
            run("throttle=0.3,deny=0,seed=2")
        );
    }
}
