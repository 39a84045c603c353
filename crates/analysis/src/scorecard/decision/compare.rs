//! Deciding between scenarios: the completion curve, one common window, and the verdict by a
//! four-clause rule.
//!
//! A trace that finishes in every scenario has the same productive total everywhere, so "more
//! completed work" means work completed *sooner*; no single horizon can say it. The completion
//! curve C(t) (productive GPU-hours of the jobs that succeeded by t) can: the change of the
//! work-weighted mean completion time equals the area between two curves divided by the work.

use std::hash::{Hash, Hasher};

use serde::{Deserialize, Serialize};

use quotatop_model::Millis;

mod completion;

use super::{Cost, DecisionRule, Evaluation};
use crate::scorecard::input::{AttemptEnd, JobHistory, Outcome, Window};

const HOUR_MS: f64 = 3_600_000.0;

/// What a scenario did with each job, in the comparison's job order (the same in every
/// scenario: the trace's, in submission order).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Schedule {
    /// Each job's work in GPU-hours (its productive GPU-hours once it has succeeded); the same
    /// in every scenario.
    pub work_gpu_hours: Vec<f64>,
    /// When each job succeeded, if it did.
    pub completed_at: Vec<Option<Millis>>,
    /// The jobs this scenario can never run (indices in the job order).
    pub never_run: Vec<usize>,
    /// A digest of every attempt's times and every outcome: equal digests, identical schedules.
    pub fingerprint: u64,
    /// From the first submission to just after the last event.
    pub window: Window,
    /// The last submission: the end of the submission window.
    pub last_submission: Millis,
    /// GPUs of the capacity: the allocated GPU-hours of a window are this × its hours.
    pub capacity_gpus: f64,
}

/// The digest of [`Schedule::fingerprint`]: every attempt's times and end, every outcome, in
/// the jobs' order.
pub fn fingerprint<'a>(jobs: impl IntoIterator<Item = &'a JobHistory>) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    for j in jobs {
        j.attempts.len().hash(&mut h);
        for a in &j.attempts {
            (
                a.scheduled_at,
                a.started_at,
                a.stopped_at,
                a.preempting_from,
            )
                .hash(&mut h);
            match a.end {
                AttemptEnd::Open => 0u8,
                AttemptEnd::Preempted => 1,
                AttemptEnd::Completed => 2,
                AttemptEnd::Failed => 3,
            }
            .hash(&mut h);
        }
        match j.outcome {
            Outcome::Open => (0u8, 0),
            Outcome::Succeeded(t) => (1, t),
            Outcome::Failed(t) => (2, t),
        }
        .hash(&mut h);
    }
    h.finish()
}

/// One scenario as the comparison reads it.
#[derive(Debug, Clone, Copy)]
pub struct Scenario<'a> {
    pub name: &'a str,
    pub schedule: &'a Schedule,
    pub evaluation: &'a Evaluation,
    /// The ledger's productive and waste (lost + overhead) GPU-hours of the whole run.
    pub productive_gpu_hours: f64,
    pub waste_gpu_hours: f64,
}

/// The one window of every window-based figure of a comparison: from the first submission to
/// the latest end in any scenario.
pub fn common_window(scenarios: &[Scenario<'_>]) -> Window {
    let start = scenarios.iter().map(|s| s.schedule.window.start).min();
    let end = scenarios.iter().map(|s| s.schedule.window.end).max();
    Window::new(start.unwrap_or(0), end.unwrap_or(0))
}

/// Allocated GPU-hours, utilisation and cost of a scenario over the common window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WindowFigures {
    pub window: Window,
    pub allocated_gpu_hours: f64,
    /// Completed-work utilisation: productive ÷ allocated GPU-hours.
    pub utilisation: Option<f64>,
    /// `None` without prices; `allocated` over the common window.
    pub cost: Option<Cost>,
    /// Allocated cost ÷ productive GPU-hours.
    pub cost_per_productive_gpu_hour: Option<f64>,
}

/// [`WindowFigures`] of `s` over `window` (the [`common_window`]: it holds every event, so the
/// ledger's productive and wasted figures are those of the whole run).
pub fn window_figures(s: &Scenario<'_>, window: Window) -> WindowFigures {
    let hours = window.len_ms() as f64 / HOUR_MS;
    let allocated = s.schedule.capacity_gpus * hours;
    let cost = s.evaluation.cost.clone().map(|c| c.in_window(window));
    WindowFigures {
        window,
        allocated_gpu_hours: allocated,
        utilisation: (allocated > 0.0).then(|| s.productive_gpu_hours / allocated),
        cost_per_productive_gpu_hour: cost
            .as_ref()
            .filter(|_| s.productive_gpu_hours > 0.0)
            .map(|c| c.allocated / s.productive_gpu_hours),
        cost,
    }
}

/// What the completion curves of a comparison are read against: the same for every scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct CurveFrame {
    /// The jobs the mean completion time and the curves compare: those that succeed in every
    /// scenario compared. A job only some complete is counted apart ([`Verdict`]).
    pub compared: Vec<bool>,
    /// The jobs that succeed in at least one scenario.
    pub completed_somewhere: Vec<bool>,
    /// Time 0 of the curves: the first submission.
    pub origin: Millis,
    /// The end of the submission window (the last submission). "By the last submission"
    /// counts the completions in [first submission, last submission), half-open as every
    /// window (and the horizon) is.
    pub submission_end: Millis,
}

impl CurveFrame {
    pub fn of(scenarios: &[Scenario<'_>]) -> Self {
        let w = common_window(scenarios);
        let n = scenarios
            .iter()
            .map(|s| s.schedule.completed_at.len())
            .max()
            .unwrap_or(0);
        let done = |s: &Scenario<'_>, i: usize| {
            s.schedule.completed_at.get(i).is_some_and(|t| t.is_some())
        };
        Self {
            compared: (0..n)
                .map(|i| !scenarios.is_empty() && scenarios.iter().all(|s| done(s, i)))
                .collect(),
            completed_somewhere: (0..n)
                .map(|i| scenarios.iter().any(|s| done(s, i)))
                .collect(),
            origin: w.start,
            submission_end: scenarios
                .iter()
                .map(|s| s.schedule.last_submission)
                .max()
                .unwrap_or(w.start),
        }
    }

    /// `(completion time, work GPU-h)` of the compared jobs in `s`.
    pub fn completions(&self, s: &Schedule) -> Vec<(Millis, f64)> {
        self.compared
            .iter()
            .enumerate()
            .filter(|&(_, &c)| c)
            .filter_map(|(i, _)| {
                let at = s.completed_at.get(i).copied().flatten()?;
                Some((at, s.work_gpu_hours.get(i).copied().unwrap_or(0.0)))
            })
            .collect()
    }
}

/// A scenario's completion figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CompletionFigures {
    /// Work GPU-hours of the compared jobs (those that succeed in every scenario).
    pub total_work_gpu_hours: f64,
    /// How many jobs are compared.
    #[serde(default)]
    pub compared_jobs: usize,
    /// Work-weighted mean completion time of the compared jobs, hours after the first
    /// submission.
    pub mean_completion_h: Option<f64>,
    /// Jobs another scenario completes that this one never does.
    pub never_completed: usize,
    /// C(t) just before the end of the submission window (every job this scenario completes
    /// in [first submission, last submission)), and the jobs completed by then.
    pub goodput_by_submission_end_gpu_hours: f64,
    pub completed_by_submission_end: usize,
}

/// [`CompletionFigures`] of `s` in `frame`.
pub fn completion_figures(s: &Schedule, frame: &CurveFrame) -> CompletionFigures {
    let mut f = CompletionFigures::default();
    let mut weighted = 0.0;
    for (i, at) in s.completed_at.iter().enumerate() {
        let w = s.work_gpu_hours.get(i).copied().unwrap_or(0.0);
        if at.is_none() && frame.completed_somewhere.get(i) == Some(&true) {
            f.never_completed += 1;
        }
        if let (Some(t), Some(true)) = (at, frame.compared.get(i)) {
            f.total_work_gpu_hours += w;
            f.compared_jobs += 1;
            weighted += w * (t - frame.origin) as f64 / HOUR_MS;
        }
        if at.is_some_and(|t| t < frame.submission_end) {
            f.goodput_by_submission_end_gpu_hours += w;
            f.completed_by_submission_end += 1;
        }
    }
    f.mean_completion_h = (f.total_work_gpu_hours > 0.0).then(|| weighted / f.total_work_gpu_hours);
    f
}

/// `(completion time, work GPU-h)` of every job `s` completes (its whole completion curve).
fn all_completions(s: &Schedule) -> impl Iterator<Item = (Millis, f64)> + '_ {
    s.completed_at
        .iter()
        .enumerate()
        .filter_map(|(i, at)| Some(((*at)?, s.work_gpu_hours.get(i).copied().unwrap_or(0.0))))
}

/// The largest amount by which `this`'s completion curve C(t) (the work of every job it has
/// completed by t) falls behind `base`'s at any time, in GPU-hours (0 when never behind).
/// Summed in whole GPU-milliseconds, so that equal curves differ by exactly 0 and the limit
/// needs no tolerance.
pub fn max_behind_gpu_hours(base: &Schedule, this: &Schedule, _frame: &CurveFrame) -> f64 {
    let units = |w: f64| (w * HOUR_MS).round() as i128;
    let mut steps: Vec<(Millis, i128)> =
        all_completions(base).map(|(t, w)| (t, units(w))).collect();
    steps.extend(all_completions(this).map(|(t, w)| (t, -units(w))));
    steps.sort_by_key(|&(t, _)| t);
    let (mut diff, mut worst) = (0i128, 0i128);
    for (k, &(t, d)) in steps.iter().enumerate() {
        diff += d;
        // The curves are compared once every completion at `t` is in.
        if steps.get(k + 1).is_none_or(|&(next, _)| next != t) {
            worst = worst.max(diff);
        }
    }
    worst as f64 / HOUR_MS
}

/// What a verdict says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictKind {
    Approve,
    Reject,
    /// The schedules differ, but by less than the materiality threshold, with no job completed
    /// by one scenario only and no clause failing.
    NoMaterialDifference,
    /// The schedules are identical (e.g. one share: nothing to lend).
    NoDifference,
}

impl VerdictKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Approve => "APPROVE",
            Self::Reject => "REJECT",
            Self::NoMaterialDifference => "NO MATERIAL DIFFERENCE",
            Self::NoDifference => "NO DIFFERENCE",
        }
    }
}

/// One clause of the rule: whether it holds (`None`: not judged), in words with its figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Clause {
    pub name: String,
    pub holds: Option<bool>,
    pub text: String,
}

/// Jobs one scenario completes and the other never does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct OnlyCompleted {
    pub jobs: usize,
    pub work_gpu_hours: f64,
    /// Whether the other scenario can never run every one of them (misconfigured there), not
    /// merely never completes them.
    pub never_run_by_other: bool,
}

/// A scenario against the baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub kind: VerdictKind,
    /// `kind == Approve`.
    pub approve: bool,
    pub base: CompletionFigures,
    pub this: CompletionFigures,
    /// Mean completion time of the jobs both complete, this − baseline, in hours (negative:
    /// sooner).
    pub mean_completion_change_h: Option<f64>,
    pub mean_completion_change_pct: Option<f64>,
    /// Whether the change of the mean completion time reaches the materiality threshold.
    #[serde(default)]
    pub material: bool,
    /// The largest amount this scenario's completion curve (every job it completes) falls
    /// behind the baseline's, as a percentage of the work some scenario completes.
    pub max_behind_pct: f64,
    pub important_p95_wait_delta_ms: Option<Millis>,
    pub important_missed_deadlines_delta: i64,
    /// `None` when no interruption budget is defined.
    pub budget_breaches_delta: Option<i64>,
    pub waste_gpu_hours_delta: f64,
    /// The cost of waste, this − baseline, in the prices' currency (`None` without prices).
    #[serde(default)]
    pub waste_cost_delta: Option<f64>,
    /// Jobs this scenario completes that the baseline never does, and the other way round.
    #[serde(default)]
    pub completed_only_here: OnlyCompleted,
    #[serde(default)]
    pub completed_only_by_baseline: OnlyCompleted,
    /// Work GPU-hours this scenario completes of jobs the baseline can never run, and how many.
    pub gain_from_never_run_by_baseline_gpu_hours: f64,
    pub never_run_by_baseline_completed: usize,
    pub clauses: Vec<Clause>,
    /// One line: what an APPROVE rests on and what it costs, every clause a REJECT fails, or
    /// why NO (MATERIAL) DIFFERENCE.
    pub summary: String,
}

fn pct_change(base: Option<f64>, this: Option<f64>) -> Option<f64> {
    match (base, this) {
        (Some(b), Some(t)) if b > 0.0 => Some(100.0 * (t - b) / b),
        _ => None,
    }
}

/// Clauses 2 and 3: the delivery of important work.
fn important_clauses(base: &Evaluation, this: &Evaluation, rule: &DecisionRule) -> [Clause; 2] {
    let (m0, m) = (
        base.important.deadlines.missed,
        this.important.deadlines.missed,
    );
    let delta = m as i64 - m0 as i64;
    let deadlines = Clause {
        name: "important deadlines".to_string(),
        holds: Some(delta <= rule.max_important_missed_deadlines_increase as i64),
        text: format!(
            "important missed deadlines {m0} → {m} ({delta:+}; at most +{} allowed)",
            rule.max_important_missed_deadlines_increase
        ),
    };
    let (w0, w) = (base.important.wait.p95_ms, this.important.wait.p95_ms);
    let slack = Millis::try_from(rule.important_p95_wait_slack_s.saturating_mul(1000))
        .unwrap_or(Millis::MAX);
    let limit = w0.map_or(slack as f64, |w0| {
        w0 as f64 * (1.0 + rule.max_important_p95_wait_increase_pct / 100.0) + slack as f64
    });
    let dur = crate::scorecard::format::duration;
    let wait = Clause {
        name: "important wait".to_string(),
        holds: Some(w.is_none_or(|w| w as f64 <= limit)),
        text: format!(
            "important P95 wait {} → {} (at most {} allowed: +{}% + {} s)",
            dur(w0),
            dur(w),
            dur(Some(limit as Millis)),
            rule.max_important_p95_wait_increase_pct,
            rule.important_p95_wait_slack_s
        ),
    };
    [deadlines, wait]
}

/// Clause 4: interruption budgets, judged only when some budget is defined.
fn budget_clause(base: &Evaluation, this: &Evaluation) -> Clause {
    if !(base.budgets_defined || this.budgets_defined) {
        return Clause {
            name: "interruption budgets".to_string(),
            holds: None,
            text: "interruption not judged: no budget defined".to_string(),
        };
    }
    let (b0, b) = (base.budget_breaches(), this.budget_breaches());
    Clause {
        name: "interruption budgets".to_string(),
        holds: Some(b <= b0),
        text: format!("interruption-budget breaches {b0} → {b} (no more than the baseline)"),
    }
}

/// Jobs `a` completes that `b` never does, in the jobs' order.
fn only_completed(a: &Schedule, b: &Schedule) -> OnlyCompleted {
    let mut out = OnlyCompleted {
        never_run_by_other: true,
        ..Default::default()
    };
    for (i, at) in a.completed_at.iter().enumerate() {
        if at.is_some() && b.completed_at.get(i).is_none_or(|t| t.is_none()) {
            out.jobs += 1;
            out.work_gpu_hours += a.work_gpu_hours.get(i).copied().unwrap_or(0.0);
            out.never_run_by_other &= b.never_run.contains(&i);
        }
    }
    out.never_run_by_other &= out.jobs > 0;
    out
}

/// Work GPU-hours of the jobs some scenario completes: what "% of the work" is read against.
fn completed_work(s: &Schedule, frame: &CurveFrame) -> f64 {
    frame
        .completed_somewhere
        .iter()
        .enumerate()
        .filter(|&(_, &c)| c)
        .map(|(i, _)| s.work_gpu_hours.get(i).copied().unwrap_or(0.0))
        .sum()
}

/// Work GPU-hours and count of the jobs `base` can never run that `this` completes.
fn gain_from_never_run(base: &Schedule, this: &Schedule) -> (f64, usize) {
    base.never_run
        .iter()
        .filter(|&&i| this.completed_at.get(i).is_some_and(|t| t.is_some()))
        .fold((0.0, 0), |(w, n), &i| {
            (
                w + this.work_gpu_hours.get(i).copied().unwrap_or(0.0),
                n + 1,
            )
        })
}

/// Judges `this` against `base` in `frame` by `rule` (four clauses, docs/verdict.md; NO
/// DIFFERENCE when the schedules are identical, NO MATERIAL DIFFERENCE when they differ by
/// less than the materiality threshold and nothing fails).
pub fn verdict(
    base: &Scenario<'_>,
    this: &Scenario<'_>,
    frame: &CurveFrame,
    rule: &DecisionRule,
) -> Verdict {
    let (b, t) = (
        completion_figures(base.schedule, frame),
        completion_figures(this.schedule, frame),
    );
    let behind = max_behind_gpu_hours(base.schedule, this.schedule, frame);
    let (gain, gained_jobs) = gain_from_never_run(base.schedule, this.schedule);
    let (e0, e) = (base.evaluation, this.evaluation);
    let change_h = b
        .mean_completion_h
        .zip(t.mean_completion_h)
        .map(|(b, t)| t - b);
    let mut v = Verdict {
        kind: VerdictKind::Reject,
        approve: false,
        mean_completion_change_h: change_h,
        mean_completion_change_pct: pct_change(b.mean_completion_h, t.mean_completion_h),
        material: change_h.is_some_and(|h| (h * 3600.0).abs() >= rule.min_material_change_s),
        max_behind_pct: {
            let work = completed_work(base.schedule, frame);
            if work > 0.0 {
                100.0 * behind / work
            } else {
                0.0
            }
        },
        important_p95_wait_delta_ms: e0
            .important
            .wait
            .p95_ms
            .zip(e.important.wait.p95_ms)
            .map(|(a, b)| b - a),
        important_missed_deadlines_delta: e.important.deadlines.missed as i64
            - e0.important.deadlines.missed as i64,
        budget_breaches_delta: (e0.budgets_defined || e.budgets_defined)
            .then(|| e.budget_breaches() as i64 - e0.budget_breaches() as i64),
        waste_gpu_hours_delta: this.waste_gpu_hours - base.waste_gpu_hours,
        waste_cost_delta: e0
            .cost
            .as_ref()
            .zip(e.cost.as_ref())
            .map(|(c0, c)| c.wasted - c0.wasted),
        completed_only_here: only_completed(this.schedule, base.schedule),
        completed_only_by_baseline: only_completed(base.schedule, this.schedule),
        gain_from_never_run_by_baseline_gpu_hours: gain,
        never_run_by_baseline_completed: gained_jobs,
        base: b,
        this: t,
        clauses: Vec::new(),
        summary: String::new(),
    };
    let [deadlines, wait] = important_clauses(e0, e, rule);
    let names = (base.name, this.name);
    v.clauses = vec![
        completion::clause(&v, rule, names),
        deadlines,
        wait,
        budget_clause(e0, e),
    ];
    let fails = v.clauses.iter().any(|c| c.holds == Some(false));
    v.kind = if base.schedule.fingerprint == this.schedule.fingerprint {
        VerdictKind::NoDifference
    } else if fails {
        VerdictKind::Reject
    } else if v.clauses.first().is_some_and(|c| c.holds.is_none()) {
        VerdictKind::NoMaterialDifference
    } else {
        VerdictKind::Approve
    };
    v.approve = v.kind == VerdictKind::Approve;
    v.summary = completion::summary(&v, base.name, this.evaluation);
    v
}

#[cfg(test)]
mod tests;
