//! What a client notices when it checks the emulator against AWS (issue 36), each through the
//! Rust SDK (or, for what the SDK hides, on the wire): times never in the client's future,
//! no `startedAt: 0`, the documented detach of a service environment, a DISABLED environment
//! running nothing, setup at `--speed 0`, `clientToken` as the SDKs' retries need it, page
//! tokens bound to their query, SigV4 checked for shape, and the smaller limits.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_sdk_batch::types::{
    CapacityLimit, KeyValuesPair, ServiceEnvironmentOrder, ServiceEnvironmentState,
    ServiceEnvironmentType, ServiceJobEvaluateOnExit, ServiceJobRetryStrategy, ServiceJobStatus,
    ServiceJobType,
};
use quotatop_emulator::{
    self as emulator, ClockMode, EmulatorConfig, EmulatorHandle, FaultSpec, Scenario,
};
use quotatop_model::CapacityLimit as Limit;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::emulator_support::*;
use aws_sdk_batch::types::QuotaShareResourceSharingStrategy as Strategy;

/// The client's own clock.
fn client_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn message<E: aws_sdk_batch::error::ProvideErrorMetadata>(e: E) -> String {
    format!(
        "{}: {}",
        e.code().unwrap_or("?"),
        e.message().unwrap_or("?")
    )
}

async fn start_scaled(speed: f64, start_ms: Option<i64>, preload: bool) -> EmulatorHandle {
    let scenario = Scenario::empty(QUEUE, vec![Limit::new(M5, 2)]);
    let mut config = EmulatorConfig::from_scenario(scenario).unwrap();
    config.clock = ClockMode::Scaled(speed);
    config.start_ms = start_ms;
    config.preload = preload;
    config.tick = Duration::from_millis(10);
    emulator::start(config).await.unwrap()
}

fn submit_req(
    c: &aws_sdk_batch::Client,
    name: &str,
) -> aws_sdk_batch::operation::submit_service_job::builders::SubmitServiceJobFluentBuilder {
    c.submit_service_job()
        .job_name(name)
        .job_queue(QUEUE)
        .service_job_type(ServiceJobType::SagemakerTraining)
        .service_request_payload(payload(M5, 1))
        .quota_share_name("qs")
}

async fn job(
    c: &aws_sdk_batch::Client,
    id: &str,
) -> aws_sdk_batch::operation::describe_service_job::DescribeServiceJobOutput {
    c.describe_service_job().job_id(id).send().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_time_the_api_returns_is_in_the_clients_future_at_any_speed() {
    // The fastest clock, from its default start and from a start just behind the wall clock
    // (which it reaches within milliseconds and must then not pass).
    for start in [None, Some(client_now() - 1_000)] {
        let emu = start_scaled(quotatop_emulator::MAX_SPEED, start, true).await;
        let c = client(&emu, 1);
        create_share(&c, "qs", &[(M5, 2)], Strategy::Reserve, None, false).await;
        let id = submit_req(&c, "clocked")
            .send()
            .await
            .unwrap()
            .job_id()
            .unwrap()
            .to_string();
        tokio::time::sleep(Duration::from_millis(300)).await;
        let now = client_now();
        let j = job(&c, &id).await;
        let times = [
            Some(j.created_at().unwrap()),
            j.scheduled_at(),
            j.started_at(),
        ];
        for t in times.into_iter().flatten() {
            assert!(
                t <= now,
                "{start:?}: a time {t} after the client's clock {now}"
            );
        }
        // BEFORE_CREATED_AT = the client's now finds the job submitted a moment ago.
        let listed = c
            .list_service_jobs()
            .job_queue(QUEUE)
            .filters(
                KeyValuesPair::builder()
                    .name("BEFORE_CREATED_AT")
                    .values(now.to_string())
                    .build(),
            )
            .send()
            .await
            .unwrap();
        assert!(
            listed
                .job_summary_list()
                .iter()
                .any(|s| s.job_id() == Some(id.as_str())),
            "{start:?}: BEFORE_CREATED_AT=now misses the job"
        );
        let snapshot = c
            .get_job_queue_snapshot()
            .job_queue(QUEUE)
            .send()
            .await
            .unwrap();
        let updated = snapshot
            .front_of_queue()
            .and_then(|f| f.last_updated_at())
            .unwrap_or(0);
        assert!(updated <= client_now(), "{start:?}: snapshot at {updated}");
        emu.shutdown().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn started_at_is_absent_until_a_job_runs_and_then_its_real_start() {
    let emu = start(&[(M5, 1)], "").await;
    let c = client(&emu, 1);
    create_share(&c, "qs", &[(M5, 1)], Strategy::Reserve, None, true).await;
    // Lifecycle delays are zero here: the first job runs at once, the second waits.
    let low = submit(&c, "low", "qs", M5, 1, 1).await;
    let waiting = submit(&c, "waiting", "qs", M5, 1, 1).await;
    emu.advance(60_000).unwrap();
    let w = job(&c, &waiting).await;
    assert_eq!(w.status(), Some(&ServiceJobStatus::Runnable));
    // Never started: no startedAt on the wire (the Rust SDK fills an absent required member
    // with 0 by itself, so the wire is read below).
    let body = raw(
        emu.addr(),
        "/v1/describeservicejob",
        &format!(r#"{{"jobId":"{waiting}"}}"#),
        SIGNED,
    )
    .await;
    assert!(!body.contains("\"startedAt\""), "{body}");
    let running = job(&c, &low).await;
    assert_eq!(running.status(), Some(&ServiceJobStatus::Running));
    assert!(running.started_at().is_some_and(|t| t > 0));
    let started = running.started_at().unwrap();
    assert!(started >= START, "{started}");
    // A higher priority job of the same share preempts it: RUNNABLE again, showing the real
    // start of its last attempt (not 0).
    let high = submit(&c, "high", "qs", M5, 1, 90).await;
    for _ in 0..10 {
        emu.advance(60_000).unwrap();
    }
    let preempted = job(&c, &low).await;
    assert_eq!(preempted.status(), Some(&ServiceJobStatus::Runnable));
    assert_eq!(preempted.started_at(), Some(started));
    assert_eq!(preempted.attempts()[0].started_at(), Some(started));
    assert_eq!(
        job(&c, &high).await.status(),
        Some(&ServiceJobStatus::Running)
    );
    let listed = c
        .list_service_jobs()
        .job_queue(QUEUE)
        .job_status(ServiceJobStatus::Runnable)
        .send()
        .await
        .unwrap();
    let summary = listed
        .job_summary_list()
        .iter()
        .find(|s| s.job_id() == Some(low.as_str()));
    assert_eq!(summary.and_then(|s| s.started_at()), Some(started));
    emu.shutdown().await.unwrap();
}

/// The scenario's environment ARN of the queue.
async fn queue_env(c: &aws_sdk_batch::Client) -> Vec<String> {
    c.describe_job_queues()
        .job_queues(QUEUE)
        .send()
        .await
        .unwrap()
        .job_queues()[0]
        .service_environment_order()
        .iter()
        .map(|o| o.service_environment().unwrap_or("").to_string())
        .collect()
}

async fn set_env_state(c: &aws_sdk_batch::Client, env: &str, state: ServiceEnvironmentState) {
    c.update_service_environment()
        .service_environment(env)
        .state(state)
        .send()
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disabled_environment_runs_nothing_and_the_documented_detach_works() {
    let emu = start(&[(M5, 2)], "").await;
    let c = client(&emu, 1);
    create_share(&c, "qs", &[(M5, 2)], Strategy::Reserve, None, false).await;
    let env = queue_env(&c).await.remove(0);
    let first = submit(&c, "first", "qs", M5, 1, 1).await;
    emu.advance(60_000).unwrap();
    assert_eq!(
        job(&c, &first).await.status(),
        Some(&ServiceJobStatus::Running)
    );

    // DISABLED: the running job runs on, a new one waits although capacity is free.
    set_env_state(&c, &env, ServiceEnvironmentState::Disabled).await;
    let second = submit(&c, "second", "qs", M5, 1, 1).await;
    for _ in 0..5 {
        emu.advance(60_000).unwrap();
    }
    assert_eq!(
        job(&c, &second).await.status(),
        Some(&ServiceJobStatus::Runnable)
    );
    assert_eq!(
        job(&c, &first).await.status(),
        Some(&ServiceJobStatus::Running)
    );
    set_env_state(&c, &env, ServiceEnvironmentState::Enabled).await;
    emu.advance(60_000).unwrap();
    assert_eq!(
        job(&c, &second).await.status(),
        Some(&ServiceJobStatus::Running)
    );

    // Move the queue to a second environment (its capacity from now on) ...
    let other = c
        .create_service_environment()
        .service_environment_name("second-se")
        .service_environment_type(ServiceEnvironmentType::SagemakerTraining)
        .capacity_limits(
            CapacityLimit::builder()
                .capacity_unit(M5)
                .max_capacity(5)
                .build(),
        )
        .send()
        .await
        .unwrap()
        .service_environment_arn()
        .unwrap()
        .to_string();
    emu.advance(1_000).unwrap();
    let order = |arn: &str| {
        ServiceEnvironmentOrder::builder()
            .order(1)
            .service_environment(arn)
            .build()
    };
    c.update_job_queue()
        .job_queue(QUEUE)
        .service_environment_order(order(&other))
        .send()
        .await
        .unwrap();
    assert_eq!(queue_env(&c).await, vec![other.clone()]);
    // ... then, as DeleteServiceEnvironment's documentation says: disable the queue, detach
    // the environment with an empty serviceEnvironmentOrder, disable and delete it.
    c.update_job_queue()
        .job_queue(QUEUE)
        .state(aws_sdk_batch::types::JqState::Disabled)
        .send()
        .await
        .unwrap();
    emu.advance(1_000).unwrap();
    c.update_job_queue()
        .job_queue(QUEUE)
        .set_service_environment_order(Some(Vec::new()))
        .send()
        .await
        .unwrap();
    assert!(queue_env(&c).await.is_empty());
    set_env_state(&c, &other, ServiceEnvironmentState::Disabled).await;
    emu.advance(1_000).unwrap();
    c.delete_service_environment()
        .service_environment(&other)
        .send()
        .await
        .unwrap();
    emu.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_clock_can_still_be_set_up() {
    let emu = start_scaled(0.0, None, false).await;
    let c = client(&emu, 1);
    c.create_service_environment()
        .service_environment_name("frozen-se")
        .service_environment_type(ServiceEnvironmentType::SagemakerTraining)
        .capacity_limits(
            CapacityLimit::builder()
                .capacity_unit(M5)
                .max_capacity(1)
                .build(),
        )
        .send()
        .await
        .unwrap();
    let t = std::time::Instant::now();
    let status = loop {
        let out = c
            .describe_service_environments()
            .service_environments("frozen-se")
            .send()
            .await
            .unwrap();
        let status = out.service_environments()[0]
            .status()
            .map(|s| s.as_str().to_string());
        if status.as_deref() == Some("VALID") || t.elapsed() > Duration::from_secs(10) {
            break status;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(status.as_deref(), Some("VALID"), "after {:?}", t.elapsed());
    emu.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_token_retried_with_the_same_request_returns_the_original_job() {
    let emu = start(&[(M5, 1)], "").await;
    let c = client(&emu, 1);
    create_share(&c, "qs", &[(M5, 1)], Strategy::Reserve, None, false).await;
    let first = submit_req(&c, "tokened")
        .client_token("tok-1")
        .send()
        .await
        .unwrap();
    // The identical request again (an SDK's retry): the job the first one submitted.
    let again = submit_req(&c, "tokened")
        .client_token("tok-1")
        .send()
        .await
        .unwrap();
    assert_eq!(again.job_id(), first.job_id());
    assert_eq!(again.job_arn(), first.job_arn());
    // Another request with the same token: refused.
    let other = submit_req(&c, "different")
        .client_token("tok-1")
        .send()
        .await
        .unwrap_err();
    let m = message(other.into_service_error());
    assert!(m.contains("different request"), "{m}");
    // The SDK's own token (an idempotency token it fills in) after a lost answer: its retry
    // gets the job the lost answer named, not an exception.
    emu.set_faults(FaultSpec::parse("submitservicejob:lose-answer-first=1").unwrap());
    let retried = client(&emu, 3);
    let lost = submit_req(&retried, "retried").send().await.unwrap();
    assert_eq!(emu.fault_stats().answers_lost, 1);
    // Two jobs were submitted, one per distinct request.
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
    let mut ids: Vec<&str> = all
        .job_summary_list()
        .iter()
        .map(|j| j.job_id().unwrap())
        .collect();
    ids.sort_unstable();
    let mut want = vec![first.job_id().unwrap(), lost.job_id().unwrap()];
    want.sort_unstable();
    assert_eq!(ids, want);
    // A retry that comes after the queue was disabled still gets the job its request submitted.
    c.update_job_queue()
        .job_queue(QUEUE)
        .state(aws_sdk_batch::types::JqState::Disabled)
        .send()
        .await
        .unwrap();
    let late = submit_req(&c, "tokened")
        .client_token("tok-1")
        .send()
        .await
        .unwrap();
    assert_eq!(late.job_id(), first.job_id());
    emu.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_token_is_valid_only_for_its_own_query() {
    let emu = start(&[(M5, 1)], "").await;
    let c = client(&emu, 1);
    create_share(&c, "qs", &[(M5, 1)], Strategy::Reserve, None, false).await;
    for k in 0..3 {
        submit(&c, &format!("j{k}"), "qs", M5, 1, 1).await;
    }
    emu.advance(60_000).unwrap();
    let list = |status: ServiceJobStatus, token: Option<String>| {
        c.list_service_jobs()
            .job_queue(QUEUE)
            .job_status(status)
            .max_results(1)
            .set_next_token(token)
            .send()
    };
    let token = list(ServiceJobStatus::Runnable, None)
        .await
        .unwrap()
        .next_token()
        .map(str::to_string);
    assert!(token.is_some());
    // The same query continues.
    assert_eq!(
        list(ServiceJobStatus::Runnable, token.clone())
            .await
            .unwrap()
            .job_summary_list()
            .len(),
        1
    );
    // Another status, another filter, another operation: refused.
    let e = list(ServiceJobStatus::Succeeded, token.clone())
        .await
        .unwrap_err();
    assert!(message(e.into_service_error()).contains("nextToken"));
    let e = c
        .list_service_jobs()
        .job_queue(QUEUE)
        .filters(
            KeyValuesPair::builder()
                .name("JOB_NAME")
                .values("j*")
                .build(),
        )
        .set_next_token(token.clone())
        .send()
        .await
        .unwrap_err();
    assert!(message(e.into_service_error()).contains("nextToken"));
    let e = c
        .list_quota_shares()
        .job_queue(QUEUE)
        .set_next_token(token)
        .send()
        .await
        .unwrap_err();
    assert!(message(e.into_service_error()).contains("nextToken"));
    emu.shutdown().await.unwrap();
}

/// A POST with `headers`; the whole response as text.
async fn raw(addr: std::net::SocketAddr, path: &str, body: &str, headers: &str) -> String {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\n{headers}Content-Length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).await.unwrap();
    s.write_all(body.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    String::from_utf8_lossy(&out).into_owned()
}

fn signed_for(service: &str, key: &str) -> String {
    format!(
        "Authorization: AWS4-HMAC-SHA256 Credential={key}/20261201/us-east-1/{service}/aws4_request, SignedHeaders=host;x-amz-date, Signature={}\r\nX-Amz-Date: 20261201T120000Z\r\n",
        "ab".repeat(32)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_must_be_signed_for_batch_unless_the_check_is_off() {
    let emu = start(&[(M5, 1)], "").await;
    let list = "/v1/describejobqueues";
    let unsigned = raw(emu.addr(), list, "{}", "").await;
    assert!(unsigned.starts_with("HTTP/1.1 403"), "{unsigned}");
    assert!(
        unsigned.contains("MissingAuthenticationTokenException"),
        "{unsigned}"
    );
    let s3 = raw(emu.addr(), list, "{}", &signed_for("s3", "AKIDTEST")).await;
    assert!(
        s3.starts_with("HTTP/1.1 403") && s3.contains("InvalidSignatureException"),
        "{s3}"
    );
    let half = raw(
        emu.addr(),
        list,
        "{}",
        "Authorization: AWS4-HMAC-SHA256 Credential=x\r\n",
    )
    .await;
    assert!(half.contains("IncompleteSignatureException"), "{half}");
    let ok = raw(emu.addr(), list, "{}", &signed_for("batch", "AKIDTEST")).await;
    assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
    // STS: signed for sts only; temporary credentials are an assumed role's session.
    let sts = "Action=GetCallerIdentity&Version=2011-06-15";
    let wrong = raw(emu.addr(), "/", sts, &signed_for("batch", "AKIDTEST")).await;
    assert!(
        wrong.starts_with("HTTP/1.1 403") && wrong.contains("SignatureDoesNotMatch"),
        "{wrong}"
    );
    let temp = raw(emu.addr(), "/", sts, &signed_for("sts", "ASIATEMPORARY")).await;
    assert!(
        temp.contains(
            "<Arn>arn:aws:sts::123456789012:assumed-role/emulator-role/ASIATEMPORARY</Arn>"
        ),
        "{temp}"
    );
    emu.shutdown().await.unwrap();

    let scenario = Scenario::empty(QUEUE, vec![Limit::new(M5, 1)]);
    let mut config = EmulatorConfig::from_scenario(scenario).unwrap();
    config.clock = ClockMode::Manual;
    config.auth_check = false;
    let open = emulator::start(config).await.unwrap();
    let unsigned = raw(open.addr(), list, "{}", "").await;
    assert!(unsigned.starts_with("HTTP/1.1 200"), "{unsigned}");
    open.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_smaller_limits_and_the_empty_answers() {
    let emu = start(&[(M5, 1)], "").await;
    let c = client(&emu, 1);
    let share = create_share(&c, "qs", &[(M5, 1)], Strategy::Reserve, None, false).await;
    // onStatusReason: up to 512 characters.
    let retry = |n: usize| {
        ServiceJobRetryStrategy::builder()
            .attempts(2)
            .evaluate_on_exit(
                ServiceJobEvaluateOnExit::builder()
                    .action(aws_sdk_batch::types::ServiceJobRetryAction::Exit)
                    .on_status_reason("x".repeat(n))
                    .build(),
            )
            .build()
    };
    submit_req(&c, "at-limit")
        .retry_strategy(retry(512))
        .send()
        .await
        .unwrap();
    let e = submit_req(&c, "over")
        .retry_strategy(retry(513))
        .send()
        .await
        .unwrap_err();
    assert!(message(e.into_service_error()).contains("512"));
    // Quota-share names start with a letter or digit, as job names do.
    for bad in ["_under", "-dash"] {
        let e = c
            .create_quota_share()
            .quota_share_name(bad)
            .job_queue(QUEUE)
            .capacity_limits(
                aws_sdk_batch::types::QuotaShareCapacityLimit::builder()
                    .capacity_unit(M5)
                    .max_capacity(1)
                    .build(),
            )
            .resource_sharing_configuration(
                aws_sdk_batch::types::QuotaShareResourceSharingConfiguration::builder()
                    .strategy(Strategy::Reserve)
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
        assert!(
            message(e.into_service_error()).contains("quotaShareName"),
            "{bad}"
        );
    }
    // TerminateServiceJob and DeleteQuotaShare answer with an empty body.
    let id = submit(&c, "ended", "qs", M5, 1, 1).await;
    let t = raw(
        emu.addr(),
        "/v1/terminateservicejob",
        &format!(r#"{{"jobId":"{id}","reason":"done"}}"#),
        SIGNED,
    )
    .await;
    assert!(
        t.starts_with("HTTP/1.1 200") && t.ends_with("\r\n\r\n"),
        "{t}"
    );
    assert!(t.to_ascii_lowercase().contains("content-length: 0"), "{t}");
    c.update_quota_share()
        .quota_share_arn(&share)
        .state(aws_sdk_batch::types::QuotaShareState::Disabled)
        .send()
        .await
        .unwrap();
    let d = raw(
        emu.addr(),
        "/v1/deletequotashare",
        &format!(r#"{{"quotaShareArn":"{share}"}}"#),
        SIGNED,
    )
    .await;
    assert!(
        d.starts_with("HTTP/1.1 200") && d.ends_with("\r\n\r\n"),
        "{d}"
    );
    emu.shutdown().await.unwrap();
}
