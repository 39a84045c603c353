//! The one effect runner: every [`Effect`] the app asks for runs here, in a task of one
//! [`JoinSet`], and its result comes back as a [`Msg`]. A newer request of a kind that only
//! its latest answer matters for (a scorecard, a time-travel step, a preemption history, a
//! screen's own work) cancels the older one: its task is aborted, and its answer, should a blocking task finish
//! anyway, is dropped. Priority changes are never cancelled (each one is audited).

use std::collections::HashMap;

use tokio::task::{AbortHandle, JoinSet};

use super::app::Msg;
use super::effects::{
    ActRequest, ActResult, ChangeError, ChangeRequest, ChangeResult, Effect, EffectResult,
    HistoryError, JobResult, PreemptionHistory, ScreenServices, Services, TravelResult,
};
use super::scorecard::ScorecardResult;
use super::screen::Kind;

/// The kinds of work of which only the latest request counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Latest {
    Scorecard,
    Travel,
    Preemptions,
    /// A screen's own work, by screen kind.
    Screen(Kind),
}

/// The latest request of a kind: its number, its task, and (a screen's work) what tells the
/// work itself to stop, which aborting its blocking task cannot.
struct Running {
    n: u64,
    task: AbortHandle,
    cancel: Option<super::effects::Cancel>,
}

impl Running {
    fn stop(self) {
        self.task.abort();
        if let Some(c) = self.cancel {
            c.cancel();
        }
    }
}

/// A finished task: its kind (`None`: never superseded), its request number, its message.
type Done = (Option<Latest>, u64, Msg);

pub struct Runner {
    services: Services,
    /// What screens' own work reads (the registry's, [`crate::registry::Screens::serving`]).
    screen_services: ScreenServices,
    tasks: JoinSet<Done>,
    /// The latest request of each kind still running.
    latest: HashMap<Latest, Running>,
    requests: u64,
    /// The journal's last reported failure (`None`: recording).
    journal_broken: Option<String>,
}

impl Runner {
    /// A runner without services for the screens' own work (the tests').
    #[cfg(test)]
    pub fn new(services: Services) -> Self {
        Self::serving(services, &ScreenServices::default())
    }

    /// A runner whose screens' own work ([`Effect::Screen`]) reads `screens`.
    pub fn serving(services: Services, screens: &ScreenServices) -> Self {
        Self {
            screen_services: screens.clone(),
            services,
            tasks: JoinSet::new(),
            latest: HashMap::new(),
            requests: 0,
            journal_broken: None,
        }
    }

    /// No task is running.
    pub fn is_idle(&self) -> bool {
        self.tasks.is_empty()
    }

    /// Starts `effect`; returns the answer at once when no service can run it (the app then
    /// says why).
    pub fn start(&mut self, effect: Effect) -> Option<Msg> {
        match effect {
            Effect::ApplyChange(req) => return self.apply_change(*req),
            Effect::Act(req) => return self.act(*req),
            Effect::ComputeScorecard { queue, as_of } => {
                let Some(compute) = self.services.scorecard.clone() else {
                    let r = ScorecardResult {
                        queue,
                        result: Err(HistoryError::NoHistory),
                    };
                    return Some(Msg::Done(EffectResult::Scorecard(Box::new(r), as_of)));
                };
                self.blocking(Latest::Scorecard, None, move || {
                    Msg::Done(EffectResult::Scorecard(
                        Box::new(compute.compute(&queue, as_of)),
                        as_of,
                    ))
                });
            }
            Effect::Travel(to) => {
                let Some(reader) = self.services.history.clone() else {
                    return Some(Msg::Done(EffectResult::Travel(Box::new(TravelResult {
                        to,
                        result: Err(HistoryError::NoHistory),
                    }))));
                };
                self.blocking(Latest::Travel, None, move || {
                    Msg::Done(EffectResult::Travel(Box::new(reader.travel(to))))
                });
            }
            Effect::Screen(work) => {
                let services = self.screen_services.clone();
                let kind = Latest::Screen(work.screen);
                let cancel = Some(work.cancel.clone());
                match work.delay {
                    None => self.blocking(kind, cancel, move || Msg::Done(work.run(&services))),
                    Some(delay) => {
                        self.delayed(kind, cancel, delay, move || Msg::Done(work.run(&services)))
                    }
                }
            }
            Effect::Forget(kind) => {
                if let Some(older) = self.latest.remove(&Latest::Screen(kind)) {
                    tracing::debug!(?kind, "its screen closed: its work is stopped");
                    older.stop();
                }
            }
            Effect::LoadPreemptions { queue } => {
                let Some(reader) = self.services.history.clone() else {
                    return Some(Msg::Done(EffectResult::Preemptions(Box::new(
                        PreemptionHistory {
                            queue,
                            result: Err(HistoryError::NoHistory),
                        },
                    ))));
                };
                self.blocking(Latest::Preemptions, None, move || {
                    Msg::Done(EffectResult::Preemptions(Box::new(
                        reader.preemptions(&queue),
                    )))
                });
            }
            Effect::RefreshNow => {
                if let Some(refresh) = &self.services.refresh {
                    refresh();
                }
            }
        }
        None
    }

    /// Starts a priority change; answers at once when there is no API to make it with.
    fn apply_change(&mut self, req: ChangeRequest) -> Option<Msg> {
        let Some(runner) = &self.services.changes else {
            return Some(Msg::Done(EffectResult::Change(Box::new(ChangeResult {
                job_id: req.preview.job_id.clone(),
                job_name: req.preview.job_name.clone(),
                new_priority: req.preview.new_priority,
                result: Err(ChangeError::NoApi),
                warning: None,
                audit_log: None,
            }))));
        };
        tracing::info!(
            job = %req.preview.job_id,
            priority = req.preview.new_priority,
            "priority change started"
        );
        let fut = runner.apply(req);
        let n = self.next_request();
        self.tasks.spawn(async move {
            let r = fut.await;
            match &r.result {
                Ok(outcome) => {
                    tracing::info!(job = %r.job_id, ?outcome, "priority change done")
                }
                Err(e) => tracing::warn!(job = %r.job_id, "priority change not made: {e}"),
            }
            (None, n, Msg::Done(EffectResult::Change(Box::new(r))))
        });
        None
    }

    /// Starts a termination or requeue; answers at once when there is no API to make it with
    /// (every job says so).
    fn act(&mut self, req: ActRequest) -> Option<Msg> {
        let Some(runner) = &self.services.actions else {
            return Some(Msg::Done(EffectResult::Act(Box::new(ActResult {
                act: req.act,
                jobs: req
                    .jobs
                    .iter()
                    .map(|j| JobResult {
                        job_id: j.id.clone(),
                        job_name: j.name.clone(),
                        result: Err(ChangeError::NoApi),
                        detail: None,
                    })
                    .collect(),
                audit_log: None,
            }))));
        };
        tracing::info!(
            act = req.act.verb(),
            jobs = req.jobs.len(),
            "job action started"
        );
        let fut = runner.run(req);
        let n = self.next_request();
        self.tasks.spawn(async move {
            let r = fut.await;
            tracing::info!(act = r.act.verb(), jobs = r.jobs.len(), "job action done");
            (None, n, Msg::Done(EffectResult::Act(Box::new(r))))
        });
        None
    }

    /// The next answer of a task still wanted; `None` once no task is left. Cancel-safe (for
    /// `select!`).
    pub async fn next(&mut self) -> Option<Msg> {
        loop {
            match self.tasks.join_next().await? {
                Ok((None, _, msg)) => return Some(msg),
                Ok((Some(kind), n, msg)) => {
                    // Superseded by a newer request of its kind: nobody wants it.
                    if self.latest.get(&kind).is_some_and(|latest| latest.n == n) {
                        self.latest.remove(&kind);
                        return Some(msg);
                    }
                }
                Err(e) if e.is_cancelled() => {}
                Err(e) => tracing::error!("a console task failed: {e}"),
            }
        }
    }

    /// Whether the journal's state changed since last asked: `Some(the new state)` then.
    pub fn journal_change(&mut self) -> Option<Option<String>> {
        let state = self.services.journal_state.as_ref()?;
        let now = state();
        if now == self.journal_broken {
            return None;
        }
        match &now {
            Some(reason) => tracing::warn!("journal stopped recording: {reason}"),
            None => tracing::info!("journal records again"),
        }
        self.journal_broken = now.clone();
        Some(now)
    }

    fn next_request(&mut self) -> u64 {
        self.requests += 1;
        self.requests
    }

    /// [`Runner::blocking`] after `delay`, waited out on the runtime, where cancelling (a newer
    /// request, [`Runner::finish`]) stops it; once the work has started, it runs to its end.
    fn delayed(
        &mut self,
        kind: Latest,
        cancel: Option<super::effects::Cancel>,
        delay: std::time::Duration,
        work: impl FnOnce() -> Msg + Send + 'static,
    ) {
        let n = self.next_request();
        let handle = self.tasks.spawn(async move {
            tokio::time::sleep(delay).await;
            match tokio::task::spawn_blocking(work).await {
                Ok(msg) => (Some(kind), n, msg),
                // The work panicked (it is never cancelled): this task fails as the blocking
                // one would have, and is reported like it.
                Err(e) => std::panic::resume_unwind(e.into_panic()),
            }
        });
        self.run_latest(kind, n, handle, cancel);
    }

    /// Ends every task before the console returns: waiting ones are cancelled, and blocking
    /// work under way (a log read, a journal query) is waited for, so none of it runs on after
    /// the runtime it calls into has begun to shut down (a follow's read then panicked inside
    /// tokio).
    pub async fn finish(&mut self) {
        self.tasks.shutdown().await;
    }

    /// Keeps `task` as the latest request of `kind`, stopping the older one.
    fn run_latest(
        &mut self,
        kind: Latest,
        n: u64,
        task: AbortHandle,
        cancel: Option<super::effects::Cancel>,
    ) {
        if let Some(older) = self.latest.insert(kind, Running { n, task, cancel }) {
            tracing::debug!(?kind, "a newer request cancels the one under way");
            older.stop();
        }
    }

    /// Runs blocking work (the journal) for `kind`, cancelling the older request of that kind.
    fn blocking(
        &mut self,
        kind: Latest,
        cancel: Option<super::effects::Cancel>,
        work: impl FnOnce() -> Msg + Send + 'static,
    ) {
        let n = self.next_request();
        let handle = self.tasks.spawn_blocking(move || (Some(kind), n, work()));
        self.run_latest(kind, n, handle, cancel);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;
    use crate::effects::TravelTo;

    /// A scorecard service that takes its time for queue `slow`.
    fn services() -> Services {
        Services {
            scorecard: Some(Arc::new(
                |queue: &str, _: Option<quotatop_model::Millis>| {
                    if queue == "slow" {
                        std::thread::sleep(Duration::from_millis(200));
                    }
                    ScorecardResult {
                        queue: queue.to_string(),
                        result: Err(HistoryError::NoQueue(queue.to_string())),
                    }
                },
            )),
            ..Services::default()
        }
    }

    async fn drain(runner: &mut Runner) -> Vec<Msg> {
        let mut out = Vec::new();
        while let Some(m) = runner.next().await {
            out.push(m);
        }
        out
    }

    fn scorecard(queue: &str) -> Effect {
        Effect::ComputeScorecard {
            queue: queue.to_string(),
            as_of: None,
        }
    }

    #[tokio::test]
    async fn a_newer_request_of_a_kind_cancels_the_older() {
        let mut runner = Runner::new(services());
        assert!(runner.start(scorecard("slow")).is_none());
        assert!(runner.start(scorecard("fast")).is_none());
        let msgs = drain(&mut runner).await;
        assert!(runner.is_idle());
        let queues: Vec<&str> = msgs
            .iter()
            .filter_map(|m| match m {
                Msg::Done(EffectResult::Scorecard(r, _)) => Some(r.queue.as_str()),
                _ => None,
            })
            .collect();
        // The slow one ran to its end (a blocking task cannot be stopped) but nobody hears it.
        assert_eq!(queues, ["fast"]);
    }

    /// Work that reads "pages" until told to stop (at most 200 of 10 ms), counting them.
    fn paging(pages: &Arc<std::sync::atomic::AtomicUsize>) -> Effect {
        let pages = Arc::clone(pages);
        Effect::Screen(crate::effects::ScreenWork::cancellable(
            Kind::Logs,
            move |_: Option<&()>, cancel: &crate::effects::Cancel| {
                for _ in 0..200 {
                    if cancel.is_cancelled() {
                        return false;
                    }
                    pages.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(10));
                }
                true
            },
        ))
    }

    #[tokio::test]
    async fn a_closed_screens_work_under_way_reads_no_page_more() {
        let pages = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let mut runner = Runner::new(services());
        assert!(runner.start(paging(&pages)).is_none());
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(runner.start(Effect::Forget(Kind::Logs)).is_none());
        let msgs = drain(&mut runner).await;
        let read = pages.load(std::sync::atomic::Ordering::SeqCst);
        // The blocking work saw the cancel within a page: far fewer than its 200 pages, and
        // its answer is heard by nobody.
        assert!(read < 50, "{read} pages read after the screen closed");
        assert!(msgs.is_empty(), "{msgs:?}");
    }

    #[tokio::test]
    async fn a_newer_read_stops_the_older_one_under_way() {
        let (older, newer) = (
            Arc::new(std::sync::atomic::AtomicUsize::new(0)),
            Arc::new(std::sync::atomic::AtomicUsize::new(0)),
        );
        let mut runner = Runner::new(services());
        assert!(runner.start(paging(&older)).is_none());
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(runner.start(paging(&newer)).is_none());
        assert_eq!(drain(&mut runner).await.len(), 1);
        assert!(older.load(std::sync::atomic::Ordering::SeqCst) < 50);
        assert_eq!(newer.load(std::sync::atomic::Ordering::SeqCst), 200);
    }

    #[tokio::test]
    async fn requests_of_different_kinds_do_not_cancel_each_other() {
        let mut s = services();
        s.history = None;
        let mut runner = Runner::new(s);
        assert!(runner.start(scorecard("a")).is_none());
        // No history service: answered at once, and the scorecard still comes.
        let travel = runner.start(Effect::Travel(TravelTo::Older(0)));
        assert!(matches!(
            travel,
            Some(Msg::Done(EffectResult::Travel(r))) if r.result == Err(HistoryError::NoHistory)
        ));
        assert_eq!(drain(&mut runner).await.len(), 1);
    }

    #[tokio::test]
    async fn without_services_every_answer_says_why_at_once() {
        let mut runner = Runner::new(Services::default());
        let sc = runner.start(scorecard("a"));
        assert!(matches!(
            sc,
            Some(Msg::Done(EffectResult::Scorecard(r, None))) if r.result == Err(HistoryError::NoHistory)
        ));
        let pre = runner.start(Effect::LoadPreemptions { queue: "a".into() });
        assert!(matches!(pre, Some(Msg::Done(EffectResult::Preemptions(_)))));
        assert!(runner.start(Effect::RefreshNow).is_none());
        assert!(runner.is_idle());
    }
}
