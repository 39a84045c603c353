//! Amazon SQS on the emulator's endpoint (awsJson1_0: `POST /` with
//! `X-Amz-Target: AmazonSQS.<Operation>`, as the current SDKs send it): standard queues
//! (CreateQueue, GetQueueUrl, GetQueueAttributes, SetQueueAttributes, DeleteQueue) and their
//! messages (ReceiveMessage with long polling and visibility timeouts, DeleteMessage,
//! DeleteMessageBatch, ChangeMessageVisibility). Messages come from EventBridge rules
//! (`bus.rs`); the emulator serves no SendMessage.
//!
//! Queue URLs are `<endpoint>/<account>/<name>`. Visibility, delays and waits are real time.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};
use md5::{Digest, Md5};
use serde::Deserialize;
use serde_json::{Value, json};

use super::account::Account;
use super::bus::{Message, SqsQueue};
use super::error::ApiError;

/// Queues a region holds at most.
const MAX_QUEUES: usize = 100;
/// The longest long poll (`WaitTimeSeconds`), as SQS.
pub const MAX_WAIT_S: u64 = 20;

fn error(code: &'static str, message: impl Into<String>) -> ApiError {
    ApiError::Service {
        status: 400,
        code,
        message: message.into(),
    }
}

/// An error as SQS names it (a bad value is `InvalidParameterValue`, throttling
/// `RequestThrottled`).
pub fn sqs_error(e: ApiError) -> ApiError {
    match e {
        ApiError::Client(m) => error("InvalidParameterValue", m),
        ApiError::Throttled => error("RequestThrottled", "Rate exceeded"),
        other => other,
    }
}

fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    super::wire::parse(body).map_err(sqs_error)
}

/// The code SQS's Query protocol gave an error (which the SDKs, SQS being query-compatible, read
/// from the `x-amzn-query-error` header).
fn query_code(code: &str) -> &str {
    match code {
        "QueueDoesNotExist" => "AWS.SimpleQueueService.NonExistentQueue",
        "QueueNameExists" => "QueueAlreadyExists",
        "MessageNotInflight" => "AWS.SimpleQueueService.MessageNotInflight",
        "EmptyBatchRequest" => "AWS.SimpleQueueService.EmptyBatchRequest",
        "TooManyEntriesInBatchRequest" => "AWS.SimpleQueueService.TooManyEntriesInBatchRequest",
        "BatchEntryIdsNotDistinct" => "AWS.SimpleQueueService.BatchEntryIdsNotDistinct",
        "UnsupportedOperation" => "AWS.SimpleQueueService.UnsupportedOperation",
        other => other,
    }
}

/// An SQS error on the wire, as SQS's JSON protocol answers it: `__type`
/// `com.amazonaws.sqs#<Code>` and `x-amzn-query-error: <query code>;Sender` (or `;Receiver`
/// for a fault of the service).
pub fn error_response(e: ApiError) -> Response {
    let e = sqs_error(e);
    let code = e.code();
    let side = if e.status().is_server_error() {
        "Receiver"
    } else {
        "Sender"
    };
    let body = json!({ "__type": format!("com.amazonaws.sqs#{code}"), "message": e.to_string() });
    let mut r = (e.status(), axum::Json(body)).into_response();
    if let Ok(v) = HeaderValue::from_str(&format!("{};{side}", query_code(code))) {
        r.headers_mut().insert("x-amzn-query-error", v);
    }
    if let Ok(v) = HeaderValue::from_str(code) {
        r.headers_mut().insert("x-amzn-ErrorType", v);
    }
    r
}

fn gone() -> ApiError {
    error("QueueDoesNotExist", "The specified queue does not exist.")
}

/// The settable attributes: name, default, and the range of its value.
const SETTABLE: &[(&str, u64, u64, u64)] = &[
    ("DelaySeconds", 0, 0, 900),
    ("MaximumMessageSize", 262_144, 1_024, 262_144),
    ("MessageRetentionPeriod", 345_600, 60, 1_209_600),
    ("ReceiveMessageWaitTimeSeconds", 0, 0, MAX_WAIT_S),
    ("VisibilityTimeout", 30, 0, 43_200),
];

/// Checks and normalises attributes for CreateQueue and SetQueueAttributes: the numeric ones
/// of [`SETTABLE`] and `Policy` (a JSON document).
fn check_attributes(attrs: &BTreeMap<String, String>) -> Result<(), ApiError> {
    for (name, value) in attrs {
        if name == "Policy" {
            if serde_json::from_str::<Value>(value).is_err() {
                return Err(error(
                    "InvalidAttributeValue",
                    "Invalid value for the parameter Policy: not a JSON document",
                ));
            }
            continue;
        }
        let Some(&(_, _, lo, hi)) = SETTABLE.iter().find(|s| s.0 == name) else {
            return Err(error(
                "InvalidAttributeName",
                format!(
                    "Unknown or unsupported attribute {}: the emulator's queues take Policy, {}",
                    quotatop_model::clean(name),
                    SETTABLE.iter().map(|s| s.0).collect::<Vec<_>>().join(", ")
                ),
            ));
        };
        match value.parse::<u64>() {
            Ok(v) if (lo..=hi).contains(&v) => {}
            _ => {
                return Err(error(
                    "InvalidAttributeValue",
                    format!(
                        "Invalid value for the parameter {name}: {} (must be {lo} to {hi})",
                        quotatop_model::clean(value)
                    ),
                ));
            }
        }
    }
    Ok(())
}

fn url(account: &Account, name: &str) -> String {
    format!("{}/{}/{name}", account.bus.endpoint, account.base.account)
}

/// The queue a `QueueUrl` names (`…/<account>/<name>`).
fn queue_of(account: &Account, queue_url: &str) -> Result<usize, ApiError> {
    let mut parts = queue_url.trim_end_matches('/').rsplit('/');
    let (name, owner) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    if owner != account.base.account {
        return Err(gone());
    }
    account.bus.queue_index(name).ok_or_else(gone)
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct CreateQueue {
    queue_name: Option<String>,
    attributes: Option<BTreeMap<String, String>>,
    #[serde(rename = "tags")]
    _tags: Option<BTreeMap<String, String>>,
}

pub fn create_queue(account: &mut Account, body: &[u8]) -> Result<Value, ApiError> {
    let req: CreateQueue = parse(body)?;
    let name = req
        .queue_name
        .ok_or_else(|| error("MissingParameter", "QueueName is required"))?;
    let valid = (1..=80).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if name.ends_with(".fifo") {
        return Err(error(
            "UnsupportedOperation",
            "The emulator's SQS serves standard queues only, not FIFO queues",
        ));
    }
    if !valid {
        return Err(error(
            "InvalidParameterValue",
            "Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length",
        ));
    }
    let attributes = req.attributes.unwrap_or_default();
    check_attributes(&attributes)?;
    if let Some(i) = account.bus.queue_index(&name) {
        // Idempotent with the same attributes, as SQS.
        return if account.bus.queues[i].attributes == attributes {
            Ok(json!({ "QueueUrl": url(account, &name) }))
        } else {
            Err(error(
                "QueueNameExists",
                "A queue already exists with the same name and a different value for attribute(s)",
            ))
        };
    }
    if account.bus.queues.len() >= MAX_QUEUES {
        return Err(error(
            "OverLimit",
            format!("The emulator holds at most {MAX_QUEUES} queues per region"),
        ));
    }
    let arn = format!(
        "arn:aws:sqs:{}:{}:{name}",
        account.base.region, account.base.account
    );
    account.bus.queues.push(SqsQueue {
        name: name.clone(),
        arn,
        attributes,
        created: account.now,
        modified: account.now,
        messages: Default::default(),
    });
    Ok(json!({ "QueueUrl": url(account, &name) }))
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct QueueName {
    queue_name: Option<String>,
    #[serde(rename = "QueueOwnerAWSAccountId")]
    owner: Option<String>,
}

pub fn get_queue_url(account: &mut Account, body: &[u8]) -> Result<Value, ApiError> {
    let req: QueueName = parse(body)?;
    let name = req
        .queue_name
        .ok_or_else(|| error("MissingParameter", "QueueName is required"))?;
    if req.owner.is_some_and(|o| o != account.base.account) {
        return Err(gone());
    }
    account.bus.queue_index(&name).ok_or_else(gone)?;
    Ok(json!({ "QueueUrl": url(account, &name) }))
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct QueueRequest {
    queue_url: Option<String>,
    attribute_names: Option<Vec<String>>,
    attributes: Option<BTreeMap<String, String>>,
}

fn queue_url(url: Option<String>) -> Result<String, ApiError> {
    url.ok_or_else(|| error("MissingParameter", "QueueUrl is required"))
}

pub fn get_queue_attributes(account: &mut Account, body: &[u8]) -> Result<Value, ApiError> {
    let req: QueueRequest = parse(body)?;
    let qi = queue_of(account, &queue_url(req.queue_url)?)?;
    let q = &account.bus.queues[qi];
    let now = Instant::now();
    let visible = q.messages.iter().filter(|m| m.visible_at <= now);
    let in_flight = q
        .messages
        .iter()
        .filter(|m| m.visible_at > now && m.receipt.is_some());
    let delayed = q
        .messages
        .iter()
        .filter(|m| m.visible_at > now && m.receipt.is_none());
    let mut all: BTreeMap<&str, String> = BTreeMap::new();
    all.insert("ApproximateNumberOfMessages", visible.count().to_string());
    all.insert(
        "ApproximateNumberOfMessagesNotVisible",
        in_flight.count().to_string(),
    );
    all.insert(
        "ApproximateNumberOfMessagesDelayed",
        delayed.count().to_string(),
    );
    all.insert("CreatedTimestamp", (q.created / 1000).to_string());
    all.insert("LastModifiedTimestamp", (q.modified / 1000).to_string());
    all.insert("QueueArn", q.arn.clone());
    all.insert("SqsManagedSseEnabled", "false".to_string());
    for &(name, default, _, _) in SETTABLE {
        all.insert(name, q.seconds(name, default).to_string());
    }
    if let Some(p) = q.attributes.get("Policy") {
        all.insert("Policy", p.clone());
    }
    let names = req.attribute_names.unwrap_or_default();
    let mut out = serde_json::Map::new();
    for name in &names {
        if name == "All" {
            for (k, v) in &all {
                out.insert((*k).to_string(), json!(v));
            }
        } else if let Some(v) = all.get(name.as_str()) {
            out.insert(name.clone(), json!(v));
        } else if name != "Policy" {
            return Err(error(
                "InvalidAttributeName",
                format!("Unknown Attribute {}.", quotatop_model::clean(name)),
            ));
        }
    }
    Ok(if out.is_empty() {
        json!({})
    } else {
        json!({ "Attributes": out })
    })
}

pub fn set_queue_attributes(account: &mut Account, body: &[u8]) -> Result<Value, ApiError> {
    let req: QueueRequest = parse(body)?;
    let qi = queue_of(account, &queue_url(req.queue_url)?)?;
    let attrs = req
        .attributes
        .ok_or_else(|| error("MissingParameter", "Attributes is required"))?;
    check_attributes(&attrs)?;
    let now = account.now;
    let q = &mut account.bus.queues[qi];
    q.attributes.extend(attrs);
    q.modified = now;
    Ok(json!({}))
}

pub fn delete_queue(account: &mut Account, body: &[u8]) -> Result<Value, ApiError> {
    let req: QueueRequest = parse(body)?;
    let qi = queue_of(account, &queue_url(req.queue_url)?)?;
    account.bus.remove_queue(qi);
    Ok(json!({}))
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Receive {
    queue_url: Option<String>,
    attribute_names: Option<Vec<String>>,
    message_system_attribute_names: Option<Vec<String>>,
    max_number_of_messages: Option<i64>,
    visibility_timeout: Option<i64>,
    wait_time_seconds: Option<i64>,
}

fn in_range(name: &str, v: Option<i64>, lo: i64, hi: i64) -> Result<Option<u64>, ApiError> {
    match v {
        None => Ok(None),
        Some(n) if (lo..=hi).contains(&n) => Ok(Some(n as u64)),
        Some(n) => Err(error(
            "InvalidParameterValue",
            format!("Value {n} for parameter {name} is invalid. Must be between {lo} and {hi}."),
        )),
    }
}

/// How long a ReceiveMessage may wait for a message (its `WaitTimeSeconds`, else the queue's
/// `ReceiveMessageWaitTimeSeconds`): the server long-polls [`receive_message`] that long.
pub fn receive_wait(account: &Account, body: &[u8]) -> Result<Duration, ApiError> {
    let req: Receive = parse(body)?;
    let qi = queue_of(account, &queue_url(req.queue_url)?)?;
    let wait = in_range(
        "WaitTimeSeconds",
        req.wait_time_seconds,
        0,
        MAX_WAIT_S as i64,
    )?;
    let q = &account.bus.queues[qi];
    Ok(Duration::from_secs(wait.unwrap_or_else(|| {
        q.seconds("ReceiveMessageWaitTimeSeconds", 0)
    })))
}

/// Returns up to `MaxNumberOfMessages` visible messages, oldest first, and hides each for the
/// visibility timeout with a new receipt handle. No wait here: [`receive_wait`] says how long
/// the server retries an empty answer.
pub fn receive_message(account: &mut Account, body: &[u8]) -> Result<Value, ApiError> {
    let req: Receive = parse(body)?;
    let qi = queue_of(account, &queue_url(req.queue_url)?)?;
    let max = in_range("MaxNumberOfMessages", req.max_number_of_messages, 1, 10)?.unwrap_or(1);
    let hide = in_range("VisibilityTimeout", req.visibility_timeout, 0, 43_200)?;
    in_range(
        "WaitTimeSeconds",
        req.wait_time_seconds,
        0,
        MAX_WAIT_S as i64,
    )?;
    let wanted: Vec<String> = req
        .attribute_names
        .into_iter()
        .chain(req.message_system_attribute_names)
        .flatten()
        .collect();
    let now = Instant::now();
    let sim_now = account.now;
    let mut receipts = Vec::new();
    let q = &account.bus.queues[qi];
    let hide = Duration::from_secs(hide.unwrap_or_else(|| q.seconds("VisibilityTimeout", 30)));
    let mut order: Vec<usize> = (0..q.messages.len())
        .filter(|&i| q.messages[i].visible_at <= now)
        .collect();
    order.sort_by_key(|&i| (q.messages[i].visible_at, q.messages[i].seq));
    order.truncate(max as usize);
    for _ in &order {
        receipts.push(account.bus.id());
    }
    let q = &mut account.bus.queues[qi];
    let mut out = Vec::new();
    for (i, receipt) in order.into_iter().zip(receipts) {
        let m = &mut q.messages[i];
        m.receives += 1;
        m.first_received.get_or_insert(sim_now);
        m.visible_at = now + hide;
        let handle = format!("{}#{}#{receipt}", m.seq, m.receives);
        m.receipt = Some(handle.clone());
        out.push(message_json(m, &handle, &wanted));
    }
    Ok(if out.is_empty() {
        json!({})
    } else {
        json!({ "Messages": out })
    })
}

fn message_json(m: &Message, handle: &str, wanted: &[String]) -> Value {
    let mut v = json!({
        "MessageId": m.id,
        "ReceiptHandle": handle,
        "MD5OfBody": format!("{:x}", Md5::digest(m.body.as_bytes())),
        "Body": m.body,
    });
    let all = [
        ("SentTimestamp", m.sent_at.to_string()),
        ("ApproximateReceiveCount", m.receives.to_string()),
        (
            "ApproximateFirstReceiveTimestamp",
            m.first_received.unwrap_or(m.sent_at).to_string(),
        ),
        ("SenderId", "AIDAEVENTBRIDGE".to_string()),
    ];
    let attrs: serde_json::Map<String, Value> = all
        .into_iter()
        .filter(|(k, _)| wanted.iter().any(|w| w == "All" || w == k))
        .map(|(k, v)| (k.to_string(), json!(v)))
        .collect();
    if !attrs.is_empty() {
        v["Attributes"] = Value::Object(attrs);
    }
    v
}

/// Where a receipt handle's message is, if the handle is well formed: `Ok(None)` for a message
/// already deleted or received again since (the handle is stale).
fn by_receipt(q: &SqsQueue, handle: &str) -> Result<Option<usize>, ApiError> {
    let seq: u64 = handle
        .split('#')
        .next()
        .and_then(|s| s.parse().ok())
        .filter(|_| handle.split('#').count() == 3)
        .ok_or_else(|| {
            error(
                "ReceiptHandleIsInvalid",
                format!(
                    "The input receipt handle \"{}\" is not a valid receipt handle.",
                    quotatop_model::clean(handle)
                ),
            )
        })?;
    Ok(q.messages
        .iter()
        .position(|m| m.seq == seq && m.receipt.as_deref() == Some(handle)))
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ByReceipt {
    queue_url: Option<String>,
    receipt_handle: Option<String>,
    visibility_timeout: Option<i64>,
}

fn receipt(r: Option<String>) -> Result<String, ApiError> {
    r.ok_or_else(|| error("MissingParameter", "ReceiptHandle is required"))
}

/// Deletes the message received with `handle`; a stale handle (the message received again
/// since) or a deleted message succeeds without deleting, as SQS documents.
fn delete_one(account: &mut Account, qi: usize, handle: &str) -> Result<(), ApiError> {
    if let Some(i) = by_receipt(&account.bus.queues[qi], handle)? {
        account.bus.remove_message(qi, i);
    }
    Ok(())
}

pub fn delete_message(account: &mut Account, body: &[u8]) -> Result<Value, ApiError> {
    let req: ByReceipt = parse(body)?;
    let qi = queue_of(account, &queue_url(req.queue_url)?)?;
    delete_one(account, qi, &receipt(req.receipt_handle)?)?;
    Ok(json!({}))
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct DeleteBatch {
    queue_url: Option<String>,
    entries: Option<Vec<BatchEntry>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct BatchEntry {
    id: Option<String>,
    receipt_handle: Option<String>,
}

pub fn delete_message_batch(account: &mut Account, body: &[u8]) -> Result<Value, ApiError> {
    let req: DeleteBatch = parse(body)?;
    let qi = queue_of(account, &queue_url(req.queue_url)?)?;
    let entries = req.entries.unwrap_or_default();
    if entries.is_empty() {
        return Err(error(
            "EmptyBatchRequest",
            "There should be at least one DeleteMessageBatchRequestEntry in the request.",
        ));
    }
    if entries.len() > 10 {
        return Err(error(
            "TooManyEntriesInBatchRequest",
            format!(
                "Maximum number of entries per request are 10. You have sent {}.",
                entries.len()
            ),
        ));
    }
    let mut ids: Vec<&str> = entries.iter().filter_map(|e| e.id.as_deref()).collect();
    ids.sort_unstable();
    ids.dedup();
    if ids.len() != entries.len() {
        return Err(error(
            "BatchEntryIdsNotDistinct",
            "Two or more batch entries in the request have the same Id (or none).",
        ));
    }
    let (mut ok, mut failed) = (Vec::new(), Vec::new());
    for e in entries {
        let id = e.id.unwrap_or_default();
        match receipt(e.receipt_handle).and_then(|h| delete_one(account, qi, &h)) {
            Ok(()) => ok.push(json!({ "Id": id })),
            Err(err) => failed.push(json!({
                "Id": id, "SenderFault": true, "Code": err.code(), "Message": err.to_string(),
            })),
        }
    }
    Ok(json!({ "Successful": ok, "Failed": failed }))
}

pub fn change_message_visibility(account: &mut Account, body: &[u8]) -> Result<Value, ApiError> {
    let req: ByReceipt = parse(body)?;
    let qi = queue_of(account, &queue_url(req.queue_url)?)?;
    let handle = receipt(req.receipt_handle)?;
    let hide = in_range("VisibilityTimeout", req.visibility_timeout, 0, 43_200)?
        .ok_or_else(|| error("MissingParameter", "VisibilityTimeout is required"))?;
    let q = &mut account.bus.queues[qi];
    let now = Instant::now();
    match by_receipt(q, &handle)? {
        Some(i) if q.messages[i].visible_at > now => {
            q.messages[i].visible_at = now + Duration::from_secs(hide);
            Ok(json!({}))
        }
        _ => Err(error(
            "MessageNotInflight",
            "The message referred to isn't in flight.",
        )),
    }
}
