//! Side-by-side rendering of replay outcomes: Markdown, JSON or CSV.

use serde::Serialize;

use crate::model::clean_text;

use super::ReplayOutcome;

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
            name: "GPU-h delivered",
            values: col(&|o| format!("{:.0}", o.delivered_gpu_hours)),
        },
        Metric {
            name: "GPU-h of completed work",
            values: col(&|o| format!("{:.0}", o.work_gpu_hours)),
        },
        Metric {
            name: "GPU-h lost (since checkpoint)",
            values: col(&|o| format!("{:.1}", o.lost_gpu_hours)),
        },
        Metric {
            name: "GPU-h restart overhead",
            values: col(&|o| format!("{:.1}", o.overhead_gpu_hours)),
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
    for o in outcomes.iter().filter(|o| !o.unknown_gpu_types.is_empty()) {
        out.push_str(&format!(
            "\n{}: GPU count unknown for {}; counted as 1 GPU per instance.\n",
            clean_text(&o.config),
            clean_text(&o.unknown_gpu_types.join(", "))
        ));
    }
    out
}

/// CSV with the same rows as the Markdown table.
pub fn csv(outcomes: &[ReplayOutcome]) -> String {
    let quote = |s: &str| {
        if s.contains([',', '"']) {
            format!("\"{}\"", s.replace('"', "\"\""))
        } else {
            s.to_string()
        }
    };
    let mut out = format!(
        "metric,{}\n",
        outcomes
            .iter()
            .map(|o| quote(&clean_text(&o.config)))
            .collect::<Vec<_>>()
            .join(",")
    );
    for m in metrics(outcomes) {
        out.push_str(&format!("{},{}\n", quote(m.name), m.values.join(",")));
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
    delivered_gpu_hours: f64,
    work_gpu_hours: f64,
    lost_gpu_hours: f64,
    overhead_gpu_hours: f64,
    waste_gpu_hours: f64,
    unknown_gpu_types: &'a [String],
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
            delivered_gpu_hours: o.delivered_gpu_hours,
            work_gpu_hours: o.work_gpu_hours,
            lost_gpu_hours: o.lost_gpu_hours,
            overhead_gpu_hours: o.overhead_gpu_hours,
            waste_gpu_hours: o.waste_gpu_hours(),
            unknown_gpu_types: &o.unknown_gpu_types,
            replay_seconds: o.elapsed.as_secs_f64(),
        })
        .collect();
    crate::model::escape_c1_in_json(
        serde_json::to_string_pretty(&rows).unwrap_or_else(|_| "[]".to_string()),
    ) + "\n"
}
