use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{AuditError, AuditRecord, RecordKind, Repair};

mod format;
mod read;
mod v1;

use format::*;
pub(crate) use format::{canonical_line, parse_line};
pub use read::{read_log, read_log_data, read_records, verify, verify_data};

/// The hash scheme appends write (see [`AuditRecord::v`]).
pub const SCHEME: u32 = 2;

/// How long an append waits for another process's lock by default.
pub const DEFAULT_LOCK_TIMEOUT: Duration = Duration::from_secs(30);

/// After this long waiting for the lock, say who holds it (when asked to).
const LOCK_NOTICE_AFTER: Duration = Duration::from_secs(1);

/// The audit log file.
#[derive(Debug, Clone)]
pub struct AuditLog {
    path: PathBuf,
    lock_timeout: Duration,
    wait_notice: bool,
}

/// Where and why verification failed (`line` is 1-based; 0 only when the file itself could not
/// be read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyError {
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for VerifyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.message)
        } else {
            write!(f, "line {}: {}", self.line, self.message)
        }
    }
}

impl std::error::Error for VerifyError {}

/// The end of a verified chain: what to compare with an outside anchor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    /// Records in the log.
    pub count: usize,
    /// Hash of the last record ("" for an empty log).
    pub hash: String,
    /// Time of the last record.
    pub time: Option<String>,
    /// The hash of every record, in order (record `n` at index `n - 1`).
    pub hashes: Vec<String>,
}

/// A last line cut short by an interrupted write (no final newline, or not a record).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornTail {
    /// 1-based line number.
    pub line: usize,
    /// Byte offset where it starts (the length of the intact part).
    pub offset: u64,
    /// Its length in bytes.
    pub bytes: u64,
}

/// The records of a log and, when the last line is torn, where.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LogContents {
    /// Each record with its 1-based line number.
    pub records: Vec<(usize, AuditRecord)>,
    pub torn: Option<TornTail>,
}

/// Opens a file of the log (the log, its lock holder, an in-flight mark): a regular file or
/// none, never a device, FIFO, directory or link (see [`crate::private_file`]).
fn open_private(path: &Path, append: bool) -> Result<File, AuditError> {
    crate::private_file::open(path, "audit log", append).map_err(io(path))
}

/// `audit.jsonl.lock` next to the log: the PID of the process holding the log's lock (flock
/// does not say who holds it).
pub fn holder_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// The lock timeout from `QUOTATOP_AUDIT_LOCK_TIMEOUT` (seconds), else 30 s.
pub fn lock_timeout_from_env() -> Duration {
    std::env::var("QUOTATOP_AUDIT_LOCK_TIMEOUT")
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(Duration::from_secs_f64)
        .unwrap_or(DEFAULT_LOCK_TIMEOUT)
}

/// A change being made by this process (see [`AuditLog::begin_change`]); dropping it releases
/// the mark and removes its file.
#[derive(Debug)]
pub struct InFlight {
    path: PathBuf,
    _file: File,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A lock file's name for `name` (a queue, a job id): letters, digits, `-`, `_`, `.`; any
/// other character `_`; at most 128 characters.
fn lock_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .take(128)
        .collect()
}

/// A queue's `shares apply` lock (see [`AuditLog::lock_queue`]) or a job's priority-change
/// lock ([`AuditLog::try_lock_job`]), held until dropped.
#[derive(Debug)]
pub struct QueueLock {
    file: File,
}

impl Drop for QueueLock {
    /// Clears the PID while still holding the lock, so a later holder that writes none (another
    /// tool) is never named by this process's stale PID.
    fn drop(&mut self) {
        let _ = self.file.set_len(0);
    }
}

/// The log's exclusive lock, held until dropped (the file is closed).
#[derive(Debug)]
pub struct LockGuard {
    file: File,
}

impl AuditLog {
    /// The log at `path`; appends wait for the lock up to `QUOTATOP_AUDIT_LOCK_TIMEOUT` seconds
    /// (default 30), silently.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            lock_timeout: lock_timeout_from_env(),
            wait_notice: false,
        }
    }

    /// How long an append waits for another process's lock before failing.
    pub fn with_lock_timeout(mut self, timeout: Duration) -> Self {
        self.lock_timeout = timeout;
        self
    }

    /// Whether to say on stderr, after 1 s of waiting, which process holds the lock (command
    /// line only: never while the console draws).
    pub fn with_wait_notice(mut self, on: bool) -> Self {
        self.wait_notice = on;
        self
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn holder(&self) -> String {
        std::fs::read_to_string(holder_path(&self.path))
            .ok()
            .and_then(|s| s.trim().parse::<u32>().ok())
            .map(|pid| format!("PID {pid}"))
            .unwrap_or_else(|| "an unknown process".into())
    }

    /// Takes the log's exclusive lock (creating the log), waiting up to the lock timeout, and
    /// records this process as the holder.
    pub fn lock(&self) -> Result<LockGuard, AuditError> {
        let file = open_private(&self.path, true)?;
        let start = Instant::now();
        let mut told = false;
        loop {
            match file.try_lock() {
                Ok(()) => break,
                Err(std::fs::TryLockError::WouldBlock) => {}
                Err(std::fs::TryLockError::Error(e)) => return Err(io(&self.path)(e)),
            }
            let waited = start.elapsed();
            if waited >= self.lock_timeout {
                return Err(AuditError::LockTimeout {
                    path: self.path.display().to_string(),
                    secs: self.lock_timeout.as_secs_f64(),
                    holder: self.holder(),
                });
            }
            if self.wait_notice && !told && waited >= LOCK_NOTICE_AFTER {
                eprintln!(
                    "waiting for the audit log lock held by {} ({}); giving up after {:.0} s",
                    self.holder(),
                    self.path.display(),
                    self.lock_timeout.as_secs_f64()
                );
                told = true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        // Best effort: a waiter that cannot read it says "an unknown process".
        if let Ok(mut f) = open_private(&holder_path(&self.path), false) {
            let _ = f.set_len(0);
            let _ = f.write_all(format!("{}\n", std::process::id()).as_bytes());
        }
        Ok(LockGuard { file })
    }

    /// Takes the lock of changes to `queue`'s shares, `<log>.queue-<queue>.lock` (flock; the
    /// file holds the holder's PID), for as long as the guard lives: `shares apply` holds it
    /// from before it reads the live shares until its last call's outcome, so two runs that
    /// keep this log never plan from the same state. Refused at once when held.
    pub fn lock_queue(&self, queue: &str) -> Result<QueueLock, AuditError> {
        crate::private_file::check(&self.path, "audit log").map_err(io(&self.path))?;
        let safe = lock_name(queue);
        let mut name = self.path.as_os_str().to_owned();
        name.push(format!(".queue-{safe}.lock"));
        let path = PathBuf::from(name);
        let mut file = open_private(&path, false)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut pid = String::new();
                let _ = file.read_to_string(&mut pid);
                return Err(AuditError::QueueLocked {
                    queue: queue.to_string(),
                    path: path.display().to_string(),
                    holder: pid
                        .trim()
                        .parse::<u32>()
                        .map(|p| format!("PID {p}"))
                        .unwrap_or_else(|_| "another process".to_string()),
                });
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io(&path)(e)),
        }
        // Best effort: a process refused reads it to say who holds the lock.
        let _ = file.set_len(0);
        let _ = file.write_all(format!("{}\n", std::process::id()).as_bytes());
        Ok(QueueLock { file })
    }

    /// Tries the lock of changes to the job `job_id`, `<log>.jobs/<job>.lock` (flock; the file
    /// holds the holder's PID): a priority change holds it from before it reads the job's live
    /// priority until its outcome is written, so the changes to one job made by processes that
    /// keep this log are made, and logged, one at a time, in the order AWS applied them.
    /// `Ok(None)` while another holds it.
    pub fn try_lock_job(&self, job_id: &str) -> Result<Option<QueueLock>, AuditError> {
        crate::private_file::check(&self.path, "audit log").map_err(io(&self.path))?;
        let mut dir = self.path.as_os_str().to_owned();
        dir.push(".jobs");
        let dir = PathBuf::from(dir);
        crate::private_file::create_dir(&dir, true).map_err(io(&dir))?;
        let path = dir.join(format!("{}.lock", lock_name(job_id)));
        let mut file = open_private(&path, false)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => return Ok(None),
            Err(std::fs::TryLockError::Error(e)) => return Err(io(&path)(e)),
        }
        let _ = file.set_len(0);
        let _ = file.write_all(format!("{}\n", std::process::id()).as_bytes());
        Ok(Some(QueueLock { file }))
    }

    /// How long an append waits for another process's lock before failing.
    pub fn lock_timeout(&self) -> Duration {
        self.lock_timeout
    }

    /// Marks the change `change_id` as being made by this process until the returned guard is
    /// dropped: an exclusively locked file `<log>.inflight/<change_id>`, taken before the intent
    /// is written and released after the outcome. The kernel releases the lock when the process
    /// dies, so [`AuditLog::in_flight`] tells a change still under way from one whose writer is
    /// gone.
    pub fn begin_change(&self, change_id: &str) -> Result<InFlight, AuditError> {
        // The log itself first: nothing is made beside a path that is not a log.
        crate::private_file::check(&self.path, "audit log").map_err(io(&self.path))?;
        let path = self.inflight_path(change_id);
        if let Some(dir) = path.parent() {
            crate::private_file::create_dir(dir, true).map_err(io(dir))?;
        }
        let file = open_private(&path, false)?;
        match file.try_lock() {
            Ok(()) => Ok(InFlight { path, _file: file }),
            Err(std::fs::TryLockError::WouldBlock) => Err(AuditError::Io {
                path: path.display().to_string(),
                source: std::io::Error::other("change id already in use"),
            }),
            Err(std::fs::TryLockError::Error(e)) => Err(io(&path)(e)),
        }
    }

    /// Whether a live process is still making the change `change_id` (its in-flight file is
    /// locked). A leftover file of a dead writer is removed.
    pub fn in_flight(&self, change_id: &str) -> bool {
        let path = self.inflight_path(change_id);
        let Ok(file) = OpenOptions::new().read(true).write(true).open(&path) else {
            return false;
        };
        match file.try_lock() {
            Err(std::fs::TryLockError::WouldBlock) => true,
            _ => {
                let _ = std::fs::remove_file(&path);
                false
            }
        }
    }

    fn inflight_path(&self, change_id: &str) -> PathBuf {
        let mut dir = self.path.as_os_str().to_owned();
        dir.push(".inflight");
        // Change ids are UUIDs; anything else is reduced to safe file-name characters.
        let name: String = change_id
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
            .take(64)
            .collect();
        PathBuf::from(dir).join(name)
    }

    /// Appends `record` (an outcome) unless the log already holds an outcome for its change id,
    /// deciding under the log's lock so that two writers cannot both append one. `None` when
    /// one was there.
    pub fn append_outcome_once(
        &self,
        record: AuditRecord,
    ) -> Result<Option<AuditRecord>, AuditError> {
        self.append_outcome_if(record, |outcomes| outcomes.is_empty())
    }

    /// Appends `record` (an outcome) when `still` holds of the outcome records the log has for
    /// its change id, deciding under the log's lock so that two writers cannot both append.
    /// `None` when it did not hold.
    pub fn append_outcome_if(
        &self,
        record: AuditRecord,
        still: impl FnOnce(&[AuditRecord]) -> bool,
    ) -> Result<Option<AuditRecord>, AuditError> {
        let mut guard = self.lock()?;
        let mut data = Vec::new();
        guard
            .file
            .seek(SeekFrom::Start(0))
            .map_err(io(&self.path))?;
        guard.file.read_to_end(&mut data).map_err(io(&self.path))?;
        let outcomes: Vec<AuditRecord> = raw_lines(&data)
            .iter()
            .filter_map(|l| parse_line(l.bytes).ok())
            .filter(|r| r.kind == RecordKind::Outcome && r.change_id == record.change_id)
            .collect();
        if !still(&outcomes) {
            return Ok(None);
        }
        self.append_locked(&mut guard, record).map(Some)
    }

    /// Fails when the last line is torn (with the way to repair it); appends would fail too.
    pub fn check_tail(&self) -> Result<(), AuditError> {
        let data = read_bytes(&self.path)?;
        match torn_tail(&raw_lines(&data)) {
            Some(t) => Err(torn_error(&self.path, &t)),
            None => Ok(()),
        }
    }

    /// Appends a record under an exclusive lock: fills in `v`, `seq`, `prev_hash` and `hash`
    /// from the current end of the log, writes one canonical line and fsyncs it. Returns the
    /// record as written. A torn last line refuses the append (`quotatop audit repair`).
    pub fn append(&self, record: AuditRecord) -> Result<AuditRecord, AuditError> {
        let mut guard = self.lock()?;
        self.append_locked(&mut guard, record)
    }

    fn append_locked(
        &self,
        guard: &mut LockGuard,
        mut record: AuditRecord,
    ) -> Result<AuditRecord, AuditError> {
        let file = &mut guard.file;
        let mut data = Vec::new();
        file.seek(SeekFrom::Start(0)).map_err(io(&self.path))?;
        file.read_to_end(&mut data).map_err(io(&self.path))?;
        let lines = raw_lines(&data);
        if let Some(t) = torn_tail(&lines) {
            return Err(torn_error(&self.path, &t));
        }
        let (seq, prev) = match lines.last() {
            None => (0, String::new()),
            Some(l) => match parse_line(l.bytes) {
                Ok(r) => (r.seq, r.hash),
                Err(e) => {
                    return Err(AuditError::Corrupt {
                        path: self.path.display().to_string(),
                        line: l.number,
                        message: e.to_string(),
                    });
                }
            },
        };
        record.v = SCHEME;
        record.seq = seq + 1;
        record.prev_hash = prev;
        let (mut line, hash) = canonical_line(&record).map_err(|e| self.located(e))?;
        record.hash = hash;
        line.push('\n');
        file.write_all(line.as_bytes()).map_err(io(&self.path))?;
        file.sync_data().map_err(io(&self.path))?;
        // The lock is released when the file is closed.
        Ok(record)
    }

    fn located(&self, e: AuditError) -> AuditError {
        match e {
            AuditError::Corrupt { line, message, .. } => AuditError::Corrupt {
                path: self.path.display().to_string(),
                line,
                message,
            },
            e => e,
        }
    }

    /// Moves a torn last line into `audit.jsonl.torn-<time>` next to the log and appends a
    /// `repair` record (chained) saying what was cut. `None` when there was nothing to repair.
    /// A bad line before the last is not a torn write: it is left alone (verify names it).
    pub fn repair(&self, template: AuditRecord) -> Result<Option<AuditRecord>, AuditError> {
        let mut guard = self.lock()?;
        let mut data = Vec::new();
        guard
            .file
            .seek(SeekFrom::Start(0))
            .map_err(io(&self.path))?;
        guard.file.read_to_end(&mut data).map_err(io(&self.path))?;
        let lines = raw_lines(&data);
        let Some(torn) = torn_tail(&lines) else {
            return Ok(None);
        };
        let cut = &data[torn.offset as usize..];
        let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ");
        let mut name = self.path.as_os_str().to_owned();
        name.push(format!(".torn-{stamp}"));
        let aside = PathBuf::from(name);
        let saved = (|| {
            let mut f = open_private(&aside, false)?;
            f.write_all(cut).map_err(io(&aside))?;
            f.sync_all().map_err(io(&aside))
        })();
        if let Err(e) = saved {
            // Nothing was cut: leave no empty or partial copy behind.
            let _ = std::fs::remove_file(&aside);
            return Err(e);
        }
        let mut record = template;
        record.kind = RecordKind::Repair;
        record.outcome = None;
        record.repair = Some(Repair {
            cut_bytes: torn.bytes,
            cut_sha256: sha256_hex(cut),
            line: torn.line,
            moved_to: aside.display().to_string(),
            reason: format!(
                "line {} was torn (an incomplete write: {}, {} bytes); moved aside",
                torn.line,
                if lines.last().is_some_and(|l| !l.terminated) {
                    "no final newline"
                } else {
                    "NUL bytes"
                },
                torn.bytes
            ),
        });
        // The repair record is written over the torn bytes, then the rest of them is cut: a
        // crash at any point leaves either the torn line (repair again) or the repair record,
        // never the torn bytes gone without a record.
        let (seq, prev) = match lines[..lines.len() - 1].last() {
            None => (0, String::new()),
            Some(l) => {
                let r = parse_line(l.bytes).map_err(|e| AuditError::Corrupt {
                    path: self.path.display().to_string(),
                    line: l.number,
                    message: e.to_string(),
                })?;
                (r.seq, r.hash)
            }
        };
        record.v = SCHEME;
        record.seq = seq + 1;
        record.prev_hash = prev;
        let (mut line, hash) = canonical_line(&record).map_err(|e| self.located(e))?;
        record.hash = hash;
        line.push('\n');
        // An append-mode handle writes only at the end: a second, write-mode handle writes in
        // place (the lock is still ours through `guard`).
        let w = OpenOptions::new()
            .write(true)
            .open(&self.path)
            .map_err(io(&self.path))?;
        write_at(&w, line.as_bytes(), torn.offset).map_err(io(&self.path))?;
        w.sync_data().map_err(io(&self.path))?;
        w.set_len(torn.offset + line.len() as u64)
            .map_err(io(&self.path))?;
        w.sync_all().map_err(io(&self.path))?;
        Ok(Some(record))
    }
}

#[cfg(unix)]
fn write_at(f: &File, bytes: &[u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(f, bytes, offset)
}

#[cfg(not(unix))]
fn write_at(mut f: &File, bytes: &[u8], offset: u64) -> std::io::Result<()> {
    f.seek(SeekFrom::Start(offset))?;
    f.write_all(bytes)
}

#[cfg(test)]
mod tests;
