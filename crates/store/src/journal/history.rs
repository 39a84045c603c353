//! Producer of the scorecard's input from the journal's observed transitions.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use quotatop_analysis::scorecard::{
    AttemptEnd, AttemptHistory, Entitlement, JobHistory, Outcome, ScorecardInput, ScorecardOptions,
    Window,
};
use quotatop_model::Millis;

use super::diff::{Transition, TransitionKind};
use super::read::JobRecord;
use super::training::JobTraining;
use super::{Journal, JournalError};

/// An attempt not yet seen to do anything.
fn open_attempt() -> AttemptHistory {
    AttemptHistory {
        scheduled_at: None,
        started_at: None,
        stopped_at: None,
        end: AttemptEnd::Open,
        preempting_from: None,
        restored: None,
        restored_at: None,
    }
}

/// One job's history rebuilt from its transitions. The checkpoint interval is the job's tag's
/// when it had one, else `checkpoint_by_share`'s. With its training job as journaled, each
/// attempt gets the preemption signal's time and its restore as its log said, and the job the
/// checkpoints listed (the ledger then measures its lost work).
pub fn job_history(
    job: &JobRecord,
    transitions: &[Transition],
    checkpoint_by_share: &BTreeMap<String, u64>,
    training: Option<&JobTraining>,
) -> JobHistory {
    let mut h = JobHistory {
        job_id: job.job_id.clone(),
        name: job.name.clone(),
        share: job.share.clone(),
        priority: job.priority,
        instance_type: job.instance_type.clone(),
        instance_count: job.instance_count,
        submitted_at: job.created_at,
        runnable_at: Vec::new(),
        attempts: Vec::new(),
        outcome: Outcome::Open,
        // The job's own interval (its tag) first, else the share's configured one.
        checkpoint_interval_ms: job
            .checkpoint_ms
            .or_else(|| checkpoint_by_share.get(&job.share).copied()),
        restart_overhead_ms: None,
        preemption_retries: job.preemption_retries,
        training: None,
    };
    let mut attempts: BTreeMap<&str, AttemptHistory> = BTreeMap::new();
    for t in transitions {
        let slot = open_attempt;
        match t.kind {
            TransitionKind::Submitted => h.submitted_at = t.at,
            TransitionKind::Runnable => h.runnable_at.push(t.at),
            TransitionKind::Scheduled => {
                attempts.entry(&t.attempt).or_insert_with(slot).scheduled_at = Some(t.at)
            }
            TransitionKind::Started | TransitionKind::Resumed => {
                attempts.entry(&t.attempt).or_insert_with(slot).started_at = Some(t.at)
            }
            TransitionKind::Preempted => {
                let a = attempts.entry(&t.attempt).or_insert_with(slot);
                a.stopped_at = Some(t.at);
                a.end = AttemptEnd::Preempted;
            }
            // Failed and retried: failed work, not a preemption; the job goes on.
            TransitionKind::AttemptFailed => {
                let a = attempts.entry(&t.attempt).or_insert_with(slot);
                a.stopped_at = Some(t.at);
                a.end = AttemptEnd::Failed;
            }
            TransitionKind::Completed | TransitionKind::Failed => {
                let succeeded = t.kind == TransitionKind::Completed;
                h.outcome = if succeeded {
                    Outcome::Succeeded(t.at)
                } else {
                    Outcome::Failed(t.at)
                };
                if !t.attempt.is_empty() {
                    let a = attempts.entry(&t.attempt).or_insert_with(slot);
                    a.stopped_at = Some(t.at);
                    a.end = if succeeded {
                        AttemptEnd::Completed
                    } else {
                        AttemptEnd::Failed
                    };
                }
            }
        }
    }
    h.runnable_at.sort_unstable();
    if let Some(t) = training {
        for (key, a) in &mut attempts {
            let Some(m) = t.mark(key) else {
                continue;
            };
            a.restored = m.restored;
            a.restored_at = m.restored_at.filter(|_| m.restored == Some(true));
            // Work stopped at the signal; the capacity was held until `stoppedAt`.
            if a.end == AttemptEnd::Preempted {
                a.preempting_from = m.signal_at.filter(|&s| a.stopped_at.is_none_or(|e| s <= e));
            }
        }
        h.training = t.record();
    }
    let mut list: Vec<AttemptHistory> = attempts.into_values().collect();
    list.sort_by_key(|a| a.held_from().or(a.stopped_at).unwrap_or(Millis::MAX));
    h.attempts = list;
    h
}

/// The scorecard input for `queue` over `window`: every job seen since the window's start, the
/// queue's last observed shares as entitlements and its environment as capacity.
pub fn scorecard_input(
    journal: &Journal,
    queue: &str,
    window: Window,
    opts: &ScorecardOptions,
) -> Result<ScorecardInput, JournalError> {
    let q = journal.queue(queue)?;
    let jobs = journal.jobs(queue, window.start)?;
    let mut histories = Vec::with_capacity(jobs.len());
    // Only what was known by the window's end: a window that ends in the past (time travel)
    // must not count jobs submitted, or transitions seen, after it.
    for j in jobs.iter().filter(|j| j.created_at < window.end) {
        let mut ts = journal.transitions(&j.job_id)?;
        ts.retain(|t| t.at < window.end);
        let training = journal.job_training(&j.job_id)?;
        histories.push(job_history(
            j,
            &ts,
            &opts.checkpoint_by_share,
            training.as_ref(),
        ));
    }
    Ok(ScorecardInput {
        queue: queue.to_string(),
        window,
        capacity: q
            .as_ref()
            .map(|q| q.environment.capacity.clone())
            .unwrap_or_default(),
        entitlements: q
            .map(|q| {
                q.shares
                    .into_iter()
                    .map(|s| Entitlement {
                        share: s.name,
                        limits: s.capacity_limits,
                    })
                    .collect()
            })
            .unwrap_or_default(),
        jobs: histories,
    })
}

/// A window over the journal's history: the length asked for, ending after a given instant,
/// cut so that it never starts before the queue's first observation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryWindow {
    /// Half-open; it ends 1 ms after the instant asked for, so events at it count.
    pub window: Window,
    /// The length asked for (the console's configured window, `report --since`).
    pub asked_ms: Millis,
    /// The queue's first observation still in the journal (service clock).
    pub first_observed_at: Millis,
    /// The journal holds less history than asked: the window starts at the first observation.
    pub shorter_than_asked: bool,
}

/// The window of `asked_ms` (at least 1 ms) of `queue`'s history up to and including `until`,
/// starting no earlier than the queue's first observation (`until` itself when nothing of the
/// queue is recorded).
pub fn history_window(
    journal: &Journal,
    queue: &str,
    until: Millis,
    asked_ms: Millis,
) -> Result<HistoryWindow, JournalError> {
    let first = journal.first_observed_at(queue)?.unwrap_or(until);
    Ok(window_from(first, until, asked_ms))
}

fn window_from(first: Millis, until: Millis, asked_ms: Millis) -> HistoryWindow {
    let asked_ms = asked_ms.max(1);
    let end = until.saturating_add(1);
    let start = end.saturating_sub(asked_ms).max(first).min(end);
    let window = Window::new(start, end);
    HistoryWindow {
        window,
        asked_ms,
        first_observed_at: first,
        shorter_than_asked: window.len_ms() < asked_ms,
    }
}

#[cfg(test)]
mod window_tests {
    use super::window_from;

    #[test]
    fn a_window_starts_at_the_first_observation_and_ends_after_the_last() {
        let w = window_from(10_000, 70_000, 86_400_000);
        assert_eq!((w.window.start, w.window.end), (10_000, 70_001));
        assert!(w.shorter_than_asked);
        let full = window_from(0, 7_200_000, 3_600_000);
        assert_eq!((full.window.start, full.window.end), (3_600_001, 7_200_001));
        assert!(!full.shorter_than_asked);
        // A moment before the first observation (a past view): an empty window, not a panic.
        let before = window_from(50_000, 10_000, 3_600_000);
        assert_eq!(before.window.len_ms(), 0);
        assert!(before.shorter_than_asked);
    }
}
