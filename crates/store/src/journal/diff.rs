//! Observed job transitions, derived by comparing a job's previous and current description.
//!
//! Times come from the API's own timestamps wherever it gives them (`createdAt`, `scheduledAt`,
//! each attempt's `startedAt`/`stoppedAt`, `stoppedAt` of the job, the preempted attempts'
//! `startedAt`/`stoppedAt`); such transitions are `exact`. The only estimated one is the first
//! RUNNABLE, which the API does not timestamp: it is the first observation in which the job is no
//! longer SUBMITTED/PENDING (capped at the first attempt's start), so it is late by at most one
//! polling interval; for a job first seen already past PENDING it is `createdAt` (a lower bound).
//!
//! Each transition has a key (job, kind, attempt): the store keeps the first one it is given,
//! so deriving a transition again (another poll, a restart) changes nothing.

use std::collections::BTreeSet;

use quotatop_model::{AttemptStop, JobStatus, Millis, ServiceJob, attempt_stop};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TransitionKind {
    Submitted,
    Runnable,
    Scheduled,
    Started,
    Preempted,
    /// A later attempt (after a preemption or a failed attempt) began RUNNING.
    Resumed,
    Completed,
    /// The job ended FAILED (with the attempt that ended it, if any).
    Failed,
    /// An attempt stopped by failing, not by preemption (`AlgorithmError`, a timeout), and the
    /// job was retried ([`quotatop_model::attempt_stop`]).
    AttemptFailed,
}

impl TransitionKind {
    pub const ALL: [TransitionKind; 9] = [
        Self::Submitted,
        Self::Runnable,
        Self::Scheduled,
        Self::Started,
        Self::Preempted,
        Self::Resumed,
        Self::Completed,
        Self::Failed,
        Self::AttemptFailed,
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Submitted => "submitted",
            Self::Runnable => "runnable",
            Self::Scheduled => "scheduled",
            Self::Started => "started",
            Self::Preempted => "preempted",
            Self::Resumed => "resumed",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::AttemptFailed => "attempt_failed",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// One observed transition of a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transition {
    pub job_id: String,
    pub kind: TransitionKind,
    /// The attempt it belongs to (its training-job ARN, or `#n` without one); `""` for job-level
    /// transitions (submitted, the first runnable, a failure while not holding capacity).
    pub attempt: String,
    pub at: Millis,
    /// Taken from an API timestamp (else estimated from the observation time).
    pub exact: bool,
    /// Why, when the API says: a preempted or failed attempt's `statusReason` (else empty).
    pub reason: String,
}

type Key = (TransitionKind, String);

fn attempt_key(resource_id: &str, index: usize) -> String {
    if resource_id.is_empty() {
        format!("#{index}")
    } else {
        resource_id.to_string()
    }
}

fn before_runnable(s: JobStatus) -> bool {
    matches!(s, JobStatus::Submitted | JobStatus::Pending)
}

/// Every transition the job's description proves, with its API timestamp.
pub fn derived(job: &ServiceJob) -> Vec<Transition> {
    let mut out = vec![exact(
        job,
        TransitionKind::Submitted,
        String::new(),
        job.created_at,
    )];
    let recent: Vec<&quotatop_model::PreemptedAttempt> = job
        .preemption
        .as_ref()
        .map(|p| p.recent_preempted_attempts.iter().collect())
        .unwrap_or_default();
    let final_key = attempt_transitions(job, &recent, &mut out);
    // Preempted attempts that the attempts list no longer shows.
    let mut push = |kind, attempt: String, at| out.push(exact(job, kind, attempt, at));
    for r in &recent {
        if job.attempts.iter().any(|a| a.resource_id == r.resource_id) {
            continue;
        }
        let key = attempt_key(&r.resource_id, usize::MAX);
        if let Some(s) = r.started_at {
            push(TransitionKind::Resumed, key.clone(), s);
        }
        push(TransitionKind::Preempted, key.clone(), r.stopped_at);
        push(TransitionKind::Runnable, key, r.stopped_at);
    }
    if let Some(t) = job.stopped_at {
        match job.status {
            JobStatus::Succeeded => {
                push(TransitionKind::Completed, final_key.unwrap_or_default(), t)
            }
            JobStatus::Failed => push(TransitionKind::Failed, final_key.unwrap_or_default(), t),
            _ => {}
        }
    }
    // Why each preempted or failed attempt ended, from the preemption summary or the attempt.
    for t in out.iter_mut().filter(|t| {
        matches!(
            t.kind,
            TransitionKind::Preempted | TransitionKind::AttemptFailed
        )
    }) {
        t.reason = recent
            .iter()
            .find(|r| r.resource_id == t.attempt)
            .map(|r| r.status_reason.clone())
            .or_else(|| {
                job.attempts
                    .iter()
                    .find(|a| a.resource_id == t.attempt)
                    .and_then(|a| a.status_reason.clone())
            })
            .unwrap_or_default();
    }
    out
}

/// A transition the description proves, at its API timestamp.
fn exact(job: &ServiceJob, kind: TransitionKind, attempt: String, at: Millis) -> Transition {
    Transition {
        job_id: job.id.clone(),
        kind,
        attempt,
        at,
        exact: true,
        reason: String::new(),
    }
}

/// The transitions of the attempts the description lists (scheduled, started or resumed,
/// preempted and back to RUNNABLE); returns the key of the attempt that ended the job.
fn attempt_transitions(
    job: &ServiceJob,
    recent: &[&quotatop_model::PreemptedAttempt],
    out: &mut Vec<Transition>,
) -> Option<String> {
    let mut push = |kind, attempt: String, at| out.push(exact(job, kind, attempt, at));
    let last = job.attempts.len().checked_sub(1);
    let mut prev_stop: Option<Millis> = None;
    let mut final_key = None;
    for (i, a) in job.attempts.iter().enumerate() {
        let key = attempt_key(&a.resource_id, i);
        let is_last = Some(i) == last;
        if is_last
            && let Some(s) = job.scheduled_at
            && prev_stop.is_none_or(|p| s >= p)
            && a.stopped_at.is_none_or(|t| s <= t)
        {
            push(TransitionKind::Scheduled, key.clone(), s);
        }
        // The attempts list may not have the start (an attempt preempted before it started, or
        // before the poller saw it start) where the window of preempted attempts has it: keep
        // it now, while the window still shows it.
        let start = a.started_at.or_else(|| {
            recent
                .iter()
                .find(|r| !a.resource_id.is_empty() && r.resource_id == a.resource_id)
                .and_then(|r| r.started_at)
        });
        if let Some(s) = start {
            let kind = if i == 0 {
                TransitionKind::Started
            } else {
                TransitionKind::Resumed
            };
            push(kind, key.clone(), s);
        }
        if let Some(t) = a.stopped_at {
            // The attempt that ended the job, when it has ended.
            let ends_job =
                is_last && matches!(job.status, JobStatus::Succeeded | JobStatus::Failed);
            let listed =
                !a.resource_id.is_empty() && recent.iter().any(|r| r.resource_id == a.resource_id);
            let completed = ends_job && job.status == JobStatus::Succeeded;
            match attempt_stop(a.status_reason.as_deref(), listed, completed) {
                AttemptStop::Preempted => {
                    push(TransitionKind::Preempted, key.clone(), t);
                    if !ends_job {
                        push(TransitionKind::Runnable, key.clone(), t);
                    }
                }
                AttemptStop::Failed if !ends_job => {
                    push(TransitionKind::AttemptFailed, key.clone(), t);
                    push(TransitionKind::Runnable, key.clone(), t);
                }
                AttemptStop::Completed | AttemptStop::Failed => final_key = Some(key.clone()),
            }
            prev_stop = Some(t);
        }
    }
    final_key
}

/// The first RUNNABLE of a job, estimated (see the module doc). `prev_status` is the job's status
/// at the previous observation (`None`: never seen before).
fn first_runnable(
    prev_status: Option<JobStatus>,
    cur: &ServiceJob,
    observed_at: Millis,
) -> Option<Transition> {
    if before_runnable(cur.status) {
        return None;
    }
    let at = match prev_status {
        Some(p) if before_runnable(p) => {
            let first_hold = cur
                .attempts
                .first()
                .and_then(|a| a.started_at)
                .into_iter()
                .chain(cur.scheduled_at.filter(|_| cur.attempts.len() <= 1))
                .min();
            first_hold
                .map_or(observed_at, |h| observed_at.min(h))
                .max(cur.created_at)
        }
        Some(_) => return None,
        None => cur.created_at,
    };
    Some(Transition {
        job_id: cur.id.clone(),
        kind: TransitionKind::Runnable,
        attempt: String::new(),
        at,
        exact: false,
        reason: String::new(),
    })
}

/// The transitions `cur` shows that `prev` (the same job at the previous observation, if any)
/// did not, with the first RUNNABLE estimated at `observed_at`.
pub fn transitions(
    prev: Option<&ServiceJob>,
    cur: &ServiceJob,
    observed_at: Millis,
) -> Vec<Transition> {
    transitions_after(prev, prev.map(|p| p.status), cur, observed_at)
}

/// As [`transitions`], with the previous status given apart (after a restart the journal knows
/// the last status it stored but not the whole previous description).
pub fn transitions_after(
    prev: Option<&ServiceJob>,
    prev_status: Option<JobStatus>,
    cur: &ServiceJob,
    observed_at: Millis,
) -> Vec<Transition> {
    let known: BTreeSet<Key> = prev
        .map(|p| {
            derived(p)
                .into_iter()
                .map(|t| (t.kind, t.attempt))
                .collect()
        })
        .unwrap_or_default();
    let mut out: Vec<Transition> = derived(cur)
        .into_iter()
        .filter(|t| !known.contains(&(t.kind, t.attempt.clone())))
        .collect();
    out.extend(first_runnable(prev_status, cur, observed_at));
    out
}

#[cfg(test)]
mod tests;
