//! The JSON shapes of the Batch restJson1 protocol that the emulator reads and writes.
//!
//! Keys follow the aws-sdk-batch 1.138.0 serializers and deserializers (`protocol_serde/shape_*`)
//! exactly. Every optional member is omitted when absent (never `null`), timestamps are epoch
//! milliseconds as JSON numbers. Request members the model marks required are still `Option` here
//! so that a missing one gets a ClientException naming it instead of a serde message.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::error::ApiError;
use quotatop_model::Millis;

pub type Tags = BTreeMap<String, String>;

/// The value of a required request member, or a ClientException naming it.
pub fn required<T>(value: Option<T>, name: &str) -> Result<T, ApiError> {
    value.ok_or_else(|| ApiError::client(format!("{name} is required")))
}

/// A required string member that must not be empty.
pub fn required_str(value: Option<String>, name: &str) -> Result<String, ApiError> {
    let v = required(value, name)?;
    if v.is_empty() {
        return Err(ApiError::client(format!("{name} must not be empty")));
    }
    Ok(v)
}

/// `maxResults`: 1–100, default 100.
pub fn page_size(max_results: Option<i64>) -> Result<usize, ApiError> {
    match max_results {
        None => Ok(100),
        Some(n) if (1..=100).contains(&n) => Ok(n as usize),
        Some(n) => Err(ApiError::client(format!(
            "maxResults must be between 1 and 100, got {n}"
        ))),
    }
}

// ----- shared shapes -----------------------------------------------------------------------

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CapacityLimitJson {
    pub max_capacity: Option<i64>,
    pub capacity_unit: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SharingJson {
    pub strategy: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub borrow_limit: Option<i64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SharePreemptionJson {
    pub in_share_preemption: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CapacityUsage {
    pub capacity_unit: String,
    pub quantity: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ServiceResourceId {
    pub name: &'static str,
    pub value: String,
}

impl ServiceResourceId {
    pub fn training_job(arn: impl Into<String>) -> Self {
        Self {
            name: "TrainingJobArn",
            value: arn.into(),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LatestAttempt {
    pub service_resource_id: ServiceResourceId,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AttemptJson {
    pub service_resource_id: ServiceResourceId,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Millis>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped_at: Option<Millis>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_reason: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RetryStrategyJson {
    pub attempts: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evaluate_on_exit: Option<Vec<EvaluateOnExitJson>>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EvaluateOnExitJson {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_status_reason: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TimeoutJson {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempt_duration_seconds: Option<i64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobPreemptionJson {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preemption_retries_before_termination: Option<i64>,
}

// ----- scheduling policies, queues, environments -----------------------------------------

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateSchedulingPolicyRequest {
    pub name: Option<String>,
    pub quota_share_policy: Option<QuotaSharePolicyJson>,
    pub fairshare_policy: Option<serde_json::Value>,
    pub tags: Option<Tags>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QuotaSharePolicyJson {
    pub idle_resource_assignment_strategy: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct DescribeSchedulingPoliciesRequest {
    pub arns: Option<Vec<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PageRequest {
    pub max_results: Option<i64>,
    pub next_token: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SchedulingPolicyDetail {
    pub name: String,
    pub arn: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quota_share_policy: Option<QuotaSharePolicyJson>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fairshare_policy: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Tags>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DescribeJobQueuesRequest {
    pub job_queues: Option<Vec<String>>,
    pub max_results: Option<i64>,
    pub next_token: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DescribeServiceEnvironmentsRequest {
    pub service_environments: Option<Vec<String>>,
    pub max_results: Option<i64>,
    pub next_token: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceEnvironmentOrder {
    pub order: i64,
    pub service_environment: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JobQueueDetail {
    pub job_queue_name: String,
    pub job_queue_arn: String,
    pub state: &'static str,
    pub scheduling_policy_arn: String,
    pub status: &'static str,
    pub status_reason: &'static str,
    pub priority: i64,
    pub compute_environment_order: Vec<serde_json::Value>,
    pub service_environment_order: Vec<ServiceEnvironmentOrder>,
    pub job_queue_type: &'static str,
    pub tags: Tags,
    pub job_state_time_limit_actions: Vec<serde_json::Value>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceEnvironmentDetail {
    pub service_environment_name: String,
    pub service_environment_arn: String,
    pub service_environment_type: &'static str,
    pub state: &'static str,
    pub status: &'static str,
    pub capacity_limits: Vec<CapacityLimitJson>,
    pub tags: Tags,
}

// ----- quota shares ------------------------------------------------------------------------

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateQuotaShareRequest {
    pub quota_share_name: Option<String>,
    pub job_queue: Option<String>,
    pub capacity_limits: Option<Vec<CapacityLimitJson>>,
    pub resource_sharing_configuration: Option<SharingJson>,
    pub preemption_configuration: Option<SharePreemptionJson>,
    pub state: Option<String>,
    pub tags: Option<Tags>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateQuotaShareRequest {
    pub quota_share_arn: Option<String>,
    pub capacity_limits: Option<Vec<CapacityLimitJson>>,
    pub resource_sharing_configuration: Option<SharingJson>,
    pub preemption_configuration: Option<SharePreemptionJson>,
    pub state: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QuotaShareArnRequest {
    pub quota_share_arn: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListQuotaSharesRequest {
    pub job_queue: Option<String>,
    pub max_results: Option<i64>,
    pub next_token: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QuotaShareNameArn {
    pub quota_share_name: String,
    pub quota_share_arn: String,
}

/// DescribeQuotaShare's response and, without `tags`, ListQuotaShares' `QuotaShareDetail`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QuotaShareDetail {
    pub quota_share_name: String,
    pub quota_share_arn: String,
    pub job_queue_arn: String,
    pub capacity_limits: Vec<CapacityLimitJson>,
    pub resource_sharing_configuration: SharingJson,
    pub preemption_configuration: SharePreemptionJson,
    pub state: &'static str,
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Tags>,
}

// ----- service jobs ------------------------------------------------------------------------

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubmitServiceJobRequest {
    pub job_name: Option<String>,
    pub job_queue: Option<String>,
    pub retry_strategy: Option<RetryStrategyJson>,
    pub scheduling_priority: Option<i64>,
    pub service_request_payload: Option<String>,
    pub service_job_type: Option<String>,
    pub share_identifier: Option<String>,
    pub quota_share_name: Option<String>,
    pub preemption_configuration: Option<JobPreemptionJson>,
    pub timeout_config: Option<TimeoutJson>,
    pub tags: Option<Tags>,
    pub client_token: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JobRef {
    pub job_arn: String,
    pub job_name: String,
    pub job_id: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListServiceJobsRequest {
    pub job_queue: Option<String>,
    pub job_status: Option<String>,
    pub max_results: Option<i64>,
    pub next_token: Option<String>,
    pub filters: Option<Vec<KeyValuesPair>>,
}

#[derive(Debug, Deserialize)]
pub struct KeyValuesPair {
    pub name: Option<String>,
    pub values: Option<Vec<String>>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceJobSummary {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latest_attempt: Option<LatestAttempt>,
    pub capacity_usage: Vec<CapacityUsage>,
    pub created_at: Millis,
    pub job_arn: String,
    pub job_id: String,
    pub job_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scheduled_at: Option<Millis>,
    pub service_job_type: &'static str,
    pub quota_share_name: String,
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Millis>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped_at: Option<Millis>,
    /// "Only present when the value is true."
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_terminated: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobIdRequest {
    pub job_id: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PreemptionSummaryJson {
    pub preempted_attempt_count: u32,
    pub recent_preempted_attempts: Vec<AttemptJson>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DescribeServiceJobResponse {
    pub attempts: Vec<AttemptJson>,
    pub capacity_usage: Vec<CapacityUsage>,
    pub created_at: Millis,
    pub is_terminated: bool,
    pub job_arn: String,
    pub job_id: String,
    pub job_name: String,
    pub job_queue: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latest_attempt: Option<LatestAttempt>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_strategy: Option<RetryStrategyJson>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scheduled_at: Option<Millis>,
    pub scheduling_priority: u32,
    pub service_request_payload: String,
    pub service_job_type: &'static str,
    pub quota_share_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preemption_configuration: Option<JobPreemptionJson>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preemption_summary: Option<PreemptionSummaryJson>,
    /// Absent for a job that never started (the model marks it required; there is no start to
    /// give, and 0 would be 1970). The Rust SDK fills an absent required member with 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Millis>,
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped_at: Option<Millis>,
    pub tags: Tags,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_config: Option<TimeoutJson>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateServiceJobRequest {
    pub job_id: Option<String>,
    pub scheduling_priority: Option<i64>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TerminateServiceJobRequest {
    pub job_id: Option<String>,
    pub reason: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct TerminateServiceJobsRequest {
    pub jobs: Option<Vec<String>>,
    pub reason: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct TerminateErrorDetail {
    pub job: String,
    pub code: &'static str,
    pub message: String,
}

// ----- snapshot ----------------------------------------------------------------------------

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetJobQueueSnapshotRequest {
    pub job_queue: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FrontJob {
    pub job_arn: String,
    pub earliest_time_at_position: Millis,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FrontOfQueue {
    pub jobs: Vec<FrontJob>,
    pub last_updated_at: Millis,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FrontOfQuotaShares {
    pub quota_shares: BTreeMap<String, Vec<FrontJob>>,
    pub last_updated_at: Millis,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ShareUtilization {
    pub quota_share_name: String,
    pub capacity_usage: Vec<CapacityUsage>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QuotaShareUtilization {
    pub top_capacity_utilization: Vec<ShareUtilization>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueUtilization {
    pub total_capacity_usage: Vec<CapacityUsage>,
    pub quota_share_utilization: QuotaShareUtilization,
    pub last_updated_at: Millis,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GetJobQueueSnapshotResponse {
    pub front_of_queue: FrontOfQueue,
    pub front_of_quota_shares: FrontOfQuotaShares,
    pub queue_utilization: QueueUtilization,
}

// ----- tags --------------------------------------------------------------------------------

#[derive(Debug, Deserialize)]
pub struct TagResourceRequest {
    pub tags: Option<Tags>,
}

// ----- decoding and encoding ---------------------------------------------------------------

/// Decodes a request body; an empty body counts as `{}`. Malformed JSON and members of the wrong
/// type are ClientExceptions that say what is wrong and where.
pub fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    let body: &[u8] = if body.iter().all(u8::is_ascii_whitespace) {
        b"{}"
    } else {
        body
    };
    let value: serde_json::Value = serde_json::from_slice(body).map_err(|e| {
        ApiError::client(format!(
            "Malformed JSON in request body at line {}, column {}",
            e.line(),
            e.column()
        ))
    })?;
    if !value.is_object() {
        let got = match value {
            serde_json::Value::Array(_) => "a list",
            serde_json::Value::String(_) => "a string",
            serde_json::Value::Number(_) => "a number",
            serde_json::Value::Bool(_) => "a boolean",
            _ => "null",
        };
        return Err(ApiError::client(format!(
            "Invalid request body: it must be a JSON object, got {got}"
        )));
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        ApiError::client(super::wire_errors::invalid_member(
            &e.path().to_string(),
            &e.inner().to_string(),
        ))
    })
}

/// A 200 response with `value` as its JSON body.
pub fn ok<T: Serialize>(value: &T) -> Result<axum::response::Response, ApiError> {
    use axum::response::IntoResponse;
    Ok(axum::Json(value).into_response())
}

/// A 200 response without a body, as AWS answers DeleteQuotaShare and TerminateServiceJob.
pub fn ok_no_body() -> Result<axum::response::Response, ApiError> {
    use axum::response::IntoResponse;
    Ok(axum::http::StatusCode::OK.into_response())
}

/// A 200 response with the empty JSON object (operations without output).
pub fn ok_empty() -> Result<axum::response::Response, ApiError> {
    ok(&serde_json::json!({}))
}
