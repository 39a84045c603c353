//! `quotatop terminate`: the same gate, preview, confirmation and audit as every change —
//! `quotatop_actions::terminate` does the calls and the records.

use anyhow::bail;

use crate::cli::TerminateArgs;
use quotatop_actions::{self as actions, ActContext, JobTarget};
use quotatop_analysis::gate::Act;
use quotatop_analysis::preview::{TerminatePreview, terminate_preview};
use quotatop_analysis::scorecard::ScorecardOptions;
use quotatop_model::{QueueSnapshot, clean_text, format_duration};

use super::job_change::{confirmed, find_job, prepare};

/// The jobs asked for, by queue (each once, in the order given).
fn resolve<'a>(
    queues: &'a [QueueSnapshot],
    keys: &[String],
) -> anyhow::Result<Vec<(&'a QueueSnapshot, Vec<String>)>> {
    let mut by_queue: Vec<(&QueueSnapshot, Vec<String>)> = Vec::new();
    for key in keys {
        let (q, id) = find_job(queues, key)?;
        match by_queue.iter_mut().find(|(bq, _)| std::ptr::eq(*bq, q)) {
            Some((_, ids)) if ids.contains(&id) => {}
            Some((_, ids)) => ids.push(id),
            None => by_queue.push((q, vec![id])),
        }
    }
    Ok(by_queue)
}

pub fn run(args: &TerminateArgs) -> anyhow::Result<()> {
    let prepared = prepare(
        "terminate",
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
        let by_queue = resolve(&snapshot.queues, &args.jobs)?;
        let operator = super::job_change::operator_for(&client, &prepared.rules).await;
        let ctx = prepared.context(
            client.source(),
            operator,
            &args.reason,
            args.change_record.as_deref(),
        );
        let targets = previewed(&ctx, &by_queue, &opts, snapshot.source.endpoint.as_deref())?;
        let question = format!("Terminate {} job(s)?", targets.len());
        if !confirmed(args.dry_run, args.yes, &question)? {
            return Ok(());
        }
        let results = actions::terminate(&client, &prepared.log, &ctx, &targets)
            .await
            .map_err(|e| anyhow::anyhow!(clean_text(&quotatop_model::error_chain(&e))))?;
        report(&results, &prepared.log)
    })
}

/// Judges every job (the gate's words on a refusal), prints the preview of each queue's jobs,
/// and returns the targets with their preview's words.
fn previewed(
    ctx: &ActContext,
    by_queue: &[(&QueueSnapshot, Vec<String>)],
    opts: &ScorecardOptions,
    endpoint: Option<&str>,
) -> anyhow::Result<Vec<JobTarget>> {
    let mut targets = Vec::new();
    for (q, ids) in by_queue {
        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        let preview = terminate_preview(q, &refs, opts)?;
        for id in ids {
            let Some(t) = q.jobs.iter().find(|t| &t.job.id == id) else {
                continue;
            };
            let target = JobTarget::of(&q.name, t, String::new());
            if let Some(stamp) = ctx.door.judge(
                Act::Terminate,
                quotatop_analysis::gate::Subject {
                    share: &target.share,
                    class_tag: target.class_tag.as_deref(),
                    priority: target.priority,
                },
                &ctx.justification,
                ctx.change_record.as_deref(),
            )? {
                println!(
                    "class     {} (policy sha256 {}): may terminate",
                    clean_text(&stamp.class_before),
                    stamp.policy_hash.get(..12).unwrap_or(&stamp.policy_hash)
                );
            }
            targets.push(target);
        }
        print!("{}", render_preview(&q.name, &preview));
        let summary = preview.summary();
        for t in targets.iter_mut().filter(|t| t.queue == q.name) {
            let own = preview.jobs.iter().find(|j| j.job_id == t.id);
            t.preview = match own {
                Some(j) => format!("{}; {summary}", job_line(j)),
                None => summary.clone(),
            };
        }
    }
    if let Some(note) = quotatop_analysis::preview::model_note(endpoint) {
        println!("note      {note}");
    }
    Ok(targets)
}

/// What one job has run and what ending it throws away, in one line.
fn job_line(j: &quotatop_analysis::preview::JobLoss) -> String {
    let lost = j
        .lost_gpu_hours
        .map_or("unknown GPU-h (GPU count not known)".to_string(), |h| {
            format!("{h:.2} GPU-h")
        });
    format!(
        "{} ran {} in its current attempt ({} attempt(s)); throws away {lost} since its last checkpoint",
        j.name,
        format_duration(j.running_ms),
        j.attempts
    )
}

/// The preview as printed before confirming.
pub fn render_preview(queue: &str, p: &TerminatePreview) -> String {
    let mut out = String::new();
    for j in &p.jobs {
        out.push_str(&format!(
            "job       {} ({})\nshare     {}, priority {}, {}x {}, {}\n",
            clean_text(&j.name),
            j.job_id,
            clean_text(&j.share),
            j.priority,
            j.instance_count,
            j.instance_type,
            j.status.as_str()
        ));
        let held = j
            .held_gpu_hours
            .map_or(String::new(), |h| format!(", {h:.2} GPU-h held"));
        out.push_str(&format!(
            "has run   {} in its current attempt ({} attempt(s){held})\n",
            format_duration(j.running_ms),
            j.attempts
        ));
        let checkpoint = j.checkpoint_ms.map_or(
            "no checkpoint interval known: the whole attempt".to_string(),
            |c| format!("checkpoint every {}", format_duration(c as i64)),
        );
        out.push_str(&format!(
            "throws    {} since its last checkpoint ({checkpoint})\n",
            j.lost_gpu_hours.map_or(
                "unknown GPU-h (GPU count not known)".to_string(),
                |h| format!("{h:.2} GPU-h")
            )
        ));
    }
    if p.starts.is_empty() {
        out.push_str(&format!(
            "frees     capacity in {}: no waiting job would start on it\n",
            clean_text(queue)
        ));
    } else {
        out.push_str(&format!(
            "frees     capacity in {}: the next scheduling pass starts\n",
            clean_text(queue)
        ));
        for s in &p.starts {
            out.push_str(&format!(
                "          - {} (share {}, priority {}, {}x {})\n",
                clean_text(&s.name),
                clean_text(&s.share),
                s.priority,
                s.instance_count,
                s.instance_type
            ));
        }
    }
    out
}

/// Each job's result, and an error when any job was not terminated.
fn report(
    results: &[actions::JobResult],
    log: &quotatop_store::audit::ChangeLog,
) -> anyhow::Result<()> {
    let mut not = 0;
    for r in results {
        if !r.result.took_effect() {
            not += 1;
        }
        println!(
            "{} ({}): {}",
            clean_text(&r.job_name),
            r.job_id,
            r.result.describe()
        );
    }
    println!("recorded in {}", clean_text(&log.to_string()));
    if not > 0 {
        bail!(
            "{not} of {} job(s) not terminated (see above; each is in the audit log)",
            results.len()
        );
    }
    Ok(())
}
