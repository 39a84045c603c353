#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! A partial snapshot (the console's progressive first load, or describes cut by a rate limit)
//! is journaled as partial: jobs only listed are not taken as facts, and a warm start's
//! snapshot loaded from the journal is never journaled again.

use crate::StoreLocation;
use crate::journal::*;
use quotatop_analysis::fixture;
use quotatop_analysis::scorecard::Window;
use quotatop_model::{Attempt, JobStatus, Millis, SharingConfig, Snapshot, TrackedJob};

const G5: &str = "ml.g5.12xlarge";

fn snap(t: Millis, jobs: Vec<TrackedJob>) -> Snapshot {
    let mut q = fixture::queue(&[("a", G5, 2, SharingConfig::lend())]);
    q.server_time = Some(t);
    q.jobs = jobs;
    Snapshot {
        taken_at: t,
        sequence: t as u64,
        queues: vec![q],
        ..Default::default()
    }
}

/// A job as DescribeServiceJob shows it (priority 50), or as its listing alone does (priority
/// unknown, shown 0; no attempts).
fn job(name: &str, status: JobStatus, described: bool) -> TrackedJob {
    let mut j = fixture::job(name, "a", G5, 1, status, 50, 1_000);
    if status == JobStatus::Succeeded {
        std::sync::Arc::make_mut(&mut j.job).scheduled_at = Some(1_500);
        std::sync::Arc::make_mut(&mut j.job).started_at = Some(2_000);
        std::sync::Arc::make_mut(&mut j.job).stopped_at = Some(3_000);
        std::sync::Arc::make_mut(&mut j.job).attempts = vec![Attempt {
            resource_id: format!("tj-{name}"),
            started_at: Some(2_000),
            stopped_at: Some(3_000),
            status_reason: None,
        }];
    }
    if !described {
        std::sync::Arc::make_mut(&mut j.job).priority = 0;
        std::sync::Arc::make_mut(&mut j.job).attempts.clear();
        j.described_at = None;
    }
    j
}

fn all_time() -> Window {
    Window::new(0, Millis::MAX)
}

pub fn jobs_only_listed_are_not_journaled_as_facts(store: &StoreLocation) {
    let mut j = Journal::open_at(store, JournalConfig::default()).unwrap();
    // The first look: listings only. Then the same jobs described.
    let partial = snap(
        10_000,
        vec![
            job("w", JobStatus::Runnable, false),
            job("d", JobStatus::Succeeded, false),
        ],
    );
    assert!(!partial.is_complete());
    j.record(&partial).unwrap();
    let complete = snap(
        20_000,
        vec![
            job("w", JobStatus::Runnable, true),
            job("d", JobStatus::Succeeded, true),
        ],
    );
    j.record(&complete).unwrap();
    let queue = &complete.queues[0].name;
    // No priority change from the listing's unknown (0) to the described 50.
    assert_eq!(j.priority_changes(queue, all_time()).unwrap(), vec![]);
    let jobs = j.jobs(queue, 0).unwrap();
    assert_eq!(jobs.len(), 2);
    assert!(jobs.iter().all(|r| r.priority == 50), "{jobs:?}");
    // One completion, of its attempt (not a second one without it from the listing).
    let done: Vec<_> = j
        .transitions("id-d")
        .unwrap()
        .into_iter()
        .filter(|t| t.kind == TransitionKind::Completed)
        .map(|t| t.attempt)
        .collect();
    assert_eq!(done, vec!["tj-d".to_string()]);
}

pub fn a_partial_snapshot_is_stored_as_partial_and_the_next_complete_one_follows_it(
    store: &StoreLocation,
) {
    let mut j = Journal::open_at(store, JournalConfig::default()).unwrap();
    j.record(&snap(10_000, vec![job("w", JobStatus::Runnable, false)]))
        .unwrap();
    let stored = j.newest_snapshot().unwrap().unwrap();
    assert!(!stored.is_complete(), "stored partial, marked so");
    assert_eq!(stored.queues[0].describe_progress(), Some((0, 1)));
    // Within the snapshot interval, yet stored: the first complete view after a partial one.
    let stats = j
        .record(&snap(12_000, vec![job("w", JobStatus::Runnable, true)]))
        .unwrap();
    assert_eq!(stats.snapshots, 1);
    let stored = j.newest_snapshot().unwrap().unwrap();
    assert_eq!(stored.taken_at, 12_000);
    assert!(stored.is_complete());
    // Complete after complete: the interval applies again.
    let stats = j
        .record(&snap(14_000, vec![job("w", JobStatus::Runnable, true)]))
        .unwrap();
    assert_eq!(stats.snapshots, 0);
}

pub fn a_snapshot_from_history_is_never_journaled_again(store: &StoreLocation) {
    let mut j = Journal::open_at(store, JournalConfig::default()).unwrap();
    let warm = snap(10_000, vec![job("w", JobStatus::Runnable, true)]).into_history();
    assert!(
        !warm.is_complete(),
        "history is never a complete view of now"
    );
    let stats = j.record(&warm).unwrap();
    assert_eq!(stats, RecordStats::default());
    assert_eq!(j.newest_snapshot().unwrap(), None);
    assert!(j.jobs(&warm.queues[0].name, 0).unwrap().is_empty());
}
