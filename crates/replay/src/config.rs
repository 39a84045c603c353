//! Replay configurations (`--config A.toml`): shares, environment capacity and workload
//! assumptions. Share and capacity entries have the same shape as in emulator scenarios.
//!
//! ```toml
//! name = "lending"                # shown as the column title (default: the file name)
//! [[capacity]]                     # optional: default is the sum of the shares' limits
//! instance_type = "ml.g5.2xlarge"
//! max = 2432
//! [[shares]]
//! name = "6214e9"
//! strategy = "LEND_AND_BORROW"     # RESERVE | LEND | LEND_AND_BORROW
//! borrow_limit = -1                # LEND_AND_BORROW only; default -1 (unlimited)
//! in_share_preemption = false
//! limits = { "ml.g5.2xlarge" = 512 }
//! [workload]
//! checkpoint_s = 1800              # for jobs whose trace gives no checkpoint interval
//! restart_overhead_s = 120         # running time a preempted job spends before progressing
//! preemption_retries = 5           # for jobs whose trace gives no retry cap (default: none)
//! priority = { "6214e9" = 100 }    # per share: replaces the trace's priority
//!
//! # The comparison's rules (read from the baseline, the first configuration; the same for
//! # every scenario). Per share, or "*" for every share without its own.
//! [deadlines."*"]
//! deadline_factor = 2.0            # succeed within 2 × the job's work after submission
//! # max_wait_s = 3600              # or: first given capacity within an hour
//! [budgets."6214e9"]
//! max_preemptions_per_job = 3
//! max_lost_gpu_hours_per_day = 50.0
//! [prices]                         # per instance-hour; no prices, no cost lines
//! "ml.g5.2xlarge" = 1.52
//! currency = "USD"                 # (top level, before any table)
//! [decision]                       # the verdict's four clauses (docs/verdict.md)
//! min_completion_gain_pct = 0.0    # mean completion time must fall by more than this %
//! max_behind_pct = 1.0             # never behind the baseline by more than this % of work
//! max_important_p95_wait_increase_pct = 10.0
//! important_p95_wait_slack_s = 60
//! max_important_missed_deadlines_increase = 0
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use quotatop_analysis::scorecard::decision::{Budget, DeadlineRule, DecisionRule, Rules};
use quotatop_emulator::{CapacitySpec, ShareSpec};
use quotatop_engine::{Engine, EngineConfig};
use quotatop_model::{CapacityLimit, QuotaShare, ShareSpecError, whole_seconds_to_millis};

use super::ReplayError;

/// Workload assumptions applied to the trace's jobs. [`ReplayConfig::parse`] keeps the
/// durations within 100 years and priorities within 0–9999.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Workload {
    pub checkpoint_s: Option<u64>,
    pub restart_overhead_s: u64,
    pub preemption_retries: Option<u32>,
    pub priority: BTreeMap<String, i64>,
    /// Per class: its checkpoint interval and retry limit, replacing the trace's and the above
    /// for its jobs (the first class that holds a job applies).
    pub by_class: Vec<super::ClassWorkload>,
}

/// `[workload]` as written, each number with its place in the file for range errors.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct RawWorkload {
    checkpoint_s: Option<Spanned<i64>>,
    restart_overhead_s: Option<Spanned<i64>>,
    preemption_retries: Option<Spanned<i64>>,
    priority: BTreeMap<String, Spanned<i64>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct File {
    pub(super) name: Option<String>,
    #[serde(default)]
    pub(super) capacity: Vec<CapacitySpec>,
    pub(super) shares: Vec<ShareSpec>,
    #[serde(default)]
    workload: RawWorkload,
    #[serde(default)]
    deadlines: BTreeMap<String, DeadlineRule>,
    #[serde(default)]
    budgets: BTreeMap<String, Budget>,
    #[serde(default)]
    prices: BTreeMap<String, f64>,
    currency: Option<String>,
    #[serde(default)]
    decision: DecisionRule,
}

/// A TOML document's key paths with the spans of their values, to name the key an error's span
/// falls in (`shares[1].limits."ml.g5.2xlarge"`).
#[derive(Debug, Default)]
struct KeyTree(Vec<(String, std::ops::Range<usize>, KeyTree)>);

impl KeyTree {
    /// The deepest key path whose value holds byte `at`.
    fn path_at(&self, at: usize) -> Option<String> {
        self.0
            .iter()
            .filter(|(_, span, _)| span.contains(&at))
            .min_by_key(|(_, span, _)| span.len())
            .map(|(key, _, sub)| match sub.path_at(at) {
                Some(rest) if rest.starts_with('[') => format!("{key}{rest}"),
                Some(rest) => format!("{key}.{rest}"),
                None => key.clone(),
            })
    }
}

impl<'de> Deserialize<'de> for KeyTree {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = KeyTree;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any TOML value")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<KeyTree, A::Error> {
                let mut out = Vec::new();
                while let Some(k) = m.next_key::<String>()? {
                    let v: Spanned<KeyTree> = m.next_value()?;
                    let bare = !k.is_empty()
                        && k.chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
                    let key = if bare { k } else { format!("{k:?}") };
                    out.push((key, v.span(), v.into_inner()));
                }
                Ok(KeyTree(out))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut s: A,
            ) -> Result<KeyTree, A::Error> {
                let mut out = Vec::new();
                while let Some(v) = s.next_element::<Spanned<KeyTree>>()? {
                    out.push((format!("[{}]", out.len()), v.span(), v.into_inner()));
                }
                Ok(KeyTree(out))
            }
            fn visit_bool<E>(self, _: bool) -> Result<KeyTree, E> {
                Ok(KeyTree::default())
            }
            fn visit_i64<E>(self, _: i64) -> Result<KeyTree, E> {
                Ok(KeyTree::default())
            }
            fn visit_u64<E>(self, _: u64) -> Result<KeyTree, E> {
                Ok(KeyTree::default())
            }
            fn visit_f64<E>(self, _: f64) -> Result<KeyTree, E> {
                Ok(KeyTree::default())
            }
            fn visit_str<E>(self, _: &str) -> Result<KeyTree, E> {
                Ok(KeyTree::default())
            }
        }
        d.deserialize_any(V)
    }
}

/// `line L, column C` of a byte offset (both 1-based; the column counts characters).
fn line_col(text: &str, at: usize) -> String {
    let before = &text[..text.floor_char_boundary(at.min(text.len()))];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    format!("line {line}, column {col}")
}

/// A workload number out of range: where it is written, its key and value, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{at}: {key} = {value}: {why}")]
struct WorkloadNumberError {
    /// `line L, column C`.
    at: String,
    key: String,
    value: i64,
    why: OutOfRange,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
enum OutOfRange {
    #[error(transparent)]
    Seconds(quotatop_model::SecondsError),
    #[error("is negative")]
    Negative,
    #[error("is above {0}")]
    Above(i64),
}

impl RawWorkload {
    /// The workload, every number in range; errors give the key path, line and column.
    fn check(self, text: &str) -> Result<Workload, WorkloadNumberError> {
        let at = |key: &str, v: &Spanned<i64>, why: OutOfRange| WorkloadNumberError {
            at: line_col(text, v.span().start),
            key: key.to_string(),
            value: *v.get_ref(),
            why,
        };
        let secs = |key: &str, v: &Spanned<i64>| -> Result<u64, WorkloadNumberError> {
            whole_seconds_to_millis(*v.get_ref())
                .map(|_| *v.get_ref() as u64)
                .map_err(|why| at(key, v, OutOfRange::Seconds(why)))
        };
        let whole = |key: &str, v: &Spanned<i64>, max: i64| -> Result<i64, WorkloadNumberError> {
            let n = *v.get_ref();
            if n < 0 {
                Err(at(key, v, OutOfRange::Negative))
            } else if n > max {
                Err(at(key, v, OutOfRange::Above(max)))
            } else {
                Ok(n)
            }
        };
        let mut priority = BTreeMap::new();
        for (share, p) in &self.priority {
            let key = format!("workload.priority.{share:?}");
            priority.insert(
                share.clone(),
                whole(&key, p, i64::from(quotatop_model::MAX_PRIORITY))?,
            );
        }
        Ok(Workload {
            checkpoint_s: self
                .checkpoint_s
                .as_ref()
                .map(|v| secs("workload.checkpoint_s", v))
                .transpose()?,
            restart_overhead_s: self
                .restart_overhead_s
                .as_ref()
                .map(|v| secs("workload.restart_overhead_s", v))
                .transpose()?
                .unwrap_or(0),
            preemption_retries: self
                .preemption_retries
                .as_ref()
                .map(|v| {
                    whole("workload.preemption_retries", v, i64::from(u32::MAX)).map(|n| n as u32)
                })
                .transpose()?,
            priority,
            by_class: Vec::new(),
        })
    }
}

/// One configuration to replay a trace under.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayConfig {
    pub name: String,
    pub capacity: Vec<CapacityLimit>,
    pub shares: Vec<QuotaShare>,
    pub workload: Workload,
    /// Deadlines, interruption budgets, prices and the decision rule (the comparison reads the
    /// baseline's: one set of rules for every scenario).
    pub rules: Rules,
}

impl ReplayConfig {
    pub fn load(path: &Path) -> Result<Self, ReplayError> {
        let text =
            quotatop_model::read_small_text(path, quotatop_model::MAX_SMALL_FILE).map_err(|e| {
                ReplayError::Config {
                    origin: path.display().to_string(),
                    message: e.to_string(),
                }
            })?;
        let default_name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("config")
            .to_string();
        Self::parse(&text, &path.display().to_string(), &default_name)
    }

    /// Parses TOML; errors name the origin and, for syntax and type errors, the line.
    pub fn parse(text: &str, origin: &str, default_name: &str) -> Result<Self, ReplayError> {
        let err = |message: String| ReplayError::Config {
            origin: origin.to_string(),
            message,
        };
        let file: File = from_toml(text, origin)?;
        if file.shares.is_empty() {
            return Err(err("at least one [[shares]] entry is needed".to_string()));
        }
        let mut shares = Vec::new();
        for s in &file.shares {
            if !s.generators.is_empty() {
                return Err(err(ShareSpecError::Generators {
                    share: s.name.clone(),
                    place: "replay configs",
                }
                .to_string()));
            }
            shares.push(s.to_quota_share().map_err(|e| err(e.to_string()))?);
        }
        let capacity = if file.capacity.is_empty() {
            summed_limits(&shares)
        } else {
            file.capacity
                .iter()
                .map(|c| CapacityLimit::new(c.instance_type.clone(), c.max))
                .collect()
        };
        let cfg = Self {
            name: file.name.unwrap_or_else(|| default_name.to_string()),
            capacity,
            shares,
            workload: file.workload.check(text).map_err(|e| err(e.to_string()))?,
            rules: Rules {
                deadlines: file.deadlines,
                budgets: file.budgets,
                prices: file.prices,
                currency: file.currency,
                decision: file.decision,
                classes: Vec::new(),
            },
        };
        cfg.rules.validate().map_err(|e| err(e.to_string()))?;
        // Validate shares and capacity the way the engine will.
        cfg.build_engine().map_err(|e| err(e.to_string()))?;
        Ok(cfg)
    }

    /// A fresh engine with this configuration's environment and shares.
    pub fn build_engine(&self) -> Result<Engine, ReplayError> {
        let mut engine = Engine::new(EngineConfig::new(self.capacity.clone()))?;
        for s in &self.shares {
            engine.create_share(s.clone())?;
        }
        Ok(engine)
    }
}

/// TOML into `T`; errors name the origin and, for syntax and type errors, the line, column
/// and key path.
pub(super) fn from_toml<T: serde::de::DeserializeOwned>(
    text: &str,
    origin: &str,
) -> Result<T, ReplayError> {
    toml::from_str(text).map_err(|e| ReplayError::Config {
        origin: origin.to_string(),
        message: match e.span() {
            Some(s) => {
                // The key path, when the document is valid TOML (a type or range error).
                let key = toml::from_str::<KeyTree>(text)
                    .ok()
                    .and_then(|t| t.path_at(s.start))
                    .map_or(String::new(), |k| format!("{k}: "));
                format!("{}: {key}{}", line_col(text, s.start), e.message())
            }
            None => e.message().to_string(),
        },
    })
}

/// A rules file (`replay --rules`): only `[deadlines.*]`, `[budgets.*]`, `[prices]`, `currency`
/// and `[decision]`, as in a replay configuration.
pub fn load_rules(path: &Path) -> Result<Rules, ReplayError> {
    let origin = path.display().to_string();
    let text =
        quotatop_model::read_small_text(path, quotatop_model::MAX_SMALL_FILE).map_err(|e| {
            ReplayError::Config {
                origin: origin.clone(),
                message: e.to_string(),
            }
        })?;
    let rules: Rules = from_toml(&text, &origin)?;
    rules.validate().map_err(|e| ReplayError::Config {
        origin,
        message: e.to_string(),
    })?;
    Ok(rules)
}

/// `n` instances × `factor`, rounded to the nearest whole instance, never below 1.
pub fn scale_count(n: u32, factor: f64) -> u32 {
    (f64::from(n) * factor)
        .round()
        .clamp(1.0, f64::from(u32::MAX)) as u32
}

impl ReplayConfig {
    /// Every share's capacity limits and the environment's capacity × `factor` (see
    /// [`scale_count`]); strategies, borrow limits (percentages) and workload stay as they are.
    pub fn scaled(&self, factor: f64) -> Self {
        let scale = |ls: &[CapacityLimit]| -> Vec<CapacityLimit> {
            ls.iter()
                .map(|l| {
                    CapacityLimit::new(l.instance_type.clone(), scale_count(l.max_capacity, factor))
                })
                .collect()
        };
        Self {
            capacity: scale(&self.capacity),
            shares: self
                .shares
                .iter()
                .map(|s| QuotaShare {
                    capacity_limits: scale(&s.capacity_limits),
                    ..s.clone()
                })
                .collect(),
            ..self.clone()
        }
    }

    /// One line of capacities: `environment ml.g5.2xlarge 1216; shares a 256, b 64`.
    pub fn capacity_summary(&self) -> String {
        let limits = |ls: &[CapacityLimit]| -> String {
            ls.iter()
                .map(|l| {
                    if ls.len() == 1 {
                        l.max_capacity.to_string()
                    } else {
                        format!("{} {}", l.instance_type, l.max_capacity)
                    }
                })
                .collect::<Vec<_>>()
                .join(" + ")
        };
        let env = self
            .capacity
            .iter()
            .map(|l| format!("{} {}", l.instance_type, l.max_capacity))
            .collect::<Vec<_>>()
            .join(", ");
        let shares = self
            .shares
            .iter()
            .map(|s| format!("{} {}", s.name, limits(&s.capacity_limits)))
            .collect::<Vec<_>>()
            .join(", ");
        format!("environment {env}; shares {shares}")
    }
}

/// The sum of the shares' limits per instance type, in first-seen order.
pub fn summed_limits(shares: &[QuotaShare]) -> Vec<CapacityLimit> {
    let mut out: Vec<CapacityLimit> = Vec::new();
    for l in shares.iter().flat_map(|s| &s.capacity_limits) {
        match out.iter_mut().find(|c| c.instance_type == l.instance_type) {
            Some(c) => c.max_capacity += l.max_capacity,
            None => out.push(l.clone()),
        }
    }
    out
}

#[cfg(test)]
mod tests;
