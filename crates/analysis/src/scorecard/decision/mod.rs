//! What the procurement comparison asks for (docs/verdict.md):
//! deadlines, the delivery of important work, interruption budgets, cost, and a verdict by a
//! stated rule. The rules live in quotatop's config file and in replay configurations, never in
//! a quota-share file; every figure reads the ledger and the wait definition of the scorecard.

mod compare;
mod rules;

pub use compare::{
    Clause, CompletionFigures, CurveFrame, Scenario, Schedule, Verdict, VerdictKind, WindowFigures,
    common_window, completion_figures, fingerprint, max_behind_gpu_hours, verdict, window_figures,
};
pub use rules::{
    Budget, ClassRule, Deadline, DeadlineRule, DecisionRule, Rules, RulesError, deadline_in,
    deadline_of,
};

use serde::{Deserialize, Serialize};

use quotatop_model::Millis;

use super::bands::PriorityBand;
use super::input::{AttemptEnd, JobHistory, Outcome, ScorecardInput, ScorecardOptions, Window};
use super::ledger;
use super::metrics::{self, WaitStats};
use super::{Goodput, goodput_of};

const HOUR_MS: f64 = 3_600_000.0;
const DAY_MS: Millis = 24 * 3_600_000;

/// What the comparison knows about a job beyond its history: the same for every scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobFacts {
    /// High or critical band as submitted, or in the share a scenario protects.
    pub important: bool,
    /// The band of the priority as submitted.
    pub band: PriorityBand,
    pub deadline: Option<Deadline>,
    /// Its policy class, an index of [`Rules::classes`] (`None`: no policy, or no class).
    #[serde(default)]
    pub class: Option<u16>,
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
    /// The share, or the class when `by_class`.
    pub share: String,
    /// A policy class's budget, over the class's jobs in every share (`policy check`'s).
    #[serde(default)]
    pub by_class: bool,
    /// Jobs preempted more often than the share allows.
    pub jobs_over_preemptions: usize,
    /// Days on which the share's preemption waste exceeded its daily budget.
    pub days_over_lost: usize,
}

/// Cost in the prices' currency, from instance-hours.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    pub currency: String,
    /// Over the evaluation's window (a comparison puts every scenario on one window: see
    /// [`compare::window_figures`]).
    pub allocated: f64,
    /// The capacity's price per hour: `allocated` of any window is this × its hours.
    pub allocated_per_hour: f64,
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
    pub allocated_per_hour: f64,
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
    /// Waits per band, the band being the priority as submitted ([`JobFacts::band`], as the
    /// deadline table's): a raised priority never moves a job to another row.
    #[serde(default)]
    pub waits_by_band: Vec<(PriorityBand, WaitStats)>,
    /// Whether any interruption budget was defined (without one, `budgets` is empty and the
    /// verdict does not judge interruptions).
    #[serde(default)]
    pub budgets_defined: bool,
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

/// The groups a budget is judged over: a policy class with a budget (its jobs in every share,
/// as `policy check` judges it), else a share with a `[budgets]` rule; each with its budget
/// and jobs, classes first in the policy's order, then shares in the input's order.
fn budget_groups<'a>(
    input: &'a ScorecardInput,
    facts: &[JobFacts],
    rules: &'a Rules,
) -> Vec<(String, bool, &'a Budget, Vec<&'a JobHistory>)> {
    let mut groups: Vec<(String, bool, &Budget, Vec<&JobHistory>)> = rules
        .classes
        .iter()
        .filter_map(|c| Some((c.name.clone(), true, c.budget.as_ref()?, Vec::new())))
        .collect();
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
    for share in shares {
        if let Some(b) = rules.budget(share) {
            groups.push((share.to_string(), false, b, Vec::new()));
        }
    }
    for (i, j) in input.jobs.iter().enumerate() {
        let class = facts.get(i).and_then(|f| rules.class_rule(f.class));
        let key = match class.filter(|c| c.budget.is_some()) {
            Some(c) => (c.name.as_str(), true),
            None => (j.share.as_str(), false),
        };
        if let Some(g) = groups.iter_mut().find(|g| g.0 == key.0 && g.1 == key.1) {
            g.3.push(j);
        }
    }
    groups
}

fn budgets(
    input: &ScorecardInput,
    facts: &[JobFacts],
    rules: &Rules,
    window: Window,
    opts: &ScorecardOptions,
) -> Vec<BudgetBreaches> {
    budget_groups(input, facts, rules)
        .into_iter()
        .map(|(name, by_class, b, jobs)| {
            let mut out = BudgetBreaches {
                share: name,
                by_class,
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
            out
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
            Some(p) => c.allocated_per_hour += f64::from(l.max_capacity) * p,
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
            allocated_per_hour: e
                .limits
                .iter()
                .filter_map(|l| {
                    Some(f64::from(l.max_capacity) * rules.prices.get(&l.instance_type)?)
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
            Some(i) => by_share.get_mut(i),
            None => {
                by_share.push(ShareCost {
                    share: j.share.clone(),
                    ..Default::default()
                });
                by_share.last_mut()
            }
        };
        if let Some(row) = row {
            row.productive += productive;
            row.wasted += wasted;
        }
    }
    c.unpriced = unpriced.into_iter().collect();
    c.by_share = by_share;
    c.in_window(window)
}

impl Cost {
    /// The same cost with `allocated` over `window` (productive and wasted are the ledger's,
    /// unchanged when `window` holds every event).
    pub fn in_window(mut self, window: Window) -> Self {
        let h = window.len_ms() as f64 / HOUR_MS;
        self.allocated = self.allocated_per_hour * h;
        for s in &mut self.by_share {
            s.allocated = s.allocated_per_hour * h;
        }
        self
    }
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
        waits_by_band: PriorityBand::ALL
            .into_iter()
            .filter_map(|b| {
                let jobs: Vec<&JobHistory> = pairs
                    .iter()
                    .filter(|(_, f)| f.band == b)
                    .map(|(j, _)| *j)
                    .collect();
                (!jobs.is_empty()).then(|| (b, metrics::waits(&jobs, window)))
            })
            .collect(),
        budgets_defined: !rules.budgets.is_empty()
            || rules.classes.iter().any(|c| c.budget.is_some()),
        budgets: budgets(input, facts, rules, window, opts),
        // `s3_gb_month` prices checkpoint storage, not instance-hours.
        cost: rules
            .prices
            .keys()
            .any(|k| k != super::S3_PRICE_KEY)
            .then(|| cost(input, rules, window, opts)),
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
                    .and_then(|r| r.start_by(j.submitted_at)),
            };
            JobFacts {
                important: band >= PriorityBand::High,
                band,
                deadline,
                class: None,
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

#[cfg(test)]
mod tests;
