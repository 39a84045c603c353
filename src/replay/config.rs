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
//! [decision]
//! min_goodput_gain_pct = 0.0
//! max_important_p95_wait_increase_pct = 10.0
//! important_p95_wait_slack_s = 60
//! max_important_missed_deadlines_increase = 0
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::analysis::scorecard::decision::{Budget, DeadlineRule, DecisionRule, Rules};
use crate::emulator::scenario::{CapacitySpec, ShareSpec};
use crate::engine::{Engine, EngineConfig};
use crate::model::{CapacityLimit, QuotaShare};

use super::ReplayError;

/// Workload assumptions applied to the trace's jobs.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Workload {
    pub checkpoint_s: Option<u64>,
    pub restart_overhead_s: u64,
    pub preemption_retries: Option<u32>,
    pub priority: BTreeMap<String, i64>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    name: Option<String>,
    #[serde(default)]
    capacity: Vec<CapacitySpec>,
    shares: Vec<ShareSpec>,
    #[serde(default)]
    workload: Workload,
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
        let text = std::fs::read_to_string(path).map_err(|e| ReplayError::Config {
            origin: path.display().to_string(),
            message: e.to_string(),
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
                return Err(err(format!(
                    "share {}: workload generators belong in emulator scenarios, not replay configs",
                    s.name
                )));
            }
            shares.push(s.to_quota_share().map_err(&err)?);
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
            workload: file.workload,
            rules: Rules {
                deadlines: file.deadlines,
                budgets: file.budgets,
                prices: file.prices,
                currency: file.currency,
                decision: file.decision,
            },
        };
        cfg.rules.validate().map_err(&err)?;
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

/// TOML into `T`; errors name the origin and, for syntax and type errors, the line.
fn from_toml<T: serde::de::DeserializeOwned>(text: &str, origin: &str) -> Result<T, ReplayError> {
    toml::from_str(text).map_err(|e| {
        let line = e.span().map(|s| {
            text.as_bytes()[..s.start.min(text.len())]
                .iter()
                .filter(|&&b| b == b'\n')
                .count()
                + 1
        });
        ReplayError::Config {
            origin: origin.to_string(),
            message: match line {
                Some(l) => format!("line {l}: {}", e.message()),
                None => e.message().to_string(),
            },
        }
    })
}

/// A rules file (`replay --rules`): only `[deadlines.*]`, `[budgets.*]`, `[prices]`, `currency`
/// and `[decision]`, as in a replay configuration.
pub fn load_rules(path: &Path) -> Result<Rules, ReplayError> {
    let origin = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| ReplayError::Config {
        origin: origin.clone(),
        message: e.to_string(),
    })?;
    let rules: Rules = from_toml(&text, &origin)?;
    rules
        .validate()
        .map_err(|message| ReplayError::Config { origin, message })?;
    Ok(rules)
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
mod tests {
    use super::*;

    const GOOD: &str = r#"
name = "lending"
[[shares]]
name = "a"
strategy = "LEND_AND_BORROW"
limits = { "ml.g5.2xlarge" = 8 }
[[shares]]
name = "b"
strategy = "LEND"
limits = { "ml.g5.2xlarge" = 4 }
[workload]
checkpoint_s = 600
restart_overhead_s = 60
priority = { "a" = 10 }
"#;

    #[test]
    fn parses_and_sums_capacity() {
        let c = ReplayConfig::parse(GOOD, "good.toml", "good").unwrap();
        assert_eq!(c.name, "lending");
        assert_eq!(c.capacity, vec![CapacityLimit::new("ml.g5.2xlarge", 12)]);
        assert_eq!(c.workload.checkpoint_s, Some(600));
        assert_eq!(c.workload.priority["a"], 10);
    }

    #[test]
    fn errors_name_the_file_and_line() {
        let bad = GOOD.replace(
            "strategy = \"LEND\"\n",
            "strategy = \"LEND\"\ncolour = \"red\"\n",
        );
        let e = ReplayConfig::parse(&bad, "bad.toml", "bad")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("bad.toml: line 10:"), "{e}");
        assert!(e.contains("colour"), "{e}");
        let bad = GOOD.replace("\"LEND\"", "\"SHARE\"");
        let e = ReplayConfig::parse(&bad, "bad.toml", "bad")
            .unwrap_err()
            .to_string();
        assert!(e.contains("strategy \"SHARE\""), "{e}");
        let bad = GOOD.replace("= 8 }", "= 0 }");
        let e = ReplayConfig::parse(&bad, "bad.toml", "bad")
            .unwrap_err()
            .to_string();
        assert!(e.contains("at least 1"), "{e}");
        let e = ReplayConfig::parse("name = 3", "x.toml", "x")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 1"), "{e}");
    }
}
