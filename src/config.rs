//! The console's configuration, layered: built-in defaults → config file → environment → flags.
//!
//! The file is `config.toml` in the user's config directory (`directories::ProjectDirs`, e.g.
//! `~/.config/quotatop/config.toml` on Linux), or the path in `--config` / `QUOTATOP_CONFIG`.
//! Unknown keys are reported and ignored while the rest of the file applies. A file that cannot
//! be read or parsed is reported and skipped: the console starts on the other layers, never
//! refuses to start, but [`Loaded::broken`] says so, and changes are refused until it is fixed
//! (a broken file never loosens policy).
//!
//! Here: [`Config`] (every setting) and what loading gives ([`Overrides`] in, [`Loaded`] out);
//! in `sections`, the shapes of `[store]`, `[journal]`, `[scorecard]` and `[loops]`; in
//! `layers`, the layering ([`load`], [`load_with`]); in `file`, reading the file (unknown keys
//! reported and left out); in `sources`, `[[sources]]`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use quotatop_analysis::scorecard::ScorecardOptions;
use quotatop_analysis::scorecard::decision::{Budget, DeadlineRule, DecisionRule, Rules};
use quotatop_analysis::{GpuTable, LoopRule};

mod file;
mod layers;
mod sections;
mod sources;
pub use layers::{load, load_with, parse_switch, project_dirs};
pub use sections::{JournalSettings, LoopConfig, ScorecardSettings, StoreSettings};
pub use sources::{SelectedSource, SourceConfig, SourcesError};

/// Every setting, after layering.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Built-in theme name (dark, light, high-contrast, colorblind), a theme in the config
    /// directory's `themes/`, or a path to a `.toml` file.
    pub theme: String,
    /// Drop colours, keep bold/reverse (also set by a non-empty `NO_COLOR`).
    pub no_color: bool,
    /// Queues to watch (`quotatop tui --queue` adds to / replaces these).
    pub queues: Vec<String>,
    pub profile: Option<String>,
    pub region: Option<String>,
    pub endpoint_url: Option<String>,
    /// Several accounts and regions in one console (`[[sources]]`: `name`, `profile`,
    /// `region`, `endpoint_url`, `queues`); empty: the one source above.
    pub sources: Vec<SourceConfig>,
    /// Never change anything (shown as a badge).
    pub read_only: bool,
    /// Tag each job the console changes with the justification (`--tag-justification`).
    pub tag_justification: bool,
    /// Seconds between refreshes.
    pub refresh_secs: f64,
    /// When a job counts as caught in a preemption loop.
    pub loops: LoopConfig,
    /// When a priority change needs a change-record id (`[priority]`: `large_change`,
    /// `protected_from`).
    pub priority: quotatop_actions::PriorityPolicy,
    /// When a quota-share change needs a change-record id (`[shares]`:
    /// `change_record_for_limits`, default true).
    pub shares: quotatop_analysis::shares_plan::SharesPolicy,
    /// Action name → keys, e.g. `quit = ["q", "ctrl-c"]` (see `?` for the action names).
    pub keys: BTreeMap<String, Vec<String>>,
    /// What the journal keeps (`[journal]`).
    pub journal: JournalSettings,
    /// Where history and the audit log are kept (`[store]`): a team's PostgreSQL store.
    pub store: StoreSettings,
    /// How the console's scorecard is computed (`[scorecard]`).
    pub scorecard: ScorecardSettings,
    /// GPUs per instance type over the built-in table, e.g. `"ml.p5.48xlarge" = 8` (`[gpus]`).
    pub gpus: BTreeMap<String, u32>,
    /// Deadlines per share or `*` (`[deadlines.NAME]`: `deadline_factor`, `max_wait_s`), read
    /// by `report` and the console's Scorecard.
    pub deadlines: BTreeMap<String, DeadlineRule>,
    /// Interruption budgets per share or `*` (`[budgets.NAME]`: `max_preemptions_per_job`,
    /// `max_lost_gpu_hours_per_day`).
    pub budgets: BTreeMap<String, Budget>,
    /// Price per instance-hour per instance type (`[prices]`); with none, no cost lines.
    pub prices: BTreeMap<String, f64>,
    /// The prices' currency, for display.
    pub currency: Option<String>,
    /// The decision rule (`[decision]`), as in replay configurations.
    pub decision: DecisionRule,
}

impl Config {
    /// What the Preemptions screen flags: `[loops]`, and jobs over their share's
    /// `[budgets.SHARE] max_preemptions_per_job`.
    pub fn loop_rule(&self) -> LoopRule {
        LoopRule {
            preemption_budgets: self
                .budgets
                .iter()
                .filter_map(|(share, b)| Some((share.clone(), b.max_preemptions_per_job?)))
                .collect(),
            ..self.loops.rule()
        }
    }

    /// Deadlines, budgets, prices and the decision rule, as one set (the same type replay
    /// configurations carry).
    pub fn rules(&self) -> Rules {
        Rules {
            deadlines: self.deadlines.clone(),
            budgets: self.budgets.clone(),
            prices: self.prices.clone(),
            currency: self.currency.clone(),
            decision: self.decision.clone(),
            classes: Vec::new(),
        }
    }

    /// The scorecard's window and options: `[scorecard]` with `[gpus]`.
    pub fn scorecard_options(&self) -> (i64, ScorecardOptions) {
        let s = &self.scorecard;
        let options = ScorecardOptions {
            gpus: GpuTable::with_overrides(self.gpus.clone()),
            restart_cost_ms: s.restart_cost_secs.saturating_mul(1000),
            recovery_window_ms: i64::from(s.recovery_window_hours.max(1)) * 3_600_000,
            checkpoint_by_share: s
                .checkpoint_minutes
                .iter()
                .map(|(share, m)| (share.clone(), u64::from(*m) * 60_000))
                .collect(),
        };
        (i64::from(s.window_hours.max(1)) * 3_600_000, options)
    }
}

impl Default for Config {
    fn default() -> Self {
        Self {
            theme: "dark".to_string(),
            no_color: false,
            queues: Vec::new(),
            profile: None,
            region: None,
            endpoint_url: None,
            sources: Vec::new(),
            read_only: false,
            tag_justification: false,
            refresh_secs: 5.0,
            loops: LoopConfig::default(),
            priority: quotatop_actions::PriorityPolicy::default(),
            shares: quotatop_analysis::shares_plan::SharesPolicy::default(),
            keys: BTreeMap::new(),
            journal: JournalSettings::default(),
            store: StoreSettings::default(),
            scorecard: ScorecardSettings::default(),
            gpus: BTreeMap::new(),
            deadlines: BTreeMap::new(),
            budgets: BTreeMap::new(),
            prices: BTreeMap::new(),
            currency: None,
            decision: DecisionRule::default(),
        }
    }
}

/// The command line's say (highest layer); `None` leaves the lower layers' value.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub config_path: Option<PathBuf>,
    pub theme: Option<String>,
    pub no_color: bool,
    pub queues: Vec<String>,
    pub profile: Option<String>,
    pub region: Option<String>,
    pub endpoint_url: Option<String>,
    pub read_only: bool,
    pub tag_justification: bool,
    pub refresh_secs: Option<f64>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("bad config file {path}: {message}")]
    Parse { path: String, message: String },
}

/// A layered configuration and what went wrong on the way.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub config: Config,
    /// The file layer's path (whether or not it exists).
    pub path: Option<PathBuf>,
    /// Where user themes are looked up.
    pub theme_dir: Option<PathBuf>,
    /// Problems to report (a bad file, an unknown key, a bad environment value); defaults
    /// were used instead.
    pub warnings: Vec<String>,
    /// Why the config file could not be used (read or parsed), when it could not: viewing
    /// goes on with the defaults, changes are refused.
    pub broken: Option<String>,
    /// What turned read-only mode on, when it is on: `the --read-only flag`, `the environment
    /// variable QUOTATOP_READ_ONLY=1` or `read_only = true in /path/config.toml`.
    pub read_only_from: Option<String>,
    /// The class policy changes are judged by when it is not `policy.toml` beside the config
    /// file: the demo's own world is judged by its own policy.
    pub policy_file: Option<PathBuf>,
}

impl Loaded {
    /// A change refused in read-only mode, naming what set it: `what` refuses to `does`.
    pub fn read_only_refusal(&self, what: &str, does: &str) -> String {
        format!(
            "read-only mode: {what} refuses to {does} (read-only is set by {}; unset it to make changes)",
            self.read_only_from
                .as_deref()
                .unwrap_or("the configuration")
        )
    }

    /// Where the `[priority]` policy came from, for the audit record: the config file when it
    /// exists, else the built-in defaults.
    pub fn policy_source(&self) -> String {
        match self.path.as_deref() {
            Some(p) if p.exists() => format!("config {}", p.display()),
            _ => "built-in defaults".to_string(),
        }
    }
}

#[cfg(test)]
mod tests;
