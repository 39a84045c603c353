//! What a repetition measured, from the jobs as the API describes them: reclaim latency,
//! the borrower jobs preempted and when they were RUNNABLE and RUNNING again, their attempts,
//! the checkpoint verdicts and the GPU-hours lost (from the scorecard's ledger).

use serde::{Deserialize, Serialize};

use crate::GpuTable;
use crate::job_attempts;
use crate::scorecard::ledger::ledger;
use crate::scorecard::{
    AttemptEnd, AttemptHistory, JobHistory, Outcome, RestoreVerdict, ScorecardOptions,
    TrainingRecord, Window, percentile, restore_verdict,
};
use quotatop_model::{JobStatus, Millis, ServiceJob};

use super::plan::RepetitionSpec;

/// Whether a restarted borrower job resumed from a valid checkpoint: measured from its
/// checkpoints and its restarted attempt's log ([`measured_verdict`]), or `--checkpoint-check`'s
/// exit status when one is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckpointVerdict {
    /// Restored: measured, or `--checkpoint-check` exited 0.
    Resumed,
    /// Restarted from scratch: measured, or `--checkpoint-check` exited non-zero.
    NotResumed,
    /// Neither the measurements nor a check say (the job did not restart, its checkpoints could
    /// not be listed, the check could not run): never assumed.
    Unknown,
}

impl CheckpointVerdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Resumed => "restored",
            Self::NotResumed => "restarted from scratch",
            Self::Unknown => "unknown",
        }
    }
}

/// The drill's checkpoint verdict from measurements, with its evidence in words: `job`'s
/// attempt preempted at `requeued_at`, the checkpoints listed under the job's prefix
/// (`training`), and whether the restarted attempt's log showed the restore pattern and when
/// (`restored_log`; `None`: not read). The decision is the ledger's
/// ([`crate::scorecard::restore_verdict`]); a restore the log timed is said with how long it
/// took ([`crate::scorecard::restore_time`]).
pub fn measured_verdict(
    job: &ServiceJob,
    requeued_at: Millis,
    training: TrainingRecord,
    restored_log: Option<(bool, Option<Millis>)>,
) -> (CheckpointVerdict, String) {
    let mut h = job_history(job);
    let Some(i) = h
        .attempts
        .iter()
        .position(|a| a.end == AttemptEnd::Preempted && a.stopped_at == Some(requeued_at))
    else {
        return (
            CheckpointVerdict::Unknown,
            "the preempted attempt is not among the job's attempts".to_string(),
        );
    };
    if let Some(next) = h.attempts.get_mut(i + 1) {
        next.restored = restored_log.map(|(r, _)| r);
        next.restored_at = restored_log.and_then(|(_, at)| at);
    }
    let seen = training.checkpoints.len();
    let truncated = training.truncated;
    h.training = Some(training);
    let work_end = h
        .attempts
        .get(i)
        .and_then(|a| a.stopped_at)
        .unwrap_or(requeued_at);
    let Some((v, evidence, _)) = restore_verdict(&h, i, work_end) else {
        return (
            CheckpointVerdict::Unknown,
            format!(
                "the checkpoint listing was cut at its bound ({seen} checkpoints, truncated {truncated})"
            ),
        );
    };
    let verdict = match v {
        RestoreVerdict::Restored => CheckpointVerdict::Resumed,
        RestoreVerdict::FromScratch => CheckpointVerdict::NotResumed,
        RestoreVerdict::Unknown => CheckpointVerdict::Unknown,
    };
    let took = crate::scorecard::restore_time(&h, i + 1, 0)
        .filter(|r| r.measured && verdict == CheckpointVerdict::Resumed)
        .map(|r| {
            format!(
                "; the restore took {} (measured: from the attempt's start to its log's line)",
                quotatop_model::format_duration(r.ms)
            )
        })
        .unwrap_or_default();
    (
        verdict,
        format!("{} ({seen} checkpoints listed){took}", evidence.describe()),
    )
}

/// One borrower job the priority job preempted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreemptedJob {
    pub job_id: String,
    pub name: String,
    /// When its preempted attempt gave the capacity back and it was RUNNABLE again (the
    /// attempt's `stoppedAt`).
    pub requeued_at: Millis,
    /// From the priority job's submission to `requeued_at`.
    pub requeued_after_ms: Millis,
    /// When its next attempt began RUNNING, if it did while the drill watched.
    pub restarted_at: Option<Millis>,
    /// `restarted_at - requeued_at`.
    pub requeue_to_restart_ms: Option<Millis>,
    /// `preemptionSummary.preemptedAttemptCount` at the end of the repetition.
    pub preempted_attempts: u32,
    /// The attempt that restarted (1-based count of attempts), as given to the check.
    pub attempt: u32,
    pub checkpoint: CheckpointVerdict,
    /// What the checkpoint verdict rests on, in words.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub checkpoint_evidence: String,
    /// Status at the end of the repetition (before the drill terminated it).
    pub final_status: JobStatus,
}

/// One repetition's measurements.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepetitionResult {
    pub spec: RepetitionSpec,
    pub priority_job_id: String,
    pub priority_submitted_at: Millis,
    pub priority_started_at: Option<Millis>,
    /// From the priority job's submission to its start (RUNNING).
    pub reclaim_latency_ms: Option<Millis>,
    pub borrower_job_ids: Vec<String>,
    pub preempted: Vec<PreemptedJob>,
    /// GPU-hours of progress the borrower jobs lost to the preemptions (the ledger's `lost`);
    /// `None` when an instance type's GPU count is unknown.
    pub lost_gpu_hours: Option<f64>,
    /// What did not go to plan (a timeout, a job that failed).
    pub notes: Vec<String>,
}

/// A borrower job's preempted attempt after `since` and what followed it: (requeued at,
/// restarted at, the restarted attempt's 1-based number).
pub fn first_preemption_after(
    job: &ServiceJob,
    since: Millis,
) -> Option<(Millis, Option<Millis>, u32)> {
    // Only a job the service counts as preempted (an attempt ended by the drill's own
    // termination is not a preemption, whatever its reason says).
    if job.preemption_count() == 0 {
        return None;
    }
    let preempted = job
        .preemption
        .as_ref()
        .map(|p| p.recent_preempted_attempts.as_slice())
        .unwrap_or_default();
    let mut rows = job_attempts(&job.attempts, preempted);
    rows.sort_by_key(|r| r.started_at.unwrap_or(Millis::MAX));
    let (i, hit) = rows
        .iter()
        .enumerate()
        .find(|(_, r)| r.preempted && r.stopped_at.is_some_and(|t| t >= since))?;
    let requeued_at = hit.stopped_at?;
    let restarted_at = rows
        .iter()
        .skip(i + 1)
        .filter_map(|r| r.started_at)
        .find(|&s| s >= requeued_at);
    // The attempt that restarted is the one after the preempted one.
    Some((requeued_at, restarted_at, (i + 2) as u32))
}

/// The preempted borrower jobs of a repetition whose priority job was submitted at
/// `priority_submitted_at` (checkpoint verdicts unknown until a check sets them).
pub fn preempted_jobs(
    borrowers: &[ServiceJob],
    priority_submitted_at: Millis,
) -> Vec<PreemptedJob> {
    borrowers
        .iter()
        .filter_map(|j| {
            let (requeued_at, restarted_at, attempt) =
                first_preemption_after(j, priority_submitted_at)?;
            Some(PreemptedJob {
                job_id: j.id.clone(),
                name: j.name.clone(),
                requeued_at,
                requeued_after_ms: requeued_at - priority_submitted_at,
                restarted_at,
                requeue_to_restart_ms: restarted_at.map(|r| r - requeued_at),
                preempted_attempts: j.preemption_count(),
                attempt,
                checkpoint: CheckpointVerdict::Unknown,
                checkpoint_evidence: String::new(),
                final_status: j.status,
            })
        })
        .collect()
}

/// Reclaim latency: the priority job's start less its submission.
pub fn reclaim_latency(priority: &ServiceJob) -> Option<Millis> {
    first_start(priority).map(|s| s - priority.created_at)
}

/// When the job first began RUNNING (its earliest attempt's start, else `startedAt`).
pub fn first_start(job: &ServiceJob) -> Option<Millis> {
    job.attempts
        .iter()
        .filter_map(|a| a.started_at)
        .min()
        .or(job.started_at)
}

/// When the priority job is due: halfway through the length of the borrower job that started
/// first (all must be RUNNING), so that none has finished its work when the lender reclaims.
pub fn priority_due(borrowers: &[ServiceJob], length_ms: Millis) -> Option<Millis> {
    borrowers
        .iter()
        .filter_map(first_start)
        .min()
        .map(|s| s + length_ms / 2)
}

/// A job as the scorecard's ledger reads it, from what the API describes: its attempts (the
/// preempted ones from the preemption summary), how each ended, the job's outcome.
pub fn job_history(job: &ServiceJob) -> JobHistory {
    let preempted = job
        .preemption
        .as_ref()
        .map(|p| p.recent_preempted_attempts.as_slice())
        .unwrap_or_default();
    let mut rows = job_attempts(&job.attempts, preempted);
    rows.sort_by_key(|r| r.started_at.unwrap_or(Millis::MAX));
    let last = rows.len().saturating_sub(1);
    let attempts = rows
        .iter()
        .enumerate()
        .map(|(i, r)| AttemptHistory {
            scheduled_at: None,
            started_at: r.started_at,
            stopped_at: r.stopped_at,
            end: match (r.preempted, r.stopped_at) {
                (true, _) => AttemptEnd::Preempted,
                (false, None) => AttemptEnd::Open,
                (false, Some(_)) if i == last && job.status == JobStatus::Succeeded => {
                    AttemptEnd::Completed
                }
                (false, Some(_)) => AttemptEnd::Failed,
            },
            preempting_from: None,
            restored: None,
            restored_at: None,
        })
        .collect();
    JobHistory {
        job_id: job.id.clone(),
        name: job.name.clone(),
        share: job.share.clone(),
        priority: job.priority,
        instance_type: job.instance_type.clone(),
        instance_count: job.instance_count,
        submitted_at: job.created_at,
        runnable_at: Vec::new(),
        attempts,
        outcome: match (job.status, job.stopped_at) {
            (JobStatus::Succeeded, Some(t)) => Outcome::Succeeded(t),
            (JobStatus::Failed, Some(t)) => Outcome::Failed(t),
            _ => Outcome::Open,
        },
        // The job's own interval (its checkpoint tag) when it has one; else the one declared
        // for its share applies.
        checkpoint_interval_ms: job.checkpoint_interval_ms,
        restart_overhead_ms: None,
        preemption_retries: job.preemption_retries,
        training: None,
    }
}

/// GPU-hours the preempted attempts of `jobs` lost, from the scorecard's ledger over `window`
/// (progress after the last checkpoint, with the checkpoint intervals `opts` declares per
/// share); `None` when a job's instance type has no known GPU count.
pub fn lost_gpu_hours(jobs: &[ServiceJob], window: Window, opts: &ScorecardOptions) -> Option<f64> {
    if jobs
        .iter()
        .any(|j| opts.gpus.gpus(&j.instance_type).is_none())
    {
        return None;
    }
    let histories: Vec<JobHistory> = jobs.iter().map(job_history).collect();
    let refs: Vec<&JobHistory> = histories.iter().collect();
    Some(ledger(&refs, window, opts).lost_gpu_hours)
}

/// The figures over several repetitions.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Aggregate {
    pub repetitions: usize,
    pub measured: usize,
    pub reclaim_p50_ms: Option<Millis>,
    pub reclaim_p95_ms: Option<Millis>,
    pub preempted: usize,
    pub restarted: usize,
    pub requeue_to_restart_p50_ms: Option<Millis>,
    pub requeue_to_restart_p95_ms: Option<Millis>,
    pub preempted_attempts: u32,
    pub lost_gpu_hours: Option<f64>,
    pub resumed: usize,
    pub not_resumed: usize,
    pub unknown: usize,
}

/// Aggregates `results` (baselines and borrowing repetitions are aggregated separately by the
/// caller).
pub fn aggregate<'a>(results: impl IntoIterator<Item = &'a RepetitionResult>) -> Aggregate {
    let results: Vec<&RepetitionResult> = results.into_iter().collect();
    let mut latencies: Vec<Millis> = results
        .iter()
        .filter_map(|r| r.reclaim_latency_ms)
        .collect();
    latencies.sort_unstable();
    let preempted: Vec<&PreemptedJob> = results.iter().flat_map(|r| &r.preempted).collect();
    let mut restarts: Vec<Millis> = preempted
        .iter()
        .filter_map(|p| p.requeue_to_restart_ms)
        .collect();
    restarts.sort_unstable();
    let lost = results
        .iter()
        .try_fold(0.0, |acc, r| r.lost_gpu_hours.map(|l| acc + l));
    let count = |v: CheckpointVerdict| preempted.iter().filter(|p| p.checkpoint == v).count();
    Aggregate {
        repetitions: results.len(),
        measured: latencies.len(),
        reclaim_p50_ms: percentile(&latencies, 50.0),
        reclaim_p95_ms: percentile(&latencies, 95.0),
        preempted: preempted.len(),
        restarted: restarts.len(),
        requeue_to_restart_p50_ms: percentile(&restarts, 50.0),
        requeue_to_restart_p95_ms: percentile(&restarts, 95.0),
        preempted_attempts: preempted.iter().map(|p| p.preempted_attempts).sum(),
        lost_gpu_hours: lost,
        resumed: count(CheckpointVerdict::Resumed),
        not_resumed: count(CheckpointVerdict::NotResumed),
        unknown: count(CheckpointVerdict::Unknown),
    }
}

/// Scorecard options for the lost GPU-hours: the GPU table and the checkpoint intervals the
/// configuration declares per share.
pub fn ledger_options(
    gpus: GpuTable,
    checkpoint_by_share: std::collections::BTreeMap<String, u64>,
) -> ScorecardOptions {
    ScorecardOptions {
        gpus,
        checkpoint_by_share,
        ..ScorecardOptions::default()
    }
}
