//! The journal database: an open journal, what it keeps, and recording snapshots.
//!
//! Opening it (file mode 0600, WAL, migrations; PostgreSQL) is in `open.rs`; what one
//! snapshot writes (jobs, transitions, usage) in `record.rs`; the snapshot blob and the live
//! row in `blob.rs`.

mod blob;
mod open;
mod record;

use std::collections::HashMap;

#[cfg(test)]
use rusqlite::Connection;
use serde::{Deserialize, Serialize};

use quotatop_model::{Millis, ServiceJob, Snapshot};

use super::JournalError;
use crate::StoreLocation;
use crate::db::{Conn, DbError, Exec, vals};
pub use blob::LIVE_CHANNEL;
pub(super) use blob::{decode, write_live};
use open::file_identity;
use record::RecordState;

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

impl Journal {
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
