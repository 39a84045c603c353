use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::{AuditError, AuditRecord};

/// The audit log file.
#[derive(Debug, Clone)]
pub struct AuditLog {
    path: PathBuf,
}

/// Where and why verification failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct VerifyError {
    pub line: usize,
    pub message: String,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> AuditError + '_ {
    move |source| AuditError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// SHA-256 (hex) of the record with its `hash` field empty.
fn hash_of(record: &AuditRecord) -> String {
    let mut r = record.clone();
    r.hash = String::new();
    // Serialising a plain struct of strings, numbers and options cannot fail.
    let body = serde_json::to_string(&r).unwrap_or_default();
    let digest = Sha256::digest(body.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

fn open_private(path: &Path, append: bool) -> Result<File, AuditError> {
    if let Some(dir) = path.parent()
        && !dir.as_os_str().is_empty()
    {
        std::fs::create_dir_all(dir).map_err(io(path))?;
    }
    let mut opts = OpenOptions::new();
    opts.read(true).create(true).append(append);
    if !append {
        opts.write(true);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let file = opts.open(path).map_err(io(path))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = file.metadata().map_err(io(path))?.permissions().mode() & 0o777;
        if mode != 0o600 {
            file.set_permissions(std::fs::Permissions::from_mode(0o600))
                .map_err(io(path))?;
        }
    }
    Ok(file)
}

impl AuditLog {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends a record under an exclusive lock: fills in `seq`, `prev_hash` and `hash` from the
    /// current end of the log, writes one line and fsyncs it. Returns the record as written.
    pub fn append(&self, mut record: AuditRecord) -> Result<AuditRecord, AuditError> {
        let mut file = open_private(&self.path, true)?;
        file.lock().map_err(io(&self.path))?;
        let mut text = String::new();
        file.read_to_string(&mut text).map_err(io(&self.path))?;
        let last = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .last();
        let (seq, prev) = match last {
            None => (0, String::new()),
            Some((n, line)) => {
                let r: AuditRecord =
                    serde_json::from_str(line).map_err(|e| AuditError::Corrupt {
                        path: self.path.display().to_string(),
                        line: n + 1,
                        message: format!(
                            "the last record is unreadable ({e}); run `quotatop audit verify`"
                        ),
                    })?;
                (r.seq, r.hash)
            }
        };
        record.seq = seq + 1;
        record.prev_hash = prev;
        record.hash = hash_of(&record);
        let mut line = serde_json::to_string(&record).unwrap_or_default();
        line.push('\n');
        file.write_all(line.as_bytes()).map_err(io(&self.path))?;
        file.sync_data().map_err(io(&self.path))?;
        // The lock is released when the file is closed.
        Ok(record)
    }
}

/// Every record with its 1-based line number; fails at the first unreadable line.
pub fn read_records(path: &Path) -> Result<Vec<(usize, AuditRecord)>, AuditError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io(path)(e)),
    };
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l)
                .map(|r| (i + 1, r))
                .map_err(|e| AuditError::Corrupt {
                    path: path.display().to_string(),
                    line: i + 1,
                    message: e.to_string(),
                })
        })
        .collect()
}

/// Checks the whole chain. Returns the number of records, or the first line that was edited,
/// removed (a gap in `seq` or a broken link) or reordered.
pub fn verify(path: &Path) -> Result<usize, VerifyError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => {
            return Err(VerifyError {
                line: 0,
                message: format!("cannot read {}: {e}", path.display()),
            });
        }
    };
    let mut prev_hash = String::new();
    let mut count = 0usize;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let fail = |message: String| VerifyError { line: n, message };
        let r: AuditRecord =
            serde_json::from_str(line).map_err(|e| fail(format!("not an audit record: {e}")))?;
        let expected = count as u64 + 1;
        if r.hash != hash_of(&r) {
            return Err(fail(format!(
                "record {} was edited (its hash does not match)",
                r.seq
            )));
        }
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
        prev_hash = r.hash;
        count += 1;
    }
    Ok(count)
}

#[cfg(test)]
mod tests;
