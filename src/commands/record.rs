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

use crate::batch::BatchClient;
use crate::cli::RecordArgs;
use crate::journal::{self, JournalHandle};
use crate::model::Snapshot;
use crate::poll::{self, PollConfig};

/// `quotatop record`.
pub fn run(args: &RecordArgs) -> anyhow::Result<()> {
    let log_dir = match &args.log_dir {
        Some(d) => d.clone(),
        None => journal::state_dir()?,
    };
    let log = init_file_logging(&log_dir)?;
    let path = match &args.journal {
        Some(p) => p.clone(),
        None => journal::default_journal_path()?,
    };
    eprintln!(
        "quotatop record: journal {}, log {}; stop with Ctrl-C or SIGTERM",
        path.display(),
        log.display()
    );
    let loaded = crate::config::load(&crate::config::Overrides {
        config_path: args.config.clone(),
        ..Default::default()
    });
    for w in &loaded.warnings {
        eprintln!("warning: {w}");
    }
    let journal_config = loaded.config.journal.config();
    let rt = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    rt.block_on(async {
        let client = BatchClient::connect(super::snapshot::connect_options(&args.aws)).await?;
        let poller = poll::spawn(
            client,
            PollConfig {
                interval: Duration::from_secs(args.interval),
                queues: args.queues.clone(),
                ..PollConfig::default()
            },
        );
        let journal = JournalHandle::start(&path, journal_config);
        if let Some(why) = journal.status().unavailable {
            eprintln!("warning: the journal is unavailable ({why}); recording nothing until it is");
        }
        tracing::info!(journal = %path.display(), queues = ?args.queues, "recording");
        let mut poller = poller;
        let summary = record_loop(&mut poller.snapshots, &journal, shutdown_signal()).await;
        poller.shutdown().await;
        journal.shutdown();
        eprintln!(
            "quotatop record: stopped after {} snapshots ({} journaled)",
            summary.received, summary.queued
        );
        anyhow::Ok(())
    })
}

/// What a recording session did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecordSummary {
    pub received: u64,
    pub queued: u64,
}

/// Journals every snapshot from `snapshots` until `shutdown` resolves or the channel closes,
/// then waits for the journal to write what is queued.
pub async fn record_loop(
    snapshots: &mut mpsc::Receiver<Snapshot>,
    journal: &JournalHandle,
    shutdown: impl Future<Output = ()>,
) -> RecordSummary {
    let mut summary = RecordSummary::default();
    let mut was_unavailable = false;
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
                if journal.record(snap) {
                    summary.queued += 1;
                    tracing::debug!(sequence = seq, queues, "snapshot queued");
                }
                let status = journal.status();
                match (&status.unavailable, was_unavailable) {
                    (Some(why), false) => tracing::error!(%why, "journal unavailable: recording nothing"),
                    (None, true) => tracing::info!("journal writing again"),
                    _ => {}
                }
                was_unavailable = status.unavailable.is_some();
            }
        }
    }
    journal.flush();
    let st = journal.status();
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
    std::fs::create_dir_all(dir)?;
    let path = dir.join("record.log");
    let file = open_private_log(&path)?;
    tracing_subscriber::fmt()
        .with_writer(std::sync::Mutex::new(file))
        .with_ansi(false)
        .try_init()
        .map_err(|e| anyhow::anyhow!("cannot start logging: {e}"))?;
    Ok(path)
}

/// Opens `path` for appending with mode 0600, also when it already existed with a looser mode.
fn open_private_log(path: &Path) -> std::io::Result<std::fs::File> {
    let mut o = std::fs::OpenOptions::new();
    o.create(true).append(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
    let file = o.open(path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::{Journal, JournalConfig};
    use crate::model::{JobStatus, QueueSnapshot};

    fn snap(t: i64, status: JobStatus) -> Snapshot {
        let mut j = crate::analysis::fixture::job("x", "a", "ml.g5.xlarge", 1, status, 1, 1_000);
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
        let journal = JournalHandle::start(&path, crate::journal::JournalConfig::default());
        let (tx, mut rx) = mpsc::channel(4);
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let task = async {
            record_loop(&mut rx, &journal, async {
                let _ = stop_rx.await;
            })
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
            summary,
            RecordSummary {
                received: 2,
                queued: 2
            }
        );
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
        let s = record_loop(&mut rx, &journal, std::future::pending()).await;
        assert_eq!(s, RecordSummary::default());
    }
}
