//! One refresh of one queue: the listings (ListQuotaShares, ListServiceJobs per active status
//! and a bounded page of finished ones, GetJobQueueSnapshot), then the describes the planner
//! picks, all under one concurrency limit. Failures are collected, never raised: the queue
//! keeps its last data and says why it is stale.

use futures_util::future::BoxFuture;
use futures_util::stream::{self, StreamExt};
use tokio::time::Instant;

use crate::batch::{BatchClient, BatchError, ErrorKind, JobSummary, QueueFront};
use crate::model::{JobStatus, Millis, QuotaShare};

use super::pace::Phase;
use super::plan::{self, Reason};
use super::tracker::QueueTracker;

/// Statuses of jobs that are not finished.
pub const ACTIVE: [JobStatus; 6] = [
    JobStatus::Submitted,
    JobStatus::Pending,
    JobStatus::Runnable,
    JobStatus::Scheduled,
    JobStatus::Starting,
    JobStatus::Running,
];
/// Finished statuses: only their newest page is listed.
pub const FINISHED: [JobStatus; 2] = [JobStatus::Succeeded, JobStatus::Failed];

#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// Rolling describes of unchanged active jobs per refresh.
    pub budget: usize,
    /// Calls in flight at once.
    pub concurrency: usize,
    /// Newest finished jobs listed per finished status (and kept beyond the listing).
    pub finished_limit: usize,
    /// Most describes of any kind this refresh (under a rate limit, [`super::pace::Pace::cap`]);
    /// `None`: no cap, every new, changed and vanished job is described.
    pub cap: Option<usize>,
    /// Describes a second to start at most (the learned rate limit): the describes are spaced
    /// so that they meet the API's bucket as it refills, not all at once.
    pub rate: Option<f64>,
}

/// What a refresh did.
#[derive(Debug, Default)]
pub struct Outcome {
    /// API operations made (each may be several HTTP attempts).
    pub calls: usize,
    pub describes: usize,
    pub errors: Vec<BatchError>,
    /// New, changed and vanished jobs left for later refreshes by the cap.
    pub pending: usize,
    /// What the describes met on the wire.
    pub phase: Phase,
}

enum Listed {
    Shares(Result<Vec<QuotaShare>, BatchError>),
    Jobs(JobStatus, Result<Vec<JobSummary>, BatchError>),
    Front(Result<QueueFront, BatchError>),
}

/// Runs `calls` at most `limit` at a time until all finish or `deadline` passes; calls still
/// running then are dropped (cancelled). Returns the finished results and how many were cut.
async fn bounded<'a, T>(
    calls: Vec<BoxFuture<'a, T>>,
    limit: usize,
    deadline: Instant,
) -> (Vec<T>, usize) {
    let total = calls.len();
    let mut running = stream::iter(calls).buffer_unordered(limit.max(1));
    let mut done = Vec::with_capacity(total);
    loop {
        match tokio::time::timeout_at(deadline, running.next()).await {
            Ok(Some(r)) => done.push(r),
            Ok(None) => break,
            Err(_) => break,
        }
    }
    let cut = total - done.len();
    (done, cut)
}

fn deadline_error(cut: usize, deadline_for: std::time::Duration) -> BatchError {
    BatchError::Other {
        op: "refresh",
        message: format!(
            "{cut} calls did not finish within the refresh deadline of {:.1} s",
            deadline_for.as_secs_f64()
        ),
    }
}

pub async fn refresh_queue(
    client: &BatchClient,
    tracker: &mut QueueTracker,
    s: Settings,
    deadline: Instant,
    rotation: usize,
    now: fn() -> Millis,
) -> Outcome {
    let deadline_for = deadline.saturating_duration_since(Instant::now());
    let mut out = Outcome::default();
    let arn = tracker.arn().to_string();
    let mut calls: Vec<BoxFuture<'_, Listed>> = Vec::new();
    {
        let arn = arn.clone();
        calls.push(Box::pin(async move {
            Listed::Shares(client.list_quota_shares(&arn).await)
        }));
    }
    for status in ACTIVE {
        let arn = arn.clone();
        calls.push(Box::pin(async move {
            Listed::Jobs(status, client.list_service_jobs(&arn, status, None).await)
        }));
    }
    if s.finished_limit > 0 {
        for status in FINISHED {
            let arn = arn.clone();
            let limit = s.finished_limit;
            calls.push(Box::pin(async move {
                Listed::Jobs(
                    status,
                    client.list_service_jobs(&arn, status, Some(limit)).await,
                )
            }));
        }
    }
    {
        let arn = arn.clone();
        calls.push(Box::pin(async move {
            Listed::Front(client.get_job_queue_snapshot(&arn).await)
        }));
    }
    out.calls += calls.len();
    // Start from a different call each refresh, so that when the rate limiter lets only a few
    // through before the deadline, every listing still gets its turn.
    let turn = rotation % calls.len().max(1);
    calls.rotate_left(turn);
    let (results, cut) = bounded(calls, s.concurrency, deadline).await;

    let mut summaries = Vec::new();
    let mut listed: Vec<JobStatus> = Vec::new();
    if cut > 0 {
        out.errors.push(deadline_error(cut, deadline_for));
    }
    for r in results {
        match r {
            Listed::Shares(Ok(shares)) => tracker.set_shares(shares),
            Listed::Front(Ok(front)) => tracker.set_front(front),
            Listed::Jobs(status, Ok(jobs)) => {
                listed.push(status);
                summaries.extend(jobs);
            }
            Listed::Jobs(_, Err(e)) | Listed::Shares(Err(e)) | Listed::Front(Err(e)) => {
                out.errors.push(e)
            }
        }
    }
    let listing_complete = ACTIVE.iter().all(|st| listed.contains(st));
    // Statuses whose listing failed leave their jobs as they were; the others are merged.
    {
        // A job moving between statuses while they were listed shows twice; keep one (the
        // fingerprint mismatch gets it described, which settles it).
        summaries.sort_by(|a, b| a.id.cmp(&b.id));
        summaries.dedup_by(|a, b| a.id == b.id);
        tracker.merge_listing(summaries, &listed, now());
        let ranks = tracker.front_ranks();
        let mut todo = plan::plan(&tracker.facts(&ranks), s.budget);
        if let Some(cap) = s.cap {
            // Musts come first in the plan (front of queue first), so the cap cuts the rolling
            // describes before any of them.
            let musts = todo.iter().filter(|(_, r)| *r != Reason::Rolling).count();
            out.pending = musts.saturating_sub(cap);
            todo.truncate(cap);
        }
        out.calls += todo.len();
        out.describes = todo.len();
        let calls: Vec<BoxFuture<'_, (String, Reason, Result<_, BatchError>)>> = todo
            .into_iter()
            .enumerate()
            .map(|(i, (id, reason))| -> BoxFuture<'_, _> {
                let at = s
                    .rate
                    .map(|r| Instant::now() + std::time::Duration::from_secs_f64(i as f64 / r));
                Box::pin(async move {
                    if let Some(at) = at {
                        tokio::time::sleep_until(at).await;
                    }
                    let r = client.describe_service_job(&id).await;
                    (id, reason, r)
                })
            })
            .collect();
        let started = std::time::Instant::now();
        let (described, cut) = bounded(calls, s.concurrency, deadline).await;
        let wire = client.stats().since(started);
        out.phase = Phase {
            ok: wire.attempts - wire.throttled - wire.failed,
            throttled: wire.throttled,
            elapsed: started.elapsed(),
        };
        if cut > 0 {
            out.errors.push(deadline_error(cut, deadline_for));
        }
        let at = now();
        for (id, _reason, r) in described {
            match r {
                Ok(d) => tracker.apply_described(d, at),
                Err(e) if e.kind() == ErrorKind::NotFound => tracker.forget(&id),
                Err(e) => out.errors.push(e),
            }
        }
        tracker.prune_finished(s.finished_limit);
    }
    let reason = stale_reason(&out, listing_complete);
    tracker.finish(now(), reason);
    out
}

fn stale_reason(out: &Outcome, listing_complete: bool) -> Option<String> {
    let last = out.errors.last()?;
    let n = out.errors.len();
    Some(if listing_complete {
        format!(
            "{n} of {} calls failed, their data is older; last: {last}",
            out.calls
        )
    } else {
        format!(
            "some job listings failed, their jobs show earlier data; {n} of {} calls failed; last: {last}",
            out.calls
        )
    })
}
