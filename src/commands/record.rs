//! `quotatop record`: the poller and the journal without a screen (a server, a systemd unit),
//! logging to the state directory, stopping cleanly on SIGTERM/SIGINT.
//!
//! [`run`] connects, starts the poller and the journal writer, and hands every snapshot to
//! [`record_loop`] until [`shutdown_signal`]; [`init_file_logging`] sends `tracing` to
//! `<state dir>/record.log`.

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

/// `quotatop record`.
pub fn run(args: &RecordArgs) -> anyhow::Result<()> {
    let loaded = crate::config::load(&crate::config::Overrides {
        config_path: args.config.clone(),
        ..Default::default()
    });
    let location = super::store::journal_location(
        args.journal.as_deref(),
        &args.store,
        loaded.config.store.url.as_deref(),
    )?;
    // Before anything is created: a device, FIFO, directory or link is no journal.
    if let StoreLocation::File(path) = &location {
        quotatop_store::private_file::check_kind(path, "journal").map_err(|e| {
            anyhow::anyhow!(
                "{}; record keeps its history in the journal (to watch without keeping history, run `quotatop console --no-journal`)",
                quotatop_model::clean_text(&e.to_string())
            )
        })?;
    }
    let log_dir = match &args.log_dir {
        Some(d) => d.clone(),
        None => journal::state_dir()?,
    };
    let log = init_file_logging(&log_dir)
        .with_context(|| format!("cannot write record.log in {}", log_dir.display()))?;
    eprintln!(
        "quotatop record: journal {location}, log {}; stop with Ctrl-C or SIGTERM",
        log.display()
    );
    for w in &loaded.warnings {
        eprintln!("warning: {w}");
    }
    let journal_config = loaded.config.journal.config();
    // `[[sources]]` of the config, picked by `--source`: one poller each, one journal.
    let named = {
        let mut config = loaded.config.clone();
        config.queues.clone_from(&args.queues);
        super::sources::named(
            &config,
            &args.sources,
            args.aws.explicit(),
            loaded.broken.as_deref(),
        )?
    };
    if let Some(addr) = args.metrics_addr {
        crate::metrics::server::check_bind(addr, args.metrics_allow_remote)
            .map_err(|why| anyhow::anyhow!(why))?;
    }
    let metrics_ctx = crate::metrics::Context {
        rule: loaded.config.loop_rule(),
        gpus: quotatop_analysis::GpuTable::with_overrides(loaded.config.gpus.clone()),
    };
    let rt = super::runtime()?;
    rt.block_on(async {
        let latest = crate::metrics::server::Latest::default();
        let stop_metrics = tokio_util::sync::CancellationToken::new();
        let metrics_task = match args.metrics_addr {
            Some(addr) => {
                let listener = tokio::net::TcpListener::bind(addr)
                    .await
                    .with_context(|| format!("cannot serve metrics on {addr}"))?;
                let bound = listener.local_addr()?;
                eprintln!("quotatop record: metrics on http://{bound}/metrics");
                tracing::info!(%bound, "serving metrics");
                Some(tokio::spawn(crate::metrics::server::serve(
                    listener,
                    latest.clone(),
                    metrics_ctx,
                    stop_metrics.clone(),
                )))
            }
            None => None,
        };
        let poll_config = PollConfig {
            interval: Duration::from_secs(args.interval),
            queues: args.queues.clone(),
            ..PollConfig::default()
        };
        let poller = if named.is_empty() {
            let client = BatchClient::connect(super::snapshot::connect_options(&args.aws)).await?;
            // A warm start: only the jobs that changed while it was stopped are described.
            let warm = super::warm::load_at(&location, &args.queues, client.source());
            poll::spawn_seeded(client, poll_config, warm.as_ref())
        } else {
            let sources = super::sources::connect(named).await?;
            let names: Vec<&str> = sources.iter().map(|s| s.name.as_str()).collect();
            tracing::info!(sources = ?names, "recording several sources");
            super::sources::spawn(&sources, &poll_config)
        };
        let journal = JournalHandle::start_at(&location, journal_config);
        if let Some(why) = journal.status().unavailable {
            eprintln!("warning: the journal is unavailable ({why}); recording nothing until it is");
        }
        tracing::info!(journal = %location, queues = ?args.queues, "recording");
        let mut poller = poller;
        let summary = record_loop(
            &mut poller.snapshots,
            &journal,
            args.max_unjournaled,
            shutdown_signal(),
            metrics_task.is_some().then_some(&latest),
        )
        .await;
        stop_metrics.cancel();
        if let Some(task) = metrics_task {
            match task.await {
                Ok(Err(e)) => tracing::warn!(error = %e, "the metrics endpoint failed"),
                Err(e) => tracing::warn!(error = %e, "the metrics endpoint stopped"),
                Ok(Ok(())) => {}
            }
        }
        poller.shutdown().await;
        journal.shutdown();
        eprintln!(
            "quotatop record: stopped after {} snapshots ({} journaled)",
            summary.received, summary.written
        );
        match summary.failure(&location) {
            Some(why) => {
                tracing::error!(%why, "recording failed");
                Err(anyhow::anyhow!(why))
            }
            None => anyhow::Ok(()),
        }
    })
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
    /// gave up after snapshots in a row went unjournaled, or it journaled nothing at all.
    pub fn failure(&self, journal: &dyn std::fmt::Display) -> Option<String> {
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
    loop {
        tokio::select! {
            _ = &mut shutdown => {
                tracing::info!("shutdown requested");
                break;
            }
            next = snapshots.recv() => {
                let Some(snap) = next else {
                    tracing::warn!("the poller stopped");
                    break;
                };
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
                        tracing::info!(written = status.snapshots_written, "journaling: first snapshots written");
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

/// Sends `tracing` output to `<dir>/record.log` (appended, mode 0600); returns the file's path.
pub fn init_file_logging(dir: &Path) -> anyhow::Result<PathBuf> {
    init_named_file_logging(dir, "record.log", None)
}

/// Sends `tracing` output to `<dir>/<name>` (appended, mode 0600); returns the file's path.
/// With `rotate_over`, a file already larger than that many bytes is first renamed to
/// `<name>.1` (replacing the one before), so the log stays bounded across runs.
pub fn init_named_file_logging(
    dir: &Path,
    name: &str,
    rotate_over: Option<u64>,
) -> anyhow::Result<PathBuf> {
    quotatop_store::private_file::create_dir(dir, false)?;
    let path = dir.join(name);
    if let Some(max) = rotate_over {
        rotate_if_over(&path, max)?;
    }
    let file = open_private_log(&path)?;
    tracing_subscriber::fmt()
        .with_writer(std::sync::Mutex::new(file))
        .with_ansi(false)
        .try_init()
        .map_err(|e| anyhow::anyhow!("cannot start logging: {e}"))?;
    Ok(path)
}

/// Renames `path` to `path.1` (replacing it) when it is larger than `max` bytes.
fn rotate_if_over(path: &Path, max: u64) -> std::io::Result<()> {
    if std::fs::metadata(path).is_ok_and(|m| m.len() > max) {
        let mut old = path.as_os_str().to_owned();
        old.push(".1");
        std::fs::rename(path, PathBuf::from(old))?;
    }
    Ok(())
}

/// Opens `path` for appending with mode 0600, also when it already existed with a looser mode;
/// a path that is not a regular file is refused untouched.
fn open_private_log(path: &Path) -> std::io::Result<std::fs::File> {
    quotatop_store::private_file::open(path, "log", true)
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

    #[test]
    fn a_log_over_its_limit_is_rotated_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("console.log");
        rotate_if_over(&path, 10).unwrap();
        assert!(!path.exists(), "nothing to rotate");
        std::fs::write(&path, "0123456789").unwrap();
        rotate_if_over(&path, 10).unwrap();
        assert!(path.exists(), "at the limit: kept");
        std::fs::write(&path, "0123456789ab").unwrap();
        rotate_if_over(&path, 10).unwrap();
        assert!(!path.exists());
        let old = dir.path().join("console.log.1");
        assert_eq!(std::fs::read_to_string(old).unwrap(), "0123456789ab");
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
        assert_eq!(summary.failure(&path.display()), None);
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
        drop(open_private_log(&path).unwrap());
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let fresh = dir.path().join("new.log");
        drop(open_private_log(&fresh).unwrap());
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
            s.failure(&dir.path().display())
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
        let why = s.failure(&path.display()).unwrap();
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
