//! The canonical record format: hashing, encoding, and reading raw lines (torn tails
//! included).

use std::path::Path;

use sha2::{Digest, Sha256};

use super::super::{AuditError, AuditRecord};
use super::TornTail;

pub(super) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> AuditError + '_ {
    move |source| AuditError::Io {
        path: path.display().to_string(),
        source,
    }
}

pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// SHA-256 of `bytes`, lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// JSON text with every control character that serde_json leaves raw (DEL and the C1 controls
/// U+0080..U+009F) escaped as `\u00XX`; serde_json already escapes C0. Outside strings JSON is
/// ASCII, so only string contents change and the parsed value is the same.
pub(super) fn escape_raw_controls(json: String) -> String {
    if !json.chars().any(char::is_control) {
        return json;
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if c.is_control() {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

pub(super) const HASH_KEY: &str = ",\"hash\":\"";

/// The canonical bytes a scheme-2 hash covers: the record as compact JSON in field order, with
/// control characters escaped (C0 as serde_json writes them: `\n`, `\t`, `\"`… or `\u00XX`;
/// DEL and C1 as `\u00XX`), without its `hash` field, closed with `}`.
pub fn canonical_body(record: &AuditRecord) -> Result<String, AuditError> {
    let mut r = record.clone();
    r.hash = String::new();
    let json = serde_json::to_string(&r).map_err(|e| AuditError::Corrupt {
        path: String::new(),
        line: 0,
        message: format!("cannot serialise a record: {e}"),
    })?;
    let json = escape_raw_controls(json);
    // `hash` is the last field: the JSON ends with `,"hash":""}`.
    let body = json
        .strip_suffix(",\"hash\":\"\"}")
        .ok_or_else(|| AuditError::Corrupt {
            path: String::new(),
            line: 0,
            message: "a record's hash is not its last field".into(),
        })?;
    Ok(format!("{body}}}"))
}

/// The line (without its newline) of a scheme-2 record: the canonical body with its hash
/// appended as the last field. Returns the line and the hash.
pub(crate) fn canonical_line(record: &AuditRecord) -> Result<(String, String), AuditError> {
    let body = canonical_body(record)?;
    let hash = sha256_hex(body.as_bytes());
    let open = &body[..body.len() - 1];
    Ok((format!("{open}{HASH_KEY}{hash}\"}}"), hash))
}

/// Splits a scheme-2 line into its hashed body and its stated hash.
pub(super) fn split_hash(line: &str) -> Option<(String, &str)> {
    let rest = line.strip_suffix("\"}")?;
    let at = rest.rfind(HASH_KEY)?;
    let hash = &rest[at + HASH_KEY.len()..];
    let ok = hash.len() == 64 && hash.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    ok.then(|| (format!("{}}}", &rest[..at]), hash))
}

/// One line of the file as bytes: its 1-based number, where it starts, its bytes without the
/// newline, and whether a newline ended it.
pub(super) struct RawLine<'a> {
    pub(super) number: usize,
    pub(super) offset: usize,
    pub(super) bytes: &'a [u8],
    pub(super) terminated: bool,
}

pub(super) fn raw_lines(data: &[u8]) -> Vec<RawLine<'_>> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < data.len() {
        let (end, terminated) = match data[start..].iter().position(|&b| b == b'\n') {
            Some(i) => (start + i, true),
            None => (data.len(), false),
        };
        out.push(RawLine {
            number: out.len() + 1,
            offset: start,
            bytes: &data[start..end],
            terminated,
        });
        start = end + 1;
    }
    out
}

/// Why a line of the log is not a record.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LineError {
    /// The first invalid byte, 1-based within the line.
    #[error("not UTF-8 text (invalid byte at column {0})")]
    NotUtf8(usize),
    #[error("an empty line")]
    Empty,
    #[error("not an audit record: {0}")]
    NotRecord(serde_json::Error),
    #[error("not a scheme-1 record: {0}")]
    NotScheme1(serde_json::Error),
    #[error("cannot re-serialise: {0}")]
    Reserialise(serde_json::Error),
}

/// A line as text, or why not.
pub(super) fn line_text(bytes: &[u8]) -> Result<&str, LineError> {
    std::str::from_utf8(bytes).map_err(|e| LineError::NotUtf8(e.valid_up_to() + 1))
}

pub(crate) fn parse_line(bytes: &[u8]) -> Result<AuditRecord, LineError> {
    let text = line_text(bytes)?;
    if text.trim().is_empty() {
        return Err(LineError::Empty);
    }
    serde_json::from_str(text).map_err(LineError::NotRecord)
}

/// The torn last line, if any: one without a final newline, or one that is not a record.
/// The last line when an interrupted write left it: no final newline, or NUL bytes (what a
/// crash can leave where a write was under way). A complete last line that is not a record is
/// not a torn write but an edit: it is left to [`verify`], which names it.
pub(super) fn torn_tail(lines: &[RawLine<'_>]) -> Option<TornTail> {
    let last = lines.last()?;
    (!last.terminated || last.bytes.contains(&0)).then(|| TornTail {
        line: last.number,
        offset: last.offset as u64,
        bytes: (last.bytes.len() + usize::from(last.terminated)) as u64,
    })
}

pub(super) fn read_bytes(path: &Path) -> Result<Vec<u8>, AuditError> {
    match std::fs::read(path) {
        Ok(b) => Ok(b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(io(path)(e)),
    }
}

pub(super) fn torn_error(path: &Path, t: &TornTail) -> AuditError {
    AuditError::Torn {
        path: path.display().to_string(),
        line: t.line,
        bytes: t.bytes,
    }
}
