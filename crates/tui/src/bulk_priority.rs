//! `p` with marks: one new priority for every marked job, one justification (and change
//! record), each job's preview listed (the analysis preview places one change at a time, so
//! the dialog says each is computed alone), one confirmation, then one priority change per
//! job through the console's [`ChangeRunner`] — one intent each — and a result per job. The shared dialog is [`super::job_act`].
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

fn lines(q: &QueueSnapshot, jobs: &[ActJob], act: Act) -> Result<Vec<String>, String> {
    let mut out = vec![
        "preview: each job's change computed alone (the preview places one change at a time; \
         together they may interact)"
            .to_string(),
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
    Ok(previews
        .into_iter()
        .map(|p| {
            let batch = (n > 1).then(|| ChangeBatch {
                id: id.clone(),
                preview: format!("{} (one of {n} changes confirmed together)", p.summary()),
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
