//! Feeding a trace into an engine: each job's spec under the configuration, the submissions at
//! their times, and the trace's priority changes at theirs.

use quotatop_engine::{Engine, EngineError, JobId, JobSpec};
use quotatop_model::Millis;

use super::super::{ReplayConfig, TraceJob};

/// Applies the configuration's workload assumptions to a trace job: the trace's checkpoint
/// interval and retry cap, else the workload's; the job's class's (`Workload::by_class`) over
/// both.
pub(crate) fn spec_for(job: &TraceJob, cfg: &ReplayConfig) -> JobSpec {
    let w = &cfg.workload;
    let mut spec = job.spec();
    if let Some(&p) = w.priority.get(&*job.share) {
        spec.priority = p;
    }
    if spec.checkpoint_interval_ms.is_none() {
        spec.checkpoint_interval_ms = w.checkpoint_s.map(|s| s * 1000).filter(|&c| c > 0);
    }
    if spec.preemption_retries.is_none() {
        spec.preemption_retries = w.preemption_retries;
    }
    if let Some(c) = super::super::class_workload(&w.by_class, job) {
        spec.checkpoint_interval_ms = c.checkpoint_interval_ms.filter(|&c| c > 0);
        spec.preemption_retries = c.preemption_retries;
    }
    spec.restart_overhead_ms = w.restart_overhead_s * 1000;
    spec
}

/// Submits the jobs at their times, then runs until idle. `progress(done, total)` is called
/// every 1,000 submissions and at the end; `between(engine)` after each submission and each
/// step of the run to idle (e.g. to drain the event log). A failed submission returns the job's
/// index.
pub(crate) fn submit_all(
    engine: &mut Engine,
    jobs: &[TraceJob],
    spec: impl Fn(&TraceJob) -> JobSpec,
    progress: &mut dyn FnMut(usize, usize),
    between: &mut dyn FnMut(&mut Engine),
) -> Result<Vec<JobId>, (usize, EngineError)> {
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&i| jobs[i].submit_ms);
    let start = engine.now();
    engine.reserve_jobs(jobs.len());
    // Priority changes (trace column `priority_changes`): (time, job index, priority), applied
    // at their times between submissions and while the engine runs on.
    let mut changes: Vec<(Millis, usize, i64)> = jobs
        .iter()
        .enumerate()
        .flat_map(|(i, j)| {
            j.extras
                .priority_changes()
                .iter()
                .map(move |&(t, p)| (start + t.max(j.submit_ms).max(0), i, p))
        })
        .collect();
    changes.sort_by_key(|&(t, i, _)| (t, i));
    let mut changes = changes.into_iter().peekable();
    let mut id_of: Vec<Option<JobId>> = if changes.peek().is_some() {
        vec![None; jobs.len()]
    } else {
        Vec::new()
    };
    let mut ids = Vec::with_capacity(jobs.len());
    for (n, &i) in order.iter().enumerate() {
        let j = &jobs[i];
        let at = start + j.submit_ms.max(0);
        apply_due(engine, &mut changes, at.saturating_sub(1), &id_of)?;
        engine.advance_to(at).map_err(|e| (i, e))?;
        let id = engine.submit(spec(j)).map_err(|e| (i, e))?;
        if let Some(slot) = id_of.get_mut(i) {
            *slot = Some(id);
        }
        ids.push(id);
        between(engine);
        if n % 1000 == 999 {
            progress(n + 1, jobs.len());
        }
    }
    // Engine::run_until_idle(Millis::MAX / 4), one step at a time, with the changes left.
    loop {
        let now = engine.now();
        apply_due(engine, &mut changes, now, &id_of)?;
        let next_change = changes.peek().map(|&(t, _, _)| t);
        let at = match (engine.next_step_at(), next_change) {
            (Some(a), Some(c)) => a.min(c),
            (Some(a), None) => a,
            (None, Some(c)) => c,
            (None, None) => break,
        };
        if at > Millis::MAX / 4 || engine.advance_to(at.max(engine.now())).is_err() {
            break;
        }
        between(engine);
    }
    progress(jobs.len(), jobs.len());
    Ok(ids)
}

/// Applies the priority changes due by `t`; a job already finished in this scenario keeps its
/// end.
fn apply_due(
    engine: &mut Engine,
    changes: &mut std::iter::Peekable<std::vec::IntoIter<(Millis, usize, i64)>>,
    t: Millis,
    id_of: &[Option<JobId>],
) -> Result<(), (usize, EngineError)> {
    while let Some(&(at, i, p)) = changes.peek() {
        if at > t {
            break;
        }
        changes.next();
        engine
            .advance_to(at.max(engine.now()))
            .map_err(|e| (i, e))?;
        if let Some(Some(id)) = id_of.get(i) {
            match engine.update_priority(*id, p) {
                Ok(()) | Err(EngineError::JobFinished(_)) => {}
                Err(e) => return Err((i, e)),
            }
        }
    }
    Ok(())
}
