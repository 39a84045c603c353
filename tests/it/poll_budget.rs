//! Acceptance: the poller does not describe every job on every refresh. On a quiet queue the
//! first refresh describes each job once; later refreshes stay within the rolling budget plus
//! the jobs that changed, counted by the emulator per operation. The rolling order still comes
//! round to every job, so a priority change the listing cannot show is picked up.

use crate::data_support::{batch_client, job};
use crate::emulator_support::{M5, QUEUE, create_share, submit};
use aws_sdk_batch::types::QuotaShareResourceSharingStrategy as Strategy;
use quotatop_aws::poll::{PollConfig, Poller};
use quotatop_model::JobStatus;

const DESCRIBE: &str = "describeservicejob";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quiet_refreshes_stay_within_the_describe_budget() {
    let h = crate::emulator_support::start(&[(M5, 4)], "").await;
    let sdk = crate::emulator_support::client(&h, 3);
    create_share(&sdk, "team", &[(M5, 4)], Strategy::Reserve, None, false).await;
    let mut ids = Vec::new();
    for i in 0..60 {
        ids.push(submit(&sdk, &format!("j{i:02}"), "team", M5, 1, i % 5).await);
    }
    h.advance(1_000).unwrap(); // 4 run, 56 wait
    let client = batch_client(&h).await;
    let budget = 5;
    let mut poller = Poller::new(PollConfig {
        queues: vec![QUEUE.to_string()],
        describe_budget: budget,
        concurrency: 4,
        ..PollConfig::default()
    });

    let before = h.calls(DESCRIBE);
    let first = poller.refresh(&client).await;
    assert_eq!(
        h.calls(DESCRIBE) - before,
        60,
        "first refresh describes each job once"
    );
    assert_eq!(first.queues[0].jobs.len(), 60);
    assert!(
        first.queues[0]
            .jobs
            .iter()
            .all(|j| j.described_at.is_some())
    );

    // Quiet queue: only the rolling budget.
    let mut per_refresh = Vec::new();
    for _ in 0..6 {
        let before = h.calls(DESCRIBE);
        let s = poller.refresh(&client).await;
        assert_eq!(s.queues[0].stale_reason, None);
        per_refresh.push(h.calls(DESCRIBE) - before);
    }
    assert!(
        per_refresh.iter().all(|&n| n == budget as u64),
        "each quiet refresh describes exactly the budget, not all 60: {per_refresh:?}"
    );

    // A priority change the summaries cannot show: the rolling order reaches the job within
    // ceil(60 / budget) refreshes.
    let last = ids.last().unwrap().clone();
    sdk.update_service_job()
        .job_id(&last)
        .scheduling_priority(777)
        .send()
        .await
        .unwrap();
    let mut seen_after = None;
    for n in 1..=(60usize.div_ceil(budget) + 1) {
        let s = poller.refresh(&client).await;
        if job(&s.queues[0], &last).unwrap().job.priority == 777 {
            seen_after = Some(n);
            break;
        }
    }
    assert!(
        seen_after.is_some(),
        "rolling refresh came round to the job"
    );

    // A status change is described in the very next refresh (on top of the budget).
    h.with_engine(|e| assert_eq!(e.status(e.find(&ids[0]).unwrap()), Some(JobStatus::Running)))
        .unwrap();
    sdk.terminate_service_job()
        .job_id(&ids[0])
        .reason("test")
        .send()
        .await
        .unwrap();
    h.advance(1_000).unwrap();
    let before = h.calls(DESCRIBE);
    let s = poller.refresh(&client).await;
    let changed: usize = h
        .with_engine(|e| {
            e.jobs()
                .filter(|j| j.started_at.is_some_and(|t| t >= e.now() - 1_000))
                .count()
        })
        .unwrap();
    let made = h.calls(DESCRIBE) - before;
    // The terminated job and the job that started in its place changed.
    assert!(changed >= 1);
    assert!(
        made <= (budget + 1 + changed) as u64,
        "{made} describes for {changed} started + 1 finished"
    );
    let done = job(&s.queues[0], &ids[0]).unwrap();
    assert_eq!(done.job.status, JobStatus::Failed);
    assert!(done.job.is_terminated);

    // Terminal jobs are described once: the next quiet refreshes are back to the budget.
    for _ in 0..3 {
        let before = h.calls(DESCRIBE);
        poller.refresh(&client).await;
        assert_eq!(h.calls(DESCRIBE) - before, budget as u64);
    }
    h.shutdown().await.unwrap();
}
