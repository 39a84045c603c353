//! The JSON document of `quotatop snapshot --format json`. Its shape is a public interface
//! (documented in docs/operator.md, section "snapshot"): these structs exist only for it, so internal
//! types can change without changing the output. Add fields; never rename or remove them
//! without bumping [`SCHEMA`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use quotatop_analysis::{self as analysis, LoopRule};
use quotatop_model::{HealthState, Millis, QueueSnapshot, Snapshot, SourceVerdict, clean_text};

/// Identifies the document's shape.
pub const SCHEMA: &str = "quotatop.snapshot/1";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SnapshotDoc {
    pub schema: String,
    /// Local time the refresh finished (epoch ms).
    pub taken_at: Millis,
    pub source: SourceDoc,
    pub health: HealthDoc,
    pub queues: Vec<QueueDoc>,
    /// With `[[sources]]`: each source's name, where it is and how it did (absent with the one
    /// implicit source).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<SourceHealthDoc>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SourceHealthDoc {
    pub name: String,
    pub endpoint: Option<String>,
    pub region: Option<String>,
    pub profile: Option<String>,
    /// `ok`, `stale`, `error` or `starting`.
    pub verdict: String,
    /// Why it is stale or in error.
    pub reason: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SourceDoc {
    pub endpoint: Option<String>,
    pub region: Option<String>,
    pub profile: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HealthDoc {
    /// `healthy`, `throttled`, `degraded`, `unreachable`, `denied`, `expired`,
    /// `no_credentials` (or `starting`).
    pub state: String,
    pub calls_last_minute: u32,
    pub throttled_last_minute: u32,
    pub errors_last_minute: u32,
    pub last_error: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueueDoc {
    pub name: String,
    /// The `[[sources]]` name the queue was read from (absent with the one implicit source).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    pub arn: String,
    pub state: String,
    pub status: String,
    /// The service's clock at the refresh (epoch ms): waiting times are measured against it.
    pub server_time: Option<Millis>,
    /// `null` when the refresh was complete, else why some data is older.
    pub stale_reason: Option<String>,
    /// Service environment capacity per instance type.
    pub capacity: Vec<CapacityDoc>,
    pub shares: Vec<ShareDoc>,
    /// Per share and instance type.
    pub usage: Vec<UsageDoc>,
    /// RUNNABLE jobs in dispatch order.
    pub runnable: Vec<RunnableDoc>,
    /// Jobs preempted at least once, most preempted first.
    pub preempted: Vec<PreemptedDoc>,
    /// Tracked jobs per status (active jobs, plus recently finished ones).
    pub jobs_by_status: BTreeMap<String, u32>,
    /// Jobs whose data AWS sent disagrees with itself or is out of range (a `capacityUsage`
    /// unit that is not an instance type, …), and what was used instead. Cleaned text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub job_notes: Vec<JobNoteDoc>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobNoteDoc {
    pub job_id: String,
    pub name: String,
    pub note: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapacityDoc {
    pub instance_type: String,
    pub max: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShareDoc {
    pub name: String,
    /// `RESERVE`, `LEND`, `LEND_AND_BORROW`.
    pub strategy: String,
    /// Percent of the share's own limit (`-1` unlimited); `null` unless LEND_AND_BORROW.
    pub borrow_limit: Option<i32>,
    pub in_share_preemption: bool,
    pub enabled: bool,
    /// AWS's status of the share's configuration when it is not `VALID` (`CREATING`,
    /// `UPDATING`, `DELETING`, `INVALID`); absent when valid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    pub limits: Vec<CapacityDoc>,
    /// Jobs preempted at least once, their preemptions, jobs flagged as looping.
    pub preempted_jobs: u32,
    pub preemptions: u32,
    pub looping_jobs: u32,
    pub instance_hours_lost: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UsageDoc {
    pub share: String,
    pub instance_type: String,
    pub limit: u32,
    pub used: u32,
    /// Use within the share's own limit.
    pub own_used: u32,
    pub borrowed: u32,
    /// Own capacity neither used nor lent.
    pub idle: u32,
    /// Own capacity used by other shares (attributed by the rule in crates/analysis/src/usage.rs).
    pub lent: u32,
    pub borrowed_from: Vec<Portion>,
    pub lent_to: Vec<Portion>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Portion {
    pub share: String,
    pub instances: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunnableDoc {
    /// 1-based position in the queue.
    pub position: usize,
    /// 1-based position in its share.
    pub share_position: usize,
    pub job_id: String,
    pub name: String,
    pub share: String,
    /// `null` when the job's details could not be read.
    pub priority: Option<u32>,
    pub instance_type: String,
    pub instance_count: u32,
    pub waiting_since: Millis,
    pub waiting_ms: Option<Millis>,
    pub misconfigured: bool,
    pub status_reason: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PreemptedDoc {
    pub job_id: String,
    pub name: String,
    pub share: String,
    pub status: String,
    pub priority: u32,
    /// `preemptedAttemptCount`.
    pub preemptions: u32,
    pub instance_hours_lost: f64,
    /// More preemptions happened than the API's recent window shows.
    pub loss_is_partial: bool,
    /// Preempted attempts whose start was never seen: not in `instance_hours_lost` (unknown,
    /// not zero), which is then a lower bound.
    #[serde(default)]
    pub attempts_start_unknown: u32,
    /// No `preemptionRetriesBeforeTermination`: requeued forever.
    pub unbounded_retries: bool,
    pub retries_left: Option<u32>,
    pub looping: bool,
}

fn health_name(s: HealthState) -> &'static str {
    match s {
        HealthState::Starting => "starting",
        HealthState::Healthy => "healthy",
        HealthState::Throttled => "throttled",
        HealthState::Degraded => "degraded",
        HealthState::Unreachable => "unreachable",
        HealthState::Denied => "denied",
        HealthState::Expired => "expired",
        HealthState::NoCredentials => "no_credentials",
    }
}

pub fn document(s: &Snapshot, rule: &LoopRule) -> SnapshotDoc {
    SnapshotDoc {
        schema: SCHEMA.to_string(),
        taken_at: s.taken_at,
        source: SourceDoc {
            endpoint: s.source.endpoint.clone(),
            region: s.source.region.clone(),
            profile: s.source.profile.clone(),
        },
        health: HealthDoc {
            state: health_name(s.health.state).to_string(),
            calls_last_minute: s.health.calls_last_minute,
            throttled_last_minute: s.health.throttled_last_minute,
            errors_last_minute: s.health.errors_last_minute,
            last_error: s.health.last_error.clone(),
        },
        queues: s.queues.iter().map(|q| queue(q, rule)).collect(),
        sources: s
            .sources
            .iter()
            .map(|src| {
                let (verdict, reason) = match src.verdict(&s.queues) {
                    SourceVerdict::Starting => ("starting", None),
                    SourceVerdict::Ok => ("ok", None),
                    SourceVerdict::Stale(r) => ("stale", Some(r)),
                    SourceVerdict::Error(r) => ("error", Some(r)),
                };
                SourceHealthDoc {
                    name: src.name.clone(),
                    endpoint: src.source.endpoint.clone(),
                    region: src.source.region.clone(),
                    profile: src.source.profile.clone(),
                    verdict: verdict.to_string(),
                    reason,
                }
            })
            .collect(),
    }
}

fn portions(v: &[(String, u32)]) -> Vec<Portion> {
    v.iter()
        .map(|(share, instances)| Portion {
            share: share.clone(),
            instances: *instances,
        })
        .collect()
}

/// Each share's configuration and its preemptions.
fn share_docs(q: &QueueSnapshot, rule: &LoopRule) -> Vec<ShareDoc> {
    let per_share = analysis::share_preemptions(q, rule);
    q.shares
        .iter()
        .map(|sh| {
            let p = per_share.get(&sh.name).cloned().unwrap_or_default();
            ShareDoc {
                name: sh.name.clone(),
                strategy: sh.sharing.strategy.as_str().to_string(),
                borrow_limit: sh.sharing.strategy.borrows().then(|| {
                    sh.sharing
                        .borrow_limit
                        .unwrap_or(quotatop_model::UNLIMITED_BORROW)
                }),
                in_share_preemption: sh.in_share_preemption.enabled(),
                enabled: sh.state == quotatop_model::ShareState::Enabled,
                status: sh.status.clone(),
                limits: sh
                    .capacity_limits
                    .iter()
                    .map(|c| CapacityDoc {
                        instance_type: c.instance_type.clone(),
                        max: c.max_capacity,
                    })
                    .collect(),
                preempted_jobs: p.jobs,
                preemptions: p.preemptions,
                looping_jobs: p.looping,
                instance_hours_lost: p.instance_hours_lost,
            }
        })
        .collect()
}

fn queue(q: &QueueSnapshot, rule: &LoopRule) -> QueueDoc {
    let mut jobs_by_status = BTreeMap::new();
    for j in &q.jobs {
        *jobs_by_status
            .entry(j.job.status.as_str().to_string())
            .or_insert(0) += 1;
    }
    QueueDoc {
        name: q.name.clone(),
        source: q.source.clone(),
        arn: q.arn.clone(),
        state: q.state.clone(),
        status: q.status.clone(),
        server_time: q.server_time,
        stale_reason: q.stale_reason.clone(),
        capacity: q
            .environment
            .capacity
            .iter()
            .map(|c| CapacityDoc {
                instance_type: c.instance_type.clone(),
                max: c.max_capacity,
            })
            .collect(),
        shares: share_docs(q, rule),
        usage: analysis::share_usage(q)
            .into_iter()
            .map(|u| UsageDoc {
                borrowed_from: portions(&u.borrowed_from),
                lent_to: portions(&u.lent_to),
                share: u.share,
                instance_type: u.instance_type,
                limit: u.limit,
                used: u.used,
                own_used: u.own_used,
                borrowed: u.borrowed,
                idle: u.idle,
                lent: u.lent,
            })
            .collect(),
        runnable: analysis::dispatch_order(q)
            .into_iter()
            .map(|j| RunnableDoc {
                position: j.queue_position,
                share_position: j.share_position,
                job_id: j.job_id,
                name: j.name,
                share: j.share,
                priority: j.priority,
                instance_type: j.instance_type,
                instance_count: j.instance_count,
                waiting_since: j.waiting_since,
                waiting_ms: j.waiting_ms,
                misconfigured: j.misconfigured,
                status_reason: j.reason,
            })
            .collect(),
        preempted: analysis::preemptions(q, rule)
            .into_iter()
            .map(|p| PreemptedDoc {
                job_id: p.job_id,
                name: p.name,
                share: p.share,
                status: p.status.as_str().to_string(),
                priority: p.priority,
                preemptions: p.count,
                instance_hours_lost: p.instance_hours_lost,
                loss_is_partial: p.loss_is_partial,
                attempts_start_unknown: p.starts_unknown,
                unbounded_retries: p.unbounded_retries,
                retries_left: p.retries_left,
                looping: p.looping,
            })
            .collect(),
        jobs_by_status,
        job_notes: job_notes(q),
    }
}

fn job_notes(q: &QueueSnapshot) -> Vec<JobNoteDoc> {
    q.jobs
        .iter()
        .flat_map(|t| {
            t.job.extras.notes.iter().map(|n| JobNoteDoc {
                job_id: clean_text(&t.job.id),
                name: clean_text(&t.job.name),
                note: clean_text(n),
            })
        })
        .collect()
}
