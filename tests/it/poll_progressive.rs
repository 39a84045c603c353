//! Progressive first load: the console's poller sends its first snapshot before the listings
//! (the early look: shares, utilisation, front of queue), then what it knows as it goes, marked
//! partial in the model (`QueueSnapshot::listing`, `QueueSnapshot::describe_progress`,
//! `Snapshot::is_complete`) and on the status bar ("listing jobs: N so far", "describing N of M
//! jobs"); the descriptions fill in until it is complete.

use std::time::Duration;

use crate::data_support::batch_client;
use crate::emulator_support::{M5, QUEUE, create_share, submit};
use crate::tui_support::{options, run_with, screen_text, snapshot};
use aws_sdk_batch::types::QuotaShareResourceSharingStrategy as Strategy;
use quotatop_aws::poll::{self, PollConfig};
use quotatop_emulator::FaultSpec;

const JOBS: usize = 150;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_snapshot_is_partial_and_marked_then_fills_in() {
    let h = crate::emulator_support::start(&[(M5, 4)], "").await;
    let sdk = crate::emulator_support::client(&h, 3);
    create_share(&sdk, "team", &[(M5, 4)], Strategy::Reserve, None, false).await;
    for i in 0..JOBS {
        submit(&sdk, &format!("j{i:03}"), "team", M5, 1, (i % 5) as i32).await;
    }
    h.advance(1_000).unwrap();
    h.set_faults(FaultSpec::parse("describeservicejob:latency=20ms").unwrap());
    let mut handle = poll::spawn(
        batch_client(&h).await,
        PollConfig {
            queues: vec![QUEUE.to_string()],
            interval: Duration::from_millis(200),
            concurrency: 4,
            progressive: true,
            ..PollConfig::default()
        },
    );
    let first = handle.snapshots.recv().await.unwrap();
    let q = &first.queues[0];
    // The cheap calls' data is all there: shares, front of queue...
    assert!(!q.shares.is_empty());
    assert!(!q.front_of_queue.is_empty());
    // ...but it is marked partial, never complete.
    assert!(q.listing.is_some(), "the listing in progress");
    assert!(!first.is_complete());
    let described = q.jobs.iter().filter(|j| j.described_at.is_some()).count();
    // It fills in, never going back, until complete.
    let mut last = described;
    let mut snap = first;
    for _ in 0..50 {
        if snap.is_complete() {
            break;
        }
        snap = handle.snapshots.recv().await.unwrap();
        let q = &snap.queues[0];
        let now = q.jobs.iter().filter(|j| j.described_at.is_some()).count();
        assert!(now >= last, "{now} < {last}");
        last = now;
    }
    assert!(snap.is_complete(), "complete in the end: {last} of {JOBS}");
    assert_eq!(snap.queues[0].describe_progress(), None);
    assert_eq!(snap.queues[0].jobs.len(), JOBS);
    assert_eq!(snap.health.complete_in_s, None);
    handle.shutdown().await;
}

#[tokio::test]
async fn status_bar_marks_a_partial_view_and_the_time_to_a_complete_one() {
    let mut partial = snapshot();
    let jobs = &mut partial.queues[0].jobs;
    let total = jobs.len();
    for j in jobs.iter_mut().skip(2) {
        j.described_at = None;
    }
    partial.health.complete_in_s = Some(42);
    let (t, _) = run_with(160, 24, options(), vec![partial], vec![]).await;
    let text = screen_text(&t);
    let want = format!("describing 2 of {total} jobs [");
    assert!(text.contains(&want), "{text}");
    assert!(text.contains("complete view in ~42s"), "{text}");
    // While the jobs are being listed, how many so far.
    let mut listing = snapshot();
    listing.queues[0].listing = Some(quotatop_model::ListingProgress { listed: 1_200 });
    let (t, _) = run_with(160, 24, options(), vec![listing], vec![]).await;
    let text = screen_text(&t);
    assert!(text.contains("listing jobs: 1,200 so far"), "{text}");
    // A complete snapshot has no such mark.
    let (t, _) = run_with(160, 24, options(), vec![snapshot()], vec![]).await;
    let text = screen_text(&t);
    assert!(!text.contains("describing"), "{text}");
    assert!(!text.contains("complete view in"), "{text}");
}
