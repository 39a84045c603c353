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
//!           | deliver-drop=P               an EventBridge delivery to SQS is lost
//!           | deliver-duplicate=P          a delivery arrives twice (two messages, one event id)
//!           | deliver-reorder=P            a delivery is held back 1 s (real time), so the
//!                                          deliveries after it overtake it
//!           | deliver-delay=DUR            every delivery becomes visible DUR later
//!                                          (the deliver-* settings are global: no OPS)
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

//!
//! This file holds the spec and its parsing; drawing the faults of each request is in `injector`.

mod injector;
#[cfg(test)]
mod tests;

use super::error::EmulatorError;
pub use super::rate_limit::RateLimit;
use super::rate_limit::{default_burst, parse_rate, rate_with_op};
use super::routes::OPERATIONS;
use quotatop_model::Millis;

pub use injector::{Decision, FaultInjector, FaultStats};

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

/// Faults of EventBridge's deliveries to SQS (the `deliver-*` settings), drawn per delivery.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct DeliveryFaults {
    pub drop: f64,
    pub duplicate: f64,
    pub reorder: f64,
    pub delay_ms: u64,
    /// The spec's seed (the draws' generator starts from it).
    pub seed: u64,
}

/// A parsed fault spec.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FaultSpec {
    pub seed: u64,
    rules: Vec<Rule>,
    delivery: DeliveryFaults,
}

impl FaultSpec {
    /// No faults.
    pub fn none() -> Self {
        Self::default()
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty() && self.delivery == DeliveryFaults::default()
    }

    /// The delivery faults, with the spec's seed.
    pub fn delivery(&self) -> DeliveryFaults {
        DeliveryFaults {
            seed: self.seed,
            ..self.delivery
        }
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
                let key = key.trim();
                if key.starts_with("deliver-") {
                    set_delivery(&mut out.delivery, key, value, rule.ops.is_some())?;
                    continue;
                }
                match key {
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
                            "unknown setting {other:?} (latency, hold, throttle, throttle-first, error, drop, deny, expired-token, lose-answer, lose-answer-first, rate, burst, seed, deliver-drop, deliver-duplicate, deliver-reorder, deliver-delay)"
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

/// One `deliver-*` setting (refused in a rule with operations: it applies to every delivery).
fn set_delivery(
    d: &mut DeliveryFaults,
    key: &str,
    value: &str,
    with_ops: bool,
) -> Result<(), EmulatorError> {
    if with_ops {
        return Err(bad(format!(
            "{key} applies to every EventBridge delivery: give it without operations (e.g. \"{key}={value}\")"
        )));
    }
    match key {
        "deliver-drop" => d.drop = parse_probability(value)?,
        "deliver-duplicate" => d.duplicate = parse_probability(value)?,
        "deliver-reorder" => d.reorder = parse_probability(value)?,
        "deliver-delay" => d.delay_ms = parse_latency(value)?,
        other => {
            return Err(bad(format!(
                "unknown setting {other:?} (deliver-drop, deliver-duplicate, deliver-reorder, deliver-delay)"
            )));
        }
    }
    Ok(())
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
