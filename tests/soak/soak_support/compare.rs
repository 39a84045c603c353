//! The soak's recovery check: the poller's snapshot against the engine's state, as in
//! `tests/it/snapshot_engine.rs` and `tests/it/poll_faults.rs` — every active job (status, priority,
//! preemption count, share), the dispatch order, and use per share and instance type.

use std::collections::BTreeMap;

use quotatop::commands::snapshot::document;
use quotatop_analysis::{self as analysis, LoopRule};
use quotatop_model::Snapshot;

use super::child::Truth;

/// What differs (empty = the snapshot shows the engine's state).
pub fn differences(s: &Snapshot, t: &Truth) -> Vec<String> {
    let Some(q) = s.queues.first() else {
        return vec!["no queue in the snapshot".into()];
    };
    let mut diffs = Vec::new();
    if let Some(r) = &q.stale_reason {
        diffs.push(format!("stale: {r}"));
    }
    if q.server_time != Some(t.now) {
        diffs.push(format!("server time {:?} != {}", q.server_time, t.now));
    }
    for j in &t.active {
        match q.jobs.iter().find(|x| x.job.id == j.id) {
            None => diffs.push(format!("{} missing", j.name)),
            Some(x) => {
                let seen = (
                    x.job.status.as_str(),
                    x.job.priority,
                    x.job.preemption_count(),
                    x.job.share.as_str(),
                );
                let truth = (
                    j.status.as_str(),
                    j.priority,
                    j.preemptions,
                    j.share.as_str(),
                );
                if seen != truth {
                    diffs.push(format!("{}: saw {seen:?}, engine {truth:?}", j.name));
                }
            }
        }
    }
    let active_seen = q
        .jobs
        .iter()
        .filter(|x| !x.job.status.is_terminal())
        .count();
    if active_seen != t.active.len() {
        diffs.push(format!(
            "{active_seen} active jobs seen, engine has {}",
            t.active.len()
        ));
    }
    let order: Vec<String> = analysis::dispatch_order(q)
        .into_iter()
        .filter(|r| !r.misconfigured)
        .map(|r| r.job_id)
        .collect();
    if order != t.order {
        diffs.push(format!(
            "dispatch order differs ({} seen, {} in the engine)",
            order.len(),
            t.order.len()
        ));
    }
    let doc = document(s, &LoopRule::default());
    let seen: BTreeMap<(String, String), (u32, u32, u32)> = doc.queues[0]
        .usage
        .iter()
        .map(|u| {
            (
                (u.share.clone(), u.instance_type.clone()),
                (u.limit, u.used, u.borrowed),
            )
        })
        .collect();
    let truth: BTreeMap<(String, String), (u32, u32, u32)> = t
        .usage
        .iter()
        .map(|(s, ty, l, u, b)| ((s.clone(), ty.clone()), (*l, *u, *b)))
        .collect();
    if seen != truth {
        diffs.push(format!("usage differs: saw {seen:?}, engine {truth:?}"));
    }
    diffs
}
