//! `record`'s loops over the poller's snapshots: [`record_loop`] journals them, [`serve_loop`]
//! (`--no-journal`) only serves them; [`RecordSummary`] is what a session did.

use std::future::Future;

use tokio::sync::mpsc;

use quotatop_model::Snapshot;
use quotatop_store::journal::JournalHandle;

use super::LOG_TARGET;

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
            tracing::info!(target: LOG_TARGET, "shutdown requested");
            None
        }
        next = snapshots.recv() => {
            if next.is_none() {
                tracing::warn!(target: LOG_TARGET, "the poller stopped");
            }
            next
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
            tracing::debug!(target: LOG_TARGET, sequence = seq, queues, "snapshot queued");
        }
        let status = journal.status();
        if let Some(m) = metrics {
            m.update_journal(status.clone());
        }
        match (&status.unavailable, was_unavailable) {
            (Some(why), false) => {
                tracing::error!(target: LOG_TARGET, %why, "journal unavailable: recording nothing")
            }
            (None, true) => tracing::info!(target: LOG_TARGET, "journal writing again"),
            _ => {}
        }
        was_unavailable = status.unavailable.is_some();
        // The writer runs behind the loop by a snapshot or so; a streak only grows
        // while nothing new is stored at all.
        if status.snapshots_written > last_written {
            if last_written == 0 {
                tracing::info!(
                    target: LOG_TARGET,
                    written = status.snapshots_written,
                    "journaling: first snapshots written"
                );
            }
            (last_written, streak) = (status.snapshots_written, 0);
        } else {
            streak += 1;
        }
        if max_unjournaled > 0 && streak >= max_unjournaled {
            tracing::error!(
                target: LOG_TARGET,
                streak,
                error = ?status.last_error,
                "giving up: nothing journaled"
            );
            summary.gave_up_after = Some(streak);
            break;
        }
    }
    journal.flush();
    let st = journal.status();
    summary.written = st.snapshots_written;
    summary.last_error = st.last_error.clone();
    tracing::info!(
        target: LOG_TARGET,
        received = summary.received,
        written = st.snapshots_written,
        transitions = st.transitions_written,
        dropped = st.dropped,
        "recording stopped"
    );
    summary
}
