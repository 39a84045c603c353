//! Queries over the journal: what reports and the console's history screens read.

use rusqlite::{OptionalExtension, params};
use serde::{Deserialize, Serialize};

use std::collections::BTreeMap;

use quotatop_analysis::RecordedPreemptions;
use quotatop_analysis::scorecard::{PriorityChange, Window};
use quotatop_model::{
    JobStatus, Millis, PreemptedAttempt, QuotaShare, ServiceEnvironment, Snapshot, split_queue_key,
};

use super::diff::{Transition, TransitionKind};
use super::store::decode;
use super::{Journal, JournalError};

/// A queue as last observed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueueRecord {
    pub name: String,
    /// The `[[sources]]` name it was read from; `None` for the implicit source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
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
    /// `preemptionRetriesBeforeTermination` as last described (`None`: unset or not known).
    #[serde(default)]
    pub preemption_retries: Option<u32>,
    /// The checkpoint interval from the job's tag, as last described (`None`: not known).
    #[serde(default)]
    pub checkpoint_ms: Option<u64>,
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
            .prepare(
                "SELECT name, environment, shares, last_observed_at, source FROM queues
                 ORDER BY source, name",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, Millis>(3)?,
                    r.get::<_, String>(4)?,
                ))
            })
            .and_then(|it| it.collect::<Result<Vec<_>, _>>())
            .map_err(|e| self.err(e))?;
        rows.into_iter()
            .map(|(name, env, shares, last, source)| {
                Ok(QueueRecord {
                    name,
                    source: (!source.is_empty()).then_some(source),
                    environment: serde_json::from_str(&env)
                        .map_err(|e| JournalError::Codec(e.to_string()))?,
                    shares: serde_json::from_str(&shares)
                        .map_err(|e| JournalError::Codec(e.to_string()))?,
                    last_observed_at: last,
                })
            })
            .collect()
    }

    /// The queue of a [`quotatop_model::queue_key`] (its name for the implicit source).
    pub fn queue(&self, key: &str) -> Result<Option<QueueRecord>, JournalError> {
        let (source, name) = split_queue_key(key);
        Ok(self
            .queues()?
            .into_iter()
            .find(|q| q.name == name && q.source.as_deref() == source))
    }

    /// The queue's configuration (environment and shares) in force at `at` (service clock): the
    /// newest one observed at or before it, with `last_observed_at` set to when it was first
    /// observed; `None` when the journal saw no configuration of the queue until after `at`.
    pub fn queue_at(&self, key: &str, at: Millis) -> Result<Option<QueueRecord>, JournalError> {
        let [name, source] = key_params(key);
        let row = self
            .conn
            .query_row(
                "SELECT observed_at, environment, shares FROM share_configs
                 WHERE queue = ?1 AND source = ?3 AND observed_at <= ?2
                 ORDER BY observed_at DESC LIMIT 1",
                params![name, at, source],
                |r| {
                    Ok((
                        r.get::<_, Millis>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                    ))
                },
            )
            .optional()
            .map_err(|e| self.err(e))?;
        row.map(|(observed, env, shares)| {
            Ok(QueueRecord {
                name: name.to_string(),
                source: (!source.is_empty()).then(|| source.to_string()),
                environment: serde_json::from_str(&env)
                    .map_err(|e| JournalError::Codec(e.to_string()))?,
                shares: serde_json::from_str(&shares)
                    .map_err(|e| JournalError::Codec(e.to_string()))?,
                last_observed_at: observed,
            })
        })
        .transpose()
    }

    /// When the journal first observed a configuration of the queue (`None`: never).
    pub fn first_config_at(&self, key: &str) -> Result<Option<Millis>, JournalError> {
        self.conn
            .query_row(
                "SELECT MIN(observed_at) FROM share_configs WHERE queue = ?1 AND source = ?2",
                key_params(key),
                |r| r.get(0),
            )
            .map_err(|e| self.err(e))
    }

    /// The queue's first observation still in the journal (service clock): its oldest usage
    /// sample or the first sighting of its oldest job; `None` when nothing of it is recorded.
    /// History begins here: a window that starts earlier would average over time nobody saw.
    pub fn first_observed_at(&self, queue: &str) -> Result<Option<Millis>, JournalError> {
        self.conn
            .query_row(
                "SELECT MIN(m) FROM (
                   SELECT MIN(at) AS m FROM usage_samples WHERE queue = ?1 AND source = ?2
                   UNION ALL SELECT MIN(first_seen_at) FROM jobs WHERE queue = ?1 AND source = ?2)",
                key_params(queue),
                |r| r.get(0),
            )
            .map_err(|e| self.err(e))
    }

    /// Jobs of a queue seen at or after `since` (service clock), oldest first.
    pub fn jobs(&self, queue: &str, since: Millis) -> Result<Vec<JobRecord>, JournalError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT job_id, queue, name, share, priority, instance_type, instance_count,
                        created_at, status, first_seen_at, last_seen_at,
                        preemption_retries, checkpoint_ms
                 FROM jobs WHERE queue = ?1 AND source = ?3 AND last_seen_at >= ?2
                 ORDER BY created_at, job_id",
            )
            .map_err(|e| self.err(e))?;
        let [name, source] = key_params(queue);
        stmt.query_map(params![name, since, source], |r| {
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
                preemption_retries: r.get(11)?,
                checkpoint_ms: r
                    .get::<_, Option<i64>>(12)?
                    .and_then(|c| u64::try_from(c).ok()),
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
                "SELECT job_id, kind, attempt, at, exact, reason FROM transitions WHERE job_id = ?1
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
                    r.get::<_, String>(5)?,
                ))
            })
            .and_then(|it| it.collect::<Result<Vec<_>, _>>())
            .map_err(|e| self.err(e))?;
        Ok(rows
            .into_iter()
            .filter_map(|(job_id, kind, attempt, at, exact, reason)| {
                Some(Transition {
                    job_id,
                    kind: TransitionKind::parse(&kind)?,
                    attempt,
                    at,
                    exact,
                    reason,
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

    /// The newest stored snapshot (a warm start's), `None` when none is stored.
    pub fn newest_snapshot(&self) -> Result<Option<Snapshot>, JournalError> {
        self.snapshot_at(Millis::MAX)
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
                 WHERE queue = ?1 AND source = ?5 AND share = ?2 AND at BETWEEN ?3 AND ?4
                 ORDER BY at, instance_type",
            )
            .map_err(|e| self.err(e))?;
        let [name, source] = key_params(queue);
        stmt.query_map(params![name, share, from, to, source], |r| {
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
                 WHERE j.queue = ?1 AND j.source = ?4 AND p.observed_at >= ?2 AND p.observed_at < ?3
                 ORDER BY p.observed_at",
            )
            .map_err(|e| self.err(e))?;
        let [name, source] = key_params(queue);
        stmt.query_map(params![name, window.start, window.end, source], |r| {
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

    /// Every job of `queue` the journal saw preempted at or after `since` (service clock),
    /// with all its recorded preempted attempts: the Preemptions screen's history beyond the
    /// API's window of recent attempts. An attempt's start is its `started`/`resumed`
    /// transition (else its `scheduled` one, else unknown: counted, with no loss).
    pub fn preempted_jobs(
        &self,
        queue: &str,
        since: Millis,
    ) -> Result<Vec<RecordedPreemptions>, JournalError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT job_id, name, share, priority, instance_type, instance_count, status
                 FROM jobs WHERE queue = ?1 AND source = ?3 AND job_id IN
                   (SELECT job_id FROM transitions WHERE kind = 'preempted' AND at >= ?2)
                 ORDER BY job_id",
            )
            .map_err(|e| self.err(e))?;
        let [name, source] = key_params(queue);
        let jobs = stmt
            .query_map(params![name, since, source], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, u32>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, u32>(5)?,
                    r.get::<_, String>(6)?,
                ))
            })
            .and_then(|it| it.collect::<Result<Vec<_>, _>>())
            .map_err(|e| self.err(e))?;
        let mut out = Vec::with_capacity(jobs.len());
        for (job_id, name, share, priority, instance_type, instance_count, status) in jobs {
            let ts = self.transitions(&job_id)?;
            let attempts = preempted_attempts(&ts);
            // A status this build cannot read (a newer writer's) is shown by what the
            // transitions say: finished, or waiting again after its last preemption.
            let status =
                JobStatus::parse(&status).unwrap_or_else(|| match ts.last().map(|t| t.kind) {
                    Some(TransitionKind::Completed) => JobStatus::Succeeded,
                    Some(TransitionKind::Failed) => JobStatus::Failed,
                    _ => JobStatus::Runnable,
                });
            out.push(RecordedPreemptions {
                job_id,
                name,
                share,
                status,
                instance_type,
                instance_count,
                priority,
                attempts,
            });
        }
        Ok(out)
    }

    /// Time travel's next stop: the newest stored snapshot taken before `t` (`older`), or the
    /// oldest taken after it.
    pub fn snapshot_neighbour(
        &self,
        t: Millis,
        older: bool,
    ) -> Result<Option<Millis>, JournalError> {
        let sql = if older {
            "SELECT MAX(taken_at) FROM snapshots WHERE taken_at < ?1"
        } else {
            "SELECT MIN(taken_at) FROM snapshots WHERE taken_at > ?1"
        };
        self.conn
            .query_row(sql, [t], |r| r.get(0))
            .map_err(|e| self.err(e))
    }

    /// How many stored snapshots were taken at or before `t`, and how many there are.
    pub fn snapshot_position(&self, t: Millis) -> Result<(usize, usize), JournalError> {
        self.conn
            .query_row(
                "SELECT (SELECT COUNT(*) FROM snapshots WHERE taken_at <= ?1),
                        (SELECT COUNT(*) FROM snapshots)",
                [t],
                |r| Ok((r.get::<_, i64>(0)? as usize, r.get::<_, i64>(1)? as usize)),
            )
            .map_err(|e| self.err(e))
    }

    /// The last `per_series` usage samples of every share and instance type of `queue` taken
    /// at or before `until` (service clock), oldest first: a past view's sparklines.
    pub fn usage_until(
        &self,
        queue: &str,
        until: Millis,
        per_series: usize,
    ) -> Result<BTreeMap<(String, String), Vec<u32>>, JournalError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT share, instance_type, used FROM (
                   SELECT share, instance_type, at, used,
                          ROW_NUMBER() OVER (PARTITION BY share, instance_type ORDER BY at DESC) AS n
                   FROM usage_samples WHERE queue = ?1 AND source = ?4 AND at <= ?2)
                 WHERE n <= ?3 ORDER BY share, instance_type, at",
            )
            .map_err(|e| self.err(e))?;
        let [name, source] = key_params(queue);
        let rows = stmt
            .query_map(params![name, until, per_series as i64, source], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, u32>(2)?,
                ))
            })
            .and_then(|it| it.collect::<Result<Vec<_>, _>>())
            .map_err(|e| self.err(e))?;
        let mut out: BTreeMap<(String, String), Vec<u32>> = BTreeMap::new();
        for (share, ty, used) in rows {
            out.entry((share, ty)).or_default().push(used);
        }
        Ok(out)
    }
}

/// A queue key's name and `source` column ('' for the implicit source): every query taking a
/// `queue` takes a [`quotatop_model::queue_key`], so two sources' `ml-training` stay apart.
fn key_params(key: &str) -> [&str; 2] {
    let (source, name) = split_queue_key(key);
    [name, source.unwrap_or("")]
}

/// The preempted attempts among a job's transitions, newest first.
fn preempted_attempts(ts: &[Transition]) -> Vec<PreemptedAttempt> {
    let mut started: BTreeMap<&str, Millis> = BTreeMap::new();
    let mut scheduled: BTreeMap<&str, Millis> = BTreeMap::new();
    for t in ts {
        match t.kind {
            TransitionKind::Started | TransitionKind::Resumed => {
                started.insert(&t.attempt, t.at);
            }
            TransitionKind::Scheduled => {
                scheduled.insert(&t.attempt, t.at);
            }
            _ => {}
        }
    }
    let mut out: Vec<PreemptedAttempt> = ts
        .iter()
        .filter(|t| t.kind == TransitionKind::Preempted)
        .map(|t| {
            // Never seen started nor scheduled: unknown, not its stop (which made it "ran 0s").
            let start = started
                .get(t.attempt.as_str())
                .or_else(|| scheduled.get(t.attempt.as_str()))
                .map(|&s| s.min(t.at));
            PreemptedAttempt {
                // `#n` keys stand for attempts without a resource id.
                resource_id: if t.attempt.starts_with('#') {
                    String::new()
                } else {
                    t.attempt.clone()
                },
                started_at: start,
                stopped_at: t.at,
                status_reason: t.reason.clone(),
            }
        })
        .collect();
    out.sort_by_key(|a| std::cmp::Reverse(a.stopped_at));
    out
}
