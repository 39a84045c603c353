//! What `set-priority`, `terminate` and `requeue` share: the settings a change is made under,
//! finding a job in the snapshot, and the audit log it is written to.

use anyhow::bail;

use crate::cli::AuditLogArg;
use crate::config;
use quotatop_analysis::gate::{Classes, Refusal, Rules};
use quotatop_model::{QueueSnapshot, clean_text};
use quotatop_store::audit::ChangeLog;

/// The settings a change is made under: from the config file and the environment only (a
/// change cannot loosen its own rules from the command line); any doubt about them stops it.
/// `command` names the command in the refusal.
pub fn settled_config(
    command: &str,
    config_path: Option<std::path::PathBuf>,
    read_only: bool,
) -> anyhow::Result<config::Loaded> {
    let loaded = config::load(&config::Overrides {
        config_path,
        read_only,
        ..config::Overrides::default()
    });
    if !loaded.warnings.is_empty() {
        bail!(
            "{command} changes nothing while its settings are in doubt: {}",
            // The console goes on with defaults; a change does not, so the console's
            // "using defaults" / "ignored" endings would be wrong here.
            loaded
                .warnings
                .iter()
                .map(|w| w
                    .trim_end_matches("; using defaults (changes are refused until it is fixed)")
                    .trim_end_matches("; using defaults")
                    .trim_end_matches("; ignored"))
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    Ok(loaded)
}

/// Everything a change needs before AWS is asked: the settled config (read-only refused
/// here, with how it was set), the gate's rules (a policy that cannot be read refuses here)
/// and the audit log (its tail checked unless `dry_run`).
pub struct Prepared {
    pub loaded: config::Loaded,
    pub rules: Rules,
    pub log: ChangeLog,
}

impl Prepared {
    /// The context a termination or requeue is made in: by `operator` through a client of
    /// `source`, judged by these rules.
    pub fn context(
        &self,
        source: &quotatop_model::Source,
        operator: quotatop_store::audit::Operator,
        reason: &str,
        change_record: Option<&str>,
    ) -> quotatop_actions::ActContext {
        quotatop_actions::ActContext {
            door: super::policy::gate::door(self.rules.clone(), &operator),
            operator,
            aws: quotatop_store::audit::AwsContext::of(source, None),
            justification: reason.to_string(),
            change_record: change_record.map(str::to_string),
            policy: Some(
                self.loaded
                    .config
                    .priority
                    .describe(&self.loaded.policy_source()),
            ),
        }
    }
}

/// [`Prepared`] for `command` (`does`: what read-only mode refuses it, in words).
pub fn prepare(
    command: &str,
    config_path: Option<std::path::PathBuf>,
    read_only: bool,
    log: &AuditLogArg,
    dry_run: bool,
) -> anyhow::Result<Prepared> {
    let loaded = settled_config(command, config_path, read_only)?;
    if loaded.config.read_only {
        bail!("{}", loaded.read_only_refusal(command, "change anything"));
    }
    let rules = super::policy::gate::rules(&loaded, None);
    if let Classes::Unreadable(why) = &rules.classes {
        bail!("{}", Refusal::PolicyUnreadable(why.clone()));
    }
    let log = super::audit::open_change_log(log, loaded.config.store.url.as_deref())?;
    // A torn last line (or a store that cannot be read) would refuse the intent: say so (and
    // how to repair) before any call.
    if !dry_run {
        log.check_tail()
            .map_err(|e| anyhow::anyhow!(clean_text(&quotatop_model::error_chain(&e))))?;
    }
    Ok(Prepared { loaded, rules, log })
}

/// Finds the job by id, ARN or name (a name must be unique among unfinished jobs).
pub fn find_job<'a>(
    queues: &'a [QueueSnapshot],
    key: &str,
) -> anyhow::Result<(&'a QueueSnapshot, String)> {
    let mut by_name = Vec::new();
    for q in queues {
        for j in &q.jobs {
            if j.job.id == key || j.arn == key {
                return Ok((q, j.job.id.clone()));
            }
            if j.job.name == key && !j.job.status.is_terminal() {
                by_name.push((q, j.job.id.clone()));
            }
        }
    }
    match by_name.len() {
        1 => Ok(by_name.remove(0)),
        0 => bail!(
            "no job {:?} among the jobs of the watched queues (give its id or ARN, or --queue)",
            clean_text(key)
        ),
        n => bail!(
            "{n} unfinished jobs are named {:?}: give the job id",
            clean_text(key)
        ),
    }
}

/// Whether to go on after the preview: not on a dry run, nor when the operator does not
/// confirm `question` (`yes` confirms; off a terminal it is required).
pub fn confirmed(dry_run: bool, yes: bool, question: &str) -> anyhow::Result<bool> {
    if dry_run {
        println!("dry run: nothing changed");
        return Ok(false);
    }
    if !yes
        && !crate::commands::confirm(
            question,
            "not on a terminal: pass --yes to confirm the change",
        )?
    {
        println!("cancelled: nothing changed");
        return Ok(false);
    }
    Ok(true)
}

/// The operator a change is made as: the AWS principal is asked for when a class policy may
/// name operators by it.
pub async fn operator_for(
    client: &quotatop_aws::batch::BatchClient,
    rules: &quotatop_analysis::gate::Rules,
) -> quotatop_store::audit::Operator {
    let mut operator = quotatop_store::audit::Operator::current();
    if crate::commands::policy::gate::needs_principal(rules) {
        operator.aws_principal = Some(match client.caller_identity().await {
            Ok(arn) => arn,
            Err(why) => format!("unknown ({why})"),
        });
    }
    operator
}
