//! `quotatop record`: the poller and the journal without a screen (a server, a systemd unit),
//! logging to the state directory, stopping cleanly on SIGTERM/SIGINT.
//!
//! [`run`] connects, starts the poller and the journal writer, and hands every snapshot to
//! [`record_loop`] until [`shutdown_signal`]; [`init_named_file_logging`] sends `tracing` to
//! `<state dir>/record.log`, rotated by size while it runs.

use std::future::Future;
use std::path::{Path, PathBuf};

use std::time::Duration;

use anyhow::Context;
use tokio::sync::mpsc;

use crate::cli::RecordArgs;
use quotatop_aws::batch::BatchClient;
use quotatop_aws::poll::{self, PollConfig};
use quotatop_model::Snapshot;
use quotatop_store::StoreLocation;
use quotatop_store::journal::{self, JournalHandle};

use super::log_file::{RotatingLog, Rotation};

/// `quotatop record`.
pub fn run(args: &RecordArgs) -> anyhow::Result<()> {
    let loaded = crate::config::load(&crate::config::Overrides {
        config_path: args.config.clone(),
        ..Default::default()
    });
    let location = journal_location(args, &loaded)?;
    let log_dir = match &args.log_dir {
        Some(d) => d.clone(),
        None => journal::state_dir()?,
    };
    let rotation = Rotation {
        max_bytes: args.log_max_bytes,
        keep: args.log_keep,
    };
    let log = init_named_file_logging(&log_dir, "record.log", rotation, args.log_level.into())
        .with_context(|| format!("cannot write record.log in {}", log_dir.display()))?;
    eprintln!(
        "quotatop record: {}, log {}; stop with Ctrl-C or SIGTERM",
        location.as_ref().map_or_else(
            || "no journal (--no-journal)".to_string(),
            |l| format!("journal {l}")
        ),
        log.display()
    );
    for w in &loaded.warnings {
        eprintln!("warning: {w}");
    }
    let journal_config = loaded.config.journal.config();
    // `[[sources]]` of the config, picked by `--source`: one poller each, one journal.
    let named = super::sources::named_for_queues(
        &loaded,
        &args.target.queues,
        &args.target.sources,
        args.target.aws.explicit(),
    )?;
    if let Some(addr) = args.metrics_addr {
        crate::metrics::server::check_bind(addr, args.metrics_allow_remote)?;
    }
    // The class policy beside the config: its breaches are exported with the metrics.
    let class_policy = match super::policy::for_changes(loaded.path.as_deref()) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("warning: {e:#}; no policy metrics");
            None
        }
    };
    let metrics_ctx = crate::metrics::Context {
        rule: loaded.config.loop_rule(),
        gpus: quotatop_analysis::GpuTable::with_overrides(loaded.config.gpus.clone()),
        policy: crate::metrics::PolicyBreaches::default(),
    };
    let session = Session {
        args,
        location: location.as_ref(),
        named,
        class_policy,
        policy_cell: metrics_ctx.policy.clone(),
        policy_window: super::policy::window(&loaded.config),
        journal_config,
    };
    let rt = super::runtime()?;
    rt.block_on(async {
        let latest = if location.is_some() {
            crate::metrics::server::Latest::default()
        } else {
            crate::metrics::server::Latest::without_journal()
        };
        let metrics = Metrics::start(args.metrics_addr, &latest, metrics_ctx).await?;
        // SIGTERM/SIGINT, whether it comes while standing by or recording.
        let stop = tokio_util::sync::CancellationToken::new();
        let signal = {
            let stop = stop.clone();
            tokio::spawn(async move {
                shutdown_signal().await;
                stop.cancel();
            })
        };
        let result = lead_and_record(&session, &latest, &metrics, &stop).await;
        signal.abort();
        metrics.stop().await;
        result
    })
}

/// What every recording session of `record` starts from.
struct Session<'a> {
    args: &'a RecordArgs,
    location: Option<&'a StoreLocation>,
    /// `[[sources]]` of the config, picked by `--source`: one poller each, one journal.
    named: Vec<crate::config::SelectedSource>,
    /// The class policy beside the config: its breaches are exported with the metrics.
    class_policy: Option<quotatop_policy::Policy>,
    policy_cell: crate::metrics::PolicyBreaches,
    policy_window: String,
    journal_config: journal::JournalConfig,
}

/// On a shared store, one recorder per source records and the others stand by: waits to
/// lead, records until `stop` or the lead is lost, and after a lost lead (another recorder
/// took it over: this one was frozen or cut off) stands by again. Without a shared store,
/// records until `stop`.
async fn lead_and_record(
    s: &Session<'_>,
    latest: &crate::metrics::server::Latest,
    metrics: &Metrics,
    stop: &tokio_util::sync::CancellationToken,
) -> anyhow::Result<()> {
    let mut lead = super::leader::start(s.args, s.location)?;
    loop {
        let fence = match &lead {
            Some(l) => match super::leader::wait_to_lead(l, latest, stop.cancelled()).await {
                Some(f) => Some(f),
                None => {
                    eprintln!("quotatop record: stopped while standing by");
                    return Ok(());
                }
            },
            None => None,
        };
        let summary = record_session(s, fence, lead.as_ref(), latest, metrics, stop).await?;
        if let Some(quotatop_store::Role::Lost(why)) = lead.as_ref().map(quotatop_store::Lead::role)
        {
            latest.step_down();
            tracing::warn!(%why, "lost the lead; standing by");
            eprintln!(
                "quotatop record: stepped down after {} snapshots ({} journaled): {why}; standing by",
                summary.received, summary.written
            );
            if stop.is_cancelled() {
                return Ok(());
            }
            lead = super::leader::start(s.args, s.location)?;
            continue;
        }
        eprintln!(
            "quotatop record: stopped after {} snapshots ({} journaled)",
            summary.received, summary.written
        );
        return match summary.failure(s.location.map(|l| l as &dyn std::fmt::Display)) {
            Some(why) => {
                tracing::error!(%why, "recording failed");
                Err(anyhow::anyhow!(why))
            }
            None => Ok(()),
        };
    }
}

/// One recording session: the poller, the journal (fenced by `fence` when leading a shared
/// store) and the policy task, until `stop` or the lead is lost.
async fn record_session(
    s: &Session<'_>,
    fence: Option<quotatop_store::Fence>,
    lead: Option<&quotatop_store::Lead>,
    latest: &crate::metrics::server::Latest,
    metrics: &Metrics,
    stop: &tokio_util::sync::CancellationToken,
) -> anyhow::Result<RecordSummary> {
    let args = s.args;
    let session_stop = stop.child_token();
    // The policy's breaches are read from the journal (a file or the team's store):
    // without one, there are none to read.
    let policy_task = match (&s.class_policy, &metrics.task, s.location) {
        (Some(policy), Some(_), Some(journal)) => Some(tokio::spawn(policy_loop(
            PolicyLoop {
                policy: policy.clone(),
                journal: journal.clone(),
                window: s.policy_window.clone(),
                latest: latest.clone(),
                cell: s.policy_cell.clone(),
            },
            session_stop.clone(),
        ))),
        _ => None,
    };
    let poll_config = PollConfig {
        interval: Duration::from_secs(args.interval),
        queues: args.target.queues.clone(),
        ..PollConfig::default()
    };
    let mut poller = if s.named.is_empty() {
        let client =
            BatchClient::connect(super::snapshot::connect_options(&args.target.aws)).await?;
        // A warm start: only the jobs that changed while it was stopped are described.
        let warm = s
            .location
            .and_then(|l| super::warm::load_at(l, &args.target.queues, client.source()));
        poll::spawn_seeded(client, poll_config, warm.as_ref())
    } else {
        let sources = super::sources::connect(s.named.clone()).await?;
        let names: Vec<&str> = sources.iter().map(|s| s.name.as_str()).collect();
        tracing::info!(sources = ?names, "recording several sources");
        super::sources::spawn(&sources, &poll_config)
    };
    let journal = s
        .location
        .map(|l| JournalHandle::start_fenced(l, s.journal_config, fence));
    if let Some(why) = journal.as_ref().and_then(|j| j.status().unavailable) {
        eprintln!("warning: the journal is unavailable ({why}); recording nothing until it is");
    }
    tracing::info!(
        journal = %s.location.map_or_else(|| "none".to_string(), ToString::to_string),
        queues = ?args.target.queues,
        "recording"
    );
    let summary = match &journal {
        Some(journal) => {
            record_loop(
                &mut poller.snapshots,
                journal,
                args.max_unjournaled,
                super::leader::stop_or_lost(lead, stop),
                metrics.task.is_some().then_some(latest),
            )
            .await
        }
        None => serve_loop(&mut poller.snapshots, stop.cancelled(), latest).await,
    };
    session_stop.cancel();
    if let Some(task) = policy_task {
        task.await.ok();
    }
    poller.shutdown().await;
    if let Some(journal) = journal {
        journal.shutdown();
    }
    Ok(summary)
}

/// `/metrics` while `record` runs (`task` is `None` without `--metrics-addr`).
struct Metrics {
    task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
    stop: tokio_util::sync::CancellationToken,
}

impl Metrics {
    /// Serves `latest` on `addr`, when given.
    async fn start(
        addr: Option<std::net::SocketAddr>,
        latest: &crate::metrics::server::Latest,
        ctx: crate::metrics::Context,
    ) -> anyhow::Result<Self> {
        let stop = tokio_util::sync::CancellationToken::new();
        let Some(addr) = addr else {
            return Ok(Self { task: None, stop });
        };
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("cannot serve metrics on {addr}"))?;
        let bound = listener.local_addr()?;
        eprintln!("quotatop record: metrics on http://{bound}/metrics");
        tracing::info!(%bound, "serving metrics");
        let task = tokio::spawn(crate::metrics::server::serve(
            listener,
            latest.clone(),
            ctx,
            stop.clone(),
        ));
        Ok(Self {
            task: Some(task),
            stop,
        })
    }

    /// Stops the endpoint (its connections are closed) and waits for it.
    async fn stop(self) {
        self.stop.cancel();
        if let Some(task) = self.task {
            match task.await {
                Ok(Err(e)) => tracing::warn!(error = %e, "the metrics endpoint failed"),
                Err(e) => tracing::warn!(error = %e, "the metrics endpoint stopped"),
                Ok(Ok(())) => {}
            }
        }
    }
}

/// What a recording session did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecordSummary {
    /// Snapshots the poller delivered.
    pub received: u64,
    /// Snapshots handed to the journal writer.
    pub queued: u64,
    /// Snapshots the journal stored (after the final flush).
    pub written: u64,
    /// Set when the loop stopped because too many snapshots in a row were not journaled.
    pub gave_up_after: Option<u64>,
    /// The journal's last error, if any.
    pub last_error: Option<String>,
}

impl RecordSummary {
    /// Why this session counts as failed (the command then exits non-zero), if it does: it
    /// gave up after snapshots in a row went unjournaled, or it journaled nothing at all
    /// (without a journal, `None`: it received no snapshot to serve).
    pub fn failure(&self, journal: Option<&dyn std::fmt::Display>) -> Option<String> {
        let Some(journal) = journal else {
            return (self.received == 0).then(|| {
                "served nothing: the poller delivered no snapshot (see record.log)".to_string()
            });
        };
        let why = self
            .last_error
            .as_deref()
            .map(|e| format!(": {e}"))
            .unwrap_or_default();
        if let Some(n) = self.gave_up_after {
            return Some(format!(
                "gave up after {n} snapshots in a row were not journaled in {journal}{why}"
            ));
        }
        if self.written == 0 {
            return Some(if self.received == 0 {
                "journaled nothing: the poller delivered no snapshot (see record.log)".to_string()
            } else {
                format!(
                    "journaled nothing of {} snapshots in {journal}{why}",
                    self.received
                )
            });
        }
        None
    }
}

/// Where `record` journals: `None` with `--no-journal`; else `--journal`, `--store`
/// (`QUOTATOP_STORE`), `[store] url` or the default file. A file is refused before anything is
/// created when it is a device, FIFO, directory or link.
fn journal_location(
    args: &RecordArgs,
    loaded: &crate::config::Loaded,
) -> anyhow::Result<Option<StoreLocation>> {
    if args.no_journal {
        return Ok(None);
    }
    let location = super::store::journal_location(
        args.journal.as_deref(),
        &args.store,
        loaded.config.store.url.as_deref(),
    )?;
    if let StoreLocation::File(path) = &location {
        quotatop_store::private_file::check_kind(path, "journal").map_err(|e| {
            anyhow::anyhow!(
                "{}; record keeps its history in the journal (to keep none and only serve /metrics, add --no-journal)",
                quotatop_model::clean_text(&e.to_string())
            )
        })?;
    }
    Ok(Some(location))
}

/// `record --no-journal`: every snapshot from `snapshots` is what `/metrics` serves next,
/// until `shutdown` resolves or the channel closes; nothing is journaled.
pub async fn serve_loop(
    snapshots: &mut mpsc::Receiver<Snapshot>,
    shutdown: impl Future<Output = ()>,
    metrics: &crate::metrics::server::Latest,
) -> RecordSummary {
    let mut summary = RecordSummary::default();
    tokio::pin!(shutdown);
    while let Some(snap) = next_snapshot(snapshots, shutdown.as_mut()).await {
        summary.received += 1;
        metrics.update_snapshot(snap);
    }
    summary
}

/// The next snapshot of both loops, or `None` (logged) when `shutdown` resolves first or the
/// poller's channel closed.
async fn next_snapshot(
    snapshots: &mut mpsc::Receiver<Snapshot>,
    shutdown: std::pin::Pin<&mut impl Future<Output = ()>>,
) -> Option<Snapshot> {
    tokio::select! {
        () = shutdown => {
            tracing::info!("shutdown requested");
            None
        }
        next = snapshots.recv() => {
            if next.is_none() {
                tracing::warn!("the poller stopped");
            }
            next
        }
    }
}

/// What the policy task of `record --metrics-addr` needs.
struct PolicyLoop {
    policy: quotatop_policy::Policy,
    /// The journal recorded into: a file or the team's store.
    journal: StoreLocation,
    /// The scorecard window (`[scorecard] window_hours`), as `--since` reads it.
    window: String,
    latest: crate::metrics::server::Latest,
    cell: crate::metrics::PolicyBreaches,
}

/// How often the policy's breaches are read again from the journal.
const POLICY_EVERY: Duration = Duration::from_secs(30);

/// Every [`POLICY_EVERY`] until `stop`: the breaches of the latest snapshot's queues, as
/// `policy check` counts them over the scorecard window, for the next scrapes.
async fn policy_loop(p: PolicyLoop, stop: tokio_util::sync::CancellationToken) {
    let p = std::sync::Arc::new(p);
    loop {
        let queues = p.latest.queue_names();
        // Until the first snapshot names the queues, look again each second.
        let mut wait = Duration::from_secs(1);
        if !queues.is_empty() {
            let q = std::sync::Arc::clone(&p);
            let computed = tokio::task::spawn_blocking(move || {
                super::policy::breaches(&q.journal, None, &q.policy, &queues, &q.window)
            })
            .await;
            if let Ok(v) = computed {
                if !v.is_empty() {
                    wait = POLICY_EVERY;
                }
                p.cell.set(v);
            }
        }
        tokio::select! {
            () = stop.cancelled() => break,
            () = tokio::time::sleep(wait) => {}
        }
    }
}

/// Journals every snapshot from `snapshots` until `shutdown` resolves or the channel closes,
/// then waits for the journal to write what is queued. Stops early when `max_unjournaled`
/// snapshots in a row (0: never) went by without the journal storing anything. With
/// `metrics`, each snapshot (and the journal's status) is also what `/metrics` serves next.
pub async fn record_loop(
    snapshots: &mut mpsc::Receiver<Snapshot>,
    journal: &JournalHandle,
    max_unjournaled: u64,
    shutdown: impl Future<Output = ()>,
    metrics: Option<&crate::metrics::server::Latest>,
) -> RecordSummary {
    let mut summary = RecordSummary::default();
    let mut was_unavailable = false;
    let (mut last_written, mut streak) = (0u64, 0u64);
    tokio::pin!(shutdown);
    while let Some(snap) = next_snapshot(snapshots, shutdown.as_mut()).await {
        summary.received += 1;
        let (seq, queues) = (snap.sequence, snap.queues.len());
        if let Some(m) = metrics {
            m.update(snap.clone(), journal.status());
        }
        if journal.record(snap) {
            summary.queued += 1;
            tracing::debug!(sequence = seq, queues, "snapshot queued");
        }
        let status = journal.status();
        if let Some(m) = metrics {
            m.update_journal(status.clone());
        }
        match (&status.unavailable, was_unavailable) {
            (Some(why), false) => tracing::error!(%why, "journal unavailable: recording nothing"),
            (None, true) => tracing::info!("journal writing again"),
            _ => {}
        }
        was_unavailable = status.unavailable.is_some();
        // The writer runs behind the loop by a snapshot or so; a streak only grows
        // while nothing new is stored at all.
        if status.snapshots_written > last_written {
            if last_written == 0 {
                tracing::info!(
                    written = status.snapshots_written,
                    "journaling: first snapshots written"
                );
            }
            (last_written, streak) = (status.snapshots_written, 0);
        } else {
            streak += 1;
        }
        if max_unjournaled > 0 && streak >= max_unjournaled {
            tracing::error!(streak, error = ?status.last_error, "giving up: nothing journaled");
            summary.gave_up_after = Some(streak);
            break;
        }
    }
    journal.flush();
    let st = journal.status();
    summary.written = st.snapshots_written;
    summary.last_error = st.last_error.clone();
    tracing::info!(
        received = summary.received,
        written = st.snapshots_written,
        transitions = st.transitions_written,
        dropped = st.dropped,
        "recording stopped"
    );
    summary
}

/// Resolves on SIGTERM or SIGINT (Ctrl-C elsewhere).
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) {
            (Ok(mut term), Ok(mut int)) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = int.recv() => {}
                }
            }
            _ => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Sends `tracing` output at `level` and above to `<dir>/<name>` (appended, mode 0600,
/// rotated by size while it runs: [`super::log_file`]); returns the file's path.
pub fn init_named_file_logging(
    dir: &Path,
    name: &str,
    rotation: Rotation,
    level: tracing::Level,
) -> anyhow::Result<PathBuf> {
    quotatop_store::private_file::create_dir(dir, false)?;
    let path = dir.join(name);
    let file = RotatingLog::open(&path, rotation)?;
    tracing_subscriber::fmt()
        .with_writer(std::sync::Mutex::new(file))
        .with_max_level(level)
        .with_ansi(false)
        .try_init()
        .map_err(|e| anyhow::anyhow!("cannot start logging: {e}"))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use quotatop_model::{JobStatus, QueueSnapshot};
    use quotatop_store::journal::{Journal, JournalConfig};

    fn snap(t: i64, status: JobStatus) -> Snapshot {
        let mut j = quotatop_analysis::fixture::job("x", "a", "ml.g5.xlarge", 1, status, 1, 1_000);
        j.listed_at = t;
        Snapshot {
            taken_at: t,
            sequence: t as u64,
            queues: vec![QueueSnapshot {
                name: "q".into(),
                jobs: vec![j],
                server_time: Some(t),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn records_until_shutdown_then_flushes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.sqlite3");
        let journal =
            JournalHandle::start(&path, quotatop_store::journal::JournalConfig::default());
        let (tx, mut rx) = mpsc::channel(4);
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let task = async {
            record_loop(
                &mut rx,
                &journal,
                0,
                async {
                    let _ = stop_rx.await;
                },
                None,
            )
            .await
        };
        let feed = async {
            tx.send(snap(2_000, JobStatus::Pending)).await.unwrap();
            tx.send(snap(5_000, JobStatus::Runnable)).await.unwrap();
            tokio::task::yield_now().await;
            // Both sends were taken before the stop (the channel is drained in order).
            while tx.capacity() < 4 {
                tokio::task::yield_now().await;
            }
            let _ = stop_tx.send(());
        };
        let (summary, ()) = tokio::join!(task, feed);
        assert_eq!(
            (summary.received, summary.queued, summary.written),
            (2, 2, 2)
        );
        assert_eq!(summary.failure(Some(&path.display())), None);
        journal.shutdown();
        let j = Journal::open_existing(&path, JournalConfig::default()).unwrap();
        let kinds: Vec<_> = j
            .transitions("id-x")
            .unwrap()
            .into_iter()
            .map(|t| (t.kind.as_str(), t.at))
            .collect();
        assert_eq!(kinds, [("submitted", 1_000), ("runnable", 5_000)]);
    }

    #[cfg(unix)]
    #[test]
    fn the_log_is_private_even_if_it_existed_with_a_looser_mode() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("record.log");
        std::fs::write(&path, "old\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        drop(RotatingLog::open(&path, super::super::log_file::DEFAULT_ROTATION).unwrap());
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let fresh = dir.path().join("new.log");
        drop(RotatingLog::open(&fresh, super::super::log_file::DEFAULT_ROTATION).unwrap());
        let mode = std::fs::metadata(&fresh).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    #[tokio::test]
    async fn a_closed_poller_ends_the_loop() {
        let dir = tempfile::tempdir().unwrap();
        let journal = JournalHandle::start(&dir.path().join("j.sqlite3"), JournalConfig::default());
        let (tx, mut rx) = mpsc::channel(1);
        drop(tx);
        let s = record_loop(&mut rx, &journal, 0, std::future::pending(), None).await;
        assert_eq!((s.received, s.written), (0, 0));
        assert!(
            s.failure(Some(&dir.path().display()))
                .unwrap()
                .contains("journaled nothing")
        );
    }

    /// A journal that cannot be opened (its directory is a file) is tried again with back-off;
    /// once the obstacle is gone the same session journals, and until then the loop gives up
    /// after `max_unjournaled` snapshots with a reason that names the path.
    #[tokio::test]
    async fn an_unavailable_journal_is_retried_and_a_hopeless_one_fails_loudly() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("sub");
        std::fs::write(&blocker, "not a directory").unwrap();
        let path = blocker.join("j.sqlite3");

        // Hopeless: gives up after 3 snapshots in a row, naming the journal.
        let journal = JournalHandle::start(&path, JournalConfig::default());
        assert!(journal.status().unavailable.is_some());
        let (tx, mut rx) = mpsc::channel(16);
        for t in 1..=10 {
            tx.send(snap(t * 1_000, JobStatus::Pending)).await.unwrap();
        }
        let s = record_loop(&mut rx, &journal, 3, std::future::pending(), None).await;
        assert_eq!(s.gave_up_after, Some(3));
        let why = s.failure(Some(&path.display())).unwrap();
        assert!(why.contains("3 snapshots in a row"), "{why}");
        assert!(why.contains(&path.display().to_string()), "{why}");
        journal.shutdown();

        // Recoverable: the directory appears after the first failure; after the back-off
        // the writer opens the journal and stores what comes next.
        let journal = JournalHandle::start(&path, JournalConfig::default());
        journal.record(snap(1_000, JobStatus::Pending));
        journal.flush();
        assert_eq!(journal.status().snapshots_written, 0);
        std::fs::remove_file(&blocker).unwrap();
        std::fs::create_dir(&blocker).unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while journal.status().snapshots_written == 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "{:?}",
                journal.status()
            );
            journal.record(snap(2_000, JobStatus::Runnable));
            journal.flush();
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let st = journal.status();
        assert_eq!(st.reopened, 1);
        assert!(st.unavailable.is_none());
        assert!(st.last_error.is_some());
        journal.shutdown();
    }
}
