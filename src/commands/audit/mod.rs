//! `quotatop audit list | verify | export | anchor | repair | reconcile`, on the audit log file
//! or a team's store's log. `list.rs`: the listing and export.

use std::path::PathBuf;

use anyhow::{Context, bail};
use chrono::Utc;

use crate::cli::{AuditCommand, AuditLogArg, AuditReconcileArgs, AuditRepairArgs, AuditVerifyArgs};
use quotatop_model::clean_text;
use quotatop_store::audit::{self, AuditLog, AuditRecord, Change, Head, Operator};

mod list;
pub mod outside;

use list::{export, list};

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

    /// The flags naming this log on a command line (`--log PATH`, or `--store URL --store-log
    /// NAME` with the URL's password left out), quoted for a shell.
    fn flags(&self, store_log: &str) -> String {
        let name = self.name();
        match self {
            LogSource::File(_) => format!("--log {}", shell_quote(&name)),
            LogSource::Store(_) => format!(
                "--store {} --store-log {}",
                shell_quote(&name[..name.rfind('#').unwrap_or(name.len())]),
                shell_quote(store_log)
            ),
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

/// `--lock-timeout / `QUOTATOP_AUDIT_LOCK_TIMEOUT` as a duration: a number of seconds from 0
/// to one day; anything else is an error, never a silent default.
pub fn lock_timeout(secs: f64) -> anyhow::Result<std::time::Duration> {
    if !(secs.is_finite() && (0.0..=86_400.0).contains(&secs)) {
        bail!(
            "--lock-timeout / QUOTATOP_AUDIT_LOCK_TIMEOUT must be 0 to 86400 seconds, got {secs}"
        );
    }
    Ok(std::time::Duration::from_secs_f64(secs))
}

/// The records of the log, warning about a torn last line as [`load`] does.
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
    history(&source)?;
    Ok(format!(
        "{}: {} records, chain intact, every job's history follows on\nhead {} (record {}{})\n{anchored}",
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

/// Fails when a job's logged history does not follow on ([`audit::history_breaks`]): an
/// intent replaced another priority than the job's previous change in the log set.
fn history(source: &LogSource) -> anyhow::Result<()> {
    let records = match source {
        LogSource::File(path) => audit::read_records(path),
        LogSource::Store(log) => log.read_records(),
    }
    .map_err(|e| anyhow::anyhow!(clean_text(&quotatop_model::error_chain(&e))))?;
    let breaks = audit::history_breaks(&audit::changes(&records));
    if breaks.is_empty() {
        return Ok(());
    }
    let shown: Vec<String> = breaks
        .iter()
        .take(10)
        .map(|b| format!("  {}", clean_text(&b.to_string())))
        .collect();
    bail!(
        "{}: the chain is intact, but {} change(s) do not follow on from the job's previous logged change:\n{}{}\neither changes were logged out of the order AWS applied them, or the job was changed outside quotatop (another tool, or a process keeping another audit log) in between",
        clean_text(&source.name()),
        breaks.len(),
        shown.join("\n"),
        if breaks.len() > 10 {
            format!("\n  … and {} more", breaks.len() - 10)
        } else {
            String::new()
        }
    )
}

/// `audit anchor`: the verified head, to paste into a ticket.
pub fn anchor(a: &AuditLogArg) -> anyhow::Result<String> {
    let (source, head) = verified(a)?;
    let name = source.name();
    let which = source.flags(&a.store_log);
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
    let template = AuditRecord::repair_template(
        audit::new_change_id(),
        Operator::current(),
        a.reason.clone(),
    );
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
