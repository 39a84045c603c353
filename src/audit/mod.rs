//! The append-only, tamper-evident audit log of priority changes.
//!
//! JSON lines in the user's data directory, file mode 0600. Each record holds the hash of the
//! previous one (a chain), so an edited, removed or reordered record is found by [`verify`].
//! Appends take an exclusive file lock, so two consoles on one machine cannot interleave, and
//! are fsynced. A change writes an *intent* record before the API call and an *outcome* record
//! after it: a crash between the two leaves the intent, listed as "outcome unknown".

mod identity;
mod log;
mod record;

pub use identity::LocalUser;
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

/// `audit.jsonl` in quotatop's data directory (`None` when the OS gives no home directory).
pub fn default_path() -> Option<std::path::PathBuf> {
    directories::ProjectDirs::from("", "", "quotatop").map(|d| d.data_dir().join("audit.jsonl"))
}

/// The changes of `queue` that took effect (outcome succeeded) as the scorecard's audit view
/// takes them: operator `user@host`, the intent's time. Failed changes did not happen; an
/// intent without an outcome is unknown and left out (`audit list` shows it).
pub fn priority_changes(
    changes: &[Change],
    queue: &str,
) -> Vec<crate::analysis::scorecard::PriorityChange> {
    changes
        .iter()
        .filter(|c| c.intent.queue == queue)
        .filter(|c| {
            matches!(
                c.outcome.as_ref().and_then(|o| o.outcome.as_ref()),
                Some(Outcome::Succeeded { .. })
            )
        })
        .filter_map(|c| {
            let at = chrono::DateTime::parse_from_rfc3339(&c.intent.time).ok()?;
            Some(crate::analysis::scorecard::PriorityChange {
                at: at.timestamp_millis(),
                job_id: c.intent.job.id.clone(),
                share: c.intent.share.clone(),
                operator: Some(format!(
                    "{}@{}",
                    c.intent.operator.user, c.intent.operator.host
                )),
                old: c.intent.old_priority,
                new: c.intent.new_priority,
                change_record: c.intent.change_record.clone(),
            })
        })
        .collect()
}

/// [`priority_changes`] of `queue` read from the audit log at `path`.
pub fn queue_priority_changes(
    path: &std::path::Path,
    queue: &str,
) -> Result<Vec<crate::analysis::scorecard::PriorityChange>, AuditError> {
    Ok(priority_changes(&changes(&read_records(path)?), queue))
}

/// One priority change: its intent and, when it was written, its outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub intent: AuditRecord,
    pub outcome: Option<AuditRecord>,
}

/// Pairs intents with their outcomes (by change id), in log order.
pub fn changes(records: &[(usize, AuditRecord)]) -> Vec<Change> {
    let mut out: Vec<Change> = Vec::new();
    for (_, r) in records {
        match r.kind {
            RecordKind::Intent => out.push(Change {
                intent: r.clone(),
                outcome: None,
            }),
            RecordKind::Outcome => {
                if let Some(c) = out
                    .iter_mut()
                    .rev()
                    .find(|c| c.intent.change_id == r.change_id && c.outcome.is_none())
                {
                    c.outcome = Some(r.clone());
                }
            }
        }
    }
    out
}
