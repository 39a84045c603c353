//! `quotatop report`: the five-metric scorecard from the journal, for hand-off and reviews.

use std::collections::BTreeMap;

use anyhow::{Context, anyhow, bail};

use crate::cli::{ReportArgs, ReportFormat};
use quotatop_analysis::GpuTable;
use quotatop_analysis::scorecard::decision::{self, Rules};
use quotatop_analysis::scorecard::{self, ScorecardOptions, audit_view};
use quotatop_model::Millis;
use quotatop_store::journal::{self, Journal, JournalConfig};

use super::report_format::{self, Report};

/// Jobs raised at least this often in the window are listed as exceptions.
const RAISED_REPEATEDLY: usize = 2;

/// [`quotatop_model::parse_duration`] with its error as an `anyhow` one.
pub fn parse_duration(s: &str) -> anyhow::Result<Millis> {
    quotatop_model::parse_duration(s).map_err(|e| anyhow!(e))
}

fn pairs<T>(
    items: &[String],
    what: &str,
    value: impl Fn(&str) -> anyhow::Result<T>,
) -> anyhow::Result<BTreeMap<String, T>> {
    items
        .iter()
        .map(|kv| {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| anyhow!("{what} must look like NAME=VALUE, got {kv:?}"))?;
            Ok((k.trim().to_string(), value(v.trim())?))
        })
        .collect()
}

pub fn options(args: &ReportArgs) -> anyhow::Result<ScorecardOptions> {
    let gpus = pairs(&args.gpus, "--gpus", |v| {
        v.parse::<u32>()
            .map_err(|_| anyhow!("--gpus needs a whole number, got {v:?}"))
    })?;
    let checkpoint = pairs(&args.checkpoint, "--checkpoint", |v| {
        Ok(parse_duration(v)?.max(0) as u64)
    })?;
    Ok(ScorecardOptions {
        gpus: GpuTable::with_overrides(gpus),
        restart_cost_ms: parse_duration(&args.restart_cost)?.max(0) as u64,
        recovery_window_ms: parse_duration(&args.recovery_window)?,
        checkpoint_by_share: checkpoint,
    })
}

/// What a report over the journal's window reads: the journal, the window's history, the
/// scorecard input and the priority changes (observed and audited, joined).
pub struct WindowData {
    pub journal: Journal,
    pub history: journal::HistoryWindow,
    pub input: scorecard::ScorecardInput,
    pub changes: Vec<scorecard::PriorityChange>,
}

/// The journal's window for `args.queue` and `args.since`.
pub fn window_data(args: &ReportArgs, opts: &ScorecardOptions) -> anyhow::Result<WindowData> {
    let location = super::store::journal_location_default_config(
        args.journal.as_deref(),
        &args.store,
        args.config.as_deref(),
    )?;
    window_data_at(&location, args, opts)
}

/// [`window_data`] from the journal at `location` (a file or a team's store), whatever
/// `args.journal` and `args.store` say.
pub fn window_data_at(
    location: &quotatop_store::StoreLocation,
    args: &ReportArgs,
    opts: &ScorecardOptions,
) -> anyhow::Result<WindowData> {
    // A duration back from the last observation, or an RFC 3339 time; checked before the
    // journal is opened.
    quotatop_model::parse_since(&args.since, 0).map_err(|e| anyhow!("--since: {e}"))?;
    let j = Journal::open_existing_at(location, JournalConfig::default())?;
    let queue = j
        .queue(&args.queue)?
        .ok_or_else(|| anyhow!(super::journal::no_queue(&j, &args.queue)))?;
    // From `since` ago, but never before the queue's first observation; ending after the last
    // one so that its events count.
    let from = quotatop_model::parse_since(&args.since, queue.last_observed_at)
        .map_err(|e| anyhow!("--since: {e}"))?;
    if from > queue.last_observed_at {
        bail!(
            "--since {} is after the journal's last observation of {}",
            args.since.trim(),
            args.queue
        );
    }
    let since = queue.last_observed_at - from;
    let history = journal::history_window(&j, &args.queue, queue.last_observed_at, since)
        .context("reading the journal")?;
    let window = history.window;
    let input =
        journal::scorecard_input(&j, &args.queue, window, opts).context("reading the journal")?;
    let observed = j.priority_changes(&args.queue, window)?;
    let (mut audited, log) = audited_changes(args)?;
    // The priority changes CloudTrail's calls show were made outside quotatop, by their
    // principal: judged like the audited ones (`audit list` shows the same).
    let shares: std::collections::BTreeMap<String, String> = j
        .jobs(&args.queue, window.start)?
        .into_iter()
        .map(|r| (r.job_id, r.share))
        .collect();
    audited.extend(super::audit::outside::outside_priority_changes(
        &j,
        &log,
        window.start,
        &shares,
    )?);
    let changes = scorecard::join_changes(&observed, &audited);
    Ok(WindowData {
        journal: j,
        history,
        input,
        changes,
    })
}

/// The policy's conformance over the window, when there is a policy (`--policy`, else
/// `policy.toml` beside the config file when it exists), with its Markdown section.
pub fn policy_conformance(
    args: &ReportArgs,
    data: &WindowData,
    opts: &ScorecardOptions,
) -> anyhow::Result<Option<(quotatop_policy::Conformance, String)>> {
    let file = crate::cli::PolicyFileArgs {
        policy: args.policy.clone(),
        config: args.config.clone(),
    };
    let Some(path) = super::policy::policy_path(&file) else {
        return Ok(None);
    };
    if args.policy.is_none() && !path.exists() {
        return Ok(None);
    }
    let policy = quotatop_policy::read(&path)?;
    let c = super::policy::conformance_of(&policy, data, opts)?;
    let md = quotatop_policy::markdown(&c, &policy);
    Ok(Some((c, md)))
}

/// The report as text in the chosen format.
pub fn render(args: &ReportArgs) -> anyhow::Result<String> {
    let opts = options(args)?;
    let data = window_data(args, &opts)?;
    let window = data.history.window;
    let rules = rules(args)?;
    let evaluation = decision::evaluate_observed(&data.input, &opts, &rules);
    let policy = policy_conformance(args, &data, &opts)?;
    let report = Report {
        scorecard: scorecard::scorecard(&data.input, &opts),
        exceptions: audit_view(&data.changes, window, RAISED_REPEATEDLY),
        evaluation,
        currency: rules.currency.clone(),
        drills: super::drill::kept_drills(&data.journal, &args.queue, window.start),
        policy: policy.as_ref().map(|(c, _)| c.clone()),
        policy_markdown: policy.map(|(_, md)| md),
        checkpoint_storage: scorecard::jobs_storage(
            &data.input.jobs,
            scorecard::s3_price(&rules.prices),
        ),
        checkpoint_storage_method: scorecard::METHOD_STORAGE,
        history: data.history,
    };
    Ok(match args.format {
        ReportFormat::Md => report_format::markdown(&report),
        ReportFormat::Json => report_format::json(&report)?,
        ReportFormat::Csv => report_format::csv(&report),
    })
}

/// Deadlines, budgets and prices from quotatop's config file: `--config` (which must be
/// readable and valid), else the user's config file when it exists.
fn rules(args: &ReportArgs) -> anyhow::Result<Rules> {
    let explicit = args.config.is_some();
    let loaded = crate::config::load(&crate::config::Overrides {
        config_path: args.config.clone(),
        ..Default::default()
    });
    if let Some(w) = loaded.warnings.iter().find(|w| w.contains("config file")) {
        if explicit {
            bail!("{w}");
        }
        eprintln!("warning: {w}");
    }
    Ok(loaded.config.rules())
}

/// The queue's priority changes in the audit log: `--audit-log` (which must be readable), else
/// the default log when there is one. A default log that cannot be read is reported and left
/// out; the report then names operators only for what it can.
/// With them, every change of the log (what tells quotatop's own API calls from others).
fn audited_changes(
    args: &ReportArgs,
) -> anyhow::Result<(
    Vec<scorecard::PriorityChange>,
    Vec<quotatop_store::audit::Change>,
)> {
    let (path, explicit) = match &args.audit_log {
        Some(p) => (p.clone(), true),
        None => match quotatop_store::audit::default_path() {
            Some(p) if p.exists() => (p, false),
            _ => return Ok((Vec::new(), Vec::new())),
        },
    };
    if explicit && !path.exists() {
        bail!("audit log {} does not exist", path.display());
    }
    let read =
        quotatop_store::audit::read_log(&path).map(|l| quotatop_store::audit::changes(&l.records));
    match read {
        Ok(changes) => Ok((
            quotatop_store::audit::priority_changes(&changes, &args.queue),
            changes,
        )),
        Err(e) if explicit => Err(e.into()),
        Err(e) => {
            eprintln!("warning: {e}; operators are left unknown");
            Ok((Vec::new(), Vec::new()))
        }
    }
}

pub fn run(args: &ReportArgs) -> anyhow::Result<()> {
    print!("{}", render(args)?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("7d").unwrap(), 7 * 86_400_000);
        assert_eq!(parse_duration("90s").unwrap(), 90_000);
        assert_eq!(parse_duration("250").unwrap(), 250);
        assert!(parse_duration("7y").is_err());
        assert!(parse_duration("d").is_err());
    }
}
