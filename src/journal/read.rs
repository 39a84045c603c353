//! Queries over the journal: what reports and the console's history screens read.

use rusqlite::{OptionalExtension, params};
use serde::{Deserialize, Serialize};

use crate::analysis::scorecard::{PriorityChange, Window};
use crate::model::{JobStatus, Millis, QuotaShare, ServiceEnvironment, Snapshot};

use super::diff::{Transition, TransitionKind};
use super::store::decode;
use super::{Journal, JournalError};

/// A queue as last observed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueueRecord {
    pub name: String,
    pub environment: ServiceEnvironment,
    pub shares: Vec<QuotaShare>,
    /// Newest observation (service clock).
    pub last_observed_at: Millis,
}

/// A job's facts as last observed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobRecord {
    pub job_id: String,
    pub queue: String,
    pub name: String,
    pub share: String,
    pub priority: u32,
    pub instance_type: String,
    pub instance_count: u32,
    pub created_at: Millis,
    pub status: Option<JobStatus>,
    pub first_seen_at: Millis,
    pub last_seen_at: Millis,
}

/// One per-share usage sample.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageSample {
    pub share: String,
    pub instance_type: String,
    pub at: Millis,
    pub used: u32,
    pub limit: u32,
    pub borrowed: u32,
    pub lent: u32,
}

impl Journal {
    pub fn queues(&self) -> Result<Vec<QueueRecord>, JournalError> {
        let mut stmt = self
            .conn
            .prepare("SELECT name, environment, shares, last_observed_at FROM queues ORDER BY name")
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, Millis>(3)?,
                ))
            })
            .and_then(|it| it.collect::<Result<Vec<_>, _>>())
            .map_err(|e| self.err(e))?;
        rows.into_iter()
            .map(|(name, env, shares, last)| {
                Ok(QueueRecord {
                    name,
                    environment: serde_json::from_str(&env)
                        .map_err(|e| JournalError::Codec(e.to_string()))?,
                    shares: serde_json::from_str(&shares)
                        .map_err(|e| JournalError::Codec(e.to_string()))?,
                    last_observed_at: last,
                })
            })
            .collect()
    }

    pub fn queue(&self, name: &str) -> Result<Option<QueueRecord>, JournalError> {
        Ok(self.queues()?.into_iter().find(|q| q.name == name))
    }

    /// Jobs of a queue seen at or after `since` (service clock), oldest first.
    pub fn jobs(&self, queue: &str, since: Millis) -> Result<Vec<JobRecord>, JournalError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT job_id, queue, name, share, priority, instance_type, instance_count,
                        created_at, status, first_seen_at, last_seen_at
                 FROM jobs WHERE queue = ?1 AND last_seen_at >= ?2 ORDER BY created_at, job_id",
            )
            .map_err(|e| self.err(e))?;
        stmt.query_map(params![queue, since], |r| {
            Ok(JobRecord {
                job_id: r.get(0)?,
                queue: r.get(1)?,
                name: r.get(2)?,
                share: r.get(3)?,
                priority: r.get(4)?,
                instance_type: r.get(5)?,
                instance_count: r.get(6)?,
                created_at: r.get(7)?,
                status: JobStatus::parse(&r.get::<_, String>(8)?),
                first_seen_at: r.get(9)?,
                last_seen_at: r.get(10)?,
            })
        })
        .and_then(|it| it.collect())
        .map_err(|e| self.err(e))
    }

    /// Every recorded transition of a job, in time order.
    pub fn transitions(&self, job_id: &str) -> Result<Vec<Transition>, JournalError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT job_id, kind, attempt, at, exact FROM transitions WHERE job_id = ?1
                 ORDER BY at, kind",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([job_id], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, Millis>(3)?,
                    r.get::<_, bool>(4)?,
                ))
            })
            .and_then(|it| it.collect::<Result<Vec<_>, _>>())
            .map_err(|e| self.err(e))?;
        Ok(rows
            .into_iter()
            .filter_map(|(job_id, kind, attempt, at, exact)| {
                Some(Transition {
                    job_id,
                    kind: TransitionKind::parse(&kind)?,
                    attempt,
                    at,
                    exact,
                })
            })
            .collect())
    }

    /// Local times (`taken_at`) of the stored snapshots in `[from, to]`, oldest first: the
    /// stops of time travel.
    pub fn snapshot_times(&self, from: Millis, to: Millis) -> Result<Vec<Millis>, JournalError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT taken_at FROM snapshots WHERE taken_at BETWEEN ?1 AND ?2 ORDER BY taken_at",
            )
            .map_err(|e| self.err(e))?;
        stmt.query_map(params![from, to], |r| r.get(0))
            .and_then(|it| it.collect())
            .map_err(|e| self.err(e))
    }

    /// The stored snapshot in force at `t`: the newest taken at or before it.
    pub fn snapshot_at(&self, t: Millis) -> Result<Option<Snapshot>, JournalError> {
        let blob: Option<Vec<u8>> = self
            .conn
            .query_row(
                "SELECT data FROM snapshots WHERE taken_at <= ?1 ORDER BY taken_at DESC LIMIT 1",
                [t],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.err(e))?;
        blob.map(|b| decode(&b)).transpose()
    }

    /// Usage samples of one share in `[from, to]` (service clock), oldest first.
    pub fn usage_series(
        &self,
        queue: &str,
        share: &str,
        from: Millis,
        to: Millis,
    ) -> Result<Vec<UsageSample>, JournalError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT share, instance_type, at, used, share_limit, borrowed, lent FROM usage_samples
                 WHERE queue = ?1 AND share = ?2 AND at BETWEEN ?3 AND ?4 ORDER BY at, instance_type",
            )
            .map_err(|e| self.err(e))?;
        stmt.query_map(params![queue, share, from, to], |r| {
            Ok(UsageSample {
                share: r.get(0)?,
                instance_type: r.get(1)?,
                at: r.get(2)?,
                used: r.get(3)?,
                limit: r.get(4)?,
                borrowed: r.get(5)?,
                lent: r.get(6)?,
            })
        })
        .and_then(|it| it.collect())
        .map_err(|e| self.err(e))
    }

    /// Priority changes the poller saw in the window (operator unknown: the API does not say
    /// who; the audit log does).
    pub fn priority_changes(
        &self,
        queue: &str,
        window: Window,
    ) -> Result<Vec<PriorityChange>, JournalError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT p.observed_at, p.job_id, j.share, p.old, p.new FROM priority_changes p
                 JOIN jobs j ON j.job_id = p.job_id
                 WHERE j.queue = ?1 AND p.observed_at >= ?2 AND p.observed_at < ?3
                 ORDER BY p.observed_at",
            )
            .map_err(|e| self.err(e))?;
        stmt.query_map(params![queue, window.start, window.end], |r| {
            Ok(PriorityChange {
                at: r.get(0)?,
                job_id: r.get(1)?,
                share: r.get(2)?,
                operator: None,
                old: r.get(3)?,
                new: r.get(4)?,
                change_record: None,
            })
        })
        .and_then(|it| it.collect())
        .map_err(|e| self.err(e))
    }
}
