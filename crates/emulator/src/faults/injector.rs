//! Drawing the faults of each request ([`FaultInjector`]), seeded per operation, and counting
//! requests and injected faults.

use std::collections::HashMap;
use std::sync::{Mutex, RwLock};
use std::time::{Duration, Instant};

use super::super::hash::fnv1a;
use super::super::rate_limit::Bucket;
use super::FaultSpec;
use quotatop_engine::Rng;

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
        let seed = seed ^ fnv1a(op.bytes());
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
