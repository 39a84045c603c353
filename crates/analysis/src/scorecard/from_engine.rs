//! Producer of [`ScorecardInput`] from the engine's event log: the ground truth that journal
//! observations are checked against, and what the what-if replay feeds the scorecard.

use quotatop_engine::{Engine, Event, EventReason, JobId};
use quotatop_model::{JobStatus, Millis};

use super::input::{
    AttemptEnd, AttemptHistory, Entitlement, JobHistory, Outcome, ScorecardInput, Window,
};

/// Histories of every job in `events`, with facts (share, priority, type, checkpoint interval)
/// taken from `engine`. Events of jobs the engine does not know are skipped.
pub fn histories_from_events(engine: &Engine, events: &[Event]) -> Vec<JobHistory> {
    let mut b = HistoryBuilder::new();
    b.extend(events);
    b.finish(engine)
}

/// What the events have said about one job so far; its facts come from the engine at the end.
#[derive(Debug, Clone, PartialEq)]
struct Track {
    submitted_at: Option<Millis>,
    runnable_at: Vec<Millis>,
    attempts: Vec<AttemptHistory>,
    outcome: Outcome,
}

/// Job histories built from the engine's events as they come, so a long run can drain its event
/// log ([`Engine::drain_events`]) as it goes instead of keeping all of it. Feeding a log in any
/// number of pieces, in order, gives what [`histories_from_events`] gives for the whole log.
#[derive(Debug, Clone, Default)]
pub struct HistoryBuilder {
    /// By job id: the engine numbers its jobs from 0 in submission order.
    jobs: Vec<Option<Track>>,
    last: Option<Millis>,
}

impl HistoryBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Room for the jobs numbered below `jobs` (a replay knows how many it submits), so the
    /// table does not grow by doubling.
    pub fn reserve_jobs(&mut self, jobs: usize) {
        self.jobs
            .reserve_exact(jobs.saturating_sub(self.jobs.len()));
    }

    /// Takes the next event of the log.
    pub fn push(&mut self, e: &Event) {
        let i = e.job.0 as usize;
        if self.jobs.len() <= i {
            self.jobs.resize_with(i + 1, || None);
        }
        if let Some(slot) = self.jobs.get_mut(i) {
            let t = slot.get_or_insert_with(|| Track {
                submitted_at: None,
                runnable_at: Vec::new(),
                attempts: Vec::new(),
                outcome: Outcome::Open,
            });
            apply(t, e);
        }
        self.last = Some(e.time);
    }

    /// The time of the last event taken.
    pub fn last_time(&self) -> Option<Millis> {
        self.last
    }

    /// Takes the next events of the log, in order.
    pub fn extend<'a>(&mut self, events: impl IntoIterator<Item = &'a Event>) {
        for e in events {
            self.push(e);
        }
    }

    /// How many jobs the events so far were about.
    pub fn len(&self) -> usize {
        self.jobs.iter().filter(|t| t.is_some()).count()
    }

    pub fn is_empty(&self) -> bool {
        self.jobs.iter().all(|t| t.is_none())
    }

    /// The histories, in job order, with facts (share, priority, type, checkpoint interval)
    /// taken from `engine` now. Jobs the engine does not know are skipped.
    pub fn finish(self, engine: &Engine) -> Vec<JobHistory> {
        self.finish_with(|id| facts_of(engine, id))
            .into_iter()
            .map(|(_, h)| h)
            .collect()
    }

    /// The histories, in job order, with their ids. `facts(id)` gives a job's facts as a
    /// history without events (no RUNNABLE times, no attempts, open; `submitted_at` when the
    /// log has no submission), as [`facts_of`] reads them from an engine; the events fill in
    /// the rest. Jobs without facts are skipped.
    pub fn finish_with(
        self,
        mut facts: impl FnMut(JobId) -> Option<JobHistory>,
    ) -> Vec<(JobId, JobHistory)> {
        let mut out = Vec::with_capacity(self.len());
        let mut tracks = self.jobs;
        // The last job first, giving the table of tracks back as it empties (a replay's holds
        // several MB), so that the histories never sit beside the whole of it.
        while let Some(t) = tracks.pop() {
            let i = tracks.len();
            if i.is_multiple_of(SHRINK_EVERY) {
                tracks.shrink_to_fit();
            }
            let (Some(t), Ok(n)) = (t, u32::try_from(i)) else {
                continue;
            };
            let Some(f) = facts(JobId(n)) else {
                continue;
            };
            out.push((
                JobId(n),
                JobHistory {
                    submitted_at: t.submitted_at.unwrap_or(f.submitted_at),
                    runnable_at: t.runnable_at,
                    attempts: t.attempts,
                    outcome: t.outcome,
                    ..f
                },
            ));
        }
        out.reverse();
        out
    }
}

/// [`HistoryBuilder::finish_with`] shrinks the table of tracks every this many jobs.
const SHRINK_EVERY: usize = 4096;

/// A job's facts as the engine knows them now (share, priority, type, count, checkpoint
/// interval, restart overhead; submission time as its `createdAt`), as a history without events.
pub fn facts_of(engine: &Engine, id: JobId) -> Option<JobHistory> {
    let job = engine.job(id)?;
    Some(JobHistory {
        job_id: job.id,
        name: job.name,
        share: job.share,
        priority: job.priority,
        instance_type: job.instance_type,
        instance_count: job.instance_count,
        submitted_at: job.created_at,
        runnable_at: Vec::new(),
        attempts: Vec::new(),
        outcome: Outcome::Open,
        checkpoint_interval_ms: engine.checkpoint_interval(id),
        restart_overhead_ms: engine.restart_overhead(id),
        preemption_retries: job.preemption_retries,
        training: None,
    })
}

/// Pushes growing by one: most jobs have one attempt and become RUNNABLE once, and the doubling
/// default (four at first) would hold several times the memory across a large replay.
fn push_one<T>(v: &mut Vec<T>, x: T) {
    v.reserve_exact(1);
    v.push(x);
}

fn close_open(h: &mut Track, at: Millis, end: AttemptEnd) {
    if let Some(a) = h.attempts.last_mut().filter(|a| a.end == AttemptEnd::Open) {
        a.stopped_at = Some(at);
        a.end = end;
    }
}

fn apply(h: &mut Track, e: &Event) {
    match (&e.reason, e.from, e.to) {
        (EventReason::Submitted, _, _) => h.submitted_at = Some(e.time),
        (_, from, JobStatus::Runnable) if from != Some(JobStatus::Runnable) => {
            push_one(&mut h.runnable_at, e.time)
        }
        (EventReason::Dispatched { .. }, _, JobStatus::Scheduled) => push_one(
            &mut h.attempts,
            AttemptHistory {
                scheduled_at: Some(e.time),
                started_at: None,
                stopped_at: None,
                end: AttemptEnd::Open,
                preempting_from: None,
                restored: None,
                restored_at: None,
            },
        ),
        (EventReason::Advanced, Some(JobStatus::Starting), JobStatus::Running) => {
            if let Some(a) = h.attempts.last_mut() {
                a.started_at = Some(e.time);
            }
        }
        _ => {}
    }
    match &e.reason {
        EventReason::PreemptionStarted(_) => {
            if let Some(a) = h.attempts.last_mut().filter(|a| a.end == AttemptEnd::Open) {
                a.preempting_from = Some(e.time);
            }
        }
        EventReason::Preempted(_) | EventReason::RetriesExhausted => {
            close_open(h, e.time, AttemptEnd::Preempted)
        }
        EventReason::AttemptFailed(_) => close_open(h, e.time, AttemptEnd::Failed),
        EventReason::Completed => {
            close_open(h, e.time, AttemptEnd::Completed);
            h.outcome = Outcome::Succeeded(e.time);
        }
        _ => {}
    }
    if e.to == JobStatus::Failed {
        close_open(h, e.time, AttemptEnd::Failed);
        h.outcome = Outcome::Failed(e.time);
    }
}

/// A scorecard input from the engine: the jobs of `events` (its event log, or the part an
/// emulator kept), its current shares as entitlements and its environment capacity, over
/// `window`.
pub fn input_from_engine(
    engine: &Engine,
    events: &[Event],
    queue: &str,
    window: Window,
) -> ScorecardInput {
    input_with_jobs(engine, histories_from_events(engine, events), queue, window)
}

/// [`input_from_engine`] with histories already built (e.g. by a [`HistoryBuilder`] fed as the
/// engine ran).
pub fn input_with_jobs(
    engine: &Engine,
    jobs: Vec<JobHistory>,
    queue: &str,
    window: Window,
) -> ScorecardInput {
    ScorecardInput {
        queue: queue.to_string(),
        window,
        capacity: engine.config().capacity.clone(),
        entitlements: engine
            .shares()
            .into_iter()
            .map(|s| Entitlement {
                share: s.name,
                limits: s.capacity_limits,
            })
            .collect(),
        jobs,
    }
}
