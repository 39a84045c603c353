//! RUNNABLE jobs in dispatch order, with positions and waiting times.
//!
//! Order: the service's own `frontOfQueue` first (GetJobQueueSnapshot lists the first 100
//! RUNNABLE jobs in dispatch order); the jobs it does not list follow by priority (highest
//! first; jobs not yet described, whose priority is unknown, after those with a known one), then
//! oldest first. Jobs stuck with a `MISCONFIGURATION` reason never dispatch: they come last.
//!
//! Waiting time runs from the moment the job last became RUNNABLE as far as the API shows it:
//! its most recent preempted attempt's stop, else its creation.

use std::cmp::Reverse;
use std::collections::HashMap;

use quotatop_model::{JobStatus, Millis, QueueSnapshot, TrackedJob};

/// A RUNNABLE job and its place in the queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedJob {
    pub job_id: String,
    pub name: String,
    pub share: String,
    /// `None` until the job has been described.
    pub priority: Option<u32>,
    pub instance_type: String,
    pub instance_count: u32,
    /// 1-based position in the whole queue.
    pub queue_position: usize,
    /// 1-based position within its share.
    pub share_position: usize,
    /// When it (last) became RUNNABLE, as far as the API shows.
    pub waiting_since: Millis,
    /// `now - waiting_since` when "now" is known.
    pub waiting_ms: Option<Millis>,
    /// When the service says the job reached its current position (front of queue only).
    pub at_position_since: Option<Millis>,
    pub misconfigured: bool,
    pub reason: Option<String>,
}

fn is_misconfigured(j: &TrackedJob) -> bool {
    j.job.misconfiguration().is_some()
}

fn waiting_since(j: &TrackedJob) -> Millis {
    let preempted = j.job.preemption.as_ref().and_then(|p| {
        p.recent_preempted_attempts
            .iter()
            .map(|a| a.stopped_at)
            .max()
    });
    preempted.map_or(j.job.created_at, |t| t.max(j.job.created_at))
}

/// Every RUNNABLE job of the queue in dispatch order.
pub fn dispatch_order(q: &QueueSnapshot) -> Vec<QueuedJob> {
    let now = super::now_of(q);
    let front: HashMap<&str, (usize, Option<Millis>)> = q
        .front_of_queue
        .iter()
        .enumerate()
        .map(|(i, f)| (f.job_arn.as_str(), (i, f.earliest_time_at_position)))
        .collect();
    let mut runnable: Vec<&TrackedJob> = q
        .jobs
        .iter()
        .filter(|j| j.job.status == JobStatus::Runnable)
        .collect();
    // Each key once per job, not per comparison (it hashes the ARN): at 50,000 jobs the
    // console derives this every refresh.
    runnable.sort_by_cached_key(|j| {
        let listed = front.get(j.arn.as_str()).map(|f| f.0);
        (
            is_misconfigured(j),
            listed.is_none(),
            listed.unwrap_or(0),
            j.described_at.is_none(),
            Reverse(j.job.priority),
            j.job.created_at,
            j.job.id.as_str(),
        )
    });
    let mut per_share: HashMap<&str, usize> = HashMap::new();
    runnable
        .iter()
        .enumerate()
        .map(|(i, j)| {
            let pos = per_share.entry(j.job.share.as_str()).or_insert(0);
            *pos += 1;
            let since = waiting_since(j);
            QueuedJob {
                job_id: j.job.id.clone(),
                name: j.job.name.clone(),
                share: j.job.share.clone(),
                priority: j.described_at.map(|_| j.job.priority),
                instance_type: j.job.instance_type.clone(),
                instance_count: j.job.instance_count,
                queue_position: i + 1,
                share_position: *pos,
                waiting_since: since,
                waiting_ms: now.map(|n| (n - since).max(0)),
                at_position_since: front.get(j.arn.as_str()).and_then(|f| f.1),
                misconfigured: is_misconfigured(j),
                reason: j.job.status_reason.clone(),
            }
        })
        .collect()
}

/// The RUNNABLE jobs of one share in dispatch order.
pub fn share_queue(q: &QueueSnapshot, share: &str) -> Vec<QueuedJob> {
    dispatch_order(q)
        .into_iter()
        .filter(|j| j.share == share)
        .collect()
}

/// Jobs holding capacity (SCHEDULED, STARTING, RUNNING), of one share or all, longest-running
/// first.
pub fn running_jobs<'a>(q: &'a QueueSnapshot, share: Option<&str>) -> Vec<&'a TrackedJob> {
    let mut jobs: Vec<&TrackedJob> = q
        .jobs
        .iter()
        .filter(|j| j.job.status.holds_capacity() && share.is_none_or(|s| j.job.share == s))
        .collect();
    jobs.sort_by_key(|j| {
        (
            quotatop_model::attempt_start(j.job.started_at, j.job.scheduled_at)
                .unwrap_or(Millis::MAX),
            j.job.id.as_str(),
        )
    });
    jobs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture::{job, queue};
    use quotatop_model::{FrontEntry, PreemptedAttempt, PreemptionSummary, SharingConfig};

    const M5: &str = "ml.m5.xlarge";

    fn q() -> QueueSnapshot {
        let mut q = queue(&[
            ("a", M5, 2, SharingConfig::reserve()),
            ("b", M5, 2, SharingConfig::lend()),
        ]);
        q.jobs = vec![
            job("a-low-old", "a", M5, 1, JobStatus::Runnable, 1, 100),
            job("a-high", "a", M5, 1, JobStatus::Runnable, 9, 300),
            job("b-mid", "b", M5, 1, JobStatus::Runnable, 5, 200),
            job("a-low-new", "a", M5, 1, JobStatus::Runnable, 1, 400),
            job("a-running", "a", M5, 2, JobStatus::Running, 1, 50),
        ];
        q
    }

    #[test]
    fn without_front_of_queue_orders_by_priority_then_age() {
        let order = dispatch_order(&q());
        let names: Vec<&str> = order.iter().map(|j| j.name.as_str()).collect();
        assert_eq!(names, vec!["a-high", "b-mid", "a-low-old", "a-low-new"]);
        let shares: Vec<usize> = order.iter().map(|j| j.share_position).collect();
        assert_eq!(shares, vec![1, 1, 2, 3]);
        assert_eq!(order[2].waiting_ms, Some(1_000_000 - 100));
        assert_eq!(
            share_queue(&q(), "a")
                .iter()
                .map(|j| j.queue_position)
                .collect::<Vec<_>>(),
            vec![1, 3, 4]
        );
    }

    #[test]
    fn front_of_queue_wins_and_unknown_priority_and_misconfigured_go_last() {
        let mut q = q();
        q.front_of_queue = vec![FrontEntry {
            job_arn: q.jobs[3].arn.clone(),
            earliest_time_at_position: Some(900_000),
        }];
        q.jobs[1].described_at = None;
        std::sync::Arc::make_mut(&mut q.jobs[2].job).status_reason =
            Some("MISCONFIGURATION:QUOTA_MANAGEMENT_LIMIT_EXCEEDED - x".into());
        let order = dispatch_order(&q);
        let names: Vec<&str> = order.iter().map(|j| j.name.as_str()).collect();
        assert_eq!(names, vec!["a-low-new", "a-low-old", "a-high", "b-mid"]);
        assert_eq!(order[0].at_position_since, Some(900_000));
        assert_eq!(order[2].priority, None);
        assert!(order[3].misconfigured);
    }

    #[test]
    fn waiting_restarts_at_the_last_preemption() {
        let mut q = q();
        std::sync::Arc::make_mut(&mut q.jobs[0].job).preemption = Some(PreemptionSummary {
            preempted_attempt_count: 2,
            recent_preempted_attempts: vec![
                PreemptedAttempt {
                    resource_id: "r2".into(),
                    started_at: Some(500),
                    stopped_at: 700_000,
                    status_reason: "x".into(),
                },
                PreemptedAttempt {
                    resource_id: "r1".into(),
                    started_at: Some(150),
                    stopped_at: 400,
                    status_reason: "x".into(),
                },
            ],
        });
        let j = dispatch_order(&q)
            .into_iter()
            .find(|j| j.name == "a-low-old")
            .unwrap();
        assert_eq!(j.waiting_since, 700_000);
        assert_eq!(j.waiting_ms, Some(300_000));
    }

    #[test]
    fn running_jobs_of_a_share() {
        let q = q();
        let names: Vec<&str> = running_jobs(&q, Some("a"))
            .iter()
            .map(|j| j.job.name.as_str())
            .collect();
        assert_eq!(names, vec!["a-running"]);
        assert!(running_jobs(&q, Some("b")).is_empty());
    }
}
