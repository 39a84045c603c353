//! The training jobs behind the journaled jobs: the checkpoint objects each listing of a job's
//! `CheckpointConfig.S3Uri` showed (every version seen: a key written again keeps both times),
//! the last listing's location and whether it was cut at its bound, and the marks read from
//! attempts' logs (the preemption signal's time, whether a re-run restored and when it said so). The ledger measures
//! lost work from them (`quotatop_analysis::scorecard::measure_attempt`).

use quotatop_analysis::scorecard::{StoredObjects, TrainingRecord};
use quotatop_model::{Millis, QueueSnapshot};

use crate::db::{DbError, Exec, vals};

use super::{Journal, JournalError};

/// Writes what `q`'s refresh read of its jobs' training jobs.
pub(super) fn write(tx: &mut dyn Exec, q: &QueueSnapshot, obs: Millis) -> Result<(), DbError> {
    for e in &q.training {
        if let Some(l) = &e.listing {
            tx.exec(
                "INSERT INTO checkpoint_listings (job_id, uri, last_listed_at, truncated)
                 VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (job_id) DO UPDATE SET uri = excluded.uri,
                   last_listed_at = excluded.last_listed_at, truncated = excluded.truncated",
                &vals![&e.job_id, &l.uri, obs, i64::from(l.truncated)],
            )?;
            for o in &l.objects {
                tx.exec(
                    // `observed_at` is the last listing that showed it: the objects of the
                    // job's last listing are the ones stored now.
                    "INSERT INTO checkpoints (job_id, key, written_at, size, observed_at)
                     VALUES (?1, ?2, ?3, ?4, ?5)
                     ON CONFLICT (job_id, key, written_at) DO UPDATE SET
                       size = excluded.size, observed_at = excluded.observed_at",
                    &vals![
                        &e.job_id,
                        &o.key,
                        o.last_modified,
                        i64::try_from(o.size).unwrap_or(i64::MAX),
                        obs
                    ],
                )?;
            }
        }
        for m in &e.marks {
            tx.exec(
                "INSERT INTO attempt_marks
                   (job_id, attempt, signal_at, restored, observed_at, restored_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                 ON CONFLICT (job_id, attempt) DO UPDATE SET
                   signal_at = COALESCE(excluded.signal_at, attempt_marks.signal_at),
                   restored = COALESCE(excluded.restored, attempt_marks.restored),
                   restored_at = COALESCE(excluded.restored_at, attempt_marks.restored_at),
                   observed_at = excluded.observed_at",
                &vals![
                    &e.job_id,
                    &m.attempt,
                    m.signal_at,
                    m.restored.map(i64::from),
                    obs,
                    m.restored_at
                ],
            )?;
        }
    }
    Ok(())
}

/// The prune of the training tables: rows of jobs the journal no longer keeps.
pub(super) fn prune(tx: &mut dyn Exec) -> Result<(), DbError> {
    for table in ["checkpoints", "checkpoint_listings", "attempt_marks"] {
        tx.exec(
            &format!("DELETE FROM {table} WHERE job_id NOT IN (SELECT job_id FROM jobs)"),
            &[],
        )?;
    }
    Ok(())
}

/// One object as journaled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointRow {
    pub key: String,
    pub written_at: Millis,
    pub size: u64,
    /// The last listing that showed it.
    pub observed_at: Millis,
}

/// What an attempt's log said, as journaled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkRow {
    pub attempt: String,
    pub signal_at: Option<Millis>,
    pub restored: Option<bool>,
    /// When the log said it restored.
    pub restored_at: Option<Millis>,
}

/// A job's training job as journaled: `None` when its checkpoints were never listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobTraining {
    /// The last listing's location and whether it was cut at its bound (`None`: never listed).
    pub listing: Option<(String, bool)>,
    /// When the last listing was made.
    pub listed_at: Option<Millis>,
    /// Every version seen, oldest first.
    pub objects: Vec<CheckpointRow>,
    pub marks: Vec<MarkRow>,
}

impl JobTraining {
    /// The ledger's view: one checkpoint per written time and number (a checkpoint's files
    /// together), with their bytes; `None` when the checkpoints were never listed.
    pub fn record(&self) -> Option<TrainingRecord> {
        let (_, truncated) = self.listing.as_ref()?;
        Some(
            TrainingRecord::from_objects(
                self.objects
                    .iter()
                    .map(|o| (o.key.as_str(), o.written_at, o.size)),
                *truncated,
            )
            .with_stored(self.stored()),
        )
    }

    /// The objects stored now: those the last listing showed.
    pub fn stored(&self) -> StoredObjects {
        let current = self
            .objects
            .iter()
            .filter(|o| Some(o.observed_at) == self.listed_at);
        StoredObjects {
            objects: current.clone().count() as u64,
            bytes: current.map(|o| o.size).fold(0, u64::saturating_add),
            truncated: self.listing.as_ref().is_some_and(|(_, t)| *t),
        }
    }

    pub fn mark(&self, attempt: &str) -> Option<&MarkRow> {
        self.marks.iter().find(|m| m.attempt == attempt)
    }
}

impl Journal {
    /// The job's training job as journaled (`None`: its checkpoints were never listed, and no
    /// log mark was read).
    pub fn job_training(&self, job_id: &str) -> Result<Option<JobTraining>, JournalError> {
        self.run(|x| {
            let listed = x
                .row(
                    "SELECT uri, truncated, last_listed_at FROM checkpoint_listings
                     WHERE job_id = ?1",
                    &vals![job_id],
                )?
                .map(|r| Ok::<_, DbError>(((r.text(0)?, r.int(1)? != 0), r.int(2)?)))
                .transpose()?;
            let (listing, listed_at) = listed.unzip();
            let marks = x
                .rows(
                    "SELECT attempt, signal_at, restored, restored_at FROM attempt_marks
                     WHERE job_id = ?1
                     ORDER BY attempt",
                    &vals![job_id],
                )?
                .iter()
                .map(|r| {
                    Ok(MarkRow {
                        attempt: r.text(0)?,
                        signal_at: r.opt_int(1)?,
                        restored: r.opt_int(2)?.map(|v| v != 0),
                        restored_at: r.opt_int(3)?,
                    })
                })
                .collect::<Result<Vec<_>, DbError>>()?;
            if listing.is_none() && marks.is_empty() {
                return Ok(None);
            }
            let objects = x
                .rows(
                    "SELECT key, written_at, size, observed_at FROM checkpoints
                     WHERE job_id = ?1 ORDER BY written_at, key",
                    &vals![job_id],
                )?
                .iter()
                .map(|r| {
                    Ok(CheckpointRow {
                        key: r.text(0)?,
                        written_at: r.int(1)?,
                        size: u64::try_from(r.int(2)?).unwrap_or(0),
                        observed_at: r.int(3)?,
                    })
                })
                .collect::<Result<Vec<_>, DbError>>()?;
            Ok(Some(JobTraining {
                listing,
                listed_at,
                objects,
                marks,
            }))
        })
    }
}
