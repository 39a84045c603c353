//! The append-only, tamper-evident audit log of priority changes.
//!
//! JSON lines in the user's data directory, file mode 0600, each written once in a canonical
//! form. Each record's hash covers its exact bytes, which include the hash of the previous
//! record (a chain), so an edited, removed, reordered or re-serialised record is found by
//! [`verify`]; a cut tail or a whole file rewritten with a recomputed chain is found only by
//! comparing the head with one recorded elsewhere (`audit anchor`, `verify --expect-head`).
//! Appends take an exclusive file lock (waiting at most a timeout; the holder's PID is in
//! `audit.jsonl.lock`), so two consoles on one machine cannot interleave, and are fsynced. A
//! change writes an *intent* record before the API call and an *outcome* record after it, both
//! with the change's random id: a crash between the two leaves the intent, listed as "outcome
//! unknown". A last line cut short by an interrupted write is "torn": every reader names it and
//! `quotatop audit repair` moves it aside with a `repair` record.

mod history;
mod identity;
mod log;
mod outside;
mod record;
mod shared;
mod sink;

pub use history::{HistoryBreak, history_breaks};
pub use identity::LocalUser;
pub use log::{
    AuditLog, Head, InFlight, LockGuard, LogContents, QueueLock, SCHEME, TornTail, VerifyError,
    read_log, read_records, verify,
};
pub(crate) use log::{lock_timeout_from_env, read_log_data, verify_data};
pub use outside::{outside_calls, own_calls};
pub use record::{
    Action, AuditRecord, AwsContext, ChangeOrigin, ClassPolicy, JobRef, Operator, Outcome,
    RecordKind, Repair, Verdict,
};
pub use shared::{DEFAULT_LOG as DEFAULT_STORE_LOG, SessionLock, StoreAuditLog};
pub use sink::{ChangeLog, ChangeMark, QueueGuard};

/// Errors of the audit layer.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error("audit log {path}")]
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
    #[error(
        "audit log {path} line {line} is torn (an incomplete write of {bytes} bytes, e.g. on a full disk); run `quotatop audit repair --log {path}` to move it aside and record the repair"
    )]
    Torn {
        path: String,
        line: usize,
        bytes: u64,
    },
    #[error(
        "gave up after {secs:.0} s waiting for the audit log lock on {path}, held by {holder} (set QUOTATOP_AUDIT_LOCK_TIMEOUT or --lock-timeout to wait longer)"
    )]
    LockTimeout {
        path: String,
        secs: f64,
        holder: String,
    },
    #[error(
        "another `shares apply` on queue {queue} is running ({holder} holds {path}); nothing changed: wait for it to end, then plan again (its changes may change the plan)"
    )]
    QueueLocked {
        queue: String,
        path: String,
        holder: String,
    },
    /// The audit log in a PostgreSQL store (shown without its password) failed.
    #[error("audit log {store}: {message}")]
    Store { store: String, message: String },
}

/// A new change id: a random 128-bit UUID v4.
pub fn new_change_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// A warning when the log's last line is torn (for the console to show at start), else `None`.
pub fn tail_warning(path: &std::path::Path) -> Option<String> {
    match AuditLog::new(path).check_tail() {
        Ok(()) => None,
        Err(e @ AuditError::Torn { .. }) => Some(quotatop_model::error_chain(&e)),
        Err(_) => None,
    }
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
) -> Vec<quotatop_analysis::scorecard::PriorityChange> {
    changes
        .iter()
        // `queue` is a queue key: the name, with the source when the change went through one.
        .filter(|c| {
            quotatop_model::queue_key(c.intent.aws.source.as_deref(), &c.intent.queue) == queue
        })
        .filter(|c| c.is_priority())
        .filter(|c| c.took_effect())
        .filter_map(|c| {
            let at = chrono::DateTime::parse_from_rfc3339(&c.intent.time).ok()?;
            Some(quotatop_analysis::scorecard::PriorityChange {
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
) -> Result<Vec<quotatop_analysis::scorecard::PriorityChange>, AuditError> {
    Ok(priority_changes(&changes(&read_log(path)?.records), queue))
}

/// One priority change: its intent and, when it was written, its outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub intent: AuditRecord,
    pub outcome: Option<AuditRecord>,
}

impl Change {
    /// Whether the change took effect: the API call succeeded, or `audit reconcile` found
    /// that a change with no recorded outcome landed.
    pub fn took_effect(&self) -> bool {
        matches!(
            self.outcome.as_ref().and_then(|o| o.outcome.as_ref()),
            Some(Outcome::Succeeded { .. })
                | Some(Outcome::Reconciled {
                    verdict: Verdict::Landed | Verdict::LandedLate,
                    ..
                })
        )
    }

    /// Whether the change's outcome is reconcile's "did not land" (not the API's answer), which
    /// a later reconcile looks at again: the call may land after it was decided.
    pub fn did_not_land(&self) -> bool {
        matches!(
            self.outcome.as_ref().and_then(|o| o.outcome.as_ref()),
            Some(Outcome::Reconciled {
                verdict: Verdict::DidNotLand,
                ..
            })
        )
    }

    /// Whether no outcome was ever recorded (the process died between intent and outcome).
    pub fn outcome_unknown(&self) -> bool {
        self.outcome.is_none()
    }

    /// Whether this is a change of a job's priority (not a share's configuration or a drill's
    /// submission, which carry an [`Action`]).
    pub fn is_priority(&self) -> bool {
        self.intent.action.is_none()
    }
}

/// The `clientToken` of a job a change submits (a requeue's copy): derived from the change
/// id, so that a retry cannot make a second copy, and so that the submission's CloudTrail
/// record names the change.
pub fn client_token(change_id: &str) -> String {
    format!("quotatop-{change_id}").chars().take(64).collect()
}

/// Pairs intents with their outcomes (by change id), in log order; `repair` records are not
/// changes.
pub fn changes(records: &[(usize, AuditRecord)]) -> Vec<Change> {
    let mut out: Vec<Change> = Vec::new();
    for (_, r) in records {
        match r.kind {
            RecordKind::Intent => out.push(Change {
                intent: r.clone(),
                outcome: None,
            }),
            RecordKind::Outcome => {
                // The change's own outcome (the API's answer) wins over a reconciled one, in
                // whichever order they were written; a later reconcile's "landed after all"
                // replaces an earlier "did not land".
                let api = !matches!(r.outcome, Some(Outcome::Reconciled { .. }));
                let late = matches!(
                    r.outcome,
                    Some(Outcome::Reconciled {
                        verdict: Verdict::LandedLate,
                        ..
                    })
                );
                if let Some(c) = out.iter_mut().rev().find(|c| {
                    c.intent.change_id == r.change_id
                        && match &c.outcome {
                            None => true,
                            Some(o) => {
                                (api && matches!(o.outcome, Some(Outcome::Reconciled { .. })))
                                    || (late && c.did_not_land())
                            }
                        }
                }) {
                    c.outcome = Some(r.clone());
                }
            }
            RecordKind::Repair => {}
        }
    }
    out
}
