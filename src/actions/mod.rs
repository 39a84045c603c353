//! The console's one mutation: changing a job's scheduling priority, validated, previewed,
//! confirmed and audited (write-ahead: intent before the API call, outcome after).

mod api;
mod apply;
mod preview;
mod validate;

pub use apply::{ApiFailure, ChangeContext, PriorityApi, apply_change};
pub use preview::{Candidate, Prediction, Preview, preview};
pub use validate::{PriorityPolicy, ValidationError, check_change, parse_priority};

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
