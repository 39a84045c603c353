//! `[[sources]]`: several AWS accounts and regions in one console (or one `record`, one
//! `snapshot`). Each source is a name, a profile, a region, optionally an endpoint and its own
//! queues; `--source NAME` (repeatable) picks some. Without `[[sources]]`, the single
//! `profile`/`region`/`endpoint_url` configuration is the one implicit source, as before.

use serde::{Deserialize, Serialize};

use super::Config;

/// One `[[sources]]` entry.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SourceConfig {
    /// Shown on the Overview and the status bar, and what the journal and audit log key its
    /// queues by: letters, digits, `-`, `_`, `.`.
    pub name: String,
    pub profile: Option<String>,
    pub region: Option<String>,
    pub endpoint_url: Option<String>,
    /// This source's queues (names or ARNs); empty: the top-level `queues` (or `--queue`),
    /// else every quota-managed queue.
    pub queues: Vec<String>,
}

/// Where one poller connects: a named source, or the implicit one (`name: None`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SelectedSource {
    pub name: Option<String>,
    pub profile: Option<String>,
    pub region: Option<String>,
    pub endpoint_url: Option<String>,
    pub queues: Vec<String>,
}

/// Longest source name.
const MAX_NAME: usize = 64;

/// A `[[sources]]` list that cannot be used, or a `--source` it does not have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SourcesError {
    #[error(
        "sources[{index}]: name `{}` must be 1 to {MAX_NAME} letters, digits, `-`, `_` or `.`",
        quotatop_model::clean_text(name)
    )]
    BadName { index: usize, name: String },
    #[error("sources: the name `{0}` is used twice (each source needs its own)")]
    Duplicate(String),
    /// `known` names the config's sources, or says it has none.
    #[error("unknown source `{}` ({known})", quotatop_model::clean_text(name))]
    Unknown { name: String, known: String },
}

/// The `[[sources]]` list is usable: every name non-empty, of letters, digits, `-`, `_`, `.`
/// (it is written into queue keys, journal rows and audit records), and unique.
pub fn validate(sources: &[SourceConfig]) -> Result<(), SourcesError> {
    let mut seen = std::collections::BTreeSet::new();
    for (i, s) in sources.iter().enumerate() {
        let ok = !s.name.is_empty()
            && s.name.len() <= MAX_NAME
            && s.name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !ok {
            return Err(SourcesError::BadName {
                index: i,
                name: s.name.clone(),
            });
        }
        if !seen.insert(s.name.as_str()) {
            return Err(SourcesError::Duplicate(s.name.clone()));
        }
    }
    Ok(())
}

impl Config {
    /// The sources to poll. `--source` names (`wanted`) pick from `[[sources]]`, in the
    /// config's order; an unknown name is an error naming the known ones. Without `--source`,
    /// every `[[sources]]` entry, unless there are none or the command line named a profile,
    /// region or endpoint (`explicit_aws`): then the one implicit source of `profile`,
    /// `region`, `endpoint_url` and `queues`, exactly as without sources.
    pub fn select_sources(
        &self,
        wanted: &[String],
        explicit_aws: bool,
    ) -> Result<Vec<SelectedSource>, SourcesError> {
        let known = || {
            if self.sources.is_empty() {
                "the config has no [[sources]]".to_string()
            } else {
                let names: Vec<&str> = self.sources.iter().map(|s| s.name.as_str()).collect();
                format!("known sources: {}", names.join(", "))
            }
        };
        for w in wanted {
            if !self.sources.iter().any(|s| &s.name == w) {
                return Err(SourcesError::Unknown {
                    name: w.clone(),
                    known: known(),
                });
            }
        }
        if wanted.is_empty() && (self.sources.is_empty() || explicit_aws) {
            return Ok(vec![SelectedSource {
                name: None,
                profile: self.profile.clone(),
                region: self.region.clone(),
                endpoint_url: self.endpoint_url.clone(),
                queues: self.queues.clone(),
            }]);
        }
        Ok(self
            .sources
            .iter()
            .filter(|s| wanted.is_empty() || wanted.contains(&s.name))
            .map(|s| SelectedSource {
                name: Some(s.name.clone()),
                profile: s.profile.clone(),
                region: s.region.clone(),
                endpoint_url: s.endpoint_url.clone(),
                queues: if s.queues.is_empty() {
                    self.queues.clone()
                } else {
                    s.queues.clone()
                },
            })
            .collect())
    }
}
