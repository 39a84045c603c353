//! A job's attempts end as AWS documents: by timeout (`timeoutConfig`), by SageMaker's
//! `MaxRuntimeInSeconds` (FAILED, not Completed), or by a failure, and are retried per
//! `retryStrategy` (`attempts`, `evaluateOnExit`). Timestamps survive preemption and failure.

use aws_sdk_batch::operation::submit_service_job::builders::SubmitServiceJobFluentBuilder;
use aws_sdk_batch::types::{
    QuotaShareResourceSharingStrategy as Strategy, ServiceJobEvaluateOnExit,
    ServiceJobPreemptionConfiguration, ServiceJobRetryAction, ServiceJobRetryStrategy,
    ServiceJobTimeout, ServiceJobType,
};

use crate::emulator_support::{M5, QUEUE, START, client, create_share, start};

fn job(c: &aws_sdk_batch::Client, name: &str, max_runtime_s: u64) -> SubmitServiceJobFluentBuilder {
    let payload = serde_json::json!({
        "TrainingJobName": name,
        "ResourceConfig": {"InstanceType": M5, "InstanceCount": 1, "VolumeSizeInGB": 30},
        "StoppingCondition": {"MaxRuntimeInSeconds": max_runtime_s}
    })
    .to_string();
    c.submit_service_job()
        .job_name(name)
        .job_queue(QUEUE)
        .service_job_type(ServiceJobType::SagemakerTraining)
        .service_request_payload(payload)
        .quota_share_name("s")
}

async fn id(b: SubmitServiceJobFluentBuilder) -> String {
    b.send().await.unwrap().job_id().unwrap().to_string()
}

#[tokio::test]
async fn timeouts_max_runtime_and_retries_end_attempts_as_aws_documents() {
    let emu = start(&[(M5, 8)], "").await;
    let c = client(&emu, 1);
    create_share(&c, "s", &[(M5, 8)], Strategy::Reserve, None, false).await;

    let timed_out = id(job(&c, "timed-out", 36_000)
        .tags("quotatop:work-seconds", "3600")
        .timeout_config(
            ServiceJobTimeout::builder()
                .attempt_duration_seconds(60)
                .build(),
        ))
    .await;
    let over_runtime = id(job(&c, "over-runtime", 120).tags("quotatop:work-seconds", "600")).await;
    let at_runtime = id(job(&c, "at-runtime", 120).tags("quotatop:work-seconds", "120")).await;
    let untagged = id(job(&c, "untagged", 120)).await;
    let recovers = id(job(&c, "recovers", 36_000)
        .tags("quotatop:work-seconds", "300")
        .tags("quotatop:fail-after-seconds", "30")
        .retry_strategy(ServiceJobRetryStrategy::builder().attempts(2).build()))
    .await;
    let exits = id(job(&c, "exits", 36_000)
        .tags("quotatop:work-seconds", "300")
        .tags("quotatop:fail-after-seconds", "30")
        .retry_strategy(
            ServiceJobRetryStrategy::builder()
                .attempts(5)
                .evaluate_on_exit(
                    ServiceJobEvaluateOnExit::builder()
                        .action(ServiceJobRetryAction::Exit)
                        .on_status_reason("AlgorithmError*")
                        .build(),
                )
                .build(),
        ))
    .await;
    let no_retry = id(job(&c, "no-retry", 36_000)
        .tags("quotatop:work-seconds", "300")
        .tags("quotatop:fail-after-seconds", "30"))
    .await;
    emu.advance(3_600_000).unwrap();

    let d = |id: String| {
        let c = c.clone();
        async move { c.describe_service_job().job_id(id).send().await.unwrap() }
    };
    let t = d(timed_out).await;
    assert_eq!(t.status().unwrap().as_str(), "FAILED");
    assert_eq!(
        t.status_reason(),
        Some("Job attempt duration exceeded timeout")
    );
    assert!(
        t.started_at().is_some_and(|s| s >= START),
        "{:?}",
        t.started_at()
    );
    assert_eq!(t.stopped_at(), t.started_at().map(|s| s + 60_000));
    assert_eq!(
        t.attempts()[0].status_reason(),
        Some("Job attempt duration exceeded timeout")
    );

    let o = d(over_runtime).await;
    assert_eq!(o.status().unwrap().as_str(), "FAILED");
    assert!(o.status_reason().unwrap().starts_with("MaxRuntimeExceeded"));
    assert_eq!(o.stopped_at(), o.started_at().map(|s| s + 120_000));
    // Work that reaches the limit is stopped there, as SageMaker reports it; a job without the
    // work tag completes a second before its limit.
    let a = d(at_runtime).await;
    assert_eq!(a.status().unwrap().as_str(), "FAILED");
    assert!(a.status_reason().unwrap().starts_with("MaxRuntimeExceeded"));
    let u = d(untagged).await;
    assert_eq!(u.status().unwrap().as_str(), "SUCCEEDED");
    assert_eq!(u.stopped_at(), u.started_at().map(|s| s + 119_000));

    let r = d(recovers).await;
    assert_eq!(r.status().unwrap().as_str(), "SUCCEEDED");
    assert_eq!(r.attempts().len(), 2);
    assert_eq!(
        r.attempts()[0].status_reason(),
        Some("AlgorithmError: Training job failed")
    );
    assert_eq!(r.attempts()[1].status_reason(), Some("Completed"));

    let e = d(exits).await;
    assert_eq!(e.status().unwrap().as_str(), "FAILED");
    assert_eq!(e.attempts().len(), 1);
    let n = d(no_retry).await;
    assert_eq!(n.status().unwrap().as_str(), "FAILED");
    assert_eq!(
        n.status_reason(),
        Some("AlgorithmError: Training job failed")
    );
}

#[tokio::test]
async fn a_job_failed_by_preemption_keeps_when_it_was_scheduled_and_started() {
    let emu = start(&[(M5, 2)], "").await;
    let c = client(&emu, 1);
    create_share(&c, "s", &[(M5, 1)], Strategy::LendAndBorrow, None, false).await;
    create_share(&c, "owner", &[(M5, 1)], Strategy::Lend, None, false).await;
    // The first job holds the share's own instance; the second borrows the owner's.
    id(job(&c, "own", 36_000).tags("quotatop:work-seconds", "3600")).await;
    let borrower = id(job(&c, "borrower", 36_000)
        .tags("quotatop:work-seconds", "3600")
        .preemption_configuration(
            ServiceJobPreemptionConfiguration::builder()
                .preemption_retries_before_termination(0)
                .build(),
        ))
    .await;
    emu.advance(60_000).unwrap();
    c.submit_service_job()
        .job_name("reclaim")
        .job_queue(QUEUE)
        .service_job_type(ServiceJobType::SagemakerTraining)
        .service_request_payload(crate::emulator_support::payload(M5, 1))
        .quota_share_name("owner")
        .send()
        .await
        .unwrap();
    emu.advance(600_000).unwrap();
    let b = c
        .describe_service_job()
        .job_id(borrower)
        .send()
        .await
        .unwrap();
    assert_eq!(b.status().unwrap().as_str(), "FAILED");
    assert!(
        b.started_at().is_some_and(|s| s >= START),
        "{:?}",
        b.started_at()
    );
    assert!(
        b.scheduled_at().is_some_and(|s| s >= START),
        "{:?}",
        b.scheduled_at()
    );
}
