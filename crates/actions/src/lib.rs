//! The changes quotatop makes to AWS, each validated, previewed, confirmed and audited
//! (write-ahead: intent before the API call, outcome after): a job's scheduling priority
//! ([`apply_change`]), terminating jobs ([`terminate`]), requeueing a job with a retry cap
//! ([`requeue`]), a quota share plan ([`apply_plan`]); and deciding the changes whose outcome
//! was never written ([`reconcile`]).

// Functions over 80 lines (clippy.toml) are denied workspace-wide (Cargo.toml); tests may be
// longer.
#![cfg_attr(test, allow(clippy::too_many_lines))]

mod api;
mod apply;
mod jobs;
mod reconcile;
mod requeue;
mod shares;
mod terminate;

pub use api::reconciler;
pub use apply::{
    ApiFailure, Batch, ChangeContext, PriorityApi, apply_change, apply_confirmed_change,
};
pub use jobs::{
    ActContext, ActError, CHANGE_TAG, Ended, JobApi, JobResult, JobTarget, REPLACES_TAG,
    client_token, copy_tags,
};
pub use reconcile::{
    Decision, JobLookup, Reconciled, Target, kind_of, reconcile, tally, tally_by_kind,
};
pub use requeue::{REQUEUE_CALL, Requeued, copy_request, find_copy, requeue};
pub use shares::{ApplyReport, LiveShares, SharesApi, SharesContext, apply_plan, verdict_words};
pub use terminate::{TERMINATE_CALL, terminate};

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;

/// The tag `--tag-justification` puts on a changed job, so other operators see the change in
/// AWS: `quotatop:priority-change` = `old->new by user: reason` (at most 256 characters, the
/// API's limit for a tag value).
pub fn justification_tag(p: &Preview, user: &str, reason: &str) -> BTreeMap<String, String> {
    let v = format!(
        "{}->{} by {}: {}",
        p.old_priority, p.new_priority, user, reason
    );
    BTreeMap::from([(
        "quotatop:priority-change".to_string(),
        v.chars().take(256).collect(),
    )])
}

/// [`justification_tag`] plus `quotatop:audit-head` = `<count>:<hash>`, the audit log's head
/// just after the change, when the log verifies: an anchor outside the file (changing it needs
/// `batch:TagResource` and leaves a CloudTrail record; it ages out with the job). The warning
/// says why the head tag was left out.
pub fn change_tags(
    p: &Preview,
    user: &str,
    reason: &str,
    log: &quotatop_store::audit::ChangeLog,
) -> (BTreeMap<String, String>, Option<String>) {
    let mut tags = justification_tag(p, user, reason);
    match log.verify() {
        Ok(head) => {
            tags.insert(
                "quotatop:audit-head".to_string(),
                format!("{}:{}", head.count, head.hash),
            );
            (tags, None)
        }
        Err(e) => (
            tags,
            Some(format!(
                "the audit log did not verify ({e}), so no quotatop:audit-head tag"
            )),
        ),
    }
}

/// Tags a job (the console's `--tag-justification`); object-safe so the console can hold one.
pub trait JobTagger: Send + Sync {
    fn tag_job(
        &self,
        arn: String,
        tags: BTreeMap<String, String>,
    ) -> Pin<Box<dyn Future<Output = Result<(), ApiFailure>> + Send + '_>>;
}
pub use quotatop_analysis::preview::{
    Candidate, Prediction, Preemptions, Preview, PreviewError, preview,
};
pub use quotatop_analysis::preview::{
    PriorityPolicy, ValidationError, change_record_reason, check_change, parse_priority,
};

/// Why a priority change could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ActionError {
    #[error("read-only mode: priority changes are disabled")]
    ReadOnly,
    #[error(transparent)]
    Invalid(#[from] ValidationError),
    #[error(transparent)]
    Preview(#[from] quotatop_analysis::preview::PreviewError),
    #[error(
        "could not write the audit intent, so the change was not made: {}",
        quotatop_model::error_chain(.0)
    )]
    AuditBeforeCall(quotatop_store::audit::AuditError),
    #[error(
        "the change was made, but its outcome could not be written to the audit log: {}",
        quotatop_model::error_chain(.0)
    )]
    AuditAfterCall(quotatop_store::audit::AuditError),
}

#[cfg(test)]
mod jobs_tests;
