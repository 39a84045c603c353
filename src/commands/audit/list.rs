//! `audit list` and `audit export`: the changes of the log (a file or a store's), as text,
//! JSON or CSV, every name cleaned of control characters.

use chrono::{DateTime, Utc};

use super::{LogSource, load, load_records, log_source};
use crate::cli::{AuditExportArgs, AuditListArgs, AuditLogArg, ExportFormat};
use quotatop_model::{clean_text, csv_field, pad_right};
use quotatop_store::audit::{self, AuditRecord, Change, Outcome, RecordKind};

/// The `repair` records, as `audit list` shows them after the changes.
fn repairs_text(records: &[(usize, AuditRecord)]) -> String {
    let mut out = String::new();
    for (line, r) in records.iter().filter(|(_, r)| r.kind == RecordKind::Repair) {
        let Some(info) = &r.repair else { continue };
        out.push_str(&format!(
            "{}  {}@{}  REPAIR (line {line}): {} bytes cut from line {} (sha256 {}), moved to {}\n    why: {}\n",
            clean_text(&r.time),
            clean_text(&r.operator.user),
            clean_text(&r.operator.host),
            info.cut_bytes,
            info.line,
            clean_text(&info.cut_sha256),
            clean_text(&info.moved_to),
            clean_text(&r.justification),
        ));
    }
    out
}

/// `30m`, `24h`, `7d`, `2w`, or an RFC 3339 time ([`quotatop_model::parse_since`]).
pub fn parse_since(text: &str, now: DateTime<Utc>) -> anyhow::Result<DateTime<Utc>> {
    let ms = quotatop_model::parse_since(text, now.timestamp_millis())
        .map_err(|e| anyhow::anyhow!("--since: {e}"))?;
    DateTime::from_timestamp_millis(ms)
        .ok_or_else(|| anyhow::anyhow!("--since {:?} is out of range", text.trim()))
}

fn outcome_text(c: &Change) -> String {
    match c.outcome.as_ref().and_then(|o| o.outcome.as_ref()) {
        Some(Outcome::Succeeded { request_id }) => format!(
            "succeeded{}",
            request_id
                .as_deref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default()
        ),
        Some(Outcome::Failed { error }) => format!("FAILED: {error}"),
        Some(Outcome::Reconciled {
            verdict,
            observed_priority,
            observed,
            call_error,
        }) => format!(
            "outcome reconciled: {}{}{}{}",
            verdict.as_str(),
            observed_priority
                .map(|p| format!(" (priority {p} observed)"))
                .unwrap_or_default(),
            observed
                .as_deref()
                .map(|o| format!(" (read back: {o})"))
                .unwrap_or_default(),
            call_error
                .as_deref()
                .map(|e| format!("; the call answered: {e}"))
                .unwrap_or_default()
        ),
        None if !c.is_priority() => {
            "OUTCOME UNKNOWN (intent only: the process ended before the call's answer was recorded; check the resource)".to_string()
        }
        None => "OUTCOME UNKNOWN (intent only; `quotatop audit reconcile` decides it)".to_string(),
    }
}

fn filtered(a: &AuditListArgs, changes: Vec<Change>) -> anyhow::Result<Vec<Change>> {
    let since = a
        .since
        .as_deref()
        .map(|s| parse_since(s, Utc::now()))
        .transpose()?;
    Ok(changes
        .into_iter()
        .filter(|c| {
            a.job.as_deref().is_none_or(|j| {
                c.intent.job.id == j || c.intent.job.name == j || c.intent.job.arn == j
            })
        })
        .filter(|c| {
            since.is_none_or(|s| DateTime::parse_from_rfc3339(&c.intent.time).is_ok_and(|t| t >= s))
        })
        .collect())
}

/// Warns on stderr when the log's hash chain does not verify, naming the first record that
/// fails: a listing shows what the log says, which may then have been edited.
fn warn_unless_verified(a: &AuditLogArg, records: &[(usize, AuditRecord)]) -> anyhow::Result<()> {
    let source = log_source(a)?;
    let checked = match &source {
        LogSource::File(path) => audit::verify(path),
        LogSource::Store(log) => log.verify(),
    };
    if let Err(e) = checked {
        let shown = clean_text(&source.name());
        let which = records
            .iter()
            .find(|(line, _)| *line == e.line)
            .map(|(_, r)| {
                let kind = match r.kind {
                    RecordKind::Intent => "intent",
                    RecordKind::Outcome => "outcome",
                    RecordKind::Repair => "repair",
                };
                format!(
                    " (the {kind} record of change {}, job {}, {})",
                    clean_text(&r.change_id),
                    clean_text(&r.job.name),
                    clean_text(&r.time)
                )
            })
            .unwrap_or_default();
        eprintln!(
            "warning: audit log {shown} does not verify at {}{which}: records from there on may have been edited or removed; `quotatop audit verify {}` checks it",
            clean_text(&e.to_string()),
            source.flags(&a.store_log)
        );
    }
    Ok(())
}

/// The text `audit list` prints.
pub(super) fn list(a: &AuditListArgs) -> anyhow::Result<String> {
    let records = load_records(&a.log)?;
    warn_unless_verified(&a.log, &records)?;
    let changes = filtered(a, audit::changes(&records))?;
    let mut out = String::new();
    if a.by_operator {
        let mut counts: std::collections::BTreeMap<(String, String), (u32, u32)> =
            Default::default();
        for c in changes.iter().filter(|c| c.is_priority()) {
            let key = (
                format!("{}@{}", c.intent.operator.user, c.intent.operator.host),
                c.intent.share.clone(),
            );
            let e = counts.entry(key).or_default();
            e.0 += 1;
            if c.intent.new_priority > c.intent.old_priority {
                e.1 += 1;
            }
        }
        out.push_str(&format!(
            "{:<28} {:<20} {:>7} {:>7}\n",
            "operator", "share", "changes", "raises"
        ));
        for ((op, share), (n, up)) in counts {
            // Padded by display width: an operator or share named in CJK or emoji still lines up.
            out.push_str(&format!(
                "{} {} {:>7} {:>7}\n",
                pad_right(&clean_text(&op), 28),
                pad_right(&clean_text(&share), 20),
                n,
                up
            ));
        }
        return Ok(out);
    }
    // Repairs of the log itself, unless the listing is of one job or a time window.
    let mut repairs = if a.job.is_none() && a.since.is_none() {
        repairs_text(&records)
    } else {
        String::new()
    };
    let outside = outside_text(a, &audit::changes(&records))?;
    repairs.push_str(&outside);
    if changes.is_empty() {
        // Named, so a listing of the wrong log (another machine's, the demo's) is seen as such.
        let name =
            super::log_source(&a.log).map_or_else(|_| "the audit log".to_string(), |l| l.name());
        out.push_str(&format!("no changes recorded in {}\n", clean_text(&name)));
        out.push_str(&repairs);
        return Ok(out);
    }
    for c in &changes {
        let i = &c.intent;
        if let Some(action) = &i.action {
            out.push_str(&action_text(c, action));
            continue;
        }
        out.push_str(&format!(
            "{}  {}@{}  {}/{} ({})  {} -> {}{}  {}\n    why: {}{}\n    preview: {}\n",
            clean_text(&i.time),
            clean_text(&i.operator.user),
            clean_text(&i.operator.host),
            clean_text(&i.share),
            clean_text(&i.job.name),
            clean_text(&i.job.id),
            i.old_priority,
            i.new_priority,
            batch_note(i.batch_id.as_deref()),
            clean_text(&outcome_text(c)),
            clean_text(&i.justification),
            change_record_note(i.change_record.as_deref()),
            clean_text(&i.preview),
        ));
    }
    out.push_str(&repairs);
    Ok(out)
}

/// The changes made outside quotatop (none without a journal's calls or `--lookup-events`),
/// under a heading, after the log's own.
fn outside_text(a: &AuditListArgs, changes: &[Change]) -> anyhow::Result<String> {
    let since = match &a.since {
        Some(s) => parse_since(s, Utc::now())?.timestamp_millis(),
        None if a.lookup_events => Utc::now().timestamp_millis() - 24 * 3600 * 1000,
        None => 0,
    };
    let journal = super::outside::open_journal(a.journal.as_deref())?;
    let looked_up = if a.lookup_events {
        super::outside::lookup(&a.aws, since)?
    } else {
        Vec::new()
    };
    if journal.is_none() && !a.lookup_events {
        return Ok(String::new());
    }
    let found: Vec<_> =
        super::outside::outside_changes(journal.as_ref(), looked_up, changes, since)?
            .into_iter()
            .filter(|o| {
                a.job.as_deref().is_none_or(|j| {
                    o.call.target() == j || o.before.as_ref().is_some_and(|b| b.0 == j)
                })
            })
            .collect();
    let mut out = format!(
        "changes made outside quotatop (Batch's calls in CloudTrail{} that this audit log does not account for): {}\n",
        if a.lookup_events {
            ", the journal's and the event history's"
        } else {
            " the journal kept"
        },
        if found.is_empty() {
            "none".to_string()
        } else {
            found.len().to_string()
        }
    );
    for o in &found {
        out.push_str(&o.text());
    }
    Ok(out)
}

#[derive(serde::Serialize)]
struct ExportRow {
    time: String,
    change_id: String,
    operator: String,
    host: String,
    profile: Option<String>,
    region: Option<String>,
    endpoint: Option<String>,
    queue: String,
    share: String,
    job_id: String,
    job_name: String,
    job_arn: String,
    old_priority: u32,
    new_priority: u32,
    justification: String,
    change_record: Option<String>,
    preview: String,
    outcome: String,
    outcome_time: Option<String>,
    /// For changes other than a priority: the API call, its target, its values and run.
    action: Option<String>,
    target: Option<String>,
    detail: Option<String>,
    run_id: Option<String>,
    /// For a priority change made as one of several (`p` on marks, `set-priority JOB JOB…`):
    /// the id its batch's intents share.
    batch_id: Option<String>,
}

/// How `audit list` shows a change that is not a priority (a share's configuration, a drill's
/// submission or termination).
fn action_text(c: &Change, action: &audit::Action) -> String {
    let i = &c.intent;
    format!(
        "{}  {}@{}  {} {} on {}{}  {}\n    why: {}{}\n    detail: {}\n",
        clean_text(&i.time),
        clean_text(&i.operator.user),
        clean_text(&i.operator.host),
        clean_text(&action.call),
        clean_text(&action.target),
        clean_text(&i.queue),
        action
            .run_id
            .as_deref()
            .map(|r| format!(" (run {})", clean_text(r)))
            .unwrap_or_default(),
        clean_text(&outcome_text(c)),
        clean_text(&i.justification),
        change_record_note(i.change_record.as_deref()),
        clean_text(&action.detail),
    )
}

/// The text `audit export` prints.
pub(super) fn export(a: &AuditExportArgs) -> anyhow::Result<String> {
    let rows: Vec<ExportRow> = load(&a.log)?
        .iter()
        .map(|c| {
            let i = &c.intent;
            ExportRow {
                time: i.time.clone(),
                change_id: i.change_id.clone(),
                operator: i.operator.user.clone(),
                host: i.operator.host.clone(),
                profile: i.aws.profile.clone(),
                region: i.aws.region.clone(),
                endpoint: i.aws.endpoint.clone(),
                queue: i.queue.clone(),
                share: i.share.clone(),
                job_id: i.job.id.clone(),
                job_name: i.job.name.clone(),
                job_arn: i.job.arn.clone(),
                old_priority: i.old_priority,
                new_priority: i.new_priority,
                justification: i.justification.clone(),
                change_record: i.change_record.clone(),
                preview: i.preview.clone(),
                outcome: outcome_text(c),
                outcome_time: c.outcome.as_ref().map(|o| o.time.clone()),
                action: i.action.as_ref().map(|a| a.call.clone()),
                target: i.action.as_ref().map(|a| a.target.clone()),
                detail: i.action.as_ref().map(|a| a.detail.clone()),
                run_id: i.action.as_ref().and_then(|a| a.run_id.clone()),
                batch_id: i.batch_id.clone(),
            }
        })
        .collect();
    Ok(match a.format {
        ExportFormat::Json => format!(
            "{}\n",
            quotatop_model::escape_c1_in_json(serde_json::to_string_pretty(&rows)?)
        ),
        ExportFormat::Csv => {
            let mut out = String::from(
                "time,change_id,operator,host,profile,region,endpoint,queue,share,job_id,job_name,job_arn,old_priority,new_priority,justification,change_record,preview,outcome,outcome_time,action,target,detail,run_id,batch_id\n",
            );
            for r in &rows {
                let fields = [
                    r.time.clone(),
                    r.change_id.clone(),
                    r.operator.clone(),
                    r.host.clone(),
                    r.profile.clone().unwrap_or_default(),
                    r.region.clone().unwrap_or_default(),
                    r.endpoint.clone().unwrap_or_default(),
                    r.queue.clone(),
                    r.share.clone(),
                    r.job_id.clone(),
                    r.job_name.clone(),
                    r.job_arn.clone(),
                    r.old_priority.to_string(),
                    r.new_priority.to_string(),
                    r.justification.clone(),
                    r.change_record.clone().unwrap_or_default(),
                    r.preview.clone(),
                    r.outcome.clone(),
                    r.outcome_time.clone().unwrap_or_default(),
                    r.action.clone().unwrap_or_default(),
                    r.target.clone().unwrap_or_default(),
                    r.detail.clone().unwrap_or_default(),
                    r.run_id.clone().unwrap_or_default(),
                    r.batch_id.clone().unwrap_or_default(),
                ];
                // Control characters (ESC, BEL, CR, U+009B…) are written as visible `\u00XX`.
                let line: Vec<String> = fields
                    .iter()
                    .map(|f| csv_field(&quotatop_model::escape_controls(f)))
                    .collect();
                out.push_str(&line.join(","));
                out.push('\n');
            }
            out
        }
    })
}

/// ` (batch X)` after a priority change made as one of several, or nothing.
fn batch_note(batch: Option<&str>) -> String {
    batch
        .map(|b| format!(" (batch {})", clean_text(b)))
        .unwrap_or_default()
}

/// `  [change record X]` after a change's justification, or nothing without one.
fn change_record_note(record: Option<&str>) -> String {
    record
        .map(|r| format!("  [change record {}]", clean_text(r)))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_accepts_durations_and_times() {
        let now = DateTime::parse_from_rfc3339("2026-11-29T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(
            parse_since("7d", now).unwrap().to_rfc3339(),
            "2026-11-22T12:00:00+00:00"
        );
        assert_eq!(
            parse_since("30m", now).unwrap().to_rfc3339(),
            "2026-11-29T11:30:00+00:00"
        );
        assert_eq!(
            parse_since("2026-11-01T00:00:00Z", now)
                .unwrap()
                .to_rfc3339(),
            "2026-11-01T00:00:00+00:00"
        );
        assert!(parse_since("soon", now).is_err());
        assert!(parse_since("7y", now).is_err());
        for huge in ["100000000d", "99999999w", "999999999999999999m"] {
            assert!(parse_since(huge, now).is_err(), "{huge}");
        }
    }
}
