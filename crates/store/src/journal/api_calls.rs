//! Batch's API calls as CloudTrail recorded them, kept in the journal's `api_calls` table: from
//! the event stream ("AWS API Call via CloudTrail", in the same transaction as the event) or
//! from CloudTrail's event history (`LookupEvents`). One row per CloudTrail event id, so a call
//! the stream delivered and the history lists again is kept once.
//!
//! Created when the first call is kept (`CREATE TABLE IF NOT EXISTS`), as `batch_events` is;
//! SQLite only.

use crate::db::{Dialect, Exec, vals};

use quotatop_model::{ApiCall, Millis};

use super::{Journal, JournalError};

pub(super) const CREATE_CALLS: &str = "CREATE TABLE IF NOT EXISTS api_calls (
    event_id TEXT PRIMARY KEY,
    time INTEGER NOT NULL,
    name TEXT NOT NULL,
    principal TEXT NOT NULL,
    request_id TEXT,
    parameters TEXT NOT NULL,
    origin TEXT NOT NULL
)";

/// Keeps `call` unless its event id is kept already: 1 when it was new. `origin` says where it
/// came from (`events`, `event history`).
pub(super) fn keep(
    x: &mut dyn Exec,
    call: &ApiCall,
    origin: &str,
) -> Result<usize, crate::db::DbError> {
    x.exec(
        "INSERT INTO api_calls (event_id, time, name, principal, request_id, parameters, origin)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (event_id) DO NOTHING",
        &vals![
            &call.event_id,
            call.time,
            &call.name,
            &call.principal,
            call.request_id.as_ref(),
            &call.parameters,
            origin
        ],
    )
}

/// A kept call and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptCall {
    pub call: ApiCall,
    /// `events` (the event stream) or `event history` (`LookupEvents`).
    pub origin: String,
}

impl Journal {
    /// Keeps calls read from CloudTrail's event history, those kept already (by event id)
    /// skipped: how many were new.
    pub fn keep_api_calls(&self, calls: &[ApiCall], origin: &str) -> Result<usize, JournalError> {
        if self.dialect() != Dialect::Sqlite {
            return Ok(0);
        }
        self.run_transaction(|x| {
            x.batch(CREATE_CALLS)?;
            let mut added = 0;
            for c in calls {
                added += keep(x, c, origin)?;
            }
            Ok(added)
        })
    }

    /// The kept calls at or after `since`, oldest first (none from a PostgreSQL store, or a
    /// journal that kept none).
    pub fn api_calls(&self, since: Millis) -> Result<Vec<KeptCall>, JournalError> {
        if self.dialect() != Dialect::Sqlite {
            return Ok(Vec::new());
        }
        self.run(|x| {
            // Read without creating: a journal another process records into is not written.
            if x.rows(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'api_calls'",
                &[],
            )?
            .is_empty()
            {
                return Ok(Vec::new());
            }
            x.rows(
                "SELECT event_id, time, name, principal, request_id, parameters, origin
                 FROM api_calls WHERE time >= ?1 ORDER BY time, event_id",
                &vals![since],
            )?
            .iter()
            .map(|r| {
                Ok(KeptCall {
                    call: ApiCall {
                        event_id: r.text(0)?,
                        time: r.int(1)?,
                        name: r.text(2)?,
                        principal: r.text(3)?,
                        request_id: r.opt_text(4)?,
                        parameters: r.text(5)?,
                    },
                    origin: r.text(6)?,
                })
            })
            .collect()
        })
    }

    /// The job `job_id`'s name and the priority a call at `at` changed (`None`: the journal
    /// never saw the job). The priority is the `old` of the first priority change the poller
    /// observed at or after `at` to `new` (the call's value, when it sets one; CloudTrail
    /// times calls to the second, so the change to that value is the call's), else of the
    /// first change observed from then, else the job's priority as last observed when it was
    /// seen before `at`.
    pub fn job_before(
        &self,
        job_id: &str,
        at: Millis,
        new: Option<u32>,
    ) -> Result<Option<(String, u32)>, JournalError> {
        self.run(|x| {
            let Some(job) = x.row("SELECT name, priority, first_seen_at FROM jobs WHERE job_id = ?1", &vals![job_id])? else {
                return Ok(None);
            };
            let name = job.text(0)?;
            if let Some(n) = new
                && let Some(r) = x.row(
                    "SELECT old FROM priority_changes WHERE job_id = ?1 AND observed_at >= ?2 AND new = ?3
                     ORDER BY observed_at LIMIT 1",
                    &vals![job_id, at, n],
                )?
            {
                return Ok(Some((name, r.u32(0)?)));
            }
            if let Some(r) = x.row(
                "SELECT old FROM priority_changes WHERE job_id = ?1 AND observed_at >= ?2
                 ORDER BY observed_at LIMIT 1",
                &vals![job_id, at],
            )? {
                return Ok(Some((name, r.u32(0)?)));
            }
            if job.int(2)? < at {
                return Ok(Some((name, job.u32(1)?)));
            }
            Ok(None)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::JournalConfig;

    fn call(id: &str, time: Millis) -> ApiCall {
        ApiCall {
            event_id: id.into(),
            time,
            name: "UpdateServiceJob".into(),
            principal: "arn:aws:iam::1:user/bob".into(),
            request_id: Some(format!("req-{id}")),
            parameters: r#"{"jobId":"j1","schedulingPriority":5}"#.into(),
        }
    }

    #[test]
    fn a_call_is_kept_once_whichever_way_it_came() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::open(&dir.path().join("j.sqlite3"), JournalConfig::default()).unwrap();
        assert!(j.api_calls(0).unwrap().is_empty());
        assert_eq!(
            j.keep_api_calls(&[call("a", 20), call("b", 10)], "events")
                .unwrap(),
            2
        );
        assert_eq!(
            j.keep_api_calls(&[call("a", 20), call("c", 30)], "event history")
                .unwrap(),
            1
        );
        let kept = j.api_calls(15).unwrap();
        let got: Vec<_> = kept
            .iter()
            .map(|k| (k.call.event_id.as_str(), k.origin.as_str()))
            .collect();
        assert_eq!(got, [("a", "events"), ("c", "event history")]);
        assert_eq!(kept[0].call, call("a", 20));
    }
}
