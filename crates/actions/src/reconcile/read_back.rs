//! Reading back what a change shows now: the lookup reconcile judges by, the verdict of each
//! kind of change, and whether the change was made against the AWS the client looks at.

use std::future::Future;

use quotatop_model::{JobStatus, QuotaShare};

use super::Target;
use crate::ApiFailure;
use quotatop_store::audit::{AuditRecord, Verdict};

/// Reads what reconcile judges by: a job's scheduling priority (`Ok(None)` when the job does
/// not exist any more), and for the other kinds of change a quota share, the jobs of a name, a
/// job's state. A lookup that cannot read one of these leaves such changes unknown, saying so.
pub trait JobLookup {
    fn job_priority(
        &self,
        job_id: &str,
    ) -> impl Future<Output = Result<Option<u32>, ApiFailure>> + Send;

    /// The queue's quota share `name` now (`Ok(None)`: no such share).
    fn share(
        &self,
        queue: &str,
        name: &str,
    ) -> impl Future<Output = Result<Option<QuotaShare>, ApiFailure>> + Send {
        let _ = (queue, name);
        std::future::ready(Err(ApiFailure(
            "this lookup cannot read quota shares".to_string(),
        )))
    }

    /// The ids of the queue's jobs named `name`, in every status.
    fn jobs_named(
        &self,
        queue: &str,
        name: &str,
    ) -> impl Future<Output = Result<Vec<String>, ApiFailure>> + Send {
        let _ = (queue, name);
        std::future::ready(Err(ApiFailure("this lookup cannot list jobs".to_string())))
    }

    /// A job's tags (`Ok(None)`: the job is gone): how a requeue's copy is found.
    fn job_tags(
        &self,
        job_id: &str,
    ) -> impl Future<Output = Result<Option<std::collections::BTreeMap<String, String>>, ApiFailure>>
    + Send {
        let _ = job_id;
        std::future::ready(Err(ApiFailure("this lookup cannot read tags".to_string())))
    }

    /// A job's status and whether it was terminated (`Ok(None)`: the job is gone).
    fn job_state(
        &self,
        job_id: &str,
    ) -> impl Future<Output = Result<Option<(JobStatus, bool)>, ApiFailure>> + Send {
        let _ = job_id;
        std::future::ready(Err(ApiFailure("this lookup cannot read jobs".to_string())))
    }
}

/// Why a change that is not a job's priority cannot be read back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum CannotReadBack {
    #[error(transparent)]
    Api(#[from] ApiFailure),
    #[error("the intent names no job")]
    NoJob,
    #[error("no way to read back {0}")]
    UnknownCall(String),
}

/// What a change that is not a job's priority shows now: the verdict and what it rests on.
/// `later` says whether a later change in the log acted on the same target.
async fn judge_action<L: JobLookup>(
    lookup: &L,
    intent: &AuditRecord,
    action: &quotatop_store::audit::Action,
    later: bool,
) -> Result<(Verdict, String), CannotReadBack> {
    match action.call.as_str() {
        "CreateQuotaShare" | "UpdateQuotaShare" | "DeleteQuotaShare" => {
            let live = lookup.share(&intent.queue, &action.target).await?;
            let observed = live
                .as_ref()
                .map(quotatop_analysis::shares_plan::describe)
                .unwrap_or_else(|| "absent".to_string());
            let verdict = if later {
                Verdict::Undecidable
            } else {
                crate::shares::judge(&action.call, &action.detail, live.as_ref())
            };
            Ok((verdict, observed))
        }
        "SubmitServiceJob" => {
            let ids = lookup.jobs_named(&intent.queue, &action.target).await?;
            Ok(if ids.is_empty() {
                (
                    Verdict::DidNotLand,
                    format!("no job named {} in {}", action.target, intent.queue),
                )
            } else {
                (Verdict::Landed, format!("job {}", ids.join(", ")))
            })
        }
        "TerminateServiceJobs" => {
            let ids: Vec<&str> = action
                .detail
                .rsplit_once(": ")
                .map(|(_, ids)| ids.split(", ").filter(|i| !i.is_empty()).collect())
                .unwrap_or_default();
            if ids.is_empty() {
                return Err(CannotReadBack::NoJob);
            }
            let (mut ended, mut alive, mut seen) = (0, 0, Vec::new());
            for id in &ids {
                match lookup.job_state(id).await? {
                    None => {
                        ended += 1;
                        seen.push(format!("{id} gone"));
                    }
                    Some((status, terminated)) => {
                        if terminated {
                            ended += 1;
                        } else if !status.is_terminal() {
                            alive += 1;
                        }
                        seen.push(format!(
                            "{id} {}{}",
                            status.as_str(),
                            if terminated { " (terminated)" } else { "" }
                        ));
                    }
                }
            }
            let verdict = if ended == ids.len() {
                Verdict::Landed
            } else if alive > 0 {
                Verdict::DidNotLand
            } else {
                Verdict::Undecidable
            };
            Ok((verdict, seen.join(", ")))
        }
        crate::TERMINATE_CALL => super::job_changes::terminated(lookup, &action.target).await,
        crate::REQUEUE_CALL => super::job_changes::requeued(lookup, intent, &action.target).await,
        other => Err(CannotReadBack::UnknownCall(other.to_string())),
    }
}

/// Why reconcile could not read what a change shows now.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum NotRead {
    #[error("cannot read it back: {0}")]
    Action(CannotReadBack),
    #[error("cannot read the job (no reason given)")]
    NoReason,
    #[error("cannot read the job: {0}")]
    Job(ApiFailure),
}

/// What the change shows now: the verdict, the job's priority (a priority change) and what a
/// change of another kind was judged by.
pub(super) async fn read_back<L: JobLookup>(
    lookup: &L,
    intent: &AuditRecord,
    later: bool,
) -> Result<(Verdict, Option<u32>, Option<String>), NotRead> {
    if let Some(action) = &intent.action {
        return judge_action(lookup, intent, action, later)
            .await
            .map(|(verdict, observed)| (verdict, None, Some(observed)))
            .map_err(NotRead::Action);
    }
    match lookup.job_priority(&intent.job.id).await {
        Err(ApiFailure(e)) if e.trim().is_empty() => Err(NotRead::NoReason),
        Err(e) => Err(NotRead::Job(e)),
        Ok(current) => Ok((
            Verdict::judge(current, later, intent.new_priority),
            current,
            None,
        )),
    }
}

/// Why the change was made against another AWS than `target` looks at, if it was.
pub(super) fn elsewhere(intent: &AuditRecord, target: &Target) -> Option<String> {
    let differs = |a: &Option<String>, b: &Option<String>| a != b;
    let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "the default".to_string());
    if differs(&intent.aws.region, &target.region) {
        return Some(format!(
            "made in region {}, this client looks at {}; reconcile with --region {}",
            show(&intent.aws.region),
            show(&target.region),
            show(&intent.aws.region)
        ));
    }
    if differs(&intent.aws.endpoint, &target.endpoint) {
        return Some(format!(
            "made against endpoint {}, this client uses {}; reconcile with that endpoint",
            show(&intent.aws.endpoint),
            show(&target.endpoint)
        ));
    }
    // arn:aws:batch:REGION:ACCOUNT:service-job/ID
    let job_account = intent.job.arn.split(':').nth(4).filter(|a| !a.is_empty());
    if let (Some(job), Some(mine)) = (job_account, target.account.as_deref())
        && job != mine
    {
        return Some(format!(
            "the job is in account {job}, this client's credentials are for {mine}"
        ));
    }
    None
}
