//! Preemption drills kept in the journal, so `report` can show them later: one row per drill,
//! its report as JSON.
//!
//! The table is created when the first drill is saved (`CREATE TABLE IF NOT EXISTS`) rather
//! than by a schema migration: a journal without drills keeps its schema version, and a reader
//! finding no table finds no drills.

use crate::db::{Dialect, vals};

use quotatop_analysis::drill::DrillReport;
use quotatop_model::Millis;

use super::{Journal, JournalError};

const CREATE: &str = "CREATE TABLE IF NOT EXISTS drills (
    run_id TEXT PRIMARY KEY,
    queue TEXT NOT NULL,
    started_at INTEGER NOT NULL,
    finished_at INTEGER NOT NULL,
    report TEXT NOT NULL
)";

impl Journal {
    /// Keeps a drill's report (replacing an earlier one of the same run).
    pub fn save_drill(&self, report: &DrillReport) -> Result<(), JournalError> {
        let json = serde_json::to_string(report).map_err(|e| JournalError::Sql {
            path: self.location().to_string().into(),
            message: format!("drill report: {e}"),
        })?;
        let sqlite = self.dialect() == Dialect::Sqlite;
        self.run(|x| {
            // PostgreSQL's table is made by its migration (a writer may not create tables).
            if sqlite {
                x.batch(CREATE)?;
            }
            x.exec(
                "INSERT INTO drills (run_id, queue, started_at, finished_at, report)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (run_id) DO UPDATE SET queue = excluded.queue,
                   started_at = excluded.started_at, finished_at = excluded.finished_at,
                   report = excluded.report",
                &vals![
                    &report.run_id,
                    &report.queue,
                    report.started_at,
                    report.finished_at,
                    &json
                ],
            )
        })?;
        Ok(())
    }

    /// The drills of `queue` that finished at or after `since`, oldest first (none when no
    /// drill was ever saved). A report this build cannot read is skipped.
    pub fn drills(&self, queue: &str, since: Millis) -> Result<Vec<DrillReport>, JournalError> {
        let exists = match self.dialect() {
            Dialect::Postgres => true,
            Dialect::Sqlite => self.run(|x| {
                x.row(
                    "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'drills'",
                    &[],
                )?
                .map_or(Ok(false), |r| r.boolean(0))
            })?,
        };
        if !exists {
            return Ok(Vec::new());
        }
        let rows = self.run(|x| {
            x.rows(
                "SELECT report FROM drills WHERE queue = ?1 AND finished_at >= ?2
                 ORDER BY started_at, run_id",
                &vals![queue, since],
            )?
            .iter()
            .map(|r| r.text(0))
            .collect::<Result<Vec<_>, _>>()
        })?;
        Ok(rows
            .iter()
            .filter_map(|j| serde_json::from_str(j).ok())
            .collect())
    }
}
