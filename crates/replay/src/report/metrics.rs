//! The figures table: one metric per row across the configurations, the whole run's scorecard
//! last.

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

#[expect(
    clippy::too_many_lines,
    reason = "one row per metric in the order the report lists them: a table, read whole"
)]
pub(super) fn metrics(outcomes: &[ReplayOutcome], judged: &Judged) -> Vec<Metric> {
    let col = |f: &dyn Fn(&ReplayOutcome) -> String| outcomes.iter().map(f).collect::<Vec<_>>();
    // Figures over the common window, and the completion figures.
    let win = |f: &dyn Fn(&WindowFigures) -> String| judged.figures.iter().map(f).collect();
    let done = |f: &dyn Fn(&CompletionFigures) -> String| judged.completion.iter().map(f).collect();
    // With no prices, cost lines are absent, not zero.
    let priced = judged.figures.iter().any(|f| f.cost.is_some());
    let all = vec![
        Metric {
            name: "jobs".to_string(),
            values: col(&|o| o.jobs.to_string()),
        },
        Metric {
            name: "completed".to_string(),
            values: col(&|o| o.completed.to_string()),
        },
        Metric {
            name: "failed (retries exhausted)".to_string(),
            values: col(&|o| o.failed.to_string()),
        },
        Metric {
            name: "unfinished (misconfigured)".to_string(),
            values: col(&|o| o.unfinished.to_string()),
        },
        Metric {
            name: "makespan (h)".to_string(),
            values: col(&|o| format!("{:.1}", o.makespan_ms as f64 / 3_600_000.0)),
        },
        Metric {
            name: "preemptions".to_string(),
            values: col(&|o| o.preemptions.to_string()),
        },
        Metric {
            name: "mean completion time (h after the first submission, work-weighted)".to_string(),
            values: done(&|c| {
                c.mean_completion_h
                    .map_or("-".to_string(), |h| format!("{h:.2}"))
            }),
        },
        Metric {
            name: "goodput by the last submission (GPU-h)".to_string(),
            values: done(&|c| format!("{:.1}", c.goodput_by_submission_end_gpu_hours)),
        },
        Metric {
            name: "completed by the last submission".to_string(),
            values: done(&|c| c.completed_by_submission_end.to_string()),
        },
        Metric {
            name: "completed by the horizon".to_string(),
            values: col(&|o| o.evaluation.all.goodput.completed_jobs.to_string()),
        },
        Metric {
            name: "productive GPU-h by the horizon (goodput)".to_string(),
            values: col(&|o| format!("{:.1}", o.evaluation.all.goodput.productive_gpu_hours)),
        },
        Metric {
            name: "lost work: measured or modelled".to_string(),
            values: col(&|o| o.ledger.lost_basis_text()),
        },
        Metric {
            name: "important jobs".to_string(),
            values: col(&|o| o.evaluation.important.jobs.to_string()),
        },
        Metric {
            name: "important: completed by the horizon".to_string(),
            values: col(&|o| o.evaluation.important.goodput.completed_jobs.to_string()),
        },
        Metric {
            name: "important: wait mean / P50 / P95".to_string(),
            values: col(&|o| {
                let w = &o.evaluation.important.wait;
                format!("{} / {} / {}", dur(w.mean_ms), dur(w.p50_ms), dur(w.p95_ms))
            }),
        },
        Metric {
            name: "important: still waiting at the end".to_string(),
            values: col(&|o| o.evaluation.important.wait.still_waiting.to_string()),
        },
        Metric {
            name: "missed deadlines (all)".to_string(),
            values: col(&|o| {
                let d = &o.evaluation.all.deadlines;
                format!("{}/{}", d.missed, d.with_deadline)
            }),
        },
        Metric {
            name: "missed deadlines (important)".to_string(),
            values: col(&|o| {
                let d = &o.evaluation.important.deadlines;
                format!("{}/{}", d.missed, d.with_deadline)
            }),
        },
        Metric {
            name: "interruption-budget breaches".to_string(),
            values: col(&|o| budget_cell(&o.evaluation)),
        },
        Metric {
            name: "allocated GPU-h (common window)".to_string(),
            values: win(&|w| format!("{:.1}", w.allocated_gpu_hours)),
        },
        Metric {
            name: "completed-work utilisation (common window)".to_string(),
            values: win(&|w| pct(w.utilisation)),
        },
        Metric {
            name: "cost allocated (common window)".to_string(),
            values: win(&|w| money(w.cost.as_ref(), |c| c.allocated)),
        },
        Metric {
            name: "cost per productive GPU-h".to_string(),
            values: win(&|w| {
                w.cost
                    .as_ref()
                    .zip(w.cost_per_productive_gpu_hour)
                    .map_or("-".to_string(), |(c, p)| {
                        format!("{p:.2} {}", c.currency).trim().to_string()
                    })
            }),
        },
        Metric {
            name: "cost of productive work".to_string(),
            values: win(&|w| money(w.cost.as_ref(), |c| c.productive)),
        },
        Metric {
            name: "cost of waste (lost + overhead)".to_string(),
            values: win(&|w| money(w.cost.as_ref(), |c| c.wasted)),
        },
        Metric {
            name: "replay time (s)".to_string(),
            values: col(&|o| format!("{:.2}", o.elapsed.as_secs_f64())),
        },
    ];
    all.into_iter()
        .filter(|m| priced || !m.name.starts_with("cost"))
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
