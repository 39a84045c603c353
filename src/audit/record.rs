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
    /// Written by `quotatop audit repair` after it moved a torn last line aside.
    Repair,
}

/// What `quotatop audit repair` cut from the end of the log, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Repair {
    /// Bytes cut from the end of the log.
    pub cut_bytes: u64,
    /// SHA-256 (hex) of the cut bytes.
    pub cut_sha256: String,
    /// 1-based line number the cut bytes started on.
    pub line: usize,
    /// The file the cut bytes were moved to.
    pub moved_to: String,
    pub reason: String,
}

/// The hash scheme of records without a `v` field (written before scheme 2).
fn scheme_1() -> u32 {
    1
}

/// How the API call ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum Outcome {
    Succeeded { request_id: Option<String> },
    Failed { error: String },
}

/// One line of the audit log.
///
/// Written once, in quotatop's canonical form (see `log::canonical_body`): compact JSON, keys in
/// the order of the fields below, control characters (C0, DEL, C1) escaped, `hash` last. A
/// field added later must be an `Option` left out when `None` (`serde(default,
/// skip_serializing_if)`), placed before `prev_hash`, so records written before it keep their
/// canonical form; anything else needs a new `v`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRecord {
    /// Hash scheme: 1 = hash over the re-serialised record (logs written before scheme 2, no
    /// `v` field); 2 = hash over the record's exact canonical bytes.
    #[serde(default = "scheme_1")]
    pub v: u32,
    /// 1-based position in the log.
    pub seq: u64,
    /// RFC 3339, UTC.
    pub time: String,
    pub kind: RecordKind,
    /// Identifies the change (a random UUID v4 since scheme 2); the outcome repeats its intent's
    /// id.
    pub change_id: String,
    pub operator: Operator,
    pub aws: AwsContext,
    pub queue: String,
    pub share: String,
    pub job: JobRef,
    /// The job's priority as read from the API just before the change (the preview's when that
    /// read failed).
    pub old_priority: u32,
    pub new_priority: u32,
    pub justification: String,
    pub change_record: Option<String>,
    /// What the preview predicted (new position, preemption candidates).
    pub preview: String,
    pub outcome: Option<Outcome>,
    /// Only in `repair` records: what was cut.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repair: Option<Repair>,
    /// Hash of the previous record ("" for the first).
    pub prev_hash: String,
    /// Scheme 2: SHA-256 (hex) of this line's bytes up to `hash` (the canonical record without
    /// `hash`, closed with `}`), which include `prev_hash`. Always the last field.
    #[serde(default)]
    pub hash: String,
}
