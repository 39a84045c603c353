//! One refresh of one queue, in two steps. The early look ([`look`]): ListQuotaShares and
//! GetJobQueueSnapshot, a couple of calls that give the shares, their utilisation and the front
//! of the queue. Then the jobs ([`refresh_jobs`]): the listings, page by page as chains
//! ([`super::listing`]), and the describes the planner picks, all under one concurrency limit
//! and side by side: the describes already known to be due (jobs new or changed in earlier
//! listings, not described yet: a backlog) start at once, newly listed jobs are described as
//! their pages arrive (front of queue first), jobs that left a status (or a share's part of
//! it) are described as soon as that status's (or share's) chain of pages ends, and once the
//! listings are complete the rest of the plan follows (the rolling describes). Describes are started until the
//! refresh's deadline (those in flight then finish); listings go on past it up to a hard limit.
//! Failures are collected, never raised: the queue keeps its last data and says why it is
//! stale.

mod jobs;

use std::time::Duration;

use tokio::time::Instant;

use crate::batch::{BatchClient, BatchError};
use quotatop_model::{JobStatus, Millis};

use super::pace::Phase;
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

/// Progress snapshots of a long refresh come at most this often.
pub const PROGRESS_EVERY: Duration = Duration::from_secs(1);

#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// Rolling describes of unchanged active jobs per refresh.
    pub budget: usize,
    /// Calls in flight at once.
    pub concurrency: usize,
    /// Newest finished jobs listed per finished status (and kept beyond the listing).
    pub finished_limit: usize,
    /// Most describes of any kind this refresh (under a rate limit, [`super::pace::Pace::cap`]);
    /// `None`: describes are started until the deadline.
    pub cap: Option<usize>,
}

/// What a refresh did.
#[derive(Debug, Default)]
pub struct Outcome {
    /// API operations made (each may be several HTTP attempts).
    pub calls: usize,
    pub describes: usize,
    pub errors: Vec<BatchError>,
    /// New, changed and vanished jobs left for later refreshes (by the cap or the deadline).
    pub pending: usize,
    /// What the describes met on the wire.
    pub phase: Phase,
}

/// Where a refresh of the jobs is, for a progress snapshot.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress {
    /// New, changed and vanished jobs known and not described yet.
    pub pending: usize,
    /// Describes a second answered so far in this refresh.
    pub rate: Option<f64>,
}

/// Where a refresh in progress sends what it knows (see [`refresh_jobs`]).
pub type Emit<'a> = dyn FnMut(&[QueueTracker], Progress) + Send + 'a;

/// The early look at a queue: its quota shares and GetJobQueueSnapshot (utilisation, front of
/// the queue and of each share), side by side. Returns the calls made and their errors.
pub async fn look(client: &BatchClient, tracker: &mut QueueTracker) -> (usize, Vec<BatchError>) {
    let arn = tracker.arn().to_string();
    let (shares, front) = tokio::join!(
        client.list_quota_shares(&arn),
        client.get_job_queue_snapshot(&arn)
    );
    let mut errors = Vec::new();
    match shares {
        Ok(s) => tracker.set_shares(s),
        Err(e) => errors.push(e),
    }
    match front {
        Ok(f) => tracker.set_front(f),
        Err(e) => errors.push(e),
    }
    (2, errors)
}

/// What bounds one refresh of a queue's jobs, travelling together from the poller into
/// [`refresh_jobs`].
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    pub settings: Settings,
    /// No describe starts after it.
    pub deadline: Instant,
    /// Whatever is still in flight then is dropped.
    pub hard: Instant,
    /// The clock snapshots are stamped with.
    pub now: fn() -> Millis,
}

/// The listings and describes of `trackers[i]` (see the module's doc), within `bounds`. `emit`
/// gets the trackers at most every [`PROGRESS_EVERY`] while the refresh runs.
///
/// One event loop (fill the free slots, wait for an answer or a deadline, merge it, maybe
/// emit), its state and steps in `refresh/jobs.rs`.
pub async fn refresh_jobs(
    client: &BatchClient,
    trackers: &mut [QueueTracker],
    i: usize,
    bounds: Bounds,
    emit: Option<&mut Emit<'_>>,
    out: Outcome,
) -> Outcome {
    match jobs::JobsRefresh::start(client, trackers, i, bounds, emit, out) {
        Ok(refresh) => refresh.run().await,
        Err(out) => out,
    }
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
