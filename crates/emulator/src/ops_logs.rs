//! CloudWatch Logs on the emulator's endpoint (JSON 1.1: `POST /` with
//! `X-Amz-Target: Logs_20140328.<Operation>`): DescribeLogStreams, GetLogEvents and
//! FilterLogEvents over the log group [`LOG_GROUP`], whose streams are the training jobs of the
//! region's attempts ([`super::runs`]).
//!
//! Choices where AWS is opaque: tokens are positions (`f/<n>`, `b/<n>`, `i/<n>`) in the time-
//! ordered events; `ingestionTime` equals `timestamp`; filter patterns are terms that must all
//! appear, or one quoted phrase (the JSON and space-delimited pattern syntaxes are refused).

use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use quotatop_model::Millis;

use super::account::Account;
use super::error::ApiError;
use super::hash::fnv1a;
use super::runs::account_runs;
use super::training::LOG_GROUP;

/// At most this many events per answer (AWS: 10,000 or 1 MB).
const MAX_EVENTS: usize = 10_000;
/// At most this many streams per DescribeLogStreams answer (AWS: 50).
const MAX_STREAMS: usize = 50;

/// How a Logs operation is served.
pub type LogsFn = fn(&Account, &[u8]) -> Result<Response, ApiError>;

fn invalid(message: impl Into<String>) -> ApiError {
    ApiError::Service {
        status: 400,
        code: "InvalidParameterException",
        message: message.into(),
    }
}

fn not_found(message: &str) -> ApiError {
    ApiError::Service {
        status: 400,
        code: "ResourceNotFoundException",
        message: message.to_string(),
    }
}

/// A Logs error as the Logs service names it (throttling is `ThrottlingException`).
pub fn logs_error(e: ApiError) -> ApiError {
    match e {
        ApiError::Throttled => ApiError::Service {
            status: 400,
            code: "ThrottlingException",
            message: "Rate exceeded".into(),
        },
        ApiError::Client(m) => invalid(m),
        ApiError::Server(m) => ApiError::Service {
            status: 500,
            code: "ServiceUnavailableException",
            message: m,
        },
        other => other,
    }
}

fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    super::wire::parse(body).map_err(logs_error)
}

fn answer(value: &Value) -> Result<Response, ApiError> {
    let mut r = axum::Json(value).into_response();
    r.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/x-amz-json-1.1"),
    );
    Ok(r)
}

/// `logGroupName` or `logGroupIdentifier` (a name or an ARN) must name [`LOG_GROUP`].
fn check_group(name: Option<&str>, identifier: Option<&str>) -> Result<(), ApiError> {
    let group = match (name, identifier) {
        (Some(n), None) => n,
        (None, Some(id)) => id
            .split_once(":log-group:")
            .map_or(id, |(_, g)| g.trim_end_matches(":*")),
        (Some(_), Some(_)) => {
            return Err(invalid(
                "LogGroup name and LogGroup ARN are mutually exclusive parameters.",
            ));
        }
        (None, None) => {
            return Err(invalid(
                "Either logGroupName or logGroupIdentifier is required",
            ));
        }
    };
    if group == LOG_GROUP {
        Ok(())
    } else {
        Err(not_found("The specified log group does not exist."))
    }
}

/// Every stream of the region: `(name, lines)`, by name.
fn streams(account: &Account) -> Vec<(String, Vec<(Millis, String)>)> {
    let now = account.now;
    let mut all: Vec<_> = account_runs(account)
        .iter()
        .flat_map(|r| r.streams(now))
        .collect();
    all.sort_by(|a, b| a.0.cmp(&b.0));
    all
}

fn limit(requested: Option<i64>, max: usize) -> Result<usize, ApiError> {
    match requested {
        None => Ok(max),
        Some(n) if n >= 1 && n as usize <= max => Ok(n as usize),
        Some(n) => Err(invalid(format!(
            "limit must be between 1 and {max}, got {n}"
        ))),
    }
}

fn token(t: Option<&str>, kind: char) -> Result<Option<usize>, ApiError> {
    let Some(t) = t else { return Ok(None) };
    t.strip_prefix(kind)
        .and_then(|r| r.strip_prefix('/'))
        .and_then(|n| n.parse().ok())
        .map(Some)
        .ok_or_else(|| invalid("The specified nextToken is invalid."))
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct DescribeLogStreamsRequest {
    log_group_name: Option<String>,
    log_group_identifier: Option<String>,
    log_stream_name_prefix: Option<String>,
    order_by: Option<String>,
    descending: Option<bool>,
    next_token: Option<String>,
    limit: Option<i64>,
}

pub fn describe_streams(account: &Account, body: &[u8]) -> Result<Response, ApiError> {
    let req: DescribeLogStreamsRequest = parse(body)?;
    check_group(
        req.log_group_name.as_deref(),
        req.log_group_identifier.as_deref(),
    )?;
    let by_time = match req.order_by.as_deref() {
        None | Some("LogStreamName") => false,
        Some("LastEventTime") => true,
        Some(other) => {
            return Err(invalid(format!(
                "orderBy must be LogStreamName or LastEventTime, got {other}"
            )));
        }
    };
    if by_time && req.log_stream_name_prefix.is_some() {
        return Err(invalid(
            "Cannot order by LastEventTime with a logStreamNamePrefix.",
        ));
    }
    let prefix = req.log_stream_name_prefix.unwrap_or_default();
    let mut found: Vec<_> = streams(account)
        .into_iter()
        .filter(|(name, _)| name.starts_with(&prefix))
        .collect();
    if by_time {
        found.sort_by_key(|(_, lines)| lines.last().map(|l| l.0));
    }
    if req.descending.unwrap_or(false) {
        found.reverse();
    }
    let from = token(req.next_token.as_deref(), 'i')?.unwrap_or(0);
    let take = limit(req.limit, MAX_STREAMS)?;
    let arn = format!(
        "arn:aws:logs:{}:{}:log-group:{LOG_GROUP}",
        account.base.region, account.base.account
    );
    let page: Vec<Value> = found
        .iter()
        .skip(from)
        .take(take)
        .map(|(name, lines)| {
            let first = lines.first().map(|l| l.0);
            let last = lines.last().map(|l| l.0);
            json!({
                "logStreamName": name,
                "creationTime": first,
                "firstEventTimestamp": first,
                "lastEventTimestamp": last,
                "lastIngestionTime": last,
                "arn": format!("{arn}:log-stream:{name}"),
                "storedBytes": 0,
            })
        })
        .collect();
    let mut out = json!({ "logStreams": page });
    if from + take < found.len() {
        out["nextToken"] = json!(format!("i/{}", from + take));
    }
    answer(&out)
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct GetLogEventsRequest {
    log_group_name: Option<String>,
    log_group_identifier: Option<String>,
    log_stream_name: Option<String>,
    start_time: Option<i64>,
    end_time: Option<i64>,
    next_token: Option<String>,
    limit: Option<i64>,
    start_from_head: Option<bool>,
}

/// Whether `t` is within `[start, end)` (CloudWatch's `endTime` is exclusive).
fn in_range(t: Millis, start: Option<i64>, end: Option<i64>) -> bool {
    start.is_none_or(|s| t >= s) && end.is_none_or(|e| t < e)
}

pub fn get_events(account: &Account, body: &[u8]) -> Result<Response, ApiError> {
    let req: GetLogEventsRequest = parse(body)?;
    check_group(
        req.log_group_name.as_deref(),
        req.log_group_identifier.as_deref(),
    )?;
    let stream = req
        .log_stream_name
        .ok_or_else(|| invalid("1 validation error detected: logStreamName must not be null"))?;
    let lines = streams(account)
        .into_iter()
        .find(|(name, _)| *name == stream)
        .map(|(_, lines)| lines)
        .ok_or_else(|| not_found("The specified log stream does not exist."))?;
    let events: Vec<&(Millis, String)> = lines
        .iter()
        .filter(|(t, _)| in_range(*t, req.start_time, req.end_time))
        .collect();
    let take = limit(req.limit, MAX_EVENTS)?;
    let (from, to) = match (
        req.next_token.as_deref(),
        req.start_from_head.unwrap_or(false),
    ) {
        (Some(t), _) if t.starts_with('b') => {
            let end = token(Some(t), 'b')?.unwrap_or(0).min(events.len());
            (end.saturating_sub(take), end)
        }
        (Some(t), _) => {
            let start = token(Some(t), 'f')?.unwrap_or(0).min(events.len());
            (start, (start + take).min(events.len()))
        }
        (None, true) => (0, take.min(events.len())),
        (None, false) => (events.len().saturating_sub(take), events.len()),
    };
    let page: Vec<Value> = events[from..to]
        .iter()
        .map(|(t, m)| json!({ "timestamp": t, "message": m, "ingestionTime": t }))
        .collect();
    answer(&json!({
        "events": page,
        "nextForwardToken": format!("f/{to}"),
        "nextBackwardToken": format!("b/{from}"),
    }))
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct FilterLogEventsRequest {
    log_group_name: Option<String>,
    log_group_identifier: Option<String>,
    log_stream_names: Option<Vec<String>>,
    log_stream_name_prefix: Option<String>,
    start_time: Option<i64>,
    end_time: Option<i64>,
    filter_pattern: Option<String>,
    next_token: Option<String>,
    limit: Option<i64>,
}

/// A filter pattern: terms that must all appear, or one quoted phrase.
fn matcher(pattern: Option<&str>) -> Result<Vec<String>, ApiError> {
    let p = pattern.unwrap_or("").trim();
    if p.starts_with('{') || p.starts_with('[') || p.starts_with('%') {
        return Err(invalid(
            "The emulator's filter patterns are terms or one quoted phrase; JSON, space-delimited and regex patterns are not supported",
        ));
    }
    if let Some(phrase) = p.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
        return Ok(vec![phrase.to_string()]);
    }
    Ok(p.split_whitespace().map(str::to_string).collect())
}

pub fn filter_events(account: &Account, body: &[u8]) -> Result<Response, ApiError> {
    let req: FilterLogEventsRequest = parse(body)?;
    check_group(
        req.log_group_name.as_deref(),
        req.log_group_identifier.as_deref(),
    )?;
    if req.log_stream_names.is_some() && req.log_stream_name_prefix.is_some() {
        return Err(invalid(
            "logStreamNames and logStreamNamePrefix are mutually exclusive parameters.",
        ));
    }
    let terms = matcher(req.filter_pattern.as_deref())?;
    let wanted = |name: &str| match (&req.log_stream_names, &req.log_stream_name_prefix) {
        (Some(names), _) => names.iter().any(|n| n == name),
        (None, Some(prefix)) => name.starts_with(prefix.as_str()),
        (None, None) => true,
    };
    let mut events: Vec<(Millis, usize, usize, String, String, String)> = Vec::new();
    for (si, (name, lines)) in streams(account).into_iter().enumerate() {
        if !wanted(&name) {
            continue;
        }
        let ids = event_ids(&name, &lines);
        for (li, ((t, m), id)) in lines.into_iter().zip(ids).enumerate() {
            if in_range(t, req.start_time, req.end_time)
                && terms.iter().all(|term| m.contains(term.as_str()))
            {
                events.push((t, si, li, name.clone(), m, id));
            }
        }
    }
    events.sort_by_key(|e| (e.0, e.1, e.2));
    let from = token(req.next_token.as_deref(), 'i')?.unwrap_or(0);
    let take = limit(req.limit, MAX_EVENTS)?;
    let page: Vec<Value> = events
        .iter()
        .skip(from)
        .take(take)
        .map(|(t, _, _, name, m, id)| {
            json!({
                "logStreamName": name,
                "timestamp": t,
                "message": m,
                "ingestionTime": t,
                "eventId": id,
            })
        })
        .collect();
    let mut out = json!({ "events": page });
    if from + take < events.len() {
        out["nextToken"] = json!(format!("i/{}", from + take));
    }
    answer(&out)
}

/// The `eventId` of each of a stream's lines (56 digits, as AWS's): its time, the stream's name
/// (hashed) and its place among the stream's lines of the same time. None of these moves as the
/// group grows (a stream's lines come in time order, those of one time together) or with the
/// query (the place is counted before any filter), so the same event read twice has the same
/// id, whatever streams or lines came meanwhile.
fn event_ids(stream: &str, lines: &[(Millis, String)]) -> Vec<String> {
    let stream = fnv1a(stream.bytes());
    let mut place = 0u64;
    lines
        .iter()
        .enumerate()
        .map(|(i, &(t, _))| {
            place = if i > 0 && lines[i - 1].0 == t {
                place + 1
            } else {
                0
            };
            format!("{t:020}{stream:020}{place:016}")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_tokens_and_patterns() {
        assert!(check_group(Some(LOG_GROUP), None).is_ok());
        assert!(
            check_group(
                None,
                Some("arn:aws:logs:us-east-1:1:log-group:/aws/sagemaker/TrainingJobs:*")
            )
            .is_ok()
        );
        assert_eq!(
            check_group(Some("/other"), None).map_err(|e| e.code()),
            Err("ResourceNotFoundException")
        );
        assert_eq!(token(Some("f/12"), 'f'), Ok(Some(12)));
        assert!(token(Some("x"), 'f').is_err());
        assert_eq!(
            matcher(Some("\"saved checkpoint\"")),
            Ok(vec!["saved checkpoint".to_string()])
        );
        assert_eq!(
            matcher(Some("a b")),
            Ok(vec!["a".to_string(), "b".to_string()])
        );
        assert!(matcher(Some("{ $.a = 1 }")).is_err());
        assert!(in_range(5, Some(5), Some(6)) && !in_range(6, Some(5), Some(6)));
    }
    #[test]
    fn an_events_id_does_not_move_as_its_stream_grows() {
        let line = |t: Millis| (t, format!("at {t}"));
        let before = vec![line(1), line(2), line(2)];
        let after = vec![line(1), line(2), line(2), line(3), line(3)];
        let (a, b) = (event_ids("s", &before), event_ids("s", &after));
        assert_eq!(a[..], b[..3]);
        let mut all = b.clone();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 5, "{b:?}");
        assert_ne!(event_ids("t", &before), a, "another stream, other ids");
        assert!(a.iter().all(|id| id.len() == 56));
    }
}
