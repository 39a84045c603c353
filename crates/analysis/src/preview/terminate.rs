//! The preview of terminating jobs: what each has run, the GPU-hours ending it now throws away
//! since its last checkpoint (the scorecard's ledger: the attempt in flight counted as ended
//! now), and which waiting jobs the engine's next scheduling pass starts on the capacity the
//! terminations free (the pass the priority preview runs, with and without the jobs).

use std::collections::BTreeSet;
use std::sync::Arc;

use quotatop_engine::Placement;
use quotatop_model::{JobStatus, Millis, QueueSnapshot, ServiceJob};

use super::PreviewError;
use crate::drill::job_history;
use crate::scorecard::{
    AttemptEnd, AttemptHistory, JobHistory, ScorecardOptions, Window, gpu_hours, job_ledger,
};

/// What ending one job throws away.
#[derive(Debug, Clone, PartialEq)]
pub struct JobLoss {
    pub job_id: String,
    pub name: String,
    pub share: String,
    pub status: JobStatus,
    pub priority: u32,
    pub instance_type: String,
    pub instance_count: u32,
    /// Time since its attempt in flight started (`quotatop_model::attempt_start`: startedAt,
    /// else scheduledAt), as the priority preview counts a candidate's; 0 without one.
    pub running_ms: Millis,
    /// Its attempts so far, the preempted ones and the one in flight included.
    pub attempts: usize,
    /// GPU-hours it has held so far (the ledger's held time); `None` when the instance type's
    /// GPU count is not known.
    pub held_gpu_hours: Option<f64>,
    /// GPU-hours of progress since its last checkpoint that ending it now throws away (the
    /// whole attempt's progress without a checkpoint interval); `None` when the GPU count is
    /// not known.
    pub lost_gpu_hours: Option<f64>,
    /// Its checkpoint interval, when known (its tag, else the one declared for its share).
    pub checkpoint_ms: Option<u64>,
}

/// A waiting job the next scheduling pass would start on the capacity the terminations free.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Starter {
    pub job_id: String,
    pub name: String,
    pub share: String,
    pub priority: u32,
    pub instance_type: String,
    pub instance_count: u32,
}

impl Starter {
    pub fn of(j: &ServiceJob) -> Self {
        Self {
            job_id: j.id.clone(),
            name: j.name.clone(),
            share: j.share.clone(),
            priority: j.priority,
            instance_type: j.instance_type.clone(),
            instance_count: j.instance_count,
        }
    }
}

/// The preview of terminating some jobs of one queue.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TerminatePreview {
    pub jobs: Vec<JobLoss>,
    /// Waiting jobs that start because the jobs end (and would not start otherwise), in the
    /// order the pass dispatches them.
    pub starts: Vec<Starter>,
}

impl TerminatePreview {
    /// GPU-hours thrown away in all, `None` when one job's GPU count is unknown.
    pub fn lost_gpu_hours(&self) -> Option<f64> {
        self.jobs.iter().map(|j| j.lost_gpu_hours).sum()
    }

    /// One line for the audit intent: what was confirmed.
    pub fn summary(&self) -> String {
        let lost = self
            .lost_gpu_hours()
            .map_or("unknown GPU-h".to_string(), |h| format!("{h:.2} GPU-h"));
        let starts = if self.starts.is_empty() {
            "no waiting job starts".to_string()
        } else {
            format!(
                "starts {}",
                self.starts
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        format!(
            "terminate {} job(s): throws away {lost} since the last checkpoint; {starts}",
            self.jobs.len()
        )
    }
}

/// The preview of terminating `job_ids` (ids) of `q`: refused for a job not in the snapshot
/// or already finished.
pub fn terminate_preview(
    q: &QueueSnapshot,
    job_ids: &[&str],
    opts: &ScorecardOptions,
) -> Result<TerminatePreview, PreviewError> {
    let now = crate::now_of(q).unwrap_or(0);
    let mut jobs = Vec::with_capacity(job_ids.len());
    for id in job_ids {
        let t = q
            .jobs
            .iter()
            .find(|t| t.job.id == *id)
            .ok_or_else(|| PreviewError::UnknownJob((*id).to_string()))?;
        if t.job.status.is_terminal() {
            return Err(PreviewError::Finished(
                t.job.name.clone(),
                t.job.status.as_str(),
            ));
        }
        jobs.push(job_loss(&t.job, now, opts));
    }
    let starts = starts(q, job_ids)?;
    Ok(TerminatePreview { jobs, starts })
}

/// The job's history as the ledger reads it, with its attempt in flight shown even when
/// DescribeServiceJob listed no attempt yet.
fn history(job: &ServiceJob) -> JobHistory {
    let mut h = job_history(job);
    if h.attempts.is_empty() && job.status.holds_capacity() {
        h.attempts.push(AttemptHistory {
            scheduled_at: job.scheduled_at,
            started_at: job.started_at,
            stopped_at: None,
            end: AttemptEnd::Open,
            preempting_from: None,
            restored: None,
            restored_at: None,
        });
    }
    h
}

fn job_loss(job: &ServiceJob, now: Millis, opts: &ScorecardOptions) -> JobLoss {
    let h = history(job);
    let window = Window::new(job.created_at.min(now), now);
    let as_is = job_ledger(&h, window, opts);
    // The same history with the attempt in flight ended now, as a preemption ends it: its
    // progress after the last checkpoint is what the ledger calls lost.
    let mut ended = h.clone();
    let mut running_ms = 0;
    if let Some(a) = ended
        .attempts
        .iter_mut()
        .rev()
        .find(|a| a.end == AttemptEnd::Open)
    {
        running_ms = quotatop_model::attempt_start(a.started_at, a.scheduled_at)
            .map_or(0, |s| (now - s).max(0));
        a.end = AttemptEnd::Preempted;
        a.stopped_at = Some(now);
    }
    let if_ended = job_ledger(&ended, window, opts);
    let gpus = opts.gpus.gpus(&job.instance_type);
    let figure = |ms: Millis| gpus.map(|g| gpu_hours(ms, job.instance_count, g));
    JobLoss {
        job_id: job.id.clone(),
        name: job.name.clone(),
        share: job.share.clone(),
        status: job.status,
        priority: job.priority,
        instance_type: job.instance_type.clone(),
        instance_count: job.instance_count,
        running_ms,
        attempts: h.attempts.len(),
        held_gpu_hours: figure(as_is.held()),
        lost_gpu_hours: figure((if_ended.lost - as_is.lost).max(0)),
        checkpoint_ms: crate::scorecard::checkpoint_ms(&h, opts).map(|c| c.max(0) as u64),
    }
}

/// Waiting jobs the next pass dispatches once `ended` no longer hold capacity and did not
/// before: per instance type the ended jobs hold, the likeliest order's dispatches with them
/// gone less those without.
fn starts(q: &QueueSnapshot, ended: &[&str]) -> Result<Vec<Starter>, PreviewError> {
    let mut without = q.clone();
    let mut types = BTreeSet::new();
    for t in &mut without.jobs {
        if ended.contains(&t.job.id.as_str()) {
            if t.job.status.holds_capacity() {
                types.insert(t.job.instance_type.clone());
            }
            Arc::make_mut(&mut t.job).status = JobStatus::Failed;
        }
    }
    let dispatched = |snapshot: &QueueSnapshot, ty: &str| -> Result<Vec<u32>, PreviewError> {
        let pass = super::next_pass(snapshot, ty)?;
        Ok(pass
            .decisions
            .first()
            .map(|d| {
                d.iter()
                    .filter(|(_, p)| matches!(p, Placement::Dispatch))
                    .map(|(id, _)| *id)
                    .collect()
            })
            .unwrap_or_default())
    };
    let mut out = Vec::new();
    for ty in &types {
        let before: BTreeSet<u32> = dispatched(q, ty)?.into_iter().collect();
        for id in dispatched(&without, ty)? {
            if before.contains(&id) {
                continue;
            }
            let Some(t) = q.jobs.get(id as usize) else {
                continue;
            };
            out.push(Starter::of(&t.job));
        }
    }
    Ok(out)
}
