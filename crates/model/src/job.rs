use serde::{Deserialize, Serialize};

use super::Millis;

/// Highest `schedulingPriority` AWS accepts; higher runs first.
pub const MAX_PRIORITY: u32 = 9999;

/// Service job status, in lifecycle order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum JobStatus {
    Submitted,
    Pending,
    Runnable,
    Scheduled,
    Starting,
    Running,
    Succeeded,
    Failed,
}

impl JobStatus {
    pub const ALL: [JobStatus; 8] = [
        JobStatus::Submitted,
        JobStatus::Pending,
        JobStatus::Runnable,
        JobStatus::Scheduled,
        JobStatus::Starting,
        JobStatus::Running,
        JobStatus::Succeeded,
        JobStatus::Failed,
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Submitted => "SUBMITTED",
            JobStatus::Pending => "PENDING",
            JobStatus::Runnable => "RUNNABLE",
            JobStatus::Scheduled => "SCHEDULED",
            JobStatus::Starting => "STARTING",
            JobStatus::Running => "RUNNING",
            JobStatus::Succeeded => "SUCCEEDED",
            JobStatus::Failed => "FAILED",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|st| st.as_str() == s)
    }
    /// SUCCEEDED or FAILED.
    pub fn is_terminal(self) -> bool {
        matches!(self, JobStatus::Succeeded | JobStatus::Failed)
    }
    /// SCHEDULED, STARTING or RUNNING: the job holds capacity.
    pub fn holds_capacity(self) -> bool {
        matches!(
            self,
            JobStatus::Scheduled | JobStatus::Starting | JobStatus::Running
        )
    }
}

impl std::fmt::Display for JobStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One run of a job on capacity (a SageMaker training job).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attempt {
    /// `serviceResourceId.value`: the training job ARN of this attempt.
    pub resource_id: String,
    pub started_at: Option<Millis>,
    pub stopped_at: Option<Millis>,
    pub status_reason: Option<String>,
}

/// An attempt that ended by preemption.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreemptedAttempt {
    pub resource_id: String,
    /// `None`: the start was never seen (the API did not say, and nothing recorded it). Such
    /// an attempt's run time is unknown: it counts as unknown, never as zero.
    pub started_at: Option<Millis>,
    pub stopped_at: Millis,
    pub status_reason: String,
}

/// `preemptionSummary`: present once a job has been preempted.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PreemptionSummary {
    /// Total number of preemptions of this job.
    pub preempted_attempt_count: u32,
    /// A bounded window of the most recent preempted attempts, newest first.
    pub recent_preempted_attempts: Vec<PreemptedAttempt>,
}

/// The tag giving a job's checkpoint interval in seconds (read by the console, the journal and
/// the emulator, which also checkpoints by it).
pub const CHECKPOINT_TAG: &str = "quotatop:checkpoint-seconds";

/// The checkpoint interval in ms from a job's tags: [`CHECKPOINT_TAG`] as a positive whole
/// number of seconds; anything else is no interval.
pub fn checkpoint_from_tags<'a>(mut tags: impl Iterator<Item = (&'a str, &'a str)>) -> Option<u64> {
    tags.find(|(k, _)| *k == CHECKPOINT_TAG)
        .and_then(|(_, v)| v.trim().parse::<u64>().ok())
        .filter(|&s| s > 0)
        .and_then(|s| s.checked_mul(1000))
}

/// The training job's name in its ARN (`arn:aws:sagemaker:…:training-job/<name>`).
pub fn training_job_name(resource_id: &str) -> &str {
    resource_id.rsplit('/').next().unwrap_or(resource_id)
}

/// The prefix of the attempt's log streams in the training-job log group (`<name>/algo-…`).
pub fn stream_prefix(resource_id: &str) -> String {
    format!("{}/", training_job_name(resource_id))
}

/// The phrase of a training job's log line saying it restored a checkpoint (the poller looks
/// for it in each re-run attempt's first lines).
pub const RESTORE_PATTERN: &str = "restored from checkpoint";
/// The phrase of the log line of the preemption signal (its time is when the work stopped).
pub const SIGNAL_PATTERN: &str = "received SIGTERM";

/// `CheckpointConfig.S3Uri` of a SageMaker CreateTrainingJob payload, if it has one.
pub fn checkpoint_uri_of_payload(payload: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(payload).ok()?;
    v.get("CheckpointConfig")?
        .get("S3Uri")?
        .as_str()
        .map(str::to_string)
}

/// The tag naming a job's class of work in the organisation's policy (membership's first
/// source; the journal records it).
pub const CLASS_TAG: &str = "quotatop:class";

/// A job's class from its tags: [`CLASS_TAG`]'s value, trimmed, when not empty.
pub fn class_from_tags<'a>(mut tags: impl Iterator<Item = (&'a str, &'a str)>) -> Option<String> {
    tags.find(|(k, _)| *k == CLASS_TAG)
        .map(|(_, v)| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// A service job as the console and the emulator see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServiceJob {
    pub id: String,
    pub name: String,
    pub share: String,
    pub priority: u32,
    pub instance_type: String,
    pub instance_count: u32,
    pub status: JobStatus,
    pub status_reason: Option<String>,
    pub created_at: Millis,
    pub scheduled_at: Option<Millis>,
    pub started_at: Option<Millis>,
    pub stopped_at: Option<Millis>,
    /// `preemptionConfiguration.preemptionRetriesBeforeTermination`; `None` = requeue forever.
    pub preemption_retries: Option<u32>,
    /// The job's checkpoint interval in ms, from its tag [`CHECKPOINT_TAG`] (seconds) when it
    /// has one: the API does not otherwise show how often a job checkpoints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_interval_ms: Option<u64>,
    /// The job's class tag ([`CLASS_TAG`]) when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class_tag: Option<String>,
    pub preemption: Option<PreemptionSummary>,
    pub attempts: Vec<Attempt>,
    pub is_terminated: bool,
    /// What DescribeServiceJob said beyond the above (retry strategy, timeout, tags,
    /// `capacityUsage` as sent) and the notes of where it disagreed with itself. Boxed: most
    /// of the tens of thousands of jobs a queue holds carry little of it.
    #[serde(default, skip_serializing_if = "crate::job_extra::no_extras")]
    pub extras: Box<crate::job_extra::JobExtras>,
}

/// Why a RUNNABLE job can never run as its queue is configured, as AWS Batch states it in
/// `statusReason`: `MISCONFIGURATION:<CODE> - <message>`. Parsed here, once; every layer asks
/// [`misconfiguration`] (or [`ServiceJob::misconfiguration`]) instead of matching the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Misconfigured<'a> {
    /// `QUOTA_MANAGEMENT_LIMIT_EXCEEDED`, `SERVICE_ENVIRONMENT_MAX_RESOURCE`, … (empty when the
    /// reason gives none).
    pub code: &'a str,
    /// The whole reason as the API gave it.
    pub text: &'a str,
}

const MISCONFIGURATION: &str = "MISCONFIGURATION";

/// The misconfiguration a `statusReason` states, if it states one.
pub fn misconfiguration(status_reason: Option<&str>) -> Option<Misconfigured<'_>> {
    let text = status_reason?;
    let rest = text.strip_prefix(MISCONFIGURATION)?;
    let code = rest.strip_prefix(':').map_or("", |r| {
        r.split([' ', '-']).next().unwrap_or_default().trim()
    });
    Some(Misconfigured { code, text })
}

impl ServiceJob {
    /// Why the job can never run as configured, when its `statusReason` says so.
    pub fn misconfiguration(&self) -> Option<Misconfigured<'_>> {
        misconfiguration(self.status_reason.as_deref())
    }

    pub fn preemption_count(&self) -> u32 {
        self.preemption
            .as_ref()
            .map_or(0, |p| p.preempted_attempt_count)
    }
}

/// Preemption retries a job has left, by AWS's definition of
/// `preemptionRetriesBeforeTermination` ("the number of times a service job can be retried
/// after it is preempted"): `retries` less the `preemptions` already retried (3 with 1 → 2;
/// 1 with 1 → 0: the next preemption terminates it). `None` = no cap (requeued forever). The
/// one place the figure is computed.
pub fn retries_left(retries: Option<u32>, preemptions: u32) -> Option<u32> {
    retries.map(|r| r.saturating_sub(preemptions))
}

#[cfg(test)]
mod retries_left_tests {
    use super::retries_left;

    #[test]
    fn retries_left_is_the_cap_less_the_preemptions() {
        assert_eq!(retries_left(Some(3), 1), Some(2));
        assert_eq!(retries_left(Some(1), 1), Some(0));
        assert_eq!(retries_left(Some(1), 0), Some(1));
        assert_eq!(retries_left(Some(0), 0), Some(0));
        assert_eq!(retries_left(Some(2), 5), Some(0));
        assert_eq!(retries_left(None, 7), None);
    }
}

#[cfg(test)]
mod misconfiguration_tests {
    use super::*;

    #[test]
    fn the_reason_is_parsed_once_into_its_code() {
        let r = "MISCONFIGURATION:QUOTA_MANAGEMENT_LIMIT_EXCEEDED - Job requirements exceed quota share capacity limits.";
        let m = misconfiguration(Some(r)).unwrap();
        assert_eq!(m.code, "QUOTA_MANAGEMENT_LIMIT_EXCEEDED");
        assert_eq!(m.text, r);
        let m =
            misconfiguration(Some("MISCONFIGURATION:SERVICE_ENVIRONMENT_MAX_RESOURCE")).unwrap();
        assert_eq!(m.code, "SERVICE_ENVIRONMENT_MAX_RESOURCE");
        assert_eq!(misconfiguration(Some("MISCONFIGURATION")).unwrap().code, "");
        assert_eq!(misconfiguration(Some("Waiting for capacity")), None);
        assert_eq!(misconfiguration(Some("misconfiguration: lower case")), None);
        assert_eq!(misconfiguration(None), None);
    }
}
