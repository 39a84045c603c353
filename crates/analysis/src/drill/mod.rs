//! The preemption drill's pure part (`quotatop drill`): the plan and its refusals, and the
//! figures measured from what the API describes. The procedure itself (submitting, waiting,
//! terminating) is `commands::drill`.

mod measure;
mod plan;
mod report;

pub use measure::{
    Aggregate, CheckpointVerdict, PreemptedJob, RepetitionResult, aggregate,
    first_preemption_after, first_start, job_history, ledger_options, lost_gpu_hours,
    measured_verdict, preempted_jobs, priority_due, reclaim_latency,
};
pub use plan::{
    ASSUMED_STARTUP_MS, DrillPlan, DrillRefusal, DrillRequest, RepetitionSpec, TypePlan,
    check_quiet, check_strategies, expected_repetition, plan,
};
pub use report::{DrillReport, GroupRow, groups};

#[cfg(test)]
mod tests;
