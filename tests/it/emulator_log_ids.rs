//! CloudWatch Logs `eventId`s as a de-duplicating follower needs them: the same event read
//! twice, with streams and lines added to the group in between, has the same id.

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::emulator_support::*;
use aws_sdk_batch::types::QuotaShareResourceSharingStrategy as Strategy;

const MINUTE: i64 = 60_000;

/// Every event of the group: (stream, timestamp, message) → eventId.
async fn read_ids(
    emu: &quotatop_emulator::EmulatorHandle,
) -> HashMap<(String, i64, String), String> {
    let (status, out) = aws_json(
        emu,
        "logs",
        "application/x-amz-json-1.1",
        "Logs_20140328.FilterLogEvents",
        &json!({"logGroupName": "/aws/sagemaker/TrainingJobs"}),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    let events = out["events"].as_array().unwrap();
    let ids: HashMap<_, _> = events
        .iter()
        .map(|e: &Value| {
            (
                (
                    e["logStreamName"].as_str().unwrap().to_string(),
                    e["timestamp"].as_i64().unwrap(),
                    e["message"].as_str().unwrap().to_string(),
                ),
                e["eventId"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(ids.len(), events.len(), "two events with one key: {out}");
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_events_id_stays_the_same_as_the_log_group_grows() {
    let emu = start(&[(M5, 2)], "").await;
    let c = client(&emu, 1);
    create_share(&c, "qs", &[(M5, 2)], Strategy::Reserve, None, false).await;
    submit(&c, "zeta", "qs", M5, 1, 1).await;
    emu.advance(10 * MINUTE).unwrap();
    let first = read_ids(&emu).await;
    assert!(first.len() >= 3, "{first:?}");
    // A job whose stream sorts before the first's, and more lines of the first.
    submit(&c, "alpha", "qs", M5, 1, 1).await;
    emu.advance(10 * MINUTE).unwrap();
    let second = read_ids(&emu).await;
    assert!(
        second.keys().any(|(s, _, _)| s.contains("alpha")),
        "{second:?}"
    );
    assert!(second.len() > first.len());
    for (key, id) in &first {
        assert_eq!(second.get(key), Some(id), "{key:?} changed its id");
    }
    let mut ids: Vec<&String> = second.values().collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), second.len(), "ids are unique");
    emu.shutdown().await.unwrap();
}
