//! `record --store`: of several recorders of one source on one store, one leads and records;
//! the others stand by until it dies or its lease lapses (`quotatop_store::Lead`: a session
//! advisory lock and a lease renewed every 2 s; its writes are fenced by the lease's epoch).

use std::time::Duration;

use crate::cli::RecordArgs;
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
    loop {
        let role = lead.role();
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
            Role::Standby(why) => {
                latest.set_leader(false);
                if said.as_ref() != Some(&role) {
                    match why {
                        None => eprintln!(
                            "quotatop record: standing by: another recorder leads this source on the store"
                        ),
                        Some(w) => eprintln!("quotatop record: standing by: {w}"),
                    }
                    said = Some(role.clone());
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
