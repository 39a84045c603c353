//! The training jobs of a region's queues, read from the engine's attempt history: what the
//! CloudWatch Logs ([`super::ops_logs`]) and S3 ([`super::ops_s3`]) operations serve.

use std::collections::BTreeMap;

use quotatop_engine::AttemptWork;
use quotatop_model::Millis;

use super::account::Account;
use super::state::QueueWorld;
use super::training::{
    self, AttemptView, Checkpoint, Object, Training, attempt_checkpoints, attempt_log,
};

/// One job's attempts and how its training job checkpoints.
pub struct JobRun {
    pub training: Training,
    pub instance_type: String,
    pub instance_count: u32,
    pub total_ms: u64,
    /// Per attempt: the training job's name, its status reason, what it did.
    pub attempts: Vec<(String, Option<String>, AttemptWork)>,
}

impl JobRun {
    /// The attempts as their training jobs saw them, each knowing the last checkpoint written
    /// before it started.
    pub fn views(&self, now: Millis) -> Vec<AttemptView<'_>> {
        let mut out: Vec<AttemptView<'_>> = Vec::with_capacity(self.attempts.len());
        let mut written: Vec<Checkpoint> = Vec::new();
        for (i, (name, reason, work)) in self.attempts.iter().enumerate() {
            let found_step = work.running_at.and_then(|t| {
                written
                    .iter()
                    .filter(|c| c.written_at <= t)
                    .max_by_key(|c| c.written_at)
                    .map(|c| c.step)
            });
            let view = AttemptView {
                name,
                number: i + 1,
                work,
                instance_type: &self.instance_type,
                instance_count: self.instance_count,
                total_ms: self.total_ms,
                reason: reason.as_deref(),
                found_step,
            };
            written.extend(attempt_checkpoints(&view, self.training.every_ms, now));
            out.push(view);
        }
        out
    }

    /// Every checkpoint written by `now`, oldest first.
    pub fn checkpoints(&self, now: Millis) -> Vec<Checkpoint> {
        self.views(now)
            .iter()
            .flat_map(|v| attempt_checkpoints(v, self.training.every_ms, now))
            .collect()
    }

    /// The objects under the job's checkpoint prefix by `now`, by key (a key written again, by
    /// an attempt that started over, holds its latest write).
    pub fn objects(&self, now: Millis) -> Vec<Object> {
        let Some((_, prefix)) = &self.training.s3 else {
            return Vec::new();
        };
        let mut by_key: BTreeMap<String, Object> = BTreeMap::new();
        for c in self.checkpoints(now) {
            for o in
                training::checkpoint_objects(&c, prefix, self.instance_count, self.training.fault)
            {
                by_key.insert(o.key.clone(), o);
            }
        }
        by_key.into_values().collect()
    }

    /// The log streams by `now`: `(stream name, lines)` per attempt that ran.
    pub fn streams(&self, now: Millis) -> Vec<(String, Vec<(Millis, String)>)> {
        self.views(now)
            .iter()
            .filter_map(|v| {
                let lines = attempt_log(v, &self.training, now);
                (!lines.is_empty()).then(|| Some((v.stream()?, lines)))?
            })
            .collect()
    }
}

/// The training job's name in its ARN (`…:training-job/<name>`).
pub fn training_job_name(arn: &str) -> &str {
    arn.rsplit('/').next().unwrap_or(arn)
}

/// The runs of one queue's jobs.
pub fn queue_runs(q: &QueueWorld) -> Vec<JobRun> {
    let mut out = Vec::new();
    for job in q.engine.jobs() {
        let Some(id) = q.engine.find(&job.id) else {
            continue;
        };
        let work = q.engine.attempt_work(id);
        if work.is_empty() {
            continue;
        }
        let training = q
            .meta
            .get(&id.0)
            .map(|m| m.training.clone())
            .unwrap_or_default();
        let attempts = job
            .attempts
            .iter()
            .zip(work)
            .map(|(a, w)| {
                (
                    training_job_name(&a.resource_id).to_string(),
                    a.status_reason.clone(),
                    *w,
                )
            })
            .collect();
        out.push(JobRun {
            training,
            instance_type: job.instance_type.clone(),
            instance_count: job.instance_count,
            total_ms: q.engine.work(id).map_or(0, |w| w.work_ms),
            attempts,
        });
    }
    out
}

/// The runs of every job in a region.
pub fn account_runs(account: &Account) -> Vec<JobRun> {
    account.queues.iter().flat_map(queue_runs).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::account::ArnBase;
    use crate::scenario::Scenario;
    use crate::training::CheckpointFault;

    /// The demo's first two simulated hours, every job's run.
    fn demo_runs() -> (Vec<JobRun>, Millis) {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/demo.toml");
        let scenario = Scenario::load(&path).unwrap();
        let base = ArnBase {
            region: "us-east-1".into(),
            account: "123456789012".into(),
        };
        let start = 1_770_000_000_000;
        let mut q = QueueWorld::from_scenario(&scenario, start, &base, Some(1)).unwrap();
        let now = start + 2 * 3_600_000;
        q.catch_up(now).unwrap();
        (queue_runs(&q), now)
    }

    #[test]
    fn logs_and_checkpoints_agree_with_the_engine_on_every_preempted_attempt() {
        let (runs, now) = demo_runs();
        let mut checked = [0usize; 2];
        for run in &runs {
            let views = run.views(now);
            let checkpoints = run.checkpoints(now);
            for (i, v) in views.iter().enumerate() {
                let w = v.work;
                let (Some(from), Some(stop)) = (w.progress_from(), w.stopped_at) else {
                    continue;
                };
                // What the next attempt did (once it ran): restored (it resumed) or started over.
                let Some(next) = views.get(i + 1).filter(|n| n.work.running_at.is_some()) else {
                    continue;
                };
                if !w.preempted {
                    continue;
                }
                let restored = next.work.resumed_ms > 0;
                let last = checkpoints
                    .iter()
                    .filter(|c| c.written_at <= stop && c.written_at >= from)
                    .map(|c| c.written_at)
                    .max();
                let measured = match (restored, last) {
                    (true, Some(c)) => stop - c,
                    _ => stop - from,
                };
                assert_eq!(
                    measured as u64, w.rolled_back_ms,
                    "{} attempt {}",
                    v.name, v.number
                );
                checked[usize::from(run.training.fault.is_some())] += 1;
            }
            // A job whose checkpoints are never restored starts every attempt at step 0.
            if run.training.fault == Some(CheckpointFault::NeverRestored) {
                assert!(views.iter().all(|v| v.work.resumed_ms == 0));
                let log = run.streams(now);
                assert!(
                    log.iter()
                        .all(|(_, lines)| lines[1].1 == "no checkpoint, starting from step 0")
                );
            }
        }
        // Both kinds were seen: checkpointing jobs' preemptions and the never-restoring job's.
        assert!(checked[0] > 0 && checked[1] > 0, "{checked:?}");
    }
}
