//! The JSON report: the decision rule and notes, then one object per configuration.

use serde::Serialize;

use quotatop_analysis::scorecard::decision::{
    CompletionFigures, DecisionRule, Evaluation, Verdict, WindowFigures,
};
use quotatop_analysis::scorecard::{Ledger, Scorecard, Window};

use super::super::ReplayOutcome;
use super::{BANDS_NOTE, judge};

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
    unknown_gpu_types: &'a [String],
    /// Its cost is over the common window.
    evaluation: Evaluation,
    common_window: &'a WindowFigures,
    completion: &'a CompletionFigures,
    verdict: Option<&'a Verdict>,
    never_run: &'a [super::super::NeverRun],
    scorecard: &'a Scorecard,
    replay_seconds: f64,
}

#[derive(Serialize)]
struct JsonReport<'a> {
    baseline: Option<&'a str>,
    rule: &'a DecisionRule,
    rule_text: String,
    notes: &'a [String],
    bands: &'static str,
    common_window: Window,
    outcomes: Vec<JsonOutcome<'a>>,
}

/// A JSON object: the decision rule and notes, then one object per configuration with its
/// verdict against the baseline (the first).
pub fn json(outcomes: &[ReplayOutcome], rule: &DecisionRule, notes: &[String]) -> String {
    let judged = judge(outcomes, rule);
    let rows: Vec<JsonOutcome> = outcomes
        .iter()
        .enumerate()
        .map(|(i, o)| JsonOutcome {
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
            unknown_gpu_types: &o.unknown_gpu_types,
            evaluation: Evaluation {
                cost: judged.figures[i].cost.clone(),
                ..o.evaluation.clone()
            },
            common_window: &judged.figures[i],
            completion: &judged.completion[i],
            verdict: judged.verdicts[i].as_ref(),
            never_run: &o.never_run,
            scorecard: &o.scorecard,
            replay_seconds: o.elapsed.as_secs_f64(),
        })
        .collect();
    let report = JsonReport {
        baseline: outcomes.first().map(|o| o.config.as_str()),
        rule,
        rule_text: rule.describe(),
        notes,
        bands: BANDS_NOTE,
        common_window: judged.window,
        outcomes: rows,
    };
    quotatop_model::escape_c1_in_json(
        serde_json::to_string_pretty(&report).unwrap_or_else(|_| "{}".to_string()),
    ) + "\n"
}
