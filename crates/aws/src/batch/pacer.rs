//! [`Pacer`]: a client-side rate limiter **per operation** for the poller's reads.
//!
//! The SDK's adaptive retry mode has one token bucket for the whole client: a 429 on
//! ListServiceJobs also slows DescribeServiceJob, and after a throttle it held a 10/s describe
//! limit to 2.4/s (docs/figures.md, "Cold start at scale"). Here each operation learns its own rate:
//!
//! - `None` (unlimited) until the operation meets a 429;
//! - on a 429 the rate becomes the operation's answered calls over the last [`WINDOW`]
//!   (at least [`FLOOR`]); in the operation's first [`WINDOW`], over the time it has been
//!   used, counted as at least [`MIN_SPAN`] (a 429 half a second into a run is not a rate
//!   half of what got through);
//! - while no 429 is met it rises by [`RAISE`] per second, so a higher limit is found again;
//! - after [`FORGET`] without a 429 it is forgotten (unlimited again).
//!
//! Attempts are given slots `1/rate` apart, shared by every concurrent caller of the operation.
//! [`PacePolicy`] is the pure policy (time is passed in, so it is tested with a fake clock);
//! [`Pacer`] wraps it in a lock and sleeps until the slot.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::Op;

/// The span over which answered calls are counted to learn a rate on a 429.
pub const WINDOW: Duration = Duration::from_secs(2);
/// The shortest span a rate is learned over: an operation throttled within its first second
/// is taken to have been used for one (its first answers are usually a burst the service's
/// bucket allows at once; dividing them by less would learn a rate the burst, not the limit,
/// made).
pub const MIN_SPAN: Duration = Duration::from_secs(1);
/// The lowest learned rate (calls per second).
pub const FLOOR: f64 = 0.5;
/// Factor by which a learned rate rises per second without a 429.
pub const RAISE: f64 = 1.1;
/// A learned rate is forgotten after this long without a 429. Short: a rate learned while the
/// operation was lightly used (its answered calls are then its demand, not its limit) must not
/// hold back the backlog that follows an outage (the soak's recovery, 20 s); under a real limit
/// the rate rising by [`RAISE`] meets a 429 again within a few seconds and stays learned.
pub const FORGET: Duration = Duration::from_secs(8);

/// The pacing state of one operation.
#[derive(Debug, Clone)]
struct OpPace {
    rate: Option<f64>,
    /// When the operation was first used (the span its first answers were counted over).
    since: Instant,
    /// The earliest start of the next attempt.
    next_slot: Instant,
    /// When the rate last rose (or was learned).
    adjusted: Instant,
    last_throttle: Option<Instant>,
    /// Answered (not throttled) calls within [`WINDOW`].
    answered: VecDeque<Instant>,
}

impl OpPace {
    fn new(now: Instant) -> Self {
        Self {
            rate: None,
            since: now,
            next_slot: now,
            adjusted: now,
            last_throttle: None,
            answered: VecDeque::new(),
        }
    }

    /// Raises or forgets the rate for the time passed since the last adjustment.
    fn age(&mut self, now: Instant) {
        if self
            .last_throttle
            .is_some_and(|t| now.saturating_duration_since(t) >= FORGET)
        {
            self.rate = None;
            self.last_throttle = None;
        }
        if let Some(r) = self.rate {
            // Idle time counts too: a rate learned from a short spell of throttling (or from
            // random 429s of a lightly used operation) recovers within seconds once they stop;
            // a rate risen too far costs one 429 and is learned again.
            let dt = now.saturating_duration_since(self.adjusted);
            self.rate = Some(r * RAISE.powf(dt.as_secs_f64()));
        }
        self.adjusted = now;
    }

    fn prune(&mut self, now: Instant) {
        while self
            .answered
            .front()
            .is_some_and(|t| now.saturating_duration_since(*t) > WINDOW)
        {
            self.answered.pop_front();
        }
    }
}

/// The pure pacing policy of every operation; see the module doc.
#[derive(Debug, Clone, Default)]
pub struct PacePolicy {
    ops: HashMap<Op, OpPace>,
}

impl PacePolicy {
    /// Reserves the next slot of `op` at `now`: the instant the attempt may start (`now` when
    /// the operation is unlimited or its slot has come).
    pub fn reserve(&mut self, op: Op, now: Instant) -> Instant {
        let p = self.ops.entry(op).or_insert_with(|| OpPace::new(now));
        p.age(now);
        match p.rate {
            None => {
                p.next_slot = now;
                now
            }
            Some(rate) => {
                let slot = p.next_slot.max(now);
                p.next_slot = slot + Duration::from_secs_f64(1.0 / rate.max(FLOOR));
                slot
            }
        }
    }

    /// An attempt of `op` was answered (anything but a throttle).
    pub fn answered(&mut self, op: Op, now: Instant) {
        let p = self.ops.entry(op).or_insert_with(|| OpPace::new(now));
        p.prune(now);
        p.answered.push_back(now);
    }

    /// An attempt of `op` was throttled: its rate becomes its answered calls per second over
    /// the last [`WINDOW`], or over the time since its first use when that is shorter (at
    /// least [`MIN_SPAN`]); at least [`FLOOR`].
    pub fn throttled(&mut self, op: Op, now: Instant) {
        let p = self.ops.entry(op).or_insert_with(|| OpPace::new(now));
        p.prune(now);
        let span = now
            .saturating_duration_since(p.since)
            .clamp(MIN_SPAN, WINDOW);
        let observed = p.answered.len() as f64 / span.as_secs_f64();
        p.rate = Some(observed.max(FLOOR));
        p.adjusted = now;
        p.last_throttle = Some(now);
    }

    /// Whether any call of `op` was answered within the last [`WINDOW`] (`false`: every call
    /// is being throttled, a sustained throttle rather than a rate to fit).
    pub fn getting_through(&mut self, op: Op, now: Instant) -> bool {
        self.ops.get_mut(&op).is_some_and(|p| {
            p.prune(now);
            !p.answered.is_empty()
        })
    }

    /// The current rate of `op` (`None`: unlimited, no 429 met lately).
    pub fn rate(&self, op: Op, now: Instant) -> Option<f64> {
        let mut p = self.ops.get(&op)?.clone();
        p.age(now);
        p.rate
    }
}

/// [`PacePolicy`] behind a lock, shared by the clones of a client.
#[derive(Debug, Clone, Default)]
pub struct Pacer(Arc<Mutex<PacePolicy>>);

impl Pacer {
    fn policy(&self) -> MutexGuard<'_, PacePolicy> {
        // The policy holds no invariant a panicking holder could break half-way.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits for the next slot of `op`.
    pub async fn acquire(&self, op: Op) {
        let now = Instant::now();
        let slot = self.policy().reserve(op, now);
        if slot > now {
            tokio::time::sleep_until(tokio::time::Instant::from_std(slot)).await;
        }
    }

    pub fn answered(&self, op: Op) {
        self.policy().answered(op, Instant::now());
    }

    pub fn throttled(&self, op: Op) {
        self.policy().throttled(op, Instant::now());
    }

    pub fn getting_through(&self, op: Op) -> bool {
        self.policy().getting_through(op, Instant::now())
    }

    pub fn rate(&self, op: Op) -> Option<f64> {
        self.policy().rate(op, Instant::now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: Op = Op::DescribeServiceJob;
    const L: Op = Op::ListServiceJobs;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn unlimited_until_a_throttle() {
        let t0 = Instant::now();
        let mut p = PacePolicy::default();
        for i in 0..50 {
            assert_eq!(p.reserve(D, t0 + ms(i)), t0 + ms(i));
        }
        assert_eq!(p.rate(D, t0), None);
    }

    #[test]
    fn a_throttle_learns_the_answered_rate_and_spaces_slots() {
        let t0 = Instant::now();
        let mut p = PacePolicy::default();
        // 20 answered in the last 2 s: 10/s.
        for i in 0..20 {
            p.answered(D, t0 + ms(100 * i));
        }
        let now = t0 + ms(2000);
        p.throttled(D, now);
        let r = p.rate(D, now).unwrap();
        assert!((r - 10.0).abs() < 1e-9, "{r}");
        // Concurrent callers share the slots: 100 ms apart.
        let a = p.reserve(D, now);
        let b = p.reserve(D, now);
        let c = p.reserve(D, now);
        assert_eq!(a, now);
        assert!(b.duration_since(a) >= ms(99) && b.duration_since(a) <= ms(101));
        assert!(c.duration_since(b) >= ms(99) && c.duration_since(b) <= ms(101));
    }

    #[test]
    fn a_throttle_early_in_a_run_counts_the_time_used_not_the_whole_window() {
        // A token bucket of 10/s with a second's burst: 10 answered at once, then a 429 after
        // 100 ms. Over the whole 2 s window that would be 5/s, half the limit, and rising by
        // 10% a second it took 7 s to reach 10/s (about 2 s of calls lost at every start).
        let t0 = Instant::now();
        let mut p = PacePolicy::default();
        p.reserve(D, t0);
        for i in 0..10 {
            p.answered(D, t0 + ms(5 * i));
        }
        p.throttled(D, t0 + ms(100));
        let r = p.rate(D, t0 + ms(100)).unwrap();
        assert!((r - 10.0).abs() < 1e-9, "{r}");
        // 15 answered in the first 1.5 s: 10/s.
        let mut p = PacePolicy::default();
        p.reserve(D, t0);
        for i in 0..15 {
            p.answered(D, t0 + ms(100 * i));
        }
        p.throttled(D, t0 + ms(1_500));
        let r = p.rate(D, t0 + ms(1_500)).unwrap();
        assert!((r - 10.0).abs() < 1e-9, "{r}");
    }

    #[test]
    fn old_answers_do_not_count_and_the_rate_has_a_floor() {
        let t0 = Instant::now();
        let mut p = PacePolicy::default();
        for i in 0..100 {
            p.answered(D, t0 + ms(i));
        }
        let now = t0 + ms(10_000);
        assert!(!p.getting_through(D, now));
        p.throttled(D, now);
        assert_eq!(p.rate(D, now), Some(FLOOR));
        p.answered(D, now + ms(1));
        assert!(p.getting_through(D, now + ms(2)));
        assert!(!p.getting_through(L, now + ms(2)));
    }

    #[test]
    fn a_throttle_on_one_operation_never_slows_another() {
        let t0 = Instant::now();
        let mut p = PacePolicy::default();
        p.answered(L, t0);
        p.throttled(L, t0 + ms(10));
        // One answered in its first second (10 ms of use count as a second): 1/s.
        assert_eq!(p.rate(L, t0 + ms(10)), Some(1.0));
        for i in 0..20 {
            let at = t0 + ms(10 + i);
            assert_eq!(p.reserve(D, at), at);
        }
        assert_eq!(p.rate(D, t0 + ms(100)), None);
    }

    #[test]
    fn the_rate_rises_gently_without_throttles_and_is_forgotten_later() {
        let t0 = Instant::now();
        let mut p = PacePolicy::default();
        for i in 0..20 {
            p.answered(D, t0 + ms(100 * i));
        }
        let t1 = t0 + ms(2000);
        p.throttled(D, t1);
        // Used every 100 ms for 5 s: ×1.1 per second.
        let mut at = t1;
        for _ in 0..50 {
            at += ms(100);
            p.reserve(D, at);
        }
        let r = p.rate(D, at).unwrap();
        let want = 10.0 * RAISE.powi(5);
        assert!((r - want).abs() < 0.01, "{r} vs {want}");
        // Idle for 2 s: the same rise.
        let later = at + Duration::from_secs(2);
        let r2 = p.rate(D, later).unwrap();
        let want = r * RAISE.powi(2);
        assert!((r2 - want).abs() < 0.01, "{r2} vs {want}");
        // FORGET without a throttle: unlimited again.
        let much_later = t1 + FORGET;
        assert_eq!(p.rate(D, much_later), None);
        assert_eq!(p.reserve(D, much_later), much_later);
    }

    #[test]
    fn a_new_throttle_relearns_from_recent_answers() {
        let t0 = Instant::now();
        let mut p = PacePolicy::default();
        for i in 0..40 {
            p.answered(D, t0 + ms(50 * i));
        }
        let t1 = t0 + ms(2000);
        p.throttled(D, t1);
        assert!((p.rate(D, t1).unwrap() - 20.0).abs() < 0.6);
        // Only 6 answered in the next 2 s: the next throttle learns 3/s.
        for i in 0..6 {
            p.answered(D, t1 + ms(300 * i + 100));
        }
        let t2 = t1 + ms(2050);
        p.throttled(D, t2);
        assert!((p.rate(D, t2).unwrap() - 3.0).abs() < 1e-9);
    }
}
