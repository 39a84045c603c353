//! Several sources (AWS accounts and regions, each a profile, a region and maybe an endpoint) in
//! one view: each source's poller makes its own snapshots, [`Fleet`] merges the latest of each
//! into the one snapshot the console, the journal and `record` take. A queue is then known by
//! its source as well as its name ([`queue_key`]): two regions may both have `ml-training`.
//!
//! Without sources (one implicit source, the single profile/region/endpoint configuration)
//! nothing changes: queues carry no source, their key is their name, and the snapshot's
//! `sources` is empty.

use serde::{Deserialize, Serialize};

use super::{HealthState, Millis, PollHealth, QueueSnapshot, Snapshot, Source};

/// The one string a queue is known by across sources: its name for the implicit (default)
/// source, `NAME@SOURCE` for a named one. Neither queue names (letters, digits, `-`, `_`) nor
/// source names (checked by the config) contain `@`, so the key is never ambiguous.
pub fn queue_key(source: Option<&str>, name: &str) -> String {
    match source {
        None => name.to_string(),
        Some(s) => format!("{name}@{s}"),
    }
}

/// The source (`None`: the default one) and the queue name of a [`queue_key`].
pub fn split_queue_key(key: &str) -> (Option<&str>, &str) {
    match key.split_once('@') {
        Some((name, source)) => (Some(source), name),
        None => (None, key),
    }
}

impl QueueSnapshot {
    /// This queue's [`queue_key`].
    pub fn key(&self) -> String {
        queue_key(self.source.as_deref(), &self.name)
    }
}

/// One source's state in a merged snapshot (the status bar's per-source health).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SourceStatus {
    /// The source's name (`[[sources]] name`).
    pub name: String,
    pub source: Source,
    pub health: PollHealth,
    /// When this source's latest snapshot was taken (local epoch ms); `None` before its first.
    pub taken_at: Option<Millis>,
}

/// How a source is doing, in words: what the status bar says of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceVerdict {
    /// No refresh has finished yet.
    Starting,
    Ok,
    /// Some data is old: why.
    Stale(String),
    /// Nothing usable comes from it: why.
    Error(String),
}

impl SourceStatus {
    /// `ok`, `stale` (throttled, some calls or queues failing) or `error` (unreachable,
    /// credentials refused or missing), each with its reason; `queues` are the merged
    /// snapshot's (a queue of this source whose refresh failed makes it stale).
    pub fn verdict(&self, queues: &[QueueSnapshot]) -> SourceVerdict {
        let h = &self.health;
        let reason = |fallback: &str| h.last_error.clone().unwrap_or_else(|| fallback.to_string());
        match h.state {
            HealthState::Starting => SourceVerdict::Starting,
            HealthState::Unreachable => SourceVerdict::Error(reason("unreachable")),
            HealthState::Denied => SourceVerdict::Error(reason("credentials refused")),
            HealthState::Expired => {
                SourceVerdict::Error(reason("credentials expired — refresh them"))
            }
            HealthState::NoCredentials => SourceVerdict::Error(reason("no credentials found")),
            HealthState::Throttled => SourceVerdict::Stale(reason("throttled")),
            HealthState::Degraded => SourceVerdict::Stale(reason("some calls fail")),
            HealthState::Healthy => {
                let stale = queues.iter().find(|q| {
                    q.source.as_deref() == Some(self.name.as_str()) && q.stale_reason.is_some()
                });
                match stale.and_then(|q| Some((q, q.stale_reason.as_deref()?))) {
                    Some((q, why)) => SourceVerdict::Stale(format!("{}: {why}", q.name)),
                    None => SourceVerdict::Ok,
                }
            }
        }
    }
}

/// The latest snapshot of each named source, merged into one.
#[derive(Debug, Clone)]
pub struct Fleet {
    sources: Vec<(String, Source)>,
    latest: Vec<Option<Snapshot>>,
    sequence: u64,
}

impl Fleet {
    /// `sources` in the order the view lists them (the config's order).
    pub fn new(sources: Vec<(String, Source)>) -> Self {
        let latest = vec![None; sources.len()];
        Self {
            sources,
            latest,
            sequence: 0,
        }
    }

    /// Takes source `index`'s newest snapshot and returns the merged view: every source's
    /// queues in source order, each queue marked with its source; per-source health in
    /// `sources`; the overall health summed (calls, throttles, errors) and, when the sources
    /// disagree, degraded (some data stale) rather than any one source's state.
    pub fn update(&mut self, index: usize, mut snapshot: Snapshot) -> Snapshot {
        if let Some((name, _)) = self.sources.get(index) {
            for q in &mut snapshot.queues {
                q.source = Some(name.clone());
            }
        }
        if let Some(slot) = self.latest.get_mut(index) {
            *slot = Some(snapshot);
        }
        self.sequence += 1;
        self.merged()
    }

    fn merged(&self) -> Snapshot {
        let parts: Vec<&Snapshot> = self.latest.iter().flatten().collect();
        let states: Vec<HealthState> = self
            .latest
            .iter()
            .map(|s| s.as_ref().map_or(HealthState::Starting, |s| s.health.state))
            .collect();
        let state = match states.split_first() {
            Some((first, rest)) if rest.iter().all(|s| s == first) => *first,
            Some(_) => HealthState::Degraded,
            None => HealthState::Starting,
        };
        let last_error = self
            .sources
            .iter()
            .zip(&self.latest)
            .find_map(|((n, _), s)| {
                let s = s.as_ref()?;
                let e = s.health.last_error.as_deref()?;
                (s.health.state != HealthState::Healthy).then(|| format!("{n}: {e}"))
            });
        let health = PollHealth {
            state,
            calls_last_minute: parts.iter().map(|s| s.health.calls_last_minute).sum(),
            throttled_last_minute: parts.iter().map(|s| s.health.throttled_last_minute).sum(),
            errors_last_minute: parts.iter().map(|s| s.health.errors_last_minute).sum(),
            last_error,
            describe_rate: None,
            complete_in_s: parts.iter().filter_map(|s| s.health.complete_in_s).max(),
            // Each source polls live (a fleet does not start from the journal).
            from_history: parts.iter().any(|s| s.health.from_history),
            in_progress: parts.iter().any(|s| s.health.in_progress),
            events_missed: parts.iter().map(|s| s.health.events_missed).sum(),
        };
        Snapshot {
            taken_at: parts.iter().map(|s| s.taken_at).max().unwrap_or(0),
            sequence: self.sequence,
            source: self
                .sources
                .first()
                .map(|(_, s)| s.clone())
                .unwrap_or_default(),
            queues: parts.iter().flat_map(|s| s.queues.clone()).collect(),
            health,
            sources: self
                .sources
                .iter()
                .zip(&self.latest)
                .map(|((name, source), s)| SourceStatus {
                    name: name.clone(),
                    source: s
                        .as_ref()
                        .map_or_else(|| source.clone(), |s| s.source.clone()),
                    health: s.as_ref().map(|s| s.health.clone()).unwrap_or_default(),
                    taken_at: s.as_ref().map(|s| s.taken_at),
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(at: Millis, state: HealthState, queues: &[&str]) -> Snapshot {
        Snapshot {
            taken_at: at,
            queues: queues
                .iter()
                .map(|n| QueueSnapshot {
                    name: n.to_string(),
                    ..QueueSnapshot::default()
                })
                .collect(),
            health: PollHealth {
                state,
                calls_last_minute: 3,
                last_error: (state != HealthState::Healthy).then(|| "timed out".to_string()),
                ..PollHealth::default()
            },
            ..Snapshot::default()
        }
    }

    fn region(r: &str) -> Source {
        Source {
            region: Some(r.to_string()),
            ..Source::default()
        }
    }

    #[test]
    fn keys_name_the_source_and_split_back() {
        assert_eq!(queue_key(None, "ml-training"), "ml-training");
        assert_eq!(queue_key(Some("eu"), "ml-training"), "ml-training@eu");
        assert_eq!(
            split_queue_key("ml-training@eu"),
            (Some("eu"), "ml-training")
        );
        assert_eq!(split_queue_key("ml-training"), (None, "ml-training"));
    }

    #[test]
    fn two_sources_with_the_same_queue_name_stay_apart() {
        let mut fleet = Fleet::new(vec![
            ("us".into(), region("us-east-1")),
            ("eu".into(), region("eu-west-1")),
        ]);
        let first = fleet.update(1, snap(2_000, HealthState::Healthy, &["ml-training"]));
        assert_eq!(first.queues.len(), 1);
        assert_eq!(first.sources[0].health.state, HealthState::Starting);
        assert_eq!(first.health.state, HealthState::Degraded);
        let both = fleet.update(0, snap(1_000, HealthState::Healthy, &["ml-training"]));
        let keys: Vec<String> = both.queues.iter().map(QueueSnapshot::key).collect();
        assert_eq!(keys, ["ml-training@us", "ml-training@eu"]);
        assert_eq!(both.taken_at, 2_000);
        assert_eq!(both.sequence, 2);
        assert_eq!(both.health.state, HealthState::Healthy);
        assert_eq!(both.health.calls_last_minute, 6);
        let verdicts: Vec<SourceVerdict> = both
            .sources
            .iter()
            .map(|s| s.verdict(&both.queues))
            .collect();
        assert_eq!(verdicts, [SourceVerdict::Ok, SourceVerdict::Ok]);
    }

    #[test]
    fn a_failing_source_is_named_with_its_reason() {
        let mut fleet = Fleet::new(vec![
            ("us".into(), region("us-east-1")),
            ("eu".into(), region("eu-west-1")),
        ]);
        fleet.update(0, snap(1_000, HealthState::Healthy, &["a"]));
        let mut eu = snap(1_000, HealthState::Healthy, &["a"]);
        eu.queues[0].stale_reason = Some("ListServiceJobs timed out".into());
        let merged = fleet.update(1, eu);
        assert_eq!(
            merged.sources[1].verdict(&merged.queues),
            SourceVerdict::Stale("a: ListServiceJobs timed out".into())
        );
        assert_eq!(merged.sources[0].verdict(&merged.queues), SourceVerdict::Ok);
        let merged = fleet.update(1, snap(3_000, HealthState::Unreachable, &[]));
        assert_eq!(
            merged.sources[1].verdict(&merged.queues),
            SourceVerdict::Error("timed out".into())
        );
        assert_eq!(merged.health.state, HealthState::Degraded);
        assert_eq!(merged.health.last_error.as_deref(), Some("eu: timed out"));
    }
}
