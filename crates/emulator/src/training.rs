//! The SageMaker training job behind each attempt, as CloudWatch Logs and S3 would show it: its
//! log lines and its checkpoint objects, derived from what the engine did with the job's work
//! ([`AttemptWork`]), so they never disagree with the schedule.
//!
//! - One log stream per attempt that ran, `<training-job-name>/algo-1-<epoch seconds>`, in the
//!   group [`LOG_GROUP`]: the start; "restored from checkpoint step N" or "no checkpoint, starting
//!   from step 0"; a loss line every [`LOSS_EVERY_MS`] of progress; "saved checkpoint step M"
//!   at each checkpoint; the end (the preemption signal, completion or the failure).
//! - One step is one simulated second of progress. A checkpoint is written each time progress
//!   reaches a multiple of the interval: `<S3Uri>step-<8 digits>/manifest.json` (small, served by
//!   GetObject) and `<S3Uri>step-<8 digits>/model.pt` (its size only).
//! - A job whose checkpoints are [`CheckpointFault::Corrupt`] writes them with an empty shard and
//!   an incomplete manifest; one whose checkpoints are [`CheckpointFault::NeverRestored`] writes
//!   them and never reads them. Either way the engine runs it without checkpoints: every
//!   preempted attempt's progress is lost, as its logs say.

use quotatop_engine::AttemptWork;
use quotatop_model::Millis;

/// The log group SageMaker writes training jobs' logs to.
pub const LOG_GROUP: &str = "/aws/sagemaker/TrainingJobs";
/// Tag that makes a job's checkpoints faulty (`corrupt` or `never-restored`).
pub const CHECKPOINT_FAULT_TAG: &str = "quotatop:checkpoint-fault";
/// The bucket of generated jobs' `CheckpointConfig.S3Uri`.
pub const BUCKET: &str = "quotatop-checkpoints";
/// A loss line every this much progress.
pub const LOSS_EVERY_MS: u64 = 300_000;
/// Bytes of one instance's model shard in a checkpoint.
const SHARD_BYTES: u64 = 734_003_200;

/// What is wrong with a job's checkpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckpointFault {
    /// Written incomplete: the next attempt finds them unusable and starts from step 0.
    Corrupt,
    /// Written, but the job never looks for them: every attempt starts from step 0.
    NeverRestored,
}

impl CheckpointFault {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "corrupt" => Some(Self::Corrupt),
            "never-restored" => Some(Self::NeverRestored),
            _ => None,
        }
    }
}

/// How a job's training job checkpoints: kept by the emulator beside the engine's job.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Training {
    /// Checkpoint interval in ms of progress (`None`: no checkpoints).
    pub every_ms: Option<u64>,
    pub fault: Option<CheckpointFault>,
    /// `CheckpointConfig.S3Uri`, as `(bucket, key prefix ending in '/')`.
    pub s3: Option<(String, String)>,
}

impl Training {
    /// The interval the engine is told: none when the checkpoints are never usable.
    pub fn engine_interval(&self) -> Option<u64> {
        self.every_ms.filter(|_| self.fault.is_none())
    }
}

/// `s3://bucket/prefix` as `(bucket, prefix ending in '/')`.
pub fn parse_s3_uri(uri: &str) -> Option<(String, String)> {
    let rest = uri.strip_prefix("s3://")?;
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    if bucket.is_empty() {
        return None;
    }
    let mut prefix = prefix.to_string();
    if !prefix.is_empty() && !prefix.ends_with('/') {
        prefix.push('/');
    }
    Some((bucket.to_string(), prefix))
}

pub use quotatop_model::checkpoint_uri_of_payload as s3_uri_of_payload;

/// One attempt as its training job saw it.
#[derive(Debug, Clone, Copy)]
pub struct AttemptView<'a> {
    /// The training job's name.
    pub name: &'a str,
    /// 1-based.
    pub number: usize,
    pub work: &'a AttemptWork,
    pub instance_type: &'a str,
    pub instance_count: u32,
    /// The job's whole work, ms.
    pub total_ms: u64,
    /// The attempt's end as the API shows it (`statusReason`).
    pub reason: Option<&'a str>,
    /// The checkpoint the attempt found (the last written before it started), if any: its step.
    pub found_step: Option<u64>,
}

impl AttemptView<'_> {
    /// Progress made by `now` (capped at what the attempt made in all).
    fn progress_at(&self, now: Millis) -> u64 {
        let Some(from) = self.work.progress_from() else {
            return 0;
        };
        let end = self.work.stopped_at.map_or(now, |s| s.min(now));
        let ran = (end - from).max(0) as u64;
        let cap = match self.work.stopped_at {
            Some(_) => self.work.progress_ms,
            None => self.total_ms.saturating_sub(self.work.resumed_ms),
        };
        ran.min(cap)
    }

    /// When the attempt's progress reached `p` (absolute progress, ms).
    fn time_of(&self, p: u64) -> Option<Millis> {
        Some(self.work.progress_from()? + (p - self.work.resumed_ms) as Millis)
    }

    /// The stream holding the attempt's log.
    pub fn stream(&self) -> Option<String> {
        let t = self.work.running_at?;
        Some(format!("{}/algo-1-{}", self.name, t.div_euclid(1000)))
    }
}

/// A checkpoint written by an attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    pub step: u64,
    pub written_at: Millis,
    /// The attempt that wrote it (1-based).
    pub attempt: usize,
    pub training_job: String,
}

/// The checkpoints an attempt has written by `now`, oldest first.
pub fn attempt_checkpoints(
    a: &AttemptView<'_>,
    every: Option<u64>,
    now: Millis,
) -> Vec<Checkpoint> {
    let Some(every) = every.filter(|&e| e > 0) else {
        return Vec::new();
    };
    let (from, to) = (a.work.resumed_ms, a.work.resumed_ms + a.progress_at(now));
    let mut out = Vec::new();
    let mut p = (from / every + 1) * every;
    while p <= to {
        if let Some(t) = a.time_of(p) {
            out.push(Checkpoint {
                step: p / 1000,
                written_at: t,
                attempt: a.number,
                training_job: a.name.to_string(),
            });
        }
        p += every;
    }
    out
}

/// The log lines of an attempt by `now`, in time order.
pub fn attempt_log(a: &AttemptView<'_>, training: &Training, now: Millis) -> Vec<(Millis, String)> {
    let Some(start) = a.work.running_at.filter(|&t| t <= now) else {
        return Vec::new();
    };
    let mut lines = vec![(
        start,
        format!(
            "Training job {} (attempt {}) starting on {} x {}",
            a.name, a.number, a.instance_count, a.instance_type
        ),
    )];
    let resumed_at = start + a.work.overhead_ms as Millis;
    if resumed_at <= now {
        lines.push((resumed_at, restore_line(a, training)));
    }
    let progress = a.progress_at(now);
    let first_loss = (a.work.resumed_ms / LOSS_EVERY_MS + 1) * LOSS_EVERY_MS;
    let mut p = first_loss;
    while p <= a.work.resumed_ms + progress {
        if let Some(t) = a.time_of(p) {
            lines.push((t, format!("step {}: loss={:.4}", p / 1000, loss(p))));
        }
        p += LOSS_EVERY_MS;
    }
    for c in attempt_checkpoints(a, training.every_ms, now) {
        let uri = training
            .s3
            .as_ref()
            .map(|(b, k)| format!(" to s3://{b}/{k}{}", step_dir(c.step)))
            .unwrap_or_default();
        lines.push((
            c.written_at,
            format!("saved checkpoint step {}{uri}", c.step),
        ));
    }
    if let Some(end) = a.work.stopped_at.filter(|&t| t <= now) {
        let step = (a.work.resumed_ms + a.work.progress_ms) / 1000;
        let text = if a.work.preempted {
            format!("received SIGTERM (preemption): stopping at step {step}")
        } else if a.work.resumed_ms + a.work.progress_ms >= a.total_ms {
            format!("training completed at step {step}")
        } else {
            format!(
                "training stopped at step {step}: {}",
                a.reason.unwrap_or("stopped")
            )
        };
        lines.push((end, text));
    }
    // Stable: at one instant the order above (start, restore, loss, checkpoint, end) holds.
    lines.sort_by_key(|&(t, _)| t);
    lines
}

fn restore_line(a: &AttemptView<'_>, training: &Training) -> String {
    let resumed = a.work.resumed_ms / 1000;
    if resumed > 0 {
        let from = training
            .s3
            .as_ref()
            .map(|(b, k)| format!(" (s3://{b}/{k}{}/manifest.json)", step_dir(resumed)))
            .unwrap_or_default();
        return format!("restored from checkpoint step {resumed}{from}");
    }
    match (training.fault, a.found_step) {
        (Some(CheckpointFault::Corrupt), Some(step)) => format!(
            "checkpoint step {step} is corrupt (model.pt is empty); no checkpoint, starting from step 0"
        ),
        _ => "no checkpoint, starting from step 0".to_string(),
    }
}

fn loss(progress_ms: u64) -> f64 {
    2.5 / (1.0 + progress_ms as f64 / 3_600_000.0) + 0.1
}

/// `step-00001800`: the folder of one checkpoint under the job's prefix.
pub fn step_dir(step: u64) -> String {
    format!("step-{step:08}")
}

/// An object in a checkpoint bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Object {
    pub key: String,
    pub last_modified: Millis,
    pub size: u64,
    /// The body, for a manifest (`None`: only the size is kept).
    pub body: Option<String>,
}

/// The objects a checkpoint consists of under `prefix`: its manifest and its model shard.
pub fn checkpoint_objects(
    c: &Checkpoint,
    prefix: &str,
    instance_count: u32,
    fault: Option<CheckpointFault>,
) -> [Object; 2] {
    let dir = format!("{prefix}{}", step_dir(c.step));
    let shard = match fault {
        Some(CheckpointFault::Corrupt) => 0,
        _ => SHARD_BYTES * u64::from(instance_count.max(1)),
    };
    let manifest = serde_json::json!({
        "step": c.step,
        "training_job": c.training_job,
        "attempt": c.attempt,
        "written_at_ms": c.written_at,
        "files": [{"name": "model.pt", "bytes": shard}],
        "complete": fault != Some(CheckpointFault::Corrupt),
    })
    .to_string();
    [
        Object {
            key: format!("{dir}/manifest.json"),
            last_modified: c.written_at,
            size: manifest.len() as u64,
            body: Some(manifest),
        },
        Object {
            key: format!("{dir}/model.pt"),
            last_modified: c.written_at,
            size: shard,
            body: None,
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(work: &AttemptWork) -> AttemptView<'_> {
        AttemptView {
            name: "AWSBatchjob1abc",
            number: 2,
            work,
            instance_type: "ml.g5.2xlarge",
            instance_count: 2,
            total_ms: 3_600_000,
            reason: None,
            found_step: Some(600),
        }
    }

    #[test]
    fn checkpoints_fall_at_multiples_of_the_interval_after_the_restore() {
        let w = AttemptWork {
            running_at: Some(1_000_000),
            resumed_ms: 600_000,
            overhead_ms: 0,
            stopped_at: Some(1_000_000 + 700_000),
            progress_ms: 700_000,
            rolled_back_ms: 100_000,
            preempted: true,
        };
        let cs = attempt_checkpoints(&view(&w), Some(300_000), i64::MAX);
        let steps: Vec<u64> = cs.iter().map(|c| c.step).collect();
        assert_eq!(steps, vec![900, 1200]);
        // The last checkpoint before the preemption leaves exactly the engine's lost work.
        let last = cs.last().map(|c| c.written_at).unwrap_or_default();
        assert_eq!(
            (w.stopped_at.unwrap_or_default() - last) as u64,
            w.rolled_back_ms
        );
        // Before `now`, only what was written by then.
        assert_eq!(
            attempt_checkpoints(&view(&w), Some(300_000), 1_300_000).len(),
            1
        );
        let log = attempt_log(
            &view(&w),
            &Training {
                every_ms: Some(300_000),
                fault: None,
                s3: parse_s3_uri("s3://b/p"),
            },
            i64::MAX,
        );
        let texts: Vec<&str> = log.iter().map(|(_, t)| t.as_str()).collect();
        assert!(texts[1].starts_with("restored from checkpoint step 600 (s3://b/p/step-00000600/"));
        assert!(texts.contains(&"saved checkpoint step 1200 to s3://b/p/step-00001200"));
        assert_eq!(
            texts.last().copied(),
            Some("received SIGTERM (preemption): stopping at step 1300")
        );
    }

    #[test]
    fn s3_uris_and_faults_parse() {
        assert_eq!(
            parse_s3_uri("s3://bucket/a/b"),
            Some(("bucket".into(), "a/b/".into()))
        );
        assert_eq!(
            parse_s3_uri("s3://bucket"),
            Some(("bucket".into(), String::new()))
        );
        assert_eq!(parse_s3_uri("https://x"), None);
        assert_eq!(
            CheckpointFault::parse("corrupt"),
            Some(CheckpointFault::Corrupt)
        );
        assert_eq!(CheckpointFault::parse("other"), None);
        let t = Training {
            every_ms: Some(1),
            fault: Some(CheckpointFault::NeverRestored),
            s3: None,
        };
        assert_eq!(t.engine_interval(), None);
    }
}
