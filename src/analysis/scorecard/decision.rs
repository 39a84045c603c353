//! What the procurement comparison asks for (PRODUCT.md, "Deciding, not only measuring"):
//! deadlines, the delivery of important work, interruption budgets, cost, and a verdict by a
//! stated rule. The rules live in quotatop's config file and in replay configurations, never in
//! a quota-share file; every figure reads the ledger and the wait definition of the scorecard.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::model::Millis;

use super::bands::PriorityBand;
use super::input::{AttemptEnd, JobHistory, Outcome, ScorecardInput, ScorecardOptions, Window};
use super::ledger;
use super::metrics::{self, WaitStats};
use super::{Goodput, goodput_of};

const HOUR_MS: f64 = 3_600_000.0;
const DAY_MS: Millis = 24 * 3_600_000;

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

/// The rule a scenario is judged by against the baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DecisionRule {
    /// Goodput (productive GPU-hours finished by the horizon) must rise by more than this.
    pub min_goodput_gain_pct: f64,
    /// Important work's P95 wait may grow by at most this percentage…
    pub max_important_p95_wait_increase_pct: f64,
    /// …plus this many seconds (so that a baseline of 0 does not forbid any wait at all).
    pub important_p95_wait_slack_s: u64,
    /// Important work may miss at most this many more deadlines than in the baseline.
    pub max_important_missed_deadlines_increase: u64,
}

impl Default for DecisionRule {
    fn default() -> Self {
        Self {
            min_goodput_gain_pct: 0.0,
            max_important_p95_wait_increase_pct: 10.0,
            important_p95_wait_slack_s: 60,
            max_important_missed_deadlines_increase: 0,
        }
    }
}

impl DecisionRule {
    pub fn describe(&self) -> String {
        format!(
            "approve when goodput by the horizon rises by more than {}% and important work's P95 wait grows by at most {}% + {} s and its missed deadlines by at most {}",
            self.min_goodput_gain_pct,
            self.max_important_p95_wait_increase_pct,
            self.important_p95_wait_slack_s,
            self.max_important_missed_deadlines_increase
        )
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
    /// Checks numbers: finite, not negative, within 100 years where they are durations.
    pub fn validate(&self) -> Result<(), String> {
        const MAX_S: u64 = 100 * 365 * 24 * 3600;
        let finite = |what: String, v: f64| {
            if v.is_finite() && v >= 0.0 {
                Ok(())
            } else {
                Err(format!("{what} = {v}: must be a number ≥ 0"))
            }
        };
        for (share, d) in &self.deadlines {
            if let Some(f) = d.deadline_factor {
                finite(format!("deadlines.{share}.deadline_factor"), f)?;
                if f == 0.0 || f > 1e6 {
                    return Err(format!(
                        "deadlines.{share}.deadline_factor = {f}: must be above 0 and at most 1000000"
                    ));
                }
            }
            if d.max_wait_s.is_some_and(|s| s > MAX_S) {
                return Err(format!("deadlines.{share}.max_wait_s: beyond 100 years"));
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
            "decision.min_goodput_gain_pct".into(),
            d.min_goodput_gain_pct.abs(),
        )?;
        finite(
            "decision.max_important_p95_wait_increase_pct".into(),
            d.max_important_p95_wait_increase_pct,
        )?;
        if d.important_p95_wait_slack_s > MAX_S {
            return Err("decision.important_p95_wait_slack_s: beyond 100 years".into());
        }
        Ok(())
    }
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
    if let Some(ms) = own_ms {
        return Some(Deadline::FinishBy(
            submitted_at.saturating_add(Millis::try_from(ms).ok()?),
        ));
    }
    let rule = rules.deadline_rule(share)?;
    if let Some(f) = rule.deadline_factor {
        let d = (work_ms as f64 * f).min(Millis::MAX as f64 / 4.0) as Millis;
        return Some(Deadline::FinishBy(submitted_at.saturating_add(d)));
    }
    rule.max_wait_s
        .map(|s| Deadline::StartBy(submitted_at.saturating_add(s.saturating_mul(1000) as Millis)))
}

/// What the comparison knows about a job beyond its history: the same for every scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobFacts {
    /// High or critical band as submitted, or in the share a scenario protects.
    pub important: bool,
    /// The band of the priority as submitted.
    pub band: PriorityBand,
    pub deadline: Option<Deadline>,
}

/// Deadlines met and missed in one group of jobs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Deadlines {
    pub with_deadline: usize,
    pub missed: usize,
}

/// The delivery of one group of jobs (all, or important work).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Delivery {
    pub jobs: usize,
    pub goodput: Goodput,
    pub wait: WaitStats,
    pub deadlines: Deadlines,
}

/// Interruption-budget breaches of one share.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BudgetBreaches {
    pub share: String,
    /// Jobs preempted more often than the share allows.
    pub jobs_over_preemptions: usize,
    /// Days on which the share's preemption waste exceeded its daily budget.
    pub days_over_lost: usize,
}

/// Cost in the prices' currency, from instance-hours.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    pub currency: String,
    pub allocated: f64,
    pub productive: f64,
    /// Lost work and restart overhead.
    pub wasted: f64,
    /// Instance types held or allocated without a price (their cost is not counted).
    pub unpriced: Vec<String>,
    /// The same per share (allocated: its entitlement, its capacity limits), in the input's
    /// share order.
    pub by_share: Vec<ShareCost>,
}

/// One share's cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ShareCost {
    pub share: String,
    pub allocated: f64,
    pub productive: f64,
    pub wasted: f64,
}

/// Everything a scenario is judged on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Evaluation {
    pub horizon: Window,
    pub all: Delivery,
    pub important: Delivery,
    /// Missed deadlines per share, in the input's share order.
    pub deadlines_by_share: Vec<(String, Deadlines)>,
    pub deadlines_by_band: Vec<(PriorityBand, Deadlines)>,
    pub budgets: Vec<BudgetBreaches>,
    /// `None` without prices.
    pub cost: Option<Cost>,
}

impl Evaluation {
    pub fn budget_breaches(&self) -> usize {
        self.budgets
            .iter()
            .map(|b| b.jobs_over_preemptions + b.days_over_lost)
            .sum()
    }
}

fn delivery(
    jobs: &[(&JobHistory, &JobFacts)],
    window: Window,
    horizon: Window,
    opts: &ScorecardOptions,
) -> Delivery {
    let histories: Vec<&JobHistory> = jobs.iter().map(|(j, _)| *j).collect();
    let mut d = Delivery {
        jobs: jobs.len(),
        goodput: goodput_of(&histories, horizon, opts),
        wait: metrics::waits(&histories, window),
        deadlines: Deadlines::default(),
    };
    for (j, f) in jobs {
        if let Some(dl) = f.deadline {
            d.deadlines.with_deadline += 1;
            if !dl.met(j) {
                d.deadlines.missed += 1;
            }
        }
    }
    d
}

fn budgets(
    input: &ScorecardInput,
    rules: &Rules,
    window: Window,
    opts: &ScorecardOptions,
) -> Vec<BudgetBreaches> {
    let mut shares: Vec<&str> = input
        .entitlements
        .iter()
        .map(|e| e.share.as_str())
        .collect();
    for j in &input.jobs {
        if !shares.contains(&j.share.as_str()) {
            shares.push(&j.share);
        }
    }
    shares
        .into_iter()
        .filter_map(|share| {
            let b = rules.budget(share)?;
            let jobs: Vec<&JobHistory> = input.jobs.iter().filter(|j| j.share == share).collect();
            let mut out = BudgetBreaches {
                share: share.to_string(),
                ..Default::default()
            };
            if let Some(max) = b.max_preemptions_per_job {
                out.jobs_over_preemptions = jobs
                    .iter()
                    .filter(|j| {
                        j.attempts
                            .iter()
                            .filter(|a| a.end == AttemptEnd::Preempted)
                            .count()
                            > max as usize
                    })
                    .count();
            }
            if let Some(max) = b.max_lost_gpu_hours_per_day {
                // Only jobs with a preempted attempt can lose work or pay restart overhead.
                let hit: Vec<&JobHistory> = jobs
                    .iter()
                    .copied()
                    .filter(|j| j.attempts.iter().any(|a| a.end == AttemptEnd::Preempted))
                    .collect();
                let mut start = window.start;
                while start < window.end && !hit.is_empty() {
                    let day = Window::new(start, start.saturating_add(DAY_MS).min(window.end));
                    if ledger::ledger(&hit, day, opts).waste_gpu_hours() > max + 1e-9 {
                        out.days_over_lost += 1;
                    }
                    start = day.end;
                }
            }
            Some(out)
        })
        .collect()
}

fn cost(input: &ScorecardInput, rules: &Rules, window: Window, opts: &ScorecardOptions) -> Cost {
    let mut c = Cost {
        currency: rules.currency.clone().unwrap_or_default(),
        ..Default::default()
    };
    let mut unpriced = std::collections::BTreeSet::new();
    let hours = |ms: Millis, count: u32| ms as f64 / HOUR_MS * f64::from(count);
    for l in &input.capacity {
        match rules.prices.get(&l.instance_type) {
            Some(p) => c.allocated += hours(window.len_ms(), l.max_capacity) * p,
            None => {
                unpriced.insert(l.instance_type.clone());
            }
        }
    }
    let mut by_share: Vec<ShareCost> = input
        .entitlements
        .iter()
        .map(|e| ShareCost {
            share: e.share.clone(),
            allocated: e
                .limits
                .iter()
                .filter_map(|l| {
                    Some(
                        hours(window.len_ms(), l.max_capacity)
                            * rules.prices.get(&l.instance_type)?,
                    )
                })
                .sum(),
            ..Default::default()
        })
        .collect();
    for j in &input.jobs {
        let Some(p) = rules.prices.get(&j.instance_type) else {
            if !j.attempts.is_empty() {
                unpriced.insert(j.instance_type.clone());
            }
            continue;
        };
        let l = ledger::job_ledger(j, window, opts);
        let (productive, wasted) = (
            hours(l.productive, j.instance_count) * p,
            hours(l.lost + l.overhead, j.instance_count) * p,
        );
        c.productive += productive;
        c.wasted += wasted;
        let row = match by_share.iter().position(|r| r.share == j.share) {
            Some(i) => &mut by_share[i],
            None => {
                by_share.push(ShareCost {
                    share: j.share.clone(),
                    ..Default::default()
                });
                let last = by_share.len() - 1;
                &mut by_share[last]
            }
        };
        row.productive += productive;
        row.wasted += wasted;
    }
    c.unpriced = unpriced.into_iter().collect();
    c.by_share = by_share;
    c
}

/// Evaluates a run: `facts[i]` belongs to `input.jobs[i]`. `horizon` bounds goodput; waits and
/// deadlines are read over the input's window.
pub fn evaluate(
    input: &ScorecardInput,
    facts: &[JobFacts],
    horizon: Window,
    opts: &ScorecardOptions,
    rules: &Rules,
) -> Evaluation {
    let window = input.window;
    let pairs: Vec<(&JobHistory, &JobFacts)> = input.jobs.iter().zip(facts).collect();
    let important: Vec<(&JobHistory, &JobFacts)> =
        pairs.iter().copied().filter(|(_, f)| f.important).collect();
    let group = |keep: &dyn Fn(&JobHistory, &JobFacts) -> bool| {
        let mut d = Deadlines::default();
        for (j, f) in &pairs {
            if let Some(dl) = f.deadline.filter(|_| keep(j, f)) {
                d.with_deadline += 1;
                if !dl.met(j) {
                    d.missed += 1;
                }
            }
        }
        d
    };
    let mut shares: Vec<String> = input.entitlements.iter().map(|e| e.share.clone()).collect();
    for j in &input.jobs {
        if !shares.contains(&j.share) {
            shares.push(j.share.clone());
        }
    }
    Evaluation {
        horizon,
        all: delivery(&pairs, window, horizon, opts),
        important: delivery(&important, window, horizon, opts),
        deadlines_by_share: shares
            .into_iter()
            .map(|s| {
                let d = group(&|j, _| j.share == s);
                (s, d)
            })
            .collect(),
        deadlines_by_band: PriorityBand::ALL
            .into_iter()
            .map(|b| (b, group(&|_, f| f.band == b)))
            .filter(|(_, d)| d.with_deadline > 0)
            .collect(),
        budgets: budgets(input, rules, window, opts),
        cost: (!rules.prices.is_empty()).then(|| cost(input, rules, window, opts)),
    }
}

/// What the comparison knows of jobs observed through the API (the journal): important work is
/// the high and critical bands by the job's last known priority; a job's work, for a
/// `deadline_factor`, is its productive running time once it succeeded, so a job that has not
/// succeeded has no such deadline (a `max_wait_s` still applies).
pub fn observed_facts(
    input: &ScorecardInput,
    opts: &ScorecardOptions,
    rules: &Rules,
) -> Vec<JobFacts> {
    input
        .jobs
        .iter()
        .map(|j| {
            let band = PriorityBand::of(j.priority);
            let deadline = match j.outcome {
                Outcome::Succeeded(_) => {
                    let work = ledger::job_ledger(j, input.window, opts).productive.max(0) as u64;
                    deadline_of(rules, &j.share, j.submitted_at, work, None)
                }
                _ => rules
                    .deadline_rule(&j.share)
                    .and_then(|r| r.max_wait_s)
                    .map(|s| {
                        Deadline::StartBy(j.submitted_at.saturating_add(
                            Millis::try_from(s.saturating_mul(1000)).unwrap_or(Millis::MAX),
                        ))
                    }),
            };
            JobFacts {
                important: band >= PriorityBand::High,
                band,
                deadline,
            }
        })
        .collect()
}

/// [`evaluate`] of jobs observed through the API, over the input's window (see
/// [`observed_facts`]): what `report` and the console's Scorecard show.
pub fn evaluate_observed(
    input: &ScorecardInput,
    opts: &ScorecardOptions,
    rules: &Rules,
) -> Evaluation {
    let facts = observed_facts(input, opts, rules);
    evaluate(input, &facts, input.window, opts, rules)
}

/// A scenario against the baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub approve: bool,
    pub goodput_gain_pct: Option<f64>,
    pub completed_by_horizon_delta: i64,
    pub productive_gpu_hours_delta: f64,
    pub important_p95_wait_delta_ms: Option<Millis>,
    pub important_missed_deadlines_delta: i64,
    /// Why, in words: each condition and whether it held.
    pub reasons: Vec<String>,
}

/// Judges `this` against `base` by `rule`.
pub fn verdict(base: &Evaluation, this: &Evaluation, rule: &DecisionRule) -> Verdict {
    let (g0, g) = (
        base.all.goodput.productive_gpu_hours,
        this.all.goodput.productive_gpu_hours,
    );
    let gain = (g0 > 0.0).then(|| 100.0 * (g - g0) / g0);
    let goodput_ok = match gain {
        Some(p) => p > rule.min_goodput_gain_pct,
        None => g > 0.0,
    };
    let (w0, w) = (base.important.wait.p95_ms, this.important.wait.p95_ms);
    let slack = Millis::try_from(rule.important_p95_wait_slack_s.saturating_mul(1000))
        .unwrap_or(Millis::MAX);
    let wait_ok = match (w0, w) {
        (_, None) => true,
        (None, Some(w)) => w <= slack,
        (Some(w0), Some(w)) => {
            w as f64
                <= w0 as f64 * (1.0 + rule.max_important_p95_wait_increase_pct / 100.0)
                    + slack as f64
        }
    };
    let missed_delta =
        this.important.deadlines.missed as i64 - base.important.deadlines.missed as i64;
    let deadlines_ok = missed_delta <= rule.max_important_missed_deadlines_increase as i64;
    let yes_no = |b: bool| if b { "yes" } else { "no" };
    let reasons = vec![
        format!(
            "goodput rises by more than {}%: {} ({})",
            rule.min_goodput_gain_pct,
            yes_no(goodput_ok),
            gain.map_or("no baseline goodput".to_string(), |p| format!("{p:+.1}%"))
        ),
        format!(
            "important P95 wait within +{}% + {} s: {}",
            rule.max_important_p95_wait_increase_pct,
            rule.important_p95_wait_slack_s,
            yes_no(wait_ok)
        ),
        format!(
            "important missed deadlines up by at most {}: {} ({missed_delta:+})",
            rule.max_important_missed_deadlines_increase,
            yes_no(deadlines_ok)
        ),
    ];
    Verdict {
        approve: goodput_ok && wait_ok && deadlines_ok,
        goodput_gain_pct: gain,
        completed_by_horizon_delta: this.all.goodput.completed_jobs as i64
            - base.all.goodput.completed_jobs as i64,
        productive_gpu_hours_delta: g - g0,
        important_p95_wait_delta_ms: match (w0, w) {
            (Some(a), Some(b)) => Some(b - a),
            _ => None,
        },
        important_missed_deadlines_delta: missed_delta,
        reasons,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::scorecard::{AttemptHistory, Entitlement};
    use crate::model::CapacityLimit;

    const H: Millis = 3_600_000;
    const G5: &str = "ml.g5.2xlarge"; // 1 GPU

    fn attempt(s: Millis, stop: Millis, end: AttemptEnd) -> AttemptHistory {
        AttemptHistory {
            scheduled_at: Some(s),
            started_at: Some(s),
            stopped_at: Some(stop),
            end,
            preempting_from: None,
        }
    }

    fn job(id: &str, share: &str, attempts: Vec<AttemptHistory>, outcome: Outcome) -> JobHistory {
        JobHistory {
            job_id: id.into(),
            name: id.into(),
            share: share.into(),
            priority: 0,
            instance_type: G5.into(),
            instance_count: 2,
            submitted_at: 0,
            runnable_at: vec![0],
            attempts,
            outcome,
            checkpoint_interval_ms: None,
            restart_overhead_ms: Some(0),
        }
    }

    /// A: share a, runs 0–2 h, succeeds. B: share b, preempted at 1 h and 2 h (2 GPU-h lost
    /// each), then runs 3 h–5 h and succeeds. C: share b, submitted at 0, first given capacity
    /// at 4 h, still running at the end (6 h).
    fn input() -> ScorecardInput {
        let a = job(
            "A",
            "a",
            vec![attempt(0, 2 * H, AttemptEnd::Completed)],
            Outcome::Succeeded(2 * H),
        );
        let mut b = job(
            "B",
            "b",
            vec![
                attempt(0, H, AttemptEnd::Preempted),
                attempt(H, 2 * H, AttemptEnd::Preempted),
                attempt(3 * H, 5 * H, AttemptEnd::Completed),
            ],
            Outcome::Succeeded(5 * H),
        );
        b.runnable_at = vec![0, H, 2 * H];
        let mut c = job("C", "b", vec![], Outcome::Open);
        c.attempts = vec![AttemptHistory {
            stopped_at: None,
            end: AttemptEnd::Open,
            ..attempt(4 * H, 0, AttemptEnd::Open)
        }];
        ScorecardInput {
            queue: "q".into(),
            window: Window::new(0, 6 * H),
            capacity: vec![CapacityLimit::new(G5, 4)],
            entitlements: vec![
                Entitlement {
                    share: "a".into(),
                    limits: vec![CapacityLimit::new(G5, 2)],
                },
                Entitlement {
                    share: "b".into(),
                    limits: vec![CapacityLimit::new(G5, 2)],
                },
            ],
            jobs: vec![a, b, c],
        }
    }

    fn facts(important: [bool; 3], deadlines: [Option<Deadline>; 3]) -> Vec<JobFacts> {
        (0..3)
            .map(|i| JobFacts {
                important: important[i],
                band: PriorityBand::Low,
                deadline: deadlines[i],
            })
            .collect()
    }

    #[test]
    fn deadlines_come_from_the_trace_then_the_share_then_star() {
        let mut rules = Rules::default();
        rules.deadlines.insert(
            "*".into(),
            DeadlineRule {
                deadline_factor: Some(2.0),
                max_wait_s: None,
            },
        );
        rules.deadlines.insert(
            "b".into(),
            DeadlineRule {
                deadline_factor: None,
                max_wait_s: Some(600),
            },
        );
        assert_eq!(
            deadline_of(&rules, "a", 1000, 5000, Some(7000)),
            Some(Deadline::FinishBy(8000))
        );
        assert_eq!(
            deadline_of(&rules, "a", 1000, 5000, None),
            Some(Deadline::FinishBy(11_000))
        );
        assert_eq!(
            deadline_of(&rules, "b", 1000, 5000, None),
            Some(Deadline::StartBy(601_000))
        );
        assert_eq!(deadline_of(&Rules::default(), "a", 0, 5000, None), None);
        let i = input();
        assert!(Deadline::FinishBy(5 * H).met(&i.jobs[1]));
        assert!(!Deadline::FinishBy(5 * H - 1).met(&i.jobs[1]));
        assert!(Deadline::StartBy(4 * H).met(&i.jobs[2]));
        assert!(!Deadline::StartBy(4 * H - 1).met(&i.jobs[2]));
    }

    #[test]
    fn important_work_budgets_and_cost() {
        let i = input();
        let mut rules = Rules::default();
        rules.budgets.insert(
            "b".into(),
            Budget {
                max_preemptions_per_job: Some(1),
                max_lost_gpu_hours_per_day: Some(3.0),
            },
        );
        rules.prices.insert(G5.into(), 1.5);
        rules.currency = Some("USD".into());
        let f = facts(
            [false, true, true],
            [
                None,
                Some(Deadline::FinishBy(4 * H)),
                Some(Deadline::StartBy(H)),
            ],
        );
        let e = evaluate(
            &i,
            &f,
            Window::new(0, 3 * H),
            &ScorecardOptions::default(),
            &rules,
        );
        assert_eq!(e.important.jobs, 2);
        // Both important deadlines missed: B succeeded at 5 h, C started at 4 h.
        assert_eq!(
            e.important.deadlines,
            Deadlines {
                with_deadline: 2,
                missed: 2
            }
        );
        assert_eq!(
            e.all.deadlines,
            Deadlines {
                with_deadline: 2,
                missed: 2
            }
        );
        // By the 3 h horizon only A has finished: 2 h × 2 GPUs.
        assert_eq!(e.all.goodput.completed_jobs, 1);
        assert!((e.all.goodput.productive_gpu_hours - 4.0).abs() < 1e-9);
        assert_eq!(e.important.goodput.completed_jobs, 0);
        // Important waits: B 0, 0, 1 h (requeued at 2 h, back at 3 h); C 4 h.
        assert_eq!(e.important.wait.count, 4);
        assert_eq!(e.important.wait.p95_ms, Some(4 * H));
        assert_eq!(e.important.wait.mean_ms, Some(5 * H / 4));
        // B preempted twice (> 1); 4 GPU-h lost on day one (> 3).
        assert_eq!(
            e.budgets,
            vec![BudgetBreaches {
                share: "b".into(),
                jobs_over_preemptions: 1,
                days_over_lost: 1,
            }]
        );
        assert_eq!(e.budget_breaches(), 2);
        let c = e.cost.expect("priced");
        // Allocated 4 × 6 h × 1.5; productive A 2 h + B 2 h, × 2 instances × 1.5; wasted 2 h × 2 × 1.5.
        assert!((c.allocated - 36.0).abs() < 1e-9, "{c:?}");
        assert!((c.productive - 12.0).abs() < 1e-9, "{c:?}");
        assert!((c.wasted - 6.0).abs() < 1e-9, "{c:?}");
        assert!(c.unpriced.is_empty());
        // Per share: a holds 2 of the 4 instances' entitlement and A's 2 h; b the rest.
        let a = &c.by_share[0];
        assert_eq!(a.share, "a");
        assert!(
            (a.allocated - 18.0).abs() < 1e-9 && (a.productive - 6.0).abs() < 1e-9,
            "{a:?}"
        );
        let b = &c.by_share[1];
        assert!(
            (b.productive - 6.0).abs() < 1e-9 && (b.wasted - 6.0).abs() < 1e-9,
            "{b:?}"
        );
        // No prices, no cost.
        let e = evaluate(
            &i,
            &f,
            i.window,
            &ScorecardOptions::default(),
            &Rules::default(),
        );
        assert_eq!(e.cost, None);
        assert!(e.budgets.is_empty());
    }

    fn eval(goodput: f64, p95: Option<Millis>, missed: usize) -> Evaluation {
        let mut e = Evaluation::default();
        e.all.goodput.productive_gpu_hours = goodput;
        e.important.wait.p95_ms = p95;
        e.important.deadlines = Deadlines {
            with_deadline: 10,
            missed,
        };
        e
    }

    #[test]
    fn verdict_by_the_stated_rule() {
        let rule = DecisionRule::default();
        let base = eval(100.0, Some(10 * 60_000), 1);
        assert!(verdict(&base, &eval(110.0, Some(10 * 60_000), 1), &rule).approve);
        // Goodput must rise.
        let v = verdict(&base, &eval(100.0, Some(10 * 60_000), 1), &rule);
        assert!(!v.approve && v.reasons[0].contains(": no"), "{v:?}");
        // 10 min × 1.1 + 60 s = 12 min allowed.
        assert!(verdict(&base, &eval(110.0, Some(12 * 60_000), 1), &rule).approve);
        let v = verdict(&base, &eval(110.0, Some(12 * 60_000 + 1), 1), &rule);
        assert!(!v.approve && v.reasons[1].contains(": no"), "{v:?}");
        // One more missed deadline of important work.
        let v = verdict(&base, &eval(110.0, Some(60_000), 2), &rule);
        assert!(!v.approve && v.reasons[2].contains(": no"), "{v:?}");
        assert_eq!(v.important_missed_deadlines_delta, 1);
        // A baseline of 0 wait still allows the slack.
        let zero = eval(100.0, Some(0), 0);
        assert!(verdict(&zero, &eval(101.0, Some(60_000), 0), &rule).approve);
        assert!(!verdict(&zero, &eval(101.0, Some(60_001), 0), &rule).approve);
    }

    #[test]
    fn rules_reject_out_of_range_numbers() {
        let mut r = Rules::default();
        r.prices.insert(G5.into(), f64::NAN);
        assert!(r.validate().unwrap_err().contains("prices"));
        let mut r = Rules::default();
        r.deadlines.insert(
            "*".into(),
            DeadlineRule {
                deadline_factor: Some(-1.0),
                max_wait_s: None,
            },
        );
        assert!(r.validate().is_err());
        let mut r = Rules::default();
        r.deadlines.insert(
            "*".into(),
            DeadlineRule {
                deadline_factor: None,
                max_wait_s: Some(u64::MAX),
            },
        );
        assert!(r.validate().unwrap_err().contains("100 years"));
        assert!(Rules::default().validate().is_ok());
    }
}
