//! SubmitServiceJob, ListServiceJobs, DescribeServiceJob, UpdateServiceJob, TerminateServiceJob
//! and TerminateServiceJobs.
//!
//! # How much work a job is
//!
//! The engine needs to know how long a job runs. The emulator takes it, in simulated seconds of
//! RUNNING, from (first found):
//! 1. the tag `quotatop:work-seconds` on the SubmitServiceJob request;
//! 2. `StoppingCondition.MaxRuntimeInSeconds` in `serviceRequestPayload`: the job completes one
//!    second before its limit (reaching the limit is MaxRuntimeExceeded);
//! 3. otherwise 3600 (one hour).
//!
//! The tag `quotatop:checkpoint-seconds` sets a checkpoint interval: a preempted job then resumes
//! from its last checkpoint instead of from zero. Its training job writes them under the
//! payload's `CheckpointConfig.S3Uri` (served by the emulator's S3). The tag
//! `quotatop:checkpoint-fault` (`corrupt` or `never-restored`) makes them unusable: the job then
//! restarts from zero after each preemption ([`super::training`]). The tag
//! `quotatop:restore-seconds` makes each re-run spend that much RUNNING restoring before it
//! makes progress (its log's restore line comes that long after its start).
//!
//! # How an attempt ends (engine `policy` rule 13)
//!
//! - `timeoutConfig.attemptDurationSeconds`: the attempt fails after that much RUNNING with
//!   "Job attempt duration exceeded timeout".
//! - `StoppingCondition.MaxRuntimeInSeconds`: an attempt still running when it reaches the
//!   limit fails there ("MaxRuntimeExceeded: …", as SageMaker reports it), work ending exactly
//!   at the limit included; a job without the work tag completes a second before it.
//! - The tag `quotatop:fail-after-seconds` makes the job's first attempt fail after that much
//!   RUNNING ("AlgorithmError: …"); `quotatop:fail-attempts` makes that many attempts fail.
//! - A failed attempt is retried per `retryStrategy.attempts` and `evaluateOnExit`; without a
//!   retry strategy the job fails at its first failed attempt.

use axum::response::Response;

use quotatop_engine::{FailureSpec, JobId, JobSpec, RetryAction, RetryRule};

use super::account::Account;
use super::error::ApiError;
use super::job_view::description;
use super::ops_tags::validate_tags;
use super::scenario::valid_job_or_share_name;
use super::state::{JobMeta, QueueWorld, request_fingerprint};
use super::training::{
    CHECKPOINT_FAULT_TAG, CheckpointFault, Training, parse_s3_uri, s3_uri_of_payload,
};
use super::wire::{
    self, JobIdRequest, JobPreemptionJson, JobRef, SubmitServiceJobRequest, TerminateErrorDetail,
    TerminateServiceJobRequest, TerminateServiceJobsRequest, UpdateServiceJobRequest, ok, parse,
    required, required_str,
};

pub const WORK_TAG: &str = "quotatop:work-seconds";
pub use quotatop_model::CHECKPOINT_TAG;
pub const FAIL_AFTER_TAG: &str = "quotatop:fail-after-seconds";
pub const FAIL_ATTEMPTS_TAG: &str = "quotatop:fail-attempts";
/// Running time a re-run spends restoring before it makes progress (the engine's restart
/// overhead; its log's restore line comes that long after its start).
pub const RESTORE_TAG: &str = "quotatop:restore-seconds";
const DEFAULT_WORK_S: u64 = 3600;
const MAX_SUBMIT_BYTES: usize = 30 * 1024;
const MAX_PAYLOAD_BYTES: usize = 10 * 1024;
/// `evaluateOnExit.onStatusReason`: "up to 512 characters" (the API model).
const MAX_ON_STATUS_REASON: usize = 512;

pub fn submit(world: &mut QueueWorld, body: &[u8]) -> Result<Response, ApiError> {
    if body.len() > MAX_SUBMIT_BYTES {
        return Err(ApiError::client(format!(
            "SubmitServiceJob request is {} bytes; the limit is 30 KiB",
            body.len()
        )));
    }
    let req: SubmitServiceJobRequest = parse(body)?;
    // A retry of a request already served (its token, the same request) gets that request's
    // job whatever changed since (the queue disabled, the share deleted): checked first.
    let fingerprint = request_fingerprint(body);
    if let Some(token) = &req.client_token
        && let Some(original) = check_client_token(world, token, fingerprint)?
    {
        return job_ref(world, original);
    }
    let name = required_str(req.job_name, "jobName")?;
    check_job_name(&name)?;
    let queue = required_str(req.job_queue, "jobQueue")?;
    world.check_queue(&queue)?;
    world.check_accepts_jobs()?;
    check_service_job_type(&required_str(req.service_job_type, "serviceJobType")?)?;
    let payload = required_str(req.service_request_payload, "serviceRequestPayload")?;
    let resources = read_payload(&payload)?;
    let share = quota_share(&queue, req.share_identifier.is_some(), req.quota_share_name)?;
    let retries = preemption_retries(req.preemption_configuration.as_ref())?;
    if let Some(rs) = &req.retry_strategy {
        check_retry_strategy(rs)?;
    }
    let timeout_s = req
        .timeout_config
        .as_ref()
        .and_then(|t| t.attempt_duration_seconds);
    if let Some(t) = timeout_s
        && t < 1
    {
        return Err(ApiError::client(format!(
            "timeoutConfig.attemptDurationSeconds must be at least 1, got {t}"
        )));
    }
    let tags = req.tags.unwrap_or_default();
    validate_tags(&tags)?;
    let tagged = TaggedBehaviour::read(&tags, &payload, &resources)?;
    let mut spec = JobSpec::new(
        name.clone(),
        share,
        resources.instance_type,
        resources.instance_count,
        tagged.work_s * 1000,
    )
    .priority(req.scheduling_priority.unwrap_or(0));
    spec.checkpoint_interval_ms = tagged.training.engine_interval();
    spec.preemption_retries = retries;
    spec.restart_overhead_ms = tagged.restore_s.map_or(0, |s| s * 1000);
    spec.failures = failure_spec(
        req.retry_strategy.as_ref(),
        timeout_s,
        resources.max_runtime_s,
        tagged.fail_after_s,
        tagged.fail_attempts,
    );
    let id = world.engine.submit(spec)?;
    world.meta.insert(
        id.0,
        JobMeta {
            payload,
            training: tagged.training,
            retry_strategy: req.retry_strategy,
            timeout: req.timeout_config,
        },
    );
    let uuid = world.engine.job_uuid(id).unwrap_or_default().to_string();
    let arn = world.job_arn(&uuid);
    if !tags.is_empty() {
        world.tags.insert(arn.clone(), tags);
    }
    if let Some(token) = req.client_token {
        world.client_tokens.insert(token, (id, fingerprint));
    }
    world.after_change();
    job_ref(world, id)
}

fn check_service_job_type(job_type: &str) -> Result<(), ApiError> {
    match job_type {
        "SAGEMAKER_TRAINING" => Ok(()),
        other => Err(ApiError::client(format!(
            "serviceJobType must be SAGEMAKER_TRAINING, got {other:?}"
        ))),
    }
}

/// The job's quota share: required, and `shareIdentifier` (a fair-share queue's field) refused.
fn quota_share(
    queue: &str,
    has_share_identifier: bool,
    quota_share_name: Option<String>,
) -> Result<String, ApiError> {
    if has_share_identifier {
        return Err(ApiError::client(format!(
            "shareIdentifier cannot be specified for job queue {queue}, which has a quota share scheduling policy"
        )));
    }
    quota_share_name.ok_or_else(|| {
        ApiError::client(format!(
            "quotaShareName is required for job queue {queue}, which has a quota share scheduling policy"
        ))
    })
}

fn preemption_retries(config: Option<&JobPreemptionJson>) -> Result<Option<u32>, ApiError> {
    match config.and_then(|p| p.preemption_retries_before_termination) {
        None => Ok(None),
        Some(n) if (0..=i64::from(i32::MAX)).contains(&n) => Ok(Some(n as u32)),
        Some(n) => Err(ApiError::client(format!(
            "preemptionRetriesBeforeTermination must be at least 0, got {n}"
        ))),
    }
}

/// A `clientToken` seen before with an identical request: that request's job (the SDKs'
/// retry contract: a retry after a lost answer gets the job the first try submitted). The same
/// token with a different request is refused; one of the wrong length too.
fn check_client_token(
    world: &QueueWorld,
    token: &str,
    fingerprint: u64,
) -> Result<Option<JobId>, ApiError> {
    if token.is_empty() || token.len() > 64 {
        return Err(ApiError::client("clientToken must be 1 to 64 characters"));
    }
    match world.client_tokens.get(token) {
        Some(&(id, seen)) if seen == fingerprint => Ok(Some(id)),
        Some(_) => Err(ApiError::client(format!(
            "clientToken {:?} was already used with a different request: use a new clientToken",
            quotatop_model::clean(token)
        ))),
        None => Ok(None),
    }
}

/// The answer naming job `id` (SubmitServiceJob's and UpdateServiceJob's).
fn job_ref(world: &QueueWorld, id: JobId) -> Result<Response, ApiError> {
    let job = world
        .engine
        .job(id)
        .ok_or_else(|| ApiError::Server("job index out of range".into()))?;
    ok(&JobRef {
        job_arn: world.job_arn(&job.id),
        job_name: job.name,
        job_id: job.id,
    })
}

/// What the request's `quotatop:*` tags (and its payload) make the job do in the emulator.
struct TaggedBehaviour {
    work_s: u64,
    training: Training,
    fail_after_s: Option<u64>,
    fail_attempts: Option<u64>,
    restore_s: Option<u64>,
}

impl TaggedBehaviour {
    fn read(
        tags: &wire::Tags,
        payload: &str,
        resources: &PayloadResources,
    ) -> Result<Self, ApiError> {
        let work_s = match tag_seconds(tags, WORK_TAG)? {
            Some(s) => s,
            None => resources
                .max_runtime_s
                .map_or(DEFAULT_WORK_S, |s| s.saturating_sub(1).max(1)),
        };
        let checkpoint_s = tag_seconds(tags, CHECKPOINT_TAG)?;
        let training = training_of(tags, payload, checkpoint_s)?;
        Ok(Self {
            work_s,
            training,
            fail_after_s: tag_seconds(tags, FAIL_AFTER_TAG)?,
            fail_attempts: tag_seconds(tags, FAIL_ATTEMPTS_TAG)?,
            restore_s: tag_seconds(tags, RESTORE_TAG)?,
        })
    }
}

/// How the job's training job checkpoints: every `checkpoint_s` (the tag), faulty per the tag
/// `quotatop:checkpoint-fault`, under the payload's `CheckpointConfig.S3Uri`.
fn training_of(
    tags: &wire::Tags,
    payload: &str,
    checkpoint_s: Option<u64>,
) -> Result<Training, ApiError> {
    let fault = match tags.get(CHECKPOINT_FAULT_TAG) {
        None => None,
        Some(v) => Some(CheckpointFault::parse(v).ok_or_else(|| {
            ApiError::client(format!(
                "tag {CHECKPOINT_FAULT_TAG} must be corrupt or never-restored, got {:?}",
                quotatop_model::clean(v)
            ))
        })?),
    };
    let s3 = match s3_uri_of_payload(payload) {
        None => None,
        Some(uri) => Some(parse_s3_uri(&uri).ok_or_else(|| {
            ApiError::client(format!(
                "serviceRequestPayload CheckpointConfig.S3Uri must be s3://bucket/prefix, got {:?}",
                quotatop_model::clean(&uri)
            ))
        })?),
    };
    Ok(Training {
        every_ms: checkpoint_s.map(|s| s * 1000),
        fault,
        s3,
    })
}

fn check_job_name(name: &str) -> Result<(), ApiError> {
    if valid_job_or_share_name(name) {
        Ok(())
    } else {
        Err(ApiError::client(format!(
            "Invalid jobName {name:?}: use up to 128 letters, digits, '-' or '_', starting with a letter or digit"
        )))
    }
}

/// The engine's failure settings of a submitted job (checked already).
fn failure_spec(
    retry: Option<&wire::RetryStrategyJson>,
    timeout_s: Option<i64>,
    max_runtime_s: Option<u64>,
    fail_after_s: Option<u64>,
    fail_attempts: Option<u64>,
) -> Option<FailureSpec> {
    let rules = retry
        .and_then(|r| r.evaluate_on_exit.as_ref())
        .into_iter()
        .flatten()
        .map(|e| RetryRule {
            on_status_reason: e
                .on_status_reason
                .clone()
                .unwrap_or_else(|| "*".to_string()),
            action: if e
                .action
                .as_deref()
                .is_some_and(|a| a.eq_ignore_ascii_case("EXIT"))
            {
                RetryAction::Exit
            } else {
                RetryAction::Retry
            },
        })
        .collect();
    FailureSpec::from_seconds(
        retry
            .and_then(|r| r.attempts)
            .map_or(1, |n| n.clamp(1, 10) as u32),
        rules,
        timeout_s.map(|s| s.max(1) as u64),
        max_runtime_s,
        fail_after_s,
        fail_attempts.map_or(1, |n| n.min(u64::from(u32::MAX)) as u32),
    )
}

fn check_retry_strategy(rs: &wire::RetryStrategyJson) -> Result<(), ApiError> {
    match rs.attempts {
        Some(n) if (1..=10).contains(&n) => {}
        Some(n) => {
            return Err(ApiError::client(format!(
                "retryStrategy.attempts must be between 1 and 10, got {n}"
            )));
        }
        None => return Err(ApiError::client("retryStrategy.attempts is required")),
    }
    for e in rs.evaluate_on_exit.iter().flatten() {
        if let Some(p) = &e.on_status_reason
            && p.chars().count() > MAX_ON_STATUS_REASON
        {
            return Err(ApiError::client(format!(
                "evaluateOnExit.onStatusReason is {} characters; the limit is {MAX_ON_STATUS_REASON}",
                p.chars().count()
            )));
        }
        match e.action.as_deref().map(str::to_ascii_uppercase).as_deref() {
            Some("RETRY" | "EXIT") => {}
            other => {
                return Err(ApiError::client(format!(
                    "evaluateOnExit.action must be RETRY or EXIT, got {other:?}"
                )));
            }
        }
    }
    Ok(())
}

fn tag_seconds(tags: &wire::Tags, key: &str) -> Result<Option<u64>, ApiError> {
    tags.get(key)
        .map(|v| match v.trim().parse::<u64>() {
            Ok(s) if s >= 1 => Ok(s),
            _ => Err(ApiError::client(format!(
                "Tag {key} must be a whole number of seconds >= 1, got {v:?}"
            ))),
        })
        .transpose()
}

struct PayloadResources {
    instance_type: String,
    instance_count: u32,
    max_runtime_s: Option<u64>,
}

/// `serviceRequestPayload` is a JSON string holding a SageMaker CreateTrainingJob request.
fn read_payload(payload: &str) -> Result<PayloadResources, ApiError> {
    if payload.len() > MAX_PAYLOAD_BYTES {
        return Err(ApiError::client(format!(
            "serviceRequestPayload is {} bytes; the limit is 10 KiB",
            payload.len()
        )));
    }
    let v: serde_json::Value = serde_json::from_str(payload)
        .map_err(|e| ApiError::client(format!("serviceRequestPayload is not valid JSON: {e}")))?;
    let rc = v
        .get("ResourceConfig")
        .ok_or_else(|| ApiError::client("serviceRequestPayload must contain ResourceConfig"))?;
    let instance_type = rc
        .get("InstanceType")
        .and_then(|t| t.as_str())
        .ok_or_else(|| {
            ApiError::client("serviceRequestPayload ResourceConfig.InstanceType must be a string")
        })?
        .to_string();
    let instance_count = match rc.get("InstanceCount").and_then(|c| c.as_u64()) {
        Some(n) if (1..=u32::MAX as u64).contains(&n) => n as u32,
        _ => {
            return Err(ApiError::client(
                "serviceRequestPayload ResourceConfig.InstanceCount must be an integer >= 1",
            ));
        }
    };
    let max_runtime_s = v
        .get("StoppingCondition")
        .and_then(|s| s.get("MaxRuntimeInSeconds"))
        .and_then(|s| s.as_u64())
        .filter(|&s| s >= 1);
    Ok(PayloadResources {
        instance_type,
        instance_count,
        max_runtime_s,
    })
}

pub fn describe(world: &mut QueueWorld, body: &[u8]) -> Result<Response, ApiError> {
    let req: JobIdRequest = parse(body)?;
    let id = world.find_job(&required_str(req.job_id, "jobId")?)?;
    ok(&description(world, id)?)
}

pub fn update(world: &mut QueueWorld, body: &[u8]) -> Result<Response, ApiError> {
    let req: UpdateServiceJobRequest = parse(body)?;
    let id = world.find_job(&required_str(req.job_id, "jobId")?)?;
    let priority = required(req.scheduling_priority, "schedulingPriority")?;
    world.engine.update_priority(id, priority)?;
    world.after_change();
    job_ref(world, id)
}

pub fn terminate(world: &mut QueueWorld, body: &[u8]) -> Result<Response, ApiError> {
    let req: TerminateServiceJobRequest = parse(body)?;
    let id = world.find_job(&required_str(req.job_id, "jobId")?)?;
    let reason = required_str(req.reason, "reason")?;
    world.engine.terminate(id, &reason)?;
    world.after_change();
    wire::ok_no_body()
}

/// Up to 50 jobs; always HTTP 200. Ids that name no job count as successful (nothing left to
/// terminate), as the SDK documents; an empty id is a per-item ValidationException.
pub fn terminate_many(account: &mut Account, body: &[u8]) -> Result<Response, ApiError> {
    let req: TerminateServiceJobsRequest = parse(body)?;
    let jobs = required(req.jobs, "jobs")?;
    if jobs.is_empty() || jobs.len() > 50 {
        return Err(ApiError::client(format!(
            "jobs must have 1 to 50 entries, got {}",
            jobs.len()
        )));
    }
    let reason = required_str(req.reason, "reason")?;
    let mut successful = Vec::new();
    let mut errors = Vec::new();
    for job in jobs {
        if job.is_empty() {
            errors.push(TerminateErrorDetail {
                job,
                code: "ValidationException",
                message: "job id must not be empty".into(),
            });
            continue;
        }
        let found = account
            .queues
            .iter_mut()
            .find_map(|q| q.find_job(&job).ok().map(|id| (q, id)));
        match found {
            None => successful.push(job),
            Some((q, id)) => match q.engine.terminate(id, &reason) {
                Ok(()) => successful.push(job),
                Err(e) => errors.push(TerminateErrorDetail {
                    job,
                    code: "ClientException",
                    message: ApiError::from(e).to_string(),
                }),
            },
        }
    }
    for q in &mut account.queues {
        q.after_change();
    }
    ok(&serde_json::json!({ "successful": successful, "errors": errors }))
}
