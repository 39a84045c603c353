//! What the Batch calls return, in plain types (no SDK types leave `batch/`). Jobs and shares
//! come back as [`quotatop_model`] types; the rest has no place in the domain model.

use std::collections::BTreeMap;

use quotatop_model::{CapacityLimit, FrontEntry, JobStatus, Millis, ServiceJob};

/// A job queue as DescribeJobQueues reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobQueueInfo {
    pub name: String,
    pub arn: String,
    /// `ENABLED` / `DISABLED`.
    pub state: String,
    /// `VALID`, `INVALID`, …
    pub status: String,
    pub status_reason: Option<String>,
    /// `SAGEMAKER_TRAINING`, `EC2`, … (`None` for classic queues that omit it).
    pub queue_type: Option<String>,
    pub scheduling_policy_arn: Option<String>,
    /// Service environment ARNs in `order`.
    pub service_environments: Vec<String>,
}

/// Which kind of scheduling policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicyKind {
    QuotaShare,
    FairShare,
    /// Neither block present.
    Plain,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchedulingPolicyInfo {
    pub name: String,
    pub arn: String,
    pub kind: PolicyKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceEnvironmentInfo {
    pub name: String,
    pub arn: String,
    pub env_type: Option<String>,
    pub capacity: Vec<CapacityLimit>,
}

/// The fields of a job that show it moved: when any differs between two looks at a job, its
/// details (priority, preemptions, attempts) may have changed and it is described again.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct JobFingerprint {
    pub status: JobStatus,
    pub status_reason: Option<String>,
    /// `latestAttempt.serviceResourceId.value`.
    pub latest_attempt: Option<String>,
    pub scheduled_at: Option<Millis>,
    pub started_at: Option<Millis>,
    pub stopped_at: Option<Millis>,
    pub is_terminated: bool,
}

impl JobFingerprint {
    /// The fingerprint a described job had when it was described, rebuilt from the job itself
    /// (a journaled snapshot keeps jobs, not fingerprints): the latest attempt is the last of
    /// its attempts, as DescribeServiceJob gives them.
    pub fn of_described(job: &ServiceJob) -> Self {
        Self {
            status: job.status,
            status_reason: job.status_reason.clone(),
            latest_attempt: job
                .attempts
                .last()
                .map(|a| a.resource_id.clone())
                .filter(|id| !id.is_empty()),
            scheduled_at: job.scheduled_at,
            started_at: job.started_at,
            stopped_at: job.stopped_at,
            is_terminated: job.is_terminated,
        }
    }
}

/// One ListServiceJobs entry. It carries no priority and no preemption data (reference §3.3).
#[derive(Debug, Clone, PartialEq)]
pub struct JobSummary {
    pub id: String,
    pub arn: String,
    pub name: String,
    pub share: String,
    /// Empty when the listing's `capacityUnit` is not an instance type (see `capacity.rs`).
    pub instance_type: String,
    pub instance_count: u32,
    /// Where the listing's `capacityUsage` was not taken as it is, and why.
    pub capacity_notes: Vec<String>,
    pub created_at: Millis,
    pub fingerprint: JobFingerprint,
}

impl JobSummary {
    /// The summary as a [`ServiceJob`] whose details are not known yet (priority 0, no
    /// preemption data, no attempts).
    pub fn to_job(&self) -> ServiceJob {
        let f = &self.fingerprint;
        ServiceJob {
            id: self.id.clone(),
            name: self.name.clone(),
            share: self.share.clone(),
            priority: 0,
            instance_type: self.instance_type.clone(),
            instance_count: self.instance_count,
            status: f.status,
            status_reason: f.status_reason.clone(),
            created_at: self.created_at,
            scheduled_at: f.scheduled_at,
            started_at: f.started_at,
            stopped_at: f.stopped_at,
            preemption_retries: None,
            class_tag: None,
            preemption: None,
            attempts: Vec::new(),
            checkpoint_interval_ms: None,
            is_terminated: f.is_terminated,
            extras: Box::new(quotatop_model::JobExtras {
                notes: self.capacity_notes.clone(),
                ..Default::default()
            }),
        }
    }

    /// Whether the listing named an instance type.
    fn knows_type(&self) -> bool {
        !self.instance_type.is_empty()
    }

    /// Whether [`JobSummary::apply_to`] would change `job` (a job shared with the snapshots
    /// already sent is copied only when it changed).
    pub fn differs_from(&self, job: &ServiceJob) -> bool {
        let f = &self.fingerprint;
        job.name != self.name
            || job.share != self.share
            || (self.knows_type() && job.instance_type != self.instance_type)
            || (self.knows_type() && job.instance_count != self.instance_count)
            || job.status != f.status
            || job.status_reason != f.status_reason
            || job.created_at != self.created_at
            || job.scheduled_at != f.scheduled_at
            || job.started_at != f.started_at
            || job.stopped_at != f.stopped_at
            || job.is_terminated != f.is_terminated
    }

    /// Updates the listing fields of an already described job, keeping its details.
    pub fn apply_to(&self, job: &mut ServiceJob) {
        let f = &self.fingerprint;
        job.name.clone_from(&self.name);
        job.share.clone_from(&self.share);
        // A listing that does not know the type (its unit is not one) keeps what the job's
        // description said.
        if self.knows_type() {
            job.instance_type.clone_from(&self.instance_type);
            job.instance_count = self.instance_count;
        }
        job.status = f.status;
        job.status_reason.clone_from(&f.status_reason);
        job.created_at = self.created_at;
        job.scheduled_at = f.scheduled_at;
        job.started_at = f.started_at;
        job.stopped_at = f.stopped_at;
        job.is_terminated = f.is_terminated;
    }
}

/// DescribeServiceJob's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct DescribedJob {
    pub job: ServiceJob,
    pub arn: String,
    /// The job's queue (`jobQueue`: its ARN or name).
    pub queue: String,
    pub fingerprint: JobFingerprint,
    /// The payload's `CheckpointConfig.S3Uri`, where the training job writes its checkpoints.
    pub checkpoint_uri: Option<String>,
}

/// GetJobQueueSnapshot's answer.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct QueueFront {
    pub front_of_queue: Vec<FrontEntry>,
    pub front_of_shares: BTreeMap<String, Vec<FrontEntry>>,
    /// Instances in use per share and instance type.
    pub utilization: BTreeMap<String, BTreeMap<String, f64>>,
    /// Instances in use per instance type across the queue.
    pub total_usage: BTreeMap<String, f64>,
    /// The newest of the three `lastUpdatedAt` values: the service's clock.
    pub last_updated_at: Option<Millis>,
}
