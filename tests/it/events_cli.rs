//! `quotatop events setup / status / teardown` end to end against the emulator's EventBridge
//! and SQS: a dry run changes nothing, setup makes the queue, the rule, its target and the
//! policy once (a second run has nothing to do) with one audited change, Batch's events then
//! arrive in the queue, status shows them, and teardown removes only what setup made.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

use crate::emulator_support::*;
use aws_sdk_batch::types::QuotaShareResourceSharingStrategy as Strategy;
use quotatop_emulator::EmulatorHandle;
use quotatop_store::audit::{AuditRecord, Outcome, RecordKind};

/// `quotatop events SUB --queue NAME --endpoint-url URL ARGS`, with no user config, the audit
/// log in `dir`, stdin not a terminal.
pub(crate) fn cmd(
    emu: &EmulatorHandle,
    dir: &Path,
    sub: &str,
    queue: &str,
    args: &[&str],
) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_quotatop"));
    c.args(["events", sub, "--queue", queue, "--endpoint-url"])
        .arg(emu.endpoint_url())
        .args(args)
        .env("AWS_ACCESS_KEY_ID", "AKIDTEST")
        .env("AWS_SECRET_ACCESS_KEY", "secret")
        .env("AWS_REGION", "us-east-1")
        .env_remove("QUOTATOP_READ_ONLY")
        .env_remove("QUOTATOP_CONFIG")
        .env("QUOTATOP_AUDIT_LOG", dir.join("audit.jsonl"))
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_DATA_HOME", dir.join("data"))
        .stdin(Stdio::null());
    c
}

pub(crate) async fn run(c: Command) -> Output {
    let mut c = c;
    tokio::task::spawn_blocking(move || c.output().expect("quotatop runs"))
        .await
        .expect("join")
}

pub(crate) fn text(o: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn records(dir: &Path) -> Vec<AuditRecord> {
    std::fs::read_to_string(dir.join("audit.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

pub(crate) async fn sqs(emu: &EmulatorHandle, op: &str, body: Value) -> (u16, Value) {
    let target = format!("AmazonSQS.{op}");
    aws_json(emu, "sqs", "application/x-amz-json-1.0", &target, &body).await
}

pub(crate) async fn events(emu: &EmulatorHandle, op: &str, body: Value) -> (u16, Value) {
    let target = format!("AWSEvents.{op}");
    aws_json(emu, "events", "application/x-amz-json-1.1", &target, &body).await
}

/// The queue's URL, `None` when there is no such queue.
pub(crate) async fn queue_url(emu: &EmulatorHandle, name: &str) -> Option<String> {
    let (status, out) = sqs(emu, "GetQueueUrl", json!({"QueueName": name})).await;
    (status == 200).then(|| out["QueueUrl"].as_str().unwrap().to_string())
}

async fn waiting(emu: &EmulatorHandle, url: &str) -> u64 {
    let (_, out) = sqs(
        emu,
        "GetQueueAttributes",
        json!({"QueueUrl": url, "AttributeNames": ["ApproximateNumberOfMessages"]}),
    )
    .await;
    out["Attributes"]["ApproximateNumberOfMessages"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setup_makes_the_stream_once_events_arrive_and_teardown_removes_it() {
    let emu = start(&[(M5, 2)], "").await;
    let c = client(&emu, 1);
    create_share(&c, "QS1", &[(M5, 2)], Strategy::Reserve, None, false).await;
    let dir = crate::temp_support::dir_path("events-setup");
    let d = dir.as_path();

    let o = run(cmd(&emu, d, "status", "ev", &[])).await;
    assert!(!o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("ev: missing")
            && text(&o).contains("run `quotatop events setup --queue ev`"),
        "{}",
        text(&o)
    );

    // The plan, and nothing made.
    let o = run(cmd(&emu, d, "setup", "ev", &["--dry-run"])).await;
    assert!(o.status.success(), "{}", text(&o));
    for call in [
        "CreateQueue",
        "PutRule",
        "SetQueueAttributes",
        "PutTargets",
        "dry run: nothing changed",
    ] {
        assert!(text(&o).contains(call), "{call}: {}", text(&o));
    }
    assert_eq!(queue_url(&emu, "ev").await, None);
    // Off a terminal without --yes: refused, nothing made.
    let o = run(cmd(&emu, d, "setup", "ev", &[])).await;
    assert!(
        !o.status.success() && text(&o).contains("pass --yes"),
        "{}",
        text(&o)
    );
    assert_eq!(queue_url(&emu, "ev").await, None);
    assert!(records(d).is_empty());

    let o = run(cmd(&emu, d, "setup", "ev", &["--yes"])).await;
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("done: 4 call(s)"), "{}", text(&o));
    let r = records(d);
    assert_eq!(r.len(), 2, "{r:?}");
    assert_eq!(
        (r[0].kind, r[1].kind),
        (RecordKind::Intent, RecordKind::Outcome)
    );
    assert_eq!(r[0].action.as_ref().unwrap().call, "events setup");
    assert!(r[0].preview.contains("PutRule"), "{}", r[0].preview);
    assert_eq!(
        r[0].operator.aws_principal.as_deref(),
        Some("arn:aws:iam::123456789012:user/AKIDTEST")
    );
    assert!(
        matches!(r[1].outcome, Some(Outcome::Succeeded { .. })),
        "{:?}",
        r[1].outcome
    );
    // Idempotent: nothing to do, nothing recorded.
    let o = run(cmd(&emu, d, "setup", "ev", &["--yes"])).await;
    assert!(
        o.status.success() && text(&o).contains("nothing to do"),
        "{}",
        text(&o)
    );
    assert_eq!(records(d).len(), 2);

    // A policy replaced since by someone else's: status says so, setup puts back its
    // statement alone and keeps theirs.
    let url = queue_url(&emu, "ev").await.unwrap();
    let theirs = json!({"Version": "2012-10-17", "Statement": [{"Sid": "theirs", "Effect": "Allow",
        "Principal": {"AWS": "arn:aws:iam::123456789012:root"}, "Action": "sqs:ReceiveMessage",
        "Resource": "*"}]});
    let (status, _) = sqs(
        &emu,
        "SetQueueAttributes",
        json!({"QueueUrl": url, "Attributes": {"Policy": theirs.to_string()}}),
    )
    .await;
    assert_eq!(status, 200);
    let o = run(cmd(&emu, d, "status", "ev", &[])).await;
    assert!(!o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("no statement letting the rule send"),
        "{}",
        text(&o)
    );
    let o = run(cmd(&emu, d, "setup", "ev", &["--yes"])).await;
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("SetQueueAttributes") && text(&o).contains("done: 1 call(s)"),
        "{}",
        text(&o)
    );
    assert_eq!(records(d).len(), 4);
    let (_, attrs) = sqs(
        &emu,
        "GetQueueAttributes",
        json!({"QueueUrl": url, "AttributeNames": ["Policy"]}),
    )
    .await;
    let policy = attrs["Attributes"]["Policy"].as_str().unwrap();
    assert!(
        policy.contains("\"theirs\"") && policy.contains("quotatop-events"),
        "{policy}"
    );

    // Batch's events now reach the queue (the rule, its target and the policy all work).
    submit(&c, "j1", "QS1", M5, 1, 1).await;
    emu.advance(60_000).unwrap();
    assert!(waiting(&emu, &url).await > 0);
    let o = run(cmd(&emu, d, "status", "ev", &[])).await;
    assert!(o.status.success(), "{}", text(&o));
    for want in [
        "quotatop-ev: ENABLED, the pattern setup writes",
        "quotatop-events -> arn:aws:sqs:us-east-1:123456789012:ev",
        "waiting",
        "events.amazonaws.com may send from the rule",
        "ago (",
        "LookupEvents",
    ] {
        assert!(text(&o).contains(want), "{want}: {}", text(&o));
    }
    // Status only looked: the events are still there for the recorder.
    assert!(waiting(&emu, &url).await > 0);

    let o = run(cmd(&emu, d, "teardown", "ev", &["--yes"])).await;
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("DeleteRule") && text(&o).contains("DeleteQueue"),
        "{}",
        text(&o)
    );
    assert_eq!(queue_url(&emu, "ev").await, None);
    let (status, _) = events(&emu, "DescribeRule", json!({"Name": "quotatop-ev"})).await;
    assert_eq!(status, 400);
    assert_eq!(records(d).len(), 6);
    let o = run(cmd(&emu, d, "teardown", "ev", &["--yes"])).await;
    assert!(
        o.status.success() && text(&o).contains("nothing to remove"),
        "{}",
        text(&o)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn teardown_and_setup_leave_what_setup_did_not_make() {
    let emu = start(&[(M5, 2)], "").await;
    let dir = crate::temp_support::dir_path("events-theirs");
    let d = dir.as_path();
    let (status, _) = sqs(&emu, "CreateQueue", json!({"QueueName": "theirs"})).await;
    assert_eq!(status, 200);
    let pattern = json!({"source": ["aws.batch"]}).to_string();
    let (status, _) = events(
        &emu,
        "PutRule",
        json!({"Name": "quotatop-theirs", "EventPattern": pattern}),
    )
    .await;
    assert_eq!(status, 200);

    let o = run(cmd(&emu, d, "setup", "theirs", &["--yes"])).await;
    assert!(
        !o.status.success() && text(&o).contains("was not made by events setup"),
        "{}",
        text(&o)
    );
    let o = run(cmd(&emu, d, "teardown", "theirs", &["--yes"])).await;
    assert!(!o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("left: rule quotatop-theirs") && text(&o).contains("left: queue theirs"),
        "{}",
        text(&o)
    );
    assert!(queue_url(&emu, "theirs").await.is_some());
    let (status, _) = events(&emu, "DescribeRule", json!({"Name": "quotatop-theirs"})).await;
    assert_eq!(status, 200);
    assert!(records(d).is_empty());

    let o = run(cmd(&emu, d, "setup", "new", &["--yes", "--read-only"])).await;
    assert!(
        !o.status.success() && text(&o).contains("read-only"),
        "{}",
        text(&o)
    );
    let o = run(cmd(&emu, d, "setup", "bad.name", &["--yes"])).await;
    assert!(
        !o.status.success() && text(&o).contains("not an SQS queue name"),
        "{}",
        text(&o)
    );
    assert_eq!(queue_url(&emu, "new").await, None);
}
