//! `quotatop audit list | verify | export`.

use std::path::PathBuf;

use anyhow::{Context, bail};
use chrono::{DateTime, Utc};

use crate::audit::{self, Change, Outcome};
use crate::cli::{AuditCommand, AuditExportArgs, AuditListArgs, AuditLogArg, ExportFormat};
use crate::model::{clean_text, csv_field};

pub fn run(cmd: &AuditCommand) -> anyhow::Result<()> {
    match cmd {
        AuditCommand::List(a) => print!("{}", list(a)?),
        AuditCommand::Verify(a) => {
            let path = log_path(a)?;
            match audit::verify(&path) {
                Ok(n) => println!("{}: {n} records, chain intact", path.display()),
                Err(e) => bail!("{}: verification failed at {e}", path.display()),
            }
        }
        AuditCommand::Export(a) => print!("{}", export(a)?),
    }
    Ok(())
}

fn log_path(a: &AuditLogArg) -> anyhow::Result<PathBuf> {
    a.log
        .clone()
        .or_else(audit::default_path)
        .context("no home directory to find the audit log in; pass --log")
}

fn load(a: &AuditLogArg) -> anyhow::Result<Vec<Change>> {
    let path = log_path(a)?;
    let records = audit::read_records(&path)?;
    Ok(audit::changes(&records))
}

/// `30m`, `24h`, `7d`, `2w`, or an RFC 3339 time ([`crate::model::parse_since`]).
pub fn parse_since(text: &str, now: DateTime<Utc>) -> anyhow::Result<DateTime<Utc>> {
    let ms = crate::model::parse_since(text, now.timestamp_millis())
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
        None => "OUTCOME UNKNOWN (intent only)".to_string(),
    }
}

fn filtered(a: &AuditListArgs) -> anyhow::Result<Vec<Change>> {
    let since = a
        .since
        .as_deref()
        .map(|s| parse_since(s, Utc::now()))
        .transpose()?;
    Ok(load(&a.log)?
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

/// The text `audit list` prints.
pub fn list(a: &AuditListArgs) -> anyhow::Result<String> {
    let changes = filtered(a)?;
    let mut out = String::new();
    if a.by_operator {
        let mut counts: std::collections::BTreeMap<(String, String), (u32, u32)> =
            Default::default();
        for c in &changes {
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
            out.push_str(&format!(
                "{:<28} {:<20} {:>7} {:>7}\n",
                clean_text(&op),
                clean_text(&share),
                n,
                up
            ));
        }
        return Ok(out);
    }
    if changes.is_empty() {
        out.push_str("no priority changes recorded\n");
        return Ok(out);
    }
    for c in &changes {
        let i = &c.intent;
        out.push_str(&format!(
            "{}  {}@{}  {}/{} ({})  {} -> {}  {}\n    why: {}{}\n    preview: {}\n",
            i.time,
            clean_text(&i.operator.user),
            clean_text(&i.operator.host),
            clean_text(&i.share),
            clean_text(&i.job.name),
            clean_text(&i.job.id),
            i.old_priority,
            i.new_priority,
            clean_text(&outcome_text(c)),
            clean_text(&i.justification),
            i.change_record
                .as_deref()
                .map(|r| format!("  [change record {}]", clean_text(r)))
                .unwrap_or_default(),
            clean_text(&i.preview),
        ));
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
}

/// The text `audit export` prints.
pub fn export(a: &AuditExportArgs) -> anyhow::Result<String> {
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
            }
        })
        .collect();
    Ok(match a.format {
        ExportFormat::Json => format!(
            "{}\n",
            crate::model::escape_c1_in_json(serde_json::to_string_pretty(&rows)?)
        ),
        ExportFormat::Csv => {
            let mut out = String::from(
                "time,change_id,operator,host,profile,region,endpoint,queue,share,job_id,job_name,job_arn,old_priority,new_priority,justification,change_record,preview,outcome,outcome_time\n",
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
                ];
                let line: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
                out.push_str(&line.join(","));
                out.push('\n');
            }
            out
        }
    })
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
