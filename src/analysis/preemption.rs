//! Preemption facts per job and per share, and preemption-loop flags.
//!
//! Lost capacity is counted per preempted attempt as its whole duration (stop − start) times the
//! job's instances: the API does not know checkpoints, so this is an upper bound of the work
//! lost. The API keeps only a window of recent attempts; when a job was preempted more often
//! than the window shows, its loss is marked partial.

use std::collections::BTreeMap;

use crate::model::{JobStatus, Millis, PreemptedAttempt, QueueSnapshot};

use super::gpus_per_instance;

const HOUR_MS: f64 = 3_600_000.0;

/// When a job counts as caught in a preemption loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LoopRule {
    /// Flag a job preempted at least this many times in all.
    pub min_preemptions: u32,
    /// Or at least `.0` times within the last `.1` ms (by the recent attempts' stop times).
    pub within: Option<(u32, Millis)>,
}

impl Default for LoopRule {
    fn default() -> Self {
        Self {
            min_preemptions: 3,
            within: Some((2, 3_600_000)),
        }
    }
}

/// What is known about one preempted job.
#[derive(Debug, Clone, PartialEq)]
pub struct PreemptionFacts {
    pub job_id: String,
    pub name: String,
    pub share: String,
    pub status: JobStatus,
    pub instance_type: String,
    pub instance_count: u32,
    pub priority: u32,
    /// `preemptedAttemptCount`.
    pub count: u32,
    /// The recent preempted attempts, newest first.
    pub recent: Vec<PreemptedAttempt>,
    /// Instance-hours of the recent preempted attempts.
    pub instance_hours_lost: f64,
    /// GPU-hours of the same, when the instance type's GPU count is known.
    pub gpu_hours_lost: Option<f64>,
    /// More preemptions happened than the recent window shows.
    pub loss_is_partial: bool,
    /// No `preemptionRetriesBeforeTermination`: requeued forever.
    pub unbounded_retries: bool,
    /// Preemptions left before the job fails, when bounded.
    pub retries_left: Option<u32>,
    pub looping: bool,
}

/// Every described job with at least one preemption, most preempted first.
pub fn preemptions(q: &QueueSnapshot, rule: &LoopRule) -> Vec<PreemptionFacts> {
    let now = super::now_of(q);
    let mut out: Vec<PreemptionFacts> = q
        .jobs
        .iter()
        .filter_map(|t| {
            let j = &t.job;
            let summary = j.preemption.as_ref()?;
            if summary.preempted_attempt_count == 0 {
                return None;
            }
            let count = summary.preempted_attempt_count;
            let instance_hours: f64 = summary
                .recent_preempted_attempts
                .iter()
                .map(|a| (a.stopped_at - a.started_at).max(0) as f64 / HOUR_MS)
                .sum::<f64>()
                * j.instance_count as f64;
            let recent_in_window = match (rule.within, now) {
                (Some((_, window)), Some(now)) => summary
                    .recent_preempted_attempts
                    .iter()
                    .filter(|a| a.stopped_at >= now - window)
                    .count() as u32,
                _ => 0,
            };
            let looping = count >= rule.min_preemptions
                || rule
                    .within
                    .is_some_and(|(m, _)| m > 0 && recent_in_window >= m);
            Some(PreemptionFacts {
                job_id: j.id.clone(),
                name: j.name.clone(),
                share: j.share.clone(),
                status: j.status,
                instance_type: j.instance_type.clone(),
                instance_count: j.instance_count,
                priority: j.priority,
                count,
                recent: summary.recent_preempted_attempts.clone(),
                instance_hours_lost: instance_hours,
                gpu_hours_lost: gpus_per_instance(&j.instance_type)
                    .map(|g| instance_hours * g as f64),
                loss_is_partial: count as usize > summary.recent_preempted_attempts.len(),
                unbounded_retries: j.preemption_retries.is_none(),
                retries_left: j.preemption_retries.map(|n| (n + 1).saturating_sub(count)),
                looping,
            })
        })
        .collect();
    out.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then(b.instance_hours_lost.total_cmp(&a.instance_hours_lost))
            .then(a.job_id.cmp(&b.job_id))
    });
    out
}

/// Preemption totals of one share.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SharePreemptions {
    /// Jobs preempted at least once.
    pub jobs: u32,
    /// Sum of their `preemptedAttemptCount`.
    pub preemptions: u32,
    pub looping: u32,
    pub instance_hours_lost: f64,
}

/// Per share (every share of the queue, zero when none were preempted).
pub fn share_preemptions(q: &QueueSnapshot, rule: &LoopRule) -> BTreeMap<String, SharePreemptions> {
    let mut out: BTreeMap<String, SharePreemptions> = q
        .shares
        .iter()
        .map(|s| (s.name.clone(), SharePreemptions::default()))
        .collect();
    for f in preemptions(q, rule) {
        let e = out.entry(f.share.clone()).or_default();
        e.jobs += 1;
        e.preemptions += f.count;
        e.looping += u32::from(f.looping);
        e.instance_hours_lost += f.instance_hours_lost;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::fixture::{job, queue};
    use crate::model::{PreemptionSummary, SharingConfig};

    fn attempt(start: Millis, stop: Millis) -> PreemptedAttempt {
        PreemptedAttempt {
            resource_id: format!("r{start}"),
            started_at: start,
            stopped_at: stop,
            status_reason: "Cross-share preemption triggered to reclaim borrowed capacity".into(),
        }
    }

    #[test]
    fn facts_loss_and_loop_flags() {
        let mut q = queue(&[
            (
                "a",
                "ml.p4d.24xlarge",
                4,
                SharingConfig::lend_and_borrow(-1),
            ),
            ("b", "ml.p4d.24xlarge", 4, SharingConfig::lend()),
        ]);
        q.server_time = Some(10 * 3_600_000);
        let mut looper = job(
            "looper",
            "a",
            "ml.p4d.24xlarge",
            2,
            JobStatus::Runnable,
            1,
            0,
        );
        looper.job.preemption = Some(PreemptionSummary {
            preempted_attempt_count: 7,
            recent_preempted_attempts: vec![attempt(0, 1_800_000), attempt(0, 3_600_000)],
        });
        let mut once = job("once", "a", "ml.p4d.24xlarge", 1, JobStatus::Running, 5, 0);
        once.job.preemption_retries = Some(2);
        once.job.preemption = Some(PreemptionSummary {
            preempted_attempt_count: 1,
            recent_preempted_attempts: vec![attempt(9 * 3_600_000, 9 * 3_600_000 + 1_800_000)],
        });
        let never = job("never", "b", "ml.p4d.24xlarge", 1, JobStatus::Running, 0, 0);
        q.jobs = vec![once, looper, never];
        let rule = LoopRule::default();
        let facts = preemptions(&q, &rule);
        assert_eq!(facts.len(), 2);
        let l = &facts[0];
        assert_eq!((l.name.as_str(), l.count), ("looper", 7));
        // (0.5 h + 1 h) x 2 instances = 3 instance-hours, x 8 GPUs = 24 GPU-hours.
        assert!((l.instance_hours_lost - 3.0).abs() < 1e-9);
        assert_eq!(l.gpu_hours_lost.map(|g| g.round()), Some(24.0));
        assert!(l.loss_is_partial && l.unbounded_retries && l.looping);
        let o = &facts[1];
        assert!(!o.looping && !o.unbounded_retries && !o.loss_is_partial);
        assert_eq!(o.retries_left, Some(2));
        // Two preemptions within the last hour make a loop under the window rule.
        let strict = LoopRule {
            min_preemptions: 100,
            within: Some((1, 3_600_000)),
        };
        assert!(preemptions(&q, &strict)[1].looping);
        assert!(!preemptions(&q, &strict)[0].looping);
        let per_share = share_preemptions(&q, &rule);
        assert_eq!(per_share["a"].preemptions, 8);
        assert_eq!(per_share["a"].jobs, 2);
        assert_eq!(per_share["a"].looping, 1);
        assert_eq!(per_share["b"], SharePreemptions::default());
    }
}
