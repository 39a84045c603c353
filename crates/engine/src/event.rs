use quotatop_model::{JobStatus, Millis};

use super::JobId;
use super::policy::{FailureKind, Misconfiguration, PreemptionKind};

/// One change of a job's state: the ground truth that observations are checked against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub time: Millis,
    pub job: JobId,
    /// `None` for the submission itself.
    pub from: Option<JobStatus>,
    pub to: JobStatus,
    pub reason: EventReason,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventReason {
    /// The job was accepted.
    Submitted,
    /// A lifecycle step after its configured delay (SUBMITTED→PENDING→RUNNABLE,
    /// SCHEDULED→STARTING→RUNNING).
    Advanced,
    /// RUNNABLE→SCHEDULED; `borrowed` is how many of its instances are beyond the share's own
    /// limit at dispatch.
    Dispatched { borrowed: u32 },
    /// Work finished: RUNNING→SUCCEEDED.
    Completed,
    /// Preemption began; the job still holds its capacity (status unchanged, reason
    /// `PREEMPTION_IN_PROGRESS: …`).
    PreemptionStarted(PreemptionKind),
    /// Preemption finished: back to RUNNABLE, or FAILED when retries are exhausted.
    Preempted(PreemptionKind),
    /// The job's `preemptionRetriesBeforeTermination` was exceeded.
    RetriesExhausted,
    /// An attempt failed (timeout, max runtime, error): RUNNING→RUNNABLE when retried, else
    /// RUNNING→FAILED.
    AttemptFailed(FailureKind),
    /// TerminateServiceJob.
    Terminated,
    /// Its quota share was deleted.
    ShareDeleted,
    /// The job cannot run as configured and stays RUNNABLE with this reason.
    Misconfigured(Misconfiguration),
    /// A misconfiguration no longer applies (the share's limits changed).
    Reconfigured,
    /// UpdateServiceJob changed the job's scheduling priority.
    PriorityChanged { old: u32, new: u32 },
}
