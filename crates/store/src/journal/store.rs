//! The journal database: opening (file mode 0600, WAL, migrations) and recording snapshots.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, Transaction, params};
use serde::{Deserialize, Serialize};

use quotatop_analysis::{now_of, share_usage};
use quotatop_model::{JobStatus, Millis, QueueSnapshot, ServiceJob, Snapshot};

use super::JournalError;
use super::diff;
use super::schema;

const HOUR_MS: Millis = 3_600_000;
const DAY_MS: Millis = 24 * HOUR_MS;

/// How much the journal keeps and how often it samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct JournalConfig {
    /// Jobs last seen longer ago than this (service clock, against the newest observation) are
    /// deleted with their transitions; usage samples older than this too.
    pub retention_ms: Millis,
    /// Stored snapshots older than this (local clock, against the newest snapshot) are deleted.
    pub snapshot_retention_ms: Millis,
    /// At most one stored snapshot per this long (local clock).
    pub snapshot_interval_ms: Millis,
    /// At most one usage sample per queue per this long (service clock).
    pub usage_interval_ms: Millis,
    /// How long a write waits for another process's lock before reporting it.
    pub busy_timeout_ms: u64,
}

impl Default for JournalConfig {
    fn default() -> Self {
        Self {
            retention_ms: 90 * DAY_MS,
            snapshot_retention_ms: 7 * DAY_MS,
            snapshot_interval_ms: 60_000,
            usage_interval_ms: 60_000,
            busy_timeout_ms: 2_000,
        }
    }
}

/// What one `record` call stored.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecordStats {
    pub transitions: usize,
    pub usage_samples: usize,
    pub snapshots: usize,
}

/// What a prune deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PruneStats {
    pub jobs: usize,
    pub transitions: usize,
    pub usage_samples: usize,
    pub snapshots: usize,
}

/// An open journal. Not shared between threads: the writer owns one, readers open their own.
pub struct Journal {
    pub(super) conn: Connection,
    path: PathBuf,
    config: JournalConfig,
    /// Each job as last observed, to derive transitions by difference.
    prev: HashMap<String, std::sync::Arc<ServiceJob>>,
    last_snapshot: Option<Millis>,
    /// The last stored snapshot was partial (some job not described yet).
    last_snapshot_partial: bool,
    last_usage: HashMap<String, Millis>,
    last_prune: Option<Millis>,
    /// The file opened (device, inode), to notice when the path no longer leads to it.
    identity: Option<(u64, u64)>,
}

/// The (device, inode) of the file at `path`, where the platform has them.
fn file_identity(path: &Path) -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// Creates the journal file (mode 0600, its directory 0700) where missing; refuses a path that
/// is not a regular file (a device, FIFO, directory or link: see
/// [`crate::private_file`]) before SQLite creates anything beside it.
fn create_private(path: &Path) -> Result<(), JournalError> {
    crate::private_file::open(path, "journal", true).map_err(|source| JournalError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(())
}

/// `path` as the path part of an SQLite URI: `%`, `?` and `#` (and anything not printable
/// ASCII) percent-encoded.
fn uri_path(path: &Path) -> String {
    let mut out = String::new();
    for b in path.as_os_str().as_encoded_bytes() {
        match b {
            b'%' | b'?' | b'#' => out.push_str(&format!("%{b:02X}")),
            0x21..=0x7e => out.push(*b as char),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

impl Journal {
    /// Opens (creating it, mode 0600) the journal at `path` and brings its schema up to date.
    ///
    /// Another process opening the same fresh journal at the same moment can make SQLite
    /// refuse at once rather than wait (it does so where waiting could deadlock, e.g. both
    /// switching to WAL), so a `Locked` open is tried again until the busy timeout has passed.
    pub fn open(path: &Path, config: JournalConfig) -> Result<Self, JournalError> {
        create_private(path)?;
        let deadline =
            std::time::Instant::now() + Duration::from_millis(config.busy_timeout_ms.max(1));
        loop {
            match Self::connect(path, config) {
                Err(JournalError::Locked { .. }) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                other => return other,
            }
        }
    }

    /// Opens an existing journal for reading only (reports, the console's history): never
    /// writes, so an archived journal on a read-only disk, or one whose file or directory is
    /// not writable, can be reported on. [`JournalError::Missing`] when there is none.
    ///
    /// It first opens read-only (`mode=ro`), which shares the writer's WAL index and sees what
    /// a running recorder wrote; when that cannot work (no WAL index and a directory it may
    /// not create one in) it opens the file as immutable, as it was last checkpointed.
    pub fn open_existing(path: &Path, config: JournalConfig) -> Result<Self, JournalError> {
        if !path.exists() {
            return Err(JournalError::Missing(path.to_path_buf()));
        }
        // A FIFO would block SQLite's open; a device or directory is no journal.
        quotatop_model::check_regular_input(path).map_err(|source| JournalError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        let conn = match Self::read_only_conn(path, &config, false) {
            Ok(c) => c,
            Err(first) => match Self::read_only_conn(path, &config, true) {
                Ok(c) => c,
                Err(_) => return Err(first),
            },
        };
        Ok(Self::with_conn(conn, path, config))
    }

    fn read_only_conn(
        path: &Path,
        config: &JournalConfig,
        immutable: bool,
    ) -> Result<Connection, JournalError> {
        use rusqlite::OpenFlags;
        let sql = |e| JournalError::sql(path, e);
        let abs = std::path::absolute(path).map_err(|source| JournalError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        let uri = format!(
            "file:{}?mode=ro{}",
            uri_path(&abs),
            if immutable { "&immutable=1" } else { "" }
        );
        let conn = Connection::open_with_flags(
            uri,
            OpenFlags::SQLITE_OPEN_READ_ONLY
                | OpenFlags::SQLITE_OPEN_URI
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(sql)?;
        conn.busy_timeout(Duration::from_millis(config.busy_timeout_ms))
            .map_err(sql)?;
        // The first statement that reads the file: a corrupt or unreadable file fails here.
        let found: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(sql)?;
        if found > schema::VERSION {
            return Err(JournalError::TooNew {
                path: path.to_path_buf(),
                found,
                known: schema::VERSION,
            });
        }
        if found < schema::VERSION {
            return Err(JournalError::TooOldToRead {
                path: path.to_path_buf(),
                found,
                known: schema::VERSION,
            });
        }
        // Reading the schema proves the WAL index (if any) could be used too.
        conn.query_row("SELECT count(*) FROM queues", [], |r| r.get::<_, i64>(0))
            .map_err(sql)?;
        Ok(conn)
    }

    fn connect(path: &Path, config: JournalConfig) -> Result<Self, JournalError> {
        let sql = |e| JournalError::sql(path, e);
        let mut conn = Connection::open(path).map_err(sql)?;
        conn.busy_timeout(Duration::from_millis(config.busy_timeout_ms))
            .map_err(sql)?;
        // The first statement that reads the file: a corrupt file fails here.
        let _mode: String = conn
            .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))
            .map_err(sql)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(sql)?;
        match schema::migrate(&mut conn).map_err(sql)? {
            Ok(_) => {}
            Err(found) => {
                return Err(JournalError::TooNew {
                    path: path.to_path_buf(),
                    found,
                    known: schema::VERSION,
                });
            }
        }
        Ok(Self::with_conn(conn, path, config))
    }

    fn with_conn(conn: Connection, path: &Path, config: JournalConfig) -> Self {
        Self {
            conn,
            path: path.to_path_buf(),
            config,
            prev: HashMap::new(),
            last_snapshot: None,
            last_snapshot_partial: false,
            last_usage: HashMap::new(),
            last_prune: None,
            identity: file_identity(path),
        }
    }

    /// Whether the journal's path still leads to the file this connection writes: false once
    /// it was deleted, moved away or replaced (SQLite would go on writing to the unlinked file,
    /// and everything written would be lost).
    pub fn still_at_path(&self) -> bool {
        match self.identity {
            Some(id) => file_identity(&self.path) == Some(id),
            None => true,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn config(&self) -> &JournalConfig {
        &self.config
    }

    pub(super) fn err(&self, e: rusqlite::Error) -> JournalError {
        JournalError::sql(&self.path, e)
    }

    /// Records one snapshot (see [`Journal::record_all`]).
    pub fn record(&mut self, snapshot: &Snapshot) -> Result<RecordStats, JournalError> {
        self.record_all(std::slice::from_ref(snapshot))
    }

    /// Records snapshots in one transaction: job facts, the transitions they show since the
    /// previous observation, usage samples and stored snapshots at their intervals; prunes once
    /// an hour (service clock).
    pub fn record_all(&mut self, snapshots: &[Snapshot]) -> Result<RecordStats, JournalError> {
        let path = self.path.clone();
        let sql = |e| JournalError::sql(&path, e);
        let mut stats = RecordStats::default();
        // IMMEDIATE: take the write lock up front, waiting out another writer (busy timeout).
        // A deferred transaction that reads before it writes gets SQLITE_BUSY at once when
        // another process wrote in between (SQLite will not wait where waiting could
        // deadlock), which failed a second recorder's first write under load.
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(sql)?;
        let mut newest_obs = None;
        // A snapshot loaded from the journal (a warm start) is history already.
        for snap in snapshots.iter().filter(|s| !s.health.from_history) {
            for q in &snap.queues {
                let obs = now_of(q).unwrap_or(snap.taken_at);
                newest_obs = newest_obs.max(Some(obs));
                write_queue(&tx, q, obs).map_err(sql)?;
                // A job only listed so far (a partial view: its priority and attempts are not
                // known yet) is journaled once described; its listing alone would record a
                // made-up priority (and a "change" from it) and a completion without its attempt.
                for tj in q.jobs.iter().filter(|tj| tj.described_at.is_some()) {
                    let cur = &tj.job;
                    let prev = self.prev.get(&cur.id).map(|p| &**p);
                    stats.transitions +=
                        write_job(&tx, q, prev, cur, tj.described_at.is_some(), obs)
                            .map_err(sql)?;
                    self.prev.insert(cur.id.clone(), cur.clone());
                }
                let key = q.key();
                let due = self
                    .last_usage
                    .get(&key)
                    .is_none_or(|&t| obs - t >= self.config.usage_interval_ms);
                if due {
                    stats.usage_samples += write_usage(&tx, q, obs).map_err(sql)?;
                    self.last_usage.insert(key, obs);
                }
            }
            // A partial snapshot is stored as it was (its undescribed jobs say so), and the
            // first complete one after it is stored whatever the interval, so the newest stored
            // snapshot (a warm start's) is complete as soon as the poller's view is.
            let complete = snap.is_complete();
            let due = self.last_snapshot.is_none_or(|t| {
                snap.taken_at - t >= self.config.snapshot_interval_ms
                    || (complete && self.last_snapshot_partial)
            });
            if due {
                let blob = encode(snap)?;
                tx.execute(
                    "INSERT OR REPLACE INTO snapshots (taken_at, sequence, data) VALUES (?1, ?2, ?3)",
                    params![snap.taken_at, snap.sequence as i64, blob],
                )
                .map_err(sql)?;
                self.last_snapshot = Some(snap.taken_at);
                self.last_snapshot_partial = !complete;
                stats.snapshots += 1;
            }
        }
        tx.commit().map_err(sql)?;
        if let Some(obs) = newest_obs
            && self.last_prune.is_none_or(|t| obs - t >= HOUR_MS)
        {
            self.prune()?;
            self.last_prune = Some(obs);
        }
        Ok(stats)
    }

    /// Deletes what is older than the retention allows (see [`JournalConfig`]).
    pub fn prune(&mut self) -> Result<PruneStats, JournalError> {
        let path = self.path.clone();
        let sql = |e| JournalError::sql(&path, e);
        // IMMEDIATE: take the write lock up front, waiting out another writer (busy timeout).
        // A deferred transaction that reads before it writes gets SQLITE_BUSY at once when
        // another process wrote in between (SQLite will not wait where waiting could
        // deadlock), which failed a second recorder's first write under load.
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(sql)?;
        let mut stats = PruneStats::default();
        let newest: Option<Millis> = tx
            .query_row("SELECT MAX(last_observed_at) FROM queues", [], |r| r.get(0))
            .map_err(sql)?;
        if let Some(newest) = newest {
            let cutoff = newest.saturating_sub(self.config.retention_ms);
            let old_jobs = "SELECT job_id FROM jobs WHERE last_seen_at < ?1";
            stats.transitions = tx
                .execute(
                    &format!("DELETE FROM transitions WHERE job_id IN ({old_jobs})"),
                    [cutoff],
                )
                .map_err(sql)?;
            tx.execute(
                &format!("DELETE FROM priority_changes WHERE job_id IN ({old_jobs})"),
                [cutoff],
            )
            .map_err(sql)?;
            stats.jobs = tx
                .execute("DELETE FROM jobs WHERE last_seen_at < ?1", [cutoff])
                .map_err(sql)?;
            stats.usage_samples = tx
                .execute("DELETE FROM usage_samples WHERE at < ?1", [cutoff])
                .map_err(sql)?;
        }
        let newest_snap: Option<Millis> = tx
            .query_row("SELECT MAX(taken_at) FROM snapshots", [], |r| r.get(0))
            .map_err(sql)?;
        if let Some(newest) = newest_snap {
            let cutoff = newest.saturating_sub(self.config.snapshot_retention_ms);
            stats.snapshots = tx
                .execute("DELETE FROM snapshots WHERE taken_at < ?1", [cutoff])
                .map_err(sql)?;
        }
        tx.commit().map_err(sql)?;
        for id in self.prev.keys().cloned().collect::<Vec<_>>() {
            let exists: bool = self
                .conn
                .query_row(
                    "SELECT EXISTS(SELECT 1 FROM jobs WHERE job_id = ?1)",
                    [&id],
                    |r| r.get(0),
                )
                .map_err(sql)?;
            if !exists {
                self.prev.remove(&id);
            }
        }
        Ok(stats)
    }
}

fn write_queue(tx: &Transaction<'_>, q: &QueueSnapshot, obs: Millis) -> rusqlite::Result<()> {
    // Plain structs with string keys only: serialising them cannot fail.
    let env = serde_json::to_string(&q.environment).unwrap_or_default();
    let shares = serde_json::to_string(&q.shares).unwrap_or_default();
    tx.execute(
        "INSERT INTO queues (name, environment, shares, last_observed_at, source)
         VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT(source, name) DO UPDATE SET environment = ?2, shares = ?3,
           last_observed_at = MAX(last_observed_at, ?4)",
        params![q.name, env, shares, obs, source_column(q)],
    )?;
    // A new row only when the configuration differs from the newest one kept.
    tx.execute(
        "INSERT OR IGNORE INTO share_configs (queue, observed_at, environment, shares, source)
         SELECT ?1, ?4, ?2, ?3, ?5 WHERE NOT EXISTS (
           SELECT 1 FROM share_configs WHERE queue = ?1 AND source = ?5 AND environment = ?2
             AND shares = ?3 AND observed_at = (
               SELECT MAX(observed_at) FROM share_configs WHERE queue = ?1 AND source = ?5))",
        params![q.name, env, shares, obs, source_column(q)],
    )?;
    Ok(())
}

/// Upserts the job's facts and inserts its new transitions; returns how many were new.
fn write_job(
    tx: &Transaction<'_>,
    queue: &QueueSnapshot,
    prev: Option<&ServiceJob>,
    cur: &ServiceJob,
    described: bool,
    obs: Millis,
) -> rusqlite::Result<usize> {
    let prev_status = match prev {
        Some(p) => Some(p.status),
        None => tx
            .query_row(
                "SELECT status FROM jobs WHERE job_id = ?1",
                [&cur.id],
                |r| r.get::<_, String>(0),
            )
            .optional()?
            .and_then(|s| JobStatus::parse(&s)),
    };
    tx.execute(
        "INSERT INTO jobs (job_id, queue, name, share, priority, instance_type, instance_count,
                           created_at, status, first_seen_at, last_seen_at,
                           preemption_retries, checkpoint_ms, source)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10,
                 CASE WHEN ?11 THEN ?12 END, CASE WHEN ?11 THEN ?13 END, ?14)
         ON CONFLICT(job_id) DO UPDATE SET status = ?9, last_seen_at = MAX(last_seen_at, ?10),
           priority = CASE WHEN ?11 THEN ?5 ELSE priority END,
           preemption_retries = CASE WHEN ?11 THEN ?12 ELSE preemption_retries END,
           checkpoint_ms = CASE WHEN ?11 THEN ?13 ELSE checkpoint_ms END",
        params![
            cur.id,
            queue.name,
            cur.name,
            cur.share,
            cur.priority,
            cur.instance_type,
            cur.instance_count,
            cur.created_at,
            cur.status.as_str(),
            obs,
            described,
            cur.preemption_retries,
            cur.checkpoint_interval_ms
                .and_then(|c| i64::try_from(c).ok()),
            source_column(queue),
        ],
    )?;
    if described
        && let Some(p) = prev
        && p.priority != cur.priority
    {
        tx.execute(
            "INSERT OR IGNORE INTO priority_changes (job_id, observed_at, old, new) VALUES (?1, ?2, ?3, ?4)",
            params![cur.id, obs, p.priority, cur.priority],
        )?;
    }
    let mut n = 0;
    let mut stmt = tx.prepare_cached(
        "INSERT OR IGNORE INTO transitions (job_id, kind, attempt, at, exact, observed_at, reason)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?;
    for t in diff::transitions_after(prev, prev_status, cur, obs) {
        n += stmt.execute(params![
            t.job_id,
            t.kind.as_str(),
            t.attempt,
            t.at,
            t.exact,
            obs,
            t.reason
        ])?;
    }
    Ok(n)
}

fn write_usage(tx: &Transaction<'_>, q: &QueueSnapshot, obs: Millis) -> rusqlite::Result<usize> {
    let mut stmt = tx.prepare_cached(
        "INSERT OR REPLACE INTO usage_samples (queue, share, instance_type, at, used, share_limit, borrowed, lent, source)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?;
    let mut n = 0;
    for u in share_usage(q) {
        n += stmt.execute(params![
            q.name,
            u.share,
            u.instance_type,
            obs,
            u.used,
            u.limit,
            u.borrowed,
            u.lent,
            source_column(q)
        ])?;
    }
    Ok(n)
}

/// The journal's `source` column of a queue: its `[[sources]]` name, '' for the implicit one.
fn source_column(q: &QueueSnapshot) -> &str {
    q.source.as_deref().unwrap_or("")
}

fn encode(snap: &Snapshot) -> Result<Vec<u8>, JournalError> {
    let json = serde_json::to_vec(snap).map_err(|e| JournalError::Codec(e.to_string()))?;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&json)
        .and_then(|_| gz.finish())
        .map_err(|e| JournalError::Codec(e.to_string()))
}

pub(super) fn decode(blob: &[u8]) -> Result<Snapshot, JournalError> {
    let gz = flate2::read::GzDecoder::new(blob);
    serde_json::from_reader(gz).map_err(|e| JournalError::Codec(e.to_string()))
}
