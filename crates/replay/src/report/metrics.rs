//! The figures table: one metric per row across the configurations, the whole run's scorecard
//! last. Its rows are a table too ([`METRICS`]), as the scorecard's figures are ([`COLUMNS`]).

use quotatop_analysis::scorecard::COLUMNS;
use quotatop_analysis::scorecard::decision::{CompletionFigures, WindowFigures};
use quotatop_analysis::scorecard::format::{duration as dur, percent as pct};

use super::super::ReplayOutcome;
use super::Judged;
use super::cells::{budget_cell, money};

/// One metric across the configurations.
pub(super) struct Metric {
    pub(super) name: String,
    pub(super) values: Vec<String>,
}

/// Which of a configuration's figures a row reads, and how it writes its cell.
#[derive(Clone, Copy)]
enum Figure {
    /// The configuration's outcome.
    Outcome(fn(&ReplayOutcome) -> String),
    /// Its figures over the common window.
    Window(fn(&WindowFigures) -> String),
    /// Its completion figures.
    Completion(fn(&CompletionFigures) -> String),
}

/// One row of the figures table.
#[derive(Clone, Copy)]
struct MetricRow {
    /// Its name: the Markdown table's first column and the CSV's `metric` (the same words).
    name: &'static str,
    /// A cost line: with no prices, cost lines are absent, not zero.
    cost: bool,
    /// Its cell of each configuration.
    of: Figure,
}

impl MetricRow {
    /// Its cells, one per configuration.
    fn values(&self, outcomes: &[ReplayOutcome], judged: &Judged) -> Vec<String> {
        match self.of {
            Figure::Outcome(f) => outcomes.iter().map(f).collect(),
            Figure::Window(f) => judged.figures.iter().map(f).collect(),
            Figure::Completion(f) => judged.completion.iter().map(f).collect(),
        }
    }
}

const fn outcome(name: &'static str, f: fn(&ReplayOutcome) -> String) -> MetricRow {
    MetricRow {
        name,
        cost: false,
        of: Figure::Outcome(f),
    }
}

const fn window(name: &'static str, f: fn(&WindowFigures) -> String) -> MetricRow {
    MetricRow {
        name,
        cost: false,
        of: Figure::Window(f),
    }
}

const fn completion(name: &'static str, f: fn(&CompletionFigures) -> String) -> MetricRow {
    MetricRow {
        name,
        cost: false,
        of: Figure::Completion(f),
    }
}

/// A cost line, over the common window.
const fn cost(name: &'static str, f: fn(&WindowFigures) -> String) -> MetricRow {
    MetricRow {
        name,
        cost: true,
        of: Figure::Window(f),
    }
}

/// Every row of the figures table, in the order the report lists them; the whole run's
/// scorecard ([`scorecard_metrics`]) follows them.
const METRICS: &[MetricRow] = &[
    outcome("jobs", |o| o.jobs.to_string()),
    outcome("completed", |o| o.completed.to_string()),
    outcome("failed (retries exhausted)", |o| o.failed.to_string()),
    outcome("unfinished (misconfigured)", |o| o.unfinished.to_string()),
    outcome("makespan (h)", |o| {
        format!("{:.1}", o.makespan_ms as f64 / 3_600_000.0)
    }),
    outcome("preemptions", |o| o.preemptions.to_string()),
    completion(
        "mean completion time (h after the first submission, work-weighted)",
        |c| {
            c.mean_completion_h
                .map_or("-".to_string(), |h| format!("{h:.2}"))
        },
    ),
    completion("goodput by the last submission (GPU-h)", |c| {
        format!("{:.1}", c.goodput_by_submission_end_gpu_hours)
    }),
    completion("completed by the last submission", |c| {
        c.completed_by_submission_end.to_string()
    }),
    outcome("completed by the horizon", |o| {
        o.evaluation.all.goodput.completed_jobs.to_string()
    }),
    outcome("productive GPU-h by the horizon (goodput)", |o| {
        format!("{:.1}", o.evaluation.all.goodput.productive_gpu_hours)
    }),
    outcome("lost work: measured or modelled", |o| {
        o.ledger.lost_basis_text()
    }),
    outcome("important jobs", |o| {
        o.evaluation.important.jobs.to_string()
    }),
    outcome("important: completed by the horizon", |o| {
        o.evaluation.important.goodput.completed_jobs.to_string()
    }),
    outcome("important: wait mean / P50 / P95", |o| {
        let w = &o.evaluation.important.wait;
        format!("{} / {} / {}", dur(w.mean_ms), dur(w.p50_ms), dur(w.p95_ms))
    }),
    outcome("important: still waiting at the end", |o| {
        o.evaluation.important.wait.still_waiting.to_string()
    }),
    outcome("missed deadlines (all)", |o| {
        let d = &o.evaluation.all.deadlines;
        format!("{}/{}", d.missed, d.with_deadline)
    }),
    outcome("missed deadlines (important)", |o| {
        let d = &o.evaluation.important.deadlines;
        format!("{}/{}", d.missed, d.with_deadline)
    }),
    outcome("interruption-budget breaches", |o| {
        budget_cell(&o.evaluation)
    }),
    window("allocated GPU-h (common window)", |w| {
        format!("{:.1}", w.allocated_gpu_hours)
    }),
    window("completed-work utilisation (common window)", |w| {
        pct(w.utilisation)
    }),
    cost("cost allocated (common window)", |w| {
        money(w.cost.as_ref(), |c| c.allocated)
    }),
    cost("cost per productive GPU-h", |w| {
        w.cost
            .as_ref()
            .zip(w.cost_per_productive_gpu_hour)
            .map_or("-".to_string(), |(c, p)| {
                format!("{p:.2} {}", c.currency).trim().to_string()
            })
    }),
    cost("cost of productive work", |w| {
        money(w.cost.as_ref(), |c| c.productive)
    }),
    cost("cost of waste (lost + overhead)", |w| {
        money(w.cost.as_ref(), |c| c.wasted)
    }),
    outcome("replay time (s)", |o| {
        format!("{:.2}", o.elapsed.as_secs_f64())
    }),
];

/// The rows of [`METRICS`] (without the cost lines when no configuration is priced), then the
/// scorecard's.
pub(super) fn metrics(outcomes: &[ReplayOutcome], judged: &Judged) -> Vec<Metric> {
    // With no prices, cost lines are absent, not zero.
    let priced = judged.figures.iter().any(|f| f.cost.is_some());
    METRICS
        .iter()
        .filter(|m| priced || !m.cost)
        .map(|m| Metric {
            name: m.name.to_string(),
            values: m.values(outcomes, judged),
        })
        .chain(scorecard_metrics(outcomes))
        .collect()
}

/// The whole run's scorecard, queue row: every figure of the scorecard's column list.
fn scorecard_metrics(outcomes: &[ReplayOutcome]) -> impl Iterator<Item = Metric> + '_ {
    COLUMNS.iter().map(|c| Metric {
        name: format!("scorecard: {}", c.header),
        values: outcomes
            .iter()
            .map(|o| c.text(&o.scorecard, &o.scorecard.queue_row))
            .collect(),
    })
}
