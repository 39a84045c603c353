//! The tables by share and by priority band as submitted: wait percentiles and missed
//! deadlines, one column per configuration.

use quotatop_analysis::scorecard::Row;
use quotatop_analysis::scorecard::decision::Evaluation;
use quotatop_analysis::scorecard::format::duration as dur;

use super::super::ReplayOutcome;

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
pub(super) fn wait_rows(outcomes: &[ReplayOutcome]) -> Vec<(String, Vec<String>)> {
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
pub(super) fn deadline_rows(outcomes: &[ReplayOutcome]) -> Vec<(String, Vec<String>)> {
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
