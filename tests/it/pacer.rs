//! The client's pacing under a per-operation rate limit (issue 20): each read operation learns
//! its own allowed rate from 429s and spaces its attempts to fit, retrying throttled attempts
//! itself. Under the SDK's adaptive mode (one client-side bucket for every operation) the same
//! describes took far longer, and another operation's 429s slowed them too.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::data_support::batch_client;
use crate::emulator_support::{M5, QUEUE, create_share, submit};
use aws_sdk_batch::types::QuotaShareResourceSharingStrategy as Strategy;
use quotatop_aws::batch::{BatchClient, Op};
use quotatop_emulator::{EmulatorHandle, FaultSpec};
use quotatop_model::JobStatus;

/// An emulator with a few jobs to describe; the rate limit is set after the setup.
async fn with_jobs(n: usize) -> (EmulatorHandle, Vec<String>) {
    let h = crate::emulator_support::start(&[(M5, 4)], "").await;
    let sdk = crate::emulator_support::client(&h, 3);
    create_share(&sdk, "team", &[(M5, 4)], Strategy::Reserve, None, false).await;
    let mut ids = Vec::new();
    for i in 0..n {
        ids.push(submit(&sdk, &format!("j{i:02}"), "team", M5, 1, 0).await);
    }
    (h, ids)
}

/// `calls` describes over `workers` concurrent tasks; every one must succeed.
async fn describe_all(client: &BatchClient, ids: &[String], calls: usize, workers: usize) {
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..workers {
        let (client, ids, next) = (client.clone(), ids.to_vec(), next.clone());
        tasks.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= calls {
                    break;
                }
                let id = &ids[i % ids.len()];
                if let Err(e) = client.describe_service_job(id).await {
                    panic!("describe {i} failed: {e}");
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn describes_fit_the_limit_with_few_throttles() {
    let (h, ids) = with_jobs(10).await;
    h.set_faults(FaultSpec::parse("rate=describeservicejob:20/s,burst=20").unwrap());
    let client = batch_client(&h).await;
    let calls = 300;
    let floor = calls as f64 / 20.0;
    let started = Instant::now();
    describe_all(&client, &ids, calls, 8).await;
    let took = started.elapsed().as_secs_f64();
    let throttled = h.fault_stats().rate_limited;
    let wire = client.stats().last_minute();
    let rate = client.learned_rate(Op::DescribeServiceJob);
    eprintln!(
        "{calls} describes at 20/s: {took:.1} s (floor {floor:.0} s, {:.2}x), {throttled} \
         throttled, learned {rate:?}, wire {wire:?}",
        took / floor
    );
    assert!(took <= 1.3 * floor, "{took:.1} s > 1.3 x {floor} s");
    // Few 429s: 20-21 of 300 with a learned rate kept 60 s, 37-42 with it forgotten after 8 s
    // (`pacer::FORGET`, short so that a rate learned under light use does not hold back the
    // backlog after an outage: the soak's recovery). The adaptive mode was 2.2x the floor.
    assert!(throttled < calls as u64 * 15 / 100, "{throttled} throttled");
    // Every attempt is counted, the throttled ones too.
    assert_eq!(wire.throttled as u64, throttled, "{wire:?}");
    assert!(wire.attempts as u64 >= calls as u64 + throttled, "{wire:?}");
    let rate = rate.expect("a rate learned from the 429s");
    assert!((5.0..=40.0).contains(&rate), "{rate}");
    assert_eq!(client.learned_rate(Op::ListServiceJobs), None);
    h.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_throttled_list_does_not_slow_the_describes() {
    let (h, ids) = with_jobs(10).await;
    h.set_faults(
        FaultSpec::parse("describeservicejob:rate=20/s,burst=20;listservicejobs:rate=2/s,burst=2")
            .unwrap(),
    );
    let client = batch_client(&h).await;
    // ListServiceJobs hammered by 4 tasks for the whole run.
    let stop = Arc::new(AtomicBool::new(false));
    let mut listers = Vec::new();
    for _ in 0..4 {
        let (client, stop) = (client.clone(), stop.clone());
        listers.push(tokio::spawn(async move {
            let mut lists = 0u32;
            while !stop.load(Ordering::Relaxed) {
                let _ = client
                    .list_service_jobs(QUEUE, JobStatus::Runnable, None)
                    .await;
                lists += 1;
            }
            lists
        }));
    }
    // Let the lists meet their limit first.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let calls = 200;
    let floor = calls as f64 / 20.0;
    let started = Instant::now();
    describe_all(&client, &ids, calls, 4).await;
    let took = started.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let mut lists = 0;
    for l in listers {
        lists += l.await.unwrap();
    }
    let list_rate = client.learned_rate(Op::ListServiceJobs);
    let describe_rate = client.learned_rate(Op::DescribeServiceJob);
    eprintln!(
        "{calls} describes at 20/s beside throttled lists: {took:.1} s (floor {floor:.0} s, \
         {:.2}x); {lists} lists; learned list {list_rate:?}, describe {describe_rate:?}; {:?}",
        took / floor,
        h.fault_stats()
    );
    assert!(took <= 1.5 * floor, "{took:.1} s > 1.5 x {floor} s");
    let list_rate = list_rate.expect("the lists met their limit");
    assert!(list_rate <= 4.0, "{list_rate}");
    assert!(describe_rate.is_none_or(|r| r >= 5.0), "{describe_rate:?}");
    h.shutdown().await.unwrap();
}

/// Server errors on reads are still retried with back-off (the SDK's retries are off for them),
/// and every attempt, failed ones too, is counted on the wire.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_errors_on_reads_are_retried() {
    let (h, ids) = with_jobs(3).await;
    h.set_faults(FaultSpec::parse("describeservicejob:error=20%,seed=3").unwrap());
    let client = batch_client(&h).await;
    describe_all(&client, &ids, 40, 2).await;
    let errors = h.fault_stats().server_errors;
    let wire = client.stats().last_minute();
    assert!(errors > 0, "{:?}", h.fault_stats());
    assert_eq!(wire.failed as u64, errors, "{wire:?}");
    assert_eq!(wire.attempts, 40 + wire.failed, "{wire:?}");
    // Not throttling: no rate is learned.
    assert_eq!(client.learned_rate(Op::DescribeServiceJob), None);
    h.shutdown().await.unwrap();
}
