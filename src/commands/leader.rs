//! `record --store`: of several recorders of one source on one store, one leads and records;
//! the others stand by until it dies or its lease lapses (`quotatop_store::Lead`: a session
//! advisory lock and a lease renewed every 2 s; its writes are fenced by the lease's epoch).

use std::time::Duration;

use crate::cli::RecordArgs;
use crate::commands::record::LOG_TARGET;
use crate::metrics::server::Latest;
use quotatop_store::{Fence, Lead, Role, StoreLocation};

/// How often the recorder looks at its lead.
const LOOK: Duration = Duration::from_millis(200);

/// What the lock is named after: the same flags name the same source.
pub fn source_key(args: &RecordArgs) -> String {
    let mut queues = args.target.queues.clone();
    queues.sort();
    let mut sources = args.target.sources.clone();
    sources.sort();
    format!(
        "endpoint={:?} region={:?} profile={:?} queues={queues:?} sources={sources:?}",
        args.target.aws.endpoint_url, args.target.aws.region, args.target.aws.profile
    )
}

/// Waits until this recorder leads (its fence), or until `shutdown` (`None`), reporting the
/// role in `/metrics` and on stderr.
pub async fn wait_to_lead(
    lead: &Lead,
    latest: &Latest,
    shutdown: impl Future<Output = ()>,
) -> Option<Fence> {
    tokio::pin!(shutdown);
    let mut said = None;
    let mut failures_seen = 0;
    loop {
        let role = lead.role();
        if !matches!(role, Role::Refused { .. }) && latest.refused().is_some() {
            tracing::info!(target: LOG_TARGET, "the store takes this recorder again");
            eprintln!("quotatop record: the store takes this recorder again");
            latest.set_refused(None);
        }
        match &role {
            Role::Leader(fence) => {
                latest.set_leader(true);
                eprintln!(
                    "quotatop record: leading (lease epoch {}); recording",
                    fence.epoch()
                );
                return Some(fence.clone());
            }
            Role::Lost(_) => return None,
            Role::Starting => latest.set_leader(false),
            Role::Standby => {
                latest.set_leader(false);
                if said.as_ref() != Some(&role) {
                    eprintln!(
                        "quotatop record: standing by: another recorder leads this source on the store"
                    );
                    said = Some(role.clone());
                }
            }
            Role::Refused {
                why,
                failures,
                retry_in,
            } => {
                latest.set_leader(false);
                // Each failed try counts once, and is said once.
                if *failures != failures_seen {
                    failures_seen = *failures;
                    latest.set_refused(Some(why.clone()));
                    tracing::error!(target: LOG_TARGET, %why, failures, retry_in_s = retry_in.as_secs(), "the store refuses this recorder: recording nothing");
                    eprintln!(
                        "quotatop record: error: the store refuses this recorder ({why}); recording nothing, trying again in {} s (failed tries in a row: {failures})",
                        retry_in.as_secs()
                    );
                    said = None;
                }
            }
        }
        tokio::select! {
            () = &mut shutdown => return None,
            () = tokio::time::sleep(LOOK) => {}
        }
    }
}

/// The lead of the store at `location` for `args`' source: `None` without a shared store.
pub fn start(args: &RecordArgs, location: Option<&StoreLocation>) -> anyhow::Result<Option<Lead>> {
    match location {
        Some(StoreLocation::Postgres(url)) => Ok(Some(Lead::spawn(url.clone(), source_key(args))?)),
        _ => Ok(None),
    }
}

/// A recording session's end: `stop` (SIGTERM/SIGINT), or the lead lost.
pub async fn stop_or_lost(lead: Option<&Lead>, stop: &tokio_util::sync::CancellationToken) {
    tokio::select! {
        () = stop.cancelled() => {}
        _ = lost(lead) => {}
    }
}

/// Resolves when the lead is lost, or never without one.
async fn lost(lead: Option<&Lead>) -> String {
    let Some(lead) = lead else {
        return std::future::pending().await;
    };
    loop {
        if let Role::Lost(why) = lead.role() {
            return why;
        }
        tokio::time::sleep(LOOK).await;
    }
}
