use serde::{Deserialize, Serialize};

/// Who made the change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Operator {
    pub user: String,
    pub host: String,
}

impl Operator {
    /// The OS user and host name of this process.
    pub fn current() -> Self {
        let user = std::env::var("USER")
            .or_else(|_| std::env::var("USERNAME"))
            .unwrap_or_else(|_| "unknown".to_string());
        let host = std::fs::read_to_string("/etc/hostname")
            .map(|h| h.trim().to_string())
            .ok()
            .filter(|h| !h.is_empty())
            .or_else(|| std::env::var("HOSTNAME").ok())
            .unwrap_or_else(|| "unknown".to_string());
        Self { user, host }
    }
}

/// Which AWS the change went to (never credentials).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct AwsContext {
    pub profile: Option<String>,
    pub region: Option<String>,
    pub endpoint: Option<String>,
}

/// The job changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobRef {
    pub id: String,
    pub name: String,
    pub arn: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordKind {
    /// Written (and fsynced) before the API call.
    Intent,
    /// Written after the API call returned.
    Outcome,
}

/// How the API call ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum Outcome {
    Succeeded { request_id: Option<String> },
    Failed { error: String },
}

/// One line of the audit log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRecord {
    /// 1-based position in the log.
    pub seq: u64,
    /// RFC 3339, UTC.
    pub time: String,
    pub kind: RecordKind,
    /// Identifies the change; the outcome repeats its intent's id.
    pub change_id: String,
    pub operator: Operator,
    pub aws: AwsContext,
    pub queue: String,
    pub share: String,
    pub job: JobRef,
    pub old_priority: u32,
    pub new_priority: u32,
    pub justification: String,
    pub change_record: Option<String>,
    /// What the preview predicted (new position, preemption candidates).
    pub preview: String,
    pub outcome: Option<Outcome>,
    /// Hash of the previous record ("" for the first).
    pub prev_hash: String,
    /// SHA-256 over this record without `hash`, chained through `prev_hash`.
    pub hash: String,
}
