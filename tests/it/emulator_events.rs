//! Batch's event stream from the emulator, on the wire as the SDKs speak it: EventBridge rules
//! (awsJson1_1) deliver its jobs' state changes, preemptions and API calls to SQS queues
//! (awsJson1_0) whose policy lets them; SQS hides a received message for its visibility
//! timeout and long-polls; CloudTrail's LookupEvents names who made each call; the delivery
//! faults duplicate, reorder, delay and drop. (`emulator_events_boto3.rs` runs boto3 over the
//! same operations.)

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::emulator_support::*;
use aws_sdk_batch::types::QuotaShareResourceSharingStrategy as Strategy;
use quotatop_emulator::{EmulatorHandle, FaultSpec};

const KINDS: [&str; 4] = [
    "Batch Service Job State Change",
    "Batch Service Job Preemption Started",
    "Batch Service Job Preemption Completed",
    "AWS API Call via CloudTrail",
];

async fn sqs(emu: &EmulatorHandle, op: &str, body: Value) -> (u16, Value) {
    let target = format!("AmazonSQS.{op}");
    aws_json(emu, "sqs", "application/x-amz-json-1.0", &target, &body).await
}

async fn events(emu: &EmulatorHandle, op: &str, body: Value) -> (u16, Value) {
    let target = format!("AWSEvents.{op}");
    aws_json(emu, "events", "application/x-amz-json-1.1", &target, &body).await
}

async fn ok(call: impl std::future::Future<Output = (u16, Value)>) -> Value {
    let (status, out) = call.await;
    assert_eq!(status, 200, "{out}");
    out
}

/// A queue `name` receiving the rule `name`'s events (`detail-type` one of `kinds`), with the
/// policy that lets the rule deliver when `policy` is set: its URL.
async fn subscribe(emu: &EmulatorHandle, name: &str, kinds: &[&str], policy: bool) -> String {
    let url = ok(sqs(emu, "CreateQueue", json!({"QueueName": name}))).await["QueueUrl"]
        .as_str()
        .unwrap()
        .to_string();
    let attrs = ok(sqs(
        emu,
        "GetQueueAttributes",
        json!({"QueueUrl": url, "AttributeNames": ["QueueArn"]}),
    ))
    .await;
    let arn = attrs["Attributes"]["QueueArn"]
        .as_str()
        .unwrap()
        .to_string();
    let pattern = json!({"source": ["aws.batch"], "detail-type": kinds}).to_string();
    let rule = ok(events(
        emu,
        "PutRule",
        json!({"Name": name, "EventPattern": pattern}),
    ))
    .await["RuleArn"]
        .as_str()
        .unwrap()
        .to_string();
    if policy {
        let policy = json!({"Statement": [{"Effect": "Allow",
            "Principal": {"Service": "events.amazonaws.com"}, "Action": "sqs:SendMessage",
            "Resource": arn, "Condition": {"ArnEquals": {"aws:SourceArn": rule}}}]});
        ok(sqs(
            emu,
            "SetQueueAttributes",
            json!({"QueueUrl": url, "Attributes": {"Policy": policy.to_string()}}),
        ))
        .await;
    }
    let put = ok(events(
        emu,
        "PutTargets",
        json!({"Rule": name, "Targets": [{"Id": "q", "Arn": arn}]}),
    ))
    .await;
    assert_eq!(put["FailedEntryCount"], 0, "{put}");
    url
}

/// Every message now visible on the queue (received and deleted): the events they carry.
async fn drain(emu: &EmulatorHandle, url: &str) -> Vec<Value> {
    let mut out = Vec::new();
    loop {
        let got = ok(sqs(
            emu,
            "ReceiveMessage",
            json!({"QueueUrl": url, "MaxNumberOfMessages": 10}),
        ))
        .await;
        let Some(messages) = got["Messages"].as_array() else {
            return out;
        };
        for m in messages {
            out.push(serde_json::from_str(m["Body"].as_str().unwrap()).unwrap());
            let handle = m["ReceiptHandle"].clone();
            ok(sqs(
                emu,
                "DeleteMessage",
                json!({"QueueUrl": url, "ReceiptHandle": handle}),
            ))
            .await;
        }
    }
}

fn of_kind<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["detail-type"] == kind).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn state_changes_preemptions_and_calls_reach_the_queues_of_matching_rules() {
    let emu = start(&[(M5, 2)], "").await;
    let c = client(&emu, 1);
    create_share(
        &c,
        "QS1",
        &[(M5, 1)],
        Strategy::LendAndBorrow,
        Some(100),
        false,
    )
    .await;
    create_share(&c, "QS2", &[(M5, 1)], Strategy::Lend, None, false).await;
    let all = subscribe(&emu, "all", &KINDS, true).await;
    let preemptions = subscribe(&emu, "preemptions", &KINDS[1..3], true).await;
    let refused = subscribe(&emu, "no-policy", &KINDS, false).await;
    // QS1 borrows QS2's idle instance, then QS2 takes it back.
    let first = submit(&c, "own", "QS1", M5, 1, 1).await;
    emu.advance(1).unwrap();
    let borrower = submit(&c, "borrower", "QS1", M5, 1, 1).await;
    emu.advance(60_000).unwrap();
    submit(&c, "lender", "QS2", M5, 1, 1).await;
    emu.advance(60_000).unwrap();

    let seen = drain(&emu, &all).await;
    let changes = of_kind(&seen, KINDS[0]);
    let of_job = |id: &str| -> Vec<&str> {
        changes
            .iter()
            .filter(|e| e["detail"]["jobId"] == id)
            .map(|e| e["detail"]["status"].as_str().unwrap())
            .collect()
    };
    // No event for the submission itself; then every change, RUNNING → RUNNABLE on the
    // preemption included.
    let borrowed = of_job(&borrower);
    assert_eq!(borrowed.first(), Some(&"PENDING"), "{borrowed:?}");
    assert!(
        borrowed.windows(2).any(|w| w == ["RUNNING", "RUNNABLE"]),
        "{borrowed:?}"
    );
    assert_eq!(of_job(&first).last(), Some(&"RUNNING"));
    let e = changes[0];
    assert_eq!(e["source"], "aws.batch");
    assert_eq!(e["account"], "123456789012");
    assert_eq!(e["region"], "us-east-1");
    assert_eq!(e["resources"], json!([e["detail"]["jobArn"]]));
    assert!(
        e["detail"].get("tags").is_none() && e["detail"].get("serviceRequestPayload").is_none()
    );
    assert!(e["time"].as_str().unwrap().ends_with('Z'));
    let started = of_kind(&seen, KINDS[1]);
    let completed = of_kind(&seen, KINDS[2]);
    assert_eq!((started.len(), completed.len()), (1, 1), "{seen:?}");
    let arn = format!("arn:aws:batch:us-east-1:123456789012:service-job/{borrower}");
    assert_eq!(started[0]["detail"]["preemptedJobArn"], arn.as_str());
    assert!(
        started[0]["detail"]["statusReason"]
            .as_str()
            .unwrap()
            .starts_with("PREEMPTION_IN_PROGRESS"),
        "{}",
        started[0]
    );
    let summary = &completed[0]["detail"]["preemptionSummary"];
    assert_eq!(summary["preemptedAttemptCount"], 1, "{}", completed[0]);
    assert_eq!(
        summary["recentPreemptedAttempts"][0]["statusReason"],
        "Cross-share preemption triggered to reclaim borrowed capacity"
    );
    // The three submissions as API calls (the shares were made before the rule), with the
    // caller's identity and request.
    let calls = of_kind(&seen, KINDS[3]);
    assert_eq!(calls.len(), 3, "{calls:?}");
    let submit_call = &calls[0]["detail"];
    assert_eq!(submit_call["eventName"], "SubmitServiceJob");
    assert_eq!(
        submit_call["userIdentity"]["arn"],
        "arn:aws:iam::123456789012:user/AKIDTEST"
    );
    assert_eq!(submit_call["requestParameters"]["jobName"], "own");
    // Every event has its own id.
    let mut ids: Vec<&str> = seen.iter().map(|e| e["id"].as_str().unwrap()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), seen.len());

    // The preemption rule got only preemptions; the queue without a policy nothing.
    let only = drain(&emu, &preemptions).await;
    assert_eq!(only.len(), 2);
    assert!(
        only.iter()
            .all(|e| KINDS[1..3].contains(&e["detail-type"].as_str().unwrap()))
    );
    assert!(drain(&emu, &refused).await.is_empty());
    assert!(emu.delivery_stats().unwrap().refused_by_policy >= seen.len() as u64);

    // CloudTrail's event history: newest first, by the caller.
    let (status, found) = aws_json(
        &emu,
        "cloudtrail",
        "application/x-amz-json-1.1",
        "com.amazonaws.cloudtrail.v20131101.CloudTrail_20131101.LookupEvents",
        &json!({"LookupAttributes": [{"AttributeKey": "EventName", "AttributeValue": "SubmitServiceJob"}]}),
    )
    .await;
    assert_eq!(status, 200, "{found}");
    let found = found["Events"].as_array().unwrap();
    assert_eq!(found.len(), 3);
    assert_eq!(found[0]["Username"], "AKIDTEST");
    let record: Value =
        serde_json::from_str(found[0]["CloudTrailEvent"].as_str().unwrap()).unwrap();
    assert_eq!(record["requestParameters"]["jobName"], "lender");
    emu.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_received_message_hides_for_its_visibility_timeout_and_a_long_poll_waits() {
    let emu = start(&[(M5, 1)], "").await;
    let c = client(&emu, 1);
    create_share(&c, "qs", &[(M5, 1)], Strategy::Reserve, None, false).await;
    let url = subscribe(&emu, "calls", &KINDS[3..], true).await;
    // SendMessage is not served (messages come from rules): told so, with what is served.
    let (status, err) = sqs(
        &emu,
        "SendMessage",
        json!({"QueueUrl": url, "MessageBody": "x"}),
    )
    .await;
    assert_eq!(status, 404, "{err}");
    assert!(
        err["message"].as_str().unwrap().contains("receivemessage"),
        "{err}"
    );
    // An empty long poll waits its whole second.
    let t = Instant::now();
    let got = ok(sqs(
        &emu,
        "ReceiveMessage",
        json!({"QueueUrl": url, "WaitTimeSeconds": 1}),
    ))
    .await;
    assert!(
        got.get("Messages").is_none() && t.elapsed() >= Duration::from_secs(1),
        "{got}"
    );
    // A long poll answers as soon as a message arrives.
    let t = Instant::now();
    let waiting = sqs(
        &emu,
        "ReceiveMessage",
        json!({"QueueUrl": url, "WaitTimeSeconds": 10, "VisibilityTimeout": 1}),
    );
    let (got, _) = tokio::join!(waiting, async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        submit(&c, "j", "qs", M5, 1, 1).await
    });
    assert_eq!(got.0, 200);
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    let m = got.1["Messages"][0].clone();
    let handle = m["ReceiptHandle"].clone();
    // Hidden while in flight, visible again after its visibility timeout (1 s).
    let attrs = || {
        sqs(
            &emu,
            "GetQueueAttributes",
            json!({"QueueUrl": url, "AttributeNames": ["All"]}),
        )
    };
    let a = ok(attrs()).await;
    assert_eq!(a["Attributes"]["ApproximateNumberOfMessages"], "0");
    assert_eq!(
        a["Attributes"]["ApproximateNumberOfMessagesNotVisible"],
        "1"
    );
    let again = ok(sqs(
        &emu,
        "ReceiveMessage",
        json!({"QueueUrl": url, "WaitTimeSeconds": 3,
        "MessageSystemAttributeNames": ["ApproximateReceiveCount"]}),
    ))
    .await;
    let m2 = &again["Messages"][0];
    assert_eq!(m2["MessageId"], m["MessageId"]);
    assert_eq!(m2["Attributes"]["ApproximateReceiveCount"], "2");
    // The first receipt is stale: deleting with it succeeds and deletes nothing.
    ok(sqs(
        &emu,
        "DeleteMessage",
        json!({"QueueUrl": url, "ReceiptHandle": handle}),
    ))
    .await;
    let (status, err) = sqs(
        &emu,
        "ChangeMessageVisibility",
        json!({"QueueUrl": url,
        "ReceiptHandle": handle, "VisibilityTimeout": 0}),
    )
    .await;
    assert_eq!(
        (status, err["__type"].as_str()),
        (400, Some("com.amazonaws.sqs#MessageNotInflight"))
    );
    ok(sqs(
        &emu,
        "ChangeMessageVisibility",
        json!({"QueueUrl": url,
        "ReceiptHandle": m2["ReceiptHandle"], "VisibilityTimeout": 0}),
    ))
    .await;
    let a = ok(attrs()).await;
    assert_eq!(a["Attributes"]["ApproximateNumberOfMessages"], "1");
    // Deleted with its latest receipt: gone.
    let third = ok(sqs(&emu, "ReceiveMessage", json!({"QueueUrl": url}))).await;
    let batch = ok(sqs(
        &emu,
        "DeleteMessageBatch",
        json!({"QueueUrl": url, "Entries": [
        {"Id": "a", "ReceiptHandle": third["Messages"][0]["ReceiptHandle"]},
        {"Id": "b", "ReceiptHandle": "not-a-handle"}]}),
    ))
    .await;
    assert_eq!(batch["Successful"], json!([{"Id": "a"}]));
    assert_eq!(batch["Failed"][0]["Code"], "ReceiptHandleIsInvalid");
    let (status, err) = sqs(&emu, "GetQueueUrl", json!({"QueueName": "nope"})).await;
    assert_eq!(
        (status, err["__type"].as_str()),
        (400, Some("com.amazonaws.sqs#QueueDoesNotExist"))
    );
    let a = ok(attrs()).await;
    assert_eq!(a["Attributes"]["ApproximateNumberOfMessages"], "0");
    assert_eq!(
        a["Attributes"]["ApproximateNumberOfMessagesNotVisible"],
        "0"
    );
    emu.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delivery_faults_duplicate_reorder_delay_and_drop() {
    let emu = start(&[(M5, 4)], "").await;
    let c = client(&emu, 1);
    create_share(&c, "qs", &[(M5, 4)], Strategy::Reserve, None, false).await;
    let url = subscribe(&emu, "calls", &KINDS[3..], true).await;
    let calls = |n: usize| {
        let c = c.clone();
        async move {
            for k in 0..n {
                submit(&c, &format!("j{k}"), "qs", M5, 1, 1).await;
            }
        }
    };
    let names = |events: &[Value]| -> Vec<String> {
        events
            .iter()
            .map(|e| {
                e["detail"]["requestParameters"]["jobName"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect()
    };
    // Every delivery twice: each event twice, with one id.
    emu.set_faults(FaultSpec::parse("deliver-duplicate=1").unwrap());
    calls(2).await;
    let got = drain(&emu, &url).await;
    assert_eq!(names(&got), ["j0", "j0", "j1", "j1"]);
    assert_eq!(got[0]["id"], got[1]["id"]);
    // Dropped: nothing arrives, and the emulator counts it.
    emu.set_faults(FaultSpec::parse("deliver-drop=1").unwrap());
    calls(2).await;
    assert!(drain(&emu, &url).await.is_empty());
    assert_eq!(emu.delivery_stats().unwrap().dropped, 2);
    // Reordered: the held-back one arrives after the next.
    emu.set_faults(FaultSpec::parse("deliver-reorder=0.5,seed=3").unwrap());
    calls(8).await;
    let early = names(&drain(&emu, &url).await);
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let late = names(&drain(&emu, &url).await);
    let reordered = emu.delivery_stats().unwrap().reordered;
    assert_eq!(late.len() as u64, reordered, "{early:?} {late:?}");
    assert!(!late.is_empty() && !early.is_empty(), "{early:?} {late:?}");
    assert_eq!(early.len() + late.len(), 8);
    // Delayed: invisible until the delay passed.
    emu.set_faults(FaultSpec::parse("deliver-delay=500ms").unwrap());
    calls(1).await;
    assert!(drain(&emu, &url).await.is_empty());
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(drain(&emu, &url).await.len(), 1);
    // Per-operation delivery faults are refused, saying why.
    let e = FaultSpec::parse("submitservicejob:deliver-drop=1").unwrap_err();
    assert!(e.to_string().contains("without operations"), "{e}");
    emu.shutdown().await.unwrap();
}
