//! `quotatop journal export-trace`, and the journaled trace `replay --journal` replays: one
//! function, [`trace_from_journal`], builds both.

use std::path::Path;

use anyhow::{Context, anyhow, bail};

use crate::cli::{JournalCommand, JournalWindowArgs};
use quotatop_analysis::scorecard::ScorecardOptions;
use quotatop_replay::from_history::{self, HistoryTrace};
use quotatop_replay::{ReplayConfig, Workload, summed_limits};
use quotatop_store::journal::{self, Journal, JournalConfig};

/// A queue's journaled trace and its baseline configuration.
pub struct JournalTrace {
    pub trace: HistoryTrace,
    /// The queue's shares and environment capacity as the journal last saw them.
    pub baseline: ReplayConfig,
    /// The re-runs after a preemption whose restore the logs measured.
    pub restores: Vec<quotatop_replay::sweep::MeasuredRestore>,
}

/// The scorecard options of quotatop's config file: `path` (which must be readable and
/// valid), else the user's config file when it exists.
pub fn config_options(path: Option<&Path>) -> anyhow::Result<ScorecardOptions> {
    let loaded = crate::config::load(&crate::config::Overrides {
        config_path: path.map(Path::to_path_buf),
        ..Default::default()
    });
    if let Some(w) = loaded.warnings.iter().find(|w| w.contains("config file")) {
        if path.is_some() {
            bail!("{w}");
        }
        eprintln!("warning: {w}");
    }
    Ok(loaded.config.scorecard_options().1)
}

/// Which of the queue's journaled share configurations a replay starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Baseline {
    /// The last one the journal saw.
    LastSeen,
    /// The one in force at the window's start.
    AtSince,
}

/// The trace of `window.queue` in the journal at `path` (default path when `None`), over the
/// window asked, and the queue's baseline configuration. Errors name the problem: no queue,
/// a journal without it, a window with no finished job.
pub fn trace_from_journal(
    path: Option<&Path>,
    window: &JournalWindowArgs,
    opts: &ScorecardOptions,
    baseline_at: Baseline,
) -> anyhow::Result<JournalTrace> {
    let queue = window
        .queue
        .as_deref()
        .ok_or_else(|| anyhow!("--queue is required: the queue whose history to replay"))?;
    let location = super::store::journal_location_default_config(path, &window.store, None)?;
    quotatop_model::parse_since(&window.since, 0).map_err(|e| anyhow!("--since: {e}"))?;
    let j = Journal::open_existing_at(&location, JournalConfig::default())?;
    let q = j
        .queue(queue)?
        .ok_or_else(|| anyhow!(no_queue(&j, queue)))?;
    let until = match &window.until {
        Some(u) => quotatop_model::parse_since(u, q.last_observed_at)
            .map_err(|e| anyhow!("--until: {e}"))?
            .min(q.last_observed_at),
        None => q.last_observed_at,
    };
    let from =
        quotatop_model::parse_since(&window.since, until).map_err(|e| anyhow!("--since: {e}"))?;
    if from > until {
        bail!(
            "--since {} is after the window's end for {queue}",
            window.since.trim()
        );
    }
    let history =
        journal::history_window(&j, queue, until, until - from).context("reading the journal")?;
    let input =
        journal::scorecard_input(&j, queue, history.window, opts).context("reading the journal")?;
    let changes = j.priority_changes(queue, history.window)?;
    let trace = from_history::trace_from_history(&input, opts, &changes);
    let restores = quotatop_replay::sweep::measured_restores(&input, &changes);
    if trace.jobs.is_empty() {
        bail!(
            "no job of {queue} was submitted and finished in the window ({} job(s) seen{})",
            input.jobs.len(),
            left_out_text(&trace)
                .map(|t| format!("; {t}"))
                .unwrap_or_default()
        );
    }
    let (q, name) = match baseline_at {
        Baseline::LastSeen => (q, format!("{queue} (journal)")),
        Baseline::AtSince => {
            let at = j.queue_at(queue, from)?.ok_or_else(|| {
                anyhow!(
                    "the journal {} has no configuration of {queue} in force at --since {} (the first it observed is from {}); replay without --baseline-at-since to start from the last one seen",
                    j.location(),
                    quotatop_model::format_utc(from),
                    j.first_config_at(queue)
                        .ok()
                        .flatten()
                        .map_or_else(|| "never".to_string(), quotatop_model::format_utc)
                )
            })?;
            let name = format!(
                "{queue} (journal, as at {}; observed {})",
                quotatop_model::format_utc(from),
                quotatop_model::format_utc(at.last_observed_at)
            );
            (at, name)
        }
    };
    let baseline = ReplayConfig {
        name,
        capacity: if q.environment.capacity.is_empty() {
            summed_limits(&q.shares)
        } else {
            q.environment.capacity.clone()
        },
        shares: q.shares,
        workload: Workload::default(),
        rules: Default::default(),
    };
    Ok(JournalTrace {
        trace,
        baseline,
        restores,
    })
}

/// "left out: 3 still open at the window's end, 1 failed", or `None` when none was.
pub fn left_out_text(trace: &HistoryTrace) -> Option<String> {
    if trace.left_out.is_empty() {
        return None;
    }
    let parts: Vec<String> = trace
        .left_out
        .iter()
        .map(|(why, n)| format!("{n} {}", why.reason()))
        .collect();
    Some(format!("left out: {}", parts.join(", ")))
}

pub fn run(cmd: &JournalCommand) -> anyhow::Result<()> {
    match cmd {
        JournalCommand::ExportTrace(args) => {
            let opts = config_options(args.config.as_deref())?;
            let t = trace_from_journal(
                args.journal.as_deref(),
                &args.window,
                &opts,
                Baseline::LastSeen,
            )?;
            eprintln!(
                "{}",
                quotatop_model::clean_text(&format!(
                    "{} job(s) exported{}",
                    t.trace.jobs.len(),
                    left_out_text(&t.trace)
                        .map(|l| format!("; {l}"))
                        .unwrap_or_default()
                ))
            );
            super::write_stdout(&from_history::write_csv(&t.trace.jobs)?)?;
            Ok(())
        }
        JournalCommand::Migrate(args) => migrate(args),
    }
}

/// `quotatop journal migrate`: the copy, then its verification (see
/// [`quotatop_store::journal::copy`]).
fn migrate(args: &crate::cli::MigrateArgs) -> anyhow::Result<()> {
    use quotatop_store::StoreLocation;
    use quotatop_store::journal::copy::{self, CopyOptions};
    let path = match &args.journal {
        Some(p) => p.clone(),
        None => journal::default_journal_path()?,
    };
    if !quotatop_store::pg::is_postgres_url(&args.to) {
        bail!("--to must be a postgresql:// URL (the store to copy the journal into)");
    }
    let to_at = StoreLocation::parse(&args.to).context("--to: cannot use the store")?;
    let from = Journal::open_existing(&path, JournalConfig::default())?;
    let to = Journal::open_at(&to_at, JournalConfig::default())?;
    let source_id = std::path::absolute(&path)
        .unwrap_or_else(|_| path.clone())
        .display()
        .to_string();
    eprintln!("copying {} into {to_at}", path.display());
    let opts = CopyOptions {
        chunk: args.chunk as usize,
        max_chunks: None,
    };
    let stats = copy::copy(&from, &to, &source_id, opts, &mut |table, done| {
        tracing::info!(table, done, "copied");
    })?;
    for (table, t) in &stats.tables {
        let resumed = if t.resumed_from > 0 {
            format!(", resumed after {}", t.resumed_from)
        } else {
            String::new()
        };
        eprintln!(
            "  {table}: {} rows read, {} new{resumed}",
            t.read, t.inserted
        );
    }
    let check = copy::verify(&from, &to)?;
    let rows: usize = check.tables.iter().map(|(_, t)| t.source_rows).sum();
    if !check.ok() {
        for (table, t) in check
            .tables
            .iter()
            .filter(|(_, t)| t.missing + t.different > 0)
        {
            eprintln!(
                "  {table}: {} of {} rows missing, {} different",
                t.missing, t.source_rows, t.different
            );
        }
        bail!(
            "the copy in {to_at} does not match {}: rows differ where the store already had other data for them, or the journal changed during the copy; stop any recorder writing the journal and run the migrate again",
            path.display()
        );
    }
    eprintln!(
        "verified: all {rows} rows of {} are in {to_at}",
        path.display()
    );
    if let (Some(file), StoreLocation::Postgres(url)) = (&args.audit_log, &to_at) {
        migrate_audit(file, url, args)?;
    }
    Ok(())
}

/// The audit log file copied into the store's log `--store-log`, then both heads compared.
fn migrate_audit(
    file: &Path,
    url: &quotatop_store::pg::StoreUrl,
    args: &crate::cli::MigrateArgs,
) -> anyhow::Result<()> {
    use quotatop_store::audit;
    let chain = |e: audit::AuditError| anyhow!(quotatop_model::error_chain(&e));
    let log = audit::StoreAuditLog::open(url, &args.store_log, true).map_err(chain)?;
    let (had, copied) = log
        .copy_from_file(file, args.chunk as usize)
        .map_err(chain)?;
    let want = audit::verify(file).map_err(|e| anyhow!("{}: {e}", file.display()))?;
    let got = log
        .verify()
        .map_err(|e| anyhow!("{log}: verification failed at {e}"))?;
    if (got.count, &got.hash) != (want.count, &want.hash) {
        bail!(
            "{log} ends at record {} ({}), the file at {} ({}): run the migrate again",
            got.count,
            got.hash,
            want.count,
            want.hash
        );
    }
    eprintln!(
        "audit log {}: {copied} records copied ({had} were there); verified: {log} has the file's {} records, head {}",
        file.display(),
        got.count,
        got.hash
    );
    Ok(())
}

/// A queue the journal does not have, with the ones it does (`NAME` or `NAME@SOURCE`, as
/// `--queue` takes them): a typo gets the right name to type.
pub fn no_queue(j: &Journal, queue: &str) -> String {
    let known: Vec<String> = j
        .queues()
        .map(|qs| {
            qs.iter()
                .map(|q| quotatop_model::queue_key(q.source.as_deref(), &q.name))
                .collect()
        })
        .unwrap_or_default();
    let known = if known.is_empty() {
        "it has none yet: the console or `quotatop record` fills it".to_string()
    } else {
        format!(
            "queues in it: {}",
            known
                .iter()
                .map(|k| quotatop_model::clean_text(k))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    format!(
        "the journal {} has no queue {:?} ({known})",
        j.location(),
        quotatop_model::clean_text(queue)
    )
}
