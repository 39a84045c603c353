//! Side-by-side rendering of replay outcomes: Markdown, JSON or CSV.

use serde::Serialize;

use quotatop_analysis::scorecard::decision::{
    CompletionFigures, Cost, CurveFrame, DecisionRule, Evaluation, Scenario, Verdict,
    WindowFigures, common_window, completion_figures, verdict, window_figures,
};
use quotatop_analysis::scorecard::{COLUMNS, Ledger, Row, Scorecard, Window};
use quotatop_model::Millis;
use quotatop_model::clean_text;

use super::ReplayOutcome;

use quotatop_analysis::scorecard::format::{duration as dur, percent as pct};

/// How every per-band table groups jobs, stated in the output.
pub const BANDS_NOTE: &str = "Bands: every per-band figure groups jobs by the priority band they were submitted with (a priority raised later, e.g. by the lending-protected preset, does not move a job to another row).";

/// One wait cell: mean / P50 / P95 / max.
fn wait_cell(w: &quotatop_analysis::scorecard::WaitStats) -> String {
    format!(
        "{} / {} / {} / {}",
        dur(w.mean_ms),
        dur(w.p50_ms),
        dur(w.p95_ms),
        dur(w.max_ms)
    )
}

/// Rows of wait percentiles by share and by band as submitted, across the configurations.
fn wait_rows(outcomes: &[ReplayOutcome]) -> Vec<(String, Vec<String>)> {
    let cells = |o: &ReplayOutcome| -> Vec<(String, String)> {
        o.scorecard
            .shares
            .iter()
            .map(|r: &Row| (r.scope.label(), wait_cell(&r.wait)))
            .chain(
                o.evaluation
                    .waits_by_band
                    .iter()
                    .map(|(b, w)| (format!("band {} ({})", b.as_str(), b.range()), wait_cell(w))),
            )
            .collect()
    };
    pivot(outcomes.iter().map(cells).collect())
}

/// Missed deadlines by share and band, across the configurations.
fn deadline_rows(outcomes: &[ReplayOutcome]) -> Vec<(String, Vec<String>)> {
    let label_of = |e: &Evaluation| -> Vec<(String, String)> {
        e.deadlines_by_share
            .iter()
            .map(|(s, d)| {
                (
                    format!("share {s}"),
                    format!("{}/{}", d.missed, d.with_deadline),
                )
            })
            .chain(e.deadlines_by_band.iter().map(|(b, d)| {
                (
                    format!("band {} ({})", b.as_str(), b.range()),
                    format!("{}/{}", d.missed, d.with_deadline),
                )
            }))
            .collect()
    };
    pivot(outcomes.iter().map(|o| label_of(&o.evaluation)).collect())
}

/// Each configuration's (label, value) cells as one row per label, in first-seen order, with
/// `-` where a configuration has no such label.
fn pivot(per: Vec<Vec<(String, String)>>) -> Vec<(String, Vec<String>)> {
    let mut labels: Vec<String> = Vec::new();
    for rows in &per {
        for (l, _) in rows {
            if !labels.contains(l) {
                labels.push(l.clone());
            }
        }
    }
    labels
        .into_iter()
        .map(|l| {
            let vals = per
                .iter()
                .map(|rows| {
                    rows.iter()
                        .find(|(x, _)| *x == l)
                        .map_or("-".to_string(), |(_, v)| v.clone())
                })
                .collect();
            (l, vals)
        })
        .collect()
}

/// One metric across the configurations.
struct Metric {
    name: String,
    values: Vec<String>,
}

#[expect(
    clippy::too_many_lines,
    reason = "one row per metric in the order the report lists them: a table, read whole"
)]
fn metrics(outcomes: &[ReplayOutcome], judged: &Judged) -> Vec<Metric> {
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

fn wait_delta(ms: Option<Millis>) -> String {
    match ms {
        Some(d) if d < 0 => format!("-{}", dur(Some(-d))),
        Some(d) => format!("+{}", dur(Some(d))),
        None => "-".to_string(),
    }
}

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

fn money(c: Option<&Cost>, f: impl Fn(&Cost) -> f64) -> String {
    c.map_or("-".to_string(), |c| {
        format!("{:.0} {}", f(c), c.currency).trim().to_string()
    })
}

/// Cost over the common window: allocated / per productive GPU-hour / wasted.
fn cost_cell(w: &WindowFigures) -> String {
    let per = w
        .cost
        .as_ref()
        .zip(w.cost_per_productive_gpu_hour)
        .map_or("-".to_string(), |(c, p)| {
            format!("{p:.2} {}", c.currency).trim().to_string()
        });
    format!(
        "{} / {per} / {}",
        money(w.cost.as_ref(), |c| c.allocated),
        money(w.cost.as_ref(), |c| c.wasted)
    )
}

fn budget_cell(e: &Evaluation) -> String {
    if e.budgets_defined {
        e.budget_breaches().to_string()
    } else {
        "not judged: no budget defined".to_string()
    }
}

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
        "Common window: allocated GPU-hours, utilisation and cost of every scenario are read over the same {:.2} h, from the first submission to the latest end in any scenario. Completion: the mean completion time is work-weighted over the {} job(s) that succeed in some scenario, in hours after the first submission (a job that never succeeds in a scenario counts as completing at the window's end); its change equals the area between the completion curves divided by the work. \"By the last submission\" is the end of the submission window; the horizon is an extra column, not the verdict's basis.",
        j.window.len_ms() as f64 / 3_600_000.0,
        j.frame.compared.iter().filter(|&&c| c).count()
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
    never_run: &'a [super::NeverRun],
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
