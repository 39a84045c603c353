//! Producer of the scorecard's input from the journal's observed transitions.

use std::collections::BTreeMap;

use crate::analysis::scorecard::{
    AttemptEnd, AttemptHistory, Entitlement, JobHistory, Outcome, ScorecardInput, ScorecardOptions,
    Window,
};
use crate::model::Millis;

use super::diff::{Transition, TransitionKind};
use super::read::JobRecord;
use super::{Journal, JournalError};

/// One job's history rebuilt from its transitions. Checkpoint intervals come from
/// `checkpoint_by_share` (the API does not show them).
pub fn job_history(
    job: &JobRecord,
    transitions: &[Transition],
    checkpoint_by_share: &BTreeMap<String, u64>,
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
        checkpoint_interval_ms: checkpoint_by_share.get(&job.share).copied(),
        restart_overhead_ms: None,
    };
    let mut attempts: BTreeMap<&str, AttemptHistory> = BTreeMap::new();
    for t in transitions {
        let slot = || AttemptHistory {
            scheduled_at: None,
            started_at: None,
            stopped_at: None,
            end: AttemptEnd::Open,
            preempting_from: None,
        };
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
        histories.push(job_history(j, &ts, &opts.checkpoint_by_share));
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
