//! Requeueing a job with a retry cap: one audited change of two calls. SubmitServiceJob of a
//! copy (the job's own name, payload, share, priority, retry strategy, timeout and tags, with
//! `preemptionRetriesBeforeTermination = N` and the tags [`REPLACES_TAG`] and [`CHANGE_TAG`]),
//! its `clientToken` derived from the change id so that a retry cannot make a second copy;
//! then TerminateServiceJob of the original. A lost answer on either call is read back: the
//! copy is found by its tags, the original by its state.

use quotatop_analysis::gate::Act;
use quotatop_aws::batch::{JobSpec, SubmitRequest, terminate_reason};
use quotatop_store::audit::{Action, AuditRecord, ChangeLog, Outcome, Verdict, new_change_id};

use crate::jobs::{
    ActContext, ActError, CHANGE_TAG, Ended, JobApi, JobTarget, REPLACES_TAG, client_token,
    copy_tags,
};
use crate::terminate::{judge_terminated, operator_words};
use crate::{ApiFailure, JobLookup};

/// The audit log's name of a requeue (a change of two calls: SubmitServiceJob, then
/// TerminateServiceJob).
pub const REQUEUE_CALL: &str = "RequeueServiceJob";

/// What became of a requeue.
#[derive(Debug, Clone, PartialEq)]
pub struct Requeued {
    pub change_id: String,
    /// The copy's job id, when one was submitted (or found by its tags).
    pub copy: Option<String>,
    pub result: Ended,
}

/// The SubmitServiceJob of the copy of `spec` that change `change_id` makes, capped at
/// `retry_limit` preemption retries. `Err` says why the job cannot be copied.
pub fn copy_request(
    spec: &JobSpec,
    retry_limit: u32,
    change_id: &str,
) -> Result<SubmitRequest, String> {
    let payload = spec.payload.clone().ok_or_else(|| {
        format!(
            "DescribeServiceJob returned no serviceRequestPayload for job {}, so no copy can be submitted; nothing changed",
            spec.id
        )
    })?;
    if serde_json::from_str::<serde_json::Value>(&payload).is_err() {
        return Err(format!(
            "the serviceRequestPayload of job {} is not JSON, so no copy can be submitted; nothing changed",
            spec.id
        ));
    }
    let share = spec
        .share
        .clone()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            format!(
                "job {} names no quota share, so no copy can be submitted; nothing changed",
                spec.id
            )
        })?;
    Ok(SubmitRequest {
        job_name: spec.name.clone(),
        queue: spec.queue.clone(),
        share,
        priority: spec.priority.unwrap_or(0),
        payload,
        preemption_retries: Some(retry_limit),
        tags: copy_tags(&spec.tags, &spec.id, change_id),
        client_token: Some(client_token(change_id)),
        retry_strategy: spec.retry_strategy.clone(),
        timeout_s: spec.timeout_s,
    })
}

/// Why a job read for a requeue cannot be requeued, if it cannot.
fn not_requeueable(spec: &JobSpec) -> Option<String> {
    match spec.status {
        Some(s) if s.is_terminal() => Some(format!(
            "job {} has already ended ({}); nothing to requeue",
            spec.id,
            s.as_str()
        )),
        _ => None,
    }
}

/// The job as a copy needs it, or why it cannot be requeued (gone, unreadable, ended).
async fn read_spec<A: JobApi>(api: &A, id: &str) -> Result<JobSpec, ActError> {
    let spec = match api.job_spec(id).await {
        Ok(Some(spec)) => spec,
        Ok(None) => {
            return Err(ActError::CannotRequeue(format!(
                "job {id} does not exist any more; nothing changed"
            )));
        }
        Err(e) => {
            return Err(ActError::CannotRequeue(format!(
                "job {id} could not be read ({e}), so no copy can be made; nothing changed"
            )));
        }
    };
    if let Some(why) = not_requeueable(&spec) {
        return Err(ActError::CannotRequeue(why));
    }
    Ok(spec)
}

/// Requeues `job` with `retry_limit` preemption retries, confirmed by the operator.
///
/// Before any intent: the gate (`Act::Requeue`), then the job is read (DescribeServiceJob); a
/// job that is gone, has ended, or whose payload cannot be read is refused
/// ([`ActError::CannotRequeue`]). Then one intent (kind `RequeueServiceJob`, the original as
/// target, the copy's request in words), the submission, the termination of the original, and
/// one outcome. A submission that errors is read back by looking for the copy by its tags: not
/// found → `failed`, the original left running; found → the termination goes ahead. A
/// termination that errors is read back from the original's state. When a read-back cannot
/// read, no outcome is written ([`Ended::Unknown`]): `audit reconcile` decides it.
pub async fn requeue<A: JobApi>(
    api: &A,
    log: &ChangeLog,
    ctx: &ActContext,
    job: &JobTarget,
    retry_limit: u32,
) -> Result<Requeued, ActError> {
    let stamp = ctx
        .judge(Act::Requeue { retry_limit }, job)
        .map_err(|why| ActError::Refused(vec![(job.name.clone(), why)]))?;
    let spec = read_spec(api, &job.id).await?;
    let change_id = new_change_id();
    let req = copy_request(&spec, retry_limit, &change_id).map_err(ActError::CannotRequeue)?;
    let operator = ctx.operator_via(api).await;
    let reason = terminate_reason(
        &operator_words(&operator),
        &format!(
            "requeued with a retry limit of {retry_limit}: {}",
            ctx.justification
        ),
    );
    let action = Action {
        call: REQUEUE_CALL.to_string(),
        target: job.id.clone(),
        detail: format!(
            "SubmitServiceJob of a copy named {} (share {}, priority {}, preemptionRetriesBeforeTermination {retry_limit}, clientToken {}, tags {REPLACES_TAG}={} {CHANGE_TAG}={change_id}), then TerminateServiceJob of {} with reason: {reason}",
            req.job_name,
            req.share,
            req.priority,
            req.client_token.as_deref().unwrap_or("-"),
            job.id,
            job.id
        ),
        run_id: None,
    };
    let mut intent = AuditRecord::drill_intent(
        ctx.origin(operator, job, stamp),
        change_id.clone(),
        job.share.clone(),
        job.job_ref(),
        action,
    );
    intent.preview.clone_from(&job.preview);
    let _in_flight = log
        .begin_change(&change_id)
        .map_err(ActError::AuditBeforeCall)?;
    log.append(intent.clone())
        .map_err(ActError::AuditBeforeCall)?;
    let (copy, result) = two_calls(api, &intent, &req, &reason).await;
    let result = match result {
        Step::Unknown(why) => Ended::Unknown(why),
        Step::Outcome(outcome, words) => {
            let mut record = AuditRecord::outcome_of(intent, outcome.clone());
            record.preview = words;
            match log.append(record) {
                Ok(_) => Ended::Recorded(outcome),
                Err(e) => Ended::AuditAfterCall(format!(
                    "the requeue ended ({}), but its outcome could not be written to the audit log: {}",
                    Ended::Recorded(outcome).describe(),
                    quotatop_model::error_chain(&e)
                )),
            }
        }
    };
    Ok(Requeued {
        change_id,
        copy,
        result,
    })
}

/// How the two calls ended: an outcome and the words of what was done (the outcome record's
/// `preview`), or unknown.
enum Step {
    Outcome(Outcome, String),
    Unknown(String),
}

/// The submission and the termination; the copy's id when there is one.
async fn two_calls<A: JobApi>(
    api: &A,
    intent: &AuditRecord,
    req: &SubmitRequest,
    reason: &str,
) -> (Option<String>, Step) {
    let original = &intent.job.id;
    let (copy, submit_error, submit_request) = match api.submit_job(req).await {
        Ok(sub) => (sub.id, None, sub.request_id),
        Err(ApiFailure(error)) => {
            match find_copy(
                api,
                &intent.queue,
                &req.job_name,
                original,
                &intent.change_id,
            )
            .await
            {
                Ok(Some(id)) => (id, Some(error), String::new()),
                Ok(None) => {
                    return (
                        None,
                        Step::Outcome(
                            Outcome::Failed {
                                error: format!(
                                    "SubmitServiceJob: {error} (no copy found by its tags; the original was not terminated)"
                                ),
                            },
                            format!("no copy submitted; {original} left as it was"),
                        ),
                    );
                }
                Err(why) => {
                    return (
                        None,
                        Step::Unknown(format!(
                            "SubmitServiceJob said {error:?} and the copy could not be looked for: {why}"
                        )),
                    );
                }
            }
        }
    };
    let done = format!(
        "copy {copy} submitted (preemptionRetriesBeforeTermination {}), then {original} terminated",
        req.preemption_retries.unwrap_or(0)
    );
    let step = match api.terminate_job(original, reason).await {
        Ok(terminate_request) => match submit_error {
            None => Step::Outcome(
                Outcome::Succeeded {
                    request_id: Some(format!(
                        "submit {}, terminate {}",
                        Some(submit_request)
                            .filter(|r| !r.is_empty())
                            .as_deref()
                            .unwrap_or("-"),
                        terminate_request.as_deref().unwrap_or("-")
                    )),
                },
                done,
            ),
            Some(error) => Step::Outcome(
                Outcome::Reconciled {
                    verdict: Verdict::Landed,
                    observed_priority: None,
                    observed: Some(format!(
                        "copy {copy} found by its tags; {original} terminated"
                    )),
                    call_error: Some(format!("SubmitServiceJob: {error}")),
                },
                done,
            ),
        },
        Err(ApiFailure(error)) => {
            terminate_read_back(api, original, &copy, error, submit_error, done).await
        }
    };
    (Some(copy), step)
}

/// The outcome of a requeue whose copy `copy` exists and whose termination of `original`
/// answered `error`, from the original's state now.
async fn terminate_read_back<A: JobLookup>(
    api: &A,
    original: &str,
    copy: &str,
    error: String,
    submit_error: Option<String>,
    done: String,
) -> Step {
    let state = match api.job_state(original).await {
        Ok(state) => state,
        Err(e) => {
            return Step::Unknown(format!(
                "copy {copy} submitted; TerminateServiceJob of {original} said {error:?} and the original could not be read back: {e}"
            ));
        }
    };
    let call_error = Some(match submit_error {
        Some(s) => format!("SubmitServiceJob: {s}; TerminateServiceJob: {error}"),
        None => format!("TerminateServiceJob: {error}"),
    });
    match judge_terminated(original, state) {
        (Verdict::DidNotLand, seen) => Step::Outcome(
            Outcome::Failed {
                error: format!(
                    "copy {copy} was submitted, but TerminateServiceJob of the original failed: {error} (read back: {seen}); both will run: terminate one (quotatop terminate {original})"
                ),
            },
            format!("copy {copy} submitted; {original} NOT terminated"),
        ),
        (verdict, seen) => Step::Outcome(
            Outcome::Reconciled {
                verdict,
                observed_priority: None,
                observed: Some(format!("copy {copy}; {seen}")),
                call_error,
            },
            done,
        ),
    }
}

/// The copy change `change_id` submitted of `original`: among the queue's jobs named `name`,
/// the one tagged [`REPLACES_TAG`] = `original` and [`CHANGE_TAG`] = `change_id`.
pub async fn find_copy<L: JobLookup>(
    lookup: &L,
    queue: &str,
    name: &str,
    original: &str,
    change_id: &str,
) -> Result<Option<String>, ApiFailure> {
    for id in lookup.jobs_named(queue, name).await? {
        if id == original {
            continue;
        }
        let Some(tags) = lookup.job_tags(&id).await? else {
            continue;
        };
        if tags.get(REPLACES_TAG).map(String::as_str) == Some(original)
            && tags.get(CHANGE_TAG).map(String::as_str) == Some(change_id)
        {
            return Ok(Some(id));
        }
    }
    Ok(None)
}
