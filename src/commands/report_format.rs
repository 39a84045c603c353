//! `quotatop report` output: Markdown for people, JSON and CSV for tools. Every figure comes
//! from the [`Scorecard`]; the methods are printed with them.

use std::fmt::Write;

use serde::Serialize;

use quotatop_analysis::scorecard::decision::Evaluation;
use quotatop_analysis::scorecard::{
    AuditView, COLUMNS, JobStorage, METHOD_STORAGE, Row, Scope, Scorecard,
};
use quotatop_model::{clean_text, format_utc};
use quotatop_store::journal::HistoryWindow;

/// What a report holds: the window asked for against the history there is, the scorecard and
/// the audit view of exceptions.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub history: HistoryWindow,
    pub scorecard: Scorecard,
    pub exceptions: AuditView,
    /// Important work, deadlines, interruption budgets and cost (config `[deadlines]`,
    /// `[budgets]`, `[prices]`), over the same window.
    pub evaluation: Evaluation,
    pub currency: Option<String>,
    /// Preemption drills of the queue kept in the journal, finished in the window
    /// (`quotatop drill`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub drills: Vec<quotatop_analysis::drill::DrillReport>,
    /// The policy's conformance over the same window, when there is a policy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<quotatop_policy::Conformance>,
    /// Its Markdown section (`quotatop_policy::markdown`, as `policy check` prints it).
    #[serde(skip)]
    pub policy_markdown: Option<String>,
    /// Checkpoint storage attributed to each job whose checkpoints were listed, and its cost
    /// at `[prices] s3_gb_month` (`scorecard::jobs_storage`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub checkpoint_storage: Vec<JobStorage>,
    /// How that is computed (`scorecard::METHOD_STORAGE`).
    pub checkpoint_storage_method: &'static str,
}

use quotatop_analysis::scorecard::format::percent as pct;
// The one human duration format, the console's: `2h05m`, `3d04h` (not `72h00m`).
use quotatop_model::format_duration_opt as dur;

/// Every Markdown table of the report: `head`, its first `left` columns (names) left-aligned
/// and the rest (figures) right-aligned, then a line per row of cells as given.
fn md_table(
    out: &mut String,
    head: &[&str],
    left: usize,
    rows: impl IntoIterator<Item = Vec<String>>,
) {
    let line = |out: &mut String, cells: &mut dyn Iterator<Item = &str>| {
        out.push('|');
        for c in cells {
            let _ = write!(out, " {c} |");
        }
        out.push('\n');
    };
    line(out, &mut head.iter().copied());
    out.push('|');
    for i in 0..head.len() {
        out.push_str(if i < left { "---|" } else { "---:|" });
    }
    out.push('\n');
    for row in rows {
        line(out, &mut row.iter().map(String::as_str));
    }
}

/// One row of the scorecard table: its scope, then every figure of [`COLUMNS`].
fn md_row(c: &Scorecard, r: &Row) -> Vec<String> {
    std::iter::once(clean_text(&r.scope.label()))
        .chain(COLUMNS.iter().map(|col| col.text(c, r)))
        .collect()
}

pub fn markdown(r: &Report) -> String {
    let c = &r.scorecard;
    let mut out = String::new();
    let _ = writeln!(out, "# Scorecard: {}\n", clean_text(&c.queue));
    let _ = writeln!(
        out,
        "Window: {} to {} (service clock; {}).\n",
        format_utc(c.window.start),
        format_utc(c.window.end),
        dur(Some(c.window.len_ms()))
    );
    let h = &r.history;
    if h.shorter_than_asked {
        let _ = writeln!(
            out,
            "**The history is shorter than asked:** {} asked, but the journal's first \
             observation of this queue is at {}, so the window starts there and \
             covers only {} of history.\n",
            dur(Some(h.asked_ms)),
            format_utc(h.first_observed_at),
            dur(Some(c.window.len_ms()))
        );
    }
    let head: Vec<&str> = std::iter::once("scope")
        .chain(COLUMNS.iter().map(|col| col.header))
        .collect();
    let rows = std::iter::once(&c.queue_row)
        .chain(&c.shares)
        .chain(&c.bands);
    md_table(&mut out, &head, 1, rows.map(|row| md_row(c, row)));
    // Lost work is measured from a job's own checkpoints where they were listed, else modelled
    // from its checkpoint interval: every total says which (one function, the ledger's).
    out.push_str("\nLost work, measured or modelled:\n\n");
    for row in std::iter::once(&c.queue_row)
        .chain(&c.shares)
        .chain(&c.bands)
    {
        let _ = writeln!(
            out,
            "- {}: {}",
            clean_text(&row.scope.label()),
            row.ledger.lost_basis_text()
        );
    }
    md_failed(&mut out, c);
    // How long re-runs took to restore: measured from their logs, else the restart cost (the
    // same figure the ledger's overhead uses).
    out.push_str("\nRestores after a preemption, measured or modelled:\n\n");
    for row in std::iter::once(&c.queue_row)
        .chain(&c.shares)
        .chain(&c.bands)
    {
        let _ = writeln!(
            out,
            "- {}: {}",
            clean_text(&row.scope.label()),
            row.recovery.restores.label()
        );
    }
    md_fairness(&mut out, c);
    md_storage(&mut out, r);
    delivery_markdown(&mut out, &r.evaluation);
    md_exceptions(&mut out, &r.exceptions);
    if !r.drills.is_empty() {
        out.push_str("\n## Preemption drills\n\n");
        for d in &r.drills {
            let _ = writeln!(out, "- {}", super::drill::drill_line(d));
        }
    }
    if let Some(md) = &r.policy_markdown {
        out.push('\n');
        for l in md.lines() {
            let _ = writeln!(out, "{}", clean_text(l));
        }
    }
    md_methods(&mut out, c);
    out
}

/// Each share's entitlement against what it held, and its wait against the queue's.
/// Failed work apart from preemption waste: an attempt that failed and was retried is not a
/// preemption (`quotatop_model::attempt_stop`).
fn md_failed(out: &mut String, c: &Scorecard) {
    out.push_str("\nFailed work (attempts that failed, not preempted):\n\n");
    let rows = std::iter::once(&c.queue_row).chain(&c.shares);
    for row in rows.chain(&c.bands) {
        let (scope, failed) = (clean_text(&row.scope.label()), row.ledger.failed_text());
        let _ = writeln!(out, "- {scope}: {failed}");
    }
}

fn md_fairness(out: &mut String, c: &Scorecard) {
    out.push_str("\n## Fairness\n\n");
    let head = [
        "share",
        "entitled GPU-h",
        "entitled",
        "held GPU-h",
        "held",
        "drift (pp)",
        "delivered/entitled",
        "P50 wait",
        "wait vs queue",
    ];
    let rows = c.fairness.iter().map(|f| {
        vec![
            clean_text(&f.share),
            format!("{:.1}", f.entitled_gpu_hours),
            format!("{:.1}%", f.entitled_fraction * 100.0),
            format!("{:.1}", f.used_gpu_hours),
            format!("{:.1}%", f.used_fraction * 100.0),
            format!("{:+.1}", f.drift_pp),
            pct(f.delivered_ratio),
            dur(f.wait_p50_ms),
            f.wait_ratio.map_or("-".to_string(), |w| format!("{w:.2}×")),
        ]
    });
    md_table(out, &head, 1, rows);
}

/// Priority changes, by operator and share, and jobs raised repeatedly.
fn md_exceptions(out: &mut String, exceptions: &AuditView) {
    out.push_str("\n## Exceptions\n\n");
    out.push_str(
        "Priority changes the poller observed, joined with the audit log for who made them and \
         under which change record; `(unknown)`: no audit record (made outside quotatop, or \
         the log is elsewhere).\n\n",
    );
    if exceptions.per_operator.is_empty() {
        out.push_str("No priority changes in the window.\n");
    } else {
        let head = [
            "operator",
            "share",
            "changes",
            "raises",
            "without change record",
        ];
        let rows = exceptions.per_operator.iter().map(|o| {
            vec![
                clean_text(&o.operator),
                clean_text(&o.share),
                o.changes.to_string(),
                o.raises.to_string(),
                o.without_change_record.to_string(),
            ]
        });
        md_table(out, &head, 2, rows);
        for j in &exceptions.raised_repeatedly {
            let _ = writeln!(
                out,
                "- job {} ({}) raised {} times: {} → {}",
                clean_text(&j.job_id),
                clean_text(&j.share),
                j.raises,
                j.from,
                j.to
            );
        }
    }
}

/// How each figure is computed, and the notes.
/// Checkpoint storage per job: a table, its total, and how it is computed.
fn md_storage(out: &mut String, r: &Report) {
    if r.checkpoint_storage.is_empty() {
        return;
    }
    out.push_str("\n## Checkpoint storage per job\n\n");
    let _ = writeln!(out, "{METHOD_STORAGE}.\n");
    out.push_str(
        "| job | share | objects | bytes | GB | cost/month |\n|---|---|---:|---:|---:|---:|\n",
    );
    let currency = r.currency.as_deref().map(clean_text);
    for j in &r.checkpoint_storage {
        let s = &j.storage;
        let _ = writeln!(
            out,
            "| {} | {} | {}{} | {} | {:.2} | {} |",
            clean_text(&j.name),
            clean_text(&j.share),
            if s.truncated { "≥ " } else { "" },
            s.objects,
            s.bytes,
            s.gb(),
            s.cost_per_month.map_or_else(
                || "- (no [prices] s3_gb_month)".to_string(),
                |c| format!("{c:.2} {}", currency.as_deref().unwrap_or(""))
                    .trim_end()
                    .to_string()
            )
        );
    }
    let bytes: u64 = r.checkpoint_storage.iter().map(|j| j.storage.bytes).sum();
    let cost: Option<f64> = r
        .checkpoint_storage
        .iter()
        .map(|j| j.storage.cost_per_month)
        .sum();
    let _ = writeln!(
        out,
        "\nIn all: {} jobs, {bytes} bytes ({:.2} GB){}.",
        r.checkpoint_storage.len(),
        bytes as f64 / quotatop_analysis::scorecard::GB,
        cost.map_or_else(String::new, |c| format!(
            ", {c:.2} {}/month",
            currency.as_deref().unwrap_or("")
        ))
    );
}

fn md_methods(out: &mut String, c: &Scorecard) {
    let m = &c.methods;
    let _ = write!(
        *out,
        "\n## Methods\n\n- {}\n- {}\n- {}\n- {}\n- {}\n- priority bands: {}\n- restart cost {} per interruption; recovery window {}\n",
        m.utilisation,
        m.wait,
        m.waste,
        m.fairness,
        m.recovery,
        m.bands,
        dur(Some(i64::try_from(m.restart_cost_ms).unwrap_or(i64::MAX))),
        dur(Some(m.recovery_window_ms))
    );
    for n in &c.notes {
        let _ = writeln!(*out, "- note: {n}");
    }
}

/// Important work, deadlines, budgets and cost.
fn delivery_markdown(out: &mut String, e: &Evaluation) {
    out.push_str("\n## Important work, deadlines, budgets and cost\n\n");
    let i = &e.important;
    let _ = writeln!(
        out,
        "Important work (high and critical bands): {} jobs, {} succeeded ({:.1} productive GPU-h); wait mean {} / P50 {} / P95 {}; {} still waiting (oldest {}); missed deadlines {}/{} (all jobs: {}/{}).",
        i.jobs,
        i.goodput.completed_jobs,
        i.goodput.productive_gpu_hours,
        dur(i.wait.mean_ms),
        dur(i.wait.p50_ms),
        dur(i.wait.p95_ms),
        i.wait.still_waiting,
        dur(i.wait.oldest_waiting_ms),
        i.deadlines.missed,
        i.deadlines.with_deadline,
        e.all.deadlines.missed,
        e.all.deadlines.with_deadline,
    );
    if e.all.deadlines.with_deadline == 0 {
        out.push_str("\nNo deadlines: set `[deadlines.SHARE]` (or `\"*\"`) in the config file.\n");
    } else {
        out.push('\n');
        let rows = e
            .deadlines_by_share
            .iter()
            .filter(|(_, d)| d.with_deadline > 0)
            .map(|(s, d)| vec![clean_text(s), format!("{}/{}", d.missed, d.with_deadline)]);
        md_table(out, &["share", "missed deadlines"], 1, rows);
    }
    if e.budgets.is_empty() {
        out.push_str("\nNo interruption budgets: set `[budgets.SHARE]` in the config file.\n");
    } else {
        out.push('\n');
        let head = [
            "share",
            "jobs over their preemption budget",
            "days over the lost GPU-h budget",
        ];
        let rows = e.budgets.iter().map(|b| {
            vec![
                clean_text(&b.share),
                b.jobs_over_preemptions.to_string(),
                b.days_over_lost.to_string(),
            ]
        });
        md_table(out, &head, 1, rows);
    }
    if let Some(c) = &e.cost {
        out.push('\n');
        let rows = c.by_share.iter().map(|r| {
            vec![
                clean_text(&r.share),
                format!("{:.2}", r.allocated),
                format!("{:.2}", r.productive),
                format!("{:.2}", r.wasted),
            ]
        });
        md_table(
            out,
            &["share", "allocated", "productive", "wasted"],
            1,
            rows,
        );
        let currency = clean_text(&c.currency);
        let unpriced = if c.unpriced.is_empty() {
            String::new()
        } else {
            format!("; no price for {}", clean_text(&c.unpriced.join(", ")))
        };
        let (allocated, productive, wasted) = (c.allocated, c.productive, c.wasted);
        let _ = writeln!(
            out,
            "\nCost ({currency}): allocated {allocated:.2}, productive {productive:.2}, wasted (lost + overhead) {wasted:.2}{unpriced}."
        );
    }
}

pub fn json(r: &Report) -> Result<String, serde_json::Error> {
    serde_json::to_string_pretty(r).map(quotatop_model::escape_c1_in_json)
}

/// A CSV field of untrusted text: cleaned for the terminal, then quoted as needed.
fn csv_field(s: &str) -> String {
    quotatop_model::csv_field(&clean_text(s))
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

/// Long format: `scope,name,metric,value`, one figure per line; methods as `method` rows.
pub fn csv(r: &Report) -> String {
    let c = &r.scorecard;
    let mut out = CsvLines(String::from("scope,name,metric,value\n"));
    out.figures(
        "window",
        &c.queue,
        [
            ("start_ms", c.window.start.to_string()),
            ("end_ms", c.window.end.to_string()),
            ("asked_ms", r.history.asked_ms.to_string()),
            (
                "shorter_than_asked",
                r.history.shorter_than_asked.to_string(),
            ),
        ],
    );
    csv_scopes(&mut out, c);
    csv_fairness(&mut out, c);
    csv_delivery(&mut out, &r.evaluation);
    for o in &r.exceptions.per_operator {
        let name = format!("{}/{}", o.operator, o.share);
        out.figures(
            "exceptions",
            &name,
            [
                ("priority_changes", o.changes.to_string()),
                ("raises", o.raises.to_string()),
            ],
        );
    }
    for k in r.policy.iter().flat_map(|p| &p.classes) {
        out.figures(
            "policy",
            &k.class,
            [
                ("jobs", k.jobs.to_string()),
                ("breaches", k.breaches().to_string()),
            ],
        );
    }
    for j in &r.checkpoint_storage {
        let s = &j.storage;
        out.figures(
            "checkpoint_storage",
            &j.name,
            [
                ("job_id", j.job_id.clone()),
                ("share", j.share.clone()),
                ("objects", s.objects.to_string()),
                ("bytes", s.bytes.to_string()),
                ("truncated", s.truncated.to_string()),
                ("cost_per_month", opt(s.cost_per_month)),
            ],
        );
    }
    out.line(
        "method",
        "checkpoint_storage",
        "text",
        METHOD_STORAGE.to_string(),
    );
    let m = &c.methods;
    for (metric, text) in [
        ("utilisation", &m.utilisation),
        ("wait", &m.wait),
        ("waste", &m.waste),
        ("fairness", &m.fairness),
        ("recovery", &m.recovery),
        ("bands", &m.bands),
    ] {
        out.line("method", metric, "text", text.clone());
    }
    out.0
}

/// The long CSV being written: one `scope,name,metric,value` line per figure.
struct CsvLines(String);

impl CsvLines {
    fn line(&mut self, scope: &str, name: &str, metric: &str, value: String) {
        let _ = writeln!(
            self.0,
            "{},{},{},{}",
            scope,
            csv_field(name),
            metric,
            csv_field(&value)
        );
    }

    /// A line per `(metric, value)` of one scope and name.
    fn figures<const N: usize>(&mut self, scope: &str, name: &str, figures: [(&str, String); N]) {
        for (metric, value) in figures {
            self.line(scope, name, metric, value);
        }
    }
}

/// The figures of the queue, each share and each priority band: every one of [`COLUMNS`].
fn csv_scopes(out: &mut CsvLines, c: &Scorecard) {
    for row in std::iter::once(&c.queue_row)
        .chain(&c.shares)
        .chain(&c.bands)
    {
        let (scope, name) = match &row.scope {
            Scope::Queue(q) => ("queue", q.clone()),
            Scope::Share(s) => ("share", s.clone()),
            Scope::Band(b) => ("band", b.as_str().to_string()),
        };
        for col in COLUMNS {
            out.line(scope, &name, col.key, col.value(c, row));
        }
    }
}

/// Each share's entitlement against what it held.
fn csv_fairness(out: &mut CsvLines, c: &Scorecard) {
    for f in &c.fairness {
        out.figures(
            "fairness",
            &f.share,
            [
                ("entitled_gpu_hours", f.entitled_gpu_hours.to_string()),
                ("held_gpu_hours", f.used_gpu_hours.to_string()),
                ("drift_pp", f.drift_pp.to_string()),
                ("delivered_ratio", opt(f.delivered_ratio)),
                ("wait_ratio", opt(f.wait_ratio)),
            ],
        );
    }
}

/// Important work, deadlines, interruption budgets and cost.
fn csv_delivery(out: &mut CsvLines, e: &Evaluation) {
    for (name, d) in [("important", &e.important), ("all", &e.all)] {
        out.figures(
            "delivery",
            name,
            [
                ("jobs", d.jobs.to_string()),
                ("succeeded", d.goodput.completed_jobs.to_string()),
                ("wait_mean_ms", opt(d.wait.mean_ms)),
                ("wait_p95_ms", opt(d.wait.p95_ms)),
                ("deadlines", d.deadlines.with_deadline.to_string()),
                ("missed_deadlines", d.deadlines.missed.to_string()),
            ],
        );
    }
    for b in &e.budgets {
        out.figures(
            "budget",
            &b.share,
            [
                ("jobs_over_preemptions", b.jobs_over_preemptions.to_string()),
                ("days_over_lost", b.days_over_lost.to_string()),
            ],
        );
    }
    if let Some(c) = &e.cost {
        out.figures(
            "cost",
            &c.currency,
            [
                ("allocated", c.allocated.to_string()),
                ("productive", c.productive.to_string()),
                ("wasted", c.wasted.to_string()),
            ],
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The report's Markdown tables, byte for byte: the head, `|---|` for the names and
    /// `---:|` for the figures with no spaces, then a row per line.
    #[test]
    fn markdown_tables_align_names_left_and_figures_right() {
        let mut out = String::new();
        let rows = [
            vec!["amy".to_string(), "prod".to_string(), "3".to_string()],
            vec!["bob".to_string(), "dev".to_string(), "0".to_string()],
        ];
        md_table(&mut out, &["operator", "share", "changes"], 2, rows);
        assert_eq!(
            out,
            "| operator | share | changes |\n|---|---|---:|\n| amy | prod | 3 |\n| bob | dev | 0 |\n"
        );
        let mut empty = String::new();
        md_table(&mut empty, &["share", "missed deadlines"], 1, []);
        assert_eq!(empty, "| share | missed deadlines |\n|---|---:|\n");
    }
}
