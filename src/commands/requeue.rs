//! `quotatop requeue`: a copy of a job with a retry cap, then the original terminated — one
//! audited change, made by `quotatop_actions::requeue`, behind the same gate, preview and
//! confirmation as every change.

use anyhow::bail;

use crate::cli::RequeueArgs;
use quotatop_actions::{self as actions, Ended, JobTarget};
use quotatop_analysis::gate::{Act, Subject};
use quotatop_analysis::preview::terminate_preview;
use quotatop_aws::batch::JobSpec;
use quotatop_model::{clean_text, format_duration};

use super::job_change::{confirmed, find_job, prepare};

pub fn run(args: &RequeueArgs) -> anyhow::Result<()> {
    let prepared = prepare(
        "requeue",
        args.config.clone(),
        args.read_only,
        &args.log,
        args.dry_run,
    )?;
    let (_, opts) = prepared.loaded.config.scorecard_options();
    let rt = super::runtime()?;
    rt.block_on(async {
        let (client, snapshot) =
            super::snapshot::connect_and_refresh(&args.aws, &args.queues).await?;
        let (queue, id) = find_job(&snapshot.queues, &args.job)?;
        let Some(tracked) = queue.jobs.iter().find(|t| t.job.id == id) else {
            bail!("job {id} left the snapshot");
        };
        let operator = super::job_change::operator_for(&client, &prepared.rules).await;
        let ctx = prepared.context(
            client.source(),
            operator,
            &args.reason,
            args.change_record.as_deref(),
        );
        let act = Act::Requeue {
            retry_limit: args.retry_limit,
        };
        ctx.door.judge(
            act,
            Subject {
                share: &tracked.job.share,
                class_tag: tracked.job.class_tag.as_deref(),
                priority: tracked.job.priority,
            },
            &args.reason,
            args.change_record.as_deref(),
        )?;
        // The copy is made from what DescribeServiceJob returns: a job whose payload cannot be
        // read is refused here, before anything is written.
        let spec = client.describe_job_spec(&id).await?;
        actions::copy_request(&spec, args.retry_limit, "preview")
            .map_err(|e| anyhow::anyhow!(clean_text(&e)))?;
        let loss = terminate_preview(queue, &[id.as_str()], &opts)?;
        let lost = loss
            .lost_gpu_hours()
            .map_or("unknown GPU-h".to_string(), |h| format!("{h:.2} GPU-h"));
        print!("{}", render_preview(&spec, args.retry_limit, &loss, tracked));
        let words = format!(
            "requeue {} with preemptionRetriesBeforeTermination {} (was {}); the original's termination throws away {lost} since its last checkpoint",
            spec.name,
            args.retry_limit,
            spec.preemption_retries
                .map_or("unlimited".to_string(), |n| n.to_string())
        );
        if !confirmed(args.dry_run, args.yes, "Requeue this job?")? {
            return Ok(());
        }
        let target = JobTarget::of(&queue.name, tracked, words);
        let done = actions::requeue(&client, &prepared.log, &ctx, &target, args.retry_limit)
            .await
            .map_err(|e| anyhow::anyhow!(clean_text(&quotatop_model::error_chain(&e))))?;
        println!(
            "{} ({}): {}{}",
            clean_text(&target.name),
            target.id,
            done.result.describe(),
            done.copy
                .as_deref()
                .map(|c| format!("; copy {c}"))
                .unwrap_or_default()
        );
        println!(
            "recorded in {} (change {})",
            clean_text(&prepared.log.to_string()),
            done.change_id
        );
        match done.result {
            r if r.took_effect() => Ok(()),
            Ended::Unknown(_) => bail!("the requeue's outcome is unknown: run `quotatop audit reconcile`"),
            _ => bail!("the job was not requeued (see above; the change is in the audit log)"),
        }
    })
}

/// The requeue's preview: the job, its preemptions and cap now, the copy that replaces it,
/// and what terminating the original throws away.
fn render_preview(
    spec: &JobSpec,
    retry_limit: u32,
    loss: &quotatop_analysis::preview::TerminatePreview,
    tracked: &quotatop_model::TrackedJob,
) -> String {
    let j = &tracked.job;
    let preempted = j
        .preemption
        .as_ref()
        .map_or(0, |p| p.preempted_attempt_count);
    let own = loss.jobs.first();
    let lost = own
        .and_then(|l| l.lost_gpu_hours)
        .map_or("unknown GPU-h".to_string(), |h| format!("{h:.2} GPU-h"));
    let mut out = format!(
        "job       {} ({})\nshare     {}, priority {}, {}x {}, {}\n",
        clean_text(&spec.name),
        spec.id,
        clean_text(spec.share.as_deref().unwrap_or("-")),
        spec.priority.unwrap_or(j.priority),
        j.instance_count,
        j.instance_type,
        j.status.as_str(),
    );
    out.push_str(&format!(
        "preempted {preempted}x; retry limit now {}\n",
        spec.preemption_retries
            .map_or("none (requeued at every preemption)".to_string(), |n| n
                .to_string()),
    ));
    if let Some(l) = own {
        out.push_str(&format!(
            "has run   {} in its current attempt ({} attempt(s))\n",
            format_duration(l.running_ms),
            l.attempts
        ));
    }
    out.push_str(&format!(
        "copy      same name, payload, share, priority, retry strategy, timeout and tags; preemptionRetriesBeforeTermination {retry_limit}; tag {}={}\n",
        actions::REPLACES_TAG,
        spec.id
    ));
    out.push_str(&format!(
        "then      terminate {}: throws away {lost} since its last checkpoint\n",
        spec.id
    ));
    out
}
