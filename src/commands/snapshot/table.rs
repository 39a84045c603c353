//! `--format table`: the snapshot document as aligned text tables. Rendered from the same
//! [`SnapshotDoc`] as the JSON, so both always say the same thing.

use std::fmt::Write as _;

use quotatop_model::{clean_text, display_width};

use super::json::{QueueDoc, SnapshotDoc};

/// Runnable jobs listed per queue (the JSON has them all).
const RUNNABLE_ROWS: usize = 30;
/// Preempted jobs listed per queue.
const PREEMPTED_ROWS: usize = 15;

/// Left-aligned columns, padded to the widest cell in terminal columns (a CJK or emoji name
/// is two columns a character).
fn table(out: &mut String, header: &[&str], rows: &[Vec<String>]) {
    let mut width: Vec<usize> = header.iter().map(|h| display_width(h)).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            width[i] = width[i].max(display_width(c));
        }
    }
    let line = |cells: Vec<String>| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            let pad = width[i].saturating_sub(display_width(c));
            s.push_str(c);
            if i + 1 < cells.len() {
                s.push_str(&" ".repeat(pad + 2));
            }
        }
        s
    };
    let _ = writeln!(
        out,
        "  {}",
        line(header.iter().map(|h| h.to_string()).collect())
    );
    for r in rows {
        let _ = writeln!(out, "  {}", line(r.clone()));
    }
}

/// `1h02m`, `4m05s`, `12s`, `1d06h`: the one formatter, [`quotatop_model::format_duration`].
pub use quotatop_model::format_duration as duration;

pub fn render(doc: &SnapshotDoc) -> String {
    let mut out = String::new();
    let src = doc
        .source
        .endpoint
        .clone()
        .unwrap_or_else(|| "AWS".to_string());
    let _ = writeln!(
        out,
        "source {} ({}), health {}, {} calls / {} throttled / {} errors in the last minute",
        clean_text(&src),
        doc.source.region.as_deref().unwrap_or("-"),
        doc.health.state,
        doc.health.calls_last_minute,
        doc.health.throttled_last_minute,
        doc.health.errors_last_minute
    );
    if let Some(e) = &doc.health.last_error {
        let _ = writeln!(out, "last error: {}", clean_text(e));
    }
    for src in &doc.sources {
        let _ = writeln!(
            out,
            "source {} (region {}): {}{}",
            clean_text(&src.name),
            clean_text(src.region.as_deref().unwrap_or("-")),
            src.verdict,
            src.reason
                .as_deref()
                .map(|r| format!(", {}", clean_text(r)))
                .unwrap_or_default()
        );
    }
    for q in &doc.queues {
        queue(&mut out, q);
    }
    out
}

fn queue(out: &mut String, q: &QueueDoc) {
    let source = q
        .source
        .as_deref()
        .map(|s| format!(" @ {}", clean_text(s)))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "\nqueue {}{source} [{} {}]  capacity {}",
        clean_text(&q.name),
        q.state,
        q.status,
        q.capacity
            .iter()
            .map(|c| format!("{}×{}", c.max, clean_text(&c.instance_type)))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if let Some(r) = &q.stale_reason {
        let _ = writeln!(out, "  STALE: {}", clean_text(r));
    }
    let status: Vec<String> = q
        .jobs_by_status
        .iter()
        .map(|(s, n)| format!("{s} {n}"))
        .collect();
    let _ = writeln!(out, "  jobs: {}", status.join(", "));
    for n in &q.job_notes {
        let _ = writeln!(out, "  NOTE {} ({}): {}", n.name, n.job_id, n.note);
    }

    shares_table(out, q);
    runnable_table(out, q);
    preemptions_table(out, q);
}

/// Each share's use per instance type, and whom it borrows from or lends to.
fn shares_table(out: &mut String, q: &QueueDoc) {
    let _ = writeln!(out, "\n  shares: use per instance type");
    let rows: Vec<Vec<String>> = q
        .usage
        .iter()
        .map(|u| {
            let strategy = q
                .shares
                .iter()
                .find(|s| s.name == u.share)
                .map_or("", |s| s.strategy.as_str());
            let who = |v: &[super::json::Portion]| {
                v.iter()
                    .map(|p| format!("{} {}", clean_text(&p.share), p.instances))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            vec![
                clean_text(&u.share),
                strategy.to_string(),
                clean_text(&u.instance_type),
                u.limit.to_string(),
                u.used.to_string(),
                u.borrowed.to_string(),
                u.idle.to_string(),
                u.lent.to_string(),
                who(&u.borrowed_from),
                who(&u.lent_to),
            ]
        })
        .collect();
    table(
        out,
        &[
            "SHARE",
            "STRATEGY",
            "INSTANCE TYPE",
            "LIMIT",
            "USED",
            "BORROWED",
            "IDLE",
            "LENT",
            "FROM",
            "TO",
        ],
        &rows,
    );
}

/// The RUNNABLE jobs in dispatch order (the first [`RUNNABLE_ROWS`]).
fn runnable_table(out: &mut String, q: &QueueDoc) {
    let _ = writeln!(
        out,
        "\n  runnable jobs in dispatch order ({})",
        q.runnable.len()
    );
    let rows: Vec<Vec<String>> = q
        .runnable
        .iter()
        .take(RUNNABLE_ROWS)
        .map(|j| {
            vec![
                j.position.to_string(),
                clean_text(&j.name),
                clean_text(&j.share),
                j.priority.map_or("?".to_string(), |p| p.to_string()),
                format!("{}×{}", j.instance_count, clean_text(&j.instance_type)),
                j.waiting_ms.map_or("-".to_string(), duration),
                if j.misconfigured {
                    clean_text(j.status_reason.as_deref().unwrap_or("misconfigured"))
                } else {
                    String::new()
                },
            ]
        })
        .collect();
    table(
        out,
        &["#", "JOB", "SHARE", "PRIO", "NEEDS", "WAITING", "NOTE"],
        &rows,
    );
    if q.runnable.len() > RUNNABLE_ROWS {
        let _ = writeln!(out, "  … {} more", q.runnable.len() - RUNNABLE_ROWS);
    }
}

/// Preemptions per share, and the most preempted jobs.
fn preemptions_table(out: &mut String, q: &QueueDoc) {
    let _ = writeln!(out, "\n  preemptions per share");
    let rows: Vec<Vec<String>> = q
        .shares
        .iter()
        .map(|s| {
            vec![
                clean_text(&s.name),
                s.preempted_jobs.to_string(),
                s.preemptions.to_string(),
                s.looping_jobs.to_string(),
                format!("{:.1}", s.instance_hours_lost),
            ]
        })
        .collect();
    table(
        out,
        &["SHARE", "JOBS", "PREEMPTIONS", "LOOPING", "INSTANCE-H LOST"],
        &rows,
    );
    if !q.preempted.is_empty() {
        let _ = writeln!(out, "\n  most preempted jobs");
        let rows: Vec<Vec<String>> = q
            .preempted
            .iter()
            .take(PREEMPTED_ROWS)
            .map(|p| {
                vec![
                    clean_text(&p.name),
                    clean_text(&p.share),
                    p.status.clone(),
                    p.preemptions.to_string(),
                    match (p.unbounded_retries, p.retries_left) {
                        (true, _) => "unbounded".to_string(),
                        (false, Some(n)) => n.to_string(),
                        (false, None) => "-".to_string(),
                    },
                    if p.looping {
                        "LOOP".into()
                    } else {
                        String::new()
                    },
                ]
            })
            .collect();
        table(
            out,
            &["JOB", "SHARE", "STATUS", "PREEMPTIONS", "RETRIES LEFT", ""],
            &rows,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every column starts at the same terminal column on every line, whatever the script of
    /// the names before it (a CJK character or an emoji takes two columns).
    #[test]
    fn columns_align_with_wide_names() {
        let rows: Vec<Vec<String>> = [
            ["research", "RUNNING", "#1"],
            ["研究チーム", "RUNNABLE", "#2"],
            ["🚀 launch", "SUCCEEDED", "#3"],
            ["ml-研究-🚀", "FAILED", "#4"],
        ]
        .iter()
        .map(|r| r.iter().map(|c| c.to_string()).collect())
        .collect();
        let mut out = String::new();
        table(&mut out, &["SHARE", "STATUS", "X"], &rows);
        let starts = |line: &str, cell: &str| {
            let at = line.find(cell).unwrap();
            display_width(&line[..at])
        };
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 5, "{out}");
        let status_col = starts(lines[0], "STATUS");
        let x_col = starts(lines[0], "X");
        for (line, row) in lines[1..].iter().zip(&rows) {
            assert_eq!(starts(line, &row[1]), status_col, "{out}");
            assert_eq!(starts(line, &row[2]), x_col, "{out}");
        }
    }

    #[test]
    fn durations_read_like_a_clock() {
        assert_eq!(duration(12_400), "12s");
        assert_eq!(duration(245_000), "4m05s");
        assert_eq!(duration(3_720_000), "1h02m");
        assert_eq!(duration(-5), "0s");
    }
}
