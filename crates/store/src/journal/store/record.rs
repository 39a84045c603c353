//! What recording a snapshot writes besides the snapshot itself: queues and their share
//! configurations, jobs and their transitions, usage samples.

use std::collections::HashMap;

use quotatop_analysis::{now_of, share_usage};
use quotatop_model::{JobStatus, Millis, QueueSnapshot, ServiceJob, Snapshot};

use super::blob::encode;
use super::{JournalConfig, RecordStats};
use crate::db::{DbError, Exec, vals};
use crate::journal::diff;

/// What [`Journal::record_all`](super::Journal::record_all) reads and updates besides the
/// database.
pub(super) struct RecordState<'a> {
    pub(super) prev: &'a mut HashMap<String, std::sync::Arc<ServiceJob>>,
    pub(super) last_snapshot: &'a mut Option<Millis>,
    pub(super) last_snapshot_partial: &'a mut bool,
    pub(super) last_usage: &'a mut HashMap<String, Millis>,
    pub(super) config: &'a JournalConfig,
    pub(super) newest_obs: &'a mut Option<Millis>,
}

impl RecordState<'_> {
    pub(super) fn record(
        &mut self,
        tx: &mut dyn Exec,
        snapshots: &[Snapshot],
    ) -> Result<RecordStats, DbError> {
        let mut stats = RecordStats::default();
        // A snapshot loaded from the journal (a warm start) is history already.
        for snap in snapshots.iter().filter(|s| !s.health.from_history) {
            for q in &snap.queues {
                let obs = now_of(q).unwrap_or(snap.taken_at);
                *self.newest_obs = (*self.newest_obs).max(Some(obs));
                write_queue(tx, q, obs)?;
                // A job only listed so far (a partial view: its priority and attempts are not
                // known yet) is journaled once described; its listing alone would record a
                // made-up priority (and a "change" from it) and a completion without its attempt.
                for tj in q.jobs.iter().filter(|tj| tj.described_at.is_some()) {
                    let cur = &tj.job;
                    let prev = self.prev.get(&cur.id).map(|p| &**p);
                    stats.transitions += write_job(tx, q, prev, cur, obs)?;
                    self.prev.insert(cur.id.clone(), cur.clone());
                }
                super::super::training::write(tx, q, obs)?;
                let key = q.key();
                let due = self
                    .last_usage
                    .get(&key)
                    .is_none_or(|&t| obs - t >= self.config.usage_interval_ms);
                if due {
                    stats.usage_samples += write_usage(tx, q, obs)?;
                    self.last_usage.insert(key, obs);
                }
            }
            // A partial snapshot is stored as it was (its undescribed jobs say so), and the
            // first complete one after it is stored whatever the interval, so the newest stored
            // snapshot (a warm start's) is complete as soon as the poller's view is.
            let complete = snap.is_complete();
            let due = self.last_snapshot.is_none_or(|t| {
                snap.taken_at - t >= self.config.snapshot_interval_ms
                    || (complete && *self.last_snapshot_partial)
            });
            if due {
                let blob = encode(snap)?;
                tx.exec(
                    "INSERT INTO snapshots (taken_at, sequence, data) VALUES (?1, ?2, ?3)
                     ON CONFLICT (taken_at) DO UPDATE SET sequence = excluded.sequence,
                       data = excluded.data",
                    &vals![snap.taken_at, snap.sequence as i64, &blob[..]],
                )?;
                *self.last_snapshot = Some(snap.taken_at);
                *self.last_snapshot_partial = !complete;
                stats.snapshots += 1;
            }
        }
        Ok(stats)
    }
}

fn write_queue(tx: &mut dyn Exec, q: &QueueSnapshot, obs: Millis) -> Result<(), DbError> {
    // Plain structs with string keys only: serialising them cannot fail.
    let env = serde_json::to_string(&q.environment).unwrap_or_default();
    let shares = serde_json::to_string(&q.shares).unwrap_or_default();
    tx.exec(
        "INSERT INTO queues (name, environment, shares, last_observed_at, source)
         VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (source, name) DO UPDATE SET environment = excluded.environment,
           shares = excluded.shares,
           last_observed_at = CASE WHEN queues.last_observed_at > excluded.last_observed_at
             THEN queues.last_observed_at ELSE excluded.last_observed_at END",
        &vals![&q.name, &env, &shares, obs, source_column(q)],
    )?;
    // A new row only when the configuration differs from the newest one kept.
    tx.exec(
        "INSERT INTO share_configs (queue, observed_at, environment, shares, source)
         SELECT CAST(?1 AS TEXT), CAST(?4 AS BIGINT), CAST(?2 AS TEXT), CAST(?3 AS TEXT),
                CAST(?5 AS TEXT)
         WHERE NOT EXISTS (
           SELECT 1 FROM share_configs WHERE queue = ?1 AND source = ?5 AND environment = ?2
             AND shares = ?3 AND observed_at = (
               SELECT MAX(observed_at) FROM share_configs WHERE queue = ?1 AND source = ?5))
         ON CONFLICT DO NOTHING",
        &vals![&q.name, &env, &shares, obs, source_column(q)],
    )?;
    Ok(())
}

/// Upserts the job's facts and inserts its new transitions; returns how many were new.
fn write_job(
    tx: &mut dyn Exec,
    queue: &QueueSnapshot,
    prev: Option<&ServiceJob>,
    cur: &ServiceJob,
    obs: Millis,
) -> Result<usize, DbError> {
    let prev_status = match prev {
        Some(p) => Some(p.status),
        None => tx
            .row("SELECT status FROM jobs WHERE job_id = ?1", &vals![&cur.id])?
            .map(|r| r.text(0))
            .transpose()?
            .and_then(|s| JobStatus::parse(&s)),
    };
    tx.exec(
        "INSERT INTO jobs (job_id, queue, name, share, priority, instance_type, instance_count,
                           created_at, status, first_seen_at, last_seen_at,
                           preemption_retries, checkpoint_ms, source, class_tag)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10, ?11, ?12, ?13, ?14)
         ON CONFLICT (job_id) DO UPDATE SET status = excluded.status,
           last_seen_at = CASE WHEN jobs.last_seen_at > excluded.last_seen_at
             THEN jobs.last_seen_at ELSE excluded.last_seen_at END,
           priority = excluded.priority,
           preemption_retries = excluded.preemption_retries,
           checkpoint_ms = excluded.checkpoint_ms,
           class_tag = COALESCE(excluded.class_tag, jobs.class_tag)",
        &vals![
            &cur.id,
            &queue.name,
            &cur.name,
            &cur.share,
            cur.priority,
            &cur.instance_type,
            cur.instance_count,
            cur.created_at,
            cur.status.as_str(),
            obs,
            cur.preemption_retries,
            cur.checkpoint_interval_ms
                .and_then(|c| i64::try_from(c).ok()),
            source_column(queue),
            cur.class_tag.as_deref(),
        ],
    )?;
    if let Some(p) = prev
        && p.priority != cur.priority
    {
        tx.exec(
            "INSERT INTO priority_changes (job_id, observed_at, old, new) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT DO NOTHING",
            &vals![&cur.id, obs, p.priority, cur.priority],
        )?;
    }
    let mut n = 0;
    for t in diff::transitions_after(prev, prev_status, cur, obs) {
        n += tx.exec(
            "INSERT INTO transitions (job_id, kind, attempt, at, exact, observed_at, reason)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT DO NOTHING",
            &vals![
                &t.job_id,
                t.kind.as_str(),
                &t.attempt,
                t.at,
                t.exact,
                obs,
                &t.reason
            ],
        )?;
    }
    Ok(n)
}

fn write_usage(tx: &mut dyn Exec, q: &QueueSnapshot, obs: Millis) -> Result<usize, DbError> {
    let mut n = 0;
    for u in share_usage(q) {
        n += tx.exec(
            "INSERT INTO usage_samples (queue, share, instance_type, at, used, share_limit,
                                        borrowed, lent, source)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
             ON CONFLICT (source, queue, share, instance_type, at) DO UPDATE SET
               used = excluded.used, share_limit = excluded.share_limit,
               borrowed = excluded.borrowed, lent = excluded.lent",
            &vals![
                &q.name,
                &u.share,
                &u.instance_type,
                obs,
                u.used,
                u.limit,
                u.borrowed,
                u.lent,
                source_column(q)
            ],
        )?;
    }
    Ok(n)
}

/// The journal's `source` column of a queue: its `[[sources]]` name, '' for the implicit one.
fn source_column(q: &QueueSnapshot) -> &str {
    q.source.as_deref().unwrap_or("")
}
