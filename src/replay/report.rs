//! Side-by-side rendering of replay outcomes: Markdown, JSON or CSV.

use serde::Serialize;

use crate::analysis::scorecard::{Goodput, Ledger, Row, Scorecard, Window};
use crate::model::clean_text;

use super::ReplayOutcome;

use crate::analysis::scorecard::format::{duration as dur, percent as pct};

/// The largest fairness drift of a scorecard: "share +x.y pp".
fn worst_drift(card: &Scorecard) -> String {
    card.fairness
        .iter()
        .max_by(|a, b| a.drift_pp.abs().total_cmp(&b.drift_pp.abs()))
        .map_or("-".to_string(), |f| {
            format!("{} {:+.1} pp", f.share, f.drift_pp)
        })
}

/// Rows of wait percentiles by scope label, across the configurations.
fn wait_rows(outcomes: &[ReplayOutcome]) -> Vec<(String, Vec<String>)> {
    let mut labels: Vec<String> = Vec::new();
    for o in outcomes {
        for r in o.scorecard.shares.iter().chain(&o.scorecard.bands) {
            let l = r.scope.label();
            if !labels.contains(&l) {
                labels.push(l);
            }
        }
    }
    labels
        .into_iter()
        .map(|l| {
            let vals = outcomes
                .iter()
                .map(|o| {
                    o.scorecard
                        .shares
                        .iter()
                        .chain(&o.scorecard.bands)
                        .find(|r: &&Row| r.scope.label() == l)
                        .map_or("-".to_string(), |r| {
                            format!("{} / {}", dur(r.wait.p50_ms), dur(r.wait.p95_ms))
                        })
                })
                .collect();
            (l, vals)
        })
        .collect()
}

/// One metric across the configurations.
struct Metric {
    name: &'static str,
    values: Vec<String>,
}

fn metrics(outcomes: &[ReplayOutcome]) -> Vec<Metric> {
    let col = |f: &dyn Fn(&ReplayOutcome) -> String| outcomes.iter().map(f).collect::<Vec<_>>();
    vec![
        Metric {
            name: "jobs",
            values: col(&|o| o.jobs.to_string()),
        },
        Metric {
            name: "completed",
            values: col(&|o| o.completed.to_string()),
        },
        Metric {
            name: "failed (retries exhausted)",
            values: col(&|o| o.failed.to_string()),
        },
        Metric {
            name: "unfinished (misconfigured)",
            values: col(&|o| o.unfinished.to_string()),
        },
        Metric {
            name: "makespan (h)",
            values: col(&|o| format!("{:.1}", o.makespan_ms as f64 / 3_600_000.0)),
        },
        Metric {
            name: "preemptions",
            values: col(&|o| o.preemptions.to_string()),
        },
        Metric {
            name: "completed by the horizon",
            values: col(&|o| o.goodput.completed_jobs.to_string()),
        },
        Metric {
            name: "productive GPU-h by the horizon (goodput)",
            values: col(&|o| format!("{:.1}", o.goodput.productive_gpu_hours)),
        },
        Metric {
            name: "GPU-h held",
            values: col(&|o| format!("{:.1}", o.ledger.held_gpu_hours())),
        },
        Metric {
            name: "GPU-h productive",
            values: col(&|o| format!("{:.1}", o.ledger.productive_gpu_hours)),
        },
        Metric {
            name: "GPU-h lost (since checkpoint)",
            values: col(&|o| format!("{:.1}", o.ledger.lost_gpu_hours)),
        },
        Metric {
            name: "GPU-h restart overhead",
            values: col(&|o| format!("{:.1}", o.ledger.overhead_gpu_hours)),
        },
        Metric {
            name: "GPU-h held before first run",
            values: col(&|o| format!("{:.1}", o.ledger.held_not_running_gpu_hours)),
        },
        Metric {
            name: "GPU-h of unfinished jobs",
            values: col(&|o| format!("{:.1}", o.ledger.unfinished_gpu_hours)),
        },
        Metric {
            name: "completed-work utilisation",
            values: col(&|o| pct(o.scorecard.queue_row.utilisation.ratio)),
        },
        Metric {
            name: "wait mean / P50 / P95 (runnable to start)",
            values: col(&|o| {
                let w = &o.scorecard.queue_row.wait;
                format!("{} / {} / {}", dur(w.mean_ms), dur(w.p50_ms), dur(w.p95_ms))
            }),
        },
        Metric {
            name: "preemption waste (GPU-h)",
            values: col(&|o| format!("{:.1}", o.scorecard.queue_row.waste.total_gpu_hours)),
        },
        Metric {
            name: "largest fairness drift",
            values: col(&|o| worst_drift(&o.scorecard)),
        },
        Metric {
            name: "recovery reliability",
            values: col(&|o| pct(o.scorecard.queue_row.recovery.ratio)),
        },
        Metric {
            name: "replay time (s)",
            values: col(&|o| format!("{:.2}", o.elapsed.as_secs_f64())),
        },
    ]
}

/// A Markdown table: one row per metric, one column per configuration.
pub fn markdown(outcomes: &[ReplayOutcome]) -> String {
    let mut out = format!(
        "| metric | {} |\n|---|{}\n",
        outcomes
            .iter()
            .map(|o| clean_text(&o.config))
            .collect::<Vec<_>>()
            .join(" | "),
        "---:|".repeat(outcomes.len())
    );
    for m in metrics(outcomes) {
        out.push_str(&format!("| {} | {} |\n", m.name, m.values.join(" | ")));
    }
    out.push_str(&format!(
        "\nWait P50 / P95 by share and priority band\n\n| scope | {} |\n|---|{}\n",
        outcomes
            .iter()
            .map(|o| o.config.as_str())
            .collect::<Vec<_>>()
            .join(" | "),
        "---:|".repeat(outcomes.len())
    ));
    for (label, vals) in wait_rows(outcomes) {
        out.push_str(&format!("| {label} | {} |\n", vals.join(" | ")));
    }
    if let Some(o) = outcomes.first() {
        let m = &o.scorecard.methods;
        out.push_str(&format!(
            "\nMethods: utilisation: {}; wait: {}; waste: {}; fairness: {}; recovery: {}; bands: {}.\n",
            m.utilisation, m.wait, m.waste, m.fairness, m.recovery, m.bands
        ));
    }
    for o in outcomes.iter().filter(|o| !o.unknown_gpu_types.is_empty()) {
        out.push_str(&format!(
            "\n{}: GPU count unknown for {}; their GPU-hours count as 0.\n",
            clean_text(&o.config),
            clean_text(&o.unknown_gpu_types.join(", "))
        ));
    }
    out
}

/// CSV with the same rows as the Markdown table.
pub fn csv(outcomes: &[ReplayOutcome]) -> String {
    let quote = crate::model::csv_field;
    let mut out = format!(
        "metric,{}\n",
        outcomes
            .iter()
            .map(|o| quote(&clean_text(&o.config)))
            .collect::<Vec<_>>()
            .join(",")
    );
    for m in metrics(outcomes) {
        out.push_str(&format!(
            "{},{}\n",
            quote(m.name),
            m.values
                .iter()
                .map(|v| quote(v))
                .collect::<Vec<_>>()
                .join(",")
        ));
    }
    for (label, vals) in wait_rows(outcomes) {
        out.push_str(&format!(
            "{},{}\n",
            quote(&format!("wait P50 / P95: {label}")),
            vals.iter().map(|v| quote(v)).collect::<Vec<_>>().join(",")
        ));
    }
    out
}

#[derive(Serialize)]
struct JsonOutcome<'a> {
    config: &'a str,
    jobs: usize,
    completed: usize,
    failed: usize,
    unfinished: usize,
    makespan_hours: f64,
    preemptions: u64,
    ledger: &'a Ledger,
    waste_gpu_hours: f64,
    horizon: Window,
    goodput: Goodput,
    unknown_gpu_types: &'a [String],
    scorecard: &'a Scorecard,
    replay_seconds: f64,
}

/// A JSON array, one object per configuration.
pub fn json(outcomes: &[ReplayOutcome]) -> String {
    let rows: Vec<JsonOutcome> = outcomes
        .iter()
        .map(|o| JsonOutcome {
            config: &o.config,
            jobs: o.jobs,
            completed: o.completed,
            failed: o.failed,
            unfinished: o.unfinished,
            makespan_hours: o.makespan_ms as f64 / 3_600_000.0,
            preemptions: o.preemptions,
            ledger: &o.ledger,
            waste_gpu_hours: o.waste_gpu_hours(),
            horizon: o.horizon,
            goodput: o.goodput,
            unknown_gpu_types: &o.unknown_gpu_types,
            scorecard: &o.scorecard,
            replay_seconds: o.elapsed.as_secs_f64(),
        })
        .collect();
    crate::model::escape_c1_in_json(
        serde_json::to_string_pretty(&rows).unwrap_or_else(|_| "[]".to_string()),
    ) + "\n"
}
