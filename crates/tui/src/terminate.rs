//! The terminate dialog (`ctrl-k`, k9s's kill): the selected job or the marked ones, one
//! justification (and change record), the preview — what each job has run, the GPU-hours it
//! would throw away since its last checkpoint, and which waiting jobs would start on the
//! capacity freed ([`quotatop_analysis::preview::terminate_preview`], the engine's placement)
//! — one confirmation, and a result per job. The shared dialog is [`super::job_act`]; the
//! call is the console's [`JobActions`] service.
//!
//! [`JobActions`]: super::effects::JobActions

use std::sync::Arc;

use super::effects::{ActJob, ActRequest, Effect};
use super::job_act::{JobAct, Setup, What};
use super::text::{clean, duration};
use quotatop_analysis::gate::{Act, Door};
use quotatop_analysis::preview::{TerminatePreview, terminate_preview};
use quotatop_analysis::scorecard::ScorecardOptions;
use quotatop_model::QueueSnapshot;

/// Waiting jobs named before "and N more".
const STARTS_LISTED: usize = 6;

/// The dialog on `jobs` of `queue` (`missing`: marked jobs no longer in the data).
pub fn dialog(queue: String, jobs: Vec<ActJob>, missing: Vec<String>, door: Arc<Door>) -> JobAct {
    JobAct::new(Setup {
        what: What::Terminate,
        queue,
        jobs,
        missing,
        door,
        preview,
        submit: request,
    })
}

fn computed(q: &QueueSnapshot, jobs: &[ActJob]) -> Result<TerminatePreview, String> {
    let ids: Vec<&str> = jobs.iter().map(|j| j.id.as_str()).collect();
    terminate_preview(q, &ids, &ScorecardOptions::default()).map_err(|e| e.to_string())
}

/// Each job's line (what it has run, what its end throws away), then the waiting jobs that
/// would start.
pub fn preview(q: &QueueSnapshot, jobs: &[ActJob], _act: Act) -> Result<Vec<String>, String> {
    let p = computed(q, jobs)?;
    let mut lines = vec!["preview: each job ends now (TerminateServiceJob)".to_string()];
    for j in &p.jobs {
        if j.running_ms == 0 && j.attempts == 0 {
            lines.push(format!(
                "  {}: {} · has not run: nothing thrown away",
                clean(&j.name),
                j.status.as_str()
            ));
            continue;
        }
        let lost = j.lost_gpu_hours.map_or_else(
            || "GPU-h thrown away unknown (GPUs of the type unknown)".to_string(),
            |h| format!("{h:.1} GPU-h thrown away since its last checkpoint"),
        );
        let basis = if j.checkpoint_ms.is_some() {
            ""
        } else {
            " (no checkpoints)"
        };
        lines.push(format!(
            "  {}: {} · ran {} over {} attempt{} on {}×{} · {lost}{basis}",
            clean(&j.name),
            j.status.as_str(),
            duration(Some(j.running_ms)),
            j.attempts,
            if j.attempts == 1 { "" } else { "s" },
            j.instance_count,
            clean(&j.instance_type),
        ));
    }
    let total = p
        .lost_gpu_hours()
        .map_or_else(|| "unknown".to_string(), |h| format!("{h:.1}"));
    lines.push(format!("in all: {total} GPU-h thrown away"));
    if p.starts.is_empty() {
        lines.push("no waiting job starts on the capacity freed".to_string());
    } else {
        let names: Vec<String> = p
            .starts
            .iter()
            .take(STARTS_LISTED)
            .map(|s| {
                format!(
                    "{} ({}, priority {}, {}×{})",
                    clean(&s.name),
                    clean(&s.share),
                    s.priority,
                    s.instance_count,
                    clean(&s.instance_type)
                )
            })
            .collect();
        let more = p.starts.len().saturating_sub(STARTS_LISTED);
        lines.push(format!(
            "would start on the capacity freed: {}{}",
            names.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        ));
    }
    Ok(lines)
}

/// The confirmed act: one request, one intent per job, each with the preview's words.
pub fn request(d: &JobAct, q: &QueueSnapshot, act: Act) -> Result<Vec<Effect>, String> {
    let summary = match act {
        Act::Terminate => computed(q, &d.jobs)?.summary(),
        _ => super::requeue::preview(q, &d.jobs, act)?.join("; "),
    };
    let jobs = d
        .jobs
        .iter()
        .map(|j| ActJob {
            preview: summary.clone(),
            ..j.clone()
        })
        .collect();
    Ok(vec![Effect::Act(Box::new(ActRequest {
        queue: d.queue.clone(),
        act,
        jobs,
        justification: d.justification_text(),
        change_record: d.change_record_text(),
    }))])
}
