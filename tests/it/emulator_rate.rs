//! The emulator's rate limits (`rate=OP:N/s,burst=B`): a token bucket per operation for the
//! whole emulator, refusing with 429 `TooManyRequestsException` beyond it over real HTTP, and the
//! AWS-like limits of `scenarios/aws-limits.toml`.

use std::time::Duration;

use crate::emulator_support::*;
use aws_sdk_batch::config::Region;
use aws_sdk_batch::error::ProvideErrorMetadata;
use quotatop_emulator::{FaultSpec, RateLimit, Scenario};

#[tokio::test]
async fn refuses_beyond_the_bucket_in_every_region_and_refills_at_the_rate() {
    let emu = start(&[(M5, 2)], "rate=describejobqueues:2/s,burst=3").await;
    let home = client(&emu, 1);
    let west = aws_sdk_batch::Client::from_conf(
        home.config()
            .to_builder()
            .region(Region::new("us-west-2"))
            .build(),
    );
    // The burst, shared by both regions: three calls answered, the fourth refused.
    home.describe_job_queues().send().await.unwrap();
    west.describe_job_queues().send().await.unwrap();
    home.describe_job_queues().send().await.unwrap();
    let e = west.describe_job_queues().send().await.unwrap_err();
    assert_eq!(
        e.as_service_error().and_then(|s| s.code()),
        Some("TooManyRequestsException"),
        "{e:?}"
    );
    // Other operations have buckets of their own (here none).
    for _ in 0..5 {
        home.list_service_jobs()
            .job_queue(QUEUE)
            .send()
            .await
            .unwrap();
    }
    // 2/s: a token every 500 ms.
    tokio::time::sleep(Duration::from_millis(600)).await;
    home.describe_job_queues().send().await.unwrap();
    let stats = emu.fault_stats();
    assert!(stats.rate_limited >= 1, "{stats:?}");
    assert_eq!(stats.throttled, stats.rate_limited);
    emu.shutdown().await.unwrap();
}

#[test]
fn the_aws_like_scenario_limits_reads_and_writes() {
    let scenario = Scenario::load("scenarios/aws-limits.toml".as_ref()).unwrap();
    let spec = FaultSpec::parse(scenario.faults.as_deref().unwrap()).unwrap();
    let read = Some(RateLimit {
        per_s: 10.0,
        burst: 20,
    });
    let write = Some(RateLimit {
        per_s: 5.0,
        burst: 10,
    });
    for op in [
        "listservicejobs",
        "describeservicejob",
        "getjobqueuesnapshot",
        "listquotashares",
        "describejobqueues",
    ] {
        assert_eq!(spec.for_op(op).rate, read, "{op}");
        assert_eq!(spec.for_op(op).latency_ms, 50, "{op}");
    }
    for op in [
        "submitservicejob",
        "updateservicejob",
        "terminateservicejob",
        "tagresource",
    ] {
        assert_eq!(spec.for_op(op).rate, write, "{op}");
    }
}
