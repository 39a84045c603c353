//! Batch's events applied to the poller's state (`record --events-queue`): the jobs the events
//! name are described at once ([`Poller::describe_named`]) and their snapshot sent, so the
//! full listing is only a periodic reconciliation ([`super::PollConfig::reconcile_every`]).
//! What a reconciliation finds changed that no event told is a *suspect*: it is excused when
//! an event names the job within [`EXCUSE_WITHIN`] (delivery is late or out of order, not
//! lost), else counted as missed ([`quotatop_model::PollHealth::events_missed`]) and logged.

use std::time::Duration;

use futures_util::StreamExt;
use tokio::time::Instant;

use crate::batch::{BatchClient, ErrorKind};
use quotatop_model::{JobStatus, ServiceJob, Snapshot, wall_clock_ms};

use super::{Poller, QueueTracker, assess};

/// How long after a reconciliation found a change an event naming the job still excuses it.
pub const EXCUSE_WITHIN: Duration = Duration::from_secs(20);

/// A change a reconciliation found that no event has told yet.
#[derive(Debug, Clone)]
pub(super) struct Suspect {
    job: String,
    what: String,
    found: Instant,
}

impl Poller {
    /// Whether the full listing is a reconciliation (events are applied between them).
    pub(super) fn reconciling(&self) -> bool {
        self.config.reconcile_every.is_some()
    }

    /// Before a full refresh: each queue listed completely before notes what its describes
    /// find changed (a first listing finds everything new, and no event was due for it).
    pub(super) fn watch_for_missed(&mut self) {
        let on = self.reconciling();
        for t in &mut self.trackers {
            let listed = t.listed_once();
            t.watch(on && listed);
        }
    }

    /// After a full refresh: what it found changed becomes suspects; watching stops.
    pub(super) fn take_suspects(&mut self) {
        let now = Instant::now();
        for t in &mut self.trackers {
            t.watch(false);
            for (job, what) in t.take_found() {
                self.suspects.push(Suspect {
                    job,
                    what,
                    found: now,
                });
            }
        }
    }

    /// Suspects no event excused within [`EXCUSE_WITHIN`] are counted missed (and logged);
    /// returns how many were.
    pub(super) fn settle(&mut self) -> u64 {
        let now = Instant::now();
        let (due, keep): (Vec<Suspect>, Vec<Suspect>) = std::mem::take(&mut self.suspects)
            .into_iter()
            .partition(|s| now.duration_since(s.found) >= EXCUSE_WITHIN);
        self.suspects = keep;
        for s in &due {
            tracing::warn!(
                job = %s.job,
                missed = %s.what,
                "an event missed: the reconciliation found this change and no event told it"
            );
        }
        let n = due.len() as u64;
        self.missed += n;
        n
    }

    /// When the oldest suspect is due to be settled.
    pub(super) fn next_settle(&self) -> Option<Instant> {
        self.suspects.iter().map(|s| s.found + EXCUSE_WITHIN).min()
    }

    /// Describes the jobs `ids` that events named (each once, side by side under the
    /// configured concurrency), applies what they say to the queue that tracks the job (or
    /// whose ARN or name its `jobQueue` gives: a job no listing showed yet), forgets a job the
    /// service no longer knows, excuses the suspects they name, and returns the snapshot.
    pub async fn describe_named(&mut self, client: &BatchClient, mut ids: Vec<String>) -> Snapshot {
        ids.sort();
        ids.dedup();
        ids.retain(|id| !id.is_empty());
        self.suspects.retain(|s| !ids.contains(&s.job));
        let concurrency = self.config.concurrency.max(1);
        let answers: Vec<_> = futures_util::stream::iter(ids.clone())
            .map(|id| async move { (id.clone(), client.describe_service_job(&id).await) })
            .buffer_unordered(concurrency)
            .collect()
            .await;
        let calls = answers.len();
        let mut errors = Vec::new();
        let now = wall_clock_ms();
        for (id, answer) in answers {
            match answer {
                Ok(d) => {
                    let at = self.trackers.iter().position(|t| t.has(&id)).or_else(|| {
                        self.trackers
                            .iter()
                            .position(|t| t.arn() == d.queue || t.name() == d.queue)
                    });
                    if let Some(t) = at.and_then(|i| self.trackers.get_mut(i)) {
                        t.tick_clock(now);
                        t.apply_described(d, now);
                    }
                }
                Err(e) if e.kind() == ErrorKind::NotFound => {
                    self.trackers.iter_mut().for_each(|t| t.forget(&id));
                }
                Err(e) => errors.push(e),
            }
        }
        self.settle();
        let mut health = assess(&errors, calls, client.stats().last_minute());
        // A handful of describes says little of the poller's health: the last full refresh's
        // state stands unless these failed.
        if errors.is_empty() {
            health.state = self.last_health;
        }
        health.describe_rate = self.pace.limit();
        self.snapshot_now(client, health)
    }

    /// The trackers' state as the next snapshot, with `health` and the count of missed events.
    pub(super) fn snapshot_now(
        &mut self,
        client: &BatchClient,
        mut health: quotatop_model::PollHealth,
    ) -> Snapshot {
        health.events_missed = self.missed;
        self.sequence += 1;
        Snapshot {
            taken_at: wall_clock_ms(),
            sequence: self.sequence,
            source: client.source().clone(),
            queues: self.trackers.iter().map(QueueTracker::snapshot).collect(),
            health,
            sources: Vec::new(),
        }
    }
}

/// What a describe shows changed that the poller's state did not have: a job never described
/// (`before` is `None`), its status, its number of attempts or preemptions, its priority.
pub(super) fn missed_change(before: Option<&ServiceJob>, now: &ServiceJob) -> Option<String> {
    let Some(b) = before else {
        // No event is sent for a submission: a job still SUBMITTED was not missed.
        return (now.status != JobStatus::Submitted)
            .then(|| format!("a job ({})", now.status.as_str()));
    };
    let preempted = |j: &ServiceJob| j.preemption.as_ref().map(|p| p.preempted_attempt_count);
    if b.status != now.status {
        Some(format!(
            "status {} -> {}",
            b.status.as_str(),
            now.status.as_str()
        ))
    } else if b.attempts.len() != now.attempts.len() || preempted(b) != preempted(now) {
        Some(format!(
            "attempts {} -> {}",
            b.attempts.len(),
            now.attempts.len()
        ))
    } else if b.priority != now.priority {
        Some(format!("priority {} -> {}", b.priority, now.priority))
    } else {
        None
    }
}
