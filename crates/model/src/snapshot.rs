//! What one refresh of the console's data holds: the contract between `poll/` (which builds it),
//! `analysis/` (pure functions over it) and `tui/` (which draws it).
//!
//! A snapshot is owned data: the poller sends a fresh one over a channel after every refresh.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Millis, QuotaShare, ServiceEnvironment, ServiceJob};

/// Everything the console knows after one refresh.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Snapshot {
    /// Local wall-clock time (epoch ms) when this refresh finished.
    pub taken_at: Millis,
    /// Monotonic refresh counter of the poller that made it.
    pub sequence: u64,
    pub source: Source,
    pub queues: Vec<QueueSnapshot>,
    pub health: PollHealth,
    /// Each source's health when the snapshot merges several (`[[sources]]`, see
    /// [`super::Fleet`]); empty for the one implicit source.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<super::SourceStatus>,
}

/// Where the data comes from (shown in the status bar).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Source {
    /// Endpoint URL override (the emulator), `None` for the regional AWS endpoint.
    pub endpoint: Option<String>,
    pub profile: Option<String>,
    pub region: Option<String>,
}

/// One quota-managed job queue.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct QueueSnapshot {
    pub name: String,
    /// The source (`[[sources]] name`) this queue was read from; `None` for the one implicit
    /// source (and in journals written before sources existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    pub arn: String,
    /// `ENABLED` / `DISABLED`.
    pub state: String,
    /// `VALID`, `INVALID`, …
    pub status: String,
    pub scheduling_policy_arn: Option<String>,
    pub environment: ServiceEnvironment,
    pub shares: Vec<QuotaShare>,
    /// Every job the poller tracks for this queue (active ones and recently finished ones).
    pub jobs: Vec<TrackedJob>,
    /// GetJobQueueSnapshot `frontOfQueue`: RUNNABLE jobs in dispatch order.
    pub front_of_queue: Vec<FrontEntry>,
    /// GetJobQueueSnapshot `frontOfQuotaShares`: first RUNNABLE job(s) per share.
    pub front_of_shares: BTreeMap<String, Vec<FrontEntry>>,
    /// GetJobQueueSnapshot `queueUtilization`: instances in use per share and instance type.
    pub utilization: BTreeMap<String, BTreeMap<String, f64>>,
    /// The service's own clock as last seen (`lastUpdatedAt` of the queue snapshot): waiting
    /// times are measured against it, not the local clock (the emulator's clock runs faster).
    pub server_time: Option<Millis>,
    /// When this queue's data last refreshed completely (local epoch ms); older than the
    /// snapshot's `taken_at` when the last refresh failed.
    pub refreshed_at: Option<Millis>,
    /// Why the last refresh of this queue was incomplete, if it was.
    pub stale_reason: Option<String>,
    /// The queue's jobs are being listed and the listing is not complete yet (the console's
    /// early look and the progress snapshots of a long refresh), or it never completed: the
    /// jobs shown are those listed so far. Such a view is never complete
    /// ([`Snapshot::is_complete`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listing: Option<ListingProgress>,
    /// What this refresh saw of the training jobs behind the queue's jobs: checkpoint objects
    /// listed and marks read from attempts' logs (only what it read; the journal keeps them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub training: Vec<TrainingEvidence>,
}

/// What one refresh saw of one job's training job.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TrainingEvidence {
    pub job_id: String,
    /// The objects under the job's `CheckpointConfig.S3Uri`, when it was listed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listing: Option<CheckpointListingSeen>,
    /// Marks read from attempts' logs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub marks: Vec<AttemptMark>,
}

/// A listing of a job's checkpoint prefix.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CheckpointListingSeen {
    /// `s3://bucket/prefix` listed.
    pub uri: String,
    pub objects: Vec<CheckpointObjectSeen>,
    /// The listing stopped at its bound: more objects were there.
    pub truncated: bool,
}

/// One object under a checkpoint prefix.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CheckpointObjectSeen {
    /// Its key below the listed prefix.
    pub key: String,
    pub last_modified: Millis,
    pub size: u64,
}

/// What an attempt's training-job log said.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct AttemptMark {
    /// The attempt's `serviceResourceId` (its training job's ARN).
    pub attempt: String,
    /// When the preemption signal was logged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal_at: Option<Millis>,
    /// Whether the attempt restored a checkpoint (its first lines matched the restore pattern,
    /// or did not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restored: Option<bool>,
    /// When the attempt's log said it restored a checkpoint (the restore line's time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restored_at: Option<Millis>,
}

/// How far a listing of a queue's jobs has got (see [`QueueSnapshot::listing`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ListingProgress {
    /// Jobs listed so far by the listing in progress.
    pub listed: usize,
}

/// A job and how fresh its details are.
impl QueueSnapshot {
    /// `(described, listed)` while some listed job has not been described yet (a partial view:
    /// its priority and preemption facts are unknown); `None` once every job is described.
    pub fn describe_progress(&self) -> Option<(usize, usize)> {
        let described = self
            .jobs
            .iter()
            .filter(|j| j.described_at.is_some())
            .count();
        (described < self.jobs.len()).then_some((described, self.jobs.len()))
    }
}

impl Snapshot {
    /// Whether every queue's every job is listed and described (a complete view). A snapshot
    /// from history never is: it is what was known then, not now; nor one taken while a
    /// listing was in progress ([`QueueSnapshot::listing`]).
    pub fn is_complete(&self) -> bool {
        !self.health.from_history
            && self
                .queues
                .iter()
                .all(|q| q.listing.is_none() && q.describe_progress().is_none())
    }

    /// How old a snapshot loaded from the journal at start is at `now` (local clock, never
    /// negative); `None` for a live one.
    pub fn history_age(&self, now: Millis) -> Option<Millis> {
        self.health
            .from_history
            .then(|| now.saturating_sub(self.taken_at).max(0))
    }

    /// This snapshot as a warm start: marked from history, with the health of a poller that
    /// has not refreshed yet (what it knew then says nothing about the API now).
    pub fn into_history(mut self) -> Self {
        self.health = PollHealth {
            from_history: true,
            ..PollHealth::default()
        };
        self
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrackedJob {
    /// The job; `priority`, `preemption` and `attempts` are only known once described. Shared
    /// (`Arc`): the poller's tracker, each snapshot it sends, the console and the journal's
    /// writer hold the same job, not a copy each (at 50,000 jobs a copy is tens of MB); change
    /// one with `Arc::make_mut`.
    pub job: std::sync::Arc<ServiceJob>,
    /// Job ARN (used to match GetJobQueueSnapshot entries).
    pub arn: String,
    /// When the job's details (DescribeServiceJob) were last fetched (local epoch ms); `None`
    /// when only its ListServiceJobs summary is known.
    pub described_at: Option<Millis>,
    /// When the job last appeared in a ListServiceJobs answer (local epoch ms).
    pub listed_at: Millis,
}

/// One entry of a GetJobQueueSnapshot front-of-queue list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrontEntry {
    pub job_arn: String,
    /// When the job reached its current position (service clock).
    pub earliest_time_at_position: Option<Millis>,
}

/// How the data path is doing (status bar, staleness).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PollHealth {
    pub state: HealthState,
    /// API calls made in the last 60 s.
    pub calls_last_minute: u32,
    /// Throttled responses in the last 60 s.
    pub throttled_last_minute: u32,
    /// Failed calls (other than throttling) in the last 60 s.
    pub errors_last_minute: u32,
    pub last_error: Option<String>,
    /// Describes a second the API allows, as the poller learned it from throttling; `None`
    /// while nothing was throttled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub describe_rate: Option<f64>,
    /// Seconds until every job is described (a complete view), when the poller is behind;
    /// `None` when the view is complete or nothing is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub complete_in_s: Option<u64>,
    /// The snapshot was loaded from the journal at start (a warm start), not refreshed now:
    /// shown as "from history, N min old" until the first live refresh replaces it, never as
    /// live or complete, and never journaled again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub from_history: bool,
    /// Sent while a refresh is still running (the early look, a progress snapshot): the
    /// refresh's own snapshot follows it. The console shows it; the journal keeps only some
    /// (see `commands::console`'s tee).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub in_progress: bool,
    /// With Batch's events applied (`record --events-queue`): changes the periodic full listing
    /// found that no event told (a new job, a status, a number of attempts, a priority), since
    /// the poller started (`quotatop_events_missed_total`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub events_missed: u64,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if takes a reference
fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HealthState {
    /// No refresh has finished yet.
    #[default]
    Starting,
    Healthy,
    /// The API throttles; data is partly stale, the poller backs off.
    Throttled,
    /// Some calls fail; data is partly stale.
    Degraded,
    /// Nothing answers; everything shown is stale.
    Unreachable,
    /// Credentials were refused.
    Denied,
    /// The credentials' session expired: refresh them.
    Expired,
    /// No credentials were found (nothing could be signed).
    NoCredentials,
}
