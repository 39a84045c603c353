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
    /// The jobs compared: those that succeed in at least one scenario.
    pub compared: Vec<bool>,
    /// Time 0 of the curves: the first submission.
    pub origin: Millis,
    /// A compared job that never succeeds in a scenario counts as completing here: the common
    /// window's end.
    pub censor_at: Millis,
    /// The end of the submission window (the last submission).
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
        let compared = (0..n)
            .map(|i| {
                scenarios
                    .iter()
                    .any(|s| s.schedule.completed_at.get(i).is_some_and(|t| t.is_some()))
            })
            .collect();
        Self {
            compared,
            origin: w.start,
            censor_at: w.end,
            submission_end: scenarios
                .iter()
                .map(|s| s.schedule.last_submission)
                .max()
                .unwrap_or(w.start),
        }
    }

    /// `(completion time, work GPU-h)` of the compared jobs in `s`, censored ones at
    /// [`CurveFrame::censor_at`].
    pub fn completions(&self, s: &Schedule) -> Vec<(Millis, f64)> {
        self.compared
            .iter()
            .enumerate()
            .filter(|&(_, &c)| c)
            .map(|(i, _)| {
                let at = s.completed_at.get(i).copied().flatten();
                let w = s.work_gpu_hours.get(i).copied().unwrap_or(0.0);
                (at.unwrap_or(self.censor_at), w)
            })
            .collect()
    }
}

/// A scenario's completion figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CompletionFigures {
    /// Work GPU-hours of the compared jobs (those that succeed in some scenario).
    pub total_work_gpu_hours: f64,
    /// Work-weighted mean completion time, hours after the first submission.
    pub mean_completion_h: Option<f64>,
    /// Compared jobs that never succeed here (counted at the common window's end).
    pub never_completed: usize,
    /// C(t) at the end of the submission window, and the jobs completed by then.
    pub goodput_by_submission_end_gpu_hours: f64,
    pub completed_by_submission_end: usize,
}

/// [`CompletionFigures`] of `s` in `frame`.
pub fn completion_figures(s: &Schedule, frame: &CurveFrame) -> CompletionFigures {
    let mut f = CompletionFigures::default();
    let mut weighted = 0.0;
    for (i, _) in frame.compared.iter().enumerate().filter(|&(_, &c)| c) {
        let w = s.work_gpu_hours.get(i).copied().unwrap_or(0.0);
        let at = s.completed_at.get(i).copied().flatten();
        if at.is_none() {
            f.never_completed += 1;
        }
        let t = at.unwrap_or(frame.censor_at);
        f.total_work_gpu_hours += w;
        weighted += w * (t - frame.origin) as f64 / HOUR_MS;
        if at.is_some_and(|t| t <= frame.submission_end) {
            f.goodput_by_submission_end_gpu_hours += w;
            f.completed_by_submission_end += 1;
        }
    }
    f.mean_completion_h = (f.total_work_gpu_hours > 0.0).then(|| weighted / f.total_work_gpu_hours);
    f
}

/// The largest amount by which `this`'s completion curve falls behind `base`'s at any time,
/// in GPU-hours (0 when never behind).
pub fn max_behind_gpu_hours(base: &Schedule, this: &Schedule, frame: &CurveFrame) -> f64 {
    let mut steps: Vec<(Millis, f64)> = frame.completions(base);
    steps.extend(frame.completions(this).into_iter().map(|(t, w)| (t, -w)));
    steps.sort_by_key(|&(t, _)| t);
    let (mut diff, mut worst) = (0.0f64, 0.0f64);
    for (k, &(t, d)) in steps.iter().enumerate() {
        diff += d;
        // The curves are compared once every completion at `t` is in.
        if steps.get(k + 1).is_none_or(|&(next, _)| next != t) {
            worst = worst.max(diff);
        }
    }
    worst
}

/// What a verdict says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictKind {
    Approve,
    Reject,
    /// The schedules are identical (e.g. one share: nothing to lend).
    NoDifference,
}

impl VerdictKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Approve => "APPROVE",
            Self::Reject => "REJECT",
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

/// A scenario against the baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub kind: VerdictKind,
    /// `kind == Approve`.
    pub approve: bool,
    pub base: CompletionFigures,
    pub this: CompletionFigures,
    /// Mean completion time, this − baseline, in hours (negative: sooner).
    pub mean_completion_change_h: Option<f64>,
    pub mean_completion_change_pct: Option<f64>,
    /// The largest amount this scenario's completion curve falls behind the baseline's, as a
    /// percentage of the compared work.
    pub max_behind_pct: f64,
    pub important_p95_wait_delta_ms: Option<Millis>,
    pub important_missed_deadlines_delta: i64,
    /// `None` when no interruption budget is defined.
    pub budget_breaches_delta: Option<i64>,
    pub waste_gpu_hours_delta: f64,
    /// Work GPU-hours this scenario completes of jobs the baseline can never run, and how many.
    pub gain_from_never_run_by_baseline_gpu_hours: f64,
    pub never_run_by_baseline_completed: usize,
    pub clauses: Vec<Clause>,
    /// One line: what an APPROVE rests on, every clause a REJECT fails, or why NO DIFFERENCE.
    pub summary: String,
}

fn pct_change(base: Option<f64>, this: Option<f64>) -> Option<f64> {
    match (base, this) {
        (Some(b), Some(t)) if b > 0.0 => Some(100.0 * (t - b) / b),
        _ => None,
    }
}

fn hours(h: Option<f64>) -> String {
    h.map_or("-".to_string(), |h| format!("{h:.2} h"))
}

/// Clause 1: completed work sooner, and never too far behind.
fn completion_clause(v: &Verdict, rule: &DecisionRule) -> Clause {
    let sooner = v
        .mean_completion_change_pct
        .is_some_and(|p| p < -rule.min_completion_gain_pct);
    let close = v.max_behind_pct <= rule.max_behind_pct + 1e-9;
    let change = v
        .mean_completion_change_pct
        .map_or("no work completed".to_string(), |p| format!("{p:+.1}%"));
    let text = format!(
        "{}: mean completion time {} → {} ({change}; must fall by more than {}%), at most {:.1}% of the work behind the baseline at any time (limit {}%)",
        match (sooner, close) {
            (true, true) => "completed work sooner",
            (false, _) => "completed work no sooner",
            (true, false) => "completed work sooner on average but too far behind at times",
        },
        hours(v.base.mean_completion_h),
        hours(v.this.mean_completion_h),
        rule.min_completion_gain_pct,
        v.max_behind_pct,
        rule.max_behind_pct,
    );
    Clause {
        name: "completed work".to_string(),
        holds: Some(sooner && close),
        text,
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

/// Judges `this` against `base` in `frame` by `rule` (METRICS-style four clauses; NO
/// DIFFERENCE when the schedules are identical).
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
    let mut v = Verdict {
        kind: VerdictKind::Reject,
        approve: false,
        mean_completion_change_h: b
            .mean_completion_h
            .zip(t.mean_completion_h)
            .map(|(b, t)| t - b),
        mean_completion_change_pct: pct_change(b.mean_completion_h, t.mean_completion_h),
        max_behind_pct: if b.total_work_gpu_hours > 0.0 {
            100.0 * behind / b.total_work_gpu_hours
        } else {
            0.0
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
        gain_from_never_run_by_baseline_gpu_hours: gain,
        never_run_by_baseline_completed: gained_jobs,
        base: b,
        this: t,
        clauses: Vec::new(),
        summary: String::new(),
    };
    let [deadlines, wait] = important_clauses(e0, e, rule);
    v.clauses = vec![
        completion_clause(&v, rule),
        deadlines,
        wait,
        budget_clause(e0, e),
    ];
    v.kind = if base.schedule.fingerprint == this.schedule.fingerprint {
        VerdictKind::NoDifference
    } else if v.clauses.iter().all(|c| c.holds != Some(false)) {
        VerdictKind::Approve
    } else {
        VerdictKind::Reject
    };
    v.approve = v.kind == VerdictKind::Approve;
    v.summary = summary(&v, base.name);
    v
}

/// The verdict's one line.
fn summary(v: &Verdict, base: &str) -> String {
    let texts = |keep: &dyn Fn(&Clause) -> bool| {
        v.clauses
            .iter()
            .filter(|c| keep(c))
            .map(|c| c.text.clone())
            .collect::<Vec<_>>()
            .join("; ")
    };
    match v.kind {
        VerdictKind::NoDifference => format!(
            "every job runs exactly as under {base} (nothing to lend or borrow, or no job that could use it); {}",
            texts(&|c| c.holds.is_none())
        ),
        VerdictKind::Reject => format!(
            "fails: {} (waste {:+.1} GPU-h)",
            texts(&|c| c.holds == Some(false)),
            v.waste_gpu_hours_delta
        ),
        VerdictKind::Approve => {
            let mut s = format!("rests on: {}", texts(&|_| true));
            if v.never_run_by_baseline_completed > 0 {
                s.push_str(&format!(
                    "; {:.1} GPU-h of the gain comes from {} job(s) the baseline can never run",
                    v.gain_from_never_run_by_baseline_gpu_hours, v.never_run_by_baseline_completed
                ));
            }
            s
        }
    }
}

#[cfg(test)]
mod tests;
