//! Batch's events kept in the journal (`record --events-queue`): one row per event id, so a
//! duplicate delivery, or a message delivered again after a kill, changes nothing.
//!
//! A preemption's event also lists the job's recent preempted attempts, each with its true
//! start and stop: they are kept in `event_attempts`, one row per job, attempt and stop, so the
//! journal holds every attempt the events ever named, after the API's window of recent
//! attempts dropped the early ones.
//!
//! The tables are created when the first events are kept (`CREATE TABLE IF NOT EXISTS`), as
//! drills are: a journal without events keeps its schema version. SQLite only for now; a
//! PostgreSQL store refuses, saying so.

use std::collections::BTreeMap;

use crate::db::{Dialect, vals};

use quotatop_model::{BatchEvent, PreemptedAttempt};

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

const CREATE_ATTEMPTS: &str = "CREATE TABLE IF NOT EXISTS event_attempts (
    job_id TEXT NOT NULL,
    resource_id TEXT NOT NULL,
    stopped_at INTEGER NOT NULL,
    started_at INTEGER,
    status_reason TEXT NOT NULL,
    event_id TEXT NOT NULL,
    PRIMARY KEY (job_id, resource_id, stopped_at)
)";

/// A job's preempted attempts as the events named them, newest first.
pub type EventAttempts = BTreeMap<String, Vec<PreemptedAttempt>>;

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
            x.batch(CREATE_ATTEMPTS)?;
            x.batch(super::api_calls::CREATE_CALLS)?;
            let mut added = 0;
            for e in events {
                let new = x.exec(
                    "INSERT INTO batch_events (event_id, time, detail_type, job_id, status, priority, attempts)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (event_id) DO NOTHING",
                    &vals![&e.id, e.time, &e.detail_type, &e.job_id, e.status.as_ref(), e.priority, e.attempts],
                )?;
                added += new;
                if new > 0
                    && let Some(call) = &e.api_call
                {
                    // Who called what: the audit view's calls made outside quotatop.
                    super::api_calls::keep(x, call, "events")?;
                }
                if new == 0 || e.job_id.is_empty() {
                    continue;
                }
                for a in &e.preempted {
                    // The same attempt named again by a later event (the window repeats the
                    // recent ones) is kept once, with the start first seen; a start the first
                    // event did not know is filled in.
                    x.exec(
                        "INSERT INTO event_attempts (job_id, resource_id, stopped_at, started_at, status_reason, event_id)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                         ON CONFLICT (job_id, resource_id, stopped_at)
                         DO UPDATE SET started_at = COALESCE(event_attempts.started_at, excluded.started_at)",
                        &vals![&e.job_id, &a.resource_id, a.stopped_at, a.started_at, &a.status_reason, &e.id],
                    )?;
                }
            }
            Ok(added)
        })
    }

    /// Every preempted attempt the kept events named, by job, newest (latest stop) first (none
    /// from a PostgreSQL store, which keeps no events).
    pub fn event_attempts(&self) -> Result<EventAttempts, JournalError> {
        let mut out = EventAttempts::new();
        if self.dialect() != Dialect::Sqlite {
            return Ok(out);
        }
        self.run(|x| {
            // Read without creating: a journal opened to read (another process records) is
            // not written to.
            if x.rows(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'event_attempts'",
                &[],
            )?
            .is_empty()
            {
                return Ok(out);
            }
            for r in x.rows(
                "SELECT job_id, resource_id, started_at, stopped_at, status_reason
                 FROM event_attempts ORDER BY job_id, stopped_at DESC, resource_id",
                &[],
            )? {
                out.entry(r.text(0)?).or_default().push(PreemptedAttempt {
                    resource_id: r.text(1)?,
                    started_at: r.opt_int(2)?,
                    stopped_at: r.int(3)?,
                    status_reason: r.text(4)?,
                });
            }
            Ok(out)
        })
    }

    /// Every kept event, in event-time order (then by id); `preempted` and `api_call` are left
    /// empty (read with [`Journal::event_attempts`] and [`Journal::api_calls`]).
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
                    preempted: Vec::new(),
                    api_call: None,
                })
            })
            .collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::JournalConfig;

    fn attempt(id: &str, start: Option<i64>, stop: i64) -> PreemptedAttempt {
        PreemptedAttempt {
            resource_id: id.to_string(),
            started_at: start,
            stopped_at: stop,
            status_reason: "preempted".to_string(),
        }
    }

    /// A preemption's completion naming the window `recent` (newest first).
    fn completed(id: &str, time: i64, recent: Vec<PreemptedAttempt>) -> BatchEvent {
        BatchEvent {
            id: id.to_string(),
            time,
            detail_type: "Batch Service Job Preemption Completed".to_string(),
            job_id: "j1".to_string(),
            status: Some("RUNNABLE".to_string()),
            priority: None,
            attempts: None,
            preempted: recent,
            api_call: None,
        }
    }

    #[test]
    fn every_attempt_the_events_named_is_kept_once_after_the_window_moved_on() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::open(&dir.path().join("j.sqlite3"), JournalConfig::default()).unwrap();
        // A window of 2: the third event no longer names the first attempt.
        let a = |n: i64| attempt(&format!("tj-{n}"), Some(n * 100), n * 100 + 50);
        let e1 = completed("e1", 150, vec![a(1)]);
        let e2 = completed("e2", 250, vec![a(2), a(1)]);
        let e3 = completed("e3", 350, vec![a(3), a(2)]);
        // Out of order, and e2 delivered twice.
        assert_eq!(j.apply_events(&[e3, e2.clone()]).unwrap(), 2);
        assert_eq!(j.apply_events(&[e2, e1]).unwrap(), 1);
        // An attempt first named without its start gets it from a later event.
        j.apply_events(&[completed("e4", 450, vec![attempt("tj-4", None, 450)])])
            .unwrap();
        j.apply_events(&[completed("e5", 460, vec![attempt("tj-4", Some(400), 450)])])
            .unwrap();
        // An API call's event keeps its call, once however often it is delivered.
        let mut call = completed("e6", 470, vec![]);
        call.detail_type = "AWS API Call via CloudTrail".into();
        call.api_call = Some(quotatop_model::ApiCall {
            event_id: "ct-1".into(),
            time: 465,
            name: "UpdateServiceJob".into(),
            principal: "arn:aws:iam::1:user/bob".into(),
            request_id: None,
            parameters: "{}".into(),
        });
        j.apply_events(&[call.clone(), call]).unwrap();
        assert_eq!(j.api_calls(0).unwrap().len(), 1);
        let kept = j.event_attempts().unwrap();
        let got: Vec<_> = kept["j1"]
            .iter()
            .map(|a| (a.resource_id.as_str(), a.started_at, a.stopped_at))
            .collect();
        assert_eq!(
            got,
            [
                ("tj-4", Some(400), 450),
                ("tj-3", Some(300), 350),
                ("tj-2", Some(200), 250),
                ("tj-1", Some(100), 150),
            ]
        );
    }
}
