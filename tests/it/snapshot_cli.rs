//! `quotatop snapshot` with bad input: a clear error on stderr, a non-zero exit, no panic.

use std::process::Output;

use crate::data_support::quotatop;
use crate::emulator_support::M5;

fn assert_clean_failure(out: &Output, expect: &[&str]) -> String {
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!out.status.success(), "must fail: {err}");
    assert!(!err.contains("panicked"), "{err}");
    for e in expect {
        assert!(err.contains(e), "stderr lacks {e:?}: {err}");
    }
    err
}

async fn run(args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || quotatop().args(args).output().unwrap())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_queue_is_named_in_the_error() {
    let h = crate::emulator_support::start(&[(M5, 2)], "").await;
    let out = run(vec![
        "snapshot".into(),
        "--queue".into(),
        "no-such-queue".into(),
        "--endpoint-url".into(),
        h.endpoint_url(),
    ])
    .await;
    assert_clean_failure(&out, &["no-such-queue", "does not exist"]);
    assert!(
        out.stdout.is_empty(),
        "nothing printed for a failed discovery"
    );
    h.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_endpoint_says_so() {
    // A port that was just free: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = run(vec![
        "snapshot".into(),
        "--queue".into(),
        "q".into(),
        "--endpoint-url".into(),
        format!("http://127.0.0.1:{port}"),
    ])
    .await;
    let err = assert_clean_failure(&out, &["cannot reach the AWS Batch endpoint"]);
    assert!(err.lines().count() <= 3, "short message: {err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_arguments_are_refused_by_the_parser() {
    let out = run(vec!["snapshot".into(), "--format".into(), "xml".into()]).await;
    assert_clean_failure(&out, &["xml"]);
    assert_eq!(out.status.code(), Some(2));
    let out = run(vec!["snapshot".into(), "--concurrency".into(), "0".into()]).await;
    assert_clean_failure(&out, &["concurrency"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_credentials_are_reported_as_none_found() {
    let h = crate::emulator_support::start(&[(M5, 2)], "").await;
    let url = h.endpoint_url();
    let out = tokio::task::spawn_blocking(move || {
        quotatop()
            .env_remove("AWS_ACCESS_KEY_ID")
            .env_remove("AWS_SECRET_ACCESS_KEY")
            .args(["snapshot", "--endpoint-url", &url])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    // Issue 16: none were found, which is not "refused".
    let err = assert_clean_failure(
        &out,
        &["no credentials found", "any keys work for the emulator"],
    );
    assert!(!err.contains("access denied"), "{err}");
    h.shutdown().await.unwrap();
}
