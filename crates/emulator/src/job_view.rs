//! How a job reads through the API: DescribeServiceJob's answer ([`description`]), a
//! ListServiceJobs summary ([`summary`]), and the detail of its EventBridge state-change
//! events (`bus_events.rs`, from the same description).

use quotatop_engine::JobId;
use quotatop_model::ServiceJob;

use super::error::ApiError;
use super::ops_jobs::CHECKPOINT_TAG;
use super::state::QueueWorld;
use super::wire::{
    AttemptJson, CapacityUsage, DescribeServiceJobResponse, JobPreemptionJson, LatestAttempt,
    PreemptionSummaryJson, ServiceJobSummary, ServiceResourceId,
};

fn capacity_usage(job: &ServiceJob) -> Vec<CapacityUsage> {
    vec![CapacityUsage {
        capacity_unit: job.instance_type.clone(),
        quantity: job.instance_count as f64,
    }]
}

fn latest_attempt(job: &ServiceJob) -> Option<LatestAttempt> {
    job.attempts.last().map(|a| LatestAttempt {
        service_resource_id: ServiceResourceId::training_job(a.resource_id.clone()),
    })
}

/// `startedAt` as the API shows it: the current attempt's start, else the last attempt's (a
/// preempted or retried job waiting again); absent for a job that never started (never 0: the
/// model marks it required in DescribeServiceJob, but there is no start to give).
fn shown_started_at(job: &ServiceJob) -> Option<quotatop_model::Millis> {
    job.started_at
        .or_else(|| job.attempts.iter().rev().find_map(|a| a.started_at))
}

pub fn summary(world: &QueueWorld, job: ServiceJob) -> ServiceJobSummary {
    let started_at = shown_started_at(&job);
    ServiceJobSummary {
        latest_attempt: latest_attempt(&job),
        capacity_usage: capacity_usage(&job),
        created_at: job.created_at,
        job_arn: world.job_arn(&job.id),
        job_id: job.id,
        job_name: job.name,
        scheduled_at: job.scheduled_at,
        service_job_type: "SAGEMAKER_TRAINING",
        quota_share_name: job.share,
        status: job.status.as_str(),
        status_reason: job.status_reason,
        started_at,
        stopped_at: job.stopped_at,
        is_terminated: job.is_terminated.then_some(true),
    }
}

/// DescribeServiceJob's answer for job `id`.
pub fn description(world: &QueueWorld, id: JobId) -> Result<DescribeServiceJobResponse, ApiError> {
    let job = world
        .engine
        .job(id)
        .ok_or_else(|| ApiError::Server("job index out of range".into()))?;
    let meta = world.meta.get(&id.0).cloned().unwrap_or_default();
    let arn = world.job_arn(&job.id);
    let attempts = job
        .attempts
        .iter()
        .map(|a| AttemptJson {
            service_resource_id: ServiceResourceId::training_job(a.resource_id.clone()),
            started_at: a.started_at,
            stopped_at: a.stopped_at,
            status_reason: a.status_reason.clone(),
        })
        .collect();
    let preemption_summary = job.preemption.as_ref().map(|p| PreemptionSummaryJson {
        preempted_attempt_count: p.preempted_attempt_count,
        recent_preempted_attempts: p
            .recent_preempted_attempts
            .iter()
            .map(|a| AttemptJson {
                service_resource_id: ServiceResourceId::training_job(a.resource_id.clone()),
                started_at: a.started_at,
                stopped_at: Some(a.stopped_at),
                status_reason: Some(a.status_reason.clone()),
            })
            .collect(),
    });
    // A scenario's generated jobs checkpoint by the scenario's `checkpoint_s`: they show it as
    // the tag a submitted job would carry.
    let mut tags = world.tags.get(&arn).cloned().unwrap_or_default();
    if let Some(ms) = job.checkpoint_interval_ms {
        tags.entry(CHECKPOINT_TAG.to_string())
            .or_insert_with(|| (ms / 1000).to_string());
    }
    let started_at = shown_started_at(&job);
    Ok(DescribeServiceJobResponse {
        attempts,
        capacity_usage: capacity_usage(&job),
        latest_attempt: latest_attempt(&job),
        created_at: job.created_at,
        is_terminated: job.is_terminated,
        job_arn: arn.clone(),
        job_id: job.id,
        job_name: job.name,
        job_queue: world.queue_arn(),
        retry_strategy: meta.retry_strategy,
        scheduled_at: job.scheduled_at,
        scheduling_priority: job.priority,
        service_request_payload: meta.payload,
        service_job_type: "SAGEMAKER_TRAINING",
        quota_share_name: job.share,
        preemption_configuration: job.preemption_retries.map(|n| JobPreemptionJson {
            preemption_retries_before_termination: Some(n as i64),
        }),
        preemption_summary,
        started_at,
        status: job.status.as_str(),
        status_reason: job.status_reason,
        stopped_at: job.stopped_at,
        tags,
        timeout_config: meta.timeout,
    })
}
