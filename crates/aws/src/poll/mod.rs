//! The poller: a background task that refreshes every queue on an interval and sends an owned
//! [`Snapshot`] over a channel after each refresh.
//!
//! `ListServiceJobs` summaries carry no priority and no preemption data, so describing every job
//! on every refresh would cost one call per job. Instead each refresh lists the queue (a few
//! calls), describes only new, changed and vanished jobs, and refreshes the remaining active
//! jobs in a rolling order under a per-refresh budget, front of queue first ([`plan`]). Calls
//! run with bounded concurrency. A failed call keeps the last data: jobs show their age through
//! `described_at`, queues through `refreshed_at` and `stale_reason`; throttling or an outage
//! slows the poller down (exponential back-off) and it recovers by itself.
//!
//! [`refresh_once`] is the same refresh without a budget, for `quotatop snapshot`.

mod cycle;
mod discover;
mod events;
mod health;
mod listing;
mod pace;
mod plan;
mod refresh;
mod tracker;
mod training;

use std::time::Duration;

use tokio::sync::{Notify, mpsc};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::batch::{BatchClient, BatchError};
use quotatop_model::{Fleet, HealthState, QueueSnapshot, Snapshot, wall_clock_ms};

pub use discover::{PolicyCache, QueueInfo, SAGEMAKER_TRAINING, discover, not_quota_managed};
pub use events::EXCUSE_WITHIN;
pub use health::{assess, next_delay};
pub use refresh::{ACTIVE, FINISHED};
pub use tracker::QueueTracker;
pub use training::TrainingBounds;

/// Failures that stop a queue from being polled at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PollError {
    #[error(transparent)]
    Batch(#[from] BatchError),
    /// `existing`: the queues the account and region have (empty when it has none).
    #[error("job queue {queue:?} does not exist ({})", known_queues(existing))]
    QueueNotFound {
        queue: String,
        existing: Vec<String>,
    },
    #[error("job queue {queue:?} is not quota-managed: {reason}")]
    NotQuotaManaged { queue: String, reason: String },
    #[error(
        "no quota-managed job queue found (a SAGEMAKER_TRAINING queue with a quota-share scheduling policy); name one with --queue"
    )]
    NoQuotaQueues,
}

/// What a missing queue's error says exists instead.
fn known_queues(existing: &[String]) -> String {
    if existing.is_empty() {
        "there are no job queues here: check --region, --profile and --endpoint-url".to_string()
    } else {
        format!(
            "queues here: {}",
            existing
                .iter()
                .map(|q| quotatop_model::clean_text(q))
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

/// How to poll.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PollConfig {
    /// Time between refreshes while healthy.
    pub interval: Duration,
    /// Longest wait between refreshes while backing off.
    pub max_backoff: Duration,
    /// Rolling describes of unchanged active jobs per queue per refresh (new and changed jobs
    /// are described regardless).
    pub describe_budget: usize,
    /// API calls in flight at once.
    pub concurrency: usize,
    /// Newest finished jobs listed per finished status each refresh (and kept once seen).
    pub finished_limit: usize,
    /// A refresh stops waiting for calls after this long: what finished is kept, the rest is
    /// marked stale and retried next time (the SDK's adaptive rate limiter can delay calls for
    /// seconds after throttling; the console must still get a snapshot).
    pub refresh_deadline: Duration,
    /// Queue names or ARNs; empty means every quota-managed queue.
    pub queues: Vec<String>,
    /// Show a refresh as it goes (the console): an early look (shares, utilisation, front of
    /// the queue) before any job is listed, then progress snapshots at most every second
    /// ([`Poller::refresh_with`]); describes are not capped, a refresh describes until its
    /// deadline and the next one starts at once while a backlog is left. Off: no intermediate
    /// snapshot, and under a learned rate limit each refresh describes what the limit allows
    /// in an interval.
    pub progressive: bool,
    /// Reads of the training jobs behind the jobs (checkpoint listings, log marks) per queue per
    /// refresh.
    pub training: TrainingBounds,
    /// With Batch's events applied (`record --events-queue`): the jobs they name are described
    /// at once ([`PollHandle::named`]) and the full refresh runs only this often, as a
    /// reconciliation whose finds no event told are counted missed. `None`: every refresh is
    /// full, at `interval`, and named jobs are ignored.
    pub reconcile_every: Option<Duration>,
}

impl Default for PollConfig {
    fn default() -> Self {
        Self {
            interval: Duration::from_secs(5),
            max_backoff: Duration::from_secs(60),
            describe_budget: 40,
            concurrency: 8,
            finished_limit: 50,
            refresh_deadline: Duration::from_secs(20),
            queues: Vec::new(),
            progressive: false,
            training: TrainingBounds::default(),
            reconcile_every: None,
        }
    }
}

/// The poller's state across refreshes (usable without the background task).
pub struct Poller {
    config: PollConfig,
    policies: PolicyCache,
    trackers: Vec<QueueTracker>,
    sequence: u64,
    unhealthy_streak: u32,
    last_health: HealthState,
    /// The describe rate learned from throttling.
    pace: pace::Pace,
    /// Describes left for later refreshes by the last one's cap.
    pending: usize,
    /// Queues as journaled, to start their trackers from (a warm start); taken when the queue
    /// is first discovered.
    seed: Vec<QueueSnapshot>,
    /// Changes a reconciliation found that no event told yet ([`events`]).
    suspects: Vec<events::Suspect>,
    /// Suspects no event excused: events missed.
    missed: u64,
}

impl Poller {
    pub fn new(config: PollConfig) -> Self {
        Self {
            config,
            policies: PolicyCache::default(),
            trackers: Vec::new(),
            sequence: 0,
            unhealthy_streak: 0,
            last_health: HealthState::Starting,
            pace: pace::Pace::default(),
            pending: 0,
            seed: Vec::new(),
            suspects: Vec::new(),
            missed: 0,
        }
    }

    /// Starts from a journaled snapshot (a warm start): each of its queues, once discovered
    /// again (same ARN), keeps the jobs it had, and only jobs whose listing differs from the
    /// journaled facts are described (see [`QueueTracker::seeded`]).
    pub fn seed(&mut self, journaled: &Snapshot) {
        self.seed = journaled.queues.clone();
    }

    /// One refresh of every queue; never fails (failures are in the snapshot).
    pub async fn refresh(&mut self, client: &BatchClient) -> Snapshot {
        self.refresh_with(client, &mut |_| {}).await
    }

    /// [`Poller::refresh`], giving `emit` the snapshots of a refresh in progress when polling
    /// is progressive: the early look (once discovery, ListQuotaShares and GetJobQueueSnapshot
    /// answered, before any job is listed) when a queue was never listed yet, then at most
    /// every [`refresh::PROGRESS_EVERY`] what is known so far. They are marked partial
    /// ([`QueueSnapshot::listing`], [`QueueSnapshot::describe_progress`]); the snapshot
    /// returned replaces them.
    ///
    /// Its phases, in the order they run, are in `cycle.rs`.
    pub async fn refresh_with(
        &mut self,
        client: &BatchClient,
        emit: &mut (dyn FnMut(Snapshot) + Send),
    ) -> Snapshot {
        let mut cycle = self.begin_cycle(client);
        match self.discover_within(client, &cycle).await {
            Ok(queues) => {
                self.adopt_trackers(&queues);
                self.watch_for_missed();
                let looked = self.look_all(client, &cycle, emit).await;
                self.refresh_queues(client, &mut cycle, looked, emit).await;
                self.measure_training(client, &mut cycle).await;
                self.take_suspects();
            }
            Err(e) => self.discovery_failed(&mut cycle, e),
        }
        self.settle();
        self.end_cycle(client, cycle)
    }

    /// How long to wait before the next refresh: none while healthy with describes left over by
    /// the rate limit's cap (the describes themselves take about an interval at that rate).
    pub fn next_delay(&self) -> Duration {
        if self.pending > 0 && self.unhealthy_streak == 0 {
            return Duration::ZERO;
        }
        // A reconciliation that failed is tried again at the interval (backing off), not a
        // whole reconciliation later.
        let base = match self.config.reconcile_every {
            Some(every) if self.unhealthy_streak == 0 => every,
            _ => self.config.interval,
        };
        next_delay(base, self.config.max_backoff, self.unhealthy_streak)
    }
}

/// A snapshot of a refresh in progress (see [`Poller::refresh_with`]): what the trackers know
/// now, with the health of the calls so far and, from `progress`, the time to a complete view.
fn partial(
    sequence: u64,
    client: &BatchClient,
    trackers: &[QueueTracker],
    pace: &pace::Pace,
    progress: Option<refresh::Progress>,
) -> Snapshot {
    let mut health = assess(&[], 0, client.stats().last_minute());
    let mut pace = *pace;
    pace.follow(client.learned_rate(crate::batch::Op::DescribeServiceJob));
    health.describe_rate = pace.limit();
    health.complete_in_s = progress.and_then(|p| pace.complete_in_s(p.pending, p.rate));
    health.in_progress = true;
    Snapshot {
        taken_at: wall_clock_ms(),
        sequence: sequence + 1,
        source: client.source().clone(),
        queues: trackers.iter().map(QueueTracker::snapshot).collect(),
        health,
        sources: Vec::new(),
    }
}

/// One complete refresh for a one-shot command: the queues are resolved first (an unknown or
/// non-quota-managed queue is an error), then every job is described (no budget applies to
/// the first refresh: all jobs are new). No describe starts after `config.refresh_deadline`;
/// the listings and the describes in flight then may run to half as long again.
pub async fn refresh_once(client: &BatchClient, config: PollConfig) -> Result<Snapshot, PollError> {
    let mut policies = PolicyCache::default();
    discover(client, &config.queues, &mut policies).await?;
    let mut poller = Poller::new(config);
    poller.policies = policies;
    Ok(poller.refresh(client).await)
}

/// The running poller: snapshots arrive on `snapshots`.
pub struct PollHandle {
    pub snapshots: mpsc::Receiver<Snapshot>,
    /// Where the ids of jobs Batch's events name go (applied only with
    /// [`PollConfig::reconcile_every`]).
    named: mpsc::UnboundedSender<String>,
    refresh: std::sync::Arc<Notify>,
    stop: CancellationToken,
    task: Option<JoinHandle<()>>,
}

impl PollHandle {
    /// A sender of the ids of jobs Batch's events named: each is described at once and its
    /// snapshot sent (with [`PollConfig::reconcile_every`]; otherwise ignored).
    pub fn named(&self) -> mpsc::UnboundedSender<String> {
        self.named.clone()
    }

    /// Asks for a refresh now (coalesced: several requests during a refresh make one).
    pub fn refresh_now(&self) {
        self.refresh.notify_one();
    }

    /// A function that asks for a refresh now (for the console's services).
    pub fn refresher(&self) -> impl Fn() + Send + 'static {
        let notify = std::sync::Arc::clone(&self.refresh);
        move || notify.notify_one()
    }

    /// Stops the poller and waits for it (an in-flight refresh is abandoned).
    pub async fn shutdown(mut self) {
        self.stop.cancel();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for PollHandle {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Starts the poller on the current tokio runtime. The first refresh starts at once.
pub fn spawn(client: BatchClient, config: PollConfig) -> PollHandle {
    spawn_seeded(client, config, None)
}

/// [`spawn`], starting from a journaled snapshot when there is one ([`Poller::seed`]).
pub fn spawn_seeded(
    client: BatchClient,
    config: PollConfig,
    journaled: Option<&Snapshot>,
) -> PollHandle {
    let (tx, rx) = mpsc::channel(4);
    let refresh = std::sync::Arc::new(Notify::new());
    let stop = CancellationToken::new();
    let mut poller = Poller::new(config);
    if let Some(s) = journaled {
        poller.seed(s);
    }
    let (named, named_rx) = mpsc::unbounded_channel();
    let task = tokio::spawn(run(
        client,
        poller,
        (tx, named_rx),
        refresh.clone(),
        stop.clone(),
    ));
    PollHandle {
        snapshots: rx,
        named,
        refresh,
        stop,
        task: Some(task),
    }
}

/// One poller per named source (each with its own client and queues), their snapshots merged
/// by [`Fleet`] into one stream: every source's latest data after each refresh of any of them.
/// A refresh asked of the handle asks every source.
pub fn spawn_fleet(sources: Vec<(String, BatchClient, PollConfig)>) -> PollHandle {
    let (tx, rx) = mpsc::channel(4);
    let refresh = std::sync::Arc::new(Notify::new());
    let stop = CancellationToken::new();
    let mut fleet = Fleet::new(
        sources
            .iter()
            .map(|(name, client, _)| (name.clone(), client.source().clone()))
            .collect(),
    );
    let (part_tx, mut part_rx) = mpsc::channel::<(usize, Snapshot)>(4 * sources.len().max(1));
    let mut refreshers = Vec::new();
    let mut tasks = Vec::new();
    for (i, (_, client, config)) in sources.into_iter().enumerate() {
        let (one_tx, mut one_rx) = mpsc::channel(1);
        let one_refresh = std::sync::Arc::new(Notify::new());
        refreshers.push(one_refresh.clone());
        // A fleet applies no events: its sources' named jobs are never sent.
        let (_, no_named) = mpsc::unbounded_channel();
        tasks.push(tokio::spawn(run(
            client,
            Poller::new(config),
            (one_tx, no_named),
            one_refresh,
            stop.clone(),
        )));
        let part_tx = part_tx.clone();
        tasks.push(tokio::spawn(async move {
            while let Some(s) = one_rx.recv().await {
                if part_tx.send((i, s)).await.is_err() {
                    return;
                }
            }
        }));
    }
    drop(part_tx);
    let (asked, merge_stop) = (refresh.clone(), stop.clone());
    let task = tokio::spawn(async move {
        loop {
            tokio::select! {
                part = part_rx.recv() => {
                    let Some((i, s)) = part else { break };
                    let merged = fleet.update(i, s);
                    tokio::select! {
                        sent = tx.send(merged) => if sent.is_err() { break },
                        _ = merge_stop.cancelled() => break,
                    }
                }
                _ = asked.notified() => refreshers.iter().for_each(|r| r.notify_one()),
                _ = merge_stop.cancelled() => break,
            }
        }
        merge_stop.cancel();
        for t in tasks {
            let _ = t.await;
        }
    });
    let (named, _) = mpsc::unbounded_channel();
    PollHandle {
        snapshots: rx,
        named,
        refresh,
        stop,
        task: Some(task),
    }
}

/// The poller's task: a full refresh, its snapshot sent, then a wait for the next one (the
/// interval, or with [`PollConfig::reconcile_every`] the reconciliation's, backing off while
/// unhealthy), during which the jobs events name are described and their snapshots sent.
async fn run(
    client: BatchClient,
    mut poller: Poller,
    (tx, mut named): (mpsc::Sender<Snapshot>, mpsc::UnboundedReceiver<String>),
    refresh: std::sync::Arc<Notify>,
    stop: CancellationToken,
) {
    let events = poller.reconciling();
    loop {
        // Snapshots of the refresh in progress: dropped when the receiver is behind (the
        // next one, or the refresh's own, follows).
        let progress = tx.clone();
        let mut emit = move |s: Snapshot| {
            let _ = progress.try_send(s);
        };
        let snapshot = tokio::select! {
            s = poller.refresh_with(&client, &mut emit) => s,
            _ = stop.cancelled() => return,
        };
        tracing::debug!(
            sequence = snapshot.sequence,
            health = ?snapshot.health.state,
            "refresh done"
        );
        tokio::select! {
            sent = tx.send(snapshot) => if sent.is_err() { return },
            _ = stop.cancelled() => return,
        }
        // A throttling answer's Retry-After is followed: no refresh before it has passed.
        let wait = poller
            .next_delay()
            .max(client.stats().retry_after_left().unwrap_or_default());
        let full_at = tokio::time::Instant::now() + wait;
        loop {
            let settle_at = poller.next_settle().unwrap_or(full_at).min(full_at);
            let ids = tokio::select! {
                _ = tokio::time::sleep_until(full_at) => break,
                _ = refresh.notified() => break,
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep_until(settle_at), if settle_at < full_at => Vec::new(),
                id = named.recv(), if events => match id {
                    Some(id) => {
                        let mut ids = vec![id];
                        while let Ok(more) = named.try_recv() {
                            ids.push(more);
                        }
                        ids
                    }
                    None => {
                        // No sender left: wait for the next full refresh only.
                        tokio::select! {
                            _ = tokio::time::sleep_until(full_at) => {}
                            _ = refresh.notified() => {}
                            _ = stop.cancelled() => return,
                        }
                        break;
                    }
                },
            };
            let snapshot = tokio::select! {
                s = poller.describe_named(&client, ids) => s,
                _ = stop.cancelled() => return,
            };
            tokio::select! {
                sent = tx.send(snapshot) => if sent.is_err() { return },
                _ = stop.cancelled() => return,
            }
        }
    }
}
