//! The one effect runner: every [`Effect`] the app asks for runs here, in a task of one
//! [`JoinSet`], and its result comes back as a [`Msg`]. A newer request of a kind that only
//! its latest answer matters for (a scorecard, a time-travel step, a preemption history)
//! cancels the older one: its task is aborted, and its answer, should a blocking task finish
//! anyway, is dropped. Priority changes are never cancelled (each one is audited).

use std::collections::HashMap;

use tokio::task::{AbortHandle, JoinSet};

use super::app::Msg;
use super::effects::{
    ChangeError, ChangeResult, Effect, EffectResult, HistoryError, PreemptionHistory, Services,
    TravelResult,
};
use super::scorecard::ScorecardResult;

/// The kinds of work of which only the latest request counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Latest {
    Scorecard,
    Travel,
    Preemptions,
}

/// A finished task: its kind (`None`: never superseded), its request number, its message.
type Done = (Option<Latest>, u64, Msg);

pub struct Runner {
    services: Services,
    tasks: JoinSet<Done>,
    /// The latest request of each kind still running.
    latest: HashMap<Latest, (u64, AbortHandle)>,
    requests: u64,
    /// The journal's last reported failure (`None`: recording).
    journal_broken: Option<String>,
}

impl Runner {
    pub fn new(services: Services) -> Self {
        Self {
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
            Effect::ApplyChange(req) => {
                let Some(runner) = &self.services.changes else {
                    return Some(Msg::Done(EffectResult::Change(Box::new(ChangeResult {
                        job_id: req.preview.job_id.clone(),
                        job_name: req.preview.job_name.clone(),
                        new_priority: req.preview.new_priority,
                        result: Err(ChangeError::NoApi),
                        warning: None,
                    }))));
                };
                let fut = runner.apply(*req);
                let n = self.next_request();
                self.tasks.spawn(async move {
                    (
                        None,
                        n,
                        Msg::Done(EffectResult::Change(Box::new(fut.await))),
                    )
                });
            }
            Effect::ComputeScorecard { queue, as_of } => {
                let Some(compute) = self.services.scorecard.clone() else {
                    let r = ScorecardResult {
                        queue,
                        result: Err(HistoryError::NoHistory),
                    };
                    return Some(Msg::Done(EffectResult::Scorecard(Box::new(r), as_of)));
                };
                self.blocking(Latest::Scorecard, move || {
                    Msg::Done(EffectResult::Scorecard(
                        Box::new(compute(&queue, as_of)),
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
                self.blocking(Latest::Travel, move || {
                    Msg::Done(EffectResult::Travel(Box::new(reader.travel(to))))
                });
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
                self.blocking(Latest::Preemptions, move || {
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

    /// The next answer of a task still wanted; `None` once no task is left. Cancel-safe (for
    /// `select!`).
    pub async fn next(&mut self) -> Option<Msg> {
        loop {
            match self.tasks.join_next().await? {
                Ok((None, _, msg)) => return Some(msg),
                Ok((Some(kind), n, msg)) => {
                    // Superseded by a newer request of its kind: nobody wants it.
                    if self
                        .latest
                        .get(&kind)
                        .is_some_and(|(latest, _)| *latest == n)
                    {
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
        self.journal_broken = now.clone();
        Some(now)
    }

    fn next_request(&mut self) -> u64 {
        self.requests += 1;
        self.requests
    }

    /// Runs blocking work (the journal) for `kind`, cancelling the older request of that kind.
    fn blocking(&mut self, kind: Latest, work: impl FnOnce() -> Msg + Send + 'static) {
        let n = self.next_request();
        let handle = self.tasks.spawn_blocking(move || (Some(kind), n, work()));
        if let Some((_, older)) = self.latest.insert(kind, (n, handle)) {
            older.abort();
        }
    }
}
