//! `quotatop snapshot`: one complete refresh of the quota-managed queues, printed as tables or
//! as the JSON document of [`json`] (README, section "snapshot").
//!
//! Exit status: 0 when every queue refreshed completely; non-zero with a message on stderr when
//! a queue is unknown or not quota-managed, AWS cannot be reached, or the output is incomplete
//! (it is still printed, with each stale queue's reason).

pub mod json;
pub mod table;

use crate::analysis::LoopRule;
use crate::batch::{BatchClient, BatchError, ConnectOptions};
use crate::cli::{AwsArgs, SnapshotArgs, SnapshotFormat};
use crate::model::HealthState;
use crate::poll::{self, PollConfig};

pub use json::{SCHEMA, SnapshotDoc, document};

pub fn connect_options(aws: &AwsArgs) -> ConnectOptions {
    ConnectOptions {
        profile: aws.profile.clone(),
        region: aws.region.clone(),
        endpoint_url: aws.endpoint_url.clone(),
        credentials: None,
    }
}

/// Sustained throttling ends as a timeout: the SDK's adaptive rate limiter holds the retries
/// back until the operation's deadline. When the API did answer, and answered 429, that is
/// throttling, not an endpoint that cannot be reached.
fn throttled_not_unreachable(
    result: Result<crate::model::Snapshot, poll::PollError>,
    client: &BatchClient,
) -> Result<crate::model::Snapshot, poll::PollError> {
    let throttled = client.stats().last_minute().throttled;
    match result {
        Err(poll::PollError::Batch(BatchError::Unreachable { op, message })) if throttled > 0 => {
            Err(poll::PollError::Batch(BatchError::Throttled {
                op,
                message: format!(
                    "{throttled} attempts answered HTTP 429 (TooManyRequestsException) in the last minute; retries gave up ({message})"
                ),
            }))
        }
        other => other,
    }
}

pub fn run(args: &SnapshotArgs) -> anyhow::Result<()> {
    let runtime = crate::commands::runtime()?;
    let snapshot = runtime.block_on(async {
        let client = BatchClient::connect(connect_options(&args.aws)).await?;
        let config = PollConfig {
            queues: args.queues.clone(),
            concurrency: args.concurrency as usize,
            refresh_deadline: std::time::Duration::from_secs(120),
            ..PollConfig::default()
        };
        let result = poll::refresh_once(&client, config).await;
        anyhow::Ok(throttled_not_unreachable(result, &client)?)
    })?;
    let doc = document(&snapshot, &LoopRule::default());
    match args.format {
        SnapshotFormat::Json => {
            println!(
                "{}",
                crate::model::escape_c1_in_json(serde_json::to_string_pretty(&doc)?)
            );
        }
        SnapshotFormat::Table => print!("{}", table::render(&doc)),
    }
    let stale: Vec<String> = doc
        .queues
        .iter()
        .filter_map(|q| q.stale_reason.as_ref().map(|r| format!("{}: {r}", q.name)))
        .collect();
    if snapshot.health.state == HealthState::Unreachable
        || snapshot.health.state == HealthState::Denied
        || snapshot.health.state == HealthState::NoCredentials
        || !stale.is_empty()
    {
        anyhow::bail!(
            "snapshot incomplete ({}): {}",
            doc.health.state,
            if stale.is_empty() {
                doc.health.last_error.clone().unwrap_or_default()
            } else {
                stale.join("; ")
            }
        );
    }
    Ok(())
}
