//! What a requeue needs of a job and the single-job calls that end it: DescribeServiceJob read
//! as the inputs of a SubmitServiceJob that copies the job ([`JobSpec`]), and
//! TerminateServiceJob of one job with quotatop's reason.

use std::collections::BTreeMap;

use aws_sdk_batch::operation::RequestId;
use aws_sdk_batch::operation::describe_service_job::DescribeServiceJobOutput;
use aws_sdk_batch::types as sdk;

use quotatop_model::JobStatus;

use super::Op;
use super::error::classify;
use super::{BatchClient, BatchError};

/// How a job is retried after it fails (`retryStrategy`), as DescribeServiceJob gives it and
/// SubmitServiceJob takes it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RetryStrategy {
    /// `attempts`: 1 to 10.
    pub attempts: Option<u32>,
    pub evaluate_on_exit: Vec<EvaluateOnExit>,
}

/// One `retryStrategy.evaluateOnExit` rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvaluateOnExit {
    /// `RETRY` or `EXIT`.
    pub action: Option<String>,
    pub on_status_reason: Option<String>,
}

/// A job as DescribeServiceJob has it, read for what SubmitServiceJob takes back: what a copy
/// of the job needs (its own payload, share, priority, retry strategy, timeout, tags and
/// preemption configuration) and what its state is now.
///
/// The payload, tags and reasons are the service's text as is (a copy must be byte for byte
/// the job's): clean them before they reach a terminal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobSpec {
    pub id: String,
    pub arn: String,
    pub name: String,
    /// `jobQueue`: the queue's ARN (SubmitServiceJob takes it as is).
    pub queue: String,
    /// `quotaShareName`.
    pub share: Option<String>,
    /// `schedulingPriority`.
    pub priority: Option<u32>,
    /// `serviceRequestPayload`: `None` when the service did not return it (a copy cannot be
    /// made then).
    pub payload: Option<String>,
    /// `serviceJobType`, e.g. `SAGEMAKER_TRAINING`.
    pub job_type: Option<String>,
    pub retry_strategy: Option<RetryStrategy>,
    /// `timeoutConfig.attemptDurationSeconds`.
    pub timeout_s: Option<u32>,
    pub tags: BTreeMap<String, String>,
    /// `preemptionConfiguration.preemptionRetriesBeforeTermination`.
    pub preemption_retries: Option<u32>,
    pub status: Option<JobStatus>,
    pub status_reason: Option<String>,
    pub is_terminated: bool,
}

fn nonneg(n: Option<i32>) -> Option<u32> {
    n.map(|n| n.max(0) as u32)
}

/// DescribeServiceJob's answer as a [`JobSpec`].
pub(super) fn job_spec(d: &DescribeServiceJobOutput) -> Option<JobSpec> {
    let retry_strategy = d.retry_strategy().map(|r| RetryStrategy {
        attempts: nonneg(r.attempts()),
        evaluate_on_exit: r
            .evaluate_on_exit()
            .iter()
            .map(|e| EvaluateOnExit {
                action: e.action().map(|a| a.as_str().to_string()),
                on_status_reason: e.on_status_reason().map(str::to_string),
            })
            .collect(),
    });
    Some(JobSpec {
        id: d.job_id().filter(|s| !s.is_empty())?.to_string(),
        arn: d.job_arn().unwrap_or_default().to_string(),
        name: d.job_name().unwrap_or_default().to_string(),
        queue: d.job_queue().unwrap_or_default().to_string(),
        share: d.quota_share_name().map(str::to_string),
        priority: nonneg(d.scheduling_priority()),
        payload: d
            .service_request_payload()
            .filter(|p| !p.trim().is_empty())
            .map(str::to_string),
        job_type: d.service_job_type().map(|t| t.as_str().to_string()),
        retry_strategy,
        timeout_s: nonneg(
            d.timeout_config()
                .and_then(|t| t.attempt_duration_seconds()),
        ),
        tags: d
            .tags()
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        preemption_retries: nonneg(
            d.preemption_configuration()
                .and_then(|p| p.preemption_retries_before_termination()),
        ),
        status: d.status().and_then(|s| JobStatus::parse(s.as_str())),
        status_reason: d.status_reason().map(str::to_string),
        is_terminated: d.is_terminated().unwrap_or(false),
    })
}

/// The SDK's retry strategy of `r`.
pub(super) fn sdk_retry_strategy(r: &RetryStrategy) -> sdk::ServiceJobRetryStrategy {
    let rules = r
        .evaluate_on_exit
        .iter()
        .map(|e| {
            sdk::ServiceJobEvaluateOnExit::builder()
                .set_action(e.action.as_deref().map(sdk::ServiceJobRetryAction::from))
                .set_on_status_reason(e.on_status_reason.clone())
                .build()
        })
        .collect::<Vec<_>>();
    sdk::ServiceJobRetryStrategy::builder()
        .set_attempts(r.attempts.map(|n| n.min(i32::MAX as u32) as i32))
        .set_evaluate_on_exit((!rules.is_empty()).then_some(rules))
        .build()
}

/// The most characters of a TerminateServiceJob reason quotatop sends. The API documents no
/// bound; AWS Batch shows the reason as the job's `statusReason`, so it is kept to a size a
/// listing can show.
pub const MAX_TERMINATE_REASON: usize = 256;

/// The reason quotatop gives TerminateServiceJob, so that AWS's own record (the job's
/// `statusReason`) shows it came from quotatop and who asked why: `quotatop: <operator>:
/// <justification>`, control characters removed, at most [`MAX_TERMINATE_REASON`] characters.
pub fn terminate_reason(operator: &str, justification: &str) -> String {
    let text = format!("quotatop: {operator}: {justification}");
    quotatop_model::clean_text(&text)
        .chars()
        .take(MAX_TERMINATE_REASON)
        .collect()
}

impl BatchClient {
    /// DescribeServiceJob read as the inputs of a copy of the job and its state now.
    pub async fn describe_job_spec(&self, job_id: &str) -> Result<JobSpec, BatchError> {
        const OP: Op = Op::DescribeServiceJob;
        let out = self
            .read(OP, |c| c.describe_service_job().job_id(job_id).send())
            .await?;
        job_spec(&out).ok_or_else(|| BatchError::missing(OP, "jobId"))
    }

    /// TerminateServiceJob of one job (id or ARN) with `reason` as given (see
    /// [`terminate_reason`]); returns the request id, empty when the service sent none.
    pub async fn terminate_service_job(
        &self,
        job_id: &str,
        reason: &str,
    ) -> Result<String, BatchError> {
        const OP: Op = Op::TerminateServiceJob;
        let out = self
            .sdk
            .terminate_service_job()
            .job_id(job_id)
            .reason(reason)
            .send()
            .await
            .map_err(|e| classify(OP, e, self.endpoint()))?;
        Ok(out.request_id().unwrap_or_default().to_string())
    }
}
