//! A class's own checkpoint interval and retry limit: for the jobs of one class they replace
//! the trace's and the configuration's, the rest of the configuration held fixed. A sweep point
//! (`quotatop sweep`) is a replay with one of these per class swept.

use std::collections::BTreeSet;

use quotatop_analysis::scorecard::PriorityBand;

use super::TraceJob;

/// Which jobs a class holds, by what they were submitted with in the trace, as the comparison
/// reads classes: a policy's by (share, priority) (`Comparison::class_by_policy`), else the
/// priority bands of the per-band tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClassMembers {
    /// The jobs submitted in this priority band.
    Band(PriorityBand),
    /// A policy class: the (share, priority as submitted) pairs it holds.
    Pairs(BTreeSet<(String, i64)>),
}

impl ClassMembers {
    /// Whether `job` is of the class.
    pub fn holds(&self, job: &TraceJob) -> bool {
        self.holds_submitted(&job.share, job.priority)
    }

    /// Whether a job submitted to `share` at `priority` is of the class.
    pub fn holds_submitted(&self, share: &str, priority: i64) -> bool {
        match self {
            Self::Band(b) => super::run::band_of_priority(priority) == *b,
            Self::Pairs(pairs) => pairs.iter().any(|(s, p)| *p == priority && s == share),
        }
    }
}

/// One class's checkpoint interval and retry limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassWorkload {
    pub members: ClassMembers,
    /// Progress is saved every this many ms of running; `None` (or 0): never, a preempted job
    /// restarts from zero.
    pub checkpoint_interval_ms: Option<u64>,
    /// Preemptions retried before the job fails (`preemptionRetriesBeforeTermination`);
    /// `None`: requeued forever.
    pub preemption_retries: Option<u32>,
}

/// The first of `classes` that holds `job`.
pub fn class_workload<'a>(
    classes: &'a [ClassWorkload],
    job: &TraceJob,
) -> Option<&'a ClassWorkload> {
    classes.iter().find(|c| c.members.holds(job))
}

#[cfg(test)]
mod tests;
