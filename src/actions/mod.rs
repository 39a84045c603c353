//! The console's one mutation: changing a job's scheduling priority, validated, previewed,
//! confirmed and audited (write-ahead: intent before the API call, outcome after).

mod api;
mod apply;
mod preview;
mod validate;

pub use apply::{ApiFailure, ChangeContext, PriorityApi, apply_change};

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

/// Tags a job (the console's `--tag-justification`); object-safe so the console can hold one.
pub trait JobTagger: Send + Sync {
    fn tag_job(
        &self,
        arn: String,
        tags: BTreeMap<String, String>,
    ) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send + '_>>;
}
pub use preview::{Candidate, Prediction, Preview, preview};
pub use validate::{
    PriorityPolicy, ValidationError, change_record_reason, check_change, parse_priority,
};

/// Why a priority change could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ActionError {
    #[error("read-only mode: priority changes are disabled")]
    ReadOnly,
    #[error(transparent)]
    Invalid(#[from] ValidationError),
    #[error("job {0} is not in the current snapshot")]
    UnknownJob(String),
    #[error("job {0} has already finished ({1})")]
    Finished(String, &'static str),
    #[error("could not write the audit intent, so the change was not made: {0}")]
    AuditBeforeCall(crate::audit::AuditError),
    #[error("the change was made, but its outcome could not be written to the audit log: {0}")]
    AuditAfterCall(crate::audit::AuditError),
}
