//! Every scheduling choice AWS leaves open (reference §7), made once, here.
//!
//! docs/emulator.md's "Scheduling semantics" section mirrors this list; change both together. The pass
//! and the victim selection that apply rules 2–7 are [`super::placement`], which the
//! priority-change preview (`quotatop_analysis::preview`) runs too, so it predicts what the
//! engine does.
//!
//! 1. **Dispatch order inside a share**: `schedulingPriority` descending, then `createdAt`
//!    ascending, then submission order ([`queue_key`]).
//! 2. **Head-of-line blocking**: per share and instance type. A job that cannot be placed blocks
//!    the jobs behind it in the same share and instance type, so large jobs are not starved by
//!    small ones. Misconfigured jobs never block: they wait on their own list.
//! 3. **Pass order**: first every share's jobs that fit inside the share's own limit (shares in
//!    creation order), then jobs that must borrow, across shares, oldest `createdAt` first: this
//!    is our reading of `idleResourceAssignmentStrategy = FIFO`.
//! 4. **Borrowing** is fungible per instance type: the idle capacity of every `LEND` and
//!    `LEND_AND_BORROW` share forms one pool, and borrowed capacity is not tied to one lender. A
//!    job may combine its share's remaining own capacity with borrowed capacity. Within a share,
//!    the jobs dispatched last are the ones counted as borrowing ([`borrowed_portions`]).
//! 5. **Capacity outside every share** (service environment capacity beyond the sum of the
//!    shares' limits) is used by nobody. Over-subscription (limits summing to more than the
//!    environment) is accepted; the environment's capacity is never exceeded. So a lender whose
//!    idle capacity is lent out reclaims it by preemption even while the environment has idle
//!    instances outside every share: borrowed capacity is the lender's, not the environment's.
//! 6. **Cross-share preemption** happens when a job that fits its share's own limit cannot be
//!    placed because its share's idle capacity is lent out. Victims are chosen by
//!    [`cross_share_victim_key`]. Nothing is preempted unless the preemptions would make room.
//! 7. **In-share preemption** (where enabled) considers only jobs of strictly lower priority in
//!    SCHEDULED, STARTING or RUNNING, chosen by [`in_share_victim_key`], and only after reclaiming
//!    lent capacity is not enough.
//! 8. **Lowering a limit** preempts at once the share's jobs that exceed what the share may now
//!    hold (own limit, plus its borrow limit when it borrows); within that, they stay and are
//!    reclaimed on demand like any borrower.
//! 9. **Preemption** takes the configured delay, during which the job keeps its capacity and its
//!    status, with reason `PREEMPTION_IN_PROGRESS: …`. Then it is RUNNABLE again, or FAILED when
//!    `preemptedAttemptCount > preemptionRetriesBeforeTermination`. Preemptions do not consume
//!    `retryStrategy.attempts`. The recent-attempts window keeps the newest
//!    [`super::EngineConfig::recent_preemptions`] attempts, newest first, and every attempt also
//!    appears in `attempts`.
//! 10. **Work**: a job runs for its amount of work while RUNNING; a preempted job resumes from its
//!     last checkpoint (a multiple of its checkpoint interval), or from zero without one.
//! 11. **Default priority** is 0. Priority updates are refused for finished jobs.
//! 12. **Misconfiguration** checks run in the order of [`misconfiguration`] and are re-evaluated
//!     whenever a share changes.
//! 13. **Failed attempts** end by timeout (`attemptDurationSeconds`, from RUNNING), by
//!     `MaxRuntimeInSeconds` (from RUNNING, when the work would take longer; a job whose work
//!     ends exactly at its limit completes), or by an injected error; whichever comes first.
//!     Whether they are retried: [`retry_after_failure`]. Reasons: [`FailureKind::reason`].

use std::cmp::Reverse;

use quotatop_model::{Millis, SharingConfig};

/// The in-share queue key: priority descending, then created ascending, then submission order.
pub type QueueKey = (Reverse<u32>, Millis, u32);

pub fn queue_key(priority: u32, created_at: Millis, job: u32) -> QueueKey {
    (Reverse(priority), created_at, job)
}

/// What the victim heuristics see of a dispatched job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VictimFacts {
    pub priority: u32,
    /// Time since the current attempt was scheduled (or started).
    pub elapsed_ms: Millis,
    /// Instances of the needed type counted as borrowed.
    pub borrowed: u32,
    pub job: u32,
}

/// Cross-share victims: lowest priority first, then the shortest-running (least work lost), then
/// the one borrowing most (fewest preemptions), then the most recently submitted.
pub fn cross_share_victim_key(v: &VictimFacts) -> (u32, Millis, Reverse<u32>, Reverse<u32>) {
    (
        v.priority,
        v.elapsed_ms,
        Reverse(v.borrowed),
        Reverse(v.job),
    )
}

/// In-share and limit-reduction victims: lowest priority first, then the shortest-running.
pub fn in_share_victim_key(v: &VictimFacts) -> (u32, Millis, Reverse<u32>) {
    (v.priority, v.elapsed_ms, Reverse(v.job))
}

/// Splits a share's usage of one type into own and borrowed per job: jobs in dispatch order fill
/// the own limit first; whatever comes after is borrowed. Returns the borrowed part of each job
/// in the order given.
pub fn borrowed_portions(own: u32, counts_in_dispatch_order: &[u32]) -> Vec<u32> {
    let mut room = own;
    counts_in_dispatch_order
        .iter()
        .map(|&c| {
            let from_own = c.min(room);
            room -= from_own;
            c - from_own
        })
        .collect()
}

/// Why a job can never be placed with the current configuration (it stays RUNNABLE).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Misconfiguration {
    /// RESERVE or LEND share, job larger than the share's limit.
    ExceedsShareLimit,
    /// LEND_AND_BORROW share, job larger than limit plus borrow limit.
    ExceedsShareAndBorrowLimit,
    /// LEND_AND_BORROW share, job needs more than all lendable capacity of the other shares.
    ExceedsBorrowableCapacity,
    /// Job larger than the service environment's capacity for its instance type.
    ExceedsServiceEnvironment,
}

impl Misconfiguration {
    pub const ALL: [Self; 4] = [
        Self::ExceedsShareLimit,
        Self::ExceedsShareAndBorrowLimit,
        Self::ExceedsBorrowableCapacity,
        Self::ExceedsServiceEnvironment,
    ];

    /// The misconfiguration a `statusReason` names: one of AWS's exact texts, or the code that
    /// only one of them has (`SERVICE_ENVIRONMENT_MAX_RESOURCE`; the quota-share code is shared
    /// by three).
    pub fn from_reason(reason: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|m| reason.trim() == m.reason())
            .or_else(|| {
                reason
                    .contains("SERVICE_ENVIRONMENT_MAX_RESOURCE")
                    .then_some(Self::ExceedsServiceEnvironment)
            })
    }

    /// The exact `statusReason` AWS documents.
    pub fn reason(self) -> &'static str {
        match self {
            Self::ExceedsShareLimit => {
                "MISCONFIGURATION:QUOTA_MANAGEMENT_LIMIT_EXCEEDED - Job requirements exceed quota share capacity limits."
            }
            Self::ExceedsShareAndBorrowLimit => {
                "MISCONFIGURATION:QUOTA_MANAGEMENT_LIMIT_EXCEEDED - Job requirements exceed quota share capacity limits and borrow limits."
            }
            Self::ExceedsBorrowableCapacity => {
                "MISCONFIGURATION:QUOTA_MANAGEMENT_LIMIT_EXCEEDED - Job requires borrowing that exceeds all configured borrowable capacity."
            }
            Self::ExceedsServiceEnvironment => {
                "MISCONFIGURATION:SERVICE_ENVIRONMENT_MAX_RESOURCE - Service environment(s) associated with the job queue cannot meet the capacity requirement of the job."
            }
        }
    }
}

/// Checks in order: the share's own limit (and borrow limit), the lendable capacity of the other
/// shares, then the service environment.
///
/// `lendable_elsewhere` is the sum of the limits for this type of every *other* share that lends.
pub fn misconfiguration(
    count: u32,
    own: u32,
    sharing: &SharingConfig,
    lendable_elsewhere: u64,
    environment: u32,
) -> Option<Misconfiguration> {
    if !sharing.strategy.borrows() {
        if count > own {
            return Some(Misconfiguration::ExceedsShareLimit);
        }
    } else {
        if let Some(cap) = sharing.borrow_cap(own)
            && count as u64 > own as u64 + cap as u64
        {
            return Some(Misconfiguration::ExceedsShareAndBorrowLimit);
        }
        if count > own && (count - own) as u64 > lendable_elsewhere {
            return Some(Misconfiguration::ExceedsBorrowableCapacity);
        }
    }
    if count > environment {
        return Some(Misconfiguration::ExceedsServiceEnvironment);
    }
    None
}

/// What triggered a preemption.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PreemptionKind {
    CrossShare,
    InShare,
    LimitReduced,
}

impl PreemptionKind {
    /// The attempt's `statusReason`. Cross-share is AWS's documented text; the other two are this
    /// emulator's wording (AWS does not document them).
    pub fn reason(self) -> &'static str {
        match self {
            Self::CrossShare => "Cross-share preemption triggered to reclaim borrowed capacity",
            Self::InShare => "In-share preemption triggered by a higher priority job",
            Self::LimitReduced => "Quota share capacity limit reduced below current usage",
        }
    }
    /// The job's `statusReason` while the preemption is in progress.
    pub fn in_progress_reason(self) -> String {
        format!("PREEMPTION_IN_PROGRESS: {}", self.reason())
    }
}

/// Why an attempt failed (other than by preemption or termination).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailureKind {
    /// `timeoutConfig.attemptDurationSeconds` reached, counted from the attempt's start (RUNNING).
    Timeout,
    /// The training job reached `StoppingCondition.MaxRuntimeInSeconds` before finishing its
    /// work. SageMaker stops it (MaxRuntimeExceeded), which Batch reports as FAILED.
    MaxRuntime,
    /// The training job itself failed (a scenario's or a tag's injected failure).
    Error,
}

impl FailureKind {
    /// The attempt's (and, when not retried, the job's) `statusReason`. The timeout text is AWS
    /// Batch's; the other two are this emulator's wording in SageMaker's style.
    pub fn reason(self) -> &'static str {
        match self {
            Self::Timeout => "Job attempt duration exceeded timeout",
            Self::MaxRuntime => {
                "MaxRuntimeExceeded: Training job reached StoppingCondition.MaxRuntimeInSeconds"
            }
            Self::Error => "AlgorithmError: Training job failed",
        }
    }
}

/// `retryStrategy.evaluateOnExit[].action`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryAction {
    Retry,
    Exit,
}

/// One `evaluateOnExit` entry: `onStatusReason` (a glob) and its action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryRule {
    pub on_status_reason: String,
    pub action: RetryAction,
}

/// 13. **Retries after a failed attempt** (`retryStrategy`): a failed attempt is retried while
///     fewer than `attempts` attempts have failed, unless the first `evaluateOnExit` entry whose
///     `onStatusReason` glob matches the reason says EXIT; when no entry matches, it is retried
///     (AWS's rule for retry strategies). Preemptions never count against `attempts` (rule 9).
///     A retried job is RUNNABLE again and resumes from its last checkpoint, after its restart
///     overhead, as after a preemption.
pub fn retry_after_failure(failed: u32, attempts: u32, rules: &[RetryRule], reason: &str) -> bool {
    if failed >= attempts {
        return false;
    }
    rules
        .iter()
        .find(|r| glob_matches(&r.on_status_reason, reason))
        .is_none_or(|r| r.action == RetryAction::Retry)
}

/// `*` matches any run of characters, `?` any one; everything else matches itself.
pub fn glob_matches(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while let Some(&tc) = t.get(ti) {
        let pc = p.get(pi).copied();
        if pc.is_some_and(|c| c == '?' || c == tc) {
            pi += 1;
            ti += 1;
        } else if pc == Some('*') {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p.iter().skip(pi).all(|&c| c == '*')
}

/// FAILED reason once preemption retries are exhausted (emulator wording; AWS does not document
/// it).
pub fn retries_exhausted_reason(count: u32) -> String {
    format!("Preemption retries exhausted after {count} preemptions")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_and_retry_decisions() {
        assert!(glob_matches("Job attempt*", FailureKind::Timeout.reason()));
        assert!(glob_matches(
            "*MaxRuntime*",
            FailureKind::MaxRuntime.reason()
        ));
        assert!(glob_matches("a?c", "abc"));
        assert!(!glob_matches("Job", "Job attempt"));
        assert!(glob_matches("", ""));
        assert!(!glob_matches("", "x"));
        let exit_on_timeout = [RetryRule {
            on_status_reason: "Job attempt duration*".into(),
            action: RetryAction::Exit,
        }];
        let t = FailureKind::Timeout.reason();
        let e = FailureKind::Error.reason();
        assert!(!retry_after_failure(1, 3, &exit_on_timeout, t));
        // No entry matches: retried.
        assert!(retry_after_failure(1, 3, &exit_on_timeout, e));
        // Attempts used up.
        assert!(!retry_after_failure(3, 3, &exit_on_timeout, e));
        assert!(!retry_after_failure(1, 1, &[], e));
    }

    #[test]
    fn borrowed_portions_fill_own_first() {
        assert_eq!(borrowed_portions(4, &[2, 1, 3]), vec![0, 0, 2]);
        assert_eq!(borrowed_portions(0, &[2]), vec![2]);
        assert_eq!(borrowed_portions(10, &[2, 3]), vec![0, 0]);
    }

    #[test]
    fn reference_examples_of_largest_job() {
        // 2 instances, borrowLimit 100: largest job is 4.
        let s = SharingConfig::lend_and_borrow(100);
        assert_eq!(misconfiguration(4, 2, &s, 100, 100), None);
        assert_eq!(
            misconfiguration(5, 2, &s, 100, 100),
            Some(Misconfiguration::ExceedsShareAndBorrowLimit)
        );
        // 4 with 200, the other share lends 4: max 8 (own 4 + 4 from B); 10 exceeds what can be
        // borrowed although the borrow limit alone would allow 12.
        let s = SharingConfig::lend_and_borrow(200);
        assert_eq!(misconfiguration(8, 4, &s, 4, 100), None);
        assert_eq!(
            misconfiguration(10, 4, &s, 4, 100),
            Some(Misconfiguration::ExceedsBorrowableCapacity)
        );
        assert_eq!(
            misconfiguration(13, 4, &s, 40, 100),
            Some(Misconfiguration::ExceedsShareAndBorrowLimit)
        );
        // Unlimited borrowing, but only 4 lendable: 9 needs 5 borrowed.
        let s = SharingConfig::lend_and_borrow(-1);
        assert_eq!(
            misconfiguration(9, 4, &s, 4, 100),
            Some(Misconfiguration::ExceedsBorrowableCapacity)
        );
    }
}
