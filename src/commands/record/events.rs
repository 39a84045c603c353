//! `record --events-queue`: Batch's events long-polled from the SQS queue `events setup` made,
//! kept in the journal in event-time order, each message deleted only after the journal
//! committed its event. A kill loses nothing: an undeleted message comes back after the
//! visibility timeout, and the journal keeps an event id once, so a duplicate (or a message
//! delivered again) changes nothing.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail};
use tokio_util::sync::CancellationToken;

use quotatop_aws::batch::{BatchClient, LONGEST_POLL_S, QueueMessage};
use quotatop_model::BatchEvent;
use quotatop_store::StoreLocation;
use quotatop_store::journal::{Journal, JournalConfig};

use super::LOG_TARGET;

/// Seconds a received message stays hidden: how long after a kill its event comes again.
pub const VISIBILITY_S: i32 = 10;
/// Pause after a failed receive or journal write before trying again.
const RETRY_AFTER: Duration = Duration::from_secs(2);

/// Where the jobs the events name go: the recording session's poller (none while it stands
/// by, or polls several sources), which describes them at once.
#[derive(Debug, Clone, Default)]
pub struct Named(Arc<std::sync::Mutex<Option<tokio::sync::mpsc::UnboundedSender<String>>>>);

impl Named {
    pub fn set(&self, to: Option<tokio::sync::mpsc::UnboundedSender<String>>) {
        if let Ok(mut g) = self.0.lock() {
            *g = to;
        }
    }

    /// Hands the jobs `events` name to the poller (each once).
    fn send(&self, events: &[BatchEvent]) {
        let Ok(g) = self.0.lock() else { return };
        let Some(tx) = g.as_ref() else { return };
        let mut ids: Vec<&str> = events
            .iter()
            .map(|e| e.job_id.as_str())
            .filter(|id| !id.is_empty())
            .collect();
        ids.sort_unstable();
        ids.dedup();
        for id in ids {
            let _ = tx.send(id.to_string());
        }
    }
}

/// The queue's URL: `queue` itself when it is one, else the URL of the queue of that name.
async fn resolve(client: &BatchClient, queue: &str) -> anyhow::Result<String> {
    if queue.starts_with("http://") || queue.starts_with("https://") {
        return Ok(queue.to_string());
    }
    client
        .queue_url(queue)
        .await
        .map_err(|e| anyhow!(quotatop_model::clean_text(&e.to_string())))?
        .ok_or_else(|| {
            anyhow!(
                "--events-queue: there is no SQS queue {}: make it with `quotatop events setup --queue {}`",
                quotatop_model::clean_text(queue),
                quotatop_model::clean_text(queue)
            )
        })
}

/// Starts the intake of `--events-queue` (none without it) on its own client and journal
/// connection: refused before anything runs when the queue cannot be found or the journal is
/// not a file.
pub async fn start(
    args: &crate::cli::RecordArgs,
    location: Option<&StoreLocation>,
    config: JournalConfig,
    (stop, outside, named): (CancellationToken, crate::metrics::OutsideChanges, Named),
) -> anyhow::Result<Option<tokio::task::JoinHandle<()>>> {
    let Some(queue) = &args.events_queue else {
        return Ok(None);
    };
    let Some(StoreLocation::File(path)) = location else {
        bail!(
            "--events-queue keeps Batch's events in a SQLite journal (--journal FILE or the default file); a PostgreSQL store does not keep them yet"
        );
    };
    let client =
        BatchClient::connect(crate::commands::snapshot::connect_options(&args.target.aws)).await?;
    let url = resolve(&client, queue).await?;
    let journal = Arc::new(Journal::open(path, config)?);
    tracing::info!(target: LOG_TARGET, %url, "taking Batch's events from the queue");
    count_outside(&journal, &outside).await;
    Ok(Some(tokio::spawn(async move {
        intake(&client, &url, &journal, (&stop, &outside, &named)).await;
    })))
}

/// The events of `messages`, in event-time order (then by id), and the messages that hold no
/// Batch event (deleted too: they would come back forever).
fn events_of(messages: &[QueueMessage]) -> (Vec<BatchEvent>, usize) {
    let mut events: Vec<BatchEvent> = messages
        .iter()
        .filter_map(|m| BatchEvent::parse(&m.body))
        .collect();
    let unreadable = messages.len() - events.len();
    events.sort_by(|a, b| (a.time, &a.id).cmp(&(b.time, &b.id)));
    (events, unreadable)
}

/// The journal's calls made outside quotatop per call name, for `/metrics` (the audit log
/// `QUOTATOP_AUDIT_LOG` names, else the default one, tells quotatop's own apart).
async fn count_outside(journal: &Arc<Journal>, cell: &crate::metrics::OutsideChanges) {
    let j = Arc::clone(journal);
    let counted = tokio::task::spawn_blocking(move || -> anyhow::Result<Vec<(String, usize)>> {
        let path = std::env::var_os("QUOTATOP_AUDIT_LOG")
            .map(std::path::PathBuf::from)
            .or_else(quotatop_store::audit::default_path);
        let changes = match path.filter(|p| p.exists()) {
            Some(p) => {
                quotatop_store::audit::changes(&quotatop_store::audit::read_log(&p)?.records)
            }
            None => Vec::new(),
        };
        let found =
            crate::commands::audit::outside::outside_changes(Some(&j), Vec::new(), &changes, 0)?;
        // Every judged call from 0, so a first change is an increase a rule sees.
        let mut by_call: std::collections::BTreeMap<String, usize> = quotatop_model::JUDGED_CALLS
            .iter()
            .map(|c| ((*c).to_string(), 0))
            .collect();
        for o in found {
            *by_call.entry(o.call.name).or_default() += 1;
        }
        Ok(by_call.into_iter().collect())
    })
    .await;
    match counted {
        Ok(Ok(v)) => cell.set(v),
        Ok(Err(e)) => {
            tracing::warn!(target: LOG_TARGET, error = %format!("{e:#}"), "changes made outside quotatop not counted")
        }
        Err(e) => {
            tracing::warn!(target: LOG_TARGET, error = %e, "counting changes made outside quotatop failed")
        }
    }
}

async fn intake(
    client: &BatchClient,
    url: &str,
    journal: &Arc<Journal>,
    (stop, outside, named): (&CancellationToken, &crate::metrics::OutsideChanges, &Named),
) {
    loop {
        let got = tokio::select! {
            () = stop.cancelled() => return,
            r = client.receive_messages(url, LONGEST_POLL_S, VISIBILITY_S) => r,
        };
        let messages = match got {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!(target: LOG_TARGET, error = %e, "cannot receive Batch's events");
                pause(stop).await;
                continue;
            }
        };
        if messages.is_empty() {
            continue;
        }
        let (events, unreadable) = events_of(&messages);
        if unreadable > 0 {
            tracing::warn!(target: LOG_TARGET, unreadable, "messages that hold no Batch event, deleted");
        }
        let j = Arc::clone(journal);
        let kept =
            tokio::task::spawn_blocking(move || j.apply_events(&events).map(|n| (n, events))).await;
        match kept {
            Ok(Ok((added, events))) => {
                // Committed: the poller describes the jobs they name at once.
                named.send(&events);
                tracing::debug!(target: LOG_TARGET, added, received = messages.len(), "events journaled");
                if added > 0 {
                    count_outside(journal, outside).await;
                }
            }
            Ok(Err(e)) => {
                // Not deleted: the messages come back after the visibility timeout.
                tracing::warn!(target: LOG_TARGET, error = %e, "cannot journal Batch's events; they come again");
                pause(stop).await;
                continue;
            }
            Err(e) => {
                tracing::warn!(target: LOG_TARGET, error = %e, "event intake task failed");
                continue;
            }
        }
        for m in &messages {
            if let Err(e) = client.delete_message(url, &m.receipt).await {
                // Kept already: when it comes again, the journal skips it.
                tracing::warn!(target: LOG_TARGET, error = %e, "cannot delete a journaled event's message");
            }
        }
    }
}

async fn pause(stop: &CancellationToken) {
    tokio::select! {
        () = stop.cancelled() => {}
        () = tokio::time::sleep(RETRY_AFTER) => {}
    }
}
