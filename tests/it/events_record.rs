//! `record --events-queue` against the emulator with its duplicate and reorder delivery faults:
//! record is killed (SIGKILL) while events flow and started again, and every event the stream
//! delivered is in the journal exactly once.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::emulator_support::*;
use crate::events_cli::{cmd, events, queue_url, run, sqs, text};
use aws_sdk_batch::types::QuotaShareResourceSharingStrategy as Strategy;
use quotatop_emulator::EmulatorHandle;

/// A running `record`, killed when dropped (a failed assertion leaves no process behind).
pub(crate) struct Recorder(pub(crate) Child);

impl Drop for Recorder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub(crate) fn record(emu: &EmulatorHandle, dir: &Path) -> Recorder {
    Recorder(
        Command::new(env!("CARGO_BIN_EXE_quotatop"))
            .args([
                "record",
                "--queue",
                QUEUE,
                "--interval",
                "1",
                "--events-queue",
                "ev",
                "--endpoint-url",
            ])
            .arg(emu.endpoint_url())
            .arg("--journal")
            .arg(dir.join("journal.sqlite3"))
            .arg("--log-dir")
            .arg(dir)
            .env("AWS_ACCESS_KEY_ID", "AKIDTEST")
            .env("AWS_SECRET_ACCESS_KEY", "secret")
            .env("AWS_REGION", "us-east-1")
            .env_remove("QUOTATOP_CONFIG")
            .env("XDG_CONFIG_HOME", dir.join("config"))
            .env("XDG_DATA_HOME", dir.join("data"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("record starts"),
    )
}

/// The event ids the journal kept, one per row.
fn journaled(dir: &Path) -> Vec<String> {
    let Ok(db) = rusqlite::Connection::open(dir.join("journal.sqlite3")) else {
        return Vec::new();
    };
    let Ok(mut q) = db.prepare("SELECT event_id FROM batch_events ORDER BY time, event_id") else {
        return Vec::new();
    };
    q.query_map([], |r| r.get::<_, String>(0))
        .map(|rows| rows.map(Result::unwrap).collect())
        .unwrap_or_default()
}

pub(crate) async fn attr(emu: &EmulatorHandle, url: &str, name: &str) -> u64 {
    let (_, out) = sqs(
        emu,
        "GetQueueAttributes",
        json!({"QueueUrl": url, "AttributeNames": [name]}),
    )
    .await;
    out["Attributes"][name].as_str().unwrap().parse().unwrap()
}

/// A second queue with its own rule on the same events: what the stream delivered, to compare.
async fn witness(emu: &EmulatorHandle) -> String {
    let (_, out) = sqs(emu, "CreateQueue", json!({"QueueName": "witness"})).await;
    let url = out["QueueUrl"].as_str().unwrap().to_string();
    let (_, attrs) = sqs(
        emu,
        "GetQueueAttributes",
        json!({"QueueUrl": url, "AttributeNames": ["QueueArn"]}),
    )
    .await;
    let arn = attrs["Attributes"]["QueueArn"]
        .as_str()
        .unwrap()
        .to_string();
    let pattern = json!({"source": ["aws.batch"]}).to_string();
    let (_, rule) = events(
        emu,
        "PutRule",
        json!({"Name": "witness", "EventPattern": pattern}),
    )
    .await;
    let policy = json!({"Statement": [{"Effect": "Allow", "Principal": {"Service": "events.amazonaws.com"},
        "Action": "sqs:SendMessage", "Resource": arn, "Condition": {"ArnEquals": {"aws:SourceArn": rule["RuleArn"]}}}]});
    sqs(
        emu,
        "SetQueueAttributes",
        json!({"QueueUrl": url, "Attributes": {"Policy": policy.to_string()}}),
    )
    .await;
    events(
        emu,
        "PutTargets",
        json!({"Rule": "witness", "Targets": [{"Id": "w", "Arn": arn}]}),
    )
    .await;
    url
}

/// Every message on `url` (received and deleted): (event ids, messages).
async fn drain(emu: &EmulatorHandle, url: &str) -> (BTreeSet<String>, usize) {
    let (mut ids, mut n) = (BTreeSet::new(), 0);
    loop {
        let (_, got) = sqs(
            emu,
            "ReceiveMessage",
            json!({"QueueUrl": url, "MaxNumberOfMessages": 10}),
        )
        .await;
        let Some(messages) = got["Messages"].as_array() else {
            return (ids, n);
        };
        for m in messages {
            let body: Value = serde_json::from_str(m["Body"].as_str().unwrap()).unwrap();
            ids.insert(body["id"].as_str().unwrap().to_string());
            n += 1;
            sqs(
                emu,
                "DeleteMessage",
                json!({"QueueUrl": url, "ReceiptHandle": m["ReceiptHandle"]}),
            )
            .await;
        }
    }
}

async fn flow(emu: &EmulatorHandle, c: &aws_sdk_batch::Client, from: usize, to: usize) {
    for i in from..to {
        submit(c, &format!("j{i}"), "QS1", M5, 1, 1).await;
        emu.advance(30_000).unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_event_is_journaled_once_across_a_kill_with_duplicates_and_reordering() {
    let emu = start(&[(M5, 2)], "deliver-duplicate=0.5,deliver-reorder=0.3").await;
    let c = client(&emu, 1);
    create_share(&c, "QS1", &[(M5, 2)], Strategy::Reserve, None, false).await;
    let dir = crate::temp_support::dir_path("events-record");
    let d = dir.as_path();
    let o = run(cmd(&emu, d, "setup", "ev", &["--yes"])).await;
    assert!(o.status.success(), "{}", text(&o));
    let url = queue_url(&emu, "ev").await.unwrap();
    let witness = witness(&emu).await;

    let mut rec = record(&emu, d);
    flow(&emu, &c, 0, 6).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while journaled(d).is_empty() {
        assert!(Instant::now() < deadline, "no event journaled");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    rec.0.kill().unwrap(); // SIGKILL, mid-flow
    rec.0.wait().unwrap();
    flow(&emu, &c, 6, 10).await;
    let rec = record(&emu, d);
    flow(&emu, &c, 10, 12).await;
    // Until the queue is empty: in-flight messages of the killed process come back after the
    // visibility timeout (10 s) and are taken again.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    while attr(&emu, &url, "ApproximateNumberOfMessages").await
        + attr(&emu, &url, "ApproximateNumberOfMessagesNotVisible").await
        > 0
    {
        assert!(Instant::now() < deadline, "the queue was not emptied");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    drop(rec);

    let (delivered, messages) = drain(&emu, &witness).await;
    let kept = journaled(d);
    let unique: BTreeSet<String> = kept.iter().cloned().collect();
    assert_eq!(unique.len(), kept.len(), "an event journaled twice");
    assert_eq!(unique, delivered, "journal and stream differ");
    let stats = emu.delivery_stats().unwrap();
    assert!(stats.duplicated > 0 && stats.reordered > 0, "{stats:?}");
    assert!(messages > delivered.len(), "the witness got no duplicate");
}
