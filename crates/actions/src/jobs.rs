//! What terminating and requeueing a job have in common: the API they call ([`JobApi`]), the
//! job they act on ([`JobTarget`]), who acts and under which rules ([`ActContext`]), and what
//! became of each job ([`JobResult`]).

use std::collections::BTreeMap;
use std::future::Future;

use quotatop_analysis::gate::{Act, Door, Refusal, Stamp, Subject};
use quotatop_aws::batch::{JobSpec, SubmitRequest, SubmittedJob};
use quotatop_model::TrackedJob;
use quotatop_store::audit::{
    AuditError, AwsContext, ChangeOrigin, ClassPolicy, JobRef, Operator, Outcome,
};

use crate::{ApiFailure, JobLookup};

/// The API calls a termination and a requeue make, besides the reads reconcile makes
/// ([`JobLookup`]: a job's state, the jobs of a name, a job's tags). Implemented by the Batch
/// client; by fakes in tests.
pub trait JobApi: JobLookup + Sync {
    /// TerminateServiceJob of one job with `reason` as AWS will record it; the request id
    /// when the service gave one.
    fn terminate_job(
        &self,
        job_id: &str,
        reason: &str,
    ) -> impl Future<Output = Result<Option<String>, ApiFailure>> + Send;

    /// DescribeServiceJob as the inputs of a copy (`Ok(None)`: no such job).
    fn job_spec(
        &self,
        job_id: &str,
    ) -> impl Future<Output = Result<Option<JobSpec>, ApiFailure>> + Send;

    /// SubmitServiceJob.
    fn submit_job(
        &self,
        req: &SubmitRequest,
    ) -> impl Future<Output = Result<SubmittedJob, ApiFailure>> + Send;

    /// The AWS principal the change is made as; `Ok(None)` when this API has no notion of one.
    fn caller_identity(&self) -> impl Future<Output = Result<Option<String>, ApiFailure>> + Send {
        std::future::ready(Ok(None))
    }
}

/// One job a termination or a requeue acts on, as the door saw it (its snapshot) with what
/// the preview said of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobTarget {
    pub id: String,
    pub name: String,
    pub arn: String,
    /// The queue's name, as the audit log records it.
    pub queue: String,
    pub share: String,
    /// Its `quotatop:class` tag: what the class policy reads.
    pub class_tag: Option<String>,
    pub priority: u32,
    /// What the preview showed the operator for this job (kept in the intent).
    pub preview: String,
}

impl JobTarget {
    /// The target of `job` in queue `queue`, with the preview's words.
    pub fn of(queue: &str, job: &TrackedJob, preview: String) -> Self {
        Self {
            id: job.job.id.clone(),
            name: job.job.name.clone(),
            arn: job.arn.clone(),
            queue: queue.to_string(),
            share: job.job.share.clone(),
            class_tag: job.job.class_tag.clone(),
            priority: job.job.priority,
            preview,
        }
    }

    pub(crate) fn job_ref(&self) -> JobRef {
        JobRef {
            id: self.id.clone(),
            name: self.name.clone(),
            arn: self.arn.clone(),
        }
    }

    pub(crate) fn subject(&self) -> Subject<'_> {
        Subject {
            share: &self.share,
            class_tag: self.class_tag.as_deref(),
            priority: self.priority,
        }
    }
}

/// Who terminates or requeues, where, why, and under which rules (the door: read-only mode,
/// `[priority]`, the class policy, and the names the operator is known by).
#[derive(Debug, Clone)]
pub struct ActContext {
    pub operator: Operator,
    pub aws: AwsContext,
    pub justification: String,
    pub change_record: Option<String>,
    /// The rules the one check ([`quotatop_analysis::gate::judge`]) applies, again just before
    /// each intent is written.
    pub door: Door,
    /// The change-record policy checked, and where it came from (kept in the intent).
    pub policy: Option<String>,
}

impl ActContext {
    /// The gate's verdict on `act` for `job`.
    pub(crate) fn judge(&self, act: Act, job: &JobTarget) -> Result<Option<Stamp>, Refusal> {
        self.door.judge(
            act,
            job.subject(),
            &self.justification,
            self.change_record.as_deref(),
        )
    }

    /// What an intent about `job` in this context records besides the change itself.
    pub(crate) fn origin(
        &self,
        operator: Operator,
        job: &JobTarget,
        stamp: Option<Stamp>,
    ) -> ChangeOrigin {
        ChangeOrigin {
            operator,
            aws: self.aws.clone(),
            queue: job.queue.clone(),
            justification: self.justification.clone(),
            change_record: self.change_record.clone(),
            policy: self.policy.clone(),
            class_policy: stamp.map(|s| ClassPolicy {
                hash: s.policy_hash,
                class_before: Some(s.class_before),
                class_after: Some(s.class_after),
                approved_by: None,
            }),
            batch_id: None,
        }
    }

    /// The operator with the AWS principal `api` names (or why it is unknown).
    pub(crate) async fn operator_via<A: JobApi>(&self, api: &A) -> Operator {
        let mut operator = self.operator.clone();
        if operator.aws_principal.is_none() {
            operator.aws_principal = crate::apply::principal_or_why(api.caller_identity().await);
        }
        operator
    }
}

/// What became of one job of a termination or requeue.
#[derive(Debug, Clone, PartialEq)]
pub struct JobResult {
    pub job_id: String,
    pub job_name: String,
    /// The change's id in the audit log (`None`: nothing was written for this job).
    pub change_id: Option<String>,
    pub result: Ended,
}

/// How one job's change ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Ended {
    /// The outcome recorded (the call's answer, or what the job showed when read back after a
    /// call that errored or whose answer was lost).
    Recorded(Outcome),
    /// The call's answer was lost and the job could not be read back: the intent stays without
    /// outcome for `audit reconcile` to decide.
    Unknown(String),
    /// Not made, nothing called: its intent could not be written (the words say why).
    NotMade(String),
    /// The outcome could not be written to the audit log (the change itself was made or not as
    /// the words say).
    AuditAfterCall(String),
}

impl Ended {
    /// Whether the change took effect (the call succeeded, or the read-back found it landed).
    pub fn took_effect(&self) -> bool {
        match self {
            Ended::Recorded(Outcome::Succeeded { .. }) => true,
            Ended::Recorded(Outcome::Reconciled { verdict, .. }) => matches!(
                verdict,
                quotatop_store::audit::Verdict::Landed | quotatop_store::audit::Verdict::LandedLate
            ),
            _ => false,
        }
    }

    /// In words, for a terminal (cleaned).
    pub fn describe(&self) -> String {
        let s = match self {
            Ended::Recorded(Outcome::Succeeded { request_id }) => {
                format!("done (request {})", request_id.as_deref().unwrap_or("-"))
            }
            Ended::Recorded(Outcome::Failed { error }) => format!("failed: {error}"),
            Ended::Recorded(Outcome::Reconciled {
                verdict,
                observed,
                call_error,
                ..
            }) => format!(
                "{} as read back{}{}",
                verdict.as_str(),
                observed
                    .as_deref()
                    .map(|o| format!(" ({o})"))
                    .unwrap_or_default(),
                call_error
                    .as_deref()
                    .map(|e| format!("; the call said: {e}"))
                    .unwrap_or_default()
            ),
            Ended::Unknown(why) => {
                format!("outcome unknown ({why}): run `quotatop audit reconcile` to decide it")
            }
            Ended::NotMade(why) => format!("not made: {why}"),
            Ended::AuditAfterCall(why) => why.clone(),
        };
        quotatop_model::clean_text(&s)
    }
}

/// Why a termination or requeue as a whole could not be made: nothing was written or called
/// for any of its jobs.
#[derive(Debug, thiserror::Error)]
pub enum ActError {
    /// The gate refused one or more of the jobs; each is named with the gate's words.
    #[error("{}", refusals(.0))]
    Refused(Vec<(String, Refusal)>),
    #[error("nothing to do: no job given")]
    NoJob,
    #[error(
        "could not write the audit intent, so nothing was changed: {}",
        quotatop_model::error_chain(.0)
    )]
    AuditBeforeCall(AuditError),
    /// A requeue's job cannot be copied (its payload cannot be read, it has ended, it is gone).
    #[error("{0}")]
    CannotRequeue(String),
}

fn refusals(r: &[(String, Refusal)]) -> String {
    match r {
        [(_, one)] => one.to_string(),
        many => many
            .iter()
            .map(|(job, why)| format!("{job}: {why}"))
            .collect::<Vec<_>>()
            .join("; "),
    }
}

/// The tag a requeue's copy carries naming the job it replaces.
pub const REPLACES_TAG: &str = "quotatop:replaces";
/// The tag a requeue's copy carries naming the audited change that made it (a second requeue
/// of the same job makes a copy with another change id).
pub const CHANGE_TAG: &str = "quotatop:change-id";

/// The copy's tags: the job's own, less any `aws:` tag (reserved, AWS refuses them) and
/// an earlier requeue's marks, plus [`REPLACES_TAG`] and [`CHANGE_TAG`].
pub fn copy_tags(
    own: &BTreeMap<String, String>,
    original: &str,
    change_id: &str,
) -> BTreeMap<String, String> {
    let mut tags: BTreeMap<String, String> = own
        .iter()
        .filter(|(k, _)| !k.to_ascii_lowercase().starts_with("aws:"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    tags.insert(REPLACES_TAG.to_string(), original.to_string());
    tags.insert(CHANGE_TAG.to_string(), change_id.to_string());
    tags
}

/// The `clientToken` of the copy a change submits: derived from the change id, so that a
/// retried submission of the same change cannot make a second copy (at most 64 characters).
pub fn client_token(change_id: &str) -> String {
    quotatop_store::audit::client_token(change_id)
}
