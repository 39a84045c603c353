//! `record`'s leadership and sessions: on a shared store, wait to lead, record, and stand by
//! again after a lost lead; one recording session (poller, journal, policy task) at a time.

use std::time::Duration;

use quotatop_aws::batch::BatchClient;
use quotatop_aws::poll::{self, PollConfig};
use quotatop_store::journal::JournalHandle;

use super::LOG_TARGET;
use super::Session;
use super::endpoint::{Metrics, PolicyLoop, policy_loop};
use super::loops::{RecordSummary, record_loop, serve_loop};

/// On a shared store, one recorder per source records and the others stand by: waits to
/// lead, records until `stop` or the lead is lost, and after a lost lead (another recorder
/// took it over: this one was frozen or cut off) stands by again. Without a shared store,
/// records until `stop`.
pub(super) async fn lead_and_record(
    s: &Session<'_>,
    latest: &crate::metrics::server::Latest,
    metrics: &Metrics,
    stop: &tokio_util::sync::CancellationToken,
) -> anyhow::Result<()> {
    let mut lead = crate::commands::leader::start(s.args, s.location)?;
    // Snapshots journaled by every session of this run.
    let mut journaled = 0;
    loop {
        let fence = match &lead {
            Some(l) => {
                match crate::commands::leader::wait_to_lead(l, latest, stop.cancelled()).await {
                    Some(f) => Some(f),
                    None => return stopped_standing_by(latest, journaled),
                }
            }
            None => None,
        };
        let summary = record_session(s, fence, lead.as_ref(), latest, metrics, stop).await?;
        journaled += summary.written;
        if let Some(quotatop_store::Role::Lost(why)) = lead.as_ref().map(quotatop_store::Lead::role)
        {
            latest.step_down();
            tracing::warn!(target: LOG_TARGET, %why, "lost the lead; standing by");
            eprintln!(
                "quotatop record: stepped down after {} snapshots ({} journaled): {why}; standing by",
                summary.received, summary.written
            );
            if stop.is_cancelled() {
                return Ok(());
            }
            lead = crate::commands::leader::start(s.args, s.location)?;
            continue;
        }
        eprintln!(
            "quotatop record: stopped after {} snapshots ({} journaled)",
            summary.received, summary.written
        );
        return match summary.failure(s.location.map(|l| l as &dyn std::fmt::Display)) {
            Some(why) => {
                tracing::error!(target: LOG_TARGET, %why, "recording failed");
                Err(anyhow::anyhow!(why))
            }
            None => Ok(()),
        };
    }
}

/// The end of a run stopped while it stood by: a failure when the store was refusing this
/// recorder and nothing was journaled (a run that achieved nothing); else (another recorder
/// led, or this one journaled before) a clean stop.
fn stopped_standing_by(
    latest: &crate::metrics::server::Latest,
    journaled: u64,
) -> anyhow::Result<()> {
    match latest.refused() {
        Some(why) if journaled == 0 => {
            let why = format!(
                "journaled nothing: the store refused this recorder until it was stopped ({why}); check the store's URL, password and grants (docs/team.md)"
            );
            tracing::error!(target: LOG_TARGET, %why, "recording failed");
            Err(anyhow::anyhow!(why))
        }
        _ => {
            eprintln!("quotatop record: stopped while standing by");
            Ok(())
        }
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
    let mut poller = spawn_poller(s, poll_config).await?;
    let journal = s
        .location
        .map(|l| JournalHandle::start_fenced(l, s.journal_config, fence));
    if let Some(why) = journal.as_ref().and_then(|j| j.status().unavailable) {
        eprintln!("warning: the journal is unavailable ({why}); recording nothing until it is");
    }
    tracing::info!(
        target: LOG_TARGET,
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
                crate::commands::leader::stop_or_lost(lead, stop),
                metrics.task.is_some().then_some(latest),
            )
            .await
        }
        None => serve_loop(&mut poller.snapshots, stop.cancelled(), latest).await,
    };
    s.events_named.set(None);
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

/// The session's poller: with Batch's events (one source), the jobs they name are described at
/// once and the full listing is a reconciliation every `--reconcile-every` (several sources
/// poll as without events).
async fn spawn_poller(
    s: &Session<'_>,
    poll_config: PollConfig,
) -> anyhow::Result<poll::PollHandle> {
    let args = s.args;
    // With Batch's events, the named jobs are described at once and the full listing is a
    // reconciliation (one source only: several sources poll as without events).
    let reconcile = args
        .events_queue
        .is_some()
        .then_some(args.reconcile_every)
        .filter(|_| s.named.is_empty());
    Ok(if s.named.is_empty() {
        let client =
            BatchClient::connect(crate::commands::snapshot::connect_options(&args.target.aws))
                .await?;
        // A warm start: only the jobs that changed while it was stopped are described.
        let warm = s
            .location
            .and_then(|l| crate::commands::warm::load_at(l, &args.target.queues, client.source()));
        let poller = poll::spawn_seeded(
            client,
            PollConfig {
                reconcile_every: reconcile,
                ..poll_config
            },
            warm.as_ref(),
        );
        if reconcile.is_some() {
            s.events_named.set(Some(poller.named()));
        }
        poller
    } else {
        let sources = crate::commands::sources::connect(s.named.clone()).await?;
        let names: Vec<&str> = sources.iter().map(|s| s.name.as_str()).collect();
        tracing::info!(target: LOG_TARGET, sources = ?names, "recording several sources");
        crate::commands::sources::spawn(&sources, &poll_config)
    })
}
