//! Reading and verifying a whole log.

use std::path::Path;

use super::format::{
    canonical_body, line_text, parse_line, raw_lines, read_bytes, sha256_hex, split_hash,
    torn_error, torn_tail,
};
use super::{Head, LogContents, SCHEME, VerifyError, v1};
use crate::audit::{AuditError, AuditRecord};

/// Every record with its 1-based line number and, when the last line is torn, where (the
/// records before it are returned). A bad line before the last fails, named by its line.
pub fn read_log(path: &Path) -> Result<LogContents, AuditError> {
    read_log_data(&read_bytes(path)?, &path.display().to_string())
}

/// [`read_log`] of a log's bytes (a file's, or a store's lines), named `name` in errors.
pub fn read_log_data(data: &[u8], name: &str) -> Result<LogContents, AuditError> {
    let lines = raw_lines(data);
    let torn = torn_tail(&lines);
    let upto = lines.len() - usize::from(torn.is_some());
    let records = lines[..upto]
        .iter()
        .map(|l| {
            parse_line(l.bytes)
                .map(|r| (l.number, r))
                .map_err(|e| AuditError::Corrupt {
                    path: name.to_string(),
                    line: l.number,
                    message: e.to_string(),
                })
        })
        .collect::<Result<_, _>>()?;
    Ok(LogContents { records, torn })
}

/// Every record with its 1-based line number; fails at the first unreadable line, and on a
/// torn last line (saying how to repair it).
pub fn read_records(path: &Path) -> Result<Vec<(usize, AuditRecord)>, AuditError> {
    let log = read_log(path)?;
    match &log.torn {
        Some(t) => Err(torn_error(path, t)),
        None => Ok(log.records),
    }
}

/// Checks the whole chain, byte for byte. Returns its head, or the first line that was edited,
/// removed (a gap in `seq` or a broken link), reordered, or is not in canonical form. Records
/// of scheme 1 (no `v`) are checked as they were written: hash over the re-serialised record;
/// after the first scheme-2 record, only scheme 2 is accepted.
///
/// Removing the last records, or rewriting the whole file with a recomputed chain, leaves a
/// valid chain: only a head recorded elsewhere (`audit anchor`) tells.
pub fn verify(path: &Path) -> Result<Head, VerifyError> {
    let data = std::fs::read(path).or_else(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            Ok(Vec::new())
        } else {
            Err(VerifyError {
                line: 0,
                message: format!("cannot read {}: {e}", path.display()),
            })
        }
    })?;
    verify_data(&data, &path.display().to_string())
}

/// The record's hash under its scheme: v1 over the line, v2 over its canonical bytes; a v1
/// record after v2 ones is refused. `fail` names the line in the error.
fn check_hash(
    r: &AuditRecord,
    text: &str,
    seen_v2: &mut bool,
    fail: impl Fn(String) -> VerifyError,
) -> Result<(), VerifyError> {
    match r.v {
        1 if *seen_v2 => {
            return Err(fail(format!(
                "record {} claims hash scheme 1 after scheme-2 records: the file was rewritten",
                r.seq
            )));
        }
        1 => {
            if r.hash != v1::hash_of_line(text).map_err(|e| fail(e.to_string()))? {
                return Err(fail(format!(
                    "record {} was edited (its hash does not match)",
                    r.seq
                )));
            }
        }
        SCHEME => {
            *seen_v2 = true;
            let Some((body, stated)) = split_hash(text) else {
                return Err(fail(
                    "the record does not end with its hash: it was rewritten".into(),
                ));
            };
            if sha256_hex(body.as_bytes()) != stated {
                return Err(fail(format!(
                    "record {} was edited (its hash does not match its bytes)",
                    r.seq
                )));
            }
            let canonical = canonical_body(r).map_err(|e| fail(e.to_string()))?;
            if canonical != body {
                return Err(fail(format!(
                    "record {} is not in quotatop's canonical form (extra or reordered fields, spacing or escapes): it was rewritten",
                    r.seq
                )));
            }
        }
        v => return Err(fail(format!("unknown hash scheme v={v}"))),
    }
    Ok(())
}

/// [`verify`] of a log's bytes (a file's, or a store's lines in order), named `name`.
pub fn verify_data(data: &[u8], name: &str) -> Result<Head, VerifyError> {
    let lines = raw_lines(data);
    if let Some(t) = torn_tail(&lines) {
        return Err(VerifyError {
            line: t.line,
            message: format!(
                "the last line is torn (an incomplete write of {} bytes); run `quotatop audit repair --log {name}` to move it aside",
                t.bytes,
            ),
        });
    }
    let mut prev_hash = String::new();
    let mut hashes: Vec<String> = Vec::new();
    let mut time = None;
    let mut seen_v2 = false;
    for l in &lines {
        let fail = |message: String| VerifyError {
            line: l.number,
            message,
        };
        let text = line_text(l.bytes).map_err(|e| fail(e.to_string()))?;
        if text.ends_with('\r') {
            return Err(fail(
                "the line ends in a carriage return (CRLF line endings): the file was rewritten"
                    .into(),
            ));
        }
        let r = parse_line(l.bytes).map_err(|e| fail(e.to_string()))?;
        let expected = hashes.len() as u64 + 1;
        check_hash(&r, text, &mut seen_v2, fail)?;
        if r.seq != expected {
            return Err(fail(format!(
                "expected record {expected}, found record {}: records were removed or reordered",
                r.seq
            )));
        }
        if r.prev_hash != prev_hash {
            return Err(fail(format!(
                "record {} does not follow the previous record: the chain is broken",
                r.seq
            )));
        }
        prev_hash = r.hash.clone();
        time = Some(r.time.clone());
        hashes.push(r.hash);
    }
    Ok(Head {
        count: hashes.len(),
        hash: prev_hash,
        time,
        hashes,
    })
}
