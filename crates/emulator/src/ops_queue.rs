//! GetJobQueueSnapshot: the front of the queue in dispatch order, the front of each quota share,
//! and capacity utilisation.
//!
//! - `frontOfQueue.jobs`: the first 100 RUNNABLE jobs in the engine's dispatch order
//!   (`Engine::queue_order`: priority, then share usage, then age; read with
//!   `Engine::queue_front`, which merges the shares' queues instead of sorting them all). Misconfigured jobs are not in
//!   it: the engine never considers them for dispatch.
//! - `frontOfQuotaShares.quotaShares`: every share, with a one-element list holding its first
//!   RUNNABLE job (a misconfigured one when nothing else waits), or an empty list.
//! - `earliestTimeAtPosition`: the simulated time at which the emulator first saw the job at its
//!   current position; positions are re-read after every request and clock tick, so it is exact
//!   to one tick.
//! - `quotaShareUtilization.topCapacityUtilization`: shares that hold capacity, most instances
//!   first (idle shares are left out, as in AWS's example).

use std::collections::BTreeMap;

use axum::response::Response;
use quotatop_engine::JobId;

use super::error::ApiError;
use super::state::{FRONT_OF_QUEUE, QueueWorld};
use super::wire::{
    CapacityUsage, FrontJob, FrontOfQueue, FrontOfQuotaShares, GetJobQueueSnapshotRequest,
    GetJobQueueSnapshotResponse, QueueUtilization, QuotaShareUtilization, ShareUtilization, ok,
    parse, required_str,
};

pub fn snapshot(world: &mut QueueWorld, body: &[u8]) -> Result<Response, ApiError> {
    let req: GetJobQueueSnapshotRequest = parse(body)?;
    let queue = required_str(req.job_queue, "jobQueue")?;
    world.check_queue(&queue)?;
    let now = world.engine.now();
    ok(&GetJobQueueSnapshotResponse {
        front_of_queue: FrontOfQueue {
            jobs: front_of_queue(world),
            last_updated_at: now,
        },
        front_of_quota_shares: FrontOfQuotaShares {
            quota_shares: front_of_quota_shares(world),
            last_updated_at: now,
        },
        queue_utilization: QueueUtilization {
            total_capacity_usage: total_usage(world),
            quota_share_utilization: QuotaShareUtilization {
                top_capacity_utilization: top_utilization(world),
            },
            last_updated_at: now,
        },
    })
}

fn arn_of(world: &QueueWorld, id: JobId) -> String {
    world
        .engine
        .job_uuid(id)
        .map(|u| world.job_arn(u))
        .unwrap_or_default()
}

/// The first [`FRONT_OF_QUEUE`] RUNNABLE jobs in dispatch order.
fn front_of_queue(world: &QueueWorld) -> Vec<FrontJob> {
    world
        .engine
        .queue_front(FRONT_OF_QUEUE)
        .into_iter()
        .map(|id| FrontJob {
            job_arn: arn_of(world, id),
            earliest_time_at_position: world.position_since(id),
        })
        .collect()
}

/// Every share, with its first RUNNABLE job or an empty list.
fn front_of_quota_shares(world: &QueueWorld) -> BTreeMap<String, Vec<FrontJob>> {
    let mut fronts = BTreeMap::new();
    for share in world.engine.shares() {
        let front = world
            .share_front(&share.name)
            .map(|(id, since)| FrontJob {
                job_arn: arn_of(world, id),
                earliest_time_at_position: since,
            })
            .into_iter()
            .collect();
        fronts.insert(share.name, front);
    }
    fronts
}

/// Shares that hold capacity, most instances first, then by name.
fn top_utilization(world: &QueueWorld) -> Vec<ShareUtilization> {
    let mut top: Vec<(u64, ShareUtilization)> = world
        .engine
        .usage()
        .into_iter()
        .filter_map(|s| {
            let used: Vec<CapacityUsage> = s
                .usage
                .iter()
                .filter(|u| u.used > 0)
                .map(|u| CapacityUsage {
                    capacity_unit: u.instance_type.clone(),
                    quantity: u.used as f64,
                })
                .collect();
            let total: u64 = s.usage.iter().map(|u| u.used as u64).sum();
            (total > 0).then_some({
                (
                    total,
                    ShareUtilization {
                        quota_share_name: s.share.name,
                        capacity_usage: used,
                    },
                )
            })
        })
        .collect();
    top.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then_with(|| a.1.quota_share_name.cmp(&b.1.quota_share_name))
    });
    top.into_iter().map(|(_, u)| u).collect()
}

fn total_usage(world: &QueueWorld) -> Vec<CapacityUsage> {
    world
        .engine
        .total_usage()
        .into_iter()
        .map(|(unit, used)| CapacityUsage {
            capacity_unit: unit,
            quantity: used as f64,
        })
        .collect()
}
