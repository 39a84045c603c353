//! `quotatop set-priority`: the same validation, preview, API path and audit as the console's
//! priority dialog.

use anyhow::bail;

use crate::cli::SetPriorityArgs;
use crate::config;
use quotatop_actions::{self as actions, ChangeContext, Preview, PriorityPolicy};
use quotatop_analysis::gate::{Act, Classes, Refusal, Subject};
use quotatop_aws::batch::BatchClient;
use quotatop_model::clean_text;
use quotatop_store::audit::{AwsContext, Outcome};

fn settled_config(args: &SetPriorityArgs) -> anyhow::Result<config::Loaded> {
    super::job_change::settled_config("set-priority", args.config.clone(), args.read_only)
}

/// What became of the change, said (and tagged on the job with `--tag-justification`).
async fn report_outcome(
    client: &BatchClient,
    args: &SetPriorityArgs,
    ctx: &ChangeContext,
    preview: &actions::Preview,
    outcome: Outcome,
    log: &quotatop_store::audit::ChangeLog,
) -> anyhow::Result<()> {
    let new = preview.new_priority;
    match outcome {
        Outcome::Succeeded { request_id } => {
            println!(
                "priority of {} set to {} (request {}); recorded in {}",
                clean_text(&preview.job_name),
                new,
                request_id.as_deref().unwrap_or("-"),
                clean_text(&log.to_string())
            );
            if args.tag_justification {
                let (tags, head_warning) =
                    actions::change_tags(preview, &ctx.operator.user, &args.reason, log);
                if let Some(w) = head_warning {
                    eprintln!("warning: {}", clean_text(&w));
                }
                if let Err(e) = client.tag_resource(&preview.job_arn, &tags).await {
                    eprintln!("warning: the change was made but tagging the job failed: {e}");
                }
            }
            Ok(())
        }
        Outcome::Failed { error } => {
            bail!(
                "the API refused the change: {error} (recorded in {})",
                clean_text(&log.to_string())
            )
        }
        // apply_change records the API's answer; a reconciled outcome is never its result.
        Outcome::Reconciled { verdict, .. } => bail!(
            "unexpected outcome {} (recorded in {})",
            verdict.as_str(),
            clean_text(&log.to_string())
        ),
    }
}

pub fn run(args: &SetPriorityArgs) -> anyhow::Result<()> {
    // The policy and read-only mode come from the config file and the environment only: a
    // change cannot loosen its own rules from the command line. A config that cannot be read
    // (or an environment value that cannot be understood) stops the change rather than
    // falling back to defaults.
    let loaded = settled_config(args)?;
    let read_only = loaded.config.read_only;
    if read_only {
        bail!(
            "{}",
            loaded.read_only_refusal("set-priority", "change anything")
        );
    }
    let new = actions::parse_priority(&args.priority)?;
    let policy: PriorityPolicy = loaded.config.priority;
    // The one check every door calls (quotatop_analysis::gate::judge), under the rules built
    // once here; a policy that cannot be read refuses before anything is asked of AWS.
    let rules = super::policy::gate::rules(&loaded, None);
    if let Classes::Unreadable(why) = &rules.classes {
        bail!("{}", Refusal::PolicyUnreadable(why.clone()));
    }
    let log = super::audit::open_change_log(&args.log, loaded.config.store.url.as_deref())?;
    // A torn last line (or a store that cannot be read) would refuse the intent: say so (and
    // how to repair) before any call.
    if !args.dry_run {
        log.check_tail()
            .map_err(|e| anyhow::anyhow!(clean_text(&quotatop_model::error_chain(&e))))?;
    }
    let rt = super::runtime()?;
    rt.block_on(async {
        let (client, snapshot) =
            super::snapshot::connect_and_refresh(&args.aws, &args.queues).await?;
        let operator = super::job_change::operator_for(&client, &rules).await;
        let door = super::policy::gate::door(rules.clone(), &operator);
        let planned = plan(args, &snapshot.queues, &door, new)?;
        let note = quotatop_analysis::preview::model_note(snapshot.source.endpoint.as_deref());
        let together = together(&snapshot.queues, &planned, new)?;
        if !shown_and_confirmed(args, &planned, &together, note)? {
            return Ok(());
        }
        let source = client.source().clone();
        let mut failed = Vec::new();
        // Several jobs are one action: one id links their intents.
        let n = planned.len();
        let batch_id = quotatop_store::audit::new_change_id();
        for (queue, preview, class_stamp) in planned {
            let batch = (n > 1).then(|| actions::Batch {
                id: batch_id.clone(),
                preview: format!(
                    "{} (one of {n} changes confirmed together; {})",
                    preview.summary(),
                    together.get(&queue).map_or("", String::as_str)
                ),
            });
            let ctx = ChangeContext {
                operator: operator.clone(),
                aws: AwsContext::of(&source, None),
                queue,
                justification: args.reason.clone(),
                change_record: args.change_record.clone(),
                read_only,
                policy: Some(policy.describe(&loaded.policy_source())),
                class_policy: class_stamp,
                batch,
            };
            let done = match actions::apply_change(&client, &log, &ctx, &preview).await {
                Ok(outcome) => report_outcome(&client, args, &ctx, &preview, outcome, &log).await,
                Err(e) => Err(anyhow::anyhow!(clean_text(&quotatop_model::error_chain(
                    &e
                )))),
            };
            if let Err(e) = done {
                if args.jobs.len() == 1 {
                    return Err(e);
                }
                // Each job's result is said; a failure does not skip the others.
                eprintln!("{}: {e:#}", clean_text(&preview.job_name));
                failed.push(clean_text(&preview.job_name));
            }
        }
        if !failed.is_empty() {
            bail!(
                "{} of {} changes were not made: {} (each is in the audit log)",
                failed.len(),
                args.jobs.len(),
                failed.join(", ")
            );
        }
        Ok(())
    })
}

/// A change planned: the queue, the preview and the class stamp.
type Planned = (String, Preview, Option<quotatop_store::audit::ClassPolicy>);

/// Every job found, previewed and judged before anything is asked: one refusal refuses the
/// whole command, naming the job.
fn plan(
    args: &SetPriorityArgs,
    queues: &[quotatop_model::QueueSnapshot],
    door: &quotatop_analysis::gate::Door,
    new: u32,
) -> anyhow::Result<Vec<Planned>> {
    let mut planned = Vec::new();
    for name in &args.jobs {
        let (queue, job_id) = find_job(queues, name)?;
        let preview = actions::preview(queue, &job_id, new)?;
        let class_stamp = door
            .judge(
                Act::Priority { new },
                Subject {
                    share: &preview.share,
                    class_tag: preview.class_tag.as_deref(),
                    priority: preview.old_priority,
                },
                &args.reason,
                args.change_record.as_deref(),
            )
            .map_err(|refusal| refused(args.jobs.len(), &preview, refusal))?
            .map(super::policy::gate::stamp);
        planned.push((queue.name.clone(), preview, class_stamp));
    }
    Ok(planned)
}

/// A refusal as the command says it: with several jobs, which one was refused.
fn refused(jobs: usize, preview: &Preview, refusal: Refusal) -> anyhow::Error {
    if jobs == 1 {
        return refusal.into();
    }
    anyhow::anyhow!(
        "{} ({}): {refusal}; none of the {jobs} changes was made",
        clean_text(&preview.job_name),
        preview.job_id
    )
}

/// With several jobs, each queue's combined effect of its changes placed at once
/// ([`quotatop_analysis::preview::combined`]), by queue name; empty for one job.
fn together(
    queues: &[quotatop_model::QueueSnapshot],
    planned: &[Planned],
    new: u32,
) -> anyhow::Result<std::collections::BTreeMap<String, String>> {
    let mut out = std::collections::BTreeMap::new();
    if planned.len() < 2 {
        return Ok(out);
    }
    for q in queues {
        let changes: Vec<(&str, u32)> = planned
            .iter()
            .filter(|(queue, ..)| *queue == q.name)
            .map(|(_, p, _)| (p.job_id.as_str(), new))
            .collect();
        if !changes.is_empty() {
            let c = quotatop_analysis::preview::combined(q, &changes)?;
            out.insert(q.name.clone(), c.summary());
        }
    }
    Ok(out)
}

/// Prints each preview (and its class change), with several jobs their combined effect, then
/// whether to go on: not on a dry run, nor when the operator does not confirm (`--yes`
/// confirms; off a terminal it is required).
fn shown_and_confirmed(
    args: &SetPriorityArgs,
    planned: &[Planned],
    together: &std::collections::BTreeMap<String, String>,
    note: Option<&str>,
) -> anyhow::Result<bool> {
    for (queue, summary) in together {
        println!("{}: {}", clean_text(queue), clean_text(summary));
    }
    if !together.is_empty() {
        println!("each job's own change, computed alone:");
    }
    for (i, (_, preview, class_stamp)) in planned.iter().enumerate() {
        if i > 0 {
            println!();
        }
        print!("{}", render_preview(preview, note));
        if let Some(s) = class_stamp {
            println!(
                "class     {} -> {} (policy sha256 {})",
                s.class_before.as_deref().unwrap_or("-"),
                s.class_after.as_deref().unwrap_or("-"),
                s.hash.get(..12).unwrap_or(&s.hash)
            );
        }
    }
    let question = match planned.len() {
        1 => "Apply this change?".to_string(),
        n => format!("Apply these {n} changes?"),
    };
    super::job_change::confirmed(args.dry_run, args.yes, &question)
}

use super::job_change::find_job;

/// The preview as printed before confirming.
/// `note`: what to say of the prediction's fidelity where the data comes from
/// ([`quotatop_analysis::preview::model_note`]).
pub fn render_preview(p: &Preview, note: Option<&str>) -> String {
    let mut out = format!(
        "job       {} ({})\nshare     {}\npriority  {} -> {}\n",
        clean_text(&p.job_name),
        p.job_id,
        clean_text(&p.share),
        p.old_priority,
        p.new_priority
    );
    if let (Some(a), Some(b)) = (p.old_position, p.new_position) {
        out.push_str(&format!(
            "position  {a} -> {b} of {} waiting in the share\n",
            p.queue_length
        ));
    }
    // The victims are counted in the effect and listed one per line; "up to N of" only for
    // ties the snapshot cannot settle.
    out.push_str(&format!("effect    {}", clean_text(&p.effect_headline())));
    out.push_str(if p.preemptions.is_empty() {
        "\n"
    } else {
        ":\n"
    });
    for v in &p.preemptions.candidates {
        out.push_str(&format!(
            "          - {} (priority {}, {}x {}, running {}, {:.2} instance-h{})\n",
            clean_text(&v.name),
            v.priority,
            v.instance_count,
            v.instance_type,
            quotatop_model::format_duration(v.running_ms),
            v.instance_hours_at_risk,
            if v.kind == quotatop_engine::PreemptionKind::CrossShare {
                ", cross-share"
            } else {
                ""
            }
        ));
    }
    if let Some(note) = note {
        out.push_str(&format!("note      {note}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use quotatop_analysis::fixture::{job, queue};
    use quotatop_model::{JobStatus, SharingConfig};

    const P4: &str = "ml.p4d.24xlarge";

    /// Two running jobs the API cannot order: "up to 1 of 2", both listed one per line; a
    /// settled victim is named without "up to"; the note is printed when given (against AWS).
    #[test]
    fn up_to_only_for_ties_and_the_note_when_given() {
        let mut q = queue(&[("s", P4, 2, SharingConfig::reserve())]);
        q.shares[0] = q.shares[0].clone().with_in_share_preemption(true);
        let mut x = job("x", "s", P4, 1, JobStatus::Running, 1, 0);
        std::sync::Arc::make_mut(&mut x.job).started_at = Some(500_000);
        let mut y = job("y", "s", P4, 1, JobStatus::Running, 1, 0);
        std::sync::Arc::make_mut(&mut y.job).started_at = Some(500_000);
        q.jobs = vec![x, y, job("target", "s", P4, 1, JobStatus::Runnable, 0, 10)];
        let tied = actions::preview(&q, "id-target", 5).unwrap();
        let out = render_preview(&tied, Some("as modelled: test"));
        assert!(
            out.contains("in-share preemption of up to 1 of 2 running jobs"),
            "{out}"
        );
        assert!(out.contains("- x (") && out.contains("- y ("), "{out}");
        assert!(out.contains("note      as modelled: test"), "{out}");

        std::sync::Arc::make_mut(&mut q.jobs[1].job).started_at = Some(400_000);
        let settled = actions::preview(&q, "id-target", 5).unwrap();
        let out = render_preview(&settled, None);
        assert!(
            out.contains("in-share preemption of 1 running job ("),
            "{out}"
        );
        assert!(!out.contains("up to") && !out.contains("note"), "{out}");
        assert!(out.contains("- x (") && !out.contains("- y ("), "{out}");
    }
}
