//! The sweep (`quotatop sweep`): for each workload class, the trace replayed under every
//! combination of one checkpoint interval and one retry limit given to the class's jobs, the rest
//! of the configuration held fixed, and a recommendation by a stated rule.
//!
//! A sweep point is a replay ([`replay_lean`]) with the class's [`ClassWorkload`]; its figures
//! are the sums over the class of the per-job rows the replay's own `--jobs-out` writes (one
//! ledger, [`super::JobRow`]). What the engine does not model, the time and storage of writing a
//! checkpoint, is a stated [`CheckpointModel`] over the checkpoints each job wrote.
//!
//! This file holds the figures and the run; the rule is in `rule`, the reports in `report`,
//! the chart in `svg`.

mod report;
mod restores;
mod rule;
mod svg;

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::Serialize;

use super::{
    ClassMembers, ClassWorkload, Comparison, JobRow, ReplayConfig, ReplayError, TraceJob,
    replay_lean,
};
pub use report::{json, markdown};
pub use restores::{MeasuredRestore, RestartBasis, held_restart_s, measured_restores};
pub use rule::{Recommendation, recommend};
pub use svg::{ChartPoint, chart_points, svg};

/// One combination a class's jobs are given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Setting {
    /// `None`: no checkpoint (a preempted job restarts from zero).
    pub checkpoint_interval_ms: Option<u64>,
    /// `None`: unlimited (requeued forever).
    pub retry_limit: Option<u32>,
}

impl Setting {
    /// The interval as given on the command line (`30m`, `1h`, `none`).
    pub fn interval_label(&self) -> String {
        self.checkpoint_interval_ms
            .map_or("none".to_string(), short_duration)
    }

    /// The retry limit as given (`0`, `3`, `unlimited`).
    pub fn limit_label(&self) -> String {
        self.retry_limit
            .map_or("unlimited".to_string(), |n| n.to_string())
    }
}

/// `90s`, `5m`, `1h30m`, `2h`: whole units, as the flags take them.
fn short_duration(ms: u64) -> String {
    let s = ms / 1000;
    let (h, m, sec) = (s / 3600, s % 3600 / 60, s % 60);
    let mut out = String::new();
    if h > 0 {
        out.push_str(&format!("{h}h"));
    }
    if m > 0 {
        out.push_str(&format!("{m}m"));
    }
    if sec > 0 || out.is_empty() {
        out.push_str(&format!("{sec}s"));
    }
    out
}

/// A workload class the sweep gives settings to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepClass {
    pub name: String,
    pub members: ClassMembers,
    /// The rules' class whose interruption budget judges it (a policy class), if any.
    pub budget_class: Option<String>,
}

/// What the engine does not model: writing a checkpoint takes `write_s` seconds of the job's
/// capacity and stores `gb_per_gpu` GB per GPU of the job; every checkpoint written is kept a
/// month (S3 bills per GB-month, `[prices] s3_gb_month`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckpointModel {
    pub write_s: f64,
    pub gb_per_gpu: f64,
    pub s3_gb_month: Option<f64>,
    pub currency: Option<String>,
}

/// One class's figures under one setting: sums over the class's per-job rows.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ClassFigures {
    pub jobs: usize,
    pub completed: usize,
    /// Ended FAILED: the retry limit reached.
    pub failed_at_limit: usize,
    pub productive_gpu_hours: f64,
    /// Lost to preemption: progress after the last checkpoint.
    pub lost_gpu_hours: f64,
    /// Restart overhead of re-runs (the ledger's overhead).
    pub restart_overhead_gpu_hours: f64,
    pub held_gpu_hours: f64,
    pub checkpoints_written: u64,
    /// Checkpoints written × write time × the job's GPUs (the model).
    pub checkpoint_overhead_gpu_hours: f64,
    /// Checkpoints written × GB per GPU × the job's GPUs (the model).
    pub checkpoint_storage_gb: f64,
    /// A month of that storage at `s3_gb_month`; `None` without a price.
    pub checkpoint_storage_cost: Option<f64>,
    /// The mean time from submission to success of its completed jobs, in hours.
    pub mean_completion_h: Option<f64>,
    /// Its last job's end, hours after the trace's start.
    pub last_end_h: Option<f64>,
    pub missed_deadlines: usize,
    pub with_deadline: usize,
    /// Breaches of the class's interruption budget; `None`: no budget to judge by.
    pub budget_breaches: Option<usize>,
}

impl ClassFigures {
    /// Waste: lost + restart overhead + checkpoint overhead.
    pub fn waste_gpu_hours(&self) -> f64 {
        self.lost_gpu_hours + self.restart_overhead_gpu_hours + self.checkpoint_overhead_gpu_hours
    }

    /// The rule's cost: GPU-hours held that did not become finished work, plus the checkpoint
    /// overhead (held − productive + checkpoint overhead).
    pub fn cost_gpu_hours(&self) -> f64 {
        (self.held_gpu_hours - self.productive_gpu_hours).max(0.0)
            + self.checkpoint_overhead_gpu_hours
    }
}

/// The figures of the jobs of `class` among `rows` (one replay's, in submission order), with
/// the budget breaches its policy class has in `budgets`.
pub fn class_figures(
    rows: &[JobRow],
    class: &SweepClass,
    budgets: Option<&[quotatop_analysis::scorecard::decision::BudgetBreaches]>,
    model: &CheckpointModel,
) -> ClassFigures {
    let mut f = ClassFigures::default();
    let mut completion_s = 0.0;
    for r in rows
        .iter()
        .filter(|r| class.members.holds_submitted(&r.share, r.priority))
    {
        f.jobs += 1;
        match r.outcome {
            "succeeded" => {
                f.completed += 1;
                if let Some(end) = r.ended_s {
                    completion_s += end - r.submit_s;
                }
            }
            "failed" => f.failed_at_limit += 1,
            _ => {}
        }
        if let Some(end) = r.ended_s {
            f.last_end_h = Some(f.last_end_h.unwrap_or(0.0).max(end / 3600.0));
        }
        f.productive_gpu_hours += r.productive_gpu_hours;
        f.lost_gpu_hours += r.lost_gpu_hours;
        f.restart_overhead_gpu_hours += r.overhead_gpu_hours;
        f.held_gpu_hours += r.held_gpu_hours;
        f.checkpoints_written += r.checkpoints_written;
        let n = r.checkpoints_written as f64 * f64::from(r.gpus);
        f.checkpoint_overhead_gpu_hours += n * model.write_s / 3600.0;
        f.checkpoint_storage_gb += n * model.gb_per_gpu;
        if let Some(met) = r.deadline_met {
            f.with_deadline += 1;
            f.missed_deadlines += usize::from(!met);
        }
    }
    f.checkpoint_storage_cost = model.s3_gb_month.map(|p| f.checkpoint_storage_gb * p);
    f.mean_completion_h = (f.completed > 0).then(|| completion_s / 3600.0 / f.completed as f64);
    f.budget_breaches = class.budget_class.as_ref().and_then(|name| {
        let b = budgets?.iter().find(|b| b.by_class && b.share == *name)?;
        Some(b.jobs_over_preemptions + b.days_over_lost)
    });
    f
}

/// One class's sweep: its figures as configured (the reference), under each setting, and the
/// recommendation.
#[derive(Debug, Clone, PartialEq)]
pub struct ClassSweep {
    pub class: SweepClass,
    /// The class as the trace and configuration give it (no override).
    pub reference: ClassFigures,
    /// In the order of the settings.
    pub points: Vec<(Setting, ClassFigures)>,
    pub recommendation: Recommendation,
}

/// What a sweep runs: the trace, the configuration held fixed, how it is read.
pub struct Plan<'a> {
    pub trace: &'a [TraceJob],
    pub base: &'a ReplayConfig,
    pub cmp: &'a Comparison,
    pub classes: &'a [SweepClass],
    pub settings: &'a [Setting],
    pub model: &'a CheckpointModel,
}

impl Plan<'_> {
    /// Replays: one reference, then one per class and setting.
    pub fn runs(&self) -> usize {
        1 + self.classes.len() * self.settings.len()
    }

    /// Run `i`: `None` the reference, else (class, setting).
    fn run_of(&self, i: usize) -> Option<(usize, usize)> {
        let n = self.settings.len().max(1);
        (i > 0).then(|| ((i - 1) / n, (i - 1) % n))
    }

    /// Run `i`'s figures: every class's for the reference, else its class's alone.
    fn run(&self, i: usize, cmp: &Comparison) -> Result<Vec<ClassFigures>, ReplayError> {
        let mut cfg = self.base.clone();
        let mut classes: Vec<&SweepClass> = self.classes.iter().collect();
        if let Some((k, s)) = self.run_of(i) {
            let setting = self.settings[s];
            classes = vec![&self.classes[k]];
            cfg.workload.by_class = vec![ClassWorkload {
                members: self.classes[k].members.clone(),
                checkpoint_interval_ms: setting.checkpoint_interval_ms,
                preemption_retries: setting.retry_limit,
            }];
        }
        let (out, _) = replay_lean(self.trace, &cfg, cmp, &mut |_, _| {})?;
        let budgets = Some(out.evaluation.budgets.as_slice());
        Ok(classes
            .into_iter()
            .map(|c| class_figures(&out.jobs_rows, c, budgets, self.model))
            .collect())
    }
}

/// One run's figures, or why it failed.
type RunResult = Result<Vec<ClassFigures>, ReplayError>;

/// Runs the plan's replays on `threads` workers (at least 1; a bounded pool over
/// `std::thread::scope`), calling `progress(done, total)` as each ends. The result does not
/// depend on `threads`: every run is independent and placed by its index.
pub fn sweep(
    plan: &Plan<'_>,
    threads: usize,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Vec<ClassSweep>, ReplayError> {
    let cmp = Comparison {
        per_job: true,
        ..plan.cmp.clone()
    };
    let total = plan.runs();
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<RunResult>>> = Mutex::new((0..total).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..threads.clamp(1, total) {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= total {
                        break;
                    }
                    let r = plan.run(i, &cmp);
                    let failed = r.is_err();
                    if let Ok(mut all) = results.lock() {
                        all[i] = Some(r);
                    }
                    progress(done.fetch_add(1, Ordering::Relaxed) + 1, total);
                    if failed {
                        // The others stop at their next run: the sweep fails as a whole.
                        next.store(total, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    let results = results.into_inner().unwrap_or_default();
    let mut figures: Vec<Vec<ClassFigures>> = Vec::with_capacity(total);
    for r in results {
        match r {
            Some(r) => figures.push(r?),
            // Left when another run failed: that run's error is reported above this one.
            None => figures.push(Vec::new()),
        }
    }
    let mut figures = figures.into_iter();
    let reference = figures.next().unwrap_or_default();
    Ok(plan
        .classes
        .iter()
        .enumerate()
        .map(|(k, class)| {
            let points: Vec<(Setting, ClassFigures)> = plan
                .settings
                .iter()
                .zip(figures.by_ref())
                .map(|(s, mut f)| (*s, f.pop().unwrap_or_default()))
                .collect();
            let reference = reference.get(k).cloned().unwrap_or_default();
            ClassSweep {
                recommendation: recommend(&reference, &points),
                class: class.clone(),
                reference,
                points,
            }
        })
        .collect())
}

#[cfg(test)]
mod tests;
