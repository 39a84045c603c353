//! What `tui`, `snapshot` and `record` share about `[[sources]]`: which named sources the
//! config and `--source` pick, a client for each, and one poller per source merged into one
//! stream of snapshots ([`quotatop_aws::poll::spawn_fleet`]). When no named source is picked, the
//! commands keep their single-source path unchanged.

use anyhow::Context as _;

use crate::config::{Config, SelectedSource};
use quotatop_aws::batch::{BatchClient, ConnectOptions};
use quotatop_aws::poll::{self, PollConfig, PollHandle};

/// A named source with its client.
pub struct Connected {
    pub name: String,
    pub client: BatchClient,
    pub queues: Vec<String>,
}

/// [`named`] for a command whose `--queue` flags replace the config's queues.
pub fn named_for_queues(
    loaded: &crate::config::Loaded,
    queues: &[String],
    wanted: &[String],
    explicit_aws: bool,
) -> anyhow::Result<Vec<SelectedSource>> {
    let mut config = loaded.config.clone();
    config.queues = queues.to_vec();
    named(&config, wanted, explicit_aws, loaded.broken.as_deref())
}

/// The named sources to poll; empty when the one implicit source applies (no `[[sources]]`
/// in the config, or `--profile`/`--region`/`--endpoint-url` without `--source`). An unknown
/// `--source` is an error naming the known ones.
pub fn named(
    config: &Config,
    wanted: &[String],
    explicit_aws: bool,
    broken: Option<&str>,
) -> anyhow::Result<Vec<SelectedSource>> {
    let selected = config
        .select_sources(wanted, explicit_aws)
        .map_err(|e| match broken {
            // The file's sources are unknown because the file could not be used: say so.
            Some(why) => anyhow::anyhow!("{e}; the config file could not be used: {why}"),
            None => anyhow::Error::msg(e),
        })?;
    Ok(selected.into_iter().filter(|s| s.name.is_some()).collect())
}

/// A client per source (connecting loads configuration only, no call yet: a bad profile is
/// reported here, naming the source).
pub async fn connect(selected: Vec<SelectedSource>) -> anyhow::Result<Vec<Connected>> {
    let mut out = Vec::new();
    for s in selected {
        let name = s.name.unwrap_or_default();
        let client = BatchClient::connect(ConnectOptions {
            profile: s.profile,
            region: s.region,
            endpoint_url: s.endpoint_url,
            credentials: None,
        })
        .await
        .with_context(|| format!("source {name}"))?;
        out.push(Connected {
            name,
            client,
            queues: s.queues,
        });
    }
    Ok(out)
}

/// One poller per source with `config` (each with its own queues), merged.
pub fn spawn(sources: &[Connected], config: &PollConfig) -> PollHandle {
    poll::spawn_fleet(
        sources
            .iter()
            .map(|s| {
                (
                    s.name.clone(),
                    s.client.clone(),
                    PollConfig {
                        queues: s.queues.clone(),
                        ..config.clone()
                    },
                )
            })
            .collect(),
    )
}
