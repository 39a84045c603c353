//! The jobs step of a refresh ([`super::refresh_jobs`]) as the state it carries and one method
//! per step of its event loop: fill the free slots, wait for an answer or a deadline, merge it,
//! maybe emit; then the refresh's outcome.

use std::collections::{HashMap, HashSet, VecDeque};
use std::ops::ControlFlow;
use std::time::Duration;

use futures_util::future::BoxFuture;
use futures_util::stream::{FuturesUnordered, StreamExt};
use tokio::time::Instant;

use crate::batch::{BatchClient, BatchError, DescribedJob, ErrorKind, JobPage};
use quotatop_model::Millis;

use super::super::listing::{After, Listings};
use super::super::pace::Phase;
use super::super::plan::{self, Reason};
use super::super::tracker::QueueTracker;
use super::{ACTIVE, Bounds, Emit, Outcome, PROGRESS_EVERY, Progress, Settings, stale_reason};

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

/// One refresh of `trackers[i]`'s jobs in progress: what every step of its loop reads and
/// writes.
pub(super) struct JobsRefresh<'a, 'e> {
    client: &'a BatchClient,
    trackers: &'a mut [QueueTracker],
    i: usize,
    emit: Option<&'a mut Emit<'e>>,
    out: Outcome,
    s: Settings,
    deadline: Instant,
    hard: Instant,
    now: fn() -> Millis,
    deadline_for: Duration,
    arn: String,
    ranks_by_arn: HashMap<String, usize>,
    queue: Queue,
    listings: Listings,
    limit: usize,
    inflight: FuturesUnordered<BoxFuture<'a, Done>>,
    pages: usize,
    musts_inflight: usize,
    // Whether this refresh's musts are all answered and the listing done (a complete view,
    // unless a describe failed): shown at once when rolling describes remain, not at the next
    // progress tick or the end of the refresh.
    settled: bool,
    started: usize,
    answered: u32,
    listing_done: bool,
    listing_complete: bool,
    next_progress: Instant,
    // A queue that showed no job yet shows its first listed ones at once (one snapshot more).
    first_jobs: bool,
    first_describe: Option<Instant>,
    last_answer: Option<Instant>,
    wire_start: std::time::Instant,
    cut: usize,
}

impl<'a, 'e> JobsRefresh<'a, 'e> {
    /// The refresh of `trackers[i]` begun: the backlog queued, the listings planned; `out`
    /// back when there is no such tracker.
    pub(super) fn start(
        client: &'a BatchClient,
        trackers: &'a mut [QueueTracker],
        i: usize,
        bounds: Bounds,
        emit: Option<&'a mut Emit<'e>>,
        out: Outcome,
    ) -> Result<Self, Outcome> {
        let Bounds {
            settings: s,
            deadline,
            hard,
            now,
        } = bounds;
        let Some(t) = trackers.get_mut(i) else {
            return Err(out);
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
        let listings = Listings::plan(
            |st| t.jobs_last_listed(st),
            t.share_names(),
            s.finished_limit,
        );
        let limit = s.concurrency.max(1);
        let next_progress = Instant::now() + PROGRESS_EVERY;
        let first_jobs = t.job_count() == 0;
        let wire_start = std::time::Instant::now();
        Ok(Self {
            client,
            trackers,
            i,
            emit,
            out,
            s,
            deadline,
            hard,
            now,
            deadline_for,
            arn,
            ranks_by_arn,
            queue,
            listings,
            limit,
            inflight: FuturesUnordered::new(),
            pages: 0,
            musts_inflight: 0,
            settled: false,
            started: 0,
            answered: 0,
            listing_done: false,
            listing_complete: false,
            next_progress,
            first_jobs,
            first_describe: None,
            last_answer: None,
            wire_start,
            cut: 0,
        })
    }

    /// The event loop, its steps in the order they run, then the outcome.
    pub(super) async fn run(mut self) -> Outcome {
        loop {
            let at = Instant::now();
            self.end_listing_if_done();
            self.fill_slots(at);
            let more = !self.queue.todo.is_empty() && self.may_describe(at);
            if self.inflight.is_empty() && self.listing_done && !more {
                break;
            }
            let done = self.next_done(at, more).await;
            let at = Instant::now();
            if self.merge(done, at).is_break() {
                break;
            }
            if at >= self.hard {
                self.cut = self.inflight.len() + self.listings.ready.len();
                break;
            }
            self.maybe_emit(at);
        }
        self.finish()
    }

    /// Whether a describe may start at `at`: before the deadline, under the cap.
    fn may_describe(&self, at: Instant) -> bool {
        at < self.deadline && self.s.cap.is_none_or(|c| self.started < c)
    }

    /// Once the listings are complete (or failed): what moved on is known now, and the rest
    /// of the plan follows.
    fn end_listing_if_done(&mut self) {
        if !self.listing_done && self.listings.idle() && self.pages == 0 {
            self.listing_done = true;
            let listed = self.listings.complete();
            let complete = ACTIVE.iter().all(|st| listed.contains(st));
            self.listing_complete = complete;
            if let Some(t) = self.trackers.get_mut(self.i) {
                t.end_listing(&listed, complete);
                let ranks = t.front_ranks();
                for (id, reason) in plan::plan(&t.facts(&ranks), self.s.budget) {
                    self.queue.push(id, reason, false);
                }
            }
        }
    }

    /// Fills the free slots: listings and describes share them (half each while both wait).
    fn fill_slots(&mut self, at: Instant) {
        let client = self.client;
        while self.inflight.len() < self.limit {
            let describe_now = !self.queue.todo.is_empty() && self.may_describe(at);
            if !self.listings.ready.is_empty()
                && (!describe_now || self.pages < self.limit.div_ceil(2))
            {
                let Some(ci) = self.listings.ready.pop_front() else {
                    break;
                };
                let Some(c) = self.listings.chains.get(ci).cloned() else {
                    continue;
                };
                let arn = self.arn.clone();
                self.pages += 1;
                self.out.calls += 1;
                self.inflight.push(Box::pin(async move {
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
                let Some((id, reason)) = self.queue.pop() else {
                    break;
                };
                let must = reason != Reason::Rolling;
                self.musts_inflight += usize::from(must);
                self.started += 1;
                self.out.calls += 1;
                self.first_describe.get_or_insert(at);
                self.inflight.push(Box::pin(async move {
                    let r = client.describe_service_job(&id).await;
                    Done::Described(id, must, Box::new(r))
                }));
            } else {
                break;
            }
        }
    }

    /// The next answer, or `None` when a deadline or the next progress tick comes first.
    async fn next_done(&mut self, at: Instant, more: bool) -> Option<Done> {
        let mut wake = self.hard;
        if self.emit.is_some() {
            wake = wake.min(self.next_progress);
        }
        if more {
            wake = wake.min(self.deadline.max(at));
        }
        tokio::select! {
            d = self.inflight.next(), if !self.inflight.is_empty() => d,
            _ = tokio::time::sleep_until(wake) => None,
        }
    }

    /// Merges an answer (come at `at`); breaks when the tracker is gone.
    fn merge(&mut self, done: Option<Done>, at: Instant) -> ControlFlow<()> {
        match done {
            Some(Done::Page(ci, r)) => {
                self.pages = self.pages.saturating_sub(1);
                match r {
                    Ok(page) => return self.merge_page(ci, page),
                    Err(e) => {
                        self.listings.failed(ci);
                        self.out.errors.push(e);
                    }
                }
            }
            Some(Done::Described(id, must, r)) => {
                self.musts_inflight -= usize::from(must);
                self.last_answer = Some(at);
                let Some(t) = self.trackers.get_mut(self.i) else {
                    return ControlFlow::Break(());
                };
                match *r {
                    Ok(d) => {
                        self.answered += 1;
                        t.apply_described(d, (self.now)());
                    }
                    Err(e) if e.kind() == ErrorKind::NotFound => {
                        self.answered += 1;
                        t.forget(&id);
                    }
                    Err(e) => self.out.errors.push(e),
                }
            }
            None => {}
        }
        ControlFlow::Continue(())
    }

    /// Merges a page of chain `ci`: its jobs, the describes they call for, the chain's next
    /// step; breaks when the tracker is gone.
    fn merge_page(&mut self, ci: usize, page: JobPage) -> ControlFlow<()> {
        let Some(t) = self.trackers.get_mut(self.i) else {
            return ControlFlow::Break(());
        };
        let mut jobs = page.jobs;
        if let Some(l) = self.listings.chains.get(ci).and_then(|c| c.limit) {
            let got = self.listings.chains.get(ci).map_or(0, |c| c.got);
            jobs.truncate(l.saturating_sub(got));
        }
        let n = jobs.len();
        let todo = t.merge_page(jobs, (self.now)());
        // Newly listed jobs are described as they come, the front first.
        let mut ranked: Vec<(usize, String)> = Vec::new();
        for id in todo {
            let rank = t
                .arn_of(&id)
                .and_then(|a| self.ranks_by_arn.get(a))
                .copied();
            match rank {
                Some(r) => ranked.push((r, id)),
                None => self.queue.push(id, Reason::New, false),
            }
        }
        ranked.sort();
        for (_, id) in ranked.into_iter().rev() {
            self.queue.push(id, Reason::New, true);
        }
        match self.listings.page(ci, n, page.next_token) {
            Err(e) => self.out.errors.push(e),
            Ok(After::Forked) => {
                tracing::debug!(queue = %self.arn, "listing a big status by quota share");
            }
            // Jobs of what this chain completed that it did not show moved on:
            // described now, while the other chains list.
            Ok(After::Done) => {
                if let Some((status, share)) = self.listings.ended(ci) {
                    for id in t.unlisted(status, share.as_deref()) {
                        self.queue.push(id, Reason::Vanished, false);
                    }
                }
            }
            Ok(After::Next) => {}
        }
        ControlFlow::Continue(())
    }

    /// Gives `emit` the trackers when the progress tick is due, the first jobs were listed,
    /// or the refresh just settled with work left.
    fn maybe_emit(&mut self, at: Instant) {
        let first_listed =
            self.first_jobs && self.trackers.get(self.i).is_some_and(|t| t.job_count() > 0);
        let just_settled =
            !self.settled && self.listing_done && self.queue.musts() + self.musts_inflight == 0;
        self.settled |= just_settled;
        let work_left = !self.inflight.is_empty() || !self.queue.todo.is_empty();
        if let Some(emit) = self.emit.as_mut()
            && (at >= self.next_progress || first_listed || (just_settled && work_left))
        {
            self.first_jobs = false;
            self.next_progress = at + PROGRESS_EVERY;
            let rate = self
                .first_describe
                .map(|f| at.saturating_duration_since(f).as_secs_f64())
                .filter(|e| *e > 0.0 && self.answered > 0)
                .map(|e| f64::from(self.answered) / e);
            emit(
                self.trackers,
                Progress {
                    pending: self.queue.musts() + self.musts_inflight,
                    rate,
                },
            );
        }
    }

    /// The refresh ended: what is in flight dropped, the listing ended, the outcome counted.
    fn finish(self) -> Outcome {
        drop(self.inflight);
        let mut out = self.out;
        if self.cut > 0 {
            out.errors.push(deadline_error(self.cut, self.deadline_for));
        }
        let Some(t) = self.trackers.get_mut(self.i) else {
            return out;
        };
        if !self.listing_done {
            // Cut by the hard limit: the statuses whose listing completed are merged as usual.
            let listed = self.listings.complete();
            t.end_listing(&listed, false);
        }
        out.pending = self.queue.musts();
        out.describes = self.started;
        let wire = self.client.stats().since(self.wire_start);
        out.phase = Phase {
            ok: self.answered,
            throttled: wire.throttled,
            elapsed: match (self.first_describe, self.last_answer) {
                (Some(f), Some(l)) => l.saturating_duration_since(f),
                _ => Duration::ZERO,
            },
        };
        t.prune_finished(self.s.finished_limit);
        let reason = stale_reason(&out, self.listing_complete);
        t.finish((self.now)(), reason);
        out
    }
}
