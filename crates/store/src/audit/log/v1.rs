//! Hash scheme 1, frozen: the records as written before scheme 2 (no `v` field), hashed over
//! their re-serialisation with `hash` empty. Kept only to verify old logs; these types must
//! not change.

use serde::{Deserialize, Serialize};

use super::format::LineError;

#[derive(Serialize, Deserialize)]
struct Operator {
    user: String,
    host: String,
}

#[derive(Serialize, Deserialize)]
struct AwsContext {
    profile: Option<String>,
    region: Option<String>,
    endpoint: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct JobRef {
    id: String,
    name: String,
    arn: String,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum RecordKind {
    Intent,
    Outcome,
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "snake_case")]
enum Outcome {
    Succeeded { request_id: Option<String> },
    Failed { error: String },
}

#[derive(Serialize, Deserialize)]
struct Record {
    seq: u64,
    time: String,
    kind: RecordKind,
    change_id: String,
    operator: Operator,
    aws: AwsContext,
    queue: String,
    share: String,
    job: JobRef,
    old_priority: u32,
    new_priority: u32,
    justification: String,
    change_record: Option<String>,
    preview: String,
    outcome: Option<Outcome>,
    prev_hash: String,
    hash: String,
}

/// The scheme-1 hash of a line: SHA-256 (hex) of the record re-serialised with `hash` empty.
pub(super) fn hash_of_line(line: &str) -> Result<String, LineError> {
    let mut r: Record = serde_json::from_str(line).map_err(LineError::NotScheme1)?;
    r.hash = String::new();
    let body = serde_json::to_string(&r).map_err(LineError::Reserialise)?;
    Ok(super::sha256_hex(body.as_bytes()))
}
