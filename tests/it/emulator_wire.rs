//! Every emulator operation driven by the real `aws_sdk_batch` client: resources, quota shares,
//! service jobs, the snapshot, tags, pagination, typed ClientExceptions, and retried faults.

use std::collections::HashSet;

use crate::emulator_support::*;
use aws_sdk_batch::error::ProvideErrorMetadata;
use aws_sdk_batch::types::{
    KeyValuesPair, QuotaShareCapacityLimit, QuotaShareIdleResourceAssignmentStrategy,
    QuotaSharePolicy, QuotaShareResourceSharingConfiguration,
    QuotaShareResourceSharingStrategy as Strategy, QuotaShareState,
    ServiceJobPreemptionConfiguration, ServiceJobRetryStrategy, ServiceJobStatus, ServiceJobType,
};

/// The error code and message of a failed call.
fn code<E: ProvideErrorMetadata + std::fmt::Debug>(
    e: &aws_sdk_batch::error::SdkError<E>,
) -> (String, String) {
    match e.as_service_error() {
        Some(s) => (
            s.code().unwrap_or_default().to_string(),
            s.message().unwrap_or_default().to_string(),
        ),
        None => (format!("{e:?}"), String::new()),
    }
}

#[tokio::test]
async fn queues_environments_and_scheduling_policies() {
    let emu = start(&[(M5, 4), (G5, 2)], "").await;
    let c = client(&emu, 1);

    let queues: Vec<_> = c
        .describe_job_queues()
        .into_paginator()
        .items()
        .send()
        .collect::<Vec<_>>()
        .await;
    assert_eq!(queues.len(), 1);
    let q = queues[0].as_ref().unwrap();
    assert_eq!(q.job_queue_name(), Some(QUEUE));
    assert_eq!(
        q.job_queue_arn(),
        Some("arn:aws:batch:us-east-1:123456789012:job-queue/qm-queue")
    );
    assert_eq!(q.status_reason(), Some("JobQueue Healthy"));
    assert_eq!(
        q.job_queue_type().map(|t| t.as_str()),
        Some("SAGEMAKER_TRAINING")
    );
    let se_arn = q.service_environment_order()[0]
        .service_environment()
        .unwrap()
        .to_string();
    let policy_arn = q.scheduling_policy_arn().unwrap().to_string();
    let none = c
        .describe_job_queues()
        .job_queues("other")
        .send()
        .await
        .unwrap();
    assert!(none.job_queues().is_empty());

    let envs = c
        .describe_service_environments()
        .service_environments(&se_arn)
        .send()
        .await
        .unwrap();
    let env = &envs.service_environments()[0];
    let mut limits: Vec<(String, i32)> = env
        .capacity_limits()
        .iter()
        .map(|l| {
            (
                l.capacity_unit().unwrap().to_string(),
                l.max_capacity().unwrap(),
            )
        })
        .collect();
    limits.sort();
    assert_eq!(limits, vec![(G5.to_string(), 2), (M5.to_string(), 4)]);

    let described = c
        .describe_scheduling_policies()
        .arns(&policy_arn)
        .send()
        .await
        .unwrap();
    let policy = &described.scheduling_policies()[0];
    assert_eq!(
        policy
            .quota_share_policy()
            .unwrap()
            .idle_resource_assignment_strategy(),
        Some(&QuotaShareIdleResourceAssignmentStrategy::Fifo)
    );

    for i in 0..3 {
        let out = c
            .create_scheduling_policy()
            .name(format!("extra-{i}"))
            .quota_share_policy(
                QuotaSharePolicy::builder()
                    .idle_resource_assignment_strategy(
                        QuotaShareIdleResourceAssignmentStrategy::Fifo,
                    )
                    .build(),
            )
            .tags("team", "ml")
            .send()
            .await
            .unwrap();
        assert_eq!(out.name(), Some(format!("extra-{i}").as_str()));
    }
    let dup = c
        .create_scheduling_policy()
        .name("extra-0")
        .send()
        .await
        .unwrap_err();
    assert!(dup.as_service_error().unwrap().is_client_exception());
    assert_eq!(code(&dup).1, "Object already exists");

    // Pages of one: every policy exactly once.
    let pages: Vec<_> = c
        .list_scheduling_policies()
        .max_results(1)
        .into_paginator()
        .send()
        .collect::<Vec<_>>()
        .await;
    assert_eq!(pages.len(), 4);
    let arns: HashSet<String> = pages
        .iter()
        .flat_map(|p| p.as_ref().unwrap().scheduling_policies().to_vec())
        .map(|p| p.arn().unwrap().to_string())
        .collect();
    assert_eq!(arns.len(), 4);
    assert!(arns.contains(&policy_arn));
    let tagged = c
        .describe_scheduling_policies()
        .arns("arn:aws:batch:us-east-1:123456789012:scheduling-policy/extra-1")
        .send()
        .await
        .unwrap();
    assert_eq!(
        tagged.scheduling_policies()[0]
            .tags()
            .unwrap()
            .get("team")
            .map(String::as_str),
        Some("ml")
    );
    emu.shutdown().await.unwrap();
}

#[tokio::test]
async fn quota_share_lifecycle() {
    let emu = start(&[(M5, 4), (G5, 2)], "").await;
    let c = client(&emu, 1);
    let arn = create_share(
        &c,
        "team-a",
        &[(M5, 2), (G5, 1)],
        Strategy::LendAndBorrow,
        None,
        true,
    )
    .await;
    assert_eq!(
        arn,
        "arn:aws:batch:us-east-1:123456789012:job-queue/qm-queue/quota-share/team-a"
    );
    for name in ["team-b", "team-c"] {
        create_share(&c, name, &[(M5, 1)], Strategy::Reserve, None, false).await;
    }
    let dup = c
        .create_quota_share()
        .quota_share_name("team-a")
        .job_queue(QUEUE)
        .capacity_limits(
            QuotaShareCapacityLimit::builder()
                .capacity_unit(M5)
                .max_capacity(1)
                .build(),
        )
        .resource_sharing_configuration(
            QuotaShareResourceSharingConfiguration::builder()
                .strategy(Strategy::Lend)
                .build(),
        )
        .preemption_configuration(
            aws_sdk_batch::types::QuotaSharePreemptionConfiguration::builder()
                .in_share_preemption(
                    aws_sdk_batch::types::QuotaShareInSharePreemptionState::Disabled,
                )
                .build(),
        )
        .send()
        .await
        .unwrap_err();
    assert!(dup.as_service_error().unwrap().is_client_exception());
    assert!(code(&dup).1.contains("already exists"), "{:?}", code(&dup));

    let d = c
        .describe_quota_share()
        .quota_share_arn(&arn)
        .send()
        .await
        .unwrap();
    assert_eq!(d.quota_share_name(), Some("team-a"));
    assert_eq!(
        d.job_queue_arn(),
        Some("arn:aws:batch:us-east-1:123456789012:job-queue/qm-queue")
    );
    let sharing = d.resource_sharing_configuration().unwrap();
    assert_eq!(sharing.strategy(), Some(&Strategy::LendAndBorrow));
    assert_eq!(
        sharing.borrow_limit(),
        Some(-1),
        "default borrow limit is unlimited"
    );
    assert_eq!(d.capacity_limits().len(), 2);
    assert_eq!(d.state(), Some(&QuotaShareState::Enabled));
    assert_eq!(d.status().map(|s| s.as_str()), Some("VALID"));

    // Partial update: strategy only; limits stay.
    c.update_quota_share()
        .quota_share_arn(&arn)
        .resource_sharing_configuration(
            QuotaShareResourceSharingConfiguration::builder()
                .strategy(Strategy::Reserve)
                .build(),
        )
        .send()
        .await
        .unwrap();
    let d = c
        .describe_quota_share()
        .quota_share_arn(&arn)
        .send()
        .await
        .unwrap();
    assert_eq!(
        d.resource_sharing_configuration().unwrap().strategy(),
        Some(&Strategy::Reserve)
    );
    assert_eq!(
        d.resource_sharing_configuration().unwrap().borrow_limit(),
        None
    );
    assert_eq!(d.capacity_limits().len(), 2);

    let listed: Vec<String> = c
        .list_quota_shares()
        .job_queue(QUEUE)
        .max_results(2)
        .into_paginator()
        .items()
        .send()
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .map(|s| s.unwrap().quota_share_name().unwrap().to_string())
        .collect();
    assert_eq!(listed, vec!["team-a", "team-b", "team-c"]);

    // Delete needs DISABLED first.
    let refused = c
        .delete_quota_share()
        .quota_share_arn(&arn)
        .send()
        .await
        .unwrap_err();
    assert!(refused.as_service_error().unwrap().is_client_exception());
    assert!(
        code(&refused).1.contains("must be DISABLED"),
        "{:?}",
        code(&refused)
    );
    c.update_quota_share()
        .quota_share_arn(&arn)
        .state(QuotaShareState::Disabled)
        .send()
        .await
        .unwrap();
    c.delete_quota_share()
        .quota_share_arn(&arn)
        .send()
        .await
        .unwrap();
    let gone = c
        .describe_quota_share()
        .quota_share_arn(&arn)
        .send()
        .await
        .unwrap_err();
    assert!(gone.as_service_error().unwrap().is_client_exception());
    emu.shutdown().await.unwrap();
}

#[tokio::test]
async fn service_jobs_submit_list_describe_update_terminate() {
    let emu = start(&[(M5, 2)], "").await;
    let c = client(&emu, 1);
    create_share(&c, "qs", &[(M5, 2)], Strategy::Reserve, None, false).await;
    create_share(&c, "other", &[(M5, 1)], Strategy::Lend, None, false).await;

    let full = c
        .submit_service_job()
        .job_name("train-0")
        .job_queue(QUEUE)
        .service_job_type(ServiceJobType::SagemakerTraining)
        .service_request_payload(payload(M5, 2))
        .quota_share_name("qs")
        .scheduling_priority(7)
        .preemption_configuration(
            ServiceJobPreemptionConfiguration::builder()
                .preemption_retries_before_termination(2)
                .build(),
        )
        .retry_strategy(ServiceJobRetryStrategy::builder().attempts(3).build())
        .tags("quotatop:work-seconds", "600")
        .send()
        .await
        .unwrap();
    let first = full.job_id().unwrap().to_string();
    assert_eq!(
        full.job_arn(),
        Some(format!("arn:aws:batch:us-east-1:123456789012:service-job/{first}").as_str())
    );
    let mut ids = vec![first.clone()];
    for i in 1..5 {
        emu.advance(1_000).unwrap();
        ids.push(submit(&c, &format!("train-{i}"), "qs", M5, 1, 1).await);
    }

    let d = c
        .describe_service_job()
        .job_id(&first)
        .send()
        .await
        .unwrap();
    assert_eq!(d.status(), Some(&ServiceJobStatus::Running));
    assert_eq!(d.scheduling_priority(), Some(7));
    assert_eq!(d.quota_share_name(), Some("qs"));
    assert_eq!(
        d.job_queue(),
        Some("arn:aws:batch:us-east-1:123456789012:job-queue/qm-queue")
    );
    assert_eq!(d.capacity_usage()[0].capacity_unit(), Some(M5));
    assert_eq!(d.capacity_usage()[0].quantity(), Some(2.0));
    assert_eq!(d.started_at(), Some(START));
    assert_eq!(d.created_at(), Some(START));
    assert_eq!(d.service_request_payload(), Some(payload(M5, 2).as_str()));
    assert_eq!(
        d.preemption_configuration()
            .unwrap()
            .preemption_retries_before_termination(),
        Some(2)
    );
    assert_eq!(d.retry_strategy().unwrap().attempts(), Some(3));
    assert_eq!(d.attempts().len(), 1);
    assert!(d.latest_attempt().is_some());
    assert_eq!(d.is_terminated(), Some(false));
    assert!(d.preemption_summary().is_none());
    let queued = c
        .describe_service_job()
        .job_id(&ids[1])
        .send()
        .await
        .unwrap();
    assert_eq!(queued.status(), Some(&ServiceJobStatus::Runnable));
    assert_eq!(queued.started_at(), Some(0), "startedAt is always sent");

    // Default status filter: RUNNING only.
    let running = c.list_service_jobs().job_queue(QUEUE).send().await.unwrap();
    let names: Vec<&str> = running
        .job_summary_list()
        .iter()
        .map(|j| j.job_name().unwrap())
        .collect();
    assert_eq!(names, vec!["train-0"]);
    let summary = &running.job_summary_list()[0];
    assert_eq!(summary.is_terminated(), None, "isTerminated only when true");
    assert_eq!(summary.capacity_usage()[0].quantity(), Some(2.0));

    // RUNNABLE, newest first, two per page, through the paginator.
    let pages: Vec<_> = c
        .list_service_jobs()
        .job_queue(QUEUE)
        .job_status(ServiceJobStatus::Runnable)
        .max_results(2)
        .into_paginator()
        .send()
        .collect::<Vec<_>>()
        .await;
    assert_eq!(pages.len(), 2);
    let runnable: Vec<String> = pages
        .into_iter()
        .flat_map(|p| p.unwrap().job_summary_list().to_vec())
        .map(|j| j.job_id().unwrap().to_string())
        .collect();
    let mut expected: Vec<String> = ids[1..].to_vec();
    expected.reverse();
    assert_eq!(runnable, expected);

    // JOB_NAME ignores jobStatus, is case-insensitive and takes a trailing '*'.
    let by_name = c
        .list_service_jobs()
        .job_queue(QUEUE)
        .job_status(ServiceJobStatus::Succeeded)
        .filters(
            KeyValuesPair::builder()
                .name("JOB_NAME")
                .values("TRAIN-*")
                .build(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(by_name.job_summary_list().len(), 5);
    let exact = c
        .list_service_jobs()
        .job_queue(QUEUE)
        .filters(
            KeyValuesPair::builder()
                .name("JOB_NAME")
                .values("train-1")
                .build(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(exact.job_summary_list().len(), 1);
    // AFTER_CREATED_AT (any status).
    let after = c
        .list_service_jobs()
        .job_queue(QUEUE)
        .filters(
            KeyValuesPair::builder()
                .name("AFTER_CREATED_AT")
                .values((START + 2_500).to_string())
                .build(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(after.job_summary_list().len(), 2);
    let before = c
        .list_service_jobs()
        .job_queue(QUEUE)
        .filters(
            KeyValuesPair::builder()
                .name("BEFORE_CREATED_AT")
                .values((START + 1_500).to_string())
                .build(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(before.job_summary_list().len(), 2);
    // QUOTA_SHARE_NAME combines with jobStatus (default RUNNING).
    let share_running = c
        .list_service_jobs()
        .job_queue(QUEUE)
        .filters(
            KeyValuesPair::builder()
                .name("QUOTA_SHARE_NAME")
                .values("qs")
                .build(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(share_running.job_summary_list().len(), 1);
    let other_share = c
        .list_service_jobs()
        .job_queue(QUEUE)
        .job_status(ServiceJobStatus::Runnable)
        .filters(
            KeyValuesPair::builder()
                .name("QUOTA_SHARE_NAME")
                .values("other")
                .build(),
        )
        .send()
        .await
        .unwrap();
    assert!(other_share.job_summary_list().is_empty());
    let two = c
        .list_service_jobs()
        .job_queue(QUEUE)
        .filters(
            KeyValuesPair::builder()
                .name("JOB_NAME")
                .values("a")
                .build(),
        )
        .filters(
            KeyValuesPair::builder()
                .name("QUOTA_SHARE_NAME")
                .values("qs")
                .build(),
        )
        .send()
        .await
        .unwrap_err();
    assert!(code(&two).1.contains("one filter"), "{:?}", code(&two));

    // UpdateServiceJob reorders the queue.
    let upd = c
        .update_service_job()
        .job_id(&ids[1])
        .scheduling_priority(100)
        .send()
        .await
        .unwrap();
    assert_eq!(upd.job_name(), Some("train-1"));
    assert_eq!(
        c.describe_service_job()
            .job_id(&ids[1])
            .send()
            .await
            .unwrap()
            .scheduling_priority(),
        Some(100)
    );

    // Terminating the running job lets the next (priority 100) one run.
    c.terminate_service_job()
        .job_id(&first)
        .reason("operator stop")
        .send()
        .await
        .unwrap();
    let d = c
        .describe_service_job()
        .job_id(&first)
        .send()
        .await
        .unwrap();
    assert_eq!(d.status(), Some(&ServiceJobStatus::Failed));
    assert_eq!(d.status_reason(), Some("operator stop"));
    assert_eq!(d.is_terminated(), Some(true));
    assert_eq!(d.stopped_at(), Some(START + 4_000));
    assert_eq!(
        c.describe_service_job()
            .job_id(&ids[1])
            .send()
            .await
            .unwrap()
            .status(),
        Some(&ServiceJobStatus::Running)
    );
    let failed = c
        .list_service_jobs()
        .job_queue(QUEUE)
        .job_status(ServiceJobStatus::Failed)
        .send()
        .await
        .unwrap();
    assert_eq!(failed.job_summary_list()[0].is_terminated(), Some(true));

    let many = c
        .terminate_service_jobs()
        .jobs(&ids[2])
        .jobs(&ids[3])
        .jobs("00000000-0000-4000-8000-000000000000")
        .reason("cleanup")
        .send()
        .await
        .unwrap();
    assert_eq!(many.successful().len(), 3);
    assert!(many.errors().is_empty());
    assert_eq!(
        c.describe_service_job()
            .job_id(&ids[3])
            .send()
            .await
            .unwrap()
            .status(),
        Some(&ServiceJobStatus::Failed)
    );

    // The work tag: train-0 would have finished after 600 simulated seconds; train-1 runs to a
    // second before the payload's MaxRuntimeInSeconds (36000).
    emu.advance(600_000).unwrap();
    assert_eq!(
        c.describe_service_job()
            .job_id(&ids[1])
            .send()
            .await
            .unwrap()
            .status(),
        Some(&ServiceJobStatus::Running)
    );
    emu.advance(36_000_000).unwrap();
    let done = c
        .describe_service_job()
        .job_id(&ids[1])
        .send()
        .await
        .unwrap();
    assert_eq!(done.status(), Some(&ServiceJobStatus::Succeeded));
    assert_eq!(done.status_reason(), Some("Completed"));
    emu.shutdown().await.unwrap();
}

#[tokio::test]
async fn bad_input_gets_typed_client_exceptions() {
    let emu = start(&[(M5, 2)], "").await;
    let c = client(&emu, 1);
    create_share(&c, "qs", &[(M5, 1)], Strategy::Lend, None, false).await;
    let ok = submit(&c, "fine", "qs", M5, 1, 0).await;

    let unknown = c
        .describe_service_job()
        .job_id("no-such-job")
        .send()
        .await
        .unwrap_err();
    assert!(unknown.as_service_error().unwrap().is_client_exception());
    assert_eq!(code(&unknown).1, "Job no-such-job does not exist");

    let e = c
        .update_service_job()
        .job_id(&ok)
        .scheduling_priority(10000)
        .send()
        .await
        .unwrap_err();
    assert!(e.as_service_error().unwrap().is_client_exception());
    assert!(code(&e).1.contains("between 0 and 9999"), "{:?}", code(&e));

    let base = || {
        c.submit_service_job()
            .job_name("j")
            .job_queue(QUEUE)
            .service_job_type(ServiceJobType::SagemakerTraining)
            .service_request_payload(payload(M5, 1))
    };
    let cases = [
        (
            base().quota_share_name("qs").scheduling_priority(10000),
            "between 0 and 9999",
        ),
        (base(), "quotaShareName is required"),
        (
            base().quota_share_name("nope"),
            "Quota share nope does not exist",
        ),
        (
            base().quota_share_name("qs").share_identifier("x"),
            "shareIdentifier cannot be specified",
        ),
        (
            base()
                .quota_share_name("qs")
                .service_request_payload("{\"ResourceConfig\":{}}"),
            "InstanceType",
        ),
        (
            base()
                .quota_share_name("qs")
                .service_request_payload("not json"),
            "not valid JSON",
        ),
        (
            base().quota_share_name("qs").job_queue("missing"),
            "Job queue missing does not exist",
        ),
        (
            base().quota_share_name("qs").job_name("bad name!"),
            "Invalid jobName",
        ),
        (
            base()
                .quota_share_name("qs")
                .tags("quotatop:work-seconds", "soon"),
            "quotatop:work-seconds",
        ),
    ];
    for (req, needle) in cases {
        let e = req.send().await.unwrap_err();
        let se = e.as_service_error().unwrap();
        assert!(se.is_client_exception(), "{needle}: {e:?}");
        assert!(code(&e).1.contains(needle), "{needle}: {:?}", code(&e));
    }
    let no_queue = c.list_service_jobs().send().await.unwrap_err();
    assert!(code(&no_queue).1.contains("jobQueue is required"));
    let bad_token = c
        .list_service_jobs()
        .job_queue(QUEUE)
        .next_token("garbage")
        .send()
        .await
        .unwrap_err();
    assert!(code(&bad_token).1.contains("nextToken"));
    let too_many = c
        .list_service_jobs()
        .job_queue(QUEUE)
        .max_results(1000)
        .send()
        .await
        .unwrap_err();
    assert!(code(&too_many).1.contains("maxResults"));
    let bad_share_arn = c
        .describe_quota_share()
        .quota_share_arn("qs")
        .send()
        .await
        .unwrap_err();
    assert!(code(&bad_share_arn).1.contains("Invalid quotaShareArn"));
    let snap = c
        .get_job_queue_snapshot()
        .job_queue("missing")
        .send()
        .await
        .unwrap_err();
    assert!(snap.as_service_error().unwrap().is_client_exception());
    // Nothing was submitted by the refused calls.
    let all = c
        .list_service_jobs()
        .job_queue(QUEUE)
        .filters(
            KeyValuesPair::builder()
                .name("JOB_NAME")
                .values("*")
                .build(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(all.job_summary_list().len(), 1);
    emu.shutdown().await.unwrap();
}

#[tokio::test]
async fn tags_on_jobs_shares_and_the_queue() {
    let emu = start(&[(M5, 2)], "").await;
    let c = client(&emu, 1);
    let share_arn = create_share(&c, "qs", &[(M5, 1)], Strategy::Lend, None, false).await;
    let job = submit(&c, "j", "qs", M5, 1, 0).await;
    let job_arn = format!("arn:aws:batch:us-east-1:123456789012:service-job/{job}");
    let queue_arn = "arn:aws:batch:us-east-1:123456789012:job-queue/qm-queue";
    for arn in [share_arn.as_str(), job_arn.as_str(), queue_arn] {
        c.tag_resource()
            .resource_arn(arn)
            .tags("owner", "ops")
            .tags("cost-center", "42")
            .send()
            .await
            .unwrap();
        let tags = c
            .list_tags_for_resource()
            .resource_arn(arn)
            .send()
            .await
            .unwrap();
        assert_eq!(tags.tags().unwrap().len(), 2, "{arn}");
        c.untag_resource()
            .resource_arn(arn)
            .tag_keys("owner")
            .send()
            .await
            .unwrap();
        let tags = c
            .list_tags_for_resource()
            .resource_arn(arn)
            .send()
            .await
            .unwrap();
        let keys: Vec<&String> = tags.tags().unwrap().keys().collect();
        assert_eq!(keys, vec!["cost-center"], "{arn}");
    }
    let d = c
        .describe_quota_share()
        .quota_share_arn(&share_arn)
        .send()
        .await
        .unwrap();
    assert_eq!(
        d.tags().unwrap().get("cost-center").map(String::as_str),
        Some("42")
    );
    let d = c.describe_service_job().job_id(&job).send().await.unwrap();
    assert_eq!(
        d.tags().unwrap().get("cost-center").map(String::as_str),
        Some("42")
    );
    let missing = c
        .list_tags_for_resource()
        .resource_arn("arn:aws:batch:us-east-1:123456789012:service-job/nope")
        .send()
        .await
        .unwrap_err();
    assert!(missing.as_service_error().unwrap().is_client_exception());
    emu.shutdown().await.unwrap();
}

#[tokio::test]
async fn throttled_call_is_retried_by_the_sdk_and_succeeds() {
    let emu = start(&[(M5, 2)], "describejobqueues:throttle-first=2").await;
    // Without retries the throttle is visible, with its code.
    let once = client(&emu, 1);
    let e = once.describe_job_queues().send().await.unwrap_err();
    assert_eq!(code(&e).0, "TooManyRequestsException");
    assert_eq!(code(&e).1, "Too Many Requests");
    // With the SDK's standard retries the next throttle is retried, then the call succeeds.
    let c = client(&emu, 3);
    let out = c.describe_job_queues().send().await.unwrap();
    assert_eq!(out.job_queues().len(), 1);
    assert_eq!(emu.fault_stats().throttled, 2);
    // Other operations are not throttled.
    c.list_service_jobs().job_queue(QUEUE).send().await.unwrap();
    assert_eq!(emu.fault_stats().throttled, 2);
    emu.shutdown().await.unwrap();
}

#[tokio::test]
async fn server_errors_and_dropped_connections_reach_the_sdk() {
    let emu = start(
        &[(M5, 2)],
        "listservicejobs:error=1;describejobqueues:drop=1;getjobqueuesnapshot:latency=30ms",
    )
    .await;
    let c = client(&emu, 2);
    let e = c
        .list_service_jobs()
        .job_queue(QUEUE)
        .send()
        .await
        .unwrap_err();
    assert!(e.as_service_error().unwrap().is_server_exception(), "{e:?}");
    let e = c.describe_job_queues().send().await.unwrap_err();
    assert!(
        e.as_service_error().is_none(),
        "a dropped connection has no response: {e:?}"
    );
    let t = std::time::Instant::now();
    c.get_job_queue_snapshot()
        .job_queue(QUEUE)
        .send()
        .await
        .unwrap();
    assert!(t.elapsed() >= std::time::Duration::from_millis(30));
    let stats = emu.fault_stats();
    assert_eq!(
        (stats.server_errors, stats.dropped),
        (2, 2),
        "each retried once"
    );
    // The server still serves.
    c.describe_service_environments().send().await.unwrap();
    emu.shutdown().await.unwrap();
}
