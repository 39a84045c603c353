//! `quotatop shares apply`: the plan, the checks (lint, deletions, change record, read-only),
//! a confirmation, then the calls, each audited before and after.

use std::collections::BTreeMap;

use anyhow::{anyhow, bail};

use crate::cli::SharesApplyArgs;
use quotatop_actions::{ApplyReport, LiveShares, SharesContext, apply_plan, verdict_words};
use quotatop_analysis::shares_lint::has_errors;
use quotatop_analysis::shares_plan::Step;
use quotatop_aws::batch::BatchClient;
use quotatop_model::clean_text;
use quotatop_store::audit::{AwsContext, Operator, Outcome, Verdict};

use super::plan::{load_config, print_lines, render};

/// A plan that would delete shares without `--allow-delete`, or lacks the change record the
/// policy asks for, is refused before anything is called.
fn check_steps(
    args: &SharesApplyArgs,
    policy: quotatop_analysis::shares_plan::SharesPolicy,
    steps: &[Step],
) -> anyhow::Result<()> {
    let deleted: Vec<&str> = steps
        .iter()
        .filter(|s| matches!(s, Step::Delete(_)))
        .map(Step::share)
        .collect();
    if !deleted.is_empty() && !args.allow_delete {
        bail!(
            "the file no longer has share(s) {}: deleting a share terminates its jobs; pass --allow-delete to disable and delete, or add them back; nothing changed",
            deleted.join(", ")
        );
    }
    if let Some(why) = policy.missing_change_record(steps, args.change_record.as_deref()) {
        bail!("{why}; nothing changed");
    }
    Ok(())
}

/// Whether a step changes what a share is entitled to (its limits, or the share itself).
fn changes_limits(step: &Step) -> bool {
    match step {
        Step::Create(_) | Step::Disable(_) | Step::Delete(_) => true,
        Step::Update { fields, .. } => fields.iter().any(|f| f.field == "capacityLimits"),
    }
}

/// The owners' approval the policy beside the config asks for a change of shares' limits
/// (`[owners]`): refused without one of each changed share's owners, before any call or
/// record; when given, the approver goes into every record's `class_policy`.
fn owners_approval(
    args: &SharesApplyArgs,
    config: Option<&std::path::Path>,
    steps: &[Step],
    stamp: Option<quotatop_store::audit::ClassPolicy>,
) -> anyhow::Result<Option<quotatop_store::audit::ClassPolicy>> {
    let Some(policy) = crate::commands::policy::for_changes(config)? else {
        if args.approved_by.is_some() {
            bail!(
                "--approved-by: there is no policy (policy.toml beside the config file) naming the shares' owners, so no approval can be checked; leave it out or write the policy; nothing changed"
            );
        }
        return Ok(stamp);
    };
    let shares: Vec<&str> = steps
        .iter()
        .filter(|s| changes_limits(s))
        .map(Step::share)
        .collect();
    match quotatop_policy::limit_approval(&policy, &shares, args.approved_by.as_deref()) {
        quotatop_policy::Approval::NotNeeded => Ok(stamp),
        quotatop_policy::Approval::Refused { rule } => bail!(
            "refused by the policy {} (sha256 {}): {}; nothing changed",
            policy.origin,
            policy.short_hash(),
            clean_text(&rule)
        ),
        quotatop_policy::Approval::Approved { by } => {
            let base = stamp.unwrap_or(quotatop_store::audit::ClassPolicy {
                hash: policy.hash.clone(),
                class_before: None,
                class_after: None,
                approved_by: None,
            });
            Ok(Some(quotatop_store::audit::ClassPolicy {
                approved_by: Some(by),
                ..base
            }))
        }
    }
}

/// Makes the plan's calls, each audited, and says what was applied and what was not.
async fn carry_out(
    client: &BatchClient,
    args: &SharesApplyArgs,
    loaded: &crate::config::Loaded,
    policy: quotatop_analysis::shares_plan::SharesPolicy,
    p: &super::Prepared,
    log: &quotatop_store::audit::ChangeLog,
    class_policy: Option<quotatop_store::audit::ClassPolicy>,
) -> anyhow::Result<()> {
    let source = client.source().clone();
    let ctx = SharesContext {
        change: quotatop_actions::ChangeContext {
            operator: Operator::current(),
            aws: AwsContext::of(&source, None),
            queue: p.live.queue.clone(),
            justification: args.reason.clone(),
            change_record: args.change_record.clone(),
            read_only: loaded.config.read_only,
            policy: Some(policy.describe(&loaded.policy_source())),
            class_policy,
            batch: None,
        },
        run_id: quotatop_store::audit::new_change_id(),
    };
    let api = LiveShares {
        client,
        queue: args.plan.queue.clone(),
        arns: p
            .live
            .shares
            .iter()
            .map(|s| (s.share.name.clone(), s.arn.clone()))
            .collect::<BTreeMap<_, _>>(),
    };
    let report = apply_plan(&api, log, &ctx, &p.steps)
        .await
        .map_err(|e| anyhow!(clean_text(&quotatop_model::error_chain(&e))))?;
    print_lines(&report_text(
        &report,
        &ctx.run_id,
        &clean_text(&log.to_string()),
    ));
    if report.complete() {
        Ok(())
    } else {
        bail!(
            "stopped after {} of {} call(s); see above for what was applied and what was not",
            report.done.len(),
            p.steps.len()
        )
    }
}

pub fn run(args: &SharesApplyArgs) -> anyhow::Result<()> {
    run_with(args, None)
}

/// [`run`] under a class policy (`policy apply`): its hash goes into every record.
pub fn run_with(
    args: &SharesApplyArgs,
    class_policy: Option<quotatop_store::audit::ClassPolicy>,
) -> anyhow::Result<()> {
    let plan_args = &args.plan;
    // The policy and read-only mode come from the config file and the environment: a change
    // cannot loosen its own rules from the command line.
    let loaded = load_config(plan_args.config.as_deref(), args.read_only, true)?;
    if loaded.config.read_only {
        bail!(
            "{}",
            loaded.read_only_refusal("shares apply", "change anything")
        );
    }
    if args.reason.trim().is_empty() {
        bail!("--reason is required: say why (it is kept in the audit log)");
    }
    let opts = loaded.config.scorecard_options().1;
    let policy = loaded.config.shares;
    let log = super::super::audit::open_change_log(&args.log, loaded.config.store.url.as_deref())?;
    // A torn last line (or a store that cannot be read) would refuse the intents: say so (and
    // how to repair) before any call.
    log.check_tail()
        .map_err(|e| anyhow!(clean_text(&quotatop_model::error_chain(&e))))?;
    // One run per queue at a time, from before the live shares are read until the last
    // outcome: a second run waits for nothing and plans from nothing stale; it is refused.
    let _queue_lock = log
        .lock_queue(&plan_args.queue)
        .map_err(|e| anyhow!(clean_text(&quotatop_model::error_chain(&e))))?;
    let rt = super::super::runtime()?;
    rt.block_on(async {
        let client =
            BatchClient::connect(super::super::snapshot::connect_options(&plan_args.aws)).await?;
        let p = super::prepare(&client, plan_args, &opts).await?;
        print_lines(&render(&p, &plan_args.file.display().to_string()));
        if has_errors(&p.findings) {
            bail!(
                "{}: the shares file has lint errors; nothing changed",
                plan_args.file.display()
            );
        }
        if let Some(window) = &plan_args.impact {
            let text = super::impact::impact(
                &p,
                &plan_args.file,
                plan_args.journal.as_deref(),
                window,
                &opts,
                loaded.config.rules(),
            )?;
            print_lines(&format!("\n{text}"));
        }
        if p.steps.is_empty() {
            println!("nothing to apply");
            return Ok(());
        }
        check_steps(args, policy, &p.steps)?;
        let class_policy = owners_approval(args, loaded.path.as_deref(), &p.steps, class_policy)?;
        if !args.yes
            && !crate::commands::confirm(
                &format!("Apply these {} call(s)?", p.steps.len()),
                "not on a terminal: pass --yes to confirm the change; nothing changed",
            )?
        {
            println!("cancelled: nothing changed");
            return Ok(());
        }
        carry_out(&client, args, &loaded, policy, &p, &log, class_policy).await
    })
}

/// What happened to each call, as printed after the run.
pub fn report_text(r: &ApplyReport, run_id: &str, log: &str) -> String {
    let mut out = String::from("\n");
    for (step, outcome) in &r.done {
        match outcome {
            Outcome::Succeeded { request_id } => out.push_str(&format!(
                "applied      {} {} ({}, request {})\n",
                step.verb(),
                step.share(),
                step.call(),
                request_id.as_deref().unwrap_or("-")
            )),
            Outcome::Failed { error } => out.push_str(&format!(
                "FAILED       {} {} ({}): {error}\n",
                step.verb(),
                step.share(),
                step.call()
            )),
            Outcome::Reconciled {
                verdict,
                observed,
                call_error,
                ..
            } => out.push_str(&format!(
                "{:<12} {} {} ({}): {}; the call answered: {}; read back: {}\n",
                match verdict {
                    Verdict::Landed | Verdict::LandedLate => "applied",
                    Verdict::DidNotLand => "FAILED",
                    Verdict::Undecidable | Verdict::JobGone => "UNKNOWN",
                },
                step.verb(),
                step.share(),
                step.call(),
                verdict_words(*verdict),
                call_error.as_deref().unwrap_or("-"),
                observed.as_deref().unwrap_or("-")
            )),
        }
    }
    if let Some((step, what)) = &r.changed {
        out.push_str(&format!(
            "CHANGED      {} {} ({}) not called: {what}; plan again\n",
            step.verb(),
            step.share(),
            step.call()
        ));
    }
    for step in r
        .not_attempted
        .iter()
        .skip(usize::from(r.changed.is_some()))
    {
        out.push_str(&format!(
            "not attempted {} {} ({})\n",
            step.verb(),
            step.share(),
            step.call()
        ));
    }
    if let Some(e) = &r.audit_error {
        out.push_str(&format!("audit log: {e}\n"));
    }
    out.push_str(&format!("recorded in {log} (run {run_id})\n"));
    out
}
