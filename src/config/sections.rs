//! The config file's sections with a shape of their own: `[store]`, `[journal]`, `[scorecard]`
//! and `[loops]`, each with its defaults (and, where it has one, the value it becomes).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use quotatop_analysis::LoopRule;
use quotatop_analysis::scorecard::ScorecardOptions;
use quotatop_store::journal::JournalConfig;

pub(super) const DAY_MS: i64 = 86_400_000;

/// `[store]`: the shared store of a team. `url = "postgresql://USER@HOST/DB"` keeps the
/// journal (and, with `record`/`tui --store`, the audit log) in PostgreSQL; unset, the
/// embedded SQLite journal in the data directory. Put the password in PGPASSFILE or
/// PGPASSWORD rather than here: the config file is for settings, not secrets.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StoreSettings {
    pub url: Option<String>,
}

impl Serialize for StoreSettings {
    /// The URL without its password (a config written out never carries it).
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct as _;
        let shown = self.url.as_deref().map(|u| {
            quotatop_store::StoreLocation::parse(u)
                .map_or_else(|_| "(not a valid store URL)".to_string(), |l| l.to_string())
        });
        let mut st = s.serialize_struct("StoreSettings", 1)?;
        st.serialize_field("url", &shown)?;
        st.end()
    }
}

/// `[journal]`: retention and sampling of history, in operator units.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JournalSettings {
    /// Jobs (with their transitions) and usage samples are kept this many days.
    pub retention_days: u32,
    /// Stored snapshots (time travel's stops) are kept this many days.
    pub snapshot_retention_days: u32,
    /// At most one stored snapshot per this many seconds.
    pub snapshot_interval_secs: u32,
    /// At most one usage sample per queue per this many seconds (service clock).
    pub usage_interval_secs: u32,
}

impl Default for JournalSettings {
    fn default() -> Self {
        let d = JournalConfig::default();
        Self {
            retention_days: (d.retention_ms / DAY_MS) as u32,
            snapshot_retention_days: (d.snapshot_retention_ms / DAY_MS) as u32,
            snapshot_interval_secs: (d.snapshot_interval_ms / 1000) as u32,
            usage_interval_secs: (d.usage_interval_ms / 1000) as u32,
        }
    }
}

impl JournalSettings {
    /// The journal's configuration (a zero retention or interval is taken as one unit, so a
    /// slip in the file cannot make the journal delete everything or store every poll).
    pub fn config(&self) -> JournalConfig {
        JournalConfig {
            retention_ms: i64::from(self.retention_days.max(1)) * DAY_MS,
            snapshot_retention_ms: i64::from(self.snapshot_retention_days.max(1)) * DAY_MS,
            snapshot_interval_ms: i64::from(self.snapshot_interval_secs.max(1)) * 1000,
            usage_interval_ms: i64::from(self.usage_interval_secs.max(1)) * 1000,
            ..JournalConfig::default()
        }
    }
}

/// `[scorecard]`: the console's scorecard window and workload assumptions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScorecardSettings {
    /// The window, ending at the last observation (or the time travelled to).
    pub window_hours: u32,
    /// Fixed cost of resuming an interrupted job, added to its waste.
    pub restart_cost_secs: u64,
    /// An interrupted job counts as recovered when it succeeds within this many hours.
    pub recovery_window_hours: u32,
    /// Checkpoint interval per share in minutes (the API does not show them): waste is then
    /// the work since the last checkpoint, not the whole attempt.
    pub checkpoint_minutes: BTreeMap<String, u32>,
}

impl Default for ScorecardSettings {
    fn default() -> Self {
        let d = ScorecardOptions::default();
        Self {
            window_hours: 24,
            restart_cost_secs: d.restart_cost_ms / 1000,
            recovery_window_hours: (d.recovery_window_ms / 3_600_000) as u32,
            checkpoint_minutes: BTreeMap::new(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LoopConfig {
    /// Flag a job preempted at least this many times.
    pub min_preemptions: u32,
    /// Or this many times …
    pub recent_count: u32,
    /// … within this many minutes (0 disables the rule).
    pub recent_minutes: u32,
}

impl Default for LoopConfig {
    fn default() -> Self {
        let d = LoopRule::default();
        let (count, ms) = d.within.unwrap_or((0, 0));
        Self {
            min_preemptions: d.min_preemptions,
            recent_count: count,
            recent_minutes: (ms / 60_000) as u32,
        }
    }
}

impl LoopConfig {
    pub fn rule(&self) -> LoopRule {
        LoopRule {
            min_preemptions: self.min_preemptions.max(1),
            within: (self.recent_minutes > 0 && self.recent_count > 0)
                .then(|| (self.recent_count, self.recent_minutes as i64 * 60_000)),
            preemption_budgets: BTreeMap::new(),
        }
    }
}
