//! Terminating jobs (TerminateServiceJob), audited write-ahead like every change: the gate for
//! every job first, then per job an intent (several jobs' intents linked by one run id), the
//! call, and an outcome; a call that errors or whose answer is lost is read back, so the
//! outcome says what the job shows.

use quotatop_analysis::gate::Act;
use quotatop_aws::batch::terminate_reason;
use quotatop_model::JobStatus;
use quotatop_store::audit::{Action, AuditRecord, ChangeLog, Outcome, Verdict, new_change_id};

use crate::jobs::{ActContext, ActError, Ended, JobApi, JobResult, JobTarget};
use crate::{ApiFailure, JobLookup};

/// The audit log's name of the call a termination makes.
pub const TERMINATE_CALL: &str = "TerminateServiceJob";

/// How the operator appears in the reason AWS records: `user@host`.
pub(crate) fn operator_words(op: &quotatop_store::audit::Operator) -> String {
    format!("{}@{}", op.user, op.host)
}

/// Terminates `jobs`, confirmed by the operator. Every job is judged by the gate
/// ([`quotatop_analysis::gate::judge`], `Act::Terminate`) first: any refusal refuses the
/// whole request, before any intent ([`ActError::Refused`], naming each refused job). Then per
/// job, in order: an intent (kind `TerminateServiceJob`, the job as target, the reason AWS
/// will record in its detail; with several jobs, one run id links them), TerminateServiceJob
/// with the reason [`terminate_reason`] makes of the operator and the justification, and an
/// outcome. When the call errors (or its answer is lost), the job is read back: terminated →
/// `reconciled: landed` (with the call's error); gone → `job gone`; still alive → `failed`
/// (the call's error and what was read); unreadable → no outcome, left for `audit
/// reconcile` ([`Ended::Unknown`]). Every job gets a [`JobResult`]: none is skipped.
pub async fn terminate<A: JobApi>(
    api: &A,
    log: &ChangeLog,
    ctx: &ActContext,
    jobs: &[JobTarget],
) -> Result<Vec<JobResult>, ActError> {
    if jobs.is_empty() {
        return Err(ActError::NoJob);
    }
    let mut stamps = Vec::with_capacity(jobs.len());
    let mut refused = Vec::new();
    for job in jobs {
        match ctx.judge(Act::Terminate, job) {
            Ok(stamp) => stamps.push(stamp),
            Err(why) => refused.push((job.name.clone(), why)),
        }
    }
    if !refused.is_empty() {
        return Err(ActError::Refused(refused));
    }
    let operator = ctx.operator_via(api).await;
    let reason = terminate_reason(&operator_words(&operator), &ctx.justification);
    let run_id = (jobs.len() > 1).then(new_change_id);
    let mut results = Vec::with_capacity(jobs.len());
    for (i, (job, stamp)) in jobs.iter().zip(stamps).enumerate() {
        let origin = ctx.origin(operator.clone(), job, stamp);
        let change_id = new_change_id();
        let action = Action {
            call: TERMINATE_CALL.to_string(),
            target: job.id.clone(),
            detail: format!("reason: {reason}"),
            run_id: run_id.clone(),
        };
        let mut intent = AuditRecord::drill_intent(
            origin,
            change_id.clone(),
            job.share.clone(),
            job.job_ref(),
            action,
        );
        intent.preview.clone_from(&job.preview);
        let result = match terminate_one(api, log, intent, &reason).await {
            Ok(result) => result,
            // The first job's intent could not be written: nothing was changed at all.
            Err(e) if i == 0 => return Err(ActError::AuditBeforeCall(e)),
            Err(e) => Ended::NotMade(format!(
                "could not write the audit intent, so this job was not terminated: {}",
                quotatop_model::error_chain(&e)
            )),
        };
        let written = !matches!(result, Ended::NotMade(_));
        results.push(JobResult {
            job_id: job.id.clone(),
            job_name: job.name.clone(),
            change_id: written.then_some(change_id),
            result,
        });
    }
    Ok(results)
}

/// One job: intent, call, outcome. `Err` only when the intent could not be written (nothing
/// was called).
async fn terminate_one<A: JobApi>(
    api: &A,
    log: &ChangeLog,
    intent: AuditRecord,
    reason: &str,
) -> Result<Ended, quotatop_store::audit::AuditError> {
    // Held from before the intent until after the outcome: `audit reconcile` leaves the change
    // alone while this process lives.
    let _in_flight = log.begin_change(&intent.change_id)?;
    log.append(intent.clone())?;
    let outcome = match api.terminate_job(&intent.job.id, reason).await {
        Ok(request_id) => Outcome::Succeeded { request_id },
        Err(ApiFailure(error)) => match read_back(api, &intent.job.id, error).await {
            Ok(outcome) => outcome,
            Err(why) => return Ok(Ended::Unknown(why)),
        },
    };
    let record = AuditRecord::outcome_of(intent, outcome.clone());
    Ok(match log.append(record) {
        Ok(_) => Ended::Recorded(outcome),
        Err(e) => Ended::AuditAfterCall(format!(
            "the call ended ({}), but its outcome could not be written to the audit log: {}",
            Ended::Recorded(outcome).describe(),
            quotatop_model::error_chain(&e)
        )),
    })
}

/// What a job's state says of a termination: the verdict and the words it rests on.
pub(crate) fn judge_terminated(id: &str, state: Option<(JobStatus, bool)>) -> (Verdict, String) {
    match state {
        None => (Verdict::JobGone, format!("{id} gone")),
        Some((status, true)) => (
            Verdict::Landed,
            format!("{id} {} (terminated)", status.as_str()),
        ),
        Some((status, false)) => (Verdict::DidNotLand, format!("{id} {}", status.as_str())),
    }
}

/// The outcome of a termination whose call answered `error` (or whose answer was lost), from
/// the job as it is now; `Err` when the job cannot be read.
async fn read_back<A: JobLookup>(api: &A, id: &str, error: String) -> Result<Outcome, String> {
    let state = api
        .job_state(id)
        .await
        .map_err(|e| format!("the call said {error:?} and the job could not be read back: {e}"))?;
    Ok(match judge_terminated(id, state) {
        (Verdict::DidNotLand, seen) => Outcome::Failed {
            error: format!("{error} (read back: {seen}, not terminated)"),
        },
        (verdict, seen) => Outcome::Reconciled {
            verdict,
            observed_priority: None,
            observed: Some(seen),
            call_error: Some(error),
        },
    })
}
