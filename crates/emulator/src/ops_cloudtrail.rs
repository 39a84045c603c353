//! AWS CloudTrail's `LookupEvents` on the emulator's endpoint (awsJson1_1: `POST /` with
//! `X-Amz-Target: com.amazonaws.cloudtrail.v20131101.CloudTrail_20131101.LookupEvents`): the
//! event history of the Batch calls the region served that change something (newest first),
//! each with who made it (`userIdentity` from the request's access key) and its request. No
//! trail is needed, as for CloudTrail's event history; the emulator keeps the newest
//! `bus::MAX_TRAIL` records per region.

use serde::Deserialize;
use serde_json::{Value, json};

use super::account::Account;
use super::bus_events::record_resources;
use super::error::ApiError;

/// LookupEvents' largest page (AWS: 50).
const MAX_RESULTS: usize = 50;

fn error(code: &'static str, message: impl Into<String>) -> ApiError {
    ApiError::Service {
        status: 400,
        code,
        message: message.into(),
    }
}

/// An error as CloudTrail names it.
pub fn trail_error(e: ApiError) -> ApiError {
    match e {
        ApiError::Client(m) => error("InvalidParameterException", m),
        ApiError::Throttled => error("ThrottlingException", "Rate exceeded"),
        other => other,
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Lookup {
    lookup_attributes: Option<Vec<Attribute>>,
    /// Epoch seconds (the JSON protocols' timestamps).
    start_time: Option<f64>,
    end_time: Option<f64>,
    event_category: Option<String>,
    max_results: Option<i64>,
    next_token: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Attribute {
    attribute_key: Option<String>,
    attribute_value: Option<String>,
}

/// The value of a record's lookup attribute `key`.
fn attribute(record: &Value, key: &str) -> Vec<String> {
    let s = |v: &Value| v.as_str().map(str::to_string);
    match key {
        "EventId" => s(&record["eventID"]).into_iter().collect(),
        "EventName" => s(&record["eventName"]).into_iter().collect(),
        "EventSource" => s(&record["eventSource"]).into_iter().collect(),
        "ReadOnly" => vec![record["readOnly"].to_string()],
        "Username" => username(record).into_iter().collect(),
        "AccessKeyId" => s(&record["userIdentity"]["accessKeyId"])
            .into_iter()
            .collect(),
        "ResourceName" => record_resources(record).into_iter().map(|r| r.1).collect(),
        "ResourceType" => record_resources(record)
            .into_iter()
            .map(|r| r.0.to_string())
            .collect(),
        _ => Vec::new(),
    }
}

/// The user name CloudTrail shows: the IAM user's, or an assumed role's session name.
fn username(record: &Value) -> Option<String> {
    let id = &record["userIdentity"];
    id["userName"].as_str().map(str::to_string).or_else(|| {
        id["arn"]
            .as_str()
            .and_then(|a| a.rsplit('/').next())
            .map(str::to_string)
    })
}

fn epoch_ms(record: &Value) -> i64 {
    record["eventTime"]
        .as_str()
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .map_or(0, |t| t.timestamp_millis())
}

const KEYS: [&str; 8] = [
    "EventId",
    "EventName",
    "ReadOnly",
    "Username",
    "ResourceType",
    "ResourceName",
    "EventSource",
    "AccessKeyId",
];

/// The one lookup attribute allowed, if any: its key and value.
fn lookup_filter(attrs: Vec<Attribute>) -> Result<Option<(String, String)>, ApiError> {
    if attrs.len() > 1 {
        return Err(error(
            "InvalidLookupAttributesException",
            "You can specify only one lookup attribute.",
        ));
    }
    match attrs.into_iter().next() {
        None => Ok(None),
        Some(Attribute {
            attribute_key: Some(k),
            attribute_value: Some(v),
        }) if KEYS.contains(&k.as_str()) => Ok(Some((k, v))),
        Some(_) => Err(error(
            "InvalidLookupAttributesException",
            format!(
                "A lookup attribute needs an AttributeKey ({}) and an AttributeValue",
                KEYS.join(", ")
            ),
        )),
    }
}

/// Where the page starts and how long it is.
fn page_bounds(max: Option<i64>, token: Option<&str>) -> Result<(usize, usize), ApiError> {
    let take = match max {
        None => MAX_RESULTS,
        Some(n) if (1..=MAX_RESULTS as i64).contains(&n) => n as usize,
        Some(n) => {
            return Err(error(
                "InvalidMaxResultsException",
                format!("MaxResults must be 1 to {MAX_RESULTS}, got {n}"),
            ));
        }
    };
    let from = match token {
        None => 0,
        Some(t) => t
            .strip_prefix("i/")
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| error("InvalidNextTokenException", "The NextToken is invalid."))?,
    };
    Ok((from, take))
}

/// A record as LookupEvents lists it.
fn event_json(r: &Value) -> Value {
    json!({
        "EventId": r["eventID"],
        "EventName": r["eventName"],
        "ReadOnly": r["readOnly"].to_string(),
        "AccessKeyId": r["userIdentity"]["accessKeyId"],
        "EventTime": epoch_ms(r) as f64 / 1000.0,
        "EventSource": r["eventSource"],
        "Username": username(r),
        "Resources": record_resources(r)
            .into_iter()
            .map(|(kind, name)| json!({ "ResourceType": kind, "ResourceName": name }))
            .collect::<Vec<_>>(),
        "CloudTrailEvent": r.to_string(),
    })
}

pub fn lookup_events(account: &mut Account, body: &[u8]) -> Result<Value, ApiError> {
    let req: Lookup = super::wire::parse(body).map_err(trail_error)?;
    if req.event_category.is_some() {
        return Err(error(
            "InvalidEventCategoryException",
            "The emulator's event history holds management events only (no insight events)",
        ));
    }
    let filter = lookup_filter(req.lookup_attributes.unwrap_or_default())?;
    let (start, end) = (
        req.start_time.map(|s| (s * 1000.0) as i64),
        req.end_time.map(|s| (s * 1000.0) as i64),
    );
    if let (Some(s), Some(e)) = (start, end)
        && s > e
    {
        return Err(error(
            "InvalidTimeRangeException",
            "StartTime must be before EndTime",
        ));
    }
    let (from, take) = page_bounds(req.max_results, req.next_token.as_deref())?;
    let found: Vec<&Value> = account
        .bus
        .trail
        .iter()
        .rev()
        .filter(|r| {
            let t = epoch_ms(r);
            start.is_none_or(|s| t >= s)
                && end.is_none_or(|e| t <= e)
                && filter
                    .as_ref()
                    .is_none_or(|(k, v)| attribute(r, k).iter().any(|x| x == v))
        })
        .collect();
    let events: Vec<Value> = found
        .iter()
        .skip(from)
        .take(take)
        .map(|r| event_json(r))
        .collect();
    let mut out = json!({ "Events": events });
    if from + take < found.len() {
        out["NextToken"] = json!(format!("i/{}", from + take));
    }
    Ok(out)
}
