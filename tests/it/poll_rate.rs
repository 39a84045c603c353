//! The poller under a rate limit: after the first refresh meets the emulator's token bucket
//! (`describeservicejob:rate=...`), it learns the allowed rate, caps and spaces its describes to
//! fit, so later refreshes are throttled little; snapshots in between are marked partial
//! ("describing N of M jobs") with the time a complete view will take, never shown complete.

use std::time::{Duration, Instant};

use crate::data_support::batch_client;
use crate::emulator_support::{M5, QUEUE, create_share, submit};
use aws_sdk_batch::types::QuotaShareResourceSharingStrategy as Strategy;
use quotatop_aws::poll::{PollConfig, Poller};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn learns_the_rate_and_converges_with_few_throttles() {
    let h = crate::emulator_support::start(&[(M5, 4)], "").await;
    let sdk = crate::emulator_support::client(&h, 3);
    create_share(&sdk, "team", &[(M5, 4)], Strategy::Reserve, None, false).await;
    for i in 0..200 {
        submit(&sdk, &format!("j{i:03}"), "team", M5, 1, i % 5).await;
    }
    h.advance(1_000).unwrap();
    h.set_faults(
        quotatop_emulator::FaultSpec::parse("rate=describeservicejob:20/s,burst=5").unwrap(),
    );
    let client = batch_client(&h).await;
    let mut poller = Poller::new(PollConfig {
        queues: vec![QUEUE.to_string()],
        describe_budget: 5,
        interval: Duration::from_secs(1),
        refresh_deadline: Duration::from_secs(4),
        ..PollConfig::default()
    });
    let started = Instant::now();
    let first = poller.refresh(&client).await;
    let after_first = h.fault_stats().rate_limited;
    assert!(after_first > 0, "the first refresh meets the limit");
    let rate = first
        .health
        .describe_rate
        .expect("a rate learned from throttling");
    eprintln!(
        "first refresh: {:.1} s, rate {rate:.1}/s, {after_first} throttled, {:?}",
        started.elapsed().as_secs_f64(),
        first.queues[0].describe_progress()
    );
    assert!((1.0..40.0).contains(&rate), "{rate}");
    let mut refreshes = 1;
    let mut snap = first;
    let mut partial_seen = 0;
    let mut stale_later = 0;
    while !snap.is_complete() {
        let (done, total) = snap.queues[0].describe_progress().unwrap();
        assert!(done < total);
        if refreshes > 1 {
            // Capped and spaced to the learned rate, a refresh finishes within its deadline
            // (unpaced, the SDK's own limiter holds the describes back past it) and says how
            // long the complete view will take. The SDK's limiter may still hold back the one
            // right after the throttled first refresh.
            if snap.queues[0].stale_reason.is_some() {
                stale_later += 1;
            } else {
                assert!(snap.health.complete_in_s.is_some(), "refresh {refreshes}");
            }
        }
        partial_seen += 1;
        assert!(
            refreshes < 30,
            "converges: {:?}",
            snap.queues[0].describe_progress()
        );
        tokio::time::sleep(poller.next_delay()).await;
        snap = poller.refresh(&client).await;
        refreshes += 1;
    }
    let later = h.fault_stats().rate_limited - after_first;
    eprintln!(
        "complete after {refreshes} refreshes, {:.1} s; 429s: first {after_first}, later {later}; partial snapshots {partial_seen}, cut by the deadline {stale_later}",
        started.elapsed().as_secs_f64()
    );
    assert!(
        partial_seen >= 1,
        "a capped refresh leaves a partial snapshot"
    );
    assert!(
        later <= 3 * (refreshes as u64 - 1),
        "later refreshes fit the rate: {later} throttled in {refreshes} refreshes (first {after_first})"
    );
    // Real time on a shared 2-core machine: a third of the refreshes cut was seen under load
    // (5 of 15); unpaced, half or more are (2 of 4), so fewer than half tells them apart.
    assert!(
        stale_later * 2 < refreshes,
        "{stale_later} of {refreshes} refreshes were cut by the deadline"
    );
    assert_eq!(snap.queues[0].jobs.len(), 200);
    assert_eq!(snap.health.complete_in_s, None);
}
