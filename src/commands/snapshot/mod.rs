//! `quotatop snapshot`: one complete refresh of the quota-managed queues, printed as tables or
//! as the JSON document of [`json`] (docs/operator.md, section "snapshot").
//!
//! Exit status: 0 when every queue refreshed completely; non-zero with a message on stderr when
//! a queue is unknown or not quota-managed, AWS cannot be reached, or the output is incomplete
//! (it is still printed, with each stale queue's reason).

pub mod json;
pub mod table;

use crate::cli::{AwsArgs, SnapshotArgs, SnapshotFormat};
use quotatop_analysis::LoopRule;
use quotatop_aws::batch::{BatchClient, BatchError, ConnectOptions};
use quotatop_aws::poll::{self, PollConfig};
use quotatop_model::HealthState;

pub use json::{SCHEMA, SnapshotDoc, document};

pub fn connect_options(aws: &AwsArgs) -> ConnectOptions {
    ConnectOptions {
        profile: aws.profile.clone(),
        region: aws.region.clone(),
        endpoint_url: aws.endpoint_url.clone(),
        credentials: None,
    }
}

/// A client for `aws` and one refresh of `queues` (all when empty): what a command acting on one
/// job (`logs`, `set-priority`) reads first.
pub async fn connect_and_refresh(
    aws: &AwsArgs,
    queues: &[String],
) -> anyhow::Result<(BatchClient, quotatop_model::Snapshot)> {
    let client = BatchClient::connect(connect_options(aws)).await?;
    let config = PollConfig {
        queues: queues.to_vec(),
        ..PollConfig::default()
    };
    let snapshot = poll::refresh_once(&client, config).await?;
    Ok((client, snapshot))
}

/// Sustained throttling ends as a timeout: the SDK's adaptive rate limiter holds the retries
/// back until the operation's deadline. When the API did answer, and answered 429, that is
/// throttling, not an endpoint that cannot be reached.
fn throttled_not_unreachable(
    result: Result<quotatop_model::Snapshot, poll::PollError>,
    client: &BatchClient,
) -> Result<quotatop_model::Snapshot, poll::PollError> {
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

/// The named sources `--source` (or the config's `[[sources]]`, read from `QUOTATOP_CONFIG` or
/// the default config file) pick; empty for the one source of the flags, as before sources.
fn named_sources(args: &SnapshotArgs) -> anyhow::Result<Vec<crate::config::SelectedSource>> {
    if args.target.sources.is_empty() && args.target.aws.explicit() {
        return Ok(Vec::new());
    }
    let loaded = crate::config::load(&crate::config::Overrides::default());
    if loaded.config.sources.is_empty() && args.target.sources.is_empty() {
        return Ok(Vec::new());
    }
    super::sources::named_for_queues(
        &loaded,
        &args.target.queues,
        &args.target.sources,
        args.target.aws.explicit(),
    )
}

/// One complete refresh of each named source, merged; a source that cannot be refreshed is
/// an error naming it.
async fn fleet_snapshot(
    named: Vec<crate::config::SelectedSource>,
    args: &SnapshotArgs,
) -> anyhow::Result<quotatop_model::Snapshot> {
    use anyhow::Context as _;
    let sources = super::sources::connect(named).await?;
    let mut fleet = quotatop_model::Fleet::new(
        sources
            .iter()
            .map(|s| (s.name.clone(), s.client.source().clone()))
            .collect(),
    );
    let mut merged = quotatop_model::Snapshot::default();
    for (i, s) in sources.iter().enumerate() {
        let config = PollConfig {
            queues: s.queues.clone(),
            concurrency: args.concurrency as usize,
            refresh_deadline: std::time::Duration::from_secs(120),
            ..PollConfig::default()
        };
        let result = poll::refresh_once(&s.client, config).await;
        let one = throttled_not_unreachable(result, &s.client)
            .with_context(|| format!("source {}", s.name))?;
        merged = fleet.update(i, one);
    }
    Ok(merged)
}

pub fn run(args: &SnapshotArgs) -> anyhow::Result<()> {
    let runtime = crate::commands::runtime()?;
    let named = named_sources(args)?;
    let snapshot = runtime.block_on(async {
        if !named.is_empty() {
            return fleet_snapshot(named, args).await;
        }
        let client = BatchClient::connect(connect_options(&args.target.aws)).await?;
        let config = PollConfig {
            queues: args.target.queues.clone(),
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
                quotatop_model::escape_c1_in_json(serde_json::to_string_pretty(&doc)?)
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
        || snapshot.health.state == HealthState::Expired
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
