//! The normalized input of the scorecard: what happened to each job, whoever observed it.
//!
//! Two producers build it: the journal (what the console saw through the API, see
//! `journal::history`) and the engine's event log (the ground truth, see
//! [`super::from_engine`]). The what-if replay feeds the same type.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::GpuTable;
use quotatop_model::{CapacityLimit, Millis};

/// `[start, end)` in epoch ms (the service's clock).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Window {
    pub start: Millis,
    pub end: Millis,
}

impl Window {
    pub fn new(start: Millis, end: Millis) -> Self {
        Self {
            start,
            end: end.max(start),
        }
    }
    pub fn len_ms(&self) -> Millis {
        self.end - self.start
    }
    pub fn contains(&self, t: Millis) -> bool {
        t >= self.start && t < self.end
    }
    /// Length of the part of `[a, b)` inside the window.
    pub fn overlap_ms(&self, a: Millis, b: Millis) -> Millis {
        (b.min(self.end) - a.max(self.start)).max(0)
    }
}

/// How an attempt (one run on capacity) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttemptEnd {
    /// Still holding capacity when the history ends.
    Open,
    /// Interrupted by preemption (whether the job was requeued or then failed).
    Preempted,
    Completed,
    /// Terminated or failed while holding capacity.
    Failed,
}

/// One attempt of a job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttemptHistory {
    /// When the scheduler gave it capacity (SCHEDULED, `scheduledAt`); `None` when never seen.
    pub scheduled_at: Option<Millis>,
    /// When it began RUNNING (`startedAt` of the attempt); `None` if it never ran.
    pub started_at: Option<Millis>,
    /// When it gave the capacity back (`stoppedAt`); `None` while open.
    pub stopped_at: Option<Millis>,
    pub end: AttemptEnd,
    /// When a preemption of this attempt began (work stops; the capacity is held until
    /// `stopped_at`), when the producer saw it.
    #[serde(default)]
    pub preempting_from: Option<Millis>,
    /// Whether this attempt restored a checkpoint, as its training job's log said (`None`: not
    /// read, or it said neither).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restored: Option<bool>,
    /// When its training job's log said it restored (the restore line's time): how long the
    /// restore took is measured from it ([`super::measured::restore_time`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restored_at: Option<Millis>,
}

impl AttemptHistory {
    /// When the attempt began to hold capacity ([`quotatop_model::held_from`]).
    pub fn held_from(&self) -> Option<Millis> {
        quotatop_model::held_from(self.scheduled_at, self.started_at)
    }
}

/// How the job ended, if it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "state", content = "at")]
pub enum Outcome {
    Open,
    Succeeded(Millis),
    Failed(Millis),
}

/// Everything the scorecard needs to know about one job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobHistory {
    pub job_id: String,
    pub name: String,
    pub share: String,
    /// The last known `schedulingPriority` (bands use it).
    pub priority: u32,
    pub instance_type: String,
    pub instance_count: u32,
    /// `createdAt`.
    pub submitted_at: Millis,
    /// Each time the job became RUNNABLE (first after submission, then after each preemption
    /// that requeued it), in time order.
    pub runnable_at: Vec<Millis>,
    /// Attempts in time order.
    pub attempts: Vec<AttemptHistory>,
    pub outcome: Outcome,
    /// Progress is durable every this many ms of RUNNING, when known.
    pub checkpoint_interval_ms: Option<u64>,
    /// Running time a re-run spends restoring before it makes progress, when the producer knows
    /// it per job (the engine); else the configured restart cost applies.
    #[serde(default)]
    pub restart_overhead_ms: Option<u64>,
    /// `preemptionRetriesBeforeTermination` when known (`None`: requeued forever, or not
    /// known).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preemption_retries: Option<u32>,
    /// The checkpoints seen under the job's `CheckpointConfig.S3Uri` (`None`: not listed; its
    /// lost work is modelled from the interval).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub training: Option<super::measured::TrainingRecord>,
}

/// A share's approved entitlement: its capacity limits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entitlement {
    pub share: String,
    pub limits: Vec<CapacityLimit>,
}

/// The scorecard's input for one queue and window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScorecardInput {
    pub queue: String,
    pub window: Window,
    /// Capacity allocated to the queue (its service environment), per instance type, assumed
    /// constant over the window.
    pub capacity: Vec<CapacityLimit>,
    pub entitlements: Vec<Entitlement>,
    pub jobs: Vec<JobHistory>,
}

/// Knobs of the scorecard; the values used are stated in the output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScorecardOptions {
    pub gpus: GpuTable,
    /// Running time a re-run spends restoring its checkpoint and warming up before it makes
    /// progress again (the ledger's `r`, docs/architecture.md), for jobs whose producer does not know their own.
    pub restart_cost_ms: u64,
    /// An interrupted job counts as recovered when it succeeds within this long of its first
    /// interruption.
    pub recovery_window_ms: Millis,
    /// Checkpoint intervals declared per share (for producers that cannot see them).
    pub checkpoint_by_share: BTreeMap<String, u64>,
}

impl Default for ScorecardOptions {
    fn default() -> Self {
        Self {
            gpus: GpuTable::default(),
            restart_cost_ms: 0,
            recovery_window_ms: 24 * 3_600_000,
            checkpoint_by_share: BTreeMap::new(),
        }
    }
}
