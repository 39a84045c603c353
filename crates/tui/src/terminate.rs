//! The terminate dialog (`ctrl-k`, k9s's kill): the selected job or the marked ones, one
//! justification (and change record), the preview — what each job has run and the GPU-hours
//! it would throw away since its last checkpoint — one confirmation, and a result per job.
//! The shared dialog is [`super::job_act`]; the call is the console's [`JobActions`] service.
//!
//! [`JobActions`]: super::effects::JobActions

use std::sync::Arc;

use super::effects::{ActJob, ActRequest, Effect};
use super::job_act::{JobAct, Setup, What};
use super::text::{clean, duration};
use quotatop_analysis::gate::{Act, Door};
use quotatop_model::{JobStatus, QueueSnapshot};

/// The dialog on `jobs` of `queue` (`missing`: marked jobs no longer in the data).
pub fn dialog(
    queue: String,
    jobs: Vec<ActJob>,
    missing: Vec<String>,
    door: Arc<Door>,
    batch: Option<String>,
) -> JobAct {
    JobAct::new(Setup {
        what: What::Terminate,
        queue,
        jobs,
        missing,
        door,
        batch,
        preview,
        submit: request,
    })
}

/// Each job's line: how long it has run, and what its end throws away since its last
/// checkpoint (all of its running time without checkpoints), then the total.
pub fn preview(q: &QueueSnapshot, jobs: &[ActJob], _act: Act) -> Result<Vec<String>, String> {
    let now = quotatop_analysis::now_of(q).unwrap_or(0);
    let mut lines = vec!["preview: each job ends now (TerminateServiceJob)".to_string()];
    let mut thrown = 0.0;
    for a in jobs {
        let Some(t) = q.jobs.iter().find(|t| t.job.id == a.id) else {
            return Err(format!(
                "{} is no longer in the data: unmark it or wait for the next refresh",
                clean(&a.name)
            ));
        };
        let j = &t.job;
        if j.status.is_terminal() {
            return Err(format!(
                "{} has already finished ({}): unmark it",
                clean(&j.name),
                j.status.as_str()
            ));
        }
        let line = match (j.status, j.started_at) {
            (JobStatus::Running, Some(start)) => {
                let ran = (now - start).max(0);
                let since = match j.checkpoint_interval_ms {
                    Some(c) if c > 0 => ran % i64::try_from(c).unwrap_or(i64::MAX),
                    _ => ran,
                };
                let gpus = f64::from(
                    quotatop_analysis::gpus_per_instance(&j.instance_type).unwrap_or(0)
                        * j.instance_count,
                );
                let lost = gpus * since as f64 / 3_600_000.0;
                thrown += lost;
                let basis = if j.checkpoint_interval_ms.is_some() {
                    "since its last checkpoint"
                } else {
                    "no checkpoints: all of this attempt"
                };
                format!(
                    "  {}: RUNNING {} on {}×{} · {lost:.1} GPU-h thrown away ({basis})",
                    clean(&j.name),
                    duration(Some(ran)),
                    j.instance_count,
                    clean(&j.instance_type)
                )
            }
            (status, _) => format!(
                "  {}: {} (not running) · nothing thrown away; it leaves its share's queue",
                clean(&j.name),
                status.as_str()
            ),
        };
        lines.push(line);
    }
    lines.push(format!(
        "in all: {thrown:.1} GPU-h thrown away; the capacity freed goes to the waiting jobs"
    ));
    Ok(lines)
}

/// The confirmed act: one request, one intent per job.
pub fn request(d: &JobAct, _q: &QueueSnapshot, act: Act) -> Result<Vec<Effect>, String> {
    Ok(vec![Effect::Act(Box::new(ActRequest {
        queue: d.queue.clone(),
        act,
        jobs: d.jobs.clone(),
        justification: d.justification_text(),
        change_record: d.change_record_text(),
        batch: d.batch.clone(),
    }))])
}
