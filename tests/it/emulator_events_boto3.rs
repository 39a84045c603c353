//! An unmodified boto3 client against the emulator's EventBridge, SQS and CloudTrail:
//! `scripts/check-events-boto3` sets up a queue, a rule and the queue's policy, submits and
//! re-prioritises a job with boto3's Batch client, long-polls and checks the events, looks the
//! change up in CloudTrail, tears it all down, and validates every answer against botocore's
//! models. boto3 is required (scripts/test installs python3-boto3): without it this fails.

use std::process::Command;
use std::time::Duration;

use quotatop_emulator::{self as emulator, ClockMode, EmulatorConfig, Scenario};
use quotatop_model::CapacityLimit;

use crate::emulator_support::*;
use aws_sdk_batch::types::QuotaShareResourceSharingStrategy as Strategy;

/// Fails unless boto3 imports and its SQS model is the JSON protocol's (botocore 1.34.90 and
/// newer; 1.34.50, like Debian 12's 1.29, still speaks the Query protocol).
const SQS_SPEAKS_JSON: &str = "import boto3, botocore.session; v = botocore.session.get_session().get_service_model('sqs').metadata.get('protocol'); assert v == 'json', 'botocore ' + botocore.__version__ + ' speaks SQS ' + str(v)";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn boto3_sets_up_the_event_stream_and_reads_it() {
    let probe = Command::new("python3")
        .args(["-c", SQS_SPEAKS_JSON])
        .output();
    let ok = probe.as_ref().is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "this test needs python3 with boto3 1.34.90 or newer, whose SQS client speaks the JSON protocol (scripts/test installs python3-boto3 and checks it; or pip install --user 'boto3>=1.34.90'): {probe:?}"
    );
    // Real time, so the script's long polls meet the jobs as they move.
    let mut config =
        EmulatorConfig::from_scenario(Scenario::empty(QUEUE, vec![CapacityLimit::new(M5, 2)]))
            .unwrap();
    config.clock = ClockMode::Scaled(1.0);
    config.tick = Duration::from_millis(20);
    let emu = emulator::start(config).await.unwrap();
    let c = client(&emu, 1);
    create_share(&c, "qs", &[(M5, 2)], Strategy::Reserve, None, false).await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/check-events-boto3");
    let endpoint = emu.endpoint_url();
    let out = tokio::task::spawn_blocking(move || {
        Command::new("python3")
            .arg(script)
            .env("AWS_ENDPOINT_URL", endpoint)
            .env("AWS_ACCESS_KEY_ID", "AKIDBOTO3")
            .env("AWS_SECRET_ACCESS_KEY", "secret")
            .env("AWS_DEFAULT_REGION", "us-east-1")
            .env("AWS_REGION", "us-east-1")
            .env_remove("AWS_PROFILE")
            .env("AWS_CONFIG_FILE", "/dev/null")
            .env("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
            .env("QUOTATOP_QUEUE", QUEUE)
            .env("QUOTATOP_SHARE", "qs")
            .env("QUOTATOP_INSTANCE", M5)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{text}");
    assert!(out.status.success(), "{text}");
    assert!(text.contains("validated"), "{text}");
    emu.shutdown().await.unwrap();
}
