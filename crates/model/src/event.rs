//! One event of Batch's event stream as EventBridge delivers it (the envelope with `id`,
//! `time`, `detail-type`, `detail`): what the journal keeps of it.

use crate::{ApiCall, Millis, PreemptedAttempt};

/// What an event says about a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchEvent {
    /// The envelope's `id`: the same for every delivery of one event (duplicates share it).
    pub id: String,
    /// The envelope's `time`, ms since the epoch.
    pub time: Millis,
    pub detail_type: String,
    /// The job the event is about (`detail.jobId`, or the id at the end of
    /// `detail.preemptedJobArn`); empty for an API call naming no job.
    pub job_id: String,
    /// `detail.status`.
    pub status: Option<String>,
    /// `detail.schedulingPriority`.
    pub priority: Option<i64>,
    /// How many attempts `detail.attempts` lists.
    pub attempts: Option<i64>,
    /// The preempted attempts `detail.preemptionSummary.recentPreemptedAttempts` lists (a
    /// preemption's completion carries them), each with its true start and stop: kept by the
    /// journal beyond the API's window. Entries without a stop or a resource id are skipped.
    pub preempted: Vec<PreemptedAttempt>,
    /// An "AWS API Call via CloudTrail" event's call (its `detail` is the CloudTrail record):
    /// who called what, with which request.
    pub api_call: Option<ApiCall>,
}

impl BatchEvent {
    /// The event in a message body; `None` when the body is not an EventBridge event of
    /// `source: aws.batch` with an id and a time.
    pub fn parse(body: &str) -> Option<Self> {
        let v: serde_json::Value = serde_json::from_str(body).ok()?;
        if v.get("source")?.as_str()? != "aws.batch" {
            return None;
        }
        let time = chrono::DateTime::parse_from_rfc3339(v.get("time")?.as_str()?).ok()?;
        let detail = v.get("detail")?;
        let text = |k: &str| detail.get(k).and_then(serde_json::Value::as_str);
        let job_id = text("jobId")
            .map(str::to_string)
            .or_else(|| {
                text("preemptedJobArn")
                    .and_then(|a| a.rsplit('/').next())
                    .map(str::to_string)
            })
            .or_else(|| {
                detail
                    .get("requestParameters")
                    .and_then(|r| r.get("jobId"))
                    .and_then(serde_json::Value::as_str)
                    .map(str::to_string)
            })
            .unwrap_or_default();
        Some(Self {
            id: v.get("id")?.as_str()?.to_string(),
            time: time.timestamp_millis(),
            detail_type: v.get("detail-type")?.as_str()?.to_string(),
            job_id,
            status: text("status").map(str::to_string),
            priority: detail
                .get("schedulingPriority")
                .and_then(serde_json::Value::as_i64),
            attempts: detail
                .get("attempts")
                .and_then(serde_json::Value::as_array)
                .and_then(|a| i64::try_from(a.len()).ok()),
            preempted: preempted_attempts(detail),
            api_call: ApiCall::from_record(detail),
        })
    }
}

/// The attempts a `detail`'s `preemptionSummary.recentPreemptedAttempts` lists, as the API
/// writes them (`serviceResourceId.value`, `startedAt`, `stoppedAt` in ms, `statusReason`).
fn preempted_attempts(detail: &serde_json::Value) -> Vec<PreemptedAttempt> {
    let Some(list) = detail
        .get("preemptionSummary")
        .and_then(|p| p.get("recentPreemptedAttempts"))
        .and_then(serde_json::Value::as_array)
    else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|a| {
            Some(PreemptedAttempt {
                resource_id: a
                    .get("serviceResourceId")?
                    .get("value")?
                    .as_str()?
                    .to_string(),
                started_at: a.get("startedAt").and_then(serde_json::Value::as_i64),
                stopped_at: a.get("stoppedAt")?.as_i64()?,
                status_reason: a
                    .get("statusReason")
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_change_and_a_preemption_are_read_and_anything_else_is_not() {
        let body = serde_json::json!({"id": "e1", "source": "aws.batch", "time": "2026-01-01T00:00:01Z",
            "detail-type": "Batch Service Job State Change",
            "detail": {"jobId": "j1", "status": "RUNNING", "schedulingPriority": 7, "attempts": [{}, {}]}});
        let e = BatchEvent::parse(&body.to_string()).unwrap();
        assert_eq!((e.id.as_str(), e.job_id.as_str()), ("e1", "j1"));
        assert_eq!(
            (e.time, e.priority, e.attempts),
            (1_767_225_601_000, Some(7), Some(2))
        );
        assert_eq!(e.status.as_deref(), Some("RUNNING"));
        let body = serde_json::json!({"id": "e2", "source": "aws.batch", "time": "2026-01-01T00:00:01Z",
            "detail-type": "Batch Service Job Preemption Started",
            "detail": {"preemptedJobArn": "arn:aws:batch:us-east-1:1:service-job/j9"}});
        assert_eq!(BatchEvent::parse(&body.to_string()).unwrap().job_id, "j9");
        let body = serde_json::json!({"id": "e4", "source": "aws.batch", "time": "2026-01-01T00:00:01Z",
            "detail-type": "Batch Service Job Preemption Completed",
            "detail": {"preemptedJobArn": "arn:aws:batch:us-east-1:1:service-job/j9",
                "preemptionSummary": {"preemptedAttemptCount": 2, "recentPreemptedAttempts": [
                    {"serviceResourceId": {"name": "TrainingJobArn", "value": "tj-2"}, "startedAt": 300, "stoppedAt": 400, "statusReason": "r2"},
                    {"serviceResourceId": {"name": "TrainingJobArn", "value": "tj-1"}, "stoppedAt": 200},
                    {"serviceResourceId": {"name": "TrainingJobArn", "value": "tj-0"}}]}}});
        let e = BatchEvent::parse(&body.to_string()).unwrap();
        let got: Vec<_> = e
            .preempted
            .iter()
            .map(|a| {
                (
                    a.resource_id.as_str(),
                    a.started_at,
                    a.stopped_at,
                    a.status_reason.as_str(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [("tj-2", Some(300), 400, "r2"), ("tj-1", None, 200, "")]
        );
        let body = serde_json::json!({"id": "e5", "source": "aws.batch", "time": "2026-01-01T00:00:02Z",
            "detail-type": "AWS API Call via CloudTrail",
            "detail": {"eventSource": "batch.amazonaws.com", "eventTime": "2026-01-01T00:00:01Z",
                "eventID": "ct-1", "eventName": "UpdateServiceJob", "requestID": "r-1",
                "userIdentity": {"arn": "arn:aws:iam::1:user/bob"},
                "requestParameters": {"jobId": "j3", "schedulingPriority": 4}}});
        let e = BatchEvent::parse(&body.to_string()).unwrap();
        let call = e.api_call.unwrap();
        assert_eq!((e.job_id.as_str(), call.event_id.as_str()), ("j3", "ct-1"));
        assert_eq!(call.principal, "arn:aws:iam::1:user/bob");
        assert!(BatchEvent::parse("not json").is_none());
        let other = serde_json::json!({"id": "e3", "source": "aws.ec2", "time": "2026-01-01T00:00:01Z", "detail-type": "x", "detail": {}});
        assert!(BatchEvent::parse(&other.to_string()).is_none());
    }
}
