//! What a priority change will do, computed on the current snapshot with the same rules the
//! engine schedules by (`engine::policy`): the job's new place in its share's queue, and whether
//! it would preempt running jobs in its share.

use crate::analysis::{self, share_usage};
use crate::engine::policy::{self, VictimFacts};
use crate::model::{JobStatus, Millis, QueueSnapshot};

use super::ActionError;

/// A running job the change would make a preemption candidate.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub job_id: String,
    pub name: String,
    pub priority: u32,
    pub instance_type: String,
    pub instance_count: u32,
    pub running_ms: Millis,
    /// Instance-hours of its current attempt so far: lost if it has no recent checkpoint.
    pub instance_hours_at_risk: f64,
}

/// What happens to the job right after the change.
#[derive(Debug, Clone, PartialEq)]
pub enum Prediction {
    /// It is not RUNNABLE: only its standing changes (a lower priority on a running job makes it
    /// a likelier victim).
    NotWaiting { status: JobStatus },
    /// Others stay ahead of it in its share.
    Waits { ahead: usize },
    /// Fits in its share's unused capacity.
    RunsOnOwnCapacity,
    /// Its share takes lent capacity back (cross-share preemption of borrowers).
    ReclaimsLent { instances: u32 },
    /// Runs by borrowing idle capacity of other shares.
    Borrows { instances: u32 },
    /// In-share preemption of these jobs.
    Preempts(Vec<Candidate>),
    /// At the head of its share but no room can be made: it waits for capacity.
    WaitsForCapacity,
    /// The service refuses to place it whatever its priority (its `MISCONFIGURATION` reason):
    /// it stays behind every job that can run until the job or its share's limits change.
    CannotRun { reason: String },
}

/// The preview shown before confirming.
#[derive(Debug, Clone, PartialEq)]
pub struct Preview {
    pub job_id: String,
    pub job_name: String,
    pub job_arn: String,
    pub share: String,
    pub old_priority: u32,
    pub new_priority: u32,
    /// 1-based position in the share's queue (RUNNABLE jobs only), before and after.
    pub old_position: Option<usize>,
    pub new_position: Option<usize>,
    pub queue_length: usize,
    pub in_share_preemption: bool,
    pub prediction: Prediction,
}

impl Preview {
    /// Whether `other` predicts the same thing: the same positions and effect, the same
    /// preemption candidates (by job). Times running and hours at risk grow by the second, so
    /// they do not count.
    pub fn same_outcome(&self, other: &Preview) -> bool {
        let effect = |p: &Preview| match &p.prediction {
            Prediction::Preempts(c) => Prediction::Preempts(
                c.iter()
                    .map(|c| Candidate {
                        running_ms: 0,
                        instance_hours_at_risk: 0.0,
                        ..c.clone()
                    })
                    .collect(),
            ),
            other => other.clone(),
        };
        (
            self.old_position,
            self.new_position,
            self.queue_length,
            self.old_priority,
        ) == (
            other.old_position,
            other.new_position,
            other.queue_length,
            other.old_priority,
        ) && effect(self) == effect(other)
    }

    pub fn instance_hours_at_risk(&self) -> f64 {
        match &self.prediction {
            Prediction::Preempts(c) => c.iter().map(|c| c.instance_hours_at_risk).sum(),
            _ => 0.0,
        }
    }

    /// One line for the audit log and the command line.
    pub fn summary(&self) -> String {
        let pos = match (self.old_position, self.new_position) {
            (Some(a), Some(b)) => format!(
                "position {a} -> {b} of {} in {}",
                self.queue_length, self.share
            ),
            _ => format!("not queued (share {})", self.share),
        };
        let what = match &self.prediction {
            Prediction::NotWaiting { status } => format!("job is {status}"),
            Prediction::Waits { ahead } => format!("{ahead} job(s) stay ahead"),
            Prediction::RunsOnOwnCapacity => "runs on its share's unused capacity".to_string(),
            Prediction::ReclaimsLent { instances } => {
                format!("reclaims {instances} lent instance(s) by cross-share preemption")
            }
            Prediction::Borrows { instances } => format!("runs borrowing {instances} instance(s)"),
            Prediction::Preempts(c) => format!(
                "in-share preemption of {} ({:.1} instance-hours at risk)",
                c.iter()
                    .map(|c| c.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                self.instance_hours_at_risk()
            ),
            Prediction::WaitsForCapacity => {
                "waits for capacity (no preemption possible)".to_string()
            }
            Prediction::CannotRun { reason } => format!("cannot run at any priority: {reason}"),
        };
        format!(
            "priority {} -> {}; {pos}; {what}",
            self.old_priority, self.new_priority
        )
    }
}

/// Previews setting `job_id`'s priority to `new_priority` on snapshot `q`.
pub fn preview(q: &QueueSnapshot, job_id: &str, new_priority: u32) -> Result<Preview, ActionError> {
    let tracked = q
        .jobs
        .iter()
        .find(|j| j.job.id == job_id || j.arn == job_id)
        .ok_or_else(|| ActionError::UnknownJob(job_id.to_string()))?;
    let job = &tracked.job;
    if job.status.is_terminal() {
        return Err(ActionError::Finished(job.id.clone(), job.status.as_str()));
    }
    let share = q.shares.iter().find(|s| s.name == job.share);
    let in_share = share.is_some_and(|s| s.in_share_preemption.enabled());

    // Positions by priority order (the service's own front-of-queue order reflects the old
    // priorities, so both positions are computed the same way, without it).
    let mut before = q.clone();
    before.front_of_queue.clear();
    let mut after = before.clone();
    if let Some(j) = after.jobs.iter_mut().find(|j| j.job.id == job.id) {
        j.job.priority = new_priority;
        j.described_at = j.described_at.or(Some(0));
    }
    let old_queue = analysis::share_queue(&before, &job.share);
    let new_queue = analysis::share_queue(&after, &job.share);
    let old_position = old_queue
        .iter()
        .find(|j| j.job_id == job.id)
        .map(|j| j.share_position);
    let new_position = new_queue
        .iter()
        .find(|j| j.job_id == job.id)
        .map(|j| j.share_position);

    let misconfigured = job
        .status_reason
        .as_deref()
        .filter(|r| r.starts_with("MISCONFIGURATION"));
    let prediction = if job.status != JobStatus::Runnable {
        Prediction::NotWaiting { status: job.status }
    } else if let Some(reason) = misconfigured {
        Prediction::CannotRun {
            reason: reason.to_string(),
        }
    } else {
        predict(
            &after,
            job_id_of(tracked),
            new_priority,
            in_share,
            &new_queue,
        )
    };
    Ok(Preview {
        job_id: job.id.clone(),
        job_name: job.name.clone(),
        job_arn: tracked.arn.clone(),
        share: job.share.clone(),
        old_priority: job.priority,
        new_priority,
        old_position,
        new_position,
        queue_length: new_queue.len(),
        in_share_preemption: in_share,
        prediction,
    })
}

fn job_id_of(t: &crate::model::TrackedJob) -> &str {
    &t.job.id
}

/// The engine's placement rules for the job at its new priority (see `engine::policy`).
fn predict(
    q: &QueueSnapshot,
    job_id: &str,
    priority: u32,
    in_share: bool,
    queue: &[analysis::QueuedJob],
) -> Prediction {
    let Some(job) = q.jobs.iter().find(|j| j.job.id == job_id).map(|j| &j.job) else {
        return Prediction::WaitsForCapacity;
    };
    // Head-of-line: only the first waiting job of its instance type in its share moves now.
    let ahead = queue
        .iter()
        .take_while(|j| j.job_id != job.id)
        .filter(|j| j.instance_type == job.instance_type && !j.misconfigured)
        .count();
    if ahead > 0 {
        return Prediction::Waits { ahead };
    }
    let usage = share_usage(q);
    let Some(own) = usage
        .iter()
        .find(|u| u.share == job.share && u.instance_type == job.instance_type)
    else {
        return Prediction::WaitsForCapacity;
    };
    let n = job.instance_count;
    // Unused own capacity, part of it possibly lent out (reclaimable).
    let free_own = own.limit.saturating_sub(own.own_used);
    if own.used + n <= own.limit {
        return if n <= own.idle {
            Prediction::RunsOnOwnCapacity
        } else if n <= free_own {
            Prediction::ReclaimsLent {
                instances: n - own.idle,
            }
        } else {
            Prediction::WaitsForCapacity
        };
    }
    // Beyond its own limit: borrow if the share may and others have idle capacity.
    if own.strategy.borrows() {
        let share = q.shares.iter().find(|s| s.name == job.share);
        let cap = share.and_then(|s| s.sharing.borrow_cap(own.limit));
        // The job takes its share's unused own capacity and borrows the rest.
        let borrow = n.saturating_sub(free_own);
        let pool: u32 = usage
            .iter()
            .filter(|u| {
                u.instance_type == job.instance_type && u.share != job.share && u.strategy.lends()
            })
            .map(|u| u.idle)
            .sum();
        let within_cap = cap.is_none_or(|c| own.borrowed + borrow <= c);
        if within_cap && borrow <= pool {
            return Prediction::Borrows { instances: borrow };
        }
    }
    if !in_share {
        return Prediction::WaitsForCapacity;
    }
    // In-share preemption: strictly lower priority jobs of the same share and type, in the
    // engine's victim order, until the job fits its share.
    let now = analysis::now_of(q).unwrap_or(0);
    let running = analysis::running_jobs(q, Some(&job.share));
    let mut facts: Vec<(VictimFacts, &crate::model::TrackedJob)> = running
        .iter()
        .filter(|r| {
            r.job.instance_type == job.instance_type
                && r.job.priority < priority
                && !r
                    .job
                    .status_reason
                    .as_deref()
                    .is_some_and(|s| s.starts_with("PREEMPTION_IN_PROGRESS"))
        })
        .enumerate()
        .map(|(i, r)| {
            let start = r.job.started_at.or(r.job.scheduled_at).unwrap_or(now);
            (
                VictimFacts {
                    priority: r.job.priority,
                    elapsed_ms: (now - start).max(0),
                    borrowed: 0,
                    job: i as u32,
                },
                *r,
            )
        })
        .collect();
    facts.sort_by_key(|(f, _)| policy::in_share_victim_key(f));
    let mut used = own.used;
    let mut chosen = Vec::new();
    for (f, r) in facts {
        if used + n <= own.limit {
            break;
        }
        used -= r.job.instance_count.min(used);
        chosen.push(Candidate {
            job_id: r.job.id.clone(),
            name: r.job.name.clone(),
            priority: r.job.priority,
            instance_type: r.job.instance_type.clone(),
            instance_count: r.job.instance_count,
            running_ms: f.elapsed_ms,
            instance_hours_at_risk: f.elapsed_ms as f64 / 3_600_000.0 * r.job.instance_count as f64,
        });
    }
    if used + n <= own.limit && !chosen.is_empty() {
        Prediction::Preempts(chosen)
    } else {
        Prediction::WaitsForCapacity
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::fixture::{job, queue};
    use crate::model::SharingConfig;

    const P4: &str = "ml.p4d.24xlarge";

    fn world(in_share: bool) -> QueueSnapshot {
        let mut q = queue(&[("s", P4, 2, SharingConfig::reserve())]);
        q.shares[0] = q.shares[0].clone().with_in_share_preemption(in_share);
        let mut low = job("low-run", "s", P4, 1, JobStatus::Running, 1, 0);
        low.job.started_at = Some(1_000_000 - 1_800_000);
        let mut mid = job("mid-run", "s", P4, 1, JobStatus::Running, 3, 0);
        mid.job.started_at = Some(1_000_000 - 3_600_000);
        q.jobs = vec![
            low,
            mid,
            job("waiting-a", "s", P4, 1, JobStatus::Runnable, 2, 10),
            job("target", "s", P4, 1, JobStatus::Runnable, 0, 20),
        ];
        q
    }

    #[test]
    fn raising_to_the_head_preempts_the_lowest_priority_running_job() {
        let p = preview(&world(true), "id-target", 5).unwrap();
        assert_eq!(
            (p.old_position, p.new_position, p.queue_length),
            (Some(2), Some(1), 2)
        );
        let Prediction::Preempts(c) = &p.prediction else {
            panic!("{:?}", p.prediction)
        };
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].name, "low-run");
        assert!((p.instance_hours_at_risk() - 0.5).abs() < 1e-9);
        assert!(
            p.summary().contains("in-share preemption of low-run"),
            "{}",
            p.summary()
        );
    }

    /// A job the service refuses to place stays last whatever its priority, and the preview
    /// says why instead of predicting a preemption it will never cause.
    #[test]
    fn a_misconfigured_job_cannot_run_at_any_priority() {
        let mut q = world(true);
        let reason = "MISCONFIGURATION:QUOTA_MANAGEMENT_LIMIT_EXCEEDED - too big";
        if let Some(t) = q.jobs.iter_mut().find(|j| j.job.name == "target") {
            t.job.status_reason = Some(reason.into());
        }
        let p = preview(&q, "id-target", 9_000).unwrap();
        assert_eq!((p.old_position, p.new_position), (Some(2), Some(2)));
        assert_eq!(
            p.prediction,
            Prediction::CannotRun {
                reason: reason.into()
            }
        );
        assert!(p.summary().contains("cannot run at any priority"));
    }

    #[test]
    fn only_strictly_lower_priority_and_only_when_enabled() {
        // Priority 3 does not preempt the priority-3 job, only the priority-1 one.
        let p = preview(&world(true), "id-target", 3).unwrap();
        assert!(matches!(&p.prediction, Prediction::Preempts(c) if c[0].name == "low-run"));
        // Priority 1 ties the lowest running job: nothing to preempt, and waiting-a (2) stays ahead.
        let p = preview(&world(true), "id-target", 1).unwrap();
        assert_eq!(p.prediction, Prediction::Waits { ahead: 1 });
        let p = preview(&world(false), "id-target", 5).unwrap();
        assert_eq!(p.prediction, Prediction::WaitsForCapacity);
    }

    #[test]
    fn finished_and_unknown_jobs_are_refused() {
        let mut q = world(true);
        q.jobs[3].job.status = JobStatus::Succeeded;
        assert!(matches!(
            preview(&q, "id-target", 5),
            Err(ActionError::Finished(..))
        ));
        assert!(matches!(
            preview(&q, "nope", 5),
            Err(ActionError::UnknownJob(_))
        ));
    }
}
