//! Side-by-side rendering of replay outcomes: Markdown, JSON or CSV.
//!
//! This file holds the judgement of every scenario against the baseline ([`judge`]) and the
//! Markdown and CSV reports; their parts are in `decision` (the decision summary), `metrics`
//! (the figures table), `scopes` (by share and band), `cells` (shared cells) and `json`.

mod cells;
mod decision;
mod json;
mod metrics;
mod scopes;

use quotatop_analysis::scorecard::Window;
use quotatop_analysis::scorecard::decision::{
    CompletionFigures, CurveFrame, DecisionRule, Scenario, Verdict, WindowFigures, common_window,
    completion_figures, verdict, window_figures,
};
use quotatop_model::clean_text;

use super::ReplayOutcome;
use metrics::metrics;
use scopes::{deadline_rows, wait_rows};

pub use decision::decision_markdown;
pub use json::json;

/// How every per-band table groups jobs, stated in the output.
pub const BANDS_NOTE: &str = "Bands: every per-band figure groups jobs by the priority band they were submitted with (a priority raised later, e.g. by the lending-protected preset, does not move a job to another row).";

/// Every scenario read against the baseline (the first outcome) in one frame: the common
/// window, the completion curves' frame, each scenario's figures and verdict.
#[derive(Debug, Clone)]
pub struct Judged {
    pub window: Window,
    pub frame: CurveFrame,
    pub figures: Vec<WindowFigures>,
    pub completion: Vec<CompletionFigures>,
    /// `None` for the baseline.
    pub verdicts: Vec<Option<Verdict>>,
}

fn scenario(o: &ReplayOutcome) -> Scenario<'_> {
    Scenario {
        name: &o.config,
        schedule: &o.schedule,
        evaluation: &o.evaluation,
        productive_gpu_hours: o.ledger.productive_gpu_hours,
        waste_gpu_hours: o.ledger.waste_gpu_hours(),
    }
}

/// [`Judged`] of `outcomes` by `rule`.
pub fn judge(outcomes: &[ReplayOutcome], rule: &DecisionRule) -> Judged {
    let all: Vec<Scenario<'_>> = outcomes.iter().map(scenario).collect();
    let window = common_window(&all);
    let frame = CurveFrame::of(&all);
    Judged {
        window,
        figures: all.iter().map(|s| window_figures(s, window)).collect(),
        completion: all
            .iter()
            .map(|s| completion_figures(s.schedule, &frame))
            .collect(),
        verdicts: all
            .iter()
            .enumerate()
            .map(|(i, s)| (i > 0).then(|| verdict(&all[0], s, &frame, rule)))
            .collect(),
        frame,
    }
}

/// A Markdown table's head: the first column, then one column per configuration.
fn table_head(first: &str, outcomes: &[ReplayOutcome]) -> String {
    format!(
        "| {first} | {} |\n|---|{}\n",
        outcomes
            .iter()
            .map(|o| clean_text(&o.config))
            .collect::<Vec<_>>()
            .join(" | "),
        "---:|".repeat(outcomes.len())
    )
}

/// The comparison in Markdown: the decision summary first, then one row per metric and one
/// column per configuration.
pub fn markdown(outcomes: &[ReplayOutcome], rule: &DecisionRule, notes: &[String]) -> String {
    let mut out = decision_markdown(outcomes, rule, notes);
    let judged = judge(outcomes, rule);
    out.push_str(&format!("## Figures\n\n{}", table_head("metric", outcomes)));
    for m in metrics(outcomes, &judged) {
        out.push_str(&format!("| {} | {} |\n", m.name, m.values.join(" | ")));
    }
    out.push_str(&format!(
        "\nWait mean / P50 / P95 / max by share and priority band (as submitted)\n\n{}",
        table_head("scope", outcomes)
    ));
    for (label, vals) in wait_rows(outcomes) {
        out.push_str(&format!("| {label} | {} |\n", vals.join(" | ")));
    }
    out.push_str(&format!(
        "\nMissed deadlines by share and priority band (as submitted; missed/with a deadline)\n\n{}",
        table_head("scope", outcomes)
    ));
    for (label, vals) in deadline_rows(outcomes) {
        out.push_str(&format!(
            "| {} | {} |\n",
            clean_text(&label),
            vals.join(" | ")
        ));
    }
    if judged.figures.iter().any(|f| f.cost.is_some()) {
        out.push_str(&format!(
            "\nCost by share (allocated over the common window / productive / wasted)\n\n{}",
            table_head("share", outcomes)
        ));
        let mut shares: Vec<&str> = Vec::new();
        for f in &judged.figures {
            for r in f.cost.iter().flat_map(|c| &c.by_share) {
                if !shares.contains(&r.share.as_str()) {
                    shares.push(&r.share);
                }
            }
        }
        for share in shares {
            let vals: Vec<String> = judged
                .figures
                .iter()
                .map(|f| {
                    f.cost
                        .iter()
                        .flat_map(|c| &c.by_share)
                        .find(|r| r.share == share)
                        .map_or("-".to_string(), |r| {
                            format!("{:.0} / {:.0} / {:.0}", r.allocated, r.productive, r.wasted)
                        })
                })
                .collect();
            out.push_str(&format!(
                "| {} | {} |\n",
                clean_text(share),
                vals.join(" | ")
            ));
        }
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

/// CSV with the same rows as the Markdown tables, the verdicts first.
pub fn csv(outcomes: &[ReplayOutcome], rule: &DecisionRule) -> String {
    let quote = quotatop_model::csv_field;
    let mut out = format!(
        "metric,{}\n",
        outcomes
            .iter()
            .map(|o| quote(&clean_text(&o.config)))
            .collect::<Vec<_>>()
            .join(",")
    );
    let judged = judge(outcomes, rule);
    let verdict_row: Vec<String> = judged
        .verdicts
        .iter()
        .map(|v| {
            v.as_ref()
                .map_or("baseline", |v| v.kind.as_str())
                .to_string()
        })
        .collect();
    out.push_str(&format!(
        "verdict,{}\n",
        verdict_row
            .iter()
            .map(|v| quote(v))
            .collect::<Vec<_>>()
            .join(",")
    ));
    for m in metrics(outcomes, &judged) {
        out.push_str(&format!(
            "{},{}\n",
            quote(&m.name),
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
            quote(&format!("wait mean / P50 / P95 / max: {label}")),
            vals.iter().map(|v| quote(v)).collect::<Vec<_>>().join(",")
        ));
    }
    for (label, vals) in deadline_rows(outcomes) {
        out.push_str(&format!(
            "{},{}\n",
            quote(&clean_text(&format!("missed deadlines: {label}"))),
            vals.iter().map(|v| quote(v)).collect::<Vec<_>>().join(",")
        ));
    }
    out
}
