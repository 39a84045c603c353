//! The decision summary: each scenario against the baseline, its verdict, and the jobs a
//! scenario can never run.

use quotatop_analysis::scorecard::decision::{CompletionFigures, DecisionRule, Verdict};
use quotatop_analysis::scorecard::format::duration as dur;
use quotatop_model::clean_text;

use super::super::ReplayOutcome;
use super::cells::{budget_cell, cost_cell, wait_delta};
use super::{BANDS_NOTE, Judged, judge};

/// A decision-table row's figures (without name and verdict).
fn decision_cells(o: &ReplayOutcome, c: &CompletionFigures, v: Option<&Verdict>) -> Vec<String> {
    let e = &o.evaluation;
    let delta = |text: String| v.map_or(String::new(), |_| format!(" ({text})"));
    vec![
        format!(
            "{}{}",
            c.mean_completion_h
                .map_or("-".to_string(), |h| format!("{h:.2} h")),
            delta(
                v.and_then(|v| v.mean_completion_change_pct)
                    .map_or("-".to_string(), |p| format!("{p:+.1}%"))
            )
        ),
        v.map_or("-".to_string(), |v| format!("{:.1}%", v.max_behind_pct)),
        format!(
            "{:.1} / {}",
            c.goodput_by_submission_end_gpu_hours, c.completed_by_submission_end
        ),
        format!(
            "{:.1} / {}",
            e.all.goodput.productive_gpu_hours, e.all.goodput.completed_jobs
        ),
        format!(
            "{}{}",
            dur(e.important.wait.p95_ms),
            delta(v.map_or(String::new(), |v| wait_delta(v.important_p95_wait_delta_ms)))
        ),
        format!(
            "{}/{}{}",
            e.important.deadlines.missed,
            e.important.deadlines.with_deadline,
            delta(v.map_or(String::new(), |v| format!(
                "{:+}",
                v.important_missed_deadlines_delta
            )))
        ),
        format!("{:.1}", o.ledger.waste_gpu_hours()),
        budget_cell(e),
    ]
}

/// The decision summary: each scenario against the baseline, and a verdict by the stated rule.
pub fn decision_markdown(
    outcomes: &[ReplayOutcome],
    rule: &DecisionRule,
    notes: &[String],
) -> String {
    let mut out = String::new();
    let Some(base) = outcomes.first() else {
        return out;
    };
    let judged = judge(outcomes, rule);
    out.push_str(&format!(
        "## Decision (baseline: {})\n\nRule: {}.\n",
        clean_text(&base.config),
        rule.describe()
    ));
    for n in notes {
        out.push_str(&format!("{}\n", clean_text(n)));
    }
    out.push_str(&format!("{BANDS_NOTE}\n{}\n", common_window_note(&judged)));
    let priced = judged.figures.iter().any(|f| f.cost.is_some());
    out.push_str(&format!(
        "\n| scenario | mean completion time | most behind the baseline (% of work) | goodput / completed by the last submission | goodput / completed by the horizon | important P95 wait | important missed deadlines | waste GPU-h | budget breaches |{} verdict |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|{}---|\n",
        if priced { " cost: allocated / per productive GPU-h / wasted |" } else { "" },
        if priced { "---:|" } else { "" }
    ));
    for (i, o) in outcomes.iter().enumerate() {
        let v = judged.verdicts[i].as_ref();
        let mut cells = decision_cells(o, &judged.completion[i], v);
        if priced {
            cells.push(cost_cell(&judged.figures[i]));
        }
        cells.push(v.map_or("baseline".to_string(), |v| v.kind.as_str().to_string()));
        out.push_str(&format!(
            "| {} | {} |\n",
            clean_text(&o.config),
            cells.join(" | ")
        ));
    }
    out.push('\n');
    for (o, v) in outcomes.iter().zip(&judged.verdicts) {
        if let Some(v) = v {
            out.push_str(&format!(
                "Verdict {}: {} — {}.\n",
                clean_text(&o.config),
                v.kind.as_str(),
                clean_text(&v.summary)
            ));
        }
    }
    out.push('\n');
    out.push_str(&never_run_markdown(outcomes));
    out
}

/// The common window in words.
fn common_window_note(j: &Judged) -> String {
    format!(
        "Common window: allocated GPU-hours, utilisation and cost of every scenario are read over the same {:.2} h, from the first submission to the latest end in any scenario. Completion: the mean completion time is work-weighted over the {} job(s) every scenario completes, in hours after the first submission; its change equals the area between their completion curves divided by their work. A job only some scenarios complete is counted apart, in jobs and GPU-hours, in the verdict ({} job(s) here). \"By the last submission\" counts the completions in [first submission, last submission) and \"by the horizon\" those in [first submission, horizon): a completion at the instant itself counts in neither; the horizon is an extra column, not the verdict's basis.",
        j.window.len_ms() as f64 / 3_600_000.0,
        j.frame.compared.iter().filter(|&&c| c).count(),
        j.frame
            .compared
            .iter()
            .zip(&j.frame.completed_somewhere)
            .filter(|&(&every, &some)| some && !every)
            .count()
    )
}

/// Every job a scenario can never run, in full.
fn never_run_markdown(outcomes: &[ReplayOutcome]) -> String {
    let mut out = String::new();
    for o in outcomes.iter().filter(|o| !o.never_run.is_empty()) {
        out.push_str(&format!(
            "Jobs {} can never run ({}; RUNNABLE with a MISCONFIGURATION reason, counted as unfinished):\n\n| job | origin | share | reason |\n|---|---|---|---|\n",
            clean_text(&o.config),
            o.never_run.len()
        ));
        for n in &o.never_run {
            out.push_str(&format!(
                "| {} | {} | {} | {} |\n",
                clean_text(&n.name).replace('|', "\\|"),
                clean_text(&n.origin).replace('|', "\\|"),
                clean_text(&n.share).replace('|', "\\|"),
                clean_text(&n.reason).replace('|', "\\|")
            ));
        }
        out.push('\n');
    }
    out
}
