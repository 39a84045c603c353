//! The console's configuration, layered: built-in defaults → config file → environment → flags.
//!
//! The file is `config.toml` in the user's config directory (`directories::ProjectDirs`, e.g.
//! `~/.config/quotatop/config.toml` on Linux), or the path in `--config` / `QUOTATOP_CONFIG`.
//! Unknown keys are reported and ignored while the rest of the file applies. A file that cannot
//! be read or parsed is reported and skipped: the console starts on the other layers, never
//! refuses to start, but [`Loaded::broken`] says so, and changes are refused until it is fixed
//! (a broken file never loosens policy).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use quotatop_analysis::scorecard::ScorecardOptions;
use quotatop_analysis::scorecard::decision::{Budget, DeadlineRule, DecisionRule, Rules};
use quotatop_analysis::{GpuTable, LoopRule};
use quotatop_store::journal::JournalConfig;

mod sources;
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

const DAY_MS: i64 = 86_400_000;

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

/// The per-user directories (`None` when the OS reports no home directory).
pub fn project_dirs() -> Option<directories::ProjectDirs> {
    directories::ProjectDirs::from("", "", "quotatop")
}

/// A yes/no word as the environment spells it: `1/0`, `true/false`, `yes/no`, `on/off` (any
/// case, surrounding blanks ignored); anything else is `None`. The one parser for every switch
/// read from the environment, for the console and the commands alike.
pub fn parse_switch(value: &str) -> Option<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// Loads with the real environment and the user's directories.
pub fn load(flags: &Overrides) -> Loaded {
    let dirs = project_dirs();
    let default_file = dirs.as_ref().map(|d| d.config_dir().join("config.toml"));
    let theme_dir = dirs.as_ref().map(|d| d.config_dir().join("themes"));
    load_with(flags, default_file, theme_dir, &|k| std::env::var(k).ok())
}

/// The environment's layer over the file's: theme, colour, queues, read-only mode, the AWS
/// profile and region.
fn apply_environment(
    config: &mut Config,
    env: &dyn Fn(&str) -> Option<String>,
    warnings: &mut Vec<String>,
    read_only_from: &mut Option<String>,
) {
    if let Some(t) = env("QUOTATOP_THEME").filter(|s| !s.is_empty()) {
        config.theme = t;
    }
    if env("NO_COLOR").is_some_and(|s| !s.is_empty()) {
        config.no_color = true;
    }
    if let Some(q) = env("QUOTATOP_QUEUES").filter(|s| !s.is_empty()) {
        config.queues = q
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect();
    }
    if let Some(v) = env("QUOTATOP_READ_ONLY").filter(|s| !s.is_empty()) {
        match parse_switch(&v) {
            Some(on) => {
                config.read_only = on;
                *read_only_from = on.then(|| {
                    format!(
                        "the environment variable QUOTATOP_READ_ONLY={}",
                        quotatop_model::clean_text(&v)
                    )
                });
            }
            None => warnings.push(format!(
                "QUOTATOP_READ_ONLY={} is not a yes/no value (1/0, true/false, yes/no, on/off); ignored",
                quotatop_model::clean_text(&v)
            )),
        }
    }
    if let Some(p) = env("AWS_PROFILE").filter(|s| !s.is_empty()) {
        config.profile = Some(p);
    }
    if let Some(r) = env("AWS_REGION")
        .or_else(|| env("AWS_DEFAULT_REGION"))
        .filter(|s| !s.is_empty())
    {
        config.region = Some(r);
    }
}

/// The command line's layer, over the environment's.
fn apply_flags(config: &mut Config, flags: &Overrides, read_only_from: &mut Option<String>) {
    if let Some(t) = &flags.theme {
        config.theme = t.clone();
    }
    config.no_color |= flags.no_color;
    if flags.read_only {
        config.read_only = true;
        *read_only_from = Some("the --read-only flag".to_string());
    }
    config.tag_justification |= flags.tag_justification;
    if !flags.queues.is_empty() {
        config.queues = flags.queues.clone();
    }
    for (slot, flag) in [
        (&mut config.profile, &flags.profile),
        (&mut config.region, &flags.region),
        (&mut config.endpoint_url, &flags.endpoint_url),
    ] {
        if flag.is_some() {
            slot.clone_from(flag);
        }
    }
    if let Some(r) = flags.refresh_secs {
        config.refresh_secs = r;
    }
}

/// Layering with every input passed in (tests give a fake environment).
pub fn load_with(
    flags: &Overrides,
    default_file: Option<PathBuf>,
    theme_dir: Option<PathBuf>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Loaded {
    let mut warnings = Vec::new();
    let path = flags
        .config_path
        .clone()
        .or_else(|| {
            env("QUOTATOP_CONFIG")
                .filter(|s| !s.is_empty())
                .map(PathBuf::from)
        })
        .or(default_file);
    // An explicitly named file must exist; the default one may be absent.
    let explicit =
        flags.config_path.is_some() || env("QUOTATOP_CONFIG").is_some_and(|s| !s.is_empty());
    let mut broken = None;
    let mut config = match path.as_deref() {
        Some(p) if p.exists() || explicit => match read_file(p) {
            Ok((c, unknown)) => {
                warnings.extend(unknown);
                c
            }
            Err(e) => {
                let why = quotatop_model::error_chain(&e);
                warnings.push(format!(
                    "{why}; using defaults (changes are refused until it is fixed)"
                ));
                broken = Some(why);
                Config::default()
            }
        },
        _ => Config::default(),
    };

    // What set read-only mode, named when a change is refused (the last layer that said so).
    let mut read_only_from = match path.as_deref() {
        Some(p) if config.read_only => Some(format!("read_only = true in {}", p.display())),
        _ => None,
    };

    apply_environment(&mut config, env, &mut warnings, &mut read_only_from);
    apply_flags(&mut config, flags, &mut read_only_from);
    if !(config.refresh_secs.is_finite() && config.refresh_secs >= 0.5) {
        warnings.push(format!(
            "refresh_secs {} is below 0.5 s; using 5",
            config.refresh_secs
        ));
        config.refresh_secs = 5.0;
    }
    Loaded {
        config,
        path,
        theme_dir,
        warnings,
        broken,
        read_only_from,
        policy_file: None,
    }
}

/// Keys the file may not name more than this many times before it counts as broken.
const MAX_UNKNOWN_KEYS: usize = 64;

/// The file's settings, and a warning per unknown key (left out; the rest applies).
fn read_file(path: &Path) -> Result<(Config, Vec<String>), ConfigError> {
    let text = quotatop_model::read_small_text(path, quotatop_model::MAX_SMALL_FILE).map_err(
        |source| ConfigError::Read {
            path: path.display().to_string(),
            source,
        },
    )?;
    let parse_error = |message: String| ConfigError::Parse {
        path: path.display().to_string(),
        message,
    };
    let mut table: toml::Table =
        toml::from_str(&text).map_err(|e| parse_error(e.message().to_string()))?;
    let mut unknown = Vec::new();
    let config: Config = loop {
        match serde_path_to_error::deserialize(toml::Value::Table(table.clone())) {
            Ok(c) => break c,
            Err(e) => {
                let message = e.inner().to_string().trim().to_string();
                let at = e.path().to_string();
                // serde names the field in backquotes: "unknown field `x`, expected …".
                let field = message
                    .strip_prefix("unknown field `")
                    .and_then(|rest| rest.split_once('`'))
                    .map(|(name, _)| name.to_string());
                let parent = field.as_deref().and_then(|f| parent_keys(e.path(), f));
                let key = match (&field, &parent) {
                    (Some(f), Some(p)) if !p.is_empty() => format!("{}.{f}", p.join(".")),
                    _ => field.clone().unwrap_or_else(|| at.clone()),
                };
                let removable = unknown.len() < MAX_UNKNOWN_KEYS
                    && matches!((&field, &parent), (Some(f), Some(p)) if remove_key(&mut table, p, f));
                if !removable {
                    return Err(parse_error(if at == "." {
                        message
                    } else {
                        format!("{at}: {message}")
                    }));
                }
                unknown.push(format!(
                    "config file {}: unknown key `{}` ignored ({})",
                    path.display(),
                    quotatop_model::clean_text(&key),
                    quotatop_model::clean_text(
                        message.split_once("`, ").map_or("", |(_, rest)| rest)
                    ),
                ));
            }
        }
    };
    config
        .rules()
        .validate()
        .map_err(|e| parse_error(e.to_string()))?;
    sources::validate(&config.sources).map_err(|e| parse_error(e.to_string()))?;
    Ok((config, unknown))
}

/// The tables above an unknown `field` the error's path names (the path may or may not end
/// with the field itself); `None` when it goes through anything but tables.
fn parent_keys(path: &serde_path_to_error::Path, field: &str) -> Option<Vec<String>> {
    use serde_path_to_error::Segment;
    let mut keys = path
        .iter()
        .map(|s| match s {
            Segment::Map { key } => Some(key.clone()),
            _ => None,
        })
        .collect::<Option<Vec<String>>>()?;
    if keys.last().is_some_and(|k| k == field) {
        keys.pop();
    }
    Some(keys)
}

/// Removes `field` from the table at `parent`; whether it was there.
fn remove_key(table: &mut toml::Table, parent: &[String], field: &str) -> bool {
    let mut t = table;
    for key in parent {
        match t.get_mut(key.as_str()) {
            Some(toml::Value::Table(inner)) => t = inner,
            _ => return false,
        }
    }
    t.remove(field).is_some()
}

#[cfg(test)]
mod tests;
