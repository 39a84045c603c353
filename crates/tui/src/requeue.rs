//! The requeue dialog (`R`): the remedy for a preemption loop. For the selected job or the
//! marked ones: a retry limit (default 2: preemptions before AWS ends the copy) and one
//! justification; the preview says what each job has been through and what the copy gets;
//! confirmed, each job is one audited change of two calls — a copy submitted with
//! `preemptionRetriesBeforeTermination` set, then the original terminated — made by the
//! console's [`JobActions`] service. The shared dialog is [`super::job_act`].
//!
//! [`JobActions`]: super::effects::JobActions

use std::sync::Arc;

use super::effects::ActJob;
use super::job_act::{JobAct, Setup, What};
use super::text::clean;
use quotatop_analysis::gate::{Act, Door};
use quotatop_model::QueueSnapshot;

/// The retry limit the dialog offers.
pub const DEFAULT_RETRY_LIMIT: u32 = 2;

/// The dialog on `jobs` of `queue` (`missing`: marked jobs no longer in the data).
pub fn dialog(queue: String, jobs: Vec<ActJob>, missing: Vec<String>, door: Arc<Door>) -> JobAct {
    let mut d = JobAct::new(Setup {
        what: What::Requeue,
        queue,
        jobs,
        missing,
        door,
        preview,
        submit: super::terminate::request,
    });
    d.value = super::field::text(&DEFAULT_RETRY_LIMIT.to_string());
    d
}

/// Each job's preemptions and retry setting now, and the copy's.
pub fn preview(q: &QueueSnapshot, jobs: &[ActJob], act: Act) -> Result<Vec<String>, String> {
    let Act::Requeue { retry_limit } = act else {
        return Err("a requeue needs a retry limit".to_string());
    };
    let mut lines = vec![format!(
        "preview: each job is submitted again (same name, payload, share, priority, tags) with \
         at most {retry_limit} preemption retr{}, then the original is terminated",
        if retry_limit == 1 { "y" } else { "ies" }
    )];
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
                "{} has already finished ({}): there is nothing to requeue",
                clean(&j.name),
                j.status.as_str()
            ));
        }
        let retries = j
            .preemption_retries
            .map_or_else(|| "no retry cap".to_string(), |r| format!("retry cap {r}"));
        lines.push(format!(
            "  {}: {} · preempted {}× · {retries} → the copy: retry cap {retry_limit}",
            clean(&j.name),
            j.status.as_str(),
            j.preemption_count()
        ));
    }
    Ok(lines)
}
