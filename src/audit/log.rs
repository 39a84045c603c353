use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::{AuditError, AuditRecord, RecordKind, Repair};

mod v1;

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

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> AuditError + '_ {
    move |source| AuditError::Io {
        path: path.display().to_string(),
        source,
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// SHA-256 of `bytes`, lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// JSON text with every control character that serde_json leaves raw (DEL and the C1 controls
/// U+0080..U+009F) escaped as `\u00XX`; serde_json already escapes C0. Outside strings JSON is
/// ASCII, so only string contents change and the parsed value is the same.
fn escape_raw_controls(json: String) -> String {
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

const HASH_KEY: &str = ",\"hash\":\"";

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
fn canonical_line(record: &AuditRecord) -> Result<(String, String), AuditError> {
    let body = canonical_body(record)?;
    let hash = sha256_hex(body.as_bytes());
    let open = &body[..body.len() - 1];
    Ok((format!("{open}{HASH_KEY}{hash}\"}}"), hash))
}

/// Splits a scheme-2 line into its hashed body and its stated hash.
fn split_hash(line: &str) -> Option<(String, &str)> {
    let rest = line.strip_suffix("\"}")?;
    let at = rest.rfind(HASH_KEY)?;
    let hash = &rest[at + HASH_KEY.len()..];
    let ok = hash.len() == 64 && hash.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    ok.then(|| (format!("{}}}", &rest[..at]), hash))
}

/// One line of the file as bytes: its 1-based number, where it starts, its bytes without the
/// newline, and whether a newline ended it.
struct RawLine<'a> {
    number: usize,
    offset: usize,
    bytes: &'a [u8],
    terminated: bool,
}

fn raw_lines(data: &[u8]) -> Vec<RawLine<'_>> {
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

/// A line as text, or why not (the first invalid byte, 1-based within the line).
fn line_text(bytes: &[u8]) -> Result<&str, String> {
    std::str::from_utf8(bytes).map_err(|e| {
        format!(
            "not UTF-8 text (invalid byte at column {})",
            e.valid_up_to() + 1
        )
    })
}

fn parse_line(bytes: &[u8]) -> Result<AuditRecord, String> {
    let text = line_text(bytes)?;
    if text.trim().is_empty() {
        return Err("an empty line".into());
    }
    serde_json::from_str(text).map_err(|e| format!("not an audit record: {e}"))
}

/// The torn last line, if any: one without a final newline, or one that is not a record.
/// The last line when an interrupted write left it: no final newline, or NUL bytes (what a
/// crash can leave where a write was under way). A complete last line that is not a record is
/// not a torn write but an edit: it is left to [`verify`], which names it.
fn torn_tail(lines: &[RawLine<'_>]) -> Option<TornTail> {
    let last = lines.last()?;
    (!last.terminated || last.bytes.contains(&0)).then(|| TornTail {
        line: last.number,
        offset: last.offset as u64,
        bytes: (last.bytes.len() + usize::from(last.terminated)) as u64,
    })
}

fn read_bytes(path: &Path) -> Result<Vec<u8>, AuditError> {
    match std::fs::read(path) {
        Ok(b) => Ok(b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(io(path)(e)),
    }
}

fn torn_error(path: &Path, t: &TornTail) -> AuditError {
    AuditError::Torn {
        path: path.display().to_string(),
        line: t.line,
        bytes: t.bytes,
    }
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

    /// Marks the change `change_id` as being made by this process until the returned guard is
    /// dropped: an exclusively locked file `<log>.inflight/<change_id>`, taken before the intent
    /// is written and released after the outcome. The kernel releases the lock when the process
    /// dies, so [`AuditLog::in_flight`] tells a change still under way from one whose writer is
    /// gone.
    pub fn begin_change(&self, change_id: &str) -> Result<InFlight, AuditError> {
        let path = self.inflight_path(change_id);
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
        let mut guard = self.lock()?;
        let mut data = Vec::new();
        guard
            .file
            .seek(SeekFrom::Start(0))
            .map_err(io(&self.path))?;
        guard.file.read_to_end(&mut data).map_err(io(&self.path))?;
        let lines = raw_lines(&data);
        for l in &lines {
            if let Ok(r) = parse_line(l.bytes)
                && r.kind == RecordKind::Outcome
                && r.change_id == record.change_id
            {
                return Ok(None);
            }
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
                Err(message) => {
                    return Err(AuditError::Corrupt {
                        path: self.path.display().to_string(),
                        line: l.number,
                        message,
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
                let r = parse_line(l.bytes).map_err(|message| AuditError::Corrupt {
                    path: self.path.display().to_string(),
                    line: l.number,
                    message,
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

/// Every record with its 1-based line number and, when the last line is torn, where (the
/// records before it are returned). A bad line before the last fails, named by its line.
pub fn read_log(path: &Path) -> Result<LogContents, AuditError> {
    let data = read_bytes(path)?;
    let lines = raw_lines(&data);
    let torn = torn_tail(&lines);
    let upto = lines.len() - usize::from(torn.is_some());
    let records = lines[..upto]
        .iter()
        .map(|l| {
            parse_line(l.bytes)
                .map(|r| (l.number, r))
                .map_err(|message| AuditError::Corrupt {
                    path: path.display().to_string(),
                    line: l.number,
                    message,
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
    let lines = raw_lines(&data);
    if let Some(t) = torn_tail(&lines) {
        return Err(VerifyError {
            line: t.line,
            message: format!(
                "the last line is torn (an incomplete write of {} bytes); run `quotatop audit repair --log {}` to move it aside",
                t.bytes,
                path.display()
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
        let text = line_text(l.bytes).map_err(&fail)?;
        if text.ends_with('\r') {
            return Err(fail(
                "the line ends in a carriage return (CRLF line endings): the file was rewritten"
                    .into(),
            ));
        }
        let r = parse_line(l.bytes).map_err(&fail)?;
        let expected = hashes.len() as u64 + 1;
        match r.v {
            1 if seen_v2 => {
                return Err(fail(format!(
                    "record {} claims hash scheme 1 after scheme-2 records: the file was rewritten",
                    r.seq
                )));
            }
            1 => {
                if r.hash != v1::hash_of_line(text).map_err(&fail)? {
                    return Err(fail(format!(
                        "record {} was edited (its hash does not match)",
                        r.seq
                    )));
                }
            }
            SCHEME => {
                seen_v2 = true;
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
                let canonical = canonical_body(&r).map_err(|e| fail(e.to_string()))?;
                if canonical != body {
                    return Err(fail(format!(
                        "record {} is not in quotatop's canonical form (extra or reordered fields, spacing or escapes): it was rewritten",
                        r.seq
                    )));
                }
            }
            v => return Err(fail(format!("unknown hash scheme v={v}"))),
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

#[cfg(test)]
mod tests;
