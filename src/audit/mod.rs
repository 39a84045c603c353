//! The append-only, tamper-evident audit log of priority changes.
//!
//! JSON lines in the user's data directory, file mode 0600. Each record holds the hash of the
//! previous one (a chain), so an edited, removed or reordered record is found by [`verify`].
//! Appends take an exclusive file lock, so two consoles on one machine cannot interleave, and
//! are fsynced. A change writes an *intent* record before the API call and an *outcome* record
//! after it: a crash between the two leaves the intent, listed as "outcome unknown".

mod log;
mod record;

pub use log::{AuditLog, VerifyError, read_records, verify};
pub use record::{AuditRecord, AwsContext, JobRef, Operator, Outcome, RecordKind};

/// Errors of the audit layer.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error("audit log {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("audit log {path} line {line}: {message}")]
    Corrupt {
        path: String,
        line: usize,
        message: String,
    },
}
