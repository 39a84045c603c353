//! A repetition's result from what it observed, and the partial result of the repetition
//! under way when the drill stopped.

use quotatop_analysis::drill::{self, RepetitionResult, RepetitionSpec};
use quotatop_analysis::scorecard::{ScorecardOptions, Window};
use quotatop_aws::batch::BatchClient;
use quotatop_model::{Millis, ServiceJob};

use super::Current;

/// What one repetition observed, measured into its result by [`result_of`].
pub(super) struct Observed<'a> {
    /// Its jobs as last described.
    pub(super) jobs: &'a [ServiceJob],
    pub(super) borrowers: Vec<String>,
    pub(super) preempted: Vec<drill::PreemptedJob>,
    pub(super) window: Window,
    pub(super) notes: Vec<String>,
}

/// A repetition's result from what it observed.
pub(super) fn result_of(
    spec: &RepetitionSpec,
    prio: &ServiceJob,
    seen: Observed<'_>,
    ledger: &ScorecardOptions,
) -> RepetitionResult {
    let Observed {
        jobs,
        borrowers,
        preempted,
        window,
        notes,
    } = seen;
    RepetitionResult {
        spec: spec.clone(),
        priority_job_id: prio.id.clone(),
        priority_submitted_at: prio.created_at,
        priority_started_at: drill::first_start(prio),
        reclaim_latency_ms: drill::reclaim_latency(prio),
        borrower_job_ids: borrowers,
        preempted,
        lost_gpu_hours: drill::lost_gpu_hours(jobs, window, ledger),
        notes,
    }
}

/// What the repetition under way when the drill stopped had measured, once its jobs are
/// terminated: `None` when its priority job had not been submitted (nothing to measure).
pub async fn partial(
    client: &BatchClient,
    current: Option<Current>,
    ledger: &ScorecardOptions,
    now: Millis,
) -> Option<RepetitionResult> {
    let c = current?;
    let prio_id = c.priority?;
    let prio = client.describe_service_job(&prio_id).await.ok()?.job;
    let mut jobs = Vec::new();
    for id in &c.borrowers {
        if let Ok(d) = client.describe_service_job(id).await {
            jobs.push(d.job);
        }
    }
    let preempted = drill::preempted_jobs(&jobs, prio.created_at);
    let start = c
        .window_start
        .unwrap_or(prio.created_at)
        .min(prio.created_at);
    Some(result_of(
        &c.spec,
        &prio,
        Observed {
            jobs: &jobs,
            borrowers: c.borrowers,
            preempted,
            window: Window::new(start, now),
            notes: vec![
                "the drill stopped during this repetition: measured until then; checkpoints not checked".into(),
            ],
        },
        ledger,
    ))
}
