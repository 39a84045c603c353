//! SubmitServiceJob and TerminateServiceJobs: the calls that create and end jobs (a preemption
//! drill's). Plain types in, plain types out; the SDK's builders stay here.

use super::Op;
use std::collections::BTreeMap;

use aws_sdk_batch::operation::RequestId;
use aws_sdk_batch::types::{ServiceJobPreemptionConfiguration, ServiceJobType};

use super::error::classify;
use super::{BatchClient, BatchError};

/// Most jobs one TerminateServiceJobs call takes.
pub const TERMINATE_CHUNK: usize = 50;

/// A SAGEMAKER_TRAINING job to submit to a quota-share queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubmitRequest {
    pub job_name: String,
    pub queue: String,
    pub share: String,
    pub priority: u32,
    /// The SageMaker CreateTrainingJob request, as JSON text.
    pub payload: String,
    /// `preemptionConfiguration.preemptionRetriesBeforeTermination`.
    pub preemption_retries: Option<u32>,
    pub tags: BTreeMap<String, String>,
    /// Makes a retried submission idempotent (1 to 64 characters).
    pub client_token: Option<String>,
    /// `retryStrategy` (a copy of a job carries the job's own).
    pub retry_strategy: Option<super::RetryStrategy>,
    /// `timeoutConfig.attemptDurationSeconds`.
    pub timeout_s: Option<u32>,
}

/// What SubmitServiceJob answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubmittedJob {
    pub id: String,
    pub arn: String,
    pub name: String,
    /// Empty when the service sent none.
    pub request_id: String,
}

/// One job TerminateServiceJobs could not terminate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TerminateFailure {
    pub job: String,
    pub code: String,
    pub message: String,
}

/// What TerminateServiceJobs answered, over every chunk.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TerminateResult {
    pub successful: Vec<String>,
    pub errors: Vec<TerminateFailure>,
    /// One per call made; empty strings when the service sent none.
    pub request_ids: Vec<String>,
}

impl BatchClient {
    /// SubmitServiceJob of a SAGEMAKER_TRAINING job to a quota share.
    pub async fn submit_service_job(
        &self,
        req: &SubmitRequest,
    ) -> Result<SubmittedJob, BatchError> {
        const OP: Op = Op::SubmitServiceJob;
        let mut call = self
            .sdk
            .submit_service_job()
            .job_name(&req.job_name)
            .job_queue(&req.queue)
            .service_job_type(ServiceJobType::SagemakerTraining)
            .service_request_payload(&req.payload)
            .quota_share_name(&req.share)
            .scheduling_priority(req.priority.min(i32::MAX as u32) as i32)
            .set_client_token(req.client_token.clone());
        if let Some(n) = req.preemption_retries {
            call = call.preemption_configuration(
                ServiceJobPreemptionConfiguration::builder()
                    .preemption_retries_before_termination(n.min(i32::MAX as u32) as i32)
                    .build(),
            );
        }
        if let Some(r) = &req.retry_strategy {
            call = call.retry_strategy(super::job_spec::sdk_retry_strategy(r));
        }
        if let Some(t) = req.timeout_s {
            call = call.timeout_config(
                aws_sdk_batch::types::ServiceJobTimeout::builder()
                    .attempt_duration_seconds(t.min(i32::MAX as u32) as i32)
                    .build(),
            );
        }
        if !req.tags.is_empty() {
            call = call.set_tags(Some(req.tags.clone().into_iter().collect()));
        }
        let out = call
            .send()
            .await
            .map_err(|e| classify(OP, e, self.endpoint()))?;
        let id = out
            .job_id()
            .filter(|s| !s.is_empty())
            .ok_or_else(|| BatchError::missing(OP, "jobId"))?;
        Ok(SubmittedJob {
            id: quotatop_model::clean_text(id),
            arn: quotatop_model::clean_text(out.job_arn().unwrap_or_default()),
            name: quotatop_model::clean_text(out.job_name().unwrap_or(&req.job_name)),
            request_id: out.request_id().unwrap_or_default().to_string(),
        })
    }

    /// TerminateServiceJobs for `jobs` (ids or ARNs), [`TERMINATE_CHUNK`] per call. A job the
    /// service could not terminate is in `errors`; a call that fails as a whole is an error.
    pub async fn terminate_service_jobs(
        &self,
        jobs: &[String],
        reason: &str,
    ) -> Result<TerminateResult, BatchError> {
        const OP: Op = Op::TerminateServiceJobs;
        let mut result = TerminateResult::default();
        for chunk in jobs.chunks(TERMINATE_CHUNK) {
            let out = self
                .sdk
                .terminate_service_jobs()
                .set_jobs(Some(chunk.to_vec()))
                .reason(reason)
                .send()
                .await
                .map_err(|e| classify(OP, e, self.endpoint()))?;
            result.successful.extend(
                out.successful()
                    .iter()
                    .map(|s| quotatop_model::clean_text(s)),
            );
            result
                .errors
                .extend(out.errors().iter().map(|e| TerminateFailure {
                    job: quotatop_model::clean_text(e.job().unwrap_or_default()),
                    code: quotatop_model::clean_text(e.code().unwrap_or_default()),
                    message: quotatop_model::clean_text(e.message().unwrap_or_default()),
                }));
            result
                .request_ids
                .push(out.request_id().unwrap_or_default().to_string());
        }
        Ok(result)
    }
}
