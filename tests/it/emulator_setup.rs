//! The AWS user guide's setup flow, driven by the Rust SDK against an emulator started empty:
//! environment → policy → queue → quota shares → submit → the job runs → disable and delete in
//! the documented order; `quotatop snapshot` shows the queue. And regions: a request signed for
//! another region sees that region's own world, with its ARNs.

use std::time::Duration;

use aws_sdk_batch::config::retry::RetryConfig;
use aws_sdk_batch::config::{BehaviorVersion, Region};
use aws_sdk_batch::types::{
    CapacityLimit, JqState, QuotaSharePolicy, QuotaShareResourceSharingStrategy as Strategy,
    QuotaShareState, ServiceEnvironmentOrder, ServiceEnvironmentState, ServiceEnvironmentType,
    ServiceJobType,
};
use quotatop_emulator::{self as emulator, ClockMode, EmulatorConfig, EmulatorHandle, Scenario};
use quotatop_model::CapacityLimit as Limit;

use crate::data_support::quotatop;
use crate::emulator_support::{M5, START, create_share, payload};

async fn start_empty(account: &str) -> EmulatorHandle {
    let mut config =
        EmulatorConfig::from_scenario(Scenario::empty("unused", vec![Limit::new(M5, 1)])).unwrap();
    config.clock = ClockMode::Manual;
    config.start_ms = Some(START);
    config.preload = false;
    config.account = account.to_string();
    emulator::start(config).await.unwrap()
}

fn client_in(handle: &EmulatorHandle, region: &str) -> aws_sdk_batch::Client {
    let creds = aws_credential_types::Credentials::from_keys("AKIDTEST", "secret", None);
    let conf = aws_sdk_batch::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new(region.to_string()))
        .credentials_provider(creds)
        .endpoint_url(handle.endpoint_url())
        .retry_config(RetryConfig::standard().with_max_attempts(1))
        .timeout_config(
            aws_sdk_batch::config::timeout::TimeoutConfig::builder()
                .operation_timeout(Duration::from_secs(10))
                .build(),
        )
        .build();
    aws_sdk_batch::Client::from_conf(conf)
}

fn code<E: aws_sdk_batch::error::ProvideErrorMetadata>(e: E) -> String {
    format!(
        "{}: {}",
        e.code().unwrap_or("?"),
        e.message().unwrap_or("?")
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_user_guides_setup_flow_works_against_an_empty_emulator() {
    let emu = start_empty("210987654321").await;
    let c = client_in(&emu, "us-east-1");
    assert!(
        c.describe_job_queues()
            .send()
            .await
            .unwrap()
            .job_queues()
            .is_empty()
    );

    // 1. Service environment: CREATING, then VALID.
    let env = c
        .create_service_environment()
        .service_environment_name("qm-se")
        .service_environment_type(ServiceEnvironmentType::SagemakerTraining)
        .capacity_limits(
            CapacityLimit::builder()
                .capacity_unit(M5)
                .max_capacity(4)
                .build(),
        )
        .send()
        .await
        .unwrap();
    let env_arn = env.service_environment_arn().unwrap().to_string();
    assert_eq!(
        env_arn,
        "arn:aws:batch:us-east-1:210987654321:service-environment/qm-se"
    );
    let status = |c: aws_sdk_batch::Client| async move {
        c.describe_service_environments()
            .service_environments("qm-se")
            .send()
            .await
            .unwrap()
            .service_environments()[0]
            .status()
            .map(|s| s.as_str().to_string())
    };
    assert_eq!(status(c.clone()).await.as_deref(), Some("CREATING"));
    // NUM_INSTANCES is for environments without quota management.
    let err = c
        .create_service_environment()
        .service_environment_name("other")
        .service_environment_type(ServiceEnvironmentType::SagemakerTraining)
        .capacity_limits(
            CapacityLimit::builder()
                .capacity_unit("NUM_INSTANCES")
                .max_capacity(4)
                .build(),
        )
        .send()
        .await
        .unwrap_err();
    assert!(code(err.into_service_error()).contains("NUM_INSTANCES"));

    // 2. Scheduling policy with a quota-share policy.
    let policy_arn = c
        .create_scheduling_policy()
        .name("qm-policy")
        .quota_share_policy(
            QuotaSharePolicy::builder()
                .idle_resource_assignment_strategy("FIFO".into())
                .build(),
        )
        .send()
        .await
        .unwrap()
        .arn()
        .unwrap()
        .to_string();

    // 3. Job queue: refused while the environment is CREATING, then created.
    let create_queue = || {
        c.create_job_queue()
            .job_queue_name("qm-queue")
            .priority(1)
            .scheduling_policy_arn(&policy_arn)
            .job_queue_type(aws_sdk_batch::types::JobQueueType::SagemakerTraining)
            .service_environment_order(
                ServiceEnvironmentOrder::builder()
                    .order(1)
                    .service_environment(&env_arn)
                    .build(),
            )
    };
    let err = create_queue().send().await.unwrap_err();
    assert!(code(err.into_service_error()).contains("CREATING"));
    emu.advance(1_000).unwrap();
    assert_eq!(status(c.clone()).await.as_deref(), Some("VALID"));
    let queue_arn = create_queue()
        .send()
        .await
        .unwrap()
        .job_queue_arn()
        .unwrap()
        .to_string();
    assert_eq!(
        queue_arn,
        "arn:aws:batch:us-east-1:210987654321:job-queue/qm-queue"
    );
    // One quota-management queue per environment.
    let err = c
        .create_job_queue()
        .job_queue_name("second")
        .priority(1)
        .scheduling_policy_arn(&policy_arn)
        .service_environment_order(
            ServiceEnvironmentOrder::builder()
                .order(1)
                .service_environment("qm-se")
                .build(),
        )
        .send()
        .await
        .unwrap_err();
    assert!(code(err.into_service_error()).contains("already connected"));
    emu.advance(1_000).unwrap();
    let q = c
        .describe_job_queues()
        .job_queues("qm-queue")
        .send()
        .await
        .unwrap();
    let q = &q.job_queues()[0];
    assert_eq!(q.status().map(|s| s.as_str()), Some("VALID"));
    assert_eq!(q.state().map(|s| s.as_str()), Some("ENABLED"));
    assert_eq!(q.status_reason(), Some("JobQueue Healthy"));

    // 4. Quota shares, then a job that runs.
    let share_arn = create_share(
        &c,
        "team-a",
        &[(M5, 2)],
        Strategy::LendAndBorrow,
        None,
        false,
    )
    .await;
    assert!(share_arn.starts_with(&format!("{queue_arn}/quota-share/")));
    let job = c
        .submit_service_job()
        .job_name("train")
        .job_queue("qm-queue")
        .service_job_type(ServiceJobType::SagemakerTraining)
        .service_request_payload(payload(M5, 1))
        .quota_share_name("team-a")
        .send()
        .await
        .unwrap();
    assert!(
        job.job_arn()
            .unwrap()
            .starts_with("arn:aws:batch:us-east-1:210987654321:service-job/")
    );
    emu.advance(60_000).unwrap();
    let d = c
        .describe_service_job()
        .job_id(job.job_id().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(d.status().unwrap().as_str(), "RUNNING");
    assert!(
        d.latest_attempt()
            .unwrap()
            .service_resource_id()
            .unwrap()
            .value()
            .is_some_and(
                |v| v.starts_with("arn:aws:sagemaker:us-east-1:210987654321:training-job/")
            )
    );

    // The console's own client sees the queue.
    let endpoint = emu.endpoint_url();
    let out = tokio::task::spawn_blocking(move || {
        quotatop()
            .args([
                "snapshot",
                "--queue",
                "qm-queue",
                "--endpoint-url",
                &endpoint,
            ])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("qm-queue") && stdout.contains("team-a"),
        "{stdout}"
    );

    // Growing the environment reaches the queue's scheduler.
    c.update_service_environment()
        .service_environment("qm-se")
        .capacity_limits(
            CapacityLimit::builder()
                .capacity_unit(M5)
                .max_capacity(8)
                .build(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(status(c.clone()).await.as_deref(), Some("UPDATING"));

    // 5. Tear down in the documented order: each step refused until the one before it.
    let err = c
        .delete_job_queue()
        .job_queue("qm-queue")
        .send()
        .await
        .unwrap_err();
    assert!(code(err.into_service_error()).contains("disable it"));
    c.update_quota_share()
        .quota_share_arn(&share_arn)
        .state(QuotaShareState::Disabled)
        .send()
        .await
        .unwrap();
    c.delete_quota_share()
        .quota_share_arn(&share_arn)
        .send()
        .await
        .unwrap();
    c.update_job_queue()
        .job_queue("qm-queue")
        .state(JqState::Disabled)
        .send()
        .await
        .unwrap();
    let err = c
        .submit_service_job()
        .job_name("late")
        .job_queue("qm-queue")
        .service_job_type(ServiceJobType::SagemakerTraining)
        .service_request_payload(payload(M5, 1))
        .quota_share_name("team-a")
        .send()
        .await
        .unwrap_err();
    assert!(code(err.into_service_error()).contains("DISABLED"));
    let err = c
        .delete_scheduling_policy()
        .arn(&policy_arn)
        .send()
        .await
        .unwrap_err();
    assert!(code(err.into_service_error()).contains("used by job queue qm-queue"));
    c.update_service_environment()
        .service_environment("qm-se")
        .state(ServiceEnvironmentState::Disabled)
        .send()
        .await
        .unwrap();
    let err = c
        .delete_service_environment()
        .service_environment("qm-se")
        .send()
        .await
        .unwrap_err();
    assert!(code(err.into_service_error()).contains("delete the queue first"));
    emu.advance(1_000).unwrap();
    c.delete_job_queue()
        .job_queue("qm-queue")
        .send()
        .await
        .unwrap();
    let q = c.describe_job_queues().send().await.unwrap();
    assert_eq!(
        q.job_queues()[0].status().map(|s| s.as_str()),
        Some("DELETING")
    );
    emu.advance(1_000).unwrap();
    assert!(
        c.describe_job_queues()
            .send()
            .await
            .unwrap()
            .job_queues()
            .is_empty()
    );
    c.delete_service_environment()
        .service_environment("qm-se")
        .send()
        .await
        .unwrap();
    c.delete_scheduling_policy()
        .arn(&policy_arn)
        .send()
        .await
        .unwrap();
    emu.advance(1_000).unwrap();
    let envs = c.describe_service_environments().send().await.unwrap();
    assert!(envs.service_environments().is_empty());
    assert!(
        c.list_scheduling_policies()
            .send()
            .await
            .unwrap()
            .scheduling_policies()
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_signed_for_another_region_sees_that_regions_own_world() {
    // The scenario's world lives in the home region.
    let h = crate::emulator_support::start(&[(M5, 2)], "").await;
    let home = client_in(&h, "us-east-1");
    let queues = home.describe_job_queues().send().await.unwrap();
    assert_eq!(queues.job_queues().len(), 1);
    assert!(
        queues.job_queues()[0]
            .job_queue_arn()
            .unwrap()
            .contains(":us-east-1:")
    );

    let eu = client_in(&h, "eu-west-1");
    assert!(
        eu.describe_job_queues()
            .send()
            .await
            .unwrap()
            .job_queues()
            .is_empty()
    );
    let err = eu
        .list_service_jobs()
        .job_queue(crate::emulator_support::QUEUE)
        .send()
        .await
        .unwrap_err();
    assert!(code(err.into_service_error()).contains("does not exist"));
    let arn = eu
        .create_scheduling_policy()
        .name("eu-policy")
        .quota_share_policy(
            QuotaSharePolicy::builder()
                .idle_resource_assignment_strategy("FIFO".into())
                .build(),
        )
        .send()
        .await
        .unwrap()
        .arn()
        .unwrap()
        .to_string();
    assert_eq!(
        arn,
        "arn:aws:batch:eu-west-1:123456789012:scheduling-policy/eu-policy"
    );
    // Home does not see the other region's policy.
    let home_policies = home.list_scheduling_policies().send().await.unwrap();
    assert!(
        home_policies
            .scheduling_policies()
            .iter()
            .all(|p| p.arn() != Some(arn.as_str()))
    );

    // A queue of the same name in the other region: its jobs are its own, with their own ids.
    eu.create_service_environment()
        .service_environment_name("se")
        .service_environment_type(ServiceEnvironmentType::SagemakerTraining)
        .capacity_limits(
            CapacityLimit::builder()
                .capacity_unit(M5)
                .max_capacity(2)
                .build(),
        )
        .send()
        .await
        .unwrap();
    h.advance(1_000).unwrap();
    eu.create_job_queue()
        .job_queue_name(crate::emulator_support::QUEUE)
        .priority(1)
        .scheduling_policy_arn(&arn)
        .service_environment_order(
            ServiceEnvironmentOrder::builder()
                .order(1)
                .service_environment("se")
                .build(),
        )
        .send()
        .await
        .unwrap();
    h.advance(1_000).unwrap();
    create_share(&eu, "s", &[(M5, 1)], Strategy::Reserve, None, false).await;
    create_share(&home, "s", &[(M5, 1)], Strategy::Reserve, None, false).await;
    let submit = |c: &aws_sdk_batch::Client| {
        c.submit_service_job()
            .job_name("same")
            .job_queue(crate::emulator_support::QUEUE)
            .service_job_type(ServiceJobType::SagemakerTraining)
            .service_request_payload(payload(M5, 1))
            .quota_share_name("s")
            .send()
    };
    let in_eu = submit(&eu).await.unwrap();
    let at_home = submit(&home).await.unwrap();
    assert_ne!(in_eu.job_id(), at_home.job_id());
    assert!(in_eu.job_arn().unwrap().contains(":eu-west-1:"));
    let err = home
        .describe_service_job()
        .job_id(in_eu.job_id().unwrap())
        .send()
        .await
        .unwrap_err();
    assert!(code(err.into_service_error()).contains("does not exist"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_region_holds_a_bounded_number_of_resources() {
    let emu = start_empty("123456789012").await;
    let c = client_in(&emu, "ap-south-1");
    let create = |i: usize| {
        c.create_scheduling_policy()
            .name(format!("p{i}"))
            .quota_share_policy(
                QuotaSharePolicy::builder()
                    .idle_resource_assignment_strategy("FIFO".into())
                    .build(),
            )
            .send()
    };
    for i in 0..50 {
        create(i).await.unwrap();
    }
    let err = create(50).await.unwrap_err();
    assert!(
        code(err.into_service_error()).contains("at most 50 scheduling policies"),
        "the 51st is refused"
    );
}
