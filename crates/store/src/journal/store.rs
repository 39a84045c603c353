//! The journal database: opening (file mode 0600, WAL, migrations) and recording snapshots.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

use rusqlite::Connection;
use serde::{Deserialize, Serialize};

use quotatop_analysis::{now_of, share_usage};
use quotatop_model::{JobStatus, Millis, QueueSnapshot, ServiceJob, Snapshot};

use super::JournalError;
use super::diff;
use super::schema;
use crate::StoreLocation;
use crate::db::{Conn, DbError, Exec, vals};
use crate::pg::StoreUrl;

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
    db: std::sync::Mutex<Conn>,
    location: StoreLocation,
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

    /// Opens the journal at `location` for writing: [`Journal::open`] for a file; for a
    /// PostgreSQL store a pooled connection, its schema brought up to date.
    pub fn open_at(location: &StoreLocation, config: JournalConfig) -> Result<Self, JournalError> {
        match location {
            StoreLocation::File(p) => Self::open(p, config),
            StoreLocation::Postgres(url) => Self::open_pg(url, config, true),
        }
    }

    /// Opens the journal at `location` for reading only ([`Journal::open_existing`] for a
    /// file): never writes, so a read-only database role is enough.
    pub fn open_existing_at(
        location: &StoreLocation,
        config: JournalConfig,
    ) -> Result<Self, JournalError> {
        match location {
            StoreLocation::File(p) => Self::open_existing(p, config),
            StoreLocation::Postgres(url) => Self::open_pg(url, config, false),
        }
    }

    fn open_pg(url: &StoreUrl, config: JournalConfig, write: bool) -> Result<Self, JournalError> {
        let store = || url.to_string();
        let (client, stmts) =
            crate::pg::Pool::get(url).map_err(|e| JournalError::Store(e.to_string()))?;
        let mut conn = Conn::Postgres(Box::new(crate::db::PgConn {
            client: Some(client),
            stmts,
            url: url.clone(),
        }));
        let found = if write {
            conn.with(schema::migrate_pg)
        } else {
            conn.with(|x| schema::version_pg(x, schema::PG_COMPONENT))
        }
        .map_err(|e| JournalError::from_db(&store(), e))?;
        let known = schema::PG_VERSION;
        match found {
            Some(found) if found > known => Err(JournalError::TooNew {
                path: store().into(),
                found,
                known,
            }),
            Some(found) if found < known => Err(JournalError::TooOldToRead {
                path: store().into(),
                found,
                known,
            }),
            Some(_) => Ok(Self::with_conn(
                conn,
                StoreLocation::Postgres(url.clone()),
                config,
            )),
            None => Err(JournalError::NoStoreSchema(store())),
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
        Ok(Self::with_conn(
            Conn::Sqlite(conn),
            StoreLocation::File(path.to_path_buf()),
            config,
        ))
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
        Ok(Self::with_conn(
            Conn::Sqlite(conn),
            StoreLocation::File(path.to_path_buf()),
            config,
        ))
    }

    fn with_conn(conn: Conn, location: StoreLocation, config: JournalConfig) -> Self {
        let identity = match &location {
            StoreLocation::File(p) => file_identity(p),
            StoreLocation::Postgres(_) => None,
        };
        Self {
            db: std::sync::Mutex::new(conn),
            location,
            config,
            prev: HashMap::new(),
            last_snapshot: None,
            last_snapshot_partial: false,
            last_usage: HashMap::new(),
            last_prune: None,
            identity,
        }
    }

    /// Whether the journal's path still leads to the file this connection writes: false once
    /// it was deleted, moved away or replaced (SQLite would go on writing to the unlinked file,
    /// and everything written would be lost).
    pub fn still_at_path(&self) -> bool {
        match (&self.location, self.identity) {
            (StoreLocation::File(p), Some(id)) => file_identity(p) == Some(id),
            _ => true,
        }
    }

    /// Where the journal is (a file, or a PostgreSQL store shown without its password).
    pub fn location(&self) -> &StoreLocation {
        &self.location
    }

    pub fn config(&self) -> &JournalConfig {
        &self.config
    }

    pub(super) fn err(&self, e: DbError) -> JournalError {
        match (&self.location, e) {
            (StoreLocation::File(p), DbError::Sqlite(e)) => JournalError::sql(p, e),
            (loc, e) => JournalError::from_db(&loc.to_string(), e),
        }
    }

    /// Runs `f` on the connection (reads, single statements).
    pub(super) fn run<R: Send>(
        &self,
        f: impl FnOnce(&mut dyn Exec) -> Result<R, DbError> + Send,
    ) -> Result<R, JournalError> {
        let mut conn = self.db.lock().unwrap_or_else(|p| p.into_inner());
        conn.with(f).map_err(|e| self.err(e))
    }

    /// Runs `f` in one transaction (committed when it returns `Ok`).
    pub(super) fn run_transaction<R: Send>(
        &self,
        f: impl FnOnce(&mut dyn Exec) -> Result<R, DbError> + Send,
    ) -> Result<R, JournalError> {
        let mut conn = self.db.lock().unwrap_or_else(|p| p.into_inner());
        conn.transaction(f).map_err(|e| self.err(e))
    }

    /// Which engine the journal is in.
    pub(super) fn dialect(&self) -> crate::db::Dialect {
        self.db.lock().unwrap_or_else(|p| p.into_inner()).dialect()
    }

    /// The SQLite connection (tests that hold its lock).
    #[cfg(test)]
    pub(super) fn with_sqlite<R>(&self, f: impl FnOnce(&Connection) -> R) -> Option<R> {
        match &*self.db.lock().unwrap_or_else(|p| p.into_inner()) {
            Conn::Sqlite(c) => Some(f(c)),
            Conn::Postgres(_) => None,
        }
    }

    /// Records one snapshot (see [`Journal::record_all`]).
    pub fn record(&mut self, snapshot: &Snapshot) -> Result<RecordStats, JournalError> {
        self.record_all(std::slice::from_ref(snapshot))
    }

    /// Records snapshots in one transaction: job facts, the transitions they show since the
    /// previous observation, usage samples and stored snapshots at their intervals; prunes once
    /// an hour (service clock).
    pub fn record_all(&mut self, snapshots: &[Snapshot]) -> Result<RecordStats, JournalError> {
        self.record_all_fenced(snapshots, None)
    }

    /// [`Journal::record_all`] by a leading recorder: the transaction ends by checking
    /// `fence` (the lease is still this recorder's) and is rolled back when another leads now.
    pub fn record_all_fenced(
        &mut self,
        snapshots: &[Snapshot],
        fence: Option<&crate::Fence>,
    ) -> Result<RecordStats, JournalError> {
        let mut newest_obs = None;
        let result = {
            let mut conn = self.db.lock().unwrap_or_else(|p| p.into_inner());
            let mut state = RecordState {
                prev: &mut self.prev,
                last_snapshot: &mut self.last_snapshot,
                last_snapshot_partial: &mut self.last_snapshot_partial,
                last_usage: &mut self.last_usage,
                config: &self.config,
                newest_obs: &mut newest_obs,
            };
            conn.transaction(|tx| {
                let stats = state.record(tx, snapshots)?;
                // Last, just before the commit: the lease row is held for that instant only.
                if let Some(f) = fence {
                    f.check(tx)?;
                }
                Ok(stats)
            })
        };
        let stats = result.map_err(|e| self.err(e))?;
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
        let config = self.config;
        let stats = {
            let mut conn = self.db.lock().unwrap_or_else(|p| p.into_inner());
            conn.transaction(|tx| prune_tx(tx, &config))
        }
        .map_err(|e| self.err(e))?;
        let ids: Vec<String> = self.prev.keys().cloned().collect();
        for id in ids {
            let exists = self.run(|x| {
                Ok(
                    x.row("SELECT COUNT(*) FROM jobs WHERE job_id = ?1", &vals![&id])?
                        .map(|r| r.int(0))
                        .transpose()?
                        .unwrap_or(0)
                        > 0,
                )
            })?;
            if !exists {
                self.prev.remove(&id);
            }
        }
        Ok(stats)
    }
}

/// What [`Journal::record_all`] reads and updates besides the database.
struct RecordState<'a> {
    prev: &'a mut HashMap<String, std::sync::Arc<ServiceJob>>,
    last_snapshot: &'a mut Option<Millis>,
    last_snapshot_partial: &'a mut bool,
    last_usage: &'a mut HashMap<String, Millis>,
    config: &'a JournalConfig,
    newest_obs: &'a mut Option<Millis>,
}

impl RecordState<'_> {
    fn record(
        &mut self,
        tx: &mut dyn Exec,
        snapshots: &[Snapshot],
    ) -> Result<RecordStats, DbError> {
        let mut stats = RecordStats::default();
        // A snapshot loaded from the journal (a warm start) is history already.
        for snap in snapshots.iter().filter(|s| !s.health.from_history) {
            for q in &snap.queues {
                let obs = now_of(q).unwrap_or(snap.taken_at);
                *self.newest_obs = (*self.newest_obs).max(Some(obs));
                write_queue(tx, q, obs)?;
                // A job only listed so far (a partial view: its priority and attempts are not
                // known yet) is journaled once described; its listing alone would record a
                // made-up priority (and a "change" from it) and a completion without its attempt.
                for tj in q.jobs.iter().filter(|tj| tj.described_at.is_some()) {
                    let cur = &tj.job;
                    let prev = self.prev.get(&cur.id).map(|p| &**p);
                    stats.transitions += write_job(tx, q, prev, cur, obs)?;
                    self.prev.insert(cur.id.clone(), cur.clone());
                }
                super::training::write(tx, q, obs)?;
                let key = q.key();
                let due = self
                    .last_usage
                    .get(&key)
                    .is_none_or(|&t| obs - t >= self.config.usage_interval_ms);
                if due {
                    stats.usage_samples += write_usage(tx, q, obs)?;
                    self.last_usage.insert(key, obs);
                }
            }
            // A partial snapshot is stored as it was (its undescribed jobs say so), and the
            // first complete one after it is stored whatever the interval, so the newest stored
            // snapshot (a warm start's) is complete as soon as the poller's view is.
            let complete = snap.is_complete();
            let due = self.last_snapshot.is_none_or(|t| {
                snap.taken_at - t >= self.config.snapshot_interval_ms
                    || (complete && *self.last_snapshot_partial)
            });
            if due {
                let blob = encode(snap)?;
                tx.exec(
                    "INSERT INTO snapshots (taken_at, sequence, data) VALUES (?1, ?2, ?3)
                     ON CONFLICT (taken_at) DO UPDATE SET sequence = excluded.sequence,
                       data = excluded.data",
                    &vals![snap.taken_at, snap.sequence as i64, &blob[..]],
                )?;
                *self.last_snapshot = Some(snap.taken_at);
                *self.last_snapshot_partial = !complete;
                stats.snapshots += 1;
            }
        }
        Ok(stats)
    }
}

/// The channel a PostgreSQL store announces each new live snapshot on (`NOTIFY`; its payload
/// is the snapshot's `taken_at`).
pub const LIVE_CHANNEL: &str = "quotatop_snapshot";

/// Replaces the store's live snapshot with `snap` and announces it on [`LIVE_CHANNEL`], in the
/// caller's transaction (a console is told only once the row is committed); a snapshot older
/// than the one there (a second writer behind) never replaces it.
pub(super) fn write_live(tx: &mut dyn Exec, snap: &Snapshot) -> Result<(), DbError> {
    let blob = encode(snap)?;
    let written_at = quotatop_model::wall_clock_ms();
    let n = tx.exec(
        "INSERT INTO live_snapshot (id, taken_at, sequence, written_at, data)
         VALUES (1, ?1, ?2, ?3, ?4)
         ON CONFLICT (id) DO UPDATE SET taken_at = excluded.taken_at,
           sequence = excluded.sequence, written_at = excluded.written_at, data = excluded.data
         WHERE live_snapshot.taken_at <= excluded.taken_at",
        &vals![snap.taken_at, snap.sequence as i64, written_at, &blob[..]],
    )?;
    if n > 0 {
        let payload = snap.taken_at.to_string();
        tx.exec(
            &format!("SELECT pg_notify('{LIVE_CHANNEL}', CAST(?1 AS TEXT))"),
            &vals![&payload],
        )?;
    }
    Ok(())
}

fn prune_tx(tx: &mut dyn Exec, config: &JournalConfig) -> Result<PruneStats, DbError> {
    let mut stats = PruneStats::default();
    let max = |tx: &mut dyn Exec, sql: &str| -> Result<Option<Millis>, DbError> {
        tx.row(sql, &[])?
            .map(|r| r.opt_int(0))
            .transpose()
            .map(Option::flatten)
    };
    if let Some(newest) = max(tx, "SELECT MAX(last_observed_at) FROM queues")? {
        let cutoff = newest.saturating_sub(config.retention_ms);
        let old_jobs = "SELECT job_id FROM jobs WHERE last_seen_at < ?1";
        stats.transitions = tx.exec(
            &format!("DELETE FROM transitions WHERE job_id IN ({old_jobs})"),
            &vals![cutoff],
        )?;
        tx.exec(
            &format!("DELETE FROM priority_changes WHERE job_id IN ({old_jobs})"),
            &vals![cutoff],
        )?;
        stats.jobs = tx.exec("DELETE FROM jobs WHERE last_seen_at < ?1", &vals![cutoff])?;
        stats.usage_samples = tx.exec("DELETE FROM usage_samples WHERE at < ?1", &vals![cutoff])?;
        super::training::prune(tx)?;
    }
    if let Some(newest) = max(tx, "SELECT MAX(taken_at) FROM snapshots")? {
        let cutoff = newest.saturating_sub(config.snapshot_retention_ms);
        stats.snapshots = tx.exec("DELETE FROM snapshots WHERE taken_at < ?1", &vals![cutoff])?;
    }
    Ok(stats)
}

fn write_queue(tx: &mut dyn Exec, q: &QueueSnapshot, obs: Millis) -> Result<(), DbError> {
    // Plain structs with string keys only: serialising them cannot fail.
    let env = serde_json::to_string(&q.environment).unwrap_or_default();
    let shares = serde_json::to_string(&q.shares).unwrap_or_default();
    tx.exec(
        "INSERT INTO queues (name, environment, shares, last_observed_at, source)
         VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (source, name) DO UPDATE SET environment = excluded.environment,
           shares = excluded.shares,
           last_observed_at = CASE WHEN queues.last_observed_at > excluded.last_observed_at
             THEN queues.last_observed_at ELSE excluded.last_observed_at END",
        &vals![&q.name, &env, &shares, obs, source_column(q)],
    )?;
    // A new row only when the configuration differs from the newest one kept.
    tx.exec(
        "INSERT INTO share_configs (queue, observed_at, environment, shares, source)
         SELECT CAST(?1 AS TEXT), CAST(?4 AS BIGINT), CAST(?2 AS TEXT), CAST(?3 AS TEXT),
                CAST(?5 AS TEXT)
         WHERE NOT EXISTS (
           SELECT 1 FROM share_configs WHERE queue = ?1 AND source = ?5 AND environment = ?2
             AND shares = ?3 AND observed_at = (
               SELECT MAX(observed_at) FROM share_configs WHERE queue = ?1 AND source = ?5))
         ON CONFLICT DO NOTHING",
        &vals![&q.name, &env, &shares, obs, source_column(q)],
    )?;
    Ok(())
}

/// Upserts the job's facts and inserts its new transitions; returns how many were new.
fn write_job(
    tx: &mut dyn Exec,
    queue: &QueueSnapshot,
    prev: Option<&ServiceJob>,
    cur: &ServiceJob,
    obs: Millis,
) -> Result<usize, DbError> {
    let prev_status = match prev {
        Some(p) => Some(p.status),
        None => tx
            .row("SELECT status FROM jobs WHERE job_id = ?1", &vals![&cur.id])?
            .map(|r| r.text(0))
            .transpose()?
            .and_then(|s| JobStatus::parse(&s)),
    };
    tx.exec(
        "INSERT INTO jobs (job_id, queue, name, share, priority, instance_type, instance_count,
                           created_at, status, first_seen_at, last_seen_at,
                           preemption_retries, checkpoint_ms, source, class_tag)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10, ?11, ?12, ?13, ?14)
         ON CONFLICT (job_id) DO UPDATE SET status = excluded.status,
           last_seen_at = CASE WHEN jobs.last_seen_at > excluded.last_seen_at
             THEN jobs.last_seen_at ELSE excluded.last_seen_at END,
           priority = excluded.priority,
           preemption_retries = excluded.preemption_retries,
           checkpoint_ms = excluded.checkpoint_ms,
           class_tag = COALESCE(excluded.class_tag, jobs.class_tag)",
        &vals![
            &cur.id,
            &queue.name,
            &cur.name,
            &cur.share,
            cur.priority,
            &cur.instance_type,
            cur.instance_count,
            cur.created_at,
            cur.status.as_str(),
            obs,
            cur.preemption_retries,
            cur.checkpoint_interval_ms
                .and_then(|c| i64::try_from(c).ok()),
            source_column(queue),
            cur.class_tag.as_deref(),
        ],
    )?;
    if let Some(p) = prev
        && p.priority != cur.priority
    {
        tx.exec(
            "INSERT INTO priority_changes (job_id, observed_at, old, new) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT DO NOTHING",
            &vals![&cur.id, obs, p.priority, cur.priority],
        )?;
    }
    let mut n = 0;
    for t in diff::transitions_after(prev, prev_status, cur, obs) {
        n += tx.exec(
            "INSERT INTO transitions (job_id, kind, attempt, at, exact, observed_at, reason)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT DO NOTHING",
            &vals![
                &t.job_id,
                t.kind.as_str(),
                &t.attempt,
                t.at,
                t.exact,
                obs,
                &t.reason
            ],
        )?;
    }
    Ok(n)
}

fn write_usage(tx: &mut dyn Exec, q: &QueueSnapshot, obs: Millis) -> Result<usize, DbError> {
    let mut n = 0;
    for u in share_usage(q) {
        n += tx.exec(
            "INSERT INTO usage_samples (queue, share, instance_type, at, used, share_limit,
                                        borrowed, lent, source)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
             ON CONFLICT (source, queue, share, instance_type, at) DO UPDATE SET
               used = excluded.used, share_limit = excluded.share_limit,
               borrowed = excluded.borrowed, lent = excluded.lent",
            &vals![
                &q.name,
                &u.share,
                &u.instance_type,
                obs,
                u.used,
                u.limit,
                u.borrowed,
                u.lent,
                source_column(q)
            ],
        )?;
    }
    Ok(n)
}

/// The journal's `source` column of a queue: its `[[sources]]` name, '' for the implicit one.
fn source_column(q: &QueueSnapshot) -> &str {
    q.source.as_deref().unwrap_or("")
}

fn encode(snap: &Snapshot) -> Result<Vec<u8>, DbError> {
    let json = serde_json::to_vec(snap).map_err(|e| DbError::Codec(e.to_string()))?;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&json)
        .and_then(|_| gz.finish())
        .map_err(|e| DbError::Codec(e.to_string()))
}

pub(super) fn decode(blob: &[u8]) -> Result<Snapshot, JournalError> {
    let gz = flate2::read::GzDecoder::new(blob);
    serde_json::from_reader(gz).map_err(|e| JournalError::Codec(e.to_string()))
}
