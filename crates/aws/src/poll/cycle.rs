//! One refresh of every queue ([`Poller::refresh_with`]) as the state its phases share and one
//! method per phase, in the order they run: discover, look, list and describe each queue,
//! measure training, assess health.

use tokio::time::Instant;

use crate::batch::{BatchClient, BatchError};
use quotatop_model::{HealthState, Snapshot, wall_clock_ms};

use super::discover::QueueInfo;
use super::{PollError, Poller, QueueTracker, assess, discover, partial, refresh, training};

/// What a refresh's phases share: its settings and two deadlines, the calls and errors
/// counted, the describes left over, and a failure that stops every queue.
pub(super) struct Cycle {
    progressive: bool,
    settings: refresh::Settings,
    deadline: Instant,
    hard: Instant,
    pending: usize,
    errors: Vec<BatchError>,
    calls: usize,
    fatal: Option<String>,
}

impl Poller {
    /// A refresh begun: the describe rate followed, the settings and deadlines set.
    pub(super) fn begin_cycle(&mut self, client: &BatchClient) -> Cycle {
        let progressive = self.config.progressive;
        self.pace
            .follow(client.learned_rate(crate::batch::Op::DescribeServiceJob));
        let settings = refresh::Settings {
            budget: self.config.describe_budget,
            concurrency: self.config.concurrency,
            finished_limit: self.config.finished_limit,
            // Progressive: no cap, the progress snapshots show the describes as they come and
            // the deadline ends the refresh; otherwise (a recorder) each refresh describes what
            // the learned rate allows in an interval, so its snapshots keep their interval.
            cap: if progressive {
                None
            } else {
                self.pace.cap(self.config.interval)
            },
            // No spacing here: the client's pacer spaces the describes at the rate it learned.
        };
        let deadline = tokio::time::Instant::now() + self.config.refresh_deadline;
        let hard = deadline + self.config.refresh_deadline / 2;
        Cycle {
            progressive,
            settings,
            deadline,
            hard,
            pending: 0,
            errors: Vec::new(),
            calls: 1,
            fatal: None,
        }
    }

    /// The queues, discovered within the refresh's deadline.
    pub(super) async fn discover_within(
        &mut self,
        client: &BatchClient,
        cycle: &Cycle,
    ) -> Result<Vec<QueueInfo>, PollError> {
        tokio::time::timeout_at(
            cycle.deadline,
            discover(client, &self.config.queues, &mut self.policies),
        )
        .await
        .unwrap_or_else(|_| {
            Err(PollError::Batch(BatchError::Other {
                op: crate::batch::Op::Refresh,
                message: format!(
                    "queue discovery did not finish within the refresh deadline of {:.1} s",
                    self.config.refresh_deadline.as_secs_f64()
                ),
            }))
        })
    }

    /// The trackers of the discovered `queues`, in their order: kept, started from the
    /// journaled seed, or new.
    pub(super) fn adopt_trackers(&mut self, queues: &[QueueInfo]) {
        let mut next = Vec::with_capacity(queues.len());
        for info in queues {
            let mut t = match self.trackers.iter().position(|t| t.arn() == info.queue.arn) {
                Some(i) => self.trackers.swap_remove(i),
                None => match self.seed.iter().position(|q| q.arn == info.queue.arn) {
                    Some(i) => QueueTracker::seeded(info, &self.seed.swap_remove(i)),
                    None => QueueTracker::new(info),
                },
            };
            t.set_info(info);
            next.push(t);
        }
        self.trackers = next;
    }

    /// The early look at every queue, side by side within the deadline (shown at once when
    /// progressive and a queue was never listed): per queue, the calls made and their errors.
    pub(super) async fn look_all(
        &mut self,
        client: &BatchClient,
        cycle: &Cycle,
        emit: &mut (dyn FnMut(Snapshot) + Send),
    ) -> Vec<(usize, Vec<BatchError>)> {
        let looks = futures_util::future::join_all(
            self.trackers.iter_mut().map(|t| refresh::look(client, t)),
        );
        let mut looked = tokio::time::timeout_at(cycle.deadline, looks)
            .await
            .unwrap_or_default();
        if cycle.progressive && self.trackers.iter().any(|t| !t.listed_once()) {
            emit(partial(
                self.sequence,
                client,
                &self.trackers,
                &self.pace,
                None,
            ));
        }
        looked.resize_with(self.trackers.len(), || {
            (
                0,
                vec![BatchError::Other {
                    op: crate::batch::Op::Refresh,
                    message: "ListQuotaShares and GetJobQueueSnapshot did not answer within the refresh deadline".to_string(),
                }],
            )
        });
        looked
    }

    /// Lists and describes each queue in turn, its look's calls and errors counted with it.
    pub(super) async fn refresh_queues(
        &mut self,
        client: &BatchClient,
        cycle: &mut Cycle,
        looked: Vec<(usize, Vec<BatchError>)>,
        emit: &mut (dyn FnMut(Snapshot) + Send),
    ) {
        let (progressive, settings, deadline, hard) = (
            cycle.progressive,
            cycle.settings,
            cycle.deadline,
            cycle.hard,
        );
        let queues = self.trackers.len();
        for (i, (look_calls, look_errors)) in looked.into_iter().enumerate() {
            // Each queue left gets its part of the time left for describes, so that a
            // backlog in one does not starve the next (listings still run to `hard`).
            let at = tokio::time::Instant::now();
            let left = u32::try_from(queues - i).unwrap_or(u32::MAX).max(1);
            let describe_until = at + deadline.saturating_duration_since(at) / left;
            let (sequence, pace) = (self.sequence, self.pace);
            let mut progress = |ts: &[QueueTracker], p: refresh::Progress| {
                emit(partial(sequence, client, ts, &pace, Some(p)));
            };
            let out = refresh::refresh_jobs(
                client,
                &mut self.trackers,
                i,
                refresh::Bounds {
                    settings,
                    deadline: describe_until,
                    hard,
                    now: wall_clock_ms,
                },
                progressive.then_some(&mut progress as &mut _),
                refresh::Outcome {
                    calls: look_calls,
                    errors: look_errors,
                    ..refresh::Outcome::default()
                },
            )
            .await;
            cycle.calls += out.calls;
            cycle.errors.extend(out.errors);
            cycle.pending += out.pending;
            self.pace.observe(out.phase);
        }
    }

    /// Reads the training jobs behind each queue's jobs, until the hard deadline.
    pub(super) async fn measure_training(&mut self, client: &BatchClient, cycle: &mut Cycle) {
        for t in &mut self.trackers {
            let (state, jobs, evidence) = t.training_parts();
            let (seen, n, errs) =
                training::measure(client, state, &jobs, self.config.training, cycle.hard).await;
            *evidence = seen;
            cycle.calls += n;
            cycle.errors.extend(errs);
        }
    }

    /// Discovery failed: every queue says why; a failure other than a call's stops the
    /// refresh's health at degraded.
    pub(super) fn discovery_failed(&mut self, cycle: &mut Cycle, e: PollError) {
        match e {
            PollError::Batch(e) => {
                let reason = format!("queue discovery failed: {e}");
                for t in &mut self.trackers {
                    t.finish(wall_clock_ms(), Some(reason.clone()));
                }
                cycle.errors.push(e);
            }
            e => {
                let reason = e.to_string();
                for t in &mut self.trackers {
                    t.finish(wall_clock_ms(), Some(reason.clone()));
                }
                cycle.fatal = Some(reason);
            }
        }
    }

    /// The refresh ended: its health assessed, the poller's streak and pace updated, the
    /// snapshot taken.
    pub(super) fn end_cycle(&mut self, client: &BatchClient, cycle: Cycle) -> Snapshot {
        let Cycle {
            pending,
            errors,
            calls,
            fatal,
            ..
        } = cycle;
        let mut health = assess(&errors, calls, client.stats().last_minute());
        if let Some(reason) = fatal {
            health.state = HealthState::Degraded;
            health.last_error = Some(reason);
        }
        self.unhealthy_streak = if health.state == HealthState::Healthy {
            0
        } else {
            self.unhealthy_streak.saturating_add(1)
        };
        self.pace
            .follow(client.learned_rate(crate::batch::Op::DescribeServiceJob));
        health.describe_rate = self.pace.limit();
        health.events_missed = self.missed;
        health.complete_in_s = self.pace.complete_in_s(pending, None);
        self.pending = pending;
        self.last_health = health.state;
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
