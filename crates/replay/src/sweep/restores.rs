//! Restart overhead from measured restores: a re-run after a preemption whose training job's
//! log said it restored a checkpoint took from its start to the restore line
//! ([`quotatop_analysis::scorecard::restore_time`], the one definition recovery reliability
//! uses). Per class, the sweep says whether its restart overhead was measured (n restores) or
//! modelled from the configuration's `restart_overhead_s`.

use std::collections::BTreeMap;

use quotatop_analysis::scorecard::{AttemptEnd, PriorityChange, ScorecardInput, restore_time};
use quotatop_model::Millis;

use crate::ClassMembers;

/// One measured restore: the job's share and priority as submitted (what a class is judged
/// by), and how long the re-run took to restore.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MeasuredRestore {
    pub share: String,
    pub priority: i64,
    pub ms: Millis,
}

/// The measured restores of `input`'s re-runs after a preemption (modelled ones left out).
pub fn measured_restores(
    input: &ScorecardInput,
    changes: &[PriorityChange],
) -> Vec<MeasuredRestore> {
    let mut by_job: BTreeMap<&str, Vec<&PriorityChange>> = BTreeMap::new();
    for c in changes {
        by_job.entry(c.job_id.as_str()).or_default().push(c);
    }
    let mut out = Vec::new();
    for job in &input.jobs {
        let mut seen = by_job.get(job.job_id.as_str()).cloned().unwrap_or_default();
        seen.sort_by_key(|c| c.at);
        let priority = i64::from(crate::from_history::submitted_priority(job.priority, &seen));
        for i in 1..job.attempts.len() {
            if job.attempts[i - 1].end != AttemptEnd::Preempted {
                continue;
            }
            if let Some(t) = restore_time(job, i, 0).filter(|t| t.measured) {
                out.push(MeasuredRestore {
                    share: job.share.clone(),
                    priority,
                    ms: t.ms,
                });
            }
        }
    }
    out
}

/// Where a class's restart overhead comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum RestartBasis {
    /// `n` restores of the class's jobs were measured; their mean, in seconds.
    Measured { n: usize, mean_s: f64 },
    /// None measured: the configuration's `restart_overhead_s`.
    Modelled { s: u64 },
}

impl RestartBasis {
    /// Of the class whose jobs `members` holds.
    pub fn of_class(members: &ClassMembers, restores: &[MeasuredRestore], modelled_s: u64) -> Self {
        let ms: Vec<Millis> = restores
            .iter()
            .filter(|r| members.holds_submitted(&r.share, r.priority))
            .map(|r| r.ms)
            .collect();
        match mean_s(&ms) {
            Some(mean_s) => Self::Measured {
                n: ms.len(),
                mean_s,
            },
            None => Self::Modelled { s: modelled_s },
        }
    }

    pub fn text(&self) -> String {
        match self {
            Self::Measured { n, mean_s } => {
                format!("measured ({n} restores, mean {mean_s:.1} s)")
            }
            Self::Modelled { s } => format!("modelled (restart_overhead_s = {s} s)"),
        }
    }
}

/// The mean of `ms`, in seconds; `None` when empty.
pub fn mean_s(ms: &[Millis]) -> Option<f64> {
    (!ms.is_empty()).then(|| ms.iter().sum::<Millis>() as f64 / ms.len() as f64 / 1000.0)
}

/// The restart overhead the replays hold fixed when the journal measured restores and the
/// configuration gives none: the mean of every measured restore, whole seconds (the replay
/// takes one value for all classes).
pub fn held_restart_s(restores: &[MeasuredRestore]) -> Option<u64> {
    let ms: Vec<Millis> = restores.iter().map(|r| r.ms).collect();
    mean_s(&ms).map(|s| s.round().max(0.0) as u64)
}

#[cfg(test)]
mod tests;
