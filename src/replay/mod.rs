//! What-if replay: a job trace run through the engine under several share configurations.

pub mod config;
pub mod philly;
pub mod presets;
pub mod report;
pub mod run;
pub mod trace_csv;

#[cfg(test)]
mod tests;

pub use config::{ReplayConfig, Workload};
pub use run::{ReplayOutcome, replay, replay_to};

use crate::engine::{Engine, EngineError, JobId, JobSpec};
use crate::model::Millis;

/// One job of a trace, in engine terms.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceJob {
    pub name: String,
    /// `file:line` it came from, for error messages.
    pub origin: String,
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

/// Why a replay could not run.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("{origin}: {message}")]
    Trace { origin: String, message: String },
    #[error("{origin}: {message}")]
    Config { origin: String, message: String },
    #[error(transparent)]
    Philly(#[from] philly::TraceError),
    #[error(transparent)]
    Engine(#[from] EngineError),
}

impl TraceJob {
    /// The job as the engine takes it, with no workload assumptions applied.
    pub fn spec(&self) -> JobSpec {
        JobSpec {
            name: self.name.clone(),
            share: self.share.clone(),
            priority: self.priority,
            instance_type: self.instance_type.clone(),
            instance_count: self.instance_count,
            work_ms: self.work_ms,
            checkpoint_interval_ms: self.checkpoint_interval_ms,
            preemption_retries: self.preemption_retries,
            restart_overhead_ms: 0,
        }
    }
}

/// Submits every job at its time (stable by submission time), then runs the engine until
/// nothing is left to do. Returns the ids in submission order.
pub fn run_trace(engine: &mut Engine, jobs: &[TraceJob]) -> Result<Vec<JobId>, EngineError> {
    run::submit_all(engine, jobs, |j| j.spec(), &mut |_, _| {}, &mut |_| {}).map_err(|(_, e)| e)
}
