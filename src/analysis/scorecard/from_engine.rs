//! Producer of [`ScorecardInput`] from the engine's event log: the ground truth that journal
//! observations are checked against, and what the what-if replay feeds the scorecard.

use std::collections::BTreeMap;

use crate::engine::{Engine, Event, EventReason, JobId};
use crate::model::{JobStatus, Millis};

use super::input::{
    AttemptEnd, AttemptHistory, Entitlement, JobHistory, Outcome, ScorecardInput, Window,
};

/// Histories of every job in `events`, with facts (share, priority, type, checkpoint interval)
/// taken from `engine`. Events of jobs the engine does not know are skipped.
pub fn histories_from_events(engine: &Engine, events: &[Event]) -> Vec<JobHistory> {
    let mut by_job: BTreeMap<JobId, Vec<&Event>> = BTreeMap::new();
    for e in events {
        by_job.entry(e.job).or_default().push(e);
    }
    by_job
        .into_iter()
        .filter_map(|(id, evs)| history(engine, id, &evs))
        .collect()
}

fn history(engine: &Engine, id: JobId, events: &[&Event]) -> Option<JobHistory> {
    let job = engine.job(id)?;
    let mut h = JobHistory {
        job_id: job.id.clone(),
        name: job.name.clone(),
        share: job.share.clone(),
        priority: job.priority,
        instance_type: job.instance_type.clone(),
        instance_count: job.instance_count,
        submitted_at: job.created_at,
        runnable_at: Vec::new(),
        attempts: Vec::new(),
        outcome: Outcome::Open,
        checkpoint_interval_ms: engine.checkpoint_interval(id),
        restart_overhead_ms: engine.restart_overhead(id),
    };
    for e in events {
        apply(&mut h, e);
    }
    Some(h)
}

fn close_open(h: &mut JobHistory, at: Millis, end: AttemptEnd) {
    if let Some(a) = h.attempts.last_mut().filter(|a| a.end == AttemptEnd::Open) {
        a.stopped_at = Some(at);
        a.end = end;
    }
}

fn apply(h: &mut JobHistory, e: &Event) {
    match (&e.reason, e.from, e.to) {
        (EventReason::Submitted, _, _) => h.submitted_at = e.time,
        (_, from, JobStatus::Runnable) if from != Some(JobStatus::Runnable) => {
            h.runnable_at.push(e.time)
        }
        (EventReason::Dispatched { .. }, _, JobStatus::Scheduled) => {
            h.attempts.push(AttemptHistory {
                scheduled_at: Some(e.time),
                started_at: None,
                stopped_at: None,
                end: AttemptEnd::Open,
                preempting_from: None,
            })
        }
        (EventReason::Advanced, Some(JobStatus::Starting), JobStatus::Running) => {
            if let Some(a) = h.attempts.last_mut() {
                a.started_at = Some(e.time);
            }
        }
        _ => {}
    }
    match &e.reason {
        EventReason::PreemptionStarted(_) => {
            if let Some(a) = h.attempts.last_mut().filter(|a| a.end == AttemptEnd::Open) {
                a.preempting_from = Some(e.time);
            }
        }
        EventReason::Preempted(_) | EventReason::RetriesExhausted => {
            close_open(h, e.time, AttemptEnd::Preempted)
        }
        EventReason::Completed => {
            close_open(h, e.time, AttemptEnd::Completed);
            h.outcome = Outcome::Succeeded(e.time);
        }
        _ => {}
    }
    if e.to == JobStatus::Failed {
        close_open(h, e.time, AttemptEnd::Failed);
        h.outcome = Outcome::Failed(e.time);
    }
}

/// A scorecard input from the engine: the jobs of `events` (its event log, or the part an
/// emulator kept), its current shares as entitlements and its environment capacity, over
/// `window`.
pub fn input_from_engine(
    engine: &Engine,
    events: &[Event],
    queue: &str,
    window: Window,
) -> ScorecardInput {
    ScorecardInput {
        queue: queue.to_string(),
        window,
        capacity: engine.config().capacity.clone(),
        entitlements: engine
            .shares()
            .into_iter()
            .map(|s| Entitlement {
                share: s.name,
                limits: s.capacity_limits,
            })
            .collect(),
        jobs: histories_from_events(engine, events),
    }
}
