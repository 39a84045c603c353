//! `quotatop policy plan / apply`: the shares the policy asks for, through `shares plan` and
//! `shares apply` (their diff, lint, confirmation and audit), with the policy's hash in every
//! audit record.

use anyhow::bail;

use crate::cli::{AuditLogArg, PolicyApplyArgs, PolicyPlanArgs, SharesApplyArgs, SharesPlanArgs};
use quotatop_aws::batch::BatchClient;

/// The derived shares written as a shares file in a private temporary directory (removed when
/// dropped), with what the policy asks of each share printed first.
fn derived_file(
    args: &PolicyPlanArgs,
) -> anyhow::Result<(tempfile::TempDir, quotatop_policy::Policy)> {
    let policy = super::load(&args.file)?;
    let rt = super::super::runtime()?;
    let live = rt.block_on(async {
        let client =
            BatchClient::connect(super::super::snapshot::connect_options(&args.aws)).await?;
        super::super::shares::live(&client, &args.queue).await
    })?;
    let derived = quotatop_policy::derive_shares(&policy, &live.quota_shares());
    // Linted against the shares it would make: what the plan fixes (a protected class in a
    // lending share) is no error, what it cannot (a class with no share) is.
    let shares: Vec<quotatop_model::QuotaShare> = derived.iter().map(|d| d.share.clone()).collect();
    let findings = quotatop_policy::lint(&policy, Some(&shares));
    let errors = quotatop_policy::errors(&findings);
    if errors > 0 {
        let lines: Vec<String> = findings
            .iter()
            .map(quotatop_policy::Finding::line)
            .collect();
        bail!(
            "{}: {errors} lint error(s) even with the shares it asks for; fix the policy first:\n{}",
            policy.origin,
            lines.join("\n")
        );
    }
    let mut out = format!(
        "policy {} (sha256 {}) asks of queue {}:\n",
        policy.origin,
        policy.short_hash(),
        live.queue
    );
    for d in &derived {
        out.push_str(&format!("- {}: {}\n", d.share.name, d.why.join("; ")));
    }
    super::super::print_clean_lines(&out)?;
    let text = quotatop_replay::shares_file::write(
        &format!("{} under policy {}", live.queue, policy.short_hash()),
        &[format!("The shares policy {} asks for.", policy.origin)],
        &live.capacity,
        &shares,
    );
    let dir = tempfile::Builder::new()
        .prefix("quotatop-policy-")
        .tempdir()?;
    std::fs::write(dir.path().join("shares.toml"), text)?;
    Ok((dir, policy))
}

fn shares_args(args: &PolicyPlanArgs, dir: &tempfile::TempDir) -> SharesPlanArgs {
    SharesPlanArgs {
        queue: args.queue.clone(),
        file: dir.path().join("shares.toml"),
        impact: None,
        journal: None,
        config: args.file.config.clone(),
        aws: args.aws.clone(),
    }
}

pub fn plan(args: &PolicyPlanArgs) -> anyhow::Result<()> {
    let (dir, _) = derived_file(args)?;
    super::super::shares::plan::run(&shares_args(args, &dir))
}

pub fn apply(args: &PolicyApplyArgs) -> anyhow::Result<()> {
    let (dir, policy) = derived_file(&args.plan)?;
    let apply = SharesApplyArgs {
        plan: shares_args(&args.plan, &dir),
        reason: args.reason.clone(),
        change_record: args.change_record.clone(),
        // The policy's shares keep their limits: no owner's approval is asked.
        approved_by: None,
        yes: args.yes,
        allow_delete: false,
        read_only: args.read_only,
        log: AuditLogArg {
            log: args.log.log.clone(),
            store: args.log.store.clone(),
            store_log: args.log.store_log.clone(),
            lock_timeout: args.log.lock_timeout,
        },
    };
    super::super::shares::apply::run_with(
        &apply,
        Some(quotatop_store::audit::ClassPolicy {
            hash: policy.hash.clone(),
            class_before: None,
            class_after: None,
            approved_by: None,
        }),
    )
}
