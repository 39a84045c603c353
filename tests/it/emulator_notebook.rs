//! The AWS notebook walk-through (reference §2.3–2.4) over the wire: lending, cross-share
//! preemption by a lower-priority owner job, then in-share preemption after a priority raise,
//! observed through DescribeServiceJob, GetJobQueueSnapshot and ListServiceJobs. The clock is
//! manual, so each step happens at a known simulated time.

use crate::emulator_support::*;
use aws_sdk_batch::types::{
    KeyValuesPair, QuotaShareResourceSharingStrategy as Strategy, ServiceJobStatus,
};

async fn status(c: &aws_sdk_batch::Client, id: &str) -> ServiceJobStatus {
    c.describe_service_job()
        .job_id(id)
        .send()
        .await
        .unwrap()
        .status()
        .unwrap()
        .clone()
}

async fn front(c: &aws_sdk_batch::Client) -> (Vec<String>, Vec<(String, Vec<String>)>) {
    let snap = c
        .get_job_queue_snapshot()
        .job_queue(QUEUE)
        .send()
        .await
        .unwrap();
    let queue = snap
        .front_of_queue()
        .unwrap()
        .jobs()
        .iter()
        .map(|j| j.job_arn().unwrap().to_string())
        .collect();
    let mut shares: Vec<(String, Vec<String>)> = snap
        .front_of_quota_shares()
        .unwrap()
        .quota_shares()
        .unwrap()
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                v.iter().map(|j| j.job_arn().unwrap().to_string()).collect(),
            )
        })
        .collect();
    shares.sort();
    (queue, shares)
}

fn arn(id: &str) -> String {
    format!("arn:aws:batch:us-east-1:123456789012:service-job/{id}")
}

#[tokio::test]
async fn notebook_walkthrough_over_the_wire() {
    let emu = start(&[(M5, 2)], "").await;
    let c = client(&emu, 1);
    create_share(
        &c,
        "QS1",
        &[(M5, 1)],
        Strategy::LendAndBorrow,
        Some(100),
        true,
    )
    .await;
    create_share(&c, "QS2", &[(M5, 1)], Strategy::Lend, None, false).await;

    // QS1 submits three jobs with priorities 3, 2, 1.
    let high = submit(&c, "qs1_job_high", "QS1", M5, 1, 3).await;
    emu.advance(1).unwrap();
    let med = submit(&c, "qs1_job_med", "QS1", M5, 1, 2).await;
    emu.advance(1).unwrap();
    let low = submit(&c, "qs1_job_low", "QS1", M5, 1, 1).await;

    // Priority 3 runs on QS1's own capacity, priority 2 borrows QS2's idle capacity.
    assert_eq!(status(&c, &high).await, ServiceJobStatus::Running);
    assert_eq!(status(&c, &med).await, ServiceJobStatus::Running);
    assert_eq!(status(&c, &low).await, ServiceJobStatus::Runnable);
    let (queue, shares) = front(&c).await;
    assert_eq!(queue, vec![arn(&low)]);
    assert_eq!(
        shares,
        vec![
            ("QS1".to_string(), vec![arn(&low)]),
            ("QS2".to_string(), vec![])
        ]
    );
    let snap = c
        .get_job_queue_snapshot()
        .job_queue(QUEUE)
        .send()
        .await
        .unwrap();
    let util = snap.queue_utilization().unwrap();
    let total = &util.total_capacity_usage()[0];
    assert_eq!(
        (total.capacity_unit(), total.quantity()),
        (Some(M5), Some(2.0))
    );
    let top = util
        .quota_share_utilization()
        .unwrap()
        .top_capacity_utilization();
    assert_eq!(top.len(), 1);
    assert_eq!(top[0].quota_share_name(), Some("QS1"));
    assert_eq!(top[0].capacity_usage()[0].quantity(), Some(2.0));
    assert_eq!(
        snap.front_of_queue().unwrap().last_updated_at(),
        Some(START + 2)
    );

    // A minute later QS2 takes its capacity back with a job of *lower* priority.
    emu.advance(60_000).unwrap();
    let qs2 = submit(&c, "qs2_job_1", "QS2", M5, 1, 1).await;
    assert_eq!(status(&c, &qs2).await, ServiceJobStatus::Running);
    let med_desc = c.describe_service_job().job_id(&med).send().await.unwrap();
    assert_eq!(med_desc.status(), Some(&ServiceJobStatus::Runnable));
    let summary = med_desc.preemption_summary().expect("med was preempted");
    assert_eq!(summary.preempted_attempt_count(), Some(1));
    let attempt = &summary.recent_preempted_attempts()[0];
    assert_eq!(
        attempt.status_reason(),
        Some("Cross-share preemption triggered to reclaim borrowed capacity")
    );
    assert_eq!(attempt.stopped_at(), Some(START + 60_002));
    assert_eq!(attempt.started_at(), Some(START + 1));
    assert!(
        attempt
            .service_resource_id()
            .unwrap()
            .value()
            .unwrap()
            .starts_with("arn:aws:sagemaker:")
    );
    assert_eq!(med_desc.scheduling_priority(), Some(2));
    assert_eq!(
        med_desc.started_at(),
        Some(START + 1),
        "not started since the preemption: its last attempt's real start, never 0"
    );
    // The high job was never preempted: no summary at all.
    let high_desc = c.describe_service_job().job_id(&high).send().await.unwrap();
    assert!(high_desc.preemption_summary().is_none());
    assert_eq!(high_desc.started_at(), Some(START));
    let (queue, shares) = front(&c).await;
    assert_eq!(queue, vec![arn(&med), arn(&low)]);
    assert_eq!(shares[0], ("QS1".to_string(), vec![arn(&med)]));

    // Raising qs1_job_low above qs1_job_high preempts the high job inside QS1.
    emu.advance(60_000).unwrap();
    let upd = c
        .update_service_job()
        .job_id(&low)
        .scheduling_priority(4)
        .send()
        .await
        .unwrap();
    assert_eq!(upd.job_id(), Some(low.as_str()));
    assert_eq!(status(&c, &low).await, ServiceJobStatus::Running);
    let high_desc = c.describe_service_job().job_id(&high).send().await.unwrap();
    assert_eq!(high_desc.status(), Some(&ServiceJobStatus::Runnable));
    assert_eq!(
        high_desc
            .preemption_summary()
            .unwrap()
            .recent_preempted_attempts()[0]
            .status_reason(),
        Some("In-share preemption triggered by a higher priority job")
    );
    assert_eq!(status(&c, &qs2).await, ServiceJobStatus::Running);
    let (queue, shares) = front(&c).await;
    assert_eq!(queue, vec![arn(&high), arn(&med)]);
    assert_eq!(shares[0], ("QS1".to_string(), vec![arn(&high)]));

    // ListServiceJobs agrees: QS1's RUNNABLE jobs, newest first.
    let listed = c
        .list_service_jobs()
        .job_queue(QUEUE)
        .job_status(ServiceJobStatus::Runnable)
        .filters(
            KeyValuesPair::builder()
                .name("QUOTA_SHARE_NAME")
                .values("QS1")
                .build(),
        )
        .send()
        .await
        .unwrap();
    let ids: Vec<&str> = listed
        .job_summary_list()
        .iter()
        .map(|j| j.job_id().unwrap())
        .collect();
    assert_eq!(ids, vec![med.as_str(), high.as_str()]);
    emu.shutdown().await.unwrap();
}
