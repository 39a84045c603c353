//! Batch's events kept in the journal (`record --events-queue`): one row per event id, so a
//! duplicate delivery, or a message delivered again after a kill, changes nothing.
//!
//! The table is created when the first events are kept (`CREATE TABLE IF NOT EXISTS`), as
//! drills are: a journal without events keeps its schema version. SQLite only for now; a
//! PostgreSQL store refuses, saying so.

use crate::db::{Dialect, vals};

use quotatop_model::BatchEvent;

use super::{Journal, JournalError};

const CREATE: &str = "CREATE TABLE IF NOT EXISTS batch_events (
    event_id TEXT PRIMARY KEY,
    time INTEGER NOT NULL,
    detail_type TEXT NOT NULL,
    job_id TEXT NOT NULL,
    status TEXT,
    priority INTEGER,
    attempts INTEGER
)";

impl Journal {
    fn events_supported(&self) -> Result<(), JournalError> {
        match self.dialect() {
            Dialect::Sqlite => Ok(()),
            Dialect::Postgres => Err(JournalError::Sql {
                path: self.location().to_string().into(),
                message: "Batch's events are kept in a SQLite journal only (--journal FILE); a PostgreSQL store does not keep them yet".to_string(),
            }),
        }
    }

    /// Keeps `events` in one transaction, those already kept (by event id) skipped: how many
    /// were new. Committed when it returns `Ok`.
    pub fn apply_events(&self, events: &[BatchEvent]) -> Result<usize, JournalError> {
        self.events_supported()?;
        self.run_transaction(|x| {
            x.batch(CREATE)?;
            let mut added = 0;
            for e in events {
                added += x.exec(
                    "INSERT INTO batch_events (event_id, time, detail_type, job_id, status, priority, attempts)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (event_id) DO NOTHING",
                    &vals![&e.id, e.time, &e.detail_type, &e.job_id, e.status.as_ref(), e.priority, e.attempts],
                )?;
            }
            Ok(added)
        })
    }

    /// Every kept event, in event-time order (then by id).
    pub fn batch_events(&self) -> Result<Vec<BatchEvent>, JournalError> {
        self.events_supported()?;
        self.run(|x| {
            x.batch(CREATE)?;
            x.rows(
                "SELECT event_id, time, detail_type, job_id, status, priority, attempts
                 FROM batch_events ORDER BY time, event_id",
                &[],
            )?
            .iter()
            .map(|r| {
                Ok(BatchEvent {
                    id: r.text(0)?,
                    time: r.int(1)?,
                    detail_type: r.text(2)?,
                    job_id: r.text(3)?,
                    status: r.opt_text(4)?,
                    priority: r.opt_int(5)?,
                    attempts: r.opt_int(6)?,
                })
            })
            .collect()
        })
    }
}
