//! The sweep's reports: Markdown (a table per class, its recommendation and its chart) and
//! JSON (the same figures as data). Every cell comes from [`ClassFigures`].

use serde::Serialize;

use quotatop_model::clean_text;

use super::rule::{RULE, keeps};
use super::{ClassFigures, ClassSweep, Recommendation, Setting, svg};

/// The table's columns: header and cell, in order (the chart reads the same rows).
/// A column: its header and its cell.
type Column = (&'static str, fn(&ClassFigures) -> String);

const COLUMNS: &[Column] = &[
    ("completed", |f| f.completed.to_string()),
    ("failed at the limit", |f| f.failed_at_limit.to_string()),
    ("productive GPU-h", |f| gpu_h(f.productive_gpu_hours)),
    ("lost GPU-h", |f| gpu_h(f.lost_gpu_hours)),
    ("restart overhead GPU-h", |f| {
        gpu_h(f.restart_overhead_gpu_hours)
    }),
    ("checkpoints", |f| f.checkpoints_written.to_string()),
    ("checkpoint overhead GPU-h", |f| {
        gpu_h(f.checkpoint_overhead_gpu_hours)
    }),
    ("checkpoint storage GB", |f| {
        format!("{:.0}", f.checkpoint_storage_gb)
    }),
    ("storage cost / month", |f| {
        f.checkpoint_storage_cost
            .map_or("-".to_string(), |c| format!("{c:.2}"))
    }),
    ("mean completion (h)", |f| {
        f.mean_completion_h
            .map_or("-".to_string(), |h| format!("{h:.2}"))
    }),
    ("last end (h)", |f| {
        f.last_end_h.map_or("-".to_string(), |h| format!("{h:.1}"))
    }),
    ("missed deadlines", |f| {
        format!("{}/{}", f.missed_deadlines, f.with_deadline)
    }),
    ("budget breaches", |f| {
        f.budget_breaches
            .map_or("no budget".to_string(), |b| b.to_string())
    }),
    ("waste GPU-h", |f| gpu_h(f.waste_gpu_hours())),
    ("cost GPU-h", |f| gpu_h(f.cost_gpu_hours())),
];

/// GPU-hours as every cell and the chart write them.
pub(super) fn gpu_h(x: f64) -> String {
    format!("{x:.1}")
}

/// The recommendation in one line.
pub fn recommendation_text(c: &ClassSweep) -> String {
    let at = |i: usize| -> (&Setting, &ClassFigures) {
        let (s, f) = &c.points[i];
        (s, f)
    };
    match &c.recommendation {
        Recommendation::Chosen { best, runner_up } => {
            let (s, f) = at(*best);
            let mut out = format!(
                "checkpoint interval {}, retry limit {}: cost {} GPU-h, waste {} GPU-h, {} missed deadlines",
                s.interval_label(),
                s.limit_label(),
                gpu_h(f.cost_gpu_hours()),
                gpu_h(f.waste_gpu_hours()),
                f.missed_deadlines
            );
            match runner_up {
                Some((r, margin)) => {
                    let (rs, _) = at(*r);
                    let pct = if f.cost_gpu_hours() > 0.0 {
                        format!(", {:+.1}%", margin / f.cost_gpu_hours() * 100.0)
                    } else {
                        String::new()
                    };
                    out.push_str(&format!(
                        "; runner-up: {}, {} ({:+.1} GPU-h{pct})",
                        rs.interval_label(),
                        rs.limit_label(),
                        margin
                    ));
                }
                None => out.push_str("; no runner-up: no other setting keeps the promise"),
            }
            out
        }
        Recommendation::NoneKeeps => {
            let fewest = c.points.iter().map(|(_, f)| f.missed_deadlines).min();
            let fewest_ended = c.points.iter().map(|(_, f)| f.failed_at_limit).min();
            let or_dash = |n: Option<usize>| n.map_or("-".to_string(), |n| n.to_string());
            format!(
                "no combination keeps the promise: as configured the class misses {} deadlines and ends {} jobs at the retry limit{}; the fewest any setting misses is {}, the fewest it ends at the limit {}",
                c.reference.missed_deadlines,
                c.reference.failed_at_limit,
                c.reference
                    .budget_breaches
                    .map_or(String::new(), |b| format!(
                        " and breaches its budget {b} times"
                    )),
                or_dash(fewest),
                or_dash(fewest_ended)
            )
        }
    }
}

/// The report in Markdown: the notes (inputs measured and modelled), the rule, then per class
/// its table, its recommendation and its chart.
pub fn markdown(classes: &[ClassSweep], notes: &[String]) -> String {
    let mut out = String::from("# Sweep: checkpoint interval × retry limit per class\n\n");
    for n in notes {
        out.push_str(&format!("{}\n\n", clean_text(n)));
    }
    out.push_str(&format!("Rule: {RULE}\n"));
    for c in classes {
        out.push_str(&format!(
            "\n## Class {} ({} jobs)\n\nRecommendation: {}.\n\n",
            clean_text(&c.class.name),
            c.reference.jobs,
            clean_text(&recommendation_text(c))
        ));
        out.push_str("| checkpoint interval | retry limit |");
        for (h, _) in COLUMNS {
            out.push_str(&format!(" {h} |"));
        }
        out.push_str(" keeps the promise |\n|---|---|");
        out.push_str(&"---:|".repeat(COLUMNS.len()));
        out.push_str("---|\n");
        let row = |out: &mut String, i: &str, l: &str, f: &ClassFigures, mark: &str| {
            out.push_str(&format!("| {i} | {l} |"));
            for (_, cell) in COLUMNS {
                out.push_str(&format!(" {} |", cell(f)));
            }
            out.push_str(&format!(" {mark} |\n"));
        };
        row(
            &mut out,
            "as configured",
            "as configured",
            &c.reference,
            "reference",
        );
        let chosen = match c.recommendation {
            Recommendation::Chosen { best, .. } => Some(best),
            Recommendation::NoneKeeps => None,
        };
        for (i, (s, f)) in c.points.iter().enumerate() {
            let mark = match (chosen == Some(i), keeps(&c.reference, f)) {
                (true, _) => "yes (chosen)",
                (false, true) => "yes",
                (false, false) => "no",
            };
            row(&mut out, &s.interval_label(), &s.limit_label(), f, mark);
        }
        out.push_str(&format!("\n{}\n", svg(c)));
    }
    out
}

#[derive(Serialize)]
struct JsonPoint<'a> {
    checkpoint_interval: String,
    retry_limit: String,
    setting: &'a Setting,
    figures: &'a ClassFigures,
    waste_gpu_hours: f64,
    cost_gpu_hours: f64,
    keeps_promise: bool,
}

#[derive(Serialize)]
struct JsonClass<'a> {
    class: &'a str,
    reference: &'a ClassFigures,
    points: Vec<JsonPoint<'a>>,
    recommendation: &'a Recommendation,
    recommendation_text: String,
}

#[derive(Serialize)]
struct JsonReport<'a> {
    notes: &'a [String],
    rule: &'static str,
    classes: Vec<JsonClass<'a>>,
}

/// The same figures as JSON.
pub fn json(classes: &[ClassSweep], notes: &[String]) -> String {
    let report = JsonReport {
        notes,
        rule: RULE,
        classes: classes
            .iter()
            .map(|c| JsonClass {
                class: &c.class.name,
                reference: &c.reference,
                points: c
                    .points
                    .iter()
                    .map(|(s, f)| JsonPoint {
                        checkpoint_interval: s.interval_label(),
                        retry_limit: s.limit_label(),
                        setting: s,
                        figures: f,
                        waste_gpu_hours: f.waste_gpu_hours(),
                        cost_gpu_hours: f.cost_gpu_hours(),
                        keeps_promise: keeps(&c.reference, f),
                    })
                    .collect(),
                recommendation: &c.recommendation,
                recommendation_text: recommendation_text(c),
            })
            .collect(),
    };
    quotatop_model::escape_c1_in_json(
        serde_json::to_string_pretty(&report).unwrap_or_else(|_| "{}".to_string()),
    ) + "\n"
}
