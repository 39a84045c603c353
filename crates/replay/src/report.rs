//! Side-by-side rendering of replay outcomes: Markdown, JSON or CSV.

use serde::Serialize;

use quotatop_analysis::scorecard::decision::{Cost, DecisionRule, Evaluation, Verdict, verdict};
use quotatop_analysis::scorecard::{Ledger, Row, Scorecard, Window};
use quotatop_model::Millis;
use quotatop_model::clean_text;

use super::ReplayOutcome;

use quotatop_analysis::scorecard::format::{duration as dur, percent as pct};

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
                            format!(
                                "{} / {} / {} / {}",
                                dur(r.wait.mean_ms),
                                dur(r.wait.p50_ms),
                                dur(r.wait.p95_ms),
                                dur(r.wait.max_ms)
                            )
                        })
                })
                .collect();
            (l, vals)
        })
        .collect()
}

/// Missed deadlines by share and band, across the configurations.
fn deadline_rows(outcomes: &[ReplayOutcome]) -> Vec<(String, Vec<String>)> {
    let mut labels: Vec<String> = Vec::new();
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
    let per: Vec<Vec<(String, String)>> =
        outcomes.iter().map(|o| label_of(&o.evaluation)).collect();
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
    name: &'static str,
    values: Vec<String>,
}

fn metrics(outcomes: &[ReplayOutcome]) -> Vec<Metric> {
    let col = |f: &dyn Fn(&ReplayOutcome) -> String| outcomes.iter().map(f).collect::<Vec<_>>();
    // With no prices, cost lines are absent, not zero.
    let priced = outcomes.iter().any(|o| o.evaluation.cost.is_some());
    let all = vec![
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
            values: col(&|o| o.evaluation.all.goodput.completed_jobs.to_string()),
        },
        Metric {
            name: "productive GPU-h by the horizon (goodput)",
            values: col(&|o| format!("{:.1}", o.evaluation.all.goodput.productive_gpu_hours)),
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
            name: "important jobs",
            values: col(&|o| o.evaluation.important.jobs.to_string()),
        },
        Metric {
            name: "important: completed by the horizon",
            values: col(&|o| o.evaluation.important.goodput.completed_jobs.to_string()),
        },
        Metric {
            name: "important: wait mean / P50 / P95",
            values: col(&|o| {
                let w = &o.evaluation.important.wait;
                format!("{} / {} / {}", dur(w.mean_ms), dur(w.p50_ms), dur(w.p95_ms))
            }),
        },
        Metric {
            name: "important: still waiting at the end",
            values: col(&|o| o.evaluation.important.wait.still_waiting.to_string()),
        },
        Metric {
            name: "missed deadlines (all)",
            values: col(&|o| {
                let d = &o.evaluation.all.deadlines;
                format!("{}/{}", d.missed, d.with_deadline)
            }),
        },
        Metric {
            name: "missed deadlines (important)",
            values: col(&|o| {
                let d = &o.evaluation.important.deadlines;
                format!("{}/{}", d.missed, d.with_deadline)
            }),
        },
        Metric {
            name: "interruption-budget breaches",
            values: col(&|o| o.evaluation.budget_breaches().to_string()),
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
            name: "cost allocated",
            values: col(&|o| cost_text(o, |c| c.allocated)),
        },
        Metric {
            name: "cost of productive work",
            values: col(&|o| cost_text(o, |c| c.productive)),
        },
        Metric {
            name: "cost of waste (lost + overhead)",
            values: col(&|o| cost_text(o, |c| c.wasted)),
        },
        Metric {
            name: "replay time (s)",
            values: col(&|o| format!("{:.2}", o.elapsed.as_secs_f64())),
        },
    ];
    all.into_iter()
        .filter(|m| priced || !m.name.starts_with("cost"))
        .collect()
}

fn signed(v: f64, digits: usize) -> String {
    format!("{v:+.digits$}")
}

fn wait_delta(ms: Option<Millis>) -> String {
    match ms {
        Some(d) if d < 0 => format!("-{}", dur(Some(-d))),
        Some(d) => format!("+{}", dur(Some(d))),
        None => "-".to_string(),
    }
}

/// Each scenario against the baseline (the first outcome), by `rule`.
pub fn verdicts(outcomes: &[ReplayOutcome], rule: &DecisionRule) -> Vec<Option<Verdict>> {
    let Some(base) = outcomes.first() else {
        return Vec::new();
    };
    outcomes
        .iter()
        .enumerate()
        .map(|(i, o)| (i > 0).then(|| verdict(&base.evaluation, &o.evaluation, rule)))
        .collect()
}

fn cost_text(o: &ReplayOutcome, f: impl Fn(&Cost) -> f64) -> String {
    o.evaluation.cost.as_ref().map_or("-".to_string(), |c| {
        format!("{:.0} {}", f(c), c.currency).trim().to_string()
    })
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
    out.push_str(&format!(
        "## Decision (baseline: {})\n\nRule: {}.\n",
        clean_text(&base.config),
        rule.describe()
    ));
    for n in notes {
        out.push_str(&format!("{}\n", clean_text(n)));
    }
    let priced = outcomes.iter().any(|o| o.evaluation.cost.is_some());
    out.push_str(&format!(
        "\n| scenario | completed by horizon | productive GPU-h by horizon | important P95 wait | important missed deadlines | waste GPU-h | budget breaches |{} verdict |\n|---|---:|---:|---:|---:|---:|---:|{}---|\n",
        if priced { " cost (allocated / wasted) |" } else { "" },
        if priced { "---:|" } else { "" }
    ));
    for (o, v) in outcomes.iter().zip(verdicts(outcomes, rule)) {
        let e = &o.evaluation;
        let (completed, goodput, wait, missed, verdict) = match &v {
            None => (
                e.all.goodput.completed_jobs.to_string(),
                format!("{:.1}", e.all.goodput.productive_gpu_hours),
                dur(e.important.wait.p95_ms),
                format!(
                    "{}/{}",
                    e.important.deadlines.missed, e.important.deadlines.with_deadline
                ),
                "baseline".to_string(),
            ),
            Some(v) => (
                format!(
                    "{} ({:+})",
                    e.all.goodput.completed_jobs, v.completed_by_horizon_delta
                ),
                format!(
                    "{:.1} ({}{})",
                    e.all.goodput.productive_gpu_hours,
                    signed(v.productive_gpu_hours_delta, 1),
                    v.goodput_gain_pct
                        .map_or(String::new(), |p| format!(", {p:+.1}%"))
                ),
                format!(
                    "{} ({})",
                    dur(e.important.wait.p95_ms),
                    wait_delta(v.important_p95_wait_delta_ms)
                ),
                format!(
                    "{}/{} ({:+})",
                    e.important.deadlines.missed,
                    e.important.deadlines.with_deadline,
                    v.important_missed_deadlines_delta
                ),
                if v.approve {
                    "APPROVE".to_string()
                } else {
                    "REJECT".to_string()
                },
            ),
        };
        out.push_str(&format!(
            "| {} | {completed} | {goodput} | {wait} | {missed} | {:.1} | {} |{} {verdict} |\n",
            clean_text(&o.config),
            o.ledger.waste_gpu_hours(),
            e.budget_breaches(),
            if priced {
                format!(
                    " {} / {} |",
                    cost_text(o, |c| c.allocated),
                    cost_text(o, |c| c.wasted)
                )
            } else {
                String::new()
            },
        ));
    }
    out.push('\n');
    for (o, v) in outcomes.iter().zip(verdicts(outcomes, rule)) {
        if let Some(v) = v {
            out.push_str(&format!(
                "Verdict {}: {} — {}.\n",
                clean_text(&o.config),
                if v.approve { "APPROVE" } else { "REJECT" },
                v.reasons.join("; ")
            ));
        }
    }
    out.push('\n');
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
    out.push_str(&format!("## Figures\n\n{}", table_head("metric", outcomes)));
    for m in metrics(outcomes) {
        out.push_str(&format!("| {} | {} |\n", m.name, m.values.join(" | ")));
    }
    out.push_str(&format!(
        "\nWait mean / P50 / P95 / max by share and priority band\n\n{}",
        table_head("scope", outcomes)
    ));
    for (label, vals) in wait_rows(outcomes) {
        out.push_str(&format!("| {label} | {} |\n", vals.join(" | ")));
    }
    out.push_str(&format!(
        "\nMissed deadlines by share and priority band (missed/with a deadline)\n\n{}",
        table_head("scope", outcomes)
    ));
    for (label, vals) in deadline_rows(outcomes) {
        out.push_str(&format!(
            "| {} | {} |\n",
            clean_text(&label),
            vals.join(" | ")
        ));
    }
    if outcomes.iter().any(|o| o.evaluation.cost.is_some()) {
        out.push_str(&format!(
            "\nCost by share (allocated / productive / wasted)\n\n{}",
            table_head("share", outcomes)
        ));
        let mut shares: Vec<&str> = Vec::new();
        for o in outcomes {
            for r in o.evaluation.cost.iter().flat_map(|c| &c.by_share) {
                if !shares.contains(&r.share.as_str()) {
                    shares.push(&r.share);
                }
            }
        }
        for share in shares {
            let vals: Vec<String> = outcomes
                .iter()
                .map(|o| {
                    o.evaluation
                        .cost
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
    let verdict_row: Vec<String> = verdicts(outcomes, rule)
        .into_iter()
        .map(|v| match v {
            None => "baseline".to_string(),
            Some(v) if v.approve => "APPROVE".to_string(),
            Some(_) => "REJECT".to_string(),
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
    evaluation: &'a Evaluation,
    verdict: Option<Verdict>,
    scorecard: &'a Scorecard,
    replay_seconds: f64,
}

#[derive(Serialize)]
struct JsonReport<'a> {
    baseline: Option<&'a str>,
    rule: &'a DecisionRule,
    rule_text: String,
    notes: &'a [String],
    outcomes: Vec<JsonOutcome<'a>>,
}

/// A JSON object: the decision rule and notes, then one object per configuration with its
/// verdict against the baseline (the first).
pub fn json(outcomes: &[ReplayOutcome], rule: &DecisionRule, notes: &[String]) -> String {
    let rows: Vec<JsonOutcome> = outcomes
        .iter()
        .zip(verdicts(outcomes, rule))
        .map(|(o, verdict)| JsonOutcome {
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
            evaluation: &o.evaluation,
            verdict,
            scorecard: &o.scorecard,
            replay_seconds: o.elapsed.as_secs_f64(),
        })
        .collect();
    let report = JsonReport {
        baseline: outcomes.first().map(|o| o.config.as_str()),
        rule,
        rule_text: rule.describe(),
        notes,
        outcomes: rows,
    };
    quotatop_model::escape_c1_in_json(
        serde_json::to_string_pretty(&report).unwrap_or_else(|_| "{}".to_string()),
    ) + "\n"
}
