//! `quotatop policy lint / init`: the organisation's policy as a file (docs/policy.md).

use std::path::PathBuf;

use anyhow::{Context as _, bail};

use crate::cli::{
    PolicyCheckArgs, PolicyCommand, PolicyFileArgs, PolicyInitArgs, PolicyLintArgs, ReportArgs,
    ReportFormat,
};
use quotatop_aws::batch::BatchClient;
use quotatop_model::QuotaShare;
use quotatop_policy::Policy;

pub mod gate;
mod plan;

pub fn run(cmd: &PolicyCommand) -> anyhow::Result<()> {
    match cmd {
        PolicyCommand::Lint(a) => lint(a),
        PolicyCommand::Init(a) => init(a),
        PolicyCommand::Check(a) => check(a),
        PolicyCommand::Plan(a) => plan::plan(a),
        PolicyCommand::Apply(a) => plan::apply(a),
    }
}

/// The policy's name for the files it lives beside.
pub const POLICY_FILE: &str = "policy.toml";

/// Where the policy is: `--policy`, else `policy.toml` beside the config file (`--config`,
/// QUOTATOP_CONFIG, or the user's config directory); `None` when there is no config directory.
pub fn policy_path(args: &PolicyFileArgs) -> Option<PathBuf> {
    if let Some(p) = &args.policy {
        return Some(p.clone());
    }
    let loaded = crate::config::load(&crate::config::Overrides {
        config_path: args.config.clone(),
        ..Default::default()
    });
    let config = loaded.path?;
    Some(
        config
            .parent()
            .map_or_else(|| PathBuf::from(POLICY_FILE), |d| d.join(POLICY_FILE)),
    )
}

/// The policy named by `args`; a missing default file is an error saying how to write one.
pub fn load(args: &PolicyFileArgs) -> anyhow::Result<Policy> {
    let Some(path) = policy_path(args) else {
        bail!("no policy file: there is no config directory here; pass --policy FILE");
    };
    if args.policy.is_none() && !path.exists() {
        bail!(
            "no policy file at {}: write one with `quotatop policy init --queue Q > {}` and edit it, or pass --policy FILE",
            path.display(),
            path.display()
        );
    }
    Ok(quotatop_policy::read(&path)?)
}

/// The policy changes are checked against: `policy.toml` beside the config file (never a
/// command-line path: a change cannot pick its own rules), when it exists. One that exists but
/// cannot be read refuses the change, as a broken config file does.
pub fn for_changes(config: Option<&std::path::Path>) -> anyhow::Result<Option<Policy>> {
    let Some(path) = policy_path(&PolicyFileArgs {
        policy: None,
        config: config.map(std::path::Path::to_path_buf),
    }) else {
        return Ok(None);
    };
    if !path.exists() {
        return Ok(None);
    }
    quotatop_policy::read(&path)
        .map(Some)
        .context("changes are refused while the policy cannot be read")
}

/// A priority change judged by `policy`: the audit's class stamp, or the refusal naming the
/// rule. `operator` names the OS user and, when known, the AWS principal. `tag` is the job's
/// `quotatop:class` tag (the snapshot's, or the template's for a job about to be submitted):
/// membership reads it first here as everywhere ([`quotatop_policy::class_of`]).
pub fn judge_change(
    policy: &Policy,
    tag: Option<&str>,
    share: &str,
    old: Option<u32>,
    new: u32,
    operator: &quotatop_store::audit::Operator,
    change_record: bool,
) -> anyhow::Result<quotatop_store::audit::ClassPolicy> {
    let user_host = format!("{}@{}", operator.user, operator.host);
    let mut who = vec![operator.user.as_str(), user_host.as_str()];
    if let Some(p) = operator.aws_principal.as_deref() {
        who.push(p);
    }
    let v = quotatop_policy::check_change(
        policy,
        &quotatop_policy::ChangeRequest {
            tag,
            share,
            old,
            new,
            who: &who,
            change_record,
        },
    );
    if let Some(rule) = v.refusal {
        bail!(
            "refused by the policy {} (sha256 {}): {rule}; nothing changed",
            policy.origin,
            policy.short_hash()
        );
    }
    Ok(quotatop_store::audit::ClassPolicy {
        hash: v.policy_hash,
        class_before: Some(v.class_before),
        class_after: Some(v.class_after),
        approved_by: None,
    })
}

fn lint(args: &PolicyLintArgs) -> anyhow::Result<()> {
    let policy = load(&args.file)?;
    let (shares, against): (Option<Vec<QuotaShare>>, String) = match (&args.queue, &args.shares) {
        (Some(queue), _) => {
            let rt = super::runtime()?;
            let live = rt.block_on(async {
                let client =
                    BatchClient::connect(super::snapshot::connect_options(&args.aws)).await?;
                super::shares::live(&client, queue).await
            })?;
            let against = format!("checked against the live shares of queue {}", live.queue);
            (Some(live.quota_shares()), against)
        }
        (None, Some(file)) => {
            let f = super::shares::read_file(file)?;
            let against = format!("checked against the shares file {}", file.display());
            (Some(f.valid_shares()), against)
        }
        (None, None) => (
            None,
            "shares not checked (pass --queue Q or --shares FILE to check them)".to_string(),
        ),
    };
    let findings = quotatop_policy::lint(&policy, shares.as_deref());
    let errors = quotatop_policy::errors(&findings);
    let mut out = format!(
        "policy {} (version {}, sha256 {}): {} class(es); {against}\n\n",
        policy.origin,
        policy.version,
        policy.short_hash(),
        policy.classes.len(),
    );
    out.push_str(&quotatop_policy::classes_table(&policy));
    out.push('\n');
    for f in &findings {
        out.push_str(&f.line());
        out.push('\n');
    }
    out.push_str(&format!(
        "{errors} error(s), {} warning(s)\n",
        findings.len() - errors
    ));
    super::print_clean_lines(&out)?;
    if errors > 0 {
        bail!(
            "{}: {errors} lint error(s); fix them before the policy is used",
            policy.origin
        );
    }
    Ok(())
}

fn init(args: &PolicyInitArgs) -> anyhow::Result<()> {
    let loaded = super::shares::plan::load_config(args.config.as_deref(), false, false)?;
    let rt = super::runtime()?;
    let live = rt.block_on(async {
        let client = BatchClient::connect(super::snapshot::connect_options(&args.aws)).await?;
        super::shares::live(&client, &args.queue).await
    })?;
    let shares = live.quota_shares();
    let text = quotatop_policy::init(&quotatop_policy::Today {
        queue: &live.queue,
        shares: &shares,
        deadlines: &loaded.config.deadlines,
        budgets: &loaded.config.budgets,
    });
    // What init writes must read back: a file it cannot read would be worse than none.
    quotatop_policy::parse(&text, "the generated policy")
        .context("policy init wrote a policy it cannot read back (a bug: please report it)")?;
    super::print_clean_lines(&text)
}

/// The journal window `policy check`, `/metrics` and the console's Policy screen read: `queue`
/// over `since` back from its last observation, with the priority changes' operators from
/// `audit_log`; default scorecard options, so all three judge the same way.
pub fn window_args(
    queue: &str,
    since: &str,
    journal: Option<PathBuf>,
    audit_log: Option<PathBuf>,
    config: Option<PathBuf>,
) -> ReportArgs {
    ReportArgs {
        queue: queue.to_string(),
        since: since.to_string(),
        format: ReportFormat::Md,
        journal,
        checkpoint: Vec::new(),
        gpus: Vec::new(),
        restart_cost: "0s".into(),
        recovery_window: "24h".into(),
        audit_log,
        config,
        policy: None,
        store: super::store::StoreArgs::default(),
    }
}

/// The window `/metrics` and the console judge the policy over: the scorecard's
/// (`[scorecard] window_hours`), as `--since` reads it.
pub fn window(config: &crate::config::Config) -> String {
    format!("{}h", config.scorecard.window_hours.max(1))
}

/// The one way the policy is judged over a journal's window (what `policy check`, `/metrics`
/// and the console's Policy screen show): the policy's conformance function over the window's
/// histories, the priority changes and the jobs' class tags.
pub fn judge(policy: &Policy, args: &ReportArgs) -> anyhow::Result<quotatop_policy::Conformance> {
    let opts = super::report::options(args)?;
    let data = super::report::window_data(args, &opts)?;
    conformance_of(policy, &data, &opts)
}

/// [`judge`] over a window already read (`report` reads it once for all its sections): the
/// jobs' class tags as the journal recorded them (none for jobs recorded before it kept them:
/// their class comes from their share or priority).
pub fn conformance_of(
    policy: &Policy,
    data: &super::report::WindowData,
    opts: &quotatop_analysis::scorecard::ScorecardOptions,
) -> anyhow::Result<quotatop_policy::Conformance> {
    let tags = data
        .journal
        .class_tags(&data.input.queue, data.input.window.start)
        .context("reading the jobs' class tags from the journal")?;
    Ok(quotatop_policy::conformance(
        policy,
        &data.input,
        opts,
        &data.changes,
        &tags,
    ))
}

/// `policy check`: the one conformance function over the journal's window, as `report` shows
/// it; non-zero exit when anything is breached.
fn check(args: &PolicyCheckArgs) -> anyhow::Result<()> {
    let policy = load(&args.file)?;
    // One window: without --since, the one the console's Policy screen and /metrics use.
    let since = match &args.since {
        Some(s) => s.clone(),
        None => {
            let loaded = crate::config::load(&crate::config::Overrides {
                config_path: args.file.config.clone(),
                ..Default::default()
            });
            // A window read from defaults the user did not ask for would judge another span
            // than the console's: refuse rather than guess.
            if let Some(why) = &loaded.broken {
                anyhow::bail!(
                    "cannot tell the window to judge over: {why}; fix the config file or give \
                     --since (e.g. --since 24h)"
                );
            }
            for w in &loaded.warnings {
                eprintln!("quotatop policy check: {}", quotatop_model::clean_text(w));
            }
            window(&loaded.config)
        }
    };
    let mut report = window_args(
        &args.queue,
        &since,
        args.journal.clone(),
        args.audit_log.clone(),
        args.file.config.clone(),
    );
    report.policy = args.file.policy.clone();
    let c = judge(&policy, &report)?;
    super::print_clean_lines(&quotatop_policy::markdown(&c, &policy))?;
    let breaches: usize = c.classes.iter().map(|k| k.breaches()).sum();
    if breaches > 0 {
        let classes: Vec<&str> = c
            .classes
            .iter()
            .filter(|k| k.breaches() > 0)
            .map(|k| k.class.as_str())
            .collect();
        bail!(
            "the policy is breached {breaches} time(s) in {} over the last {}: see above",
            classes.join(", "),
            since.trim()
        );
    }
    Ok(())
}

/// Breaches per (queue, class) over the last `window` of the journal at `journal` (a file or
/// a team's store), as `policy check` counts them (the same window read and the same
/// conformance function): what `record --metrics-addr` exports. A queue the journal cannot
/// read is left out.
pub fn breaches(
    journal: &quotatop_store::StoreLocation,
    audit_log: Option<&std::path::Path>,
    policy: &Policy,
    queues: &[String],
    window: &str,
) -> Vec<(String, String, usize)> {
    let mut out = Vec::new();
    for queue in queues {
        let args = window_args(
            queue,
            window,
            None,
            audit_log.map(std::path::Path::to_path_buf),
            None,
        );
        let judged = super::report::options(&args).and_then(|opts| {
            let data = super::report::window_data_at(journal, &args, &opts)?;
            conformance_of(policy, &data, &opts)
        });
        match judged {
            Ok(c) => out.extend(
                c.breaches_by_class()
                    .into_iter()
                    .map(|(class, n)| (queue.clone(), class, n)),
            ),
            Err(e) => {
                tracing::warn!(queue = %queue, error = %format!("{e:#}"), "policy breaches not computed")
            }
        }
    }
    out
}
