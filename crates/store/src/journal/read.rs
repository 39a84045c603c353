//! Queries over the journal: what reports and the console's history screens read.

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
use crate::db::{DbError, Val, vals};

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
        let rows = self.run(|x| {
            x.rows(
                "SELECT name, environment, shares, last_observed_at, source FROM queues
                 ORDER BY source, name",
                &[],
            )?
            .iter()
            .map(|r| Ok((r.text(0)?, r.text(1)?, r.text(2)?, r.int(3)?, r.text(4)?)))
            .collect::<Result<Vec<_>, DbError>>()
        })?;
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
        let row = self.run(|x| {
            x.row(
                "SELECT observed_at, environment, shares FROM share_configs
                 WHERE queue = ?1 AND source = ?3 AND observed_at <= ?2
                 ORDER BY observed_at DESC LIMIT 1",
                &vals![name, at, source],
            )?
            .map(|r| Ok((r.int(0)?, r.text(1)?, r.text(2)?)))
            .transpose()
        })?;
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

    /// One nullable integer: the first column of the first row of `sql`.
    fn scalar(&self, sql: &str, params: &[Val<'_>]) -> Result<Option<i64>, JournalError> {
        self.run(|x| {
            Ok(x.row(sql, params)?
                .map(|r| r.opt_int(0))
                .transpose()?
                .flatten())
        })
    }

    /// When the journal first observed a configuration of the queue (`None`: never).
    pub fn first_config_at(&self, key: &str) -> Result<Option<Millis>, JournalError> {
        let [name, source] = key_params(key);
        self.scalar(
            "SELECT MIN(observed_at) FROM share_configs WHERE queue = ?1 AND source = ?2",
            &vals![name, source],
        )
    }

    /// The queue's first observation still in the journal (service clock): its oldest usage
    /// sample or the first sighting of its oldest job; `None` when nothing of it is recorded.
    /// History begins here: a window that starts earlier would average over time nobody saw.
    pub fn first_observed_at(&self, queue: &str) -> Result<Option<Millis>, JournalError> {
        let [name, source] = key_params(queue);
        self.scalar(
            "SELECT MIN(m) FROM (
               SELECT MIN(at) AS m FROM usage_samples WHERE queue = ?1 AND source = ?2
               UNION ALL SELECT MIN(first_seen_at) FROM jobs WHERE queue = ?1 AND source = ?2)
             AS firsts",
            &vals![name, source],
        )
    }

    /// Jobs of a queue seen at or after `since` (service clock), oldest first.
    pub fn jobs(&self, queue: &str, since: Millis) -> Result<Vec<JobRecord>, JournalError> {
        let [name, source] = key_params(queue);
        self.run(|x| {
            x.rows(
                "SELECT job_id, queue, name, share, priority, instance_type, instance_count,
                        created_at, status, first_seen_at, last_seen_at,
                        preemption_retries, checkpoint_ms
                 FROM jobs WHERE queue = ?1 AND source = ?3 AND last_seen_at >= ?2
                 ORDER BY created_at, job_id",
                &vals![name, since, source],
            )?
            .iter()
            .map(|r| {
                Ok(JobRecord {
                    job_id: r.text(0)?,
                    queue: r.text(1)?,
                    name: r.text(2)?,
                    share: r.text(3)?,
                    priority: r.u32(4)?,
                    instance_type: r.text(5)?,
                    instance_count: r.u32(6)?,
                    created_at: r.int(7)?,
                    status: JobStatus::parse(&r.text(8)?),
                    first_seen_at: r.int(9)?,
                    last_seen_at: r.int(10)?,
                    preemption_retries: r.opt_u32(11)?,
                    checkpoint_ms: r.opt_int(12)?.and_then(|c| u64::try_from(c).ok()),
                })
            })
            .collect()
        })
    }

    /// The class tag (`quotatop:class`) of each job of a queue seen at or after `since`
    /// (service clock) that had one; jobs recorded before the journal kept tags have none.
    pub fn class_tags(
        &self,
        queue: &str,
        since: Millis,
    ) -> Result<std::collections::BTreeMap<String, String>, JournalError> {
        let [name, source] = key_params(queue);
        self.run(|x| {
            x.rows(
                "SELECT job_id, class_tag FROM jobs
                 WHERE queue = ?1 AND source = ?3 AND last_seen_at >= ?2
                   AND class_tag IS NOT NULL",
                &vals![name, since, source],
            )?
            .iter()
            .map(|r| Ok((r.text(0)?, r.text(1)?)))
            .collect()
        })
    }

    /// Every recorded transition of a job, in time order.
    pub fn transitions(&self, job_id: &str) -> Result<Vec<Transition>, JournalError> {
        let rows = self.run(|x| {
            x.rows(
                "SELECT job_id, kind, attempt, at, exact, reason FROM transitions WHERE job_id = ?1
                 ORDER BY at, kind",
                &vals![job_id],
            )?
            .iter()
            .map(|r| {
                Ok((
                    r.text(0)?,
                    r.text(1)?,
                    r.text(2)?,
                    r.int(3)?,
                    r.boolean(4)?,
                    r.text(5)?,
                ))
            })
            .collect::<Result<Vec<_>, DbError>>()
        })?;
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
        self.run(|x| {
            x.rows(
                "SELECT taken_at FROM snapshots WHERE taken_at BETWEEN ?1 AND ?2 ORDER BY taken_at",
                &vals![from, to],
            )?
            .iter()
            .map(|r| r.int(0))
            .collect()
        })
    }

    /// The stored snapshot in force at `t`: the newest taken at or before it.
    pub fn snapshot_at(&self, t: Millis) -> Result<Option<Snapshot>, JournalError> {
        let blob = self.run(|x| {
            x.row(
                "SELECT data FROM snapshots WHERE taken_at <= ?1 ORDER BY taken_at DESC LIMIT 1",
                &vals![t],
            )?
            .map(|r| r.blob(0))
            .transpose()
        })?;
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
        let [name, source] = key_params(queue);
        self.run(|x| {
            x.rows(
                "SELECT share, instance_type, at, used, share_limit, borrowed, lent FROM usage_samples
                 WHERE queue = ?1 AND source = ?5 AND share = ?2 AND at BETWEEN ?3 AND ?4
                 ORDER BY at, instance_type",
                &vals![name, share, from, to, source],
            )?
            .iter()
            .map(|r| {
                Ok(UsageSample {
                    share: r.text(0)?,
                    instance_type: r.text(1)?,
                    at: r.int(2)?,
                    used: r.u32(3)?,
                    limit: r.u32(4)?,
                    borrowed: r.u32(5)?,
                    lent: r.u32(6)?,
                })
            })
            .collect()
        })
    }

    /// Priority changes the poller saw in the window (operator unknown: the API does not say
    /// who; the audit log does).
    pub fn priority_changes(
        &self,
        queue: &str,
        window: Window,
    ) -> Result<Vec<PriorityChange>, JournalError> {
        let [name, source] = key_params(queue);
        self.run(|x| {
            x.rows(
                "SELECT p.observed_at, p.job_id, j.share, p.old, p.new FROM priority_changes p
                 JOIN jobs j ON j.job_id = p.job_id
                 WHERE j.queue = ?1 AND j.source = ?4 AND p.observed_at >= ?2 AND p.observed_at < ?3
                 ORDER BY p.observed_at",
                &vals![name, window.start, window.end, source],
            )?
            .iter()
            .map(|r| {
                Ok(PriorityChange {
                    at: r.int(0)?,
                    job_id: r.text(1)?,
                    share: r.text(2)?,
                    operator: None,
                    old: r.u32(3)?,
                    new: r.u32(4)?,
                    change_record: None,
                })
            })
            .collect()
        })
    }

    /// Every job of `queue` the journal saw preempted at or after `since` (service clock),
    /// with all its recorded preempted attempts: the Preemptions screen's history beyond the
    /// API's window of recent attempts. An attempt's start is its `started`/`resumed`
    /// transition (else its `scheduled` one, else unknown: counted, with no loss). Attempts
    /// Batch's preemption events named (`record --events-queue`) are joined in with their
    /// true start and stop ([`quotatop_analysis::with_event_attempts`]).
    pub fn preempted_jobs(
        &self,
        queue: &str,
        since: Millis,
    ) -> Result<Vec<RecordedPreemptions>, JournalError> {
        let [name, source] = key_params(queue);
        let jobs = self.run(|x| {
            x.rows(
                "SELECT job_id, name, share, priority, instance_type, instance_count, status
                 FROM jobs WHERE queue = ?1 AND source = ?3 AND job_id IN
                   (SELECT job_id FROM transitions WHERE kind = 'preempted' AND at >= ?2)
                 ORDER BY job_id",
                &vals![name, since, source],
            )?
            .iter()
            .map(|r| {
                Ok((
                    r.text(0)?,
                    r.text(1)?,
                    r.text(2)?,
                    r.u32(3)?,
                    r.text(4)?,
                    r.u32(5)?,
                    r.text(6)?,
                ))
            })
            .collect::<Result<Vec<_>, DbError>>()
        })?;
        let from_events = self.event_attempts()?;
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
            let mut r = RecordedPreemptions {
                job_id,
                name,
                share,
                status,
                instance_type,
                instance_count,
                priority,
                attempts,
                from_events: 0,
            };
            if let Some(named) = from_events.get(&r.job_id) {
                quotatop_analysis::with_event_attempts(&mut r, named);
            }
            out.push(r);
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
        self.scalar(sql, &vals![t])
    }

    /// How many stored snapshots were taken at or before `t`, and how many there are.
    pub fn snapshot_position(&self, t: Millis) -> Result<(usize, usize), JournalError> {
        let (before, all) = self.run(|x| {
            x.row(
                "SELECT (SELECT COUNT(*) FROM snapshots WHERE taken_at <= ?1),
                        (SELECT COUNT(*) FROM snapshots)",
                &vals![t],
            )?
            .map(|r| Ok((r.int(0)?, r.int(1)?)))
            .transpose()
            .map(Option::unwrap_or_default)
        })?;
        Ok((before as usize, all as usize))
    }

    /// The last `per_series` usage samples of every share and instance type of `queue` taken
    /// at or before `until` (service clock), oldest first: a past view's sparklines.
    pub fn usage_until(
        &self,
        queue: &str,
        until: Millis,
        per_series: usize,
    ) -> Result<BTreeMap<(String, String), Vec<u32>>, JournalError> {
        let [name, source] = key_params(queue);
        let rows = self.run(|x| {
            x.rows(
                "SELECT share, instance_type, used FROM (
                   SELECT share, instance_type, at, used,
                          ROW_NUMBER() OVER (PARTITION BY share, instance_type ORDER BY at DESC) AS n
                   FROM usage_samples WHERE queue = ?1 AND source = ?4 AND at <= ?2) AS recent
                 WHERE n <= ?3 ORDER BY share, instance_type, at",
                &vals![name, until, per_series as i64, source],
            )?
            .iter()
            .map(|r| Ok((r.text(0)?, r.text(1)?, r.u32(2)?)))
            .collect::<Result<Vec<_>, DbError>>()
        })?;
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
