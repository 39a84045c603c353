//! The batch client end to end against the emulator's credential and throttling faults
//! (`deny`, `expired-token`, `throttle=1`; scenarios/README.md, "Fault spec"): `quotatop
//! snapshot` names each state on stderr and exits non-zero, and the poller's health (what the
//! console's status line shows) names the same state, with the AWS error code in its last error.
//! A snapshot whose refresh is incomplete still prints what it has, then exits non-zero.

use std::process::Output;
use std::time::Duration;

use crate::data_support::{batch_client, quotatop};
use crate::emulator_support::{M5, QUEUE, create_share, submit};
use aws_sdk_batch::types::QuotaShareResourceSharingStrategy as Strategy;
use quotatop_aws::poll::{PollConfig, Poller};
use quotatop_emulator::{EmulatorHandle, FaultSpec};
use quotatop_model::HealthState;

async fn snapshot(h: &EmulatorHandle, extra: &[&str]) -> Output {
    let mut args: Vec<String> = vec![
        "snapshot".into(),
        "--queue".into(),
        QUEUE.into(),
        "--endpoint-url".into(),
        h.endpoint_url(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    tokio::task::spawn_blocking(move || quotatop().args(args).output().unwrap())
        .await
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).to_string()
}

/// A queue with one share and one running job, faults off.
async fn world() -> EmulatorHandle {
    let h = crate::emulator_support::start(&[(M5, 2)], "").await;
    let sdk = crate::emulator_support::client(&h, 1);
    create_share(&sdk, "team", &[(M5, 2)], Strategy::Reserve, None, false).await;
    submit(&sdk, "train-1", "team", M5, 1, 5).await;
    h.advance(1_000).unwrap();
    h
}

/// (fault spec, words `snapshot` must print on stderr, the poller's state, the AWS code).
const CASES: &[(&str, &[&str], HealthState, &str)] = &[
    (
        "deny=1",
        &["access denied", "AccessDeniedException"],
        HealthState::Denied,
        "AccessDeniedException",
    ),
    (
        "expired-token=1",
        &[
            "credentials expired — refresh them",
            "ExpiredTokenException",
        ],
        HealthState::Expired,
        "ExpiredTokenException",
    ),
    (
        "throttle=1",
        &["throttled by AWS Batch", "TooManyRequestsException"],
        HealthState::Throttled,
        "TooManyRequestsException",
    ),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_names_denied_expired_and_exhausted_throttling() {
    let h = world().await;
    for &(spec, words, _, _) in CASES {
        h.set_faults(FaultSpec::parse(spec).unwrap());
        let out = snapshot(&h, &[]).await;
        let err = stderr(&out);
        assert!(!out.status.success(), "{spec}: must fail: {err}");
        assert!(!err.contains("panicked"), "{spec}: {err}");
        for w in words {
            assert!(err.contains(w), "{spec}: stderr lacks {w:?}: {err}");
        }
        // One state only: a refused call is not called throttling, and the reverse.
        let others: &[&str] = match words[0] {
            "access denied" => &["throttled", "credentials expired"],
            "credentials expired — refresh them" => &["throttled", "access denied"],
            _ => &["access denied", "credentials expired"],
        };
        for other in others {
            assert!(!err.contains(other), "{spec}: {err}");
        }
    }
    h.set_faults(FaultSpec::none());
    let out = snapshot(&h, &[]).await;
    assert!(out.status.success(), "recovered: {}", stderr(&out));
    h.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn poller_health_names_each_state_and_recovers() {
    let h = world().await;
    let client = batch_client(&h).await;
    let mut poller = Poller::new(PollConfig {
        queues: vec![QUEUE.to_string()],
        refresh_deadline: Duration::from_secs(30),
        ..PollConfig::default()
    });
    let first = poller.refresh(&client).await;
    assert_eq!(first.health.state, HealthState::Healthy);
    assert_eq!(first.queues[0].jobs.len(), 1);
    for &(spec, _, state, code) in CASES {
        h.set_faults(FaultSpec::parse(spec).unwrap());
        let s = poller.refresh(&client).await;
        assert_eq!(s.health.state, state, "{spec}: {:?}", s.health);
        let last = s.health.last_error.clone().unwrap_or_default();
        assert!(last.contains(code), "{spec}: last error {last:?}");
        // The last data stays, marked stale.
        assert_eq!(s.queues[0].jobs.len(), 1, "{spec}");
        assert!(s.queues[0].stale_reason.is_some(), "{spec}");
        h.set_faults(FaultSpec::none());
        let s = poller.refresh(&client).await;
        assert_eq!(s.health.state, HealthState::Healthy, "{spec}: recovers");
        assert_eq!(s.queues[0].stale_reason, None, "{spec}");
    }
    h.shutdown().await.unwrap();
}

/// docs/operator.md, "snapshot": an incomplete refresh still prints, then exits non-zero.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn incomplete_snapshot_prints_and_exits_non_zero() {
    let h = world().await;
    h.set_faults(FaultSpec::parse("describeservicejob:deny=1").unwrap());
    let out = snapshot(&h, &["--format", "json"]).await;
    let err = stderr(&out);
    assert!(!out.status.success(), "must fail: {err}");
    assert!(err.contains("snapshot incomplete"), "{err}");
    assert!(err.contains("AccessDeniedException"), "{err}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is the JSON document ({e}): {err}"));
    let q = &doc["queues"][0];
    assert_eq!(q["name"], QUEUE, "{doc}");
    assert!(q["stale_reason"].is_string(), "{doc}");
    h.shutdown().await.unwrap();
}

/// A port nothing listens on (bound, then released).
fn dead_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// Issue 16: with no credentials anywhere, `snapshot` says none were found (and how to give
/// some), not that they were refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_credentials_say_none_were_found() {
    let h = world().await;
    let url = h.endpoint_url();
    let out = tokio::task::spawn_blocking(move || {
        quotatop()
            .env_remove("AWS_ACCESS_KEY_ID")
            .env_remove("AWS_SECRET_ACCESS_KEY")
            .env("HOME", "/nonexistent/quotatop-test-home")
            .args(["snapshot", "--queue", QUEUE, "--endpoint-url", &url])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("no credentials found"), "{err}");
    assert!(err.contains("any keys work for the emulator"), "{err}");
    assert!(!err.contains("access denied"), "{err}");
    assert!(!err.contains("refused"), "{err}");
    h.shutdown().await.unwrap();
}

/// Issue 16: an endpoint without a scheme is refused up front in words, never with the SDK's
/// request dump; `RUST_BACKTRACE=1` adds no backtrace to a user error.
#[test]
fn endpoint_without_scheme_is_refused_in_words() {
    let port = dead_port();
    let out = quotatop()
        .env("RUST_BACKTRACE", "1")
        .args(["snapshot", "--queue", QUEUE, "--endpoint-url"])
        .arg(format!("127.0.0.1:{port}"))
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("endpoint must start with http:// or https://"),
        "{err}"
    );
    assert!(!err.contains("SdkBody"), "{err}");
    assert!(!err.contains("backtrace"), "{err}");
    assert_eq!(err.lines().count(), 1, "one line, no frames: {err}");
}

/// Issue 16: a wrong endpoint (nothing listening) is named in the poller's health, and the
/// console's body says "no data yet" with the reason instead of "no queues".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_endpoint_says_no_data_yet_with_the_reason() {
    use crate::tui_support::{options, run_with, screen_text};
    let client = quotatop_aws::batch::BatchClient::connect(quotatop_aws::batch::ConnectOptions {
        profile: None,
        region: Some("us-east-1".into()),
        endpoint_url: Some(format!("http://127.0.0.1:{}", dead_port())),
        credentials: Some(quotatop_aws::batch::StaticCredentials {
            access_key_id: "AKIDTEST".into(),
            secret_access_key: "secret".into(),
        }),
    })
    .await
    .unwrap();
    let mut poller = Poller::new(PollConfig {
        queues: vec![QUEUE.to_string()],
        refresh_deadline: Duration::from_secs(20),
        ..PollConfig::default()
    });
    let s = poller.refresh(&client).await;
    assert_eq!(s.health.state, HealthState::Unreachable, "{:?}", s.health);
    let (t, _) = run_with(100, 24, options(), vec![s], vec![]).await;
    let text = screen_text(&t);
    assert!(text.contains("no data yet:"), "{text}");
    assert!(text.contains("cannot reach"), "{text}");
    assert!(!text.contains("no queues"), "{text}");
}

/// Issue 16: a region the SDK cannot use is refused in words, not with its request internals.
#[test]
fn a_bad_region_is_refused_in_words() {
    let port = dead_port();
    let out = quotatop()
        .args(["snapshot", "--queue", QUEUE, "--region", "us east 1"])
        .arg("--endpoint-url")
        .arg(format!("http://127.0.0.1:{port}"))
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("is not a region name"), "{err}");
    assert!(!err.contains("ConstructionFailure"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// Issue 16: with `RUST_BACKTRACE=1` (and `RUST_LIB_BACKTRACE=1`), a user error is one line:
/// no backtrace, no panic.
#[test]
fn user_errors_never_print_a_backtrace() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    let missing = missing.to_str().unwrap();
    for args in [
        vec!["emulator", "--scenario", missing],
        vec!["audit", "verify", "--log", missing],
        vec!["report", "--queue", QUEUE, "--journal", missing],
        vec!["replay", "--trace", missing],
        vec![
            "snapshot",
            "--queue",
            QUEUE,
            "--endpoint-url",
            "localhost:1",
        ],
    ] {
        let out = quotatop()
            .env("RUST_BACKTRACE", "1")
            .env("RUST_LIB_BACKTRACE", "1")
            .env("HOME", dir.path())
            .args(&args)
            .output()
            .unwrap();
        let err = stderr(&out);
        assert!(!out.status.success(), "{args:?}: {err}");
        assert!(err.starts_with("Error: "), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            !err.contains("backtrace") && !err.contains("panicked"),
            "{args:?}: {err}"
        );
    }
}
