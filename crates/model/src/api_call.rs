//! One Batch API call as CloudTrail records it: from an "AWS API Call via CloudTrail" event's
//! `detail` (EventBridge) or from a `LookupEvents` answer's `CloudTrailEvent` (the event
//! history). Both carry the same record, so the record's own `eventID` names the call in both.

use crate::Millis;

/// Who called what, when, with which request: what the audit view needs of a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiCall {
    /// The CloudTrail record's `eventID` (the same in the event stream and in the history).
    pub event_id: String,
    /// `eventTime`, ms since the epoch.
    pub time: Millis,
    /// `eventName`, e.g. `UpdateServiceJob`.
    pub name: String,
    /// The caller's ARN (`userIdentity.arn`; for a service, `invokedBy`; else its principal
    /// id and type).
    pub principal: String,
    /// `requestID`: the id the API answered the call with (`x-amzn-RequestId`).
    pub request_id: Option<String>,
    /// `requestParameters` as compact JSON (`null` when the record has none).
    pub parameters: String,
}

/// The calls that change a job's priority or end it, or change a queue or its quota shares:
/// what the audit view shows when quotatop did not make them.
pub const JUDGED_CALLS: &[&str] = &[
    "UpdateServiceJob",
    "TerminateServiceJob",
    "TerminateServiceJobs",
    "CreateQuotaShare",
    "UpdateQuotaShare",
    "DeleteQuotaShare",
    "UpdateJobQueue",
];

impl ApiCall {
    /// The call in a CloudTrail record (`None`: not a record of `batch.amazonaws.com` with an
    /// event id, a time and a name).
    pub fn from_record(record: &serde_json::Value) -> Option<Self> {
        let s = |v: &serde_json::Value| v.as_str().map(str::to_string);
        if record.get("eventSource")?.as_str()? != "batch.amazonaws.com" {
            return None;
        }
        let time = chrono::DateTime::parse_from_rfc3339(record.get("eventTime")?.as_str()?).ok()?;
        let id = &record["userIdentity"];
        let principal = s(&id["arn"])
            .or_else(|| s(&id["invokedBy"]))
            .or_else(|| {
                s(&id["principalId"])
                    .map(|p| format!("{p} ({})", id["type"].as_str().unwrap_or("")))
            })
            .unwrap_or_else(|| "(no principal recorded)".to_string());
        let parameters = record
            .get("requestParameters")
            .cloned()
            .unwrap_or(serde_json::Value::Null);
        Some(Self {
            event_id: s(record.get("eventID")?)?,
            time: time.timestamp_millis(),
            name: s(record.get("eventName")?)?,
            principal,
            request_id: s(&record["requestID"]),
            parameters: parameters.to_string(),
        })
    }

    /// Whether this is one of [`JUDGED_CALLS`].
    pub fn is_judged(&self) -> bool {
        JUDGED_CALLS.contains(&self.name.as_str())
    }

    /// The request's parameters, parsed (`Null` when they are not JSON).
    pub fn request(&self) -> serde_json::Value {
        serde_json::from_str(&self.parameters).unwrap_or(serde_json::Value::Null)
    }

    /// A text member of the request (`jobId`, `reason`, `clientToken`, `quotaShareArn`…).
    pub fn param(&self, key: &str) -> Option<String> {
        self.request()
            .get(key)
            .and_then(serde_json::Value::as_str)
            .map(str::to_string)
    }

    /// The job, share or queue the call names: `jobId`, else `quotaShareArn` or `shareName`,
    /// else `jobQueue` (empty when it names none).
    pub fn target(&self) -> String {
        ["jobId", "quotaShareArn", "shareName", "jobQueue"]
            .iter()
            .find_map(|k| self.param(k))
            .unwrap_or_default()
    }

    /// `schedulingPriority` of the request, when it sets one.
    pub fn new_priority(&self) -> Option<i64> {
        self.request()
            .get("schedulingPriority")
            .and_then(serde_json::Value::as_i64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_record_is_read_and_another_service_is_not() {
        let r = serde_json::json!({"eventSource": "batch.amazonaws.com", "eventTime": "2026-01-01T00:00:01Z",
            "eventID": "ev-1", "eventName": "UpdateServiceJob", "requestID": "req-1",
            "userIdentity": {"type": "IAMUser", "arn": "arn:aws:iam::1:user/bob", "principalId": "AIDA"},
            "requestParameters": {"jobId": "j1", "schedulingPriority": 90}});
        let c = ApiCall::from_record(&r).unwrap();
        assert_eq!(
            (c.event_id.as_str(), c.name.as_str(), c.principal.as_str()),
            ("ev-1", "UpdateServiceJob", "arn:aws:iam::1:user/bob")
        );
        assert_eq!(
            (c.time, c.request_id.as_deref()),
            (1_767_225_601_000, Some("req-1"))
        );
        assert_eq!((c.target(), c.new_priority()), ("j1".to_string(), Some(90)));
        assert!(c.is_judged());
        let mut svc = r.clone();
        svc["userIdentity"] =
            serde_json::json!({"type": "AWSService", "invokedBy": "batch.amazonaws.com"});
        assert_eq!(
            ApiCall::from_record(&svc).unwrap().principal,
            "batch.amazonaws.com"
        );
        let mut other = r;
        other["eventSource"] = serde_json::json!("ec2.amazonaws.com");
        assert!(ApiCall::from_record(&other).is_none());
    }
}
