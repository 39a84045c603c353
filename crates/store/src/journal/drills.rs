//! Preemption drills kept in the journal, so `report` can show them later: one row per drill,
//! its report as JSON.
//!
//! The table is created when the first drill is saved (`CREATE TABLE IF NOT EXISTS`) rather
//! than by a schema migration: a journal without drills keeps its schema version, and a reader
//! finding no table finds no drills.

use rusqlite::params;

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
            path: self.path().to_path_buf(),
            message: format!("drill report: {e}"),
        })?;
        self.conn.execute_batch(CREATE).map_err(|e| self.err(e))?;
        self.conn
            .execute(
                "INSERT OR REPLACE INTO drills (run_id, queue, started_at, finished_at, report)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![
                    report.run_id,
                    report.queue,
                    report.started_at,
                    report.finished_at,
                    json
                ],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// The drills of `queue` that finished at or after `since`, oldest first (none when no
    /// drill was ever saved). A report this build cannot read is skipped.
    pub fn drills(&self, queue: &str, since: Millis) -> Result<Vec<DrillReport>, JournalError> {
        let exists: bool = self
            .conn
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'drills')",
                [],
                |r| r.get(0),
            )
            .map_err(|e| self.err(e))?;
        if !exists {
            return Ok(Vec::new());
        }
        let mut stmt = self
            .conn
            .prepare(
                "SELECT report FROM drills WHERE queue = ?1 AND finished_at >= ?2
                 ORDER BY started_at, run_id",
            )
            .map_err(|e| self.err(e))?;
        let rows: Vec<String> = stmt
            .query_map(params![queue, since], |r| r.get(0))
            .and_then(|it| it.collect())
            .map_err(|e| self.err(e))?;
        Ok(rows
            .iter()
            .filter_map(|j| serde_json::from_str(j).ok())
            .collect())
    }
}
