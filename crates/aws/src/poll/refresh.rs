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

use std::collections::{HashSet, VecDeque};
use std::time::Duration;

use futures_util::future::BoxFuture;
use futures_util::stream::{FuturesUnordered, StreamExt};
use tokio::time::Instant;

use crate::batch::{BatchClient, BatchError, DescribedJob, ErrorKind, JobPage};
use quotatop_model::{JobStatus, Millis};

use super::listing::{After, Listings};
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

enum Done {
    Page(usize, Result<JobPage, BatchError>),
    /// The job, whether it was a must (not a rolling describe), and the answer.
    Described(String, bool, Box<Result<DescribedJob, BatchError>>),
}

fn deadline_error(cut: usize, deadline_for: Duration) -> BatchError {
    BatchError::Other {
        op: crate::batch::Op::Refresh,
        message: format!(
            "{cut} calls did not finish within the refresh deadline of {:.1} s",
            deadline_for.as_secs_f64()
        ),
    }
}

/// The describes to make, in order, without repeats.
#[derive(Default)]
struct Queue {
    todo: VecDeque<(String, Reason)>,
    /// Queued or started this refresh.
    known: HashSet<String>,
    /// Of `todo`, the musts (new, changed, vanished: not rolling).
    musts: usize,
}

impl Queue {
    fn push(&mut self, id: String, reason: Reason, front: bool) {
        if self.known.insert(id.clone()) {
            self.musts += usize::from(reason != Reason::Rolling);
            if front {
                self.todo.push_front((id, reason));
            } else {
                self.todo.push_back((id, reason));
            }
        }
    }

    fn pop(&mut self) -> Option<(String, Reason)> {
        let next = self.todo.pop_front()?;
        self.musts -= usize::from(next.1 != Reason::Rolling);
        Some(next)
    }

    fn musts(&self) -> usize {
        self.musts
    }
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
/// Long on purpose: one event loop (fill the free slots, wait for an answer or a deadline,
/// merge it, maybe emit) whose dozen counters and flags every step reads and writes; split, each
/// piece would take most of them by `&mut` and the order of the steps would no longer be read
/// in one place.
#[expect(
    clippy::too_many_lines,
    reason = "one event loop over state every step shares: see above"
)]
pub async fn refresh_jobs(
    client: &BatchClient,
    trackers: &mut [QueueTracker],
    i: usize,
    bounds: Bounds,
    mut emit: Option<&mut Emit<'_>>,
    mut out: Outcome,
) -> Outcome {
    let Bounds {
        settings: s,
        deadline,
        hard,
        now,
    } = bounds;
    let Some(t) = trackers.get_mut(i) else {
        return out;
    };
    let deadline_for = hard.saturating_duration_since(Instant::now());
    let arn = t.arn().to_string();
    let ranks_by_arn = t.front_ranks_by_arn();
    // The backlog: jobs an earlier listing showed new or changed, not described yet.
    let mut queue = Queue::default();
    {
        let ranks = t.front_ranks();
        for (id, reason) in plan::plan(&t.facts(&ranks), 0) {
            if matches!(reason, Reason::New | Reason::Changed) {
                queue.push(id, reason, false);
            }
        }
    }
    t.begin_listing();
    let mut listings = Listings::plan(
        |st| t.jobs_last_listed(st),
        t.share_names(),
        s.finished_limit,
    );

    let limit = s.concurrency.max(1);
    let mut inflight: FuturesUnordered<BoxFuture<'_, Done>> = FuturesUnordered::new();
    let (mut pages, mut musts_inflight) = (0usize, 0usize);
    // Whether this refresh's musts are all answered and the listing done (a complete view,
    // unless a describe failed): shown at once when rolling describes remain, not at the next
    // progress tick or the end of the refresh.
    let mut settled = false;
    let mut started = 0usize;
    let mut answered = 0u32;
    let mut listing_done = false;
    let mut listing_complete = false;
    let mut next_progress = Instant::now() + PROGRESS_EVERY;
    // A queue that showed no job yet shows its first listed ones at once (one snapshot more).
    let mut first_jobs = t.job_count() == 0;
    let mut first_describe: Option<Instant> = None;
    let mut last_answer: Option<Instant> = None;
    let wire_start = std::time::Instant::now();
    let mut cut = 0;
    loop {
        let at = Instant::now();
        if !listing_done && listings.idle() && pages == 0 {
            // The listings are complete (or failed): what moved on is known now, and the rest
            // of the plan follows.
            listing_done = true;
            let listed = listings.complete();
            let complete = ACTIVE.iter().all(|st| listed.contains(st));
            listing_complete = complete;
            if let Some(t) = trackers.get_mut(i) {
                t.end_listing(&listed, complete);
                let ranks = t.front_ranks();
                for (id, reason) in plan::plan(&t.facts(&ranks), s.budget) {
                    queue.push(id, reason, false);
                }
            }
        }
        let may_describe =
            |started: usize, at: Instant| at < deadline && s.cap.is_none_or(|c| started < c);
        // Fill the free slots: listings and describes share them (half each while both wait).
        while inflight.len() < limit {
            let describe_now = !queue.todo.is_empty() && may_describe(started, at);
            if !listings.ready.is_empty() && (!describe_now || pages < limit.div_ceil(2)) {
                let Some(ci) = listings.ready.pop_front() else {
                    break;
                };
                let Some(c) = listings.chains.get(ci).cloned() else {
                    continue;
                };
                let arn = arn.clone();
                pages += 1;
                out.calls += 1;
                inflight.push(Box::pin(async move {
                    let r = client
                        .list_service_jobs_page(
                            &arn,
                            c.status,
                            c.share.as_deref(),
                            c.page_size(),
                            c.token.clone(),
                        )
                        .await;
                    Done::Page(ci, r)
                }));
            } else if describe_now {
                let Some((id, reason)) = queue.pop() else {
                    break;
                };
                let must = reason != Reason::Rolling;
                musts_inflight += usize::from(must);
                started += 1;
                out.calls += 1;
                first_describe.get_or_insert(at);
                inflight.push(Box::pin(async move {
                    let r = client.describe_service_job(&id).await;
                    Done::Described(id, must, Box::new(r))
                }));
            } else {
                break;
            }
        }
        let more = !queue.todo.is_empty() && may_describe(started, at);
        if inflight.is_empty() && listing_done && !more {
            break;
        }
        let mut wake = hard;
        if emit.is_some() {
            wake = wake.min(next_progress);
        }
        if more {
            wake = wake.min(deadline.max(at));
        }
        let done = tokio::select! {
            d = inflight.next(), if !inflight.is_empty() => d,
            _ = tokio::time::sleep_until(wake) => None,
        };
        let at = Instant::now();
        match done {
            Some(Done::Page(ci, r)) => {
                pages = pages.saturating_sub(1);
                match r {
                    Ok(page) => {
                        let Some(t) = trackers.get_mut(i) else { break };
                        let mut jobs = page.jobs;
                        if let Some(l) = listings.chains.get(ci).and_then(|c| c.limit) {
                            let got = listings.chains.get(ci).map_or(0, |c| c.got);
                            jobs.truncate(l.saturating_sub(got));
                        }
                        let n = jobs.len();
                        let todo = t.merge_page(jobs, now());
                        // Newly listed jobs are described as they come, the front first.
                        let mut ranked: Vec<(usize, String)> = Vec::new();
                        for id in todo {
                            let rank = t.arn_of(&id).and_then(|a| ranks_by_arn.get(a)).copied();
                            match rank {
                                Some(r) => ranked.push((r, id)),
                                None => queue.push(id, Reason::New, false),
                            }
                        }
                        ranked.sort();
                        for (_, id) in ranked.into_iter().rev() {
                            queue.push(id, Reason::New, true);
                        }
                        match listings.page(ci, n, page.next_token) {
                            Err(e) => out.errors.push(e),
                            Ok(After::Forked) => {
                                tracing::debug!(queue = %arn, "listing a big status by quota share");
                            }
                            // Jobs of what this chain completed that it did not show moved on:
                            // described now, while the other chains list.
                            Ok(After::Done) => {
                                if let Some((status, share)) = listings.ended(ci) {
                                    for id in t.unlisted(status, share.as_deref()) {
                                        queue.push(id, Reason::Vanished, false);
                                    }
                                }
                            }
                            Ok(After::Next) => {}
                        }
                    }
                    Err(e) => {
                        listings.failed(ci);
                        out.errors.push(e);
                    }
                }
            }
            Some(Done::Described(id, must, r)) => {
                musts_inflight -= usize::from(must);
                last_answer = Some(at);
                let Some(t) = trackers.get_mut(i) else { break };
                match *r {
                    Ok(d) => {
                        answered += 1;
                        t.apply_described(d, now());
                    }
                    Err(e) if e.kind() == ErrorKind::NotFound => {
                        answered += 1;
                        t.forget(&id);
                    }
                    Err(e) => out.errors.push(e),
                }
            }
            None => {}
        }
        if at >= hard {
            cut = inflight.len() + listings.ready.len();
            break;
        }
        let first_listed = first_jobs && trackers.get(i).is_some_and(|t| t.job_count() > 0);
        let just_settled = !settled && listing_done && queue.musts() + musts_inflight == 0;
        settled |= just_settled;
        let work_left = !inflight.is_empty() || !queue.todo.is_empty();
        if let Some(emit) = emit.as_mut()
            && (at >= next_progress || first_listed || (just_settled && work_left))
        {
            first_jobs = false;
            next_progress = at + PROGRESS_EVERY;
            let rate = first_describe
                .map(|f| at.saturating_duration_since(f).as_secs_f64())
                .filter(|e| *e > 0.0 && answered > 0)
                .map(|e| f64::from(answered) / e);
            emit(
                trackers,
                Progress {
                    pending: queue.musts() + musts_inflight,
                    rate,
                },
            );
        }
    }
    drop(inflight);
    if cut > 0 {
        out.errors.push(deadline_error(cut, deadline_for));
    }
    let Some(t) = trackers.get_mut(i) else {
        return out;
    };
    if !listing_done {
        // Cut by the hard limit: the statuses whose listing completed are merged as usual.
        let listed = listings.complete();
        t.end_listing(&listed, false);
    }
    out.pending = queue.musts();
    out.describes = started;
    let wire = client.stats().since(wire_start);
    out.phase = Phase {
        ok: answered,
        throttled: wire.throttled,
        elapsed: match (first_describe, last_answer) {
            (Some(f), Some(l)) => l.saturating_duration_since(f),
            _ => Duration::ZERO,
        },
    };
    t.prune_finished(s.finished_limit);
    let reason = stale_reason(&out, listing_complete);
    t.finish(now(), reason);
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
