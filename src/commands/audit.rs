//! `quotatop audit list | verify | export | anchor | repair | reconcile`.

use std::path::PathBuf;

use anyhow::{Context, bail};
use chrono::{DateTime, Utc};

use crate::cli::{
    AuditCommand, AuditExportArgs, AuditListArgs, AuditLogArg, AuditReconcileArgs, AuditRepairArgs,
    AuditVerifyArgs, ExportFormat,
};
use quotatop_model::{clean_text, csv_field, pad_right};
use quotatop_store::audit::{
    self, AuditLog, AuditRecord, Change, Head, Operator, Outcome, RecordKind,
};

pub fn run(cmd: &AuditCommand) -> anyhow::Result<()> {
    match cmd {
        AuditCommand::List(a) => super::write_stdout(&list(a)?)?,
        AuditCommand::Verify(a) => super::write_stdout(&verify(a)?)?,
        AuditCommand::Export(a) => super::write_stdout(&export(a)?)?,
        AuditCommand::Anchor(a) => super::write_stdout(&anchor(a)?)?,
        AuditCommand::Repair(a) => super::write_stdout(&repair(a)?)?,
        AuditCommand::Reconcile(a) => reconcile(a)?,
    }
    Ok(())
}

/// `audit reconcile`: one line per change it looked at; non-zero when some stay unknown.
fn reconcile(a: &AuditReconcileArgs) -> anyhow::Result<()> {
    let log = reconcile_log(&a.log)?;
    let rt = super::runtime()?;
    let done = rt.block_on(async {
        let client =
            quotatop_aws::batch::BatchClient::connect(super::snapshot::connect_options(&a.aws))
                .await?;
        let (operator, target) = quotatop_actions::reconciler(&client).await;
        quotatop_actions::reconcile(&client, &log, &operator, &target)
            .await
            .map_err(|e| anyhow::anyhow!(clean_text(&quotatop_model::error_chain(&e))))
    })?;
    if done.is_empty() {
        println!(
            "nothing to reconcile: every change in {} has an outcome",
            clean_text(&log.to_string())
        );
        return Ok(());
    }
    for r in &done {
        println!("{}", r.line());
    }
    let by_kind: Vec<String> = quotatop_actions::tally_by_kind(&done)
        .into_iter()
        .map(|(kind, d, l)| format!("{kind}: {d} reconciled, {l} left unknown"))
        .collect();
    println!("by kind: {}", clean_text(&by_kind.join("; ")));
    let (decided, left) = quotatop_actions::tally(&done);
    if left > 0 {
        bail!(
            "{left} of {} changes left unknown (reasons above); {decided} reconciled",
            done.len()
        );
    }
    println!(
        "{decided} changes reconciled; recorded in {}",
        clean_text(&log.to_string())
    );
    Ok(())
}

/// The log `audit reconcile` decides and appends to: the store's (`--store` /
/// `QUOTATOP_STORE` without `--log`), which must have its audit log already, or the file, which
/// must exist when named on purpose (a typo is not "nothing to reconcile").
fn reconcile_log(a: &AuditLogArg) -> anyhow::Result<audit::ChangeLog> {
    match log_source(a)? {
        LogSource::Store(log) => Ok(log.with_lock_timeout(lock_timeout(a.lock_timeout)?).into()),
        LogSource::File(_) => {
            let log = open_log_file(a)?;
            if a.log.is_some() {
                existing(log.path())?;
            }
            Ok(log.into())
        }
    }
}

fn log_path(a: &AuditLogArg) -> anyhow::Result<PathBuf> {
    let path = a
        .log
        .clone()
        .or_else(audit::default_path)
        .context("no home directory to find the audit log in; pass --log")?;
    // A directory, device, FIFO or link is no audit log: said plainly, for every command.
    quotatop_store::private_file::check_kind(&path, "audit log")
        .map_err(|e| anyhow::anyhow!(clean_text(&e.to_string())))?;
    Ok(path)
}

/// Where a reading command finds the log: a file, or a PostgreSQL store (`--store` or
/// `QUOTATOP_STORE`, unless `--log` names a file).
enum LogSource {
    File(PathBuf),
    Store(audit::StoreAuditLog),
}

impl LogSource {
    fn name(&self) -> String {
        match self {
            LogSource::File(p) => p.display().to_string(),
            LogSource::Store(s) => s.to_string(),
        }
    }
}

fn log_source(a: &AuditLogArg) -> anyhow::Result<LogSource> {
    match (&a.log, &a.store.store) {
        (None, Some(url)) => {
            let url = quotatop_store::pg::StoreUrl::parse(url)
                .context("--store / QUOTATOP_STORE: cannot use the store")?;
            let log = audit::StoreAuditLog::open(&url, &a.store_log, false)
                .map_err(|e| anyhow::anyhow!(clean_text(&quotatop_model::error_chain(&e))))?;
            Ok(LogSource::Store(log))
        }
        _ => Ok(LogSource::File(log_path(a)?)),
    }
}

/// The log with the lock timeout of `--lock-timeout` / `QUOTATOP_AUDIT_LOCK_TIMEOUT`, saying on
/// stderr when it waits for another process.
pub fn open_log(a: &AuditLogArg) -> anyhow::Result<AuditLog> {
    if a.log.is_none() && a.store.store.is_some() {
        bail!(
            "this command works on an audit log file, not yet on a store's (--store / QUOTATOP_STORE is set): pass --log PATH"
        );
    }
    open_log_file(a)
}

/// The file of [`open_log`], whatever the store settings say.
fn open_log_file(a: &AuditLogArg) -> anyhow::Result<AuditLog> {
    let timeout = lock_timeout(a.lock_timeout)?;
    let path = log_path(a)?;
    // A device, FIFO, directory or link is refused before anything is made beside it.
    quotatop_store::private_file::check(&path, "audit log")
        .map_err(|e| anyhow::anyhow!(quotatop_model::clean_text(&e.to_string())))?;
    Ok(AuditLog::new(path)
        .with_lock_timeout(timeout)
        .with_wait_notice(true))
}

/// Where a change is audited: `--log PATH` (or `QUOTATOP_AUDIT_LOG`) wins; then the store of
/// `--store` / `QUOTATOP_STORE`, then `config_url` (the config's `[store] url`): that store's
/// log `--store-log`, made on first use by a role that may; else the file in the data
/// directory.
pub fn open_change_log(
    a: &AuditLogArg,
    config_url: Option<&str>,
) -> anyhow::Result<audit::ChangeLog> {
    let (url, from) = match (&a.log, &a.store.store, config_url) {
        (Some(_), _, _) | (None, None, None) => return Ok(open_log_file(a)?.into()),
        (None, Some(u), _) => (u.as_str(), "--store / QUOTATOP_STORE"),
        (None, None, Some(u)) => (u, "[store] url in the config file"),
    };
    if !quotatop_store::pg::is_postgres_url(url) {
        bail!("{from} is not a postgresql:// URL; for an audit log file give --log PATH");
    }
    let url = quotatop_store::pg::StoreUrl::parse(url)
        .with_context(|| format!("{from}: cannot use the store"))?;
    let timeout = lock_timeout(a.lock_timeout)?;
    let log = audit::StoreAuditLog::open(&url, &a.store_log, true)
        .map_err(|e| anyhow::anyhow!(clean_text(&quotatop_model::error_chain(&e))))?;
    Ok(log.with_lock_timeout(timeout).into())
}

/// The changes of the log; a torn last line is named on stderr (with the repair) and the
/// records before it are used.
fn load(a: &AuditLogArg) -> anyhow::Result<Vec<Change>> {
    Ok(audit::changes(&load_records(a)?))
}

/// The records of the log, warning about a torn last line as [`load`] does.
/// `--lock-timeout` / `QUOTATOP_AUDIT_LOCK_TIMEOUT` as a duration: a number of seconds from 0
/// to one day; anything else is an error, never a silent default.
pub fn lock_timeout(secs: f64) -> anyhow::Result<std::time::Duration> {
    if !(secs.is_finite() && (0.0..=86_400.0).contains(&secs)) {
        bail!(
            "--lock-timeout / QUOTATOP_AUDIT_LOCK_TIMEOUT must be 0 to 86400 seconds, got {secs}"
        );
    }
    Ok(std::time::Duration::from_secs_f64(secs))
}

fn load_records(a: &AuditLogArg) -> anyhow::Result<Vec<(usize, AuditRecord)>> {
    let path = match log_source(a)? {
        LogSource::Store(log) => {
            return log
                .read_records()
                .map_err(|e| anyhow::anyhow!(clean_text(&quotatop_model::error_chain(&e))));
        }
        LogSource::File(path) => path,
    };
    // A log named on purpose (`--log`, QUOTATOP_AUDIT_LOG) must exist: a typo is not "no
    // changes"; the default one may not exist yet.
    if a.log.is_some() {
        existing(&path)?;
    }
    let log = audit::read_log(&path)
        .map_err(|e| anyhow::anyhow!(clean_text(&quotatop_model::error_chain(&e))))?;
    if let Some(t) = &log.torn {
        eprintln!(
            "warning: audit log {} line {} is torn (an incomplete write of {} bytes) and is left out; run `quotatop audit repair --log {}`",
            clean_text(&path.display().to_string()),
            t.line,
            t.bytes,
            clean_text(&path.display().to_string())
        );
    }
    Ok(log.records)
}

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

/// The log's verified head; a file named on purpose must exist.
fn verified(a: &AuditLogArg) -> anyhow::Result<(LogSource, Head)> {
    let source = log_source(a)?;
    let head = match &source {
        LogSource::File(path) => {
            existing(path)?;
            audit::verify(path)
        }
        LogSource::Store(log) => log.verify(),
    };
    let head = head.map_err(|e| {
        anyhow::anyhow!(
            "{}: verification failed at {}",
            clean_text(&source.name()),
            clean_text(&e.to_string())
        )
    })?;
    Ok((source, head))
}

/// `audit verify`: the chain, then the head against the expected one.
pub fn verify(a: &AuditVerifyArgs) -> anyhow::Result<String> {
    let (source, head) = verified(&a.log)?;
    let name = source.name();
    if let Some(n) = a.expect_count
        && head.count < n
    {
        bail!(
            "{}: {} records, fewer than the {n} expected: records were cut from the end or the log was replaced",
            clean_text(&name),
            head.count
        );
    }
    let mut anchored = String::new();
    let expected = a
        .expect_head
        .as_deref()
        .map(|h| h.trim().to_ascii_lowercase());
    if let Some(want) = expected.as_deref() {
        if want.len() != 64 || !want.bytes().all(|b| b.is_ascii_hexdigit()) {
            bail!(
                "--expect-head {:?} is not a head: it must be the 64 hex digits `audit anchor` printed",
                clean_text(want)
            );
        }
        let at = match a.expect_count {
            Some(n) => (n >= 1 && head.hashes.get(n - 1).is_some_and(|h| h == want)).then_some(n),
            None => head.hashes.iter().position(|h| h == want).map(|i| i + 1),
        };
        let Some(at) = at else {
            bail!(
                "{}: the expected head {} is not in the log{} (its head is {} after {} records): the log was cut or rewritten since that head was recorded",
                clean_text(&name),
                clean_text(want),
                a.expect_count
                    .map(|n| format!(" as record {n}"))
                    .unwrap_or_default(),
                if head.hash.is_empty() {
                    "-"
                } else {
                    &head.hash
                },
                head.count
            );
        };
        anchored = format!(
            "expected head found: record {at}{}\n",
            if at == head.count {
                String::new()
            } else {
                format!(", {} records appended since", head.count - at)
            }
        );
    }
    Ok(format!(
        "{}: {} records, chain intact\nhead {} (record {}{})\n{anchored}",
        clean_text(&name),
        head.count,
        if head.hash.is_empty() {
            "-"
        } else {
            &head.hash
        },
        head.count,
        head.time
            .as_deref()
            .map(|t| format!(", written {}", clean_text(t)))
            .unwrap_or_default()
    ))
}

/// `audit anchor`: the verified head, to paste into a ticket.
pub fn anchor(a: &AuditLogArg) -> anyhow::Result<String> {
    let (source, head) = verified(a)?;
    let name = source.name();
    let which = match &source {
        LogSource::File(_) => format!("--log {}", shell_quote(&name)),
        LogSource::Store(_) => format!(
            "--store {} --store-log {}",
            shell_quote(&name[..name.rfind('#').unwrap_or(name.len())]),
            shell_quote(&a.store_log)
        ),
    };
    if head.count == 0 {
        bail!(
            "{}: the log is empty: nothing to anchor yet",
            clean_text(&name)
        );
    }
    let hash = if head.hash.is_empty() {
        "-"
    } else {
        &head.hash
    };
    Ok(format!(
        "quotatop audit anchor\n  log      {}\n  records  {}\n  head     {hash}\n  last     {}\n  taken    {}\ncheck later: quotatop audit verify {which} --expect-count {} --expect-head {hash}\n",
        clean_text(&name),
        head.count,
        head.time
            .as_deref()
            .map(clean_text)
            .unwrap_or_else(|| "-".into()),
        Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        head.count,
    ))
}

/// An explicitly read log must exist: a typo in `--log` is not "0 records, chain intact".
fn existing(path: &std::path::Path) -> anyhow::Result<()> {
    if !path.exists() {
        bail!(
            "no audit log at {} (nothing has been recorded there)",
            clean_text(&path.display().to_string())
        );
    }
    Ok(())
}

/// `s` as one shell word: left alone when plain, else single-quoted (control characters
/// shown as `\u00XX`, so nothing in it acts on the terminal or the shell when pasted).
fn shell_quote(s: &str) -> String {
    let s = quotatop_model::escape_controls(s);
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+,:@%=".contains(c))
    {
        return s;
    }
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// `audit repair`: a torn last line moved aside, the repair recorded. A store's log has no
/// torn line to move (each record is one row, written whole in its transaction, and rows are
/// never changed): its records are read, each checked whole, and nothing is written.
pub fn repair(a: &AuditRepairArgs) -> anyhow::Result<String> {
    if let LogSource::Store(log) = log_source(&a.log)? {
        let records = log
            .read_records()
            .map_err(|e| anyhow::anyhow!(clean_text(&quotatop_model::error_chain(&e))))?;
        return Ok(format!(
            "{}: {} records, each whole (a store writes each record in one transaction); nothing to repair\n",
            clean_text(&log.to_string()),
            records.len()
        ));
    }
    let log = open_log(&a.log)?;
    // Nothing to repair in a log that is not there; never create one.
    existing(log.path())?;
    let template = AuditRecord {
        v: audit::SCHEME,
        seq: 0,
        time: Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        kind: RecordKind::Repair,
        change_id: audit::new_change_id(),
        operator: Operator::current(),
        aws: Default::default(),
        queue: String::new(),
        share: String::new(),
        job: audit::JobRef {
            id: String::new(),
            name: String::new(),
            arn: String::new(),
        },
        old_priority: 0,
        new_priority: 0,
        justification: a.reason.clone(),
        change_record: None,
        preview: String::new(),
        outcome: None,
        policy: None,
        repair: None,
        action: None,
        class_policy: None,
        prev_hash: String::new(),
        hash: String::new(),
    };
    match log
        .repair(template)
        .map_err(|e| anyhow::anyhow!(clean_text(&quotatop_model::error_chain(&e))))?
    {
        None => Ok(format!(
            "{}: the last line is whole; nothing to repair\n",
            clean_text(&log.path().display().to_string())
        )),
        Some(r) => {
            let info = r.repair.as_ref();
            Ok(format!(
                "{}: line {} was torn: {} bytes (sha256 {}) moved to {}; recorded as record {} (hash {})\n",
                clean_text(&log.path().display().to_string()),
                info.map(|i| i.line).unwrap_or_default(),
                info.map(|i| i.cut_bytes).unwrap_or_default(),
                info.map(|i| i.cut_sha256.as_str()).unwrap_or_default(),
                info.map(|i| i.moved_to.as_str()).unwrap_or_default(),
                r.seq,
                r.hash
            ))
        }
    }
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

/// The text `audit list` prints.
/// Warns on stderr when the log's hash chain does not verify, naming the first record that
/// fails: a listing shows what the file says, which may then have been edited.
fn warn_unless_verified(a: &AuditLogArg, records: &[(usize, AuditRecord)]) -> anyhow::Result<()> {
    let path = log_path(a)?;
    if let Err(e) = audit::verify(&path) {
        let shown = clean_text(&path.display().to_string());
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
            "warning: audit log {shown} does not verify at {}{which}: records from there on may have been edited or removed; `quotatop audit verify --log {shown}` checks it",
            clean_text(&e.to_string())
        );
    }
    Ok(())
}

pub fn list(a: &AuditListArgs) -> anyhow::Result<String> {
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
    let repairs = if a.job.is_none() && a.since.is_none() {
        repairs_text(&records)
    } else {
        String::new()
    };
    if changes.is_empty() {
        out.push_str("no changes recorded\n");
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
            "{}  {}@{}  {}/{} ({})  {} -> {}  {}\n    why: {}{}\n    preview: {}\n",
            clean_text(&i.time),
            clean_text(&i.operator.user),
            clean_text(&i.operator.host),
            clean_text(&i.share),
            clean_text(&i.job.name),
            clean_text(&i.job.id),
            i.old_priority,
            i.new_priority,
            clean_text(&outcome_text(c)),
            clean_text(&i.justification),
            change_record_note(i.change_record.as_deref()),
            clean_text(&i.preview),
        ));
    }
    out.push_str(&repairs);
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
                action: i.action.as_ref().map(|a| a.call.clone()),
                target: i.action.as_ref().map(|a| a.target.clone()),
                detail: i.action.as_ref().map(|a| a.detail.clone()),
                run_id: i.action.as_ref().and_then(|a| a.run_id.clone()),
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
                "time,change_id,operator,host,profile,region,endpoint,queue,share,job_id,job_name,job_arn,old_priority,new_priority,justification,change_record,preview,outcome,outcome_time,action,target,detail,run_id\n",
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
