//! What a region publishes on its bus, in EventBridge's event JSON: its jobs' state changes and
//! preemptions (from the engine's events, with the user guide's detail types) and the Batch
//! calls it served ("AWS API Call via CloudTrail", with the caller's identity and the request's
//! parameters), which CloudTrail's event history also keeps.
//!
//! A state change's `detail` is the job's DescribeServiceJob answer without `tags` and
//! `serviceRequestPayload`, read when the emulator delivers the event (within a tick of the
//! change), with `status` the event's own.

use serde_json::{Value, json};

use quotatop_engine::{Event, EventReason};
use quotatop_model::Millis;

use super::account::ArnBase;
use super::job_view::description;
use super::ops_sts::user_identity;
use super::state::QueueWorld;

pub const STATE_CHANGE: &str = "Batch Service Job State Change";
pub const PREEMPTION_STARTED: &str = "Batch Service Job Preemption Started";
pub const PREEMPTION_COMPLETED: &str = "Batch Service Job Preemption Completed";
pub const API_CALL: &str = "AWS API Call via CloudTrail";

/// The Batch calls CloudTrail records (the ones that change something), by their API names.
const RECORDED: &[&str] = &[
    "CreateSchedulingPolicy",
    "UpdateSchedulingPolicy",
    "DeleteSchedulingPolicy",
    "CreateServiceEnvironment",
    "UpdateServiceEnvironment",
    "DeleteServiceEnvironment",
    "CreateJobQueue",
    "UpdateJobQueue",
    "DeleteJobQueue",
    "CreateQuotaShare",
    "UpdateQuotaShare",
    "DeleteQuotaShare",
    "SubmitServiceJob",
    "UpdateServiceJob",
    "TerminateServiceJob",
    "TerminateServiceJobs",
];

/// The API name of `op` (lowercase, as routed) if CloudTrail records it.
pub fn recorded_name(op: &str) -> Option<&'static str> {
    RECORDED
        .iter()
        .find(|n| n.eq_ignore_ascii_case(op))
        .copied()
}

/// `2026-03-16T19:57:27Z`, as EventBridge and CloudTrail write times.
pub fn iso_seconds(ms: Millis) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default()
}

/// An event of `source: aws.batch` (its `id` is given on publishing).
pub fn envelope(
    base: &ArnBase,
    time: Millis,
    detail_type: &str,
    resources: Vec<Value>,
    detail: Value,
) -> Value {
    json!({
        "version": "0",
        "id": "",
        "detail-type": detail_type,
        "source": "aws.batch",
        "account": base.account,
        "time": iso_seconds(time),
        "region": base.region,
        "resources": resources,
        "detail": detail,
    })
}

/// The events of one engine event of `world`'s queue: a state change whenever the status
/// changes (none for the submission itself, as AWS), and a preemption's start and completion.
pub fn job_events(world: &QueueWorld, e: &Event) -> Vec<Value> {
    let Some(mut detail) = description(world, e.job)
        .ok()
        .and_then(|d| serde_json::to_value(d).ok())
    else {
        return Vec::new();
    };
    if let Some(m) = detail.as_object_mut() {
        m.remove("tags");
        m.remove("serviceRequestPayload");
    }
    let arn = detail["jobArn"].clone();
    let status = e.to.as_str();
    let mut out = Vec::new();
    // The reasons are the engine's, as of the event (the job may have moved on since).
    let preemption = match e.reason {
        EventReason::PreemptionStarted(k) => {
            Some((PREEMPTION_STARTED, k.in_progress_reason(), Value::Null))
        }
        EventReason::Preempted(k) => Some((
            PREEMPTION_COMPLETED,
            k.reason().to_string(),
            detail
                .get("preemptionSummary")
                .cloned()
                .unwrap_or(Value::Null),
        )),
        _ => None,
    };
    if let Some((kind, reason, summary)) = preemption {
        let mut d = json!({
            "preemptedJobArn": arn,
            "status": status,
            "statusReason": reason,
        });
        if !summary.is_null() {
            d["preemptionSummary"] = summary;
        }
        out.push(envelope(&world.base, e.time, kind, vec![arn.clone()], d));
    }
    if e.from.is_some_and(|from| from != e.to) {
        detail["status"] = json!(status);
        out.push(envelope(
            &world.base,
            e.time,
            STATE_CHANGE,
            vec![arn],
            detail,
        ));
    }
    out
}

/// Who made a call and how: what its CloudTrail record says of the caller.
#[derive(Debug, Clone, Default)]
pub struct Caller {
    /// The access key id that signed the request (empty when unsigned).
    pub key: String,
    pub user_agent: String,
}

/// The CloudTrail record of a served Batch call `name` with request `body`.
pub fn api_call_record(
    base: &ArnBase,
    now: Millis,
    name: &str,
    caller: &Caller,
    body: &[u8],
    ids: (String, String),
) -> Value {
    let (event_id, request_id) = ids;
    let parameters = serde_json::from_slice::<Value>(body).unwrap_or(Value::Null);
    json!({
        "eventVersion": "1.08",
        "userIdentity": user_identity(&caller.key, &base.account),
        "eventTime": iso_seconds(now),
        "eventSource": "batch.amazonaws.com",
        "eventName": name,
        "awsRegion": base.region,
        "sourceIPAddress": "127.0.0.1",
        "userAgent": caller.user_agent,
        "requestParameters": parameters,
        "responseElements": Value::Null,
        "requestID": request_id,
        "eventID": event_id,
        "readOnly": false,
        "eventType": "AwsApiCall",
        "managementEvent": true,
        "recipientAccountId": base.account,
        "eventCategory": "Management",
    })
}

/// The resources a CloudTrail record names (LookupEvents' `Resources`): from its request's
/// `jobId`, `jobQueue` and `quotaShareArn`.
pub fn record_resources(record: &Value) -> Vec<(&'static str, String)> {
    let p = &record["requestParameters"];
    [
        ("jobId", "AWS::Batch::ServiceJob"),
        ("jobQueue", "AWS::Batch::JobQueue"),
        ("quotaShareArn", "AWS::Batch::QuotaShare"),
    ]
    .into_iter()
    .filter_map(|(field, kind)| p[field].as_str().map(|v| (kind, v.to_string())))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_recorded_call_is_an_operation_the_emulator_serves() {
        for name in RECORDED {
            let op = name.to_ascii_lowercase();
            assert!(super::super::OPERATIONS.contains(&op.as_str()), "{name}");
            assert_eq!(recorded_name(&op), Some(*name));
        }
        assert_eq!(recorded_name("describeservicejob"), None);
        assert_eq!(iso_seconds(1_641_944_200_058), "2022-01-11T23:36:40Z");
    }
}
