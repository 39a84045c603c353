//! What-if replay: job traces run through the engine.
//!
//! For now this holds the trace readers and the driver that feeds a trace to an engine; the
//! `replay` command and its scorecards build on it.

pub mod philly;

use crate::engine::{Engine, EngineError, JobId, JobSpec};
use crate::model::Millis;

/// One job of a trace, in engine terms.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceJob {
    pub name: String,
    pub share: String,
    /// Submission time relative to the trace start.
    pub submit_ms: Millis,
    pub instance_type: String,
    pub instance_count: u32,
    pub work_ms: u64,
    pub priority: i64,
    pub checkpoint_interval_ms: Option<u64>,
    pub preemption_retries: Option<u32>,
}

/// Submits every job at its time (jobs sorted by submission time, stable), then runs the engine
/// until nothing is left to do. Returns the ids in submission order.
pub fn run_trace(engine: &mut Engine, jobs: &[TraceJob]) -> Result<Vec<JobId>, EngineError> {
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&i| jobs[i].submit_ms);
    let start = engine.now();
    let mut ids = Vec::with_capacity(jobs.len());
    for i in order {
        let j = &jobs[i];
        engine.advance_to(start + j.submit_ms.max(0))?;
        ids.push(engine.submit(JobSpec {
            name: j.name.clone(),
            share: j.share.clone(),
            priority: j.priority,
            instance_type: j.instance_type.clone(),
            instance_count: j.instance_count,
            work_ms: j.work_ms,
            checkpoint_interval_ms: j.checkpoint_interval_ms,
            preemption_retries: j.preemption_retries,
            restart_overhead_ms: 0,
        })?);
    }
    engine.run_until_idle(Millis::MAX / 4);
    Ok(ids)
}
