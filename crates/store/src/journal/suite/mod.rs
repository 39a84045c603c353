//! The journal's test suite, one set of tests for both stores: each test takes a fresh,
//! empty store ([`StoreLocation`]) and checks what the journal keeps there. `cargo test`
//! runs it on SQLite (`journal::tests`); `tests/postgres` runs it on a throwaway PostgreSQL
//! cluster, each test of [`TESTS`] on a database of its own.
//!
//! Compiled for this crate's tests and with the `suite` feature (the PostgreSQL test target's).
// Test code: a failed expectation is the test's failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod partial;

pub use partial::*;

use crate::StoreLocation;
use crate::journal::*;
use quotatop_analysis::fixture;
use quotatop_model::{
    Attempt, JobStatus, Millis, QueueSnapshot, SharingConfig, Snapshot, TrackedJob,
};

/// Calls `$m!(name, …)` with every test of the suite: the one list of them.
macro_rules! with_suite_tests {
    ($m:ident) => {
        $m!(
            restart_continues_the_history,
            writer_thread_batches_and_reports_counts,
            retention_drops_old_jobs_samples_and_snapshots,
            time_travel_loads_the_snapshot_in_force,
            preempted_jobs_keep_every_attempt_the_api_window_dropped,
            priority_changes_seen_by_the_poller_are_kept,
            scorecard_input_stops_at_the_window_end,
            two_sources_with_the_same_queue_name_are_kept_apart,
            retries_checkpoints_and_each_share_configuration_are_kept,
            a_preempted_attempts_start_is_kept_after_the_api_window_drops_it,
            a_preempted_attempt_never_seen_starting_has_its_start_unknown,
            jobs_only_listed_are_not_journaled_as_facts,
            a_partial_snapshot_is_stored_as_partial_and_the_next_complete_one_follows_it,
            a_snapshot_from_history_is_never_journaled_again
        );
    };
}
#[cfg(test)]
pub(crate) use with_suite_tests;

macro_rules! test_list {
    ($($name:ident),* $(,)?) => {
        /// Every test of the suite, by name.
        pub const TESTS: &[(&str, fn(&StoreLocation))] =
            &[$((stringify!($name), $name as fn(&StoreLocation))),*];
    };
}
with_suite_tests!(test_list);

const G5: &str = "ml.g5.12xlarge";
const H: Millis = 3_600_000;

fn queue_at(t: Millis, jobs: Vec<TrackedJob>) -> QueueSnapshot {
    let mut q = fixture::queue(&[("a", G5, 2, SharingConfig::lend())]);
    q.server_time = Some(t);
    q.jobs = jobs;
    q
}

fn snap(t: Millis, jobs: Vec<TrackedJob>) -> Snapshot {
    Snapshot {
        taken_at: t,
        sequence: t as u64,
        queues: vec![queue_at(t, jobs)],
        ..Default::default()
    }
}

fn job(name: &str, status: JobStatus) -> TrackedJob {
    fixture::job(name, "a", G5, 1, status, 10, 1_000)
}

fn running(name: &str, scheduled: Millis, started: Millis) -> TrackedJob {
    let mut j = job(name, JobStatus::Running);
    std::sync::Arc::make_mut(&mut j.job).scheduled_at = Some(scheduled);
    std::sync::Arc::make_mut(&mut j.job).started_at = Some(started);
    std::sync::Arc::make_mut(&mut j.job).attempts = vec![Attempt {
        resource_id: format!("tj-{name}"),
        started_at: Some(started),
        stopped_at: None,
        status_reason: None,
    }];
    j
}

fn kinds(j: &Journal, id: &str) -> Vec<(&'static str, Millis)> {
    j.transitions(id)
        .unwrap()
        .into_iter()
        .map(|t| (t.kind.as_str(), t.at))
        .collect()
}

pub fn restart_continues_the_history(store: &StoreLocation) {
    {
        let mut j = Journal::open_at(store, JournalConfig::default()).unwrap();
        j.record(&snap(2_000, vec![job("x", JobStatus::Pending)]))
            .unwrap();
    }
    // Reopened: the job was PENDING when last stored, so its first RUNNABLE is estimated at
    // this observation, not at createdAt.
    let mut j = Journal::open_at(store, JournalConfig::default()).unwrap();
    j.record(&snap(5_000, vec![job("x", JobStatus::Runnable)]))
        .unwrap();
    j.record(&snap(9_000, vec![running("x", 6_000, 7_000)]))
        .unwrap();
    assert_eq!(
        kinds(&j, "id-x"),
        [
            ("submitted", 1_000),
            ("runnable", 5_000),
            ("scheduled", 6_000),
            ("started", 7_000)
        ]
    );
    // A third open sees everything and records nothing twice.
    drop(j);
    let mut j = Journal::open_at(store, JournalConfig::default()).unwrap();
    let stats = j
        .record(&snap(10_000, vec![running("x", 6_000, 7_000)]))
        .unwrap();
    assert_eq!(stats.transitions, 0);
    assert_eq!(kinds(&j, "id-x").len(), 4);
}

pub fn writer_thread_batches_and_reports_counts(store: &StoreLocation) {
    let handle = JournalHandle::start_at(store, JournalConfig::default());
    assert!(handle.record(snap(2_000, vec![job("x", JobStatus::Pending)])));
    assert!(handle.record(snap(5_000, vec![running("x", 3_000, 4_000)])));
    handle.flush();
    let st = handle.status();
    assert_eq!(
        (st.unavailable, st.snapshots_written, st.dropped),
        (None, 2, 0)
    );
    assert_eq!(st.transitions_written, 4);
    handle.shutdown();
    let j = Journal::open_existing_at(store, JournalConfig::default()).unwrap();
    assert_eq!(kinds(&j, "id-x").len(), 4);
}

pub fn retention_drops_old_jobs_samples_and_snapshots(store: &StoreLocation) {
    let cfg = JournalConfig {
        retention_ms: H,
        snapshot_retention_ms: H / 2,
        snapshot_interval_ms: 0,
        usage_interval_ms: 0,
        ..Default::default()
    };
    let mut j = Journal::open_at(store, cfg).unwrap();
    j.record(&snap(10_000, vec![running("old", 2_000, 3_000)]))
        .unwrap();
    j.record(&snap(
        20_000,
        vec![running("old", 2_000, 3_000), job("new", JobStatus::Pending)],
    ))
    .unwrap();
    // Two hours on, only "new" is still tracked.
    let later = 20_000 + 2 * H;
    j.record(&snap(later, vec![job("new", JobStatus::Runnable)]))
        .unwrap();
    // Recording prunes once an hour of service time: this third record already did.
    assert_eq!(j.prune().unwrap(), PruneStats::default());
    let ids: Vec<String> = j
        .jobs("q", 0)
        .unwrap()
        .into_iter()
        .map(|r| r.job_id)
        .collect();
    assert_eq!(ids, ["id-new"]);
    assert!(kinds(&j, "id-old").is_empty());
    assert!(!kinds(&j, "id-new").is_empty());
    assert!(j.usage_series("q", "a", 0, later - H).unwrap().is_empty());
    assert_eq!(j.usage_series("q", "a", later, later).unwrap().len(), 1);
    assert_eq!(j.snapshot_times(0, later).unwrap(), [later]);
}

pub fn time_travel_loads_the_snapshot_in_force(store: &StoreLocation) {
    let cfg = JournalConfig {
        snapshot_interval_ms: 10_000,
        ..Default::default()
    };
    let mut j = Journal::open_at(store, cfg).unwrap();
    for t in [0, 5_000, 10_000, 15_000, 20_000] {
        j.record(&snap(t, vec![job("x", JobStatus::Pending)]))
            .unwrap();
    }
    assert_eq!(j.snapshot_times(0, 30_000).unwrap(), [0, 10_000, 20_000]);
    let s = j.snapshot_at(17_000).unwrap().unwrap();
    assert_eq!(s.taken_at, 10_000);
    assert_eq!(s.queues[0].jobs[0].job.name, "x");
    assert!(j.snapshot_at(-1).unwrap().is_none());
    // Stepping: the neighbours of a time, and where it stands among the stored snapshots.
    assert_eq!(j.snapshot_neighbour(20_000, true).unwrap(), Some(10_000));
    assert_eq!(j.snapshot_neighbour(10_000, true).unwrap(), Some(0));
    assert_eq!(j.snapshot_neighbour(0, true).unwrap(), None);
    assert_eq!(j.snapshot_neighbour(0, false).unwrap(), Some(10_000));
    assert_eq!(j.snapshot_neighbour(20_000, false).unwrap(), None);
    assert_eq!(j.snapshot_position(10_000).unwrap(), (2, 3));
    assert_eq!(j.snapshot_position(-5).unwrap(), (0, 3));
    // A past view's sparklines: the samples up to its time, the newest `n` of each series.
    let used = j.usage_until("q", 15_000, 2).unwrap();
    let series = &used[&("a".to_string(), G5.to_string())];
    assert!(!series.is_empty() && series.len() <= 2, "{series:?}");
    assert!(j.usage_until("q", -1, 2).unwrap().is_empty());
}

/// A job preempted twice while the API's window shows only the newest attempt, then gone from
/// the listing: the journal still knows both attempts.
pub fn preempted_jobs_keep_every_attempt_the_api_window_dropped(store: &StoreLocation) {
    use quotatop_model::{PreemptedAttempt, PreemptionSummary};
    let mut j = Journal::open_at(store, JournalConfig::default()).unwrap();
    let attempt = |id: &str, start: Millis, stop: Millis| PreemptedAttempt {
        resource_id: id.into(),
        started_at: Some(start),
        stopped_at: stop,
        status_reason: "reclaimed".into(),
    };
    let mut x = running("x", 1_500, 2_000);
    j.record(&snap(3_000, vec![x.clone()])).unwrap();
    std::sync::Arc::make_mut(&mut x.job).status = JobStatus::Runnable;
    std::sync::Arc::make_mut(&mut x.job).attempts[0].stopped_at = Some(H);
    std::sync::Arc::make_mut(&mut x.job).preemption = Some(PreemptionSummary {
        preempted_attempt_count: 1,
        recent_preempted_attempts: vec![attempt("tj-x", 2_000, H)],
    });
    j.record(&snap(H + 1_000, vec![x.clone()])).unwrap();
    // Second attempt, preempted too; the window now shows only it.
    std::sync::Arc::make_mut(&mut x.job).attempts = vec![Attempt {
        resource_id: "tj-x2".into(),
        started_at: Some(2 * H),
        stopped_at: Some(3 * H),
        status_reason: None,
    }];
    std::sync::Arc::make_mut(&mut x.job).preemption = Some(PreemptionSummary {
        preempted_attempt_count: 2,
        recent_preempted_attempts: vec![attempt("tj-x2", 2 * H, 3 * H)],
    });
    j.record(&snap(
        3 * H + 1_000,
        vec![x, job("calm", JobStatus::Running)],
    ))
    .unwrap();
    j.record(&snap(4 * H, vec![])).unwrap();

    let recs = j.preempted_jobs("q", 0).unwrap();
    assert_eq!(recs.len(), 1, "only the preempted job: {recs:?}");
    let r = &recs[0];
    assert_eq!((r.job_id.as_str(), r.name.as_str()), ("id-x", "x"));
    let spans: Vec<(&str, Option<Millis>, Millis)> = r
        .attempts
        .iter()
        .map(|a| (a.resource_id.as_str(), a.started_at, a.stopped_at))
        .collect();
    assert_eq!(
        spans,
        [("tj-x2", Some(2 * H), 3 * H), ("tj-x", Some(2_000), H)]
    );
    // Why each ended is kept too, also for the attempt the API's window no longer shows.
    assert!(r.attempts.iter().all(|a| a.status_reason == "reclaimed"));
    // `since` filters by preemption time; another queue has none.
    assert_eq!(j.preempted_jobs("q", 2 * H).unwrap().len(), 1);
    assert!(j.preempted_jobs("q", 3 * H + 1).unwrap().is_empty());
    assert!(j.preempted_jobs("other", 0).unwrap().is_empty());
}

pub fn priority_changes_seen_by_the_poller_are_kept(store: &StoreLocation) {
    let mut j = Journal::open_at(store, JournalConfig::default()).unwrap();
    let mut a = job("x", JobStatus::Runnable);
    j.record(&snap(1_000, vec![a.clone()])).unwrap();
    std::sync::Arc::make_mut(&mut a.job).priority = 900;
    j.record(&snap(2_000, vec![a])).unwrap();
    let changes = j
        .priority_changes("q", quotatop_analysis::scorecard::Window::new(0, 10_000))
        .unwrap();
    assert_eq!(changes.len(), 1);
    assert_eq!(
        (changes[0].old, changes[0].new, changes[0].at),
        (10, 900, 2_000)
    );
    assert_eq!(j.jobs("q", 0).unwrap()[0].priority, 900);
}

/// A window ending in the past counts only what was known then: jobs submitted later and
/// transitions after its end are left out.
pub fn scorecard_input_stops_at_the_window_end(store: &StoreLocation) {
    use quotatop_analysis::scorecard::{ScorecardOptions, Window};
    let mut j = Journal::open_at(store, JournalConfig::default()).unwrap();
    let mut late = job("late", JobStatus::Runnable);
    std::sync::Arc::make_mut(&mut late.job).created_at = 5 * H;
    j.record(&snap(H, vec![running("early", 1_500, 2_000)]))
        .unwrap();
    j.record(&snap(6 * H, vec![running("early", 1_500, 2_000), late]))
        .unwrap();
    let opts = ScorecardOptions::default();
    let all = scorecard_input(&j, "q", Window::new(0, 6 * H + 1), &opts).unwrap();
    assert_eq!(all.jobs.len(), 2);
    let then = scorecard_input(&j, "q", Window::new(0, 2 * H), &opts).unwrap();
    let names: Vec<&str> = then.jobs.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["early"]);
    // Its history stops at the end too: started at 2 s, still open then.
    assert!(then.jobs[0].attempts.iter().all(|a| a.stopped_at.is_none()));
}

// Migration from schema 1 is tested against a committed version-1 file:
// tests/it/journal_migrate.rs (tests/fixtures/journal_v1.sqlite3).

/// Two sources that both have queue `q`: the journal keeps each one's queue, jobs and usage
/// apart, read back by the queue's key; the implicit source's rows (no source) stay readable
/// by the plain name.
pub fn two_sources_with_the_same_queue_name_are_kept_apart(store: &StoreLocation) {
    let mut j = Journal::open_at(store, JournalConfig::default()).unwrap();
    let mut us = queue_at(1_000, vec![job("u", JobStatus::Runnable)]);
    us.source = Some("us".into());
    let mut eu = queue_at(1_000, vec![job("e", JobStatus::Runnable)]);
    eu.source = Some("eu".into());
    eu.shares[0].capacity_limits[0].max_capacity = 7;
    let plain = queue_at(1_000, vec![job("p", JobStatus::Runnable)]);
    j.record(&Snapshot {
        taken_at: 1_000,
        queues: vec![us, eu, plain],
        ..Default::default()
    })
    .unwrap();
    let ids = |key: &str| -> Vec<String> {
        j.jobs(key, 0)
            .unwrap()
            .into_iter()
            .map(|r| r.job_id)
            .collect()
    };
    assert_eq!(ids("q@us"), ["id-u"]);
    assert_eq!(ids("q@eu"), ["id-e"]);
    assert_eq!(ids("q"), ["id-p"]);
    let limit = |key: &str| j.usage_series(key, "a", 0, 2_000).unwrap()[0].limit;
    assert_eq!((limit("q@us"), limit("q@eu"), limit("q")), (2, 7, 2));
    let queues: Vec<(Option<String>, String)> = j
        .queues()
        .unwrap()
        .into_iter()
        .map(|q| (q.source, q.name))
        .collect();
    assert_eq!(
        queues,
        [
            (None, "q".to_string()),
            (Some("eu".to_string()), "q".to_string()),
            (Some("us".to_string()), "q".to_string())
        ]
    );
    let eu = j.queue("q@eu").unwrap().unwrap();
    assert_eq!(eu.shares[0].capacity_limits[0].max_capacity, 7);
    // The configuration history is each source's own too.
    let eu_then = j.queue_at("q@eu", 1_000).unwrap().unwrap();
    assert_eq!(eu_then.shares[0].capacity_limits[0].max_capacity, 7);
    assert_eq!(eu_then.source.as_deref(), Some("eu"));
    let us_then = j.queue_at("q@us", 1_000).unwrap().unwrap();
    assert_eq!(us_then.shares[0].capacity_limits[0].max_capacity, 2);
    assert_eq!(j.first_config_at("q").unwrap(), Some(1_000));
    // The stored snapshot keeps each queue's source.
    let s = j.snapshot_at(1_000).unwrap().unwrap();
    let keys: Vec<String> = s.queues.iter().map(QueueSnapshot::key).collect();
    assert_eq!(keys, ["q@us", "q@eu", "q"]);
}

/// Each job's retry cap and checkpoint interval are kept as last described (a listing-only
/// sighting, which does not carry them, never clears them), and every share configuration the
/// queue had is kept once, so a replay can start from the one in force at a time.
pub fn retries_checkpoints_and_each_share_configuration_are_kept(store: &StoreLocation) {
    let mut j = Journal::open_at(store, JournalConfig::default()).unwrap();
    let mut x = job("x", JobStatus::Runnable);
    x.described_at = Some(1_000);
    std::sync::Arc::make_mut(&mut x.job).preemption_retries = Some(3);
    std::sync::Arc::make_mut(&mut x.job).checkpoint_interval_ms = Some(600_000);
    j.record(&snap(1_000, vec![x.clone()])).unwrap();
    // Seen again only in a listing: the facts stay.
    let mut listed = x.clone();
    listed.described_at = None;
    std::sync::Arc::make_mut(&mut listed.job).preemption_retries = None;
    std::sync::Arc::make_mut(&mut listed.job).checkpoint_interval_ms = None;
    j.record(&snap(2_000, vec![listed])).unwrap();
    let rec = &j.jobs("q", 0).unwrap()[0];
    assert_eq!(
        (rec.preemption_retries, rec.checkpoint_ms),
        (Some(3), Some(600_000))
    );
    let h = history::job_history(rec, &[], &Default::default(), None);
    assert_eq!(
        (h.checkpoint_interval_ms, h.preemption_retries),
        (Some(600_000), Some(3))
    );

    // The limit changes at 3 s; the same configuration again at 4 s adds nothing.
    let mut bigger = snap(3_000, vec![]);
    bigger.queues[0].shares[0]
        .capacity_limits
        .iter_mut()
        .for_each(|l| l.max_capacity = 5);
    j.record(&bigger).unwrap();
    let mut again = bigger.clone();
    again.taken_at = 4_000;
    again.sequence = 4_000;
    again.queues[0].server_time = Some(4_000);
    j.record(&again).unwrap();
    let limit = |at| {
        j.queue_at("q", at).unwrap().map(|q| {
            (
                q.shares[0].capacity_limits[0].max_capacity,
                q.last_observed_at,
            )
        })
    };
    assert_eq!(limit(500), None);
    assert_eq!(limit(1_000), Some((2, 1_000)));
    assert_eq!(limit(2_999), Some((2, 1_000)));
    assert_eq!(limit(3_500), Some((5, 3_000)));
    assert_eq!(limit(10_000), Some((5, 3_000)));
    assert_eq!(j.first_config_at("q").unwrap(), Some(1_000));
}

/// An attempt preempted before it started (or before the poller saw it start): the attempts
/// list has no start, the API's window of preempted attempts has one. The journal keeps that
/// start the first time it is seen, so once the window drops the attempt, its start is still
/// the one the API gave, not its stop (which made it "ran 0s" and undercounted the loss).
pub fn a_preempted_attempts_start_is_kept_after_the_api_window_drops_it(store: &StoreLocation) {
    use quotatop_model::{PreemptedAttempt, PreemptionSummary};
    let mut j = Journal::open_at(store, JournalConfig::default()).unwrap();
    let mut x = job("x", JobStatus::Runnable);
    let preempted = |id: &str, start: Millis, stop: Millis| PreemptedAttempt {
        resource_id: id.into(),
        started_at: Some(start),
        stopped_at: stop,
        status_reason: "reclaimed".into(),
    };
    let attempt = |id: &str, stop: Millis| Attempt {
        resource_id: id.into(),
        started_at: None,
        stopped_at: Some(stop),
        status_reason: Some("reclaimed".into()),
    };
    {
        let x = std::sync::Arc::make_mut(&mut x.job);
        x.attempts = vec![attempt("tj-1", 2 * H)];
        x.preemption = Some(PreemptionSummary {
            preempted_attempt_count: 1,
            recent_preempted_attempts: vec![preempted("tj-1", H, 2 * H)],
        });
    }
    j.record(&snap(2 * H + 1_000, vec![x.clone()])).unwrap();
    // A second attempt, preempted too; the window (of one) now shows only it.
    {
        let x = std::sync::Arc::make_mut(&mut x.job);
        x.attempts.push(attempt("tj-2", 4 * H));
        x.preemption = Some(PreemptionSummary {
            preempted_attempt_count: 2,
            recent_preempted_attempts: vec![preempted("tj-2", 3 * H, 4 * H)],
        });
    }
    j.record(&snap(4 * H + 1_000, vec![x])).unwrap();
    let recs = j.preempted_jobs("q", 0).unwrap();
    let spans: Vec<(&str, Option<Millis>, Millis)> = recs[0]
        .attempts
        .iter()
        .map(|a| (a.resource_id.as_str(), a.started_at, a.stopped_at))
        .collect();
    assert_eq!(
        spans,
        [("tj-2", Some(3 * H), 4 * H), ("tj-1", Some(H), 2 * H)]
    );
}

/// An attempt the poller never saw start (first described after it was preempted, with no
/// start in the attempts list or the window): its start is unknown, not its stop.
pub fn a_preempted_attempt_never_seen_starting_has_its_start_unknown(store: &StoreLocation) {
    let mut j = Journal::open_at(store, JournalConfig::default()).unwrap();
    let mut x = job("x", JobStatus::Runnable);
    std::sync::Arc::make_mut(&mut x.job).attempts = vec![Attempt {
        resource_id: "tj-1".into(),
        started_at: None,
        stopped_at: Some(2 * H),
        // Preempted by its reason (no summary lists it): a reason that says nothing of a
        // preemption would make it a failed attempt.
        status_reason: Some("Cross-share preemption triggered to reclaim borrowed capacity".into()),
    }];
    j.record(&snap(2 * H + 1_000, vec![x])).unwrap();
    let recs = j.preempted_jobs("q", 0).unwrap();
    let a = &recs[0].attempts[0];
    assert_eq!((a.started_at, a.stopped_at), (None, 2 * H));
}
