//! The five-metric scorecard (docs/architecture.md): completed-work utilisation, priority wait time,
//! preemption waste, fairness drift and recovery reliability, per queue, per quota share and per
//! priority band, each with its method stated.
//!
//! One pure function, [`scorecard`], over a normalized [`ScorecardInput`]; it does not care
//! whether the histories come from the journal (observed), the engine (ground truth) or a
//! what-if replay. [`share_series`] cuts the same figures into time buckets for sparklines.

mod audit_view;
mod bands;
mod columns;
pub mod decision;
mod fairness;
pub mod format;
pub mod from_engine;
mod input;
pub mod ledger;
pub mod measured;
mod metrics;
mod storage;

pub use audit_view::{
    AuditView, OperatorChanges, PriorityChange, RaisedJob, audit_view, join_changes,
};
pub use bands::PriorityBand;
pub use columns::{COLUMNS, Column, FIVE_METRICS_DROP, Unit};
pub use fairness::{FairnessRow, fairness};
pub use input::{
    AttemptEnd, AttemptHistory, Entitlement, JobHistory, Outcome, ScorecardInput, ScorecardOptions,
    Window,
};
pub use ledger::{JobLedger, Ledger, checkpoint_ms, job_ledger, restart_cost_ms};
pub use measured::{
    AttemptMeasure, CheckpointMark, LostBasis, RestoreEvidence, RestoreStats, RestoreTime,
    RestoreVerdict, TrainingRecord, checkpoint_number, measure_attempt, measured_restore_ms,
    restore_time, restore_verdict,
};
pub use metrics::{
    METHOD_FAIRNESS, METHOD_RECOVERY, METHOD_UTILISATION, METHOD_WAIT, METHOD_WASTE, Recovery,
    Utilisation, WaitStats, Waste, gpu_hours, percentile,
};
pub use storage::{
    CheckpointStorage, GB, JobStorage, METHOD_STORAGE, S3_PRICE_KEY, StoredObjects,
    checkpoint_storage, jobs_storage, s3_price,
};

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use quotatop_model::{CapacityLimit, Millis};

/// Which jobs a row covers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "name")]
pub enum Scope {
    Queue(String),
    Share(String),
    Band(PriorityBand),
}

impl Scope {
    pub fn label(&self) -> String {
        match self {
            Scope::Queue(q) => format!("queue {q}"),
            Scope::Share(s) => format!("share {s}"),
            Scope::Band(b) => format!("band {} ({})", b.as_str(), b.range()),
        }
    }
}

/// Four of the five metrics for one scope (fairness is per share, in [`Scorecard::fairness`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub scope: Scope,
    pub jobs: usize,
    /// Every GPU-hour the scope's attempts held in the window, by category (docs/architecture.md, "The GPU-time ledger").
    pub ledger: Ledger,
    pub utilisation: Utilisation,
    pub wait: WaitStats,
    pub waste: Waste,
    pub recovery: Recovery,
}

/// The methods and knobs behind the figures, printed with them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Methods {
    pub utilisation: String,
    pub wait: String,
    pub waste: String,
    pub fairness: String,
    pub recovery: String,
    pub bands: String,
    pub restart_cost_ms: u64,
    pub recovery_window_ms: Millis,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scorecard {
    pub queue: String,
    pub window: Window,
    pub queue_row: Row,
    pub shares: Vec<Row>,
    pub bands: Vec<Row>,
    pub fairness: Vec<FairnessRow>,
    pub methods: Methods,
    /// Caveats about the data (unknown GPU counts, …).
    pub notes: Vec<String>,
}

/// What had finished by a horizon: the jobs that SUCCEEDED before its end and their productive
/// GPU-hours (goodput, docs/architecture.md).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Goodput {
    pub completed_jobs: usize,
    pub productive_gpu_hours: f64,
}

/// Goodput of `jobs` by the end of `horizon`.
pub fn goodput_of(jobs: &[&JobHistory], horizon: Window, opts: &ScorecardOptions) -> Goodput {
    Goodput {
        completed_jobs: jobs
            .iter()
            .filter(|j| matches!(j.outcome, Outcome::Succeeded(t) if t < horizon.end))
            .count(),
        productive_gpu_hours: ledger::ledger(jobs, horizon, opts).productive_gpu_hours,
    }
}

/// Allocated GPU-hours of capacity limits over a window.
pub fn allocated_gpu_hours(
    limits: &[CapacityLimit],
    window: Window,
    opts: &ScorecardOptions,
) -> f64 {
    limits
        .iter()
        .map(|l| {
            gpu_hours(
                window.len_ms(),
                l.max_capacity,
                opts.gpus.gpus(&l.instance_type).unwrap_or(0),
            )
        })
        .sum()
}

fn row(
    scope: Scope,
    jobs: &[&JobHistory],
    window: Window,
    opts: &ScorecardOptions,
    allocated: f64,
) -> Row {
    let ledger = ledger::ledger(jobs, window, opts);
    Row {
        scope,
        jobs: jobs.len(),
        ledger,
        utilisation: metrics::utilisation(&ledger, allocated),
        wait: metrics::waits(jobs, window),
        waste: metrics::waste(jobs, window, opts, &ledger),
        recovery: metrics::recovery(jobs, window, opts),
    }
}

/// Share names: entitlements first (their order), then any other share jobs ran in.
fn share_names(input: &ScorecardInput) -> Vec<String> {
    let mut names: Vec<String> = input.entitlements.iter().map(|e| e.share.clone()).collect();
    let extra: BTreeSet<&str> = input
        .jobs
        .iter()
        .map(|j| j.share.as_str())
        .filter(|s| !names.iter().any(|n| n == s))
        .collect();
    names.extend(extra.into_iter().map(str::to_string));
    names
}

/// The scorecard of `input` over its window.
pub fn scorecard(input: &ScorecardInput, opts: &ScorecardOptions) -> Scorecard {
    scorecard_in(input, input.window, opts)
}

/// The scorecard of `input` over another window (e.g. one bucket of a series).
pub fn scorecard_in(input: &ScorecardInput, window: Window, opts: &ScorecardOptions) -> Scorecard {
    let all: Vec<&JobHistory> = input.jobs.iter().collect();
    let queue_alloc = allocated_gpu_hours(&input.capacity, window, opts);
    let queue_row = row(
        Scope::Queue(input.queue.clone()),
        &all,
        window,
        opts,
        queue_alloc,
    );
    let shares: Vec<Row> = share_names(input)
        .into_iter()
        .map(|name| {
            let jobs: Vec<&JobHistory> = all.iter().copied().filter(|j| j.share == name).collect();
            let limits = input
                .entitlements
                .iter()
                .find(|e| e.share == name)
                .map(|e| e.limits.as_slice())
                .unwrap_or(&[]);
            let alloc = allocated_gpu_hours(limits, window, opts);
            row(Scope::Share(name), &jobs, window, opts, alloc)
        })
        .collect();
    let bands: Vec<Row> = PriorityBand::ALL
        .into_iter()
        .filter_map(|b| {
            let jobs: Vec<&JobHistory> = all
                .iter()
                .copied()
                .filter(|j| PriorityBand::of(j.priority) == b)
                .collect();
            (!jobs.is_empty()).then(|| row(Scope::Band(b), &jobs, window, opts, queue_alloc))
        })
        .collect();
    let fairness = fairness::fairness(input, window, opts, &queue_row.wait);
    Scorecard {
        queue: input.queue.clone(),
        window,
        queue_row,
        shares,
        bands,
        fairness,
        methods: methods(opts),
        notes: notes(input, opts),
    }
}

fn methods(opts: &ScorecardOptions) -> Methods {
    Methods {
        utilisation: METHOD_UTILISATION.to_string(),
        wait: METHOD_WAIT.to_string(),
        waste: METHOD_WASTE.to_string(),
        fairness: METHOD_FAIRNESS.to_string(),
        recovery: METHOD_RECOVERY.to_string(),
        bands: PriorityBand::ALL
            .iter()
            .map(|b| format!("{} {}", b.as_str(), b.range()))
            .collect::<Vec<_>>()
            .join(", "),
        restart_cost_ms: opts.restart_cost_ms,
        recovery_window_ms: opts.recovery_window_ms,
    }
}

/// Instance types of the input's jobs and capacity whose GPU count is unknown (counted as 0).
pub fn unknown_gpu_types(input: &ScorecardInput, opts: &ScorecardOptions) -> Vec<String> {
    let types: BTreeSet<&str> = input
        .jobs
        .iter()
        .map(|j| j.instance_type.as_str())
        .chain(input.capacity.iter().map(|c| c.instance_type.as_str()))
        .filter(|t| opts.gpus.gpus(t).is_none())
        .collect();
    types.into_iter().map(str::to_string).collect()
}

fn notes(input: &ScorecardInput, opts: &ScorecardOptions) -> Vec<String> {
    unknown_gpu_types(input, opts)
        .into_iter()
        .map(|t| format!("GPUs per instance unknown for {t}: counted as 0; set an override"))
        .collect()
}

/// One bucket of a share's series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeriesPoint {
    pub window: Window,
    pub held_gpu_hours: f64,
    pub productive_gpu_hours: f64,
    pub wait_p50_ms: Option<Millis>,
    pub waste_gpu_hours: f64,
    pub interrupted_attempts: usize,
}

/// Per-share figures over consecutive buckets of `bucket_ms` covering the input's window (the
/// last bucket may be shorter), for sparklines. Shares in [`scorecard`]'s order.
pub fn share_series(
    input: &ScorecardInput,
    opts: &ScorecardOptions,
    bucket_ms: Millis,
) -> Vec<(String, Vec<SeriesPoint>)> {
    let names = share_names(input);
    let mut out: Vec<(String, Vec<SeriesPoint>)> =
        names.iter().map(|n| (n.clone(), Vec::new())).collect();
    let bucket = bucket_ms.max(1);
    let mut start = input.window.start;
    while start < input.window.end {
        let w = Window::new(start, (start.saturating_add(bucket)).min(input.window.end));
        let card = scorecard_in(input, w, opts);
        for (name, points) in &mut out {
            let share = card
                .shares
                .iter()
                .find(|r| r.scope == Scope::Share(name.clone()));
            let held = card
                .fairness
                .iter()
                .find(|f| &f.share == name)
                .map_or(0.0, |f| f.used_gpu_hours);
            points.push(SeriesPoint {
                window: w,
                held_gpu_hours: held,
                productive_gpu_hours: share.map_or(0.0, |r| r.utilisation.productive_gpu_hours),
                wait_p50_ms: share.and_then(|r| r.wait.p50_ms),
                waste_gpu_hours: share.map_or(0.0, |r| r.waste.total_gpu_hours),
                interrupted_attempts: share.map_or(0, |r| r.waste.interrupted_attempts),
            });
        }
        start = w.end;
    }
    out
}

#[cfg(test)]
mod ledger_edges_tests;
#[cfg(test)]
mod tests;
