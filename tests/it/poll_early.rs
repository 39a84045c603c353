//! Issue 20, cold start at scale: the console's poller shows the shares, their utilisation and
//! the front of the queue before any job is listed (the early look, marked partial), sends what
//! it knows while a long refresh runs (progress snapshots, replaced by the refresh's own), starts
//! the describes it knows it must make before its listings finish, and lists a big status per
//! quota share (page chains side by side) without losing or repeating a job.

use std::collections::{BTreeSet, HashSet};
use std::time::Duration;

use crate::data_support::batch_client;
use crate::emulator_support::{M5, QUEUE, create_share, submit};
use aws_sdk_batch::types::QuotaShareResourceSharingStrategy as Strategy;
use quotatop_aws::poll::{self, ACTIVE, FINISHED, PollConfig, Poller};
use quotatop_emulator::{EmulatorHandle, FaultSpec};
use quotatop_model::{JobStatus, Snapshot};

const LIST: &str = "listservicejobs";

fn config(concurrency: usize) -> PollConfig {
    PollConfig {
        queues: vec![QUEUE.to_string()],
        concurrency,
        progressive: true,
        ..PollConfig::default()
    }
}

/// An emulator with two shares and `jobs` jobs in them (4 run, the rest wait).
async fn world(jobs: usize) -> EmulatorHandle {
    let h = crate::emulator_support::start(&[(M5, 4)], "").await;
    let sdk = crate::emulator_support::client(&h, 3);
    create_share(&sdk, "team", &[(M5, 2)], Strategy::Reserve, None, false).await;
    create_share(&sdk, "other", &[(M5, 2)], Strategy::Reserve, None, false).await;
    for i in 0..jobs {
        let share = if i % 2 == 0 { "team" } else { "other" };
        submit(&sdk, &format!("j{i:03}"), share, M5, 1, (i % 5) as i32).await;
    }
    h.advance(1_000).unwrap();
    h
}

fn described(s: &Snapshot) -> usize {
    s.queues[0]
        .jobs
        .iter()
        .filter(|j| j.described_at.is_some())
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_early_look_comes_before_any_job_listing_marked_partial() {
    let h = world(40).await;
    h.set_faults(FaultSpec::parse("listservicejobs:latency=1500ms").unwrap());
    let client = batch_client(&h).await;
    let mut poller = Poller::new(config(4));
    // What the emulator had been asked for jobs when each intermediate snapshot was sent.
    let (hh, mut seen) = (&h, Vec::new());
    let last = poller
        .refresh_with(&client, &mut |s| seen.push((hh.calls(LIST), s)))
        .await;
    let (listings, first) = seen.first().expect("an intermediate snapshot");
    assert_eq!(*listings, 0, "sent before any ListServiceJobs call");
    let q = &first.queues[0];
    assert_eq!(q.shares.len(), 2, "the shares and their configuration");
    assert!(!q.utilization.is_empty(), "utilisation: {q:?}");
    assert!(!q.front_of_queue.is_empty(), "the front of the queue");
    assert!(q.jobs.is_empty());
    assert!(q.listing.is_some(), "marked: listing in progress");
    assert!(!first.is_complete());
    // Every intermediate snapshot is partial; the refresh's own is complete.
    assert!(seen.iter().all(|(_, s)| !s.is_complete()));
    assert!(last.is_complete());
    assert_eq!(last.queues[0].jobs.len(), 40);
    assert_eq!(last.queues[0].listing, None);

    // The console's poller sends it at once, before the slow listings.
    let started = std::time::Instant::now();
    let mut handle = poll::spawn(batch_client(&h).await, config(4));
    let first = handle.snapshots.recv().await.unwrap();
    assert!(
        started.elapsed() < Duration::from_millis(1_400),
        "{:?}",
        started.elapsed()
    );
    assert!(first.queues[0].listing.is_some());
    assert_eq!(first.queues[0].shares.len(), 2);
    assert!(!first.is_complete());
    handle.shutdown().await;
    h.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_snapshots_arrive_during_a_long_refresh_and_the_last_replaces_them() {
    let h = world(60).await;
    // 60 describes, two at a time, 100 ms each: about 3 s.
    h.set_faults(FaultSpec::parse("describeservicejob:latency=100ms").unwrap());
    let client = batch_client(&h).await;
    let mut poller = Poller::new(config(2));
    let mut seen: Vec<Snapshot> = Vec::new();
    let last = poller.refresh_with(&client, &mut |s| seen.push(s)).await;
    let progress: Vec<&Snapshot> = seen.iter().filter(|s| described(s) > 0).collect();
    assert!(progress.len() >= 2, "{} progress snapshots", progress.len());
    let mut before = 0;
    for s in &seen {
        assert!(!s.is_complete());
        assert!(described(s) >= before, "never going back");
        before = described(s);
        assert_eq!(s.sequence, last.sequence, "the refresh's number");
    }
    // Somewhere in the middle: jobs listed, some described, the status bar's figures there.
    let mid = progress[0];
    let (done, total) = mid.queues[0].describe_progress().expect("partial");
    assert!(done > 0 && done < total, "{done} of {total}");
    assert!(
        mid.health.complete_in_s.is_some(),
        "time to a complete view"
    );
    assert!(last.is_complete());
    assert_eq!(described(&last), 60);
    assert_eq!(last.health.complete_in_s, None);
    h.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backlog_is_described_while_the_listings_run() {
    let h = world(60).await;
    // The first refresh describes for 3 s, a second each, then stops at its deadline: a
    // backlog is left.
    h.set_faults(FaultSpec::parse("describeservicejob:latency=1s").unwrap());
    let client = batch_client(&h).await;
    let mut poller = Poller::new(PollConfig {
        refresh_deadline: Duration::from_secs(3),
        finished_limit: 0,
        ..config(6)
    });
    let first = poller.refresh(&client).await;
    let after_first = described(&first);
    assert!(after_first < 60, "a backlog is left: {after_first}");
    assert_eq!(
        poller.next_delay(),
        Duration::ZERO,
        "the next refresh at once"
    );
    // The next refresh's listings take 1.5 s each; its backlog's describes start at once.
    h.set_faults(
        FaultSpec::parse("listservicejobs:latency=1500ms;describeservicejob:latency=20ms").unwrap(),
    );
    let (hh, mut seen) = (&h, Vec::new());
    let _ = poller
        .refresh_with(&client, &mut |s| seen.push((hh.calls(LIST), s)))
        .await;
    let during = seen
        .iter()
        .find(|(_, s)| s.queues[0].listing.is_some() && described(s) > after_first);
    assert!(
        during.is_some(),
        "describes applied while the listings ran: {:?}",
        seen.iter()
            .map(|(_, s)| (s.queues[0].listing, described(s)))
            .collect::<Vec<_>>()
    );
    h.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_big_status_is_listed_by_share_and_nothing_is_lost_or_repeated() {
    let h = crate::emulator_support::start(&[(M5, 4)], "").await;
    let sdk = crate::emulator_support::client(&h, 3);
    for share in ["big", "small", "tiny"] {
        create_share(&sdk, share, &[(M5, 1)], Strategy::Reserve, None, false).await;
    }
    for i in 0..340 {
        submit(&sdk, &format!("b{i:03}"), "big", M5, 1, 1).await;
    }
    for (share, n) in [("small", 3), ("tiny", 2)] {
        for i in 0..n {
            submit(&sdk, &format!("{share}{i}"), share, M5, 1, 1).await;
        }
    }
    h.advance(1_000).unwrap();
    let client = batch_client(&h).await;
    let mut poller = Poller::new(config(4));
    poller.refresh(&client).await;
    // Known big now: the next refresh lists RUNNABLE share by share.
    let runnable: Vec<(String, usize)> = h
        .with_engine(|e| {
            ["big", "small", "tiny"]
                .map(|s| {
                    let n = e
                        .jobs()
                        .filter(|j| j.share == s && j.status == JobStatus::Runnable)
                        .count();
                    (s.to_string(), n)
                })
                .to_vec()
        })
        .unwrap();
    let total: usize = runnable.iter().map(|(_, n)| n).sum();
    assert!(total > 300, "{runnable:?}");
    let before = h.calls(LIST);
    let s = poller.refresh(&client).await;
    let made = h.calls(LIST) - before;
    let others = (ACTIVE.len() - 1 + FINISHED.len()) as u64; // one page each
    let by_share: u64 = runnable
        .iter()
        .map(|(_, n)| n.div_ceil(100).max(1) as u64)
        .sum();
    let plain = total.div_ceil(100) as u64;
    assert_ne!(by_share, plain, "the two ways differ in calls here");
    assert_eq!(made, others + by_share, "RUNNABLE listed by share");

    // Nothing lost, nothing repeated, against a plain listing of every active status.
    let q = &s.queues[0];
    let ids: Vec<&str> = q.jobs.iter().map(|j| j.job.id.as_str()).collect();
    let unique: HashSet<&str> = ids.iter().copied().collect();
    assert_eq!(unique.len(), ids.len(), "no job twice");
    let mut plain_ids = BTreeSet::new();
    for status in ACTIVE {
        let arn = &q.arn;
        for j in client.list_service_jobs(arn, status, None).await.unwrap() {
            plain_ids.insert(j.id);
        }
    }
    let active: BTreeSet<String> = q
        .jobs
        .iter()
        .filter(|j| !j.job.status.is_terminal())
        .map(|j| j.job.id.clone())
        .collect();
    assert_eq!(active, plain_ids);
    assert_eq!(active.len(), 345);
    assert!(s.is_complete());
    h.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_early_look_is_journaled_as_partial_and_the_complete_view_follows_it() {
    use quotatop_store::journal::{Journal, JournalConfig};
    let h = world(20).await;
    let client = batch_client(&h).await;
    let mut poller = Poller::new(config(4));
    let mut seen = Vec::new();
    let last = poller.refresh_with(&client, &mut |s| seen.push(s)).await;
    let early = seen.first().expect("the early look").clone();
    assert!(early.queues[0].listing.is_some());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite3");
    let mut j = Journal::open(&path, JournalConfig::default()).unwrap();
    j.record(&early).unwrap();
    let stored = j.newest_snapshot().unwrap().expect("stored");
    assert!(
        stored.queues[0].listing.is_some(),
        "stored as a listing in progress"
    );
    assert!(!stored.is_complete());
    // The complete view right after is stored too, whatever the snapshot interval.
    assert!(last.is_complete());
    j.record(&last).unwrap();
    let stored = j.newest_snapshot().unwrap().expect("stored");
    assert!(stored.is_complete());
    assert_eq!(stored.queues[0].jobs.len(), 20);
    h.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_complete_view_is_sent_as_soon_as_the_musts_are_answered_not_after_the_rolling_ones() {
    let h = world(30).await;
    let client = batch_client(&h).await;
    let mut poller = Poller::new(PollConfig {
        describe_budget: 5,
        ..config(1)
    });
    assert!(poller.refresh(&client).await.is_complete());
    // One new job; every other job is unchanged, so this refresh's only must is the new job,
    // then five rolling describes, one at a time, 300 ms each.
    let sdk = crate::emulator_support::client(&h, 3);
    let fresh = submit(&sdk, "fresh", "team", M5, 1, 1).await;
    h.set_faults(FaultSpec::parse("describeservicejob:latency=300ms").unwrap());
    tokio::time::sleep(Duration::from_millis(5)).await;
    let mark = quotatop_model::wall_clock_ms();
    let mut seen: Vec<Snapshot> = Vec::new();
    let last = poller.refresh_with(&client, &mut |s| seen.push(s)).await;
    let since = |s: &Snapshot| {
        s.queues[0]
            .jobs
            .iter()
            .filter(|j| j.described_at.is_some_and(|at| at >= mark))
            .count()
    };
    assert_eq!(since(&last), 1 + 5, "the new job and the five rolling ones");
    // The first complete snapshot comes while the refresh goes on, right after the new job's
    // describe: no rolling describe answered yet (the progress tick, a second in, would have
    // shown two or three of them).
    let first = seen.iter().find(|s| s.is_complete()).unwrap_or_else(|| {
        panic!(
            "a complete snapshot before the refresh's own: {:?}",
            seen.iter().map(since).collect::<Vec<_>>()
        )
    });
    assert!(first.health.in_progress);
    assert_eq!(since(first), 1, "only the must described");
    assert!(first.queues[0].jobs.iter().any(|j| j.job.id == fresh));
    assert_eq!(
        first.health.complete_in_s, None,
        "nothing left to a complete view"
    );
    h.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_that_left_a_status_are_described_once_its_listing_ends_not_after_every_listing() {
    let h = world(40).await;
    let client = batch_client(&h).await;
    // No finished listing: a terminated job is then in no listing at all (it vanished).
    let mut poller = Poller::new(PollConfig {
        finished_limit: 0,
        describe_budget: 0,
        ..config(2)
    });
    assert!(poller.refresh(&client).await.is_complete());
    let gone: Vec<String> = h
        .with_engine(|e| {
            e.jobs()
                .filter(|j| j.status == JobStatus::Runnable)
                .take(2)
                .map(|j| j.id.clone())
                .collect()
        })
        .unwrap();
    assert_eq!(gone.len(), 2);
    let sdk = crate::emulator_support::client(&h, 3);
    for id in &gone {
        sdk.terminate_service_job()
            .job_id(id)
            .reason("test")
            .send()
            .await
            .unwrap();
    }
    // Six active statuses, two pages at a time, 800 ms each: RUNNABLE's page ends at about
    // 1.6 s, the last at about 2.4 s; progress snapshots at 1 s and 2 s.
    h.set_faults(FaultSpec::parse("listservicejobs:latency=800ms").unwrap());
    let describes = h.calls("describeservicejob");
    let mut seen: Vec<Snapshot> = Vec::new();
    let last = poller.refresh_with(&client, &mut |s| seen.push(s)).await;
    let finished = |s: &Snapshot| {
        gone.iter()
            .filter(|id| {
                s.queues[0]
                    .jobs
                    .iter()
                    .any(|j| &j.job.id == *id && j.job.status.is_terminal())
            })
            .count()
    };
    // Finished and unlisted: not kept (no finished listing here), never shown active.
    assert!(
        last.queues[0]
            .jobs
            .iter()
            .all(|j| !gone.contains(&j.job.id) || j.job.status.is_terminal())
    );
    assert_eq!(
        h.calls("describeservicejob") - describes,
        2,
        "each described once"
    );
    assert!(
        seen.iter()
            .any(|s| s.queues[0].listing.is_some() && finished(s) == 2),
        "described while the other statuses were still being listed: {:?}",
        seen.iter()
            .map(|s| (s.queues[0].listing.is_some(), finished(s)))
            .collect::<Vec<_>>()
    );
    h.shutdown().await.unwrap();
}
