//! What an attempt's times and end mean, defined once: every layer (the engine, the journal,
//! the priority preview, the console's attempt lists, the scorecard) asks these functions.
//!
//! - An attempt **ended by preemption** only when the API says so: it is among the preemption
//!   summary's preempted attempts, or its own `statusReason` is a preemption reason
//!   ([`says_preempted`]). Any other stop before the job's end (`AlgorithmError`, a timeout, no
//!   reason at all) is a **failed** attempt: a retry is not a preemption.
//! - An attempt's **start** ([`attempt_start`]) is when its run began: `startedAt`, else (still
//!   SCHEDULED or STARTING) `scheduledAt`. It is what "how long has it been running" (victim
//!   choice, time at risk) counts from.
//! - An attempt **holds capacity from** ([`held_from`]) `scheduledAt`, else `startedAt`: what
//!   the GPU-time ledger counts held time from.

use crate::Millis;

/// How a stopped attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptStop {
    /// Preempted: the preemption summary lists it, or its reason says it was preempted.
    Preempted,
    /// The job's final attempt, which SUCCEEDED.
    Completed,
    /// Anything else: failed, timed out or terminated (retried or not).
    Failed,
}

/// The reasons the service gives a preempted attempt (cross-share, in-share, and the
/// preemption of a share's usage above a reduced limit), and the job's reason while one is in
/// progress (`PREEMPTION_IN_PROGRESS: …`).
pub fn says_preempted(reason: &str) -> bool {
    let r = reason.to_ascii_lowercase();
    r.contains("preempt") || r.contains("capacity limit reduced below current usage")
}

/// How an attempt that stopped ended: `in_preemption_summary` when the job's
/// `preemptionSummary` lists it; `completed_job` when it is the attempt that ended a job that
/// SUCCEEDED.
pub fn attempt_stop(
    reason: Option<&str>,
    in_preemption_summary: bool,
    completed_job: bool,
) -> AttemptStop {
    if in_preemption_summary || reason.is_some_and(says_preempted) {
        AttemptStop::Preempted
    } else if completed_job {
        AttemptStop::Completed
    } else {
        AttemptStop::Failed
    }
}

/// When an attempt's run began: `startedAt`, else `scheduledAt` (`None`: neither is known).
pub fn attempt_start(started_at: Option<Millis>, scheduled_at: Option<Millis>) -> Option<Millis> {
    started_at.or(scheduled_at)
}

/// When an attempt began to hold capacity: `scheduledAt`, else `startedAt`.
pub fn held_from(scheduled_at: Option<Millis>, started_at: Option<Millis>) -> Option<Millis> {
    scheduled_at.or(started_at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_preemption_reason_or_record_makes_a_preemption() {
        use AttemptStop::*;
        let cross = "Cross-share preemption triggered to reclaim borrowed capacity";
        let limit = "Quota share capacity limit reduced below current usage";
        assert_eq!(attempt_stop(Some(cross), false, false), Preempted);
        assert_eq!(attempt_stop(Some(limit), false, false), Preempted);
        assert_eq!(attempt_stop(Some("x"), true, false), Preempted);
        let failure = "AlgorithmError: Training job failed";
        assert_eq!(attempt_stop(Some(failure), false, false), Failed);
        assert_eq!(attempt_stop(None, false, false), Failed);
        assert_eq!(attempt_stop(Some("Completed"), false, true), Completed);
    }

    #[test]
    fn start_counts_from_the_run_and_hold_from_the_scheduling() {
        assert_eq!(attempt_start(Some(20), Some(10)), Some(20));
        assert_eq!(attempt_start(None, Some(10)), Some(10));
        assert_eq!(held_from(Some(10), Some(20)), Some(10));
        assert_eq!(held_from(None, Some(20)), Some(20));
        assert_eq!(attempt_start(None, None), None);
    }
}
