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
    // Issue 29 §2.12: and the queues that exist, so the typo can be fixed.
    assert_clean_failure(
        &out,
        &[
            "no-such-queue",
            "does not exist",
            &format!("queues here: {}", crate::emulator_support::QUEUE),
        ],
    );
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

/// An HTTP server on loopback that answers every request with `status` and an empty body (a
/// wrong endpoint: a web server, a proxy, a load balancer). Returns its URL.
fn blank_answers(status: u16) -> String {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            std::thread::spawn(move || {
                let mut r = BufReader::new(stream);
                loop {
                    let mut len = 0usize;
                    let mut line = String::new();
                    if r.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    loop {
                        line.clear();
                        if r.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        let l = line.trim_end();
                        if l.is_empty() {
                            break;
                        }
                        if let Some((k, v)) = l.split_once(':')
                            && k.eq_ignore_ascii_case("content-length")
                        {
                            len = v.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0u8; len];
                    if r.read_exact(&mut body).is_err() {
                        return;
                    }
                    let head = format!("HTTP/1.1 {status} X\r\nContent-Length: 0\r\n\r\n");
                    if r.get_mut().write_all(head.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    url
}

/// Issue 29 §2.3: an endpoint that answers 404, 500 or 403 with an empty body is named with
/// the HTTP status and a hint, never `DescribeJobQueues: ` with nothing after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blank_error_answers_name_the_status_the_endpoint_and_a_hint() {
    for status in [404u16, 500, 403] {
        let url = blank_answers(status);
        let out = run(vec![
            "snapshot".into(),
            "--endpoint-url".into(),
            url.clone(),
        ])
        .await;
        let err = assert_clean_failure(
            &out,
            &[
                &format!("HTTP {status}"),
                "empty body",
                &url,
                "is this an AWS Batch endpoint?",
            ],
        );
        assert!(!err.trim_end().ends_with(':'), "{err}");
    }
}

/// Issue 29 §2.12: `--profile nosuch` says the profile is not there (and where it looked),
/// not "no credentials found".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_profile_is_named_not_reported_as_missing_credentials() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config");
    std::fs::write(&config, "[profile ops]\nregion = us-east-1\n").unwrap();
    let url = blank_answers(404);
    let config_arg = config.clone();
    let out = tokio::task::spawn_blocking(move || {
        quotatop()
            .env("AWS_CONFIG_FILE", &config_arg)
            .args(["snapshot", "--profile", "nosuch", "--endpoint-url", &url])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let err = assert_clean_failure(
        &out,
        &[
            "profile nosuch not found in",
            &config.display().to_string(),
            "profiles there: ops",
        ],
    );
    assert!(!err.contains("no credentials found"), "{err}");
}

/// Issue 29 §2.12: the console off a terminal (a pipe, cron, ssh without -t) says it needs one
/// and what to use instead, before starting anything (the demo creates no directory).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_off_a_terminal_says_what_to_use_instead() {
    for args in [
        vec!["demo"],
        vec!["tui", "--endpoint-url", "http://127.0.0.1:1"],
    ] {
        let out = tokio::task::spawn_blocking(move || {
            quotatop()
                .args(&args)
                .stdin(std::process::Stdio::null())
                .output()
                .unwrap()
        })
        .await
        .unwrap();
        let err = assert_clean_failure(
            &out,
            &[
                "the console needs a terminal",
                "quotatop snapshot",
                "quotatop record",
            ],
        );
        assert!(!err.contains("No such device"), "{err}");
        assert!(!err.contains("quotatop-demo"), "nothing started: {err}");
    }
}
