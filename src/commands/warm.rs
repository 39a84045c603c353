//! Warm start: `tui` and `record` begin from the newest snapshot the journal holds. The console
//! shows it at once, marked "from history, N min old" (never as live or complete), until the
//! first refresh replaces it; the poller starts from it ([`quotatop_aws::poll::Poller::seed`]), so it
//! describes only the jobs whose listing differs from the journaled facts, and a restart costs
//! about what a steady refresh costs.
//!
//! `demo` does not warm start: its world starts afresh every run, so an earlier run's journal
//! describes another world that happens to use the same job ids.

use tokio::sync::mpsc;

use quotatop_model::{Snapshot, Source};
use quotatop_store::StoreLocation;
use quotatop_store::journal::{Journal, JournalConfig};

/// The newest snapshot journaled at `path`, marked from history, with only the queues named in
/// `queues` (names or ARNs; empty: all) and `source` as where the data will come from. `None`
/// when there is no journal, no snapshot, or it cannot be read (logged: a warm start is an
/// optimisation, never a reason not to start).
pub fn load(path: &std::path::Path, queues: &[String], source: &Source) -> Option<Snapshot> {
    load_at(&StoreLocation::File(path.to_path_buf()), queues, source)
}

/// [`load`] from a file or a PostgreSQL store.
pub fn load_at(location: &StoreLocation, queues: &[String], source: &Source) -> Option<Snapshot> {
    let read = Journal::open_existing_at(location, JournalConfig::default())
        .and_then(|j| j.newest_snapshot());
    let snapshot = match read {
        Ok(s) => s?,
        Err(e) => {
            tracing::info!(error = %e, "no warm start from the journal");
            return None;
        }
    };
    let mut warm = snapshot.into_history();
    // Only the one implicit source's queues: a snapshot a `[[sources]]` console journaled holds
    // other sources' queues too, which this poller does not read.
    warm.queues.retain(|q| q.source.is_none());
    warm.sources.clear();
    if !queues.is_empty() {
        warm.queues
            .retain(|q| queues.iter().any(|n| *n == q.name || *n == q.arn));
    }
    if warm.queues.is_empty() {
        return None;
    }
    warm.source = source.clone();
    tracing::info!(
        taken_at = warm.taken_at,
        queues = warm.queues.len(),
        "warm start from the journal"
    );
    Some(warm)
}

/// The console's snapshots: `warm` first (when there is one), then every live one.
pub fn chain(
    warm: Option<Snapshot>,
    mut live: mpsc::Receiver<Snapshot>,
) -> mpsc::Receiver<Snapshot> {
    let Some(warm) = warm else {
        return live;
    };
    let (tx, rx) = mpsc::channel(4);
    tokio::spawn(async move {
        if tx.send(warm).await.is_err() {
            return;
        }
        while let Some(s) = live.recv().await {
            if tx.send(s).await.is_err() {
                return;
            }
        }
    });
    rx
}
