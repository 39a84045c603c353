//! `quotatop record`: the poller and the journal without a screen (a server, a systemd unit),
//! logging to the state directory, stopping cleanly on SIGTERM/SIGINT.
//!
//! The command-line entry waits for the poller (`poll/`, branch `data`); what is here is the
//! part that does not depend on it: [`record_loop`] journals every snapshot a channel delivers
//! until shutdown, [`shutdown_signal`] resolves on SIGTERM or SIGINT, and [`init_file_logging`]
//! sends `tracing` to `<state dir>/record.log`. Wiring, once `poll` is on main:
//!
//! ```ignore
//! let client = batch::BatchClient::connect(ConnectOptions { profile, region, endpoint_url, credentials: None }).await?;
//! let poller = poll::spawn(client, PollConfig { queues, ..Default::default() });
//! let journal = JournalHandle::start(&path, JournalConfig::default());
//! record_loop(poller.snapshots, &journal, shutdown_signal()).await;
//! journal.shutdown();
//! ```

use std::future::Future;
use std::path::{Path, PathBuf};

use tokio::sync::mpsc;

use crate::journal::JournalHandle;
use crate::model::Snapshot;

/// What a recording session did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecordSummary {
    pub received: u64,
    pub queued: u64,
}

/// Journals every snapshot from `snapshots` until `shutdown` resolves or the channel closes,
/// then waits for the journal to write what is queued.
pub async fn record_loop(
    mut snapshots: mpsc::Receiver<Snapshot>,
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
    let mut o = std::fs::OpenOptions::new();
    o.create(true).append(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
    let file = o.open(&path)?;
    tracing_subscriber::fmt()
        .with_writer(std::sync::Mutex::new(file))
        .with_ansi(false)
        .try_init()
        .map_err(|e| anyhow::anyhow!("cannot start logging: {e}"))?;
    Ok(path)
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
        let journal = JournalHandle::start(&path, JournalConfig::default());
        let (tx, rx) = mpsc::channel(4);
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let task = async {
            record_loop(rx, &journal, async {
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

    #[tokio::test]
    async fn a_closed_poller_ends_the_loop() {
        let dir = tempfile::tempdir().unwrap();
        let journal = JournalHandle::start(&dir.path().join("j.sqlite3"), JournalConfig::default());
        let (tx, rx) = mpsc::channel(1);
        drop(tx);
        let s = record_loop(rx, &journal, std::future::pending()).await;
        assert_eq!(s, RecordSummary::default());
    }
}
