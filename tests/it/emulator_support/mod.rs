//! Shared by the `tests/emulator_*.rs` files: start an emulator on 127.0.0.1:0 and build a real
//! `aws_sdk_batch` client for it.

use std::time::Duration;

use aws_sdk_batch::config::retry::RetryConfig;
use aws_sdk_batch::config::{BehaviorVersion, Region};
use quotatop_emulator::{
    self as emulator, ClockMode, EmulatorConfig, EmulatorHandle, FaultSpec, Scenario,
};
use quotatop_model::CapacityLimit;

pub const M5: &str = "ml.m5.large";
pub const G5: &str = "ml.g5.xlarge";
pub const QUEUE: &str = "qm-queue";
pub const START: i64 = 1_770_000_000_000;
/// Headers of a request signed for Batch, for tests that write HTTP by hand: the emulator
/// checks the SigV4 shape (not the secret), as AWS refuses unsigned requests.
pub const SIGNED: &str = "Authorization: AWS4-HMAC-SHA256 Credential=AKIDTEST/20260101/us-east-1/batch/aws4_request, SignedHeaders=host;x-amz-date, Signature=abababababababababababababababababababababababababababababababab\r\nX-Amz-Date: 20260101T000000Z\r\n";

/// An emulator with the given capacity, no shares and no workload, on a manual clock starting at
/// [`START`], with zero lifecycle delays (jobs move as soon as they can).
pub async fn start(capacity: &[(&str, u32)], faults: &str) -> EmulatorHandle {
    let scenario = Scenario::empty(
        QUEUE,
        capacity
            .iter()
            .map(|&(t, n)| CapacityLimit::new(t, n))
            .collect(),
    );
    let mut config = EmulatorConfig::from_scenario(scenario).unwrap();
    config.clock = ClockMode::Manual;
    config.start_ms = Some(START);
    config.faults = FaultSpec::parse(faults).unwrap();
    emulator::start(config).await.unwrap()
}

/// The SDK client, exactly as a user would configure it: static credentials, endpoint URL,
/// region. Retries are standard with a short backoff so retried tests stay fast.
pub fn client(handle: &EmulatorHandle, max_attempts: u32) -> aws_sdk_batch::Client {
    let creds = aws_credential_types::Credentials::from_keys("AKIDTEST", "secret", None);
    let conf = aws_sdk_batch::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(creds)
        .endpoint_url(handle.endpoint_url())
        .retry_config(
            RetryConfig::standard()
                .with_max_attempts(max_attempts)
                .with_initial_backoff(Duration::from_millis(5))
                .with_max_backoff(Duration::from_millis(50)),
        )
        .build();
    aws_sdk_batch::Client::from_conf(conf)
}

/// A SageMaker CreateTrainingJob payload for `count` × `instance_type`.
pub fn payload(instance_type: &str, count: u32) -> String {
    serde_json::json!({
        "TrainingJobName": "t",
        "ResourceConfig": {"InstanceType": instance_type, "InstanceCount": count, "VolumeSizeInGB": 30},
        "StoppingCondition": {"MaxRuntimeInSeconds": 36000}
    })
    .to_string()
}

pub async fn create_share(
    c: &aws_sdk_batch::Client,
    name: &str,
    limits: &[(&str, i32)],
    strategy: aws_sdk_batch::types::QuotaShareResourceSharingStrategy,
    borrow_limit: Option<i32>,
    in_share: bool,
) -> String {
    use aws_sdk_batch::types::{
        QuotaShareCapacityLimit, QuotaShareInSharePreemptionState,
        QuotaSharePreemptionConfiguration, QuotaShareResourceSharingConfiguration,
    };
    let mut req = c
        .create_quota_share()
        .quota_share_name(name)
        .job_queue(QUEUE);
    for &(t, n) in limits {
        req = req.capacity_limits(
            QuotaShareCapacityLimit::builder()
                .capacity_unit(t)
                .max_capacity(n)
                .build(),
        );
    }
    let out = req
        .resource_sharing_configuration(
            QuotaShareResourceSharingConfiguration::builder()
                .strategy(strategy)
                .set_borrow_limit(borrow_limit)
                .build(),
        )
        .preemption_configuration(
            QuotaSharePreemptionConfiguration::builder()
                .in_share_preemption(if in_share {
                    QuotaShareInSharePreemptionState::Enabled
                } else {
                    QuotaShareInSharePreemptionState::Disabled
                })
                .build(),
        )
        .send()
        .await
        .unwrap();
    out.quota_share_arn().unwrap().to_string()
}

pub async fn submit(
    c: &aws_sdk_batch::Client,
    name: &str,
    share: &str,
    instance_type: &str,
    count: u32,
    priority: i32,
) -> String {
    c.submit_service_job()
        .job_name(name)
        .job_queue(QUEUE)
        .service_job_type(aws_sdk_batch::types::ServiceJobType::SagemakerTraining)
        .service_request_payload(payload(instance_type, count))
        .quota_share_name(share)
        .scheduling_priority(priority)
        .send()
        .await
        .unwrap()
        .job_id()
        .unwrap()
        .to_string()
}

/// `quotatop emulator --scenario scenarios/demo.toml --port 0` with `extra` flags, as a child
/// process, and its endpoint URL (read from what it prints; the rest of its output is drained
/// so it never writes into a closed pipe).
pub fn spawn_emulator_binary(extra: &[&str]) -> (std::process::Child, String) {
    use std::io::{BufRead, BufReader};
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .args([
            "emulator",
            "--scenario",
            "scenarios/demo.toml",
            "--port",
            "0",
        ])
        .args(extra)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("the emulator starts");
    let mut out = BufReader::new(child.stdout.take().expect("piped stdout"));
    let mut url = None;
    while url.is_none() {
        let mut line = String::new();
        if out.read_line(&mut line).expect("emulator output") == 0 {
            break;
        }
        if let Some(rest) = line.trim().strip_prefix("export AWS_ENDPOINT_URL=") {
            url = Some(rest.to_string());
        }
    }
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    (child, url.expect("emulator endpoint"))
}

/// A JSON-protocol call (`POST /` with `X-Amz-Target: target`, signed in shape for `service`),
/// written by hand as an SDK of that protocol sends it: its HTTP status and JSON answer (`null`
/// when the body is empty).
pub async fn aws_json(
    handle: &EmulatorHandle,
    service: &str,
    content_type: &str,
    target: &str,
    body: &serde_json::Value,
) -> (u16, serde_json::Value) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let body = body.to_string();
    let signed = SIGNED.replace("/batch/", &format!("/{service}/"));
    let mut s = tokio::net::TcpStream::connect(handle.addr()).await.unwrap();
    let request = format!(
        "POST / HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Type: {content_type}\r\nX-Amz-Target: {target}\r\n{signed}Content-Length: {}\r\n\r\n{body}",
        handle.addr(),
        body.len()
    );
    s.write_all(request.as_bytes()).await.unwrap();
    let mut reply = Vec::new();
    s.read_to_end(&mut reply).await.unwrap();
    let reply = String::from_utf8(reply).unwrap();
    let (head, rest) = reply.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let json = if rest.trim().is_empty() {
        serde_json::Value::Null
    } else {
        serde_json::from_str(rest).unwrap_or_else(|e| panic!("{e}: {rest}"))
    };
    (status, json)
}
