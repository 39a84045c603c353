//! What the journal says about a proposed share change: which shares jobs used (the lint's
//! RESERVE check), and `--impact`: the journal's last N days replayed under the live and the
//! proposed shares, the decision summary side by side (`replay`'s, one definition).

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{anyhow, bail};

use crate::cli::JournalWindowArgs;
use quotatop_analysis::scorecard::ScorecardOptions;
use quotatop_analysis::scorecard::decision::Rules;
use quotatop_model::CapacityLimit;
use quotatop_replay::{ReplayConfig, Workload, replay_lean, report};
use quotatop_store::journal::{self, Journal, JournalConfig};

use super::Prepared;

/// The shares some job of `queue` used in the journal's last `window`; the error says why the
/// journal cannot tell (no journal, no such queue in it).
pub fn shares_used(
    path: Option<&Path>,
    queue: &str,
    window: &str,
    opts: &ScorecardOptions,
) -> anyhow::Result<BTreeSet<String>> {
    // Each error is one message with its causes (`error_chain`): the caller shows it whole.
    let chain =
        |e: &(dyn std::error::Error + 'static)| anyhow::anyhow!(quotatop_model::error_chain(e));
    let path = match path {
        Some(p) => p.to_path_buf(),
        None => journal::default_journal_path().map_err(|e| anyhow::anyhow!(e.to_string()))?,
    };
    let j = Journal::open_existing(&path, JournalConfig::default()).map_err(|e| chain(&e))?;
    let q = j
        .queue(queue)
        .map_err(|e| chain(&e))?
        .ok_or_else(|| anyhow::anyhow!(crate::commands::journal::no_queue(&j, queue)))?;
    let until = q.last_observed_at;
    let from =
        quotatop_model::parse_since(window, until).map_err(|e| anyhow::anyhow!("--impact: {e}"))?;
    if from > until {
        anyhow::bail!("--impact {window}: the window would start after it ends");
    }
    let history = journal::history_window(&j, queue, until, until - from).map_err(|e| chain(&e))?;
    let input = journal::scorecard_input(&j, queue, history.window, opts).map_err(|e| chain(&e))?;
    Ok(input.jobs.iter().map(|j| j.share.clone()).collect())
}

/// The proposal's column, named by where it comes from (the file) and, when it has one, the
/// name written in it: `proposed: shares.toml (regulated lends)`. Never a name that claims to
/// be the live configuration.
fn proposed_label(file: &Path, name: Option<&str>) -> String {
    let source = file.file_name().map_or_else(
        || file.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    match name.map(str::trim).filter(|n| !n.is_empty()) {
        Some(n) => format!("proposed: {source} ({n})"),
        None => format!("proposed: {source}"),
    }
}

/// `--impact`: the decision summary of the journal's last `window` of `p.live.queue` replayed
/// under the live shares (the baseline) and under the file's, with the same workload
/// assumptions and rules (the config file's) for both.
pub fn impact(
    p: &Prepared,
    file: &Path,
    journal_path: Option<&Path>,
    window: &str,
    opts: &ScorecardOptions,
    rules: Rules,
) -> anyhow::Result<String> {
    if quotatop_analysis::shares_lint::has_errors(&p.findings) {
        bail!("impact not computed: the shares file has lint errors");
    }
    let t = super::super::journal::trace_from_journal(
        journal_path,
        &JournalWindowArgs {
            queue: Some(p.live.queue.clone()),
            since: window.to_string(),
            until: None,
            ..Default::default()
        },
        opts,
        // Only the trace is used: both sides are the live shares and the file's.
        super::super::journal::Baseline::LastSeen,
    )?;
    let capacity: Vec<CapacityLimit> = if p.live.capacity.is_empty() {
        quotatop_replay::summed_limits(&p.live.quota_shares())
    } else {
        p.live.capacity.clone()
    };
    let cfg = |name: String, shares| ReplayConfig {
        name,
        capacity: capacity.clone(),
        shares,
        workload: Workload::default(),
        rules: rules.clone(),
    };
    let configs = [
        cfg("live".to_string(), p.live.quota_shares()),
        cfg(
            proposed_label(file, p.file.name.as_deref()),
            p.file.valid_shares(),
        ),
    ];
    for c in &configs {
        c.build_engine()
            .map_err(|e| anyhow!("impact: configuration {:?}: {e}", c.name))?;
    }
    let (cmp, mut notes) =
        super::super::replay::comparison_with(None, rules.clone(), &t.trace.jobs, None, false)?;
    notes.insert(
        0,
        format!(
            "Trace: {} job(s) of {} from the journal's last {window}{}; both configurations on the service environment's capacity ({}).",
            t.trace.jobs.len(),
            p.live.queue,
            super::super::journal::left_out_text(&t.trace)
                .map(|l| format!(" ({l})"))
                .unwrap_or_default(),
            capacity
                .iter()
                .map(|c| format!("{} {}", c.instance_type, c.max_capacity))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    );
    let mut outcomes = Vec::new();
    for c in &configs {
        let (o, stuck) = replay_lean(&t.trace.jobs, c, &cmp, &mut |_, _| {})?;
        if !stuck.is_empty() {
            notes.push(format!(
                "{}: {} job(s) can never run (counted as unfinished).",
                c.name,
                stuck.len()
            ));
        }
        outcomes.push(o);
    }
    Ok(report::decision_markdown(
        &outcomes,
        &cmp.rules.decision,
        &notes,
    ))
}
