//! `p` with marks: one new priority for every marked job, one justification (and change
//! record), one preview of the combined effect (the engine's next pass with every change placed
//! at once, [`preview::combined`]) above each job's own, one confirmation, then one priority
//! change per job through the console's [`ChangeRunner`] — one intent each, linked by a batch
//! id whose record carries the combined effect — and a result per job. The shared dialog is
//! [`super::job_act`].
//!
//! [`ChangeRunner`]: super::effects::ChangeRunner

use std::sync::Arc;

use super::effects::{ActJob, ChangeBatch, ChangeRequest, Effect};
use super::job_act::{JobAct, Setup, What};
use super::text::clean;
use quotatop_analysis::gate::{Act, Door};
use quotatop_analysis::preview::{self, Preview};
use quotatop_model::QueueSnapshot;

/// The dialog on `jobs` of `queue` (`missing`: marked jobs no longer in the data).
pub fn dialog(queue: String, jobs: Vec<ActJob>, missing: Vec<String>, door: Arc<Door>) -> JobAct {
    JobAct::new(Setup {
        what: What::Priority,
        queue,
        jobs,
        missing,
        door,
        preview: lines,
        submit: requests,
    })
}

/// Each job's preview, alone on the current data.
fn previews(q: &QueueSnapshot, jobs: &[ActJob], act: Act) -> Result<Vec<Preview>, String> {
    let Act::Priority { new } = act else {
        return Err("a priority change needs a new priority".to_string());
    };
    jobs.iter()
        .map(|j| preview::preview(q, &j.id, new).map_err(|e| format!("{}: {e}", clean(&j.name))))
        .collect()
}

/// The effect of every change placed at once.
fn together(q: &QueueSnapshot, jobs: &[ActJob], act: Act) -> Result<String, String> {
    let Act::Priority { new } = act else {
        return Err("a priority change needs a new priority".to_string());
    };
    let changes: Vec<(&str, u32)> = jobs.iter().map(|j| (j.id.as_str(), new)).collect();
    preview::combined(q, &changes)
        .map(|c| c.summary())
        .map_err(|e| e.to_string())
}

fn lines(q: &QueueSnapshot, jobs: &[ActJob], act: Act) -> Result<Vec<String>, String> {
    let mut out = vec![
        clean(&together(q, jobs, act)?).into_owned(),
        "each job's own change, computed alone:".to_string(),
    ];
    for p in previews(q, jobs, act)? {
        out.push(format!(
            "  {}: {} -> {} · {}",
            clean(&p.job_name),
            p.old_priority,
            p.new_priority,
            p.summary()
        ));
    }
    Ok(out)
}

/// One change request per job, each with its preview of now, linked by one batch id.
fn requests(d: &JobAct, q: &QueueSnapshot, act: Act) -> Result<Vec<Effect>, String> {
    let id = uuid::Uuid::new_v4().to_string();
    let previews = previews(q, &d.jobs, act)?;
    let n = previews.len();
    let together = together(q, &d.jobs, act)?;
    Ok(previews
        .into_iter()
        .map(|p| {
            let batch = (n > 1).then(|| ChangeBatch {
                id: id.clone(),
                preview: format!(
                    "{} (one of {n} changes confirmed together; {together})",
                    p.summary()
                ),
            });
            Effect::ApplyChange(Box::new(ChangeRequest {
                queue: d.queue.clone(),
                justification: d.justification_text(),
                change_record: d.change_record_text(),
                preview: p.clone(),
                confirmed: p,
                batch,
            }))
        })
        .collect())
}
