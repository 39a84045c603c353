//! One event of Batch's event stream as EventBridge delivers it (the envelope with `id`,
//! `time`, `detail-type`, `detail`): what the journal keeps of it.

use crate::Millis;

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
        })
    }
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
        assert!(BatchEvent::parse("not json").is_none());
        let other = serde_json::json!({"id": "e3", "source": "aws.ec2", "time": "2026-01-01T00:00:01Z", "detail-type": "x", "detail": {}});
        assert!(BatchEvent::parse(&other.to_string()).is_none());
    }
}
