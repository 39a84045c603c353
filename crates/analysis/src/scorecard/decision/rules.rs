//! The rules a comparison is judged by: deadlines, interruption budgets, prices and the
//! decision rule, as quotatop's config file and replay configurations carry them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::scorecard::input::JobHistory;
use crate::scorecard::input::Outcome;
use quotatop_model::Millis;

/// A deadline rule for a share (or `*` for every share without its own).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DeadlineRule {
    /// The job must SUCCEED within this many times its work after submission.
    pub deadline_factor: Option<f64>,
    /// The job must first be given capacity within this long after submission.
    pub max_wait_s: Option<u64>,
}

/// An interruption budget for a share (or `*`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Budget {
    /// A job preempted more often than this breaches the budget.
    pub max_preemptions_per_job: Option<u32>,
    /// A day (24 h from the window's start) in which the share's preemption waste exceeds this
    /// breaches the budget.
    pub max_lost_gpu_hours_per_day: Option<f64>,
}

/// The rule a scenario is judged by against the baseline: four clauses, each with its
/// threshold (see `verdict`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DecisionRule {
    /// Clause 1: the mean completion time (work-weighted) must fall by more than this
    /// percentage…
    pub min_completion_gain_pct: f64,
    /// …and the scenario's completion curve may never fall behind the baseline's by more than
    /// this percentage of the total work.
    pub max_behind_pct: f64,
    /// Clause 2: important work may miss at most this many more deadlines than in the baseline.
    pub max_important_missed_deadlines_increase: u64,
    /// Clause 3: important work's P95 wait may grow by at most this percentage…
    pub max_important_p95_wait_increase_pct: f64,
    /// …plus this many seconds (so that a baseline of 0 does not forbid any wait at all).
    pub important_p95_wait_slack_s: u64,
    /// A change of the mean completion time smaller than this many seconds is not material:
    /// with nothing else different (no job completed by one scenario only, no clause failing)
    /// the verdict reads NO MATERIAL DIFFERENCE (docs/verdict.md says why 60 s).
    pub min_material_change_s: f64,
    /// The key of earlier versions (goodput by a horizon had to rise by more than this): read
    /// as `min_completion_gain_pct` by [`DecisionRule::migrate`], with a warning.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_goodput_gain_pct: Option<f64>,
}

impl Default for DecisionRule {
    fn default() -> Self {
        Self {
            min_completion_gain_pct: 0.0,
            max_behind_pct: 1.0,
            max_important_missed_deadlines_increase: 0,
            max_important_p95_wait_increase_pct: 10.0,
            important_p95_wait_slack_s: 60,
            min_material_change_s: 60.0,
            min_goodput_gain_pct: None,
        }
    }
}

impl DecisionRule {
    pub fn describe(&self) -> String {
        format!(
            "APPROVE when (1) the scenario completes work the baseline never completes (and none the other way round), or the mean completion time of the jobs every scenario completes falls by more than {}% and by at least {} s (min_material_change_s), and the completion curve is never behind the baseline's by more than {}% of the work, (2) important work misses at most {} more deadline(s), (3) important work's P95 wait grows by at most {}% + {} s, and (4) no share or class breaches its interruption budget more often than in the baseline (when budgets are defined); NO MATERIAL DIFFERENCE when the mean completion time moves by less than that, no job is completed by one scenario only, the waste does not grow and no clause fails; NO DIFFERENCE when the schedules are identical",
            self.min_completion_gain_pct,
            self.min_material_change_s,
            self.max_behind_pct,
            self.max_important_missed_deadlines_increase,
            self.max_important_p95_wait_increase_pct,
            self.important_p95_wait_slack_s,
        )
    }

    /// Reads the key of earlier versions (`min_goodput_gain_pct`) as `min_completion_gain_pct`
    /// when the new key keeps its default; returns the warning to show, if any.
    pub fn migrate(&mut self) -> Option<String> {
        let old = self.min_goodput_gain_pct.take()?;
        let default = Self::default().min_completion_gain_pct;
        if self.min_completion_gain_pct == default {
            self.min_completion_gain_pct = old;
            Some(format!(
                "warning: [decision] min_goodput_gain_pct is no longer used (goodput by one horizon cannot tell work completed sooner); read as min_completion_gain_pct = {old}: rename the key in the rules file"
            ))
        } else {
            Some(format!(
                "warning: [decision] min_goodput_gain_pct = {old} is ignored: min_completion_gain_pct = {} is set; remove the old key from the rules file",
                self.min_completion_gain_pct
            ))
        }
    }
}

/// Deadlines, budgets, prices and the decision rule.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Rules {
    /// Per share, or `*`.
    pub deadlines: BTreeMap<String, DeadlineRule>,
    /// Per share, or `*`.
    pub budgets: BTreeMap<String, Budget>,
    /// Price per instance-hour, per instance type. With none, cost is not reported.
    pub prices: BTreeMap<String, f64>,
    /// The currency of the prices, for display.
    pub currency: Option<String>,
    pub decision: DecisionRule,
    /// The classes of a policy (`replay --policy`), indexed by [`super::JobFacts::class`]: a
    /// job of a class with a promise or a budget is judged by its class's, over the share's
    /// `deadlines` and `budgets`. Never read from a file.
    #[serde(skip)]
    pub classes: Vec<ClassRule>,
}

/// What a policy class asks of its jobs in a comparison.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClassRule {
    pub name: String,
    /// Its promise as a deadline rule (`None`: it promises nothing).
    pub deadline: Option<DeadlineRule>,
    /// Its interruption budget (`None`: none).
    pub budget: Option<Budget>,
}

impl Rules {
    fn for_share<'a, T>(map: &'a BTreeMap<String, T>, share: &str) -> Option<&'a T> {
        map.get(share).or_else(|| map.get("*"))
    }
    pub fn deadline_rule(&self, share: &str) -> Option<&DeadlineRule> {
        Self::for_share(&self.deadlines, share)
    }
    pub fn budget(&self, share: &str) -> Option<&Budget> {
        Self::for_share(&self.budgets, share)
    }
    /// The deadline rule of a job of `class` (an index of [`Rules::classes`]) in `share`: its
    /// class's promise when it has one, else its share's.
    pub fn deadline_rule_of(&self, class: Option<u16>, share: &str) -> Option<&DeadlineRule> {
        self.class_rule(class)
            .and_then(|c| c.deadline.as_ref())
            .or_else(|| self.deadline_rule(share))
    }
    /// The class of index `class`, when there is one.
    pub fn class_rule(&self, class: Option<u16>) -> Option<&ClassRule> {
        self.classes.get(usize::from(class?))
    }
    /// Checks numbers: finite, not negative, within 100 years where they are durations.
    pub fn validate(&self) -> Result<(), RulesError> {
        const MAX_S: u64 = 100 * 365 * 24 * 3600;
        let finite = |key: String, value: f64| {
            if value.is_finite() && value >= 0.0 {
                Ok(())
            } else {
                Err(RulesError::Negative { key, value })
            }
        };
        for (share, d) in &self.deadlines {
            if let Some(f) = d.deadline_factor {
                finite(format!("deadlines.{share}.deadline_factor"), f)?;
                if f == 0.0 || f > 1e6 {
                    return Err(RulesError::DeadlineFactor {
                        share: share.clone(),
                        value: f,
                    });
                }
            }
            if d.max_wait_s.is_some_and(|s| s > MAX_S) {
                return Err(RulesError::BeyondLimit(format!(
                    "deadlines.{share}.max_wait_s"
                )));
            }
        }
        for (share, b) in &self.budgets {
            if let Some(v) = b.max_lost_gpu_hours_per_day {
                finite(format!("budgets.{share}.max_lost_gpu_hours_per_day"), v)?;
            }
        }
        for (ty, p) in &self.prices {
            finite(format!("prices.{ty:?}"), *p)?;
        }
        let d = &self.decision;
        finite(
            "decision.min_completion_gain_pct".into(),
            d.min_completion_gain_pct.abs(),
        )?;
        if let Some(v) = d.min_goodput_gain_pct {
            finite("decision.min_goodput_gain_pct".into(), v.abs())?;
        }
        finite("decision.max_behind_pct".into(), d.max_behind_pct)?;
        finite(
            "decision.min_material_change_s".into(),
            d.min_material_change_s,
        )?;
        finite(
            "decision.max_important_p95_wait_increase_pct".into(),
            d.max_important_p95_wait_increase_pct,
        )?;
        if d.important_p95_wait_slack_s > MAX_S {
            return Err(RulesError::BeyondLimit(
                "decision.important_p95_wait_slack_s".into(),
            ));
        }
        Ok(())
    }
}

/// A number of the rules that cannot be used; the message names its key.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RulesError {
    #[error("{key} = {value}: must be a number ≥ 0")]
    Negative { key: String, value: f64 },
    #[error("deadlines.{share}.deadline_factor = {value}: must be above 0 and at most 1000000")]
    DeadlineFactor { share: String, value: f64 },
    #[error("{0}: beyond 100 years")]
    BeyondLimit(String),
}

/// A job's deadline, absolute on the service's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "at")]
pub enum Deadline {
    /// SUCCEEDED by then.
    FinishBy(Millis),
    /// First given capacity by then.
    StartBy(Millis),
}

impl Deadline {
    /// Whether `job` met it.
    pub fn met(&self, job: &JobHistory) -> bool {
        match *self {
            Deadline::FinishBy(t) => matches!(job.outcome, Outcome::Succeeded(s) if s <= t),
            Deadline::StartBy(t) => job
                .attempts
                .first()
                .and_then(|a| a.held_from())
                .is_some_and(|s| s <= t),
        }
    }
}

/// The deadline of a job submitted at `submitted_at` with `work_ms` of work: its own
/// (`own_ms` after submission, from the trace) else its share's rule.
pub fn deadline_of(
    rules: &Rules,
    share: &str,
    submitted_at: Millis,
    work_ms: u64,
    own_ms: Option<u64>,
) -> Option<Deadline> {
    deadline_in(rules, None, share, submitted_at, work_ms, own_ms)
}

/// [`deadline_of`] for a job of `class` (an index of [`Rules::classes`]): its own deadline,
/// else its class's promise, else its share's rule.
pub fn deadline_in(
    rules: &Rules,
    class: Option<u16>,
    share: &str,
    submitted_at: Millis,
    work_ms: u64,
    own_ms: Option<u64>,
) -> Option<Deadline> {
    if let Some(ms) = own_ms {
        return Some(Deadline::FinishBy(
            submitted_at.saturating_add(Millis::try_from(ms).ok()?),
        ));
    }
    let rule = rules.deadline_rule_of(class, share)?;
    if let Some(f) = rule.deadline_factor {
        let d = (work_ms as f64 * f).min(Millis::MAX as f64 / 4.0) as Millis;
        return Some(Deadline::FinishBy(submitted_at.saturating_add(d)));
    }
    rule.start_by(submitted_at)
}

impl DeadlineRule {
    /// The `max_wait_s` deadline of a job submitted at `submitted_at`, if the rule has one.
    pub fn start_by(&self, submitted_at: Millis) -> Option<Deadline> {
        self.max_wait_s.map(|s| {
            Deadline::StartBy(
                submitted_at.saturating_add(
                    Millis::try_from(s.saturating_mul(1000)).unwrap_or(Millis::MAX),
                ),
            )
        })
    }
}
