//! The changes made outside quotatop: Batch's calls as CloudTrail recorded them (kept in the
//! journal by `record --events-queue`, or read from CloudTrail's event history with
//! `--lookup-events`) that the audit log does not account for
//! ([`quotatop_store::audit::outside_calls`]), each with the value it replaced as the
//! journal observed it. `audit list` shows them; `policy check` (through `report`'s window) and
//! `/metrics` count the same ones.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;

use quotatop_model::{ApiCall, Millis, clean_text};
use quotatop_store::audit::{self, Change};
use quotatop_store::journal::{Journal, JournalConfig};

/// Pages of CloudTrail's event history `--lookup-events` reads at most (50 calls each).
const MAX_LOOKUP_PAGES: usize = 200;

/// A change made outside quotatop, as `audit list` shows it.
#[derive(Debug, Clone)]
pub struct OutsideChange {
    pub call: ApiCall,
    /// `events` (the event stream, through the journal) or `event history` (LookupEvents).
    pub origin: String,
    /// The job's name and the priority the call changed, from the journal.
    pub before: Option<(String, u32)>,
}

impl OutsideChange {
    /// `priority 5 -> 77`, `-> terminated (reason: …)`, or the call's request in words.
    pub fn old_new(&self) -> String {
        let c = &self.call;
        match c.name.as_str() {
            "UpdateServiceJob" if c.new_priority().is_some() => format!(
                "priority {} -> {}",
                self.before.as_ref().map_or_else(
                    || "? (the journal did not see the job before the call)".to_string(),
                    |b| b.1.to_string()
                ),
                c.new_priority().unwrap_or_default()
            ),
            "TerminateServiceJob" => format!(
                "{} -> terminated (reason: {})",
                self.before
                    .as_ref()
                    .map_or_else(|| "?".to_string(), |b| format!("priority {}", b.1)),
                c.param("reason").unwrap_or_default()
            ),
            _ => format!("request {}", c.parameters),
        }
    }

    /// What the call acted on: `name (job id)` when the journal knew the job, else its target.
    pub fn target(&self) -> String {
        match &self.before {
            Some((name, _)) => format!("{name} ({})", self.call.target()),
            None => self.call.target(),
        }
    }

    /// The lines `audit list` prints, every part cleaned of control characters.
    pub fn text(&self) -> String {
        let c = &self.call;
        format!(
            "{}  {}  OUTSIDE quotatop  {} {}  {}\n    why: no justification recorded\n    request: {}  (CloudTrail event {}, from {})\n",
            clean_text(&quotatop_model::format_utc(c.time)),
            clean_text(&c.principal),
            clean_text(&c.name),
            clean_text(&self.target()),
            clean_text(&self.old_new()),
            clean_text(&c.parameters),
            clean_text(&c.event_id),
            clean_text(&self.origin),
        )
    }
}

/// The journal at `path` (else the default one) when it exists, opened to read.
pub fn open_journal(path: Option<&Path>) -> anyhow::Result<Option<Journal>> {
    let (path, named): (PathBuf, bool) = match path {
        Some(p) => (p.to_path_buf(), true),
        None => match quotatop_store::journal::default_journal_path() {
            Ok(p) => (p, false),
            Err(_) => return Ok(None),
        },
    };
    if !path.exists() {
        if named {
            anyhow::bail!(
                "--journal {}: no such journal (record keeps one: `quotatop record --events-queue`)",
                clean_text(&path.display().to_string())
            );
        }
        return Ok(None);
    }
    Ok(Some(
        Journal::open_existing(&path, JournalConfig::default())
            .with_context(|| format!("reading the journal {}", path.display()))?,
    ))
}

/// Batch's calls from `since` in CloudTrail's event history, through the connection `aws`.
pub fn lookup(aws: &crate::cli::AwsArgs, since: Millis) -> anyhow::Result<Vec<ApiCall>> {
    let rt = super::super::runtime()?;
    let got = rt.block_on(async {
        let client =
            quotatop_aws::batch::BatchClient::connect(super::super::snapshot::connect_options(aws))
                .await?;
        client
            .batch_calls(since, MAX_LOOKUP_PAGES)
            .await
            .map_err(|e| anyhow::anyhow!(clean_text(&quotatop_model::error_chain(&e))))
    })?;
    if got.truncated {
        eprintln!(
            "warning: CloudTrail's event history holds more than {} of Batch's calls since then: the oldest were not read (give a shorter --since)",
            MAX_LOOKUP_PAGES * 50
        );
    }
    Ok(got.calls)
}

/// The changes made outside quotatop at or after `since`: the journal's calls and `looked_up`
/// (one per CloudTrail event id), less those the audit log's `changes` account for, oldest
/// first.
pub fn outside_changes(
    journal: Option<&Journal>,
    looked_up: Vec<ApiCall>,
    changes: &[Change],
    since: Millis,
) -> anyhow::Result<Vec<OutsideChange>> {
    let mut calls: BTreeMap<String, (ApiCall, String)> = BTreeMap::new();
    if let Some(j) = journal {
        for k in j
            .api_calls(since)
            .context("reading the journal's API calls")?
        {
            calls.insert(k.call.event_id.clone(), (k.call, k.origin));
        }
    }
    for c in looked_up.into_iter().filter(|c| c.time >= since) {
        calls
            .entry(c.event_id.clone())
            .or_insert_with(|| (c, "event history".to_string()));
    }
    let mut all: Vec<(ApiCall, String)> = calls.into_values().collect();
    all.sort_by(|a, b| (a.0.time, &a.0.event_id).cmp(&(b.0.time, &b.0.event_id)));
    let just_calls: Vec<ApiCall> = all.iter().map(|(c, _)| c.clone()).collect();
    let outside: Vec<&ApiCall> = audit::outside_calls(&just_calls, changes);
    let mut out = Vec::with_capacity(outside.len());
    for call in outside {
        let origin = all
            .iter()
            .find(|(c, _)| c.event_id == call.event_id)
            .map(|(_, o)| o.clone())
            .unwrap_or_default();
        let before = match (journal, call.param("jobId")) {
            (Some(j), Some(job)) => j.job_before(
                &job,
                call.time,
                call.new_priority().and_then(|p| u32::try_from(p).ok()),
            )?,
            _ => None,
        };
        out.push(OutsideChange {
            call: call.clone(),
            origin,
            before,
        });
    }
    Ok(out)
}

/// The priority changes made outside quotatop that the journal's calls show for `queue`'s jobs
/// (those it recorded), as the scorecard and the policy take changes: the principal's
/// ARN as the operator (with ` (outside quotatop)`), no change record. What `policy check`
/// and `report` judge beside the audited ones.
pub fn outside_priority_changes(
    journal: &Journal,
    changes: &[Change],
    since: Millis,
    queue_jobs: &BTreeMap<String, String>,
) -> anyhow::Result<Vec<quotatop_analysis::scorecard::PriorityChange>> {
    Ok(outside_changes(Some(journal), Vec::new(), changes, since)?
        .into_iter()
        .filter_map(|o| {
            let job = o.call.param("jobId")?;
            let share = queue_jobs.get(&job)?.clone();
            let new = u32::try_from(o.call.new_priority()?).ok()?;
            let old = o.before.as_ref()?.1;
            Some(quotatop_analysis::scorecard::PriorityChange {
                at: o.call.time,
                job_id: job,
                share,
                operator: Some(format!("{} (outside quotatop)", o.call.principal)),
                old,
                new,
                change_record: None,
            })
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_text_in_the_principal_and_the_request_never_reaches_the_terminal() {
        let o = OutsideChange {
            call: ApiCall {
                event_id: "ev\u{1b}]0;x\u{7}".into(),
                time: 1_767_225_600_000,
                name: "UpdateServiceJob".into(),
                principal: "arn:aws:iam::1:user/\u{1b}[2Jbob\u{7}\nroot".into(),
                request_id: None,
                parameters: serde_json::json!({"jobId": "j1\u{1b}[31m", "schedulingPriority": 9})
                    .to_string(),
            },
            origin: "events".into(),
            before: Some(("train\r\n\u{9b}31m".into(), 3)),
        };
        let t = o.text();
        assert!(
            !t.chars()
                .any(|c| c == '\u{1b}' || c == '\u{7}' || c == '\r' || c == '\u{9b}'),
            "{t:?}"
        );
        // Three lines, whatever the strings hold.
        assert_eq!(t.lines().count(), 3, "{t}");
        assert!(t.contains("OUTSIDE quotatop  UpdateServiceJob"), "{t}");
        assert!(t.contains("priority 3 -> 9"), "{t}");
        assert!(t.contains("why: no justification recorded"), "{t}");
    }
}
