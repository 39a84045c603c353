//! The handlers of each protocol: Batch's `POST /v1/<op>` and its tags routes, CloudWatch Logs
//! (JSON 1.1), EventBridge, SQS and CloudTrail (JSON 1.1 / 1.0), S3 (path-style) and STS
//! (awsQuery).

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderValue, Method, Request, header};
use axum::response::{IntoResponse, Response};

use super::super::bus_events::Caller;
use super::super::error::ApiError;
use super::super::routes::{
    JsonService, Route, json_operation, json_operations, logs_operation, operation,
};
use super::super::{ops_logs, ops_s3, ops_sqs, ops_sts, ops_tags};
use super::body::read_body;
use super::conn::{ConnActivity, ConnKill, InFlight};
use super::inject::{Answer, inject, lose_answer};
use super::{App, lock, region_of, unknown_path};

/// A JSON-protocol request's `X-Amz-Target` (cleaned, for messages) and the operation after
/// `prefix`, lowercase as routed (empty when the target lacks the prefix).
fn target_op(request: &Request<Body>, prefixes: &[&str]) -> (String, String) {
    let target = request
        .headers()
        .get("x-amz-target")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let op = prefixes
        .iter()
        .find_map(|p| target.strip_prefix(p))
        .unwrap_or("")
        .to_ascii_lowercase();
    (quotatop_model::clean(target).into_owned(), op)
}

/// `POST /` with `X-Amz-Target: Logs_20140328.<Operation>` (JSON 1.1).
pub(super) async fn logs_handler(app: &App, request: Request<Body>) -> Response {
    let kill = request.extensions().get::<ConnKill>().cloned();
    let activity = request.extensions().get::<ConnActivity>().cloned();
    let _busy = InFlight::new(activity.as_ref());
    let result = async {
        let (target, op) = target_op(&request, &["Logs_20140328."]);
        let Some(f) = logs_operation(&op) else {
            return Err(ApiError::UnknownOperation(format!(
                "The emulator serves no CloudWatch Logs operation {target:?} (X-Amz-Target); it serves DescribeLogStreams, GetLogEvents and FilterLogEvents"
            )));
        };
        if request.method() != Method::POST {
            return Err(ApiError::client("CloudWatch Logs operations take POST /"));
        }
        let answer = inject(app, &op, kill.as_ref()).await?;
        let (parts, body) = request.into_parts();
        let body = read_body(&parts.headers, body, app.body_timeout()).await?;
        app.authenticate_for(&parts.headers, "logs")?;
        let region = region_of(&parts.headers);
        let mut accounts = lock(&app.world)?;
        let account = accounts.region(region.as_deref())?;
        Ok((f(account, &body), answer))
    }
    .await;
    let result = result.map_err(ops_logs::logs_error);
    match result {
        Ok((_, Answer::Lose)) => lose_answer(kill.as_ref()).await,
        Ok((handled, Answer::Send)) => handled
            .map_err(ops_logs::logs_error)
            .unwrap_or_else(IntoResponse::into_response),
        Err(e) => e.into_response(),
    }
}

/// How often a long poll (ReceiveMessage's wait) looks for a message again (real time).
const LONG_POLL_EVERY: std::time::Duration = std::time::Duration::from_millis(20);

/// `POST /` with EventBridge's, SQS's or CloudTrail's `X-Amz-Target`. A ReceiveMessage that
/// finds nothing is tried again until its wait ends, the world unlocked in between.
pub(super) async fn json_handler(
    app: &App,
    request: Request<Body>,
    service: JsonService,
) -> Response {
    let kill = request.extensions().get::<ConnKill>().cloned();
    let activity = request.extensions().get::<ConnActivity>().cloned();
    let _busy = InFlight::new(activity.as_ref());
    let result = async {
        let (target, op) = target_op(&request, service.target_prefixes());
        let Some(f) = json_operation(service, &op) else {
            return Err(ApiError::UnknownOperation(format!(
                "The emulator serves no {} operation {target:?} (X-Amz-Target); it serves {}",
                service.signing_name(),
                json_operations(service).join(", ")
            )));
        };
        if request.method() != Method::POST {
            return Err(ApiError::client("JSON-protocol operations take POST /"));
        }
        let answer = inject(app, &op, kill.as_ref()).await?;
        let (parts, body) = request.into_parts();
        let body = read_body(&parts.headers, body, app.body_timeout()).await?;
        app.authenticate_for(&parts.headers, service.signing_name())?;
        let region = region_of(&parts.headers);
        let deadline = {
            let mut accounts = lock(&app.world)?;
            let account = accounts.region(region.as_deref())?;
            match op.as_str() {
                "receivemessage" => {
                    Some(std::time::Instant::now() + ops_sqs::receive_wait(account, &body)?)
                }
                _ => None,
            }
        };
        loop {
            let handled = {
                let mut accounts = lock(&app.world)?;
                let account = accounts.region(region.as_deref())?;
                f(account, &body)
            };
            let empty = matches!(&handled, Ok(v) if v.get("Messages").is_none());
            match deadline {
                Some(d) if empty && std::time::Instant::now() < d => {
                    tokio::time::sleep(LONG_POLL_EVERY).await;
                }
                _ => return Ok((handled, answer)),
            }
        }
    }
    .await;
    let mut response = match result.map_err(|e| service.error(e)) {
        Ok((_, Answer::Lose)) => return lose_answer(kill.as_ref()).await,
        Ok((Ok(v), Answer::Send)) => axum::Json(v).into_response(),
        Ok((Err(e), Answer::Send)) | Err(e) if service == JsonService::Sqs => {
            ops_sqs::error_response(e)
        }
        Ok((Err(e), Answer::Send)) => service.error(e).into_response(),
        Err(e) => e.into_response(),
    };
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(service.content_type()),
    );
    response
}

/// S3, path-style: ListObjectsV2, HeadObject, GetObject.
pub(super) async fn s3_handler(app: &App, request: Request<Body>) -> Response {
    let kill = request.extensions().get::<ConnKill>().cloned();
    let activity = request.extensions().get::<ConnActivity>().cloned();
    let _busy = InFlight::new(activity.as_ref());
    let head = request.method() == Method::HEAD;
    let path = request.uri().path().to_string();
    let query = request.uri().query().unwrap_or("").to_string();
    let method = request.method().clone();
    let region = region_of(request.headers());
    // S3 refuses an unsigned request to a private bucket: a header signature or a presigned
    // query (its shape only, as for Batch).
    let signed = !app.auth_check
        || request.headers().contains_key(header::AUTHORIZATION)
        || query.contains("X-Amz-Credential=");
    drop(request);
    let result = async {
        if !signed {
            return Err(ApiError::Service {
                status: 403,
                code: "AccessDenied",
                message: "Access Denied (the request is not signed: sign it with AWS Signature Version 4, or run the emulator with --no-auth-check)".into(),
            });
        }
        let Some(op) = ops_s3::operation(&method, &path, &query) else {
            return Err(ApiError::Service {
                status: 501,
                code: "NotImplemented",
                message: format!(
                    "The emulator's S3 serves ListObjectsV2 (GET /<bucket>?list-type=2), HeadObject and GetObject (path-style), not {} {}",
                    method,
                    quotatop_model::clean(&path)
                ),
            });
        };
        let answer = inject(app, op, kill.as_ref()).await?;
        let mut accounts = lock(&app.world)?;
        let account = accounts.region(region.as_deref())?;
        Ok((ops_s3::handle(account, op, &path, &query), answer))
    }
    .await;
    let request_id = app.request_id();
    let mut response = match result {
        Ok((_, Answer::Lose)) => lose_answer(kill.as_ref()).await,
        Ok((Ok(r), Answer::Send)) => r,
        Ok((Err(e), Answer::Send)) | Err(e) => ops_s3::error_response(&e, &request_id, head),
    };
    if let Ok(v) = HeaderValue::from_str(&request_id) {
        response.headers_mut().insert("x-amz-request-id", v);
    }
    response
}

pub(super) async fn op_handler(
    State(app): State<Arc<App>>,
    path: Result<Path<String>, axum::extract::rejection::PathRejection>,
    kill: Option<axum::Extension<ConnKill>>,
    activity: Option<axum::Extension<ConnActivity>>,
    request: Request<Body>,
) -> Response {
    let _busy = InFlight::new(activity.as_deref());
    let result = async {
        let Path(op) = path.map_err(|e| ApiError::UnknownOperation(format!("Bad path: {e}")))?;
        let Some(handler) = operation(&op) else {
            return Err(ApiError::UnknownOperation(format!(
                "No such operation: {} /v1/{op}",
                request.method()
            )));
        };
        let answer = inject(&app, &op, kill.as_deref()).await?;
        if request.method() != Method::POST {
            return Err(ApiError::client(format!(
                "Operation /v1/{op} takes POST, not {}",
                request.method()
            )));
        }
        let (parts, body) = request.into_parts();
        let body = read_body(&parts.headers, body, app.body_timeout()).await?;
        app.authenticate(&parts.headers)?;
        let region = region_of(&parts.headers);
        let caller = Caller {
            key: ops_sts::access_key_id(&parts.headers).unwrap_or_default(),
            user_agent: parts
                .headers
                .get(header::USER_AGENT)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string(),
        };
        let hold = app.faults.hold(&op);
        if hold.is_zero() {
            return Ok((
                carry_out(&app, handler, region.as_deref(), &body, (&op, &caller))?,
                answer,
            ));
        }
        // Received in full: held, then carried out in a task of its own, which the client
        // going away (this handler dropped with its connection) does not cancel.
        let held = Arc::clone(&app);
        let task = tokio::spawn(async move {
            tokio::time::sleep(hold).await;
            carry_out(&held, handler, region.as_deref(), &body, (&op, &caller))
        });
        match task.await {
            Ok(handled) => Ok((handled?, answer)),
            Err(e) => Err(ApiError::Server(format!("the held call failed: {e}"))),
        }
    }
    .await;
    match result {
        Ok((_, Answer::Lose)) => lose_answer(kill.as_deref()).await,
        Ok((handled, Answer::Send)) => handled.unwrap_or_else(IntoResponse::into_response),
        Err(e) => e.into_response(),
    }
}

/// Carries out the operation `handler` (`op`, called by `caller`) with `body` in `region`'s
/// world: the response, or the error that stopped it before the operation ran. A call that
/// succeeded is recorded for CloudTrail and the events it caused are published.
fn carry_out(
    app: &App,
    handler: Route,
    region: Option<&str>,
    body: &Bytes,
    (op, caller): (&str, &Caller),
) -> Result<Result<Response, ApiError>, ApiError> {
    let mut accounts = lock(&app.world)?;
    let account = accounts.region(region)?;
    let handled = match handler {
        Route::Post(f) => f(account, body),
        Route::Queue(key, check, f) => {
            check(body)?;
            f(account.route(key, body)?, body)
        }
        Route::Tags | Route::Logs(_) | Route::S3 | Route::Json(..) => Err(ApiError::Server(
            "not an operation on /v1/ (tags, Logs, S3 and the JSON services have their own routes)"
                .into(),
        )),
    };
    let mut handled = handled;
    if let Ok(r) = &mut handled
        && r.status().is_success()
    {
        // The answer's request id is the CloudTrail record's `requestID`, as AWS's are: what
        // ties a call to the caller's own record of its answer.
        let request_id = app.request_id();
        if let Ok(v) = axum::http::HeaderValue::from_str(&request_id) {
            r.headers_mut().insert("x-amzn-RequestId", v);
        }
        account.record_call(op, caller, body, request_id);
    }
    account.publish_pending();
    Ok(handled)
}

/// `POST /`: the awsQuery protocol, which here serves STS `GetCallerIdentity` only.
pub(super) async fn sts_handler(
    State(app): State<Arc<App>>,
    activity: Option<axum::Extension<ConnActivity>>,
    request: Request<Body>,
) -> Response {
    let _busy = InFlight::new(activity.as_deref());
    if request.method() != Method::POST {
        return unknown_path(request.method().clone(), request.uri().clone()).await;
    }
    let (parts, body) = request.into_parts();
    match read_body(&parts.headers, body, app.body_timeout()).await {
        Ok(body) => ops_sts::handle(
            &parts.headers,
            &body,
            &app.request_id(),
            &app.account,
            app.auth_check,
        ),
        Err(e) => e.into_response(),
    }
}

pub(super) async fn tags_handler(
    State(app): State<Arc<App>>,
    path: Result<Path<String>, axum::extract::rejection::PathRejection>,
    RawQuery(query): RawQuery,
    kill: Option<axum::Extension<ConnKill>>,
    activity: Option<axum::Extension<ConnActivity>>,
    request: Request<Body>,
) -> Response {
    let _busy = InFlight::new(activity.as_deref());
    let result = async {
        let op = match *request.method() {
            Method::GET => "listtagsforresource",
            Method::POST => "tagresource",
            Method::DELETE => "untagresource",
            ref other => {
                return Err(ApiError::UnknownOperation(format!(
                    "No such operation: {other} /v1/tags/…"
                )));
            }
        };
        let answer = inject(&app, op, kill.as_deref()).await?;
        let Path(arn) =
            path.map_err(|e| ApiError::client(format!("Invalid resourceArn in path: {e}")))?;
        let (parts, body) = request.into_parts();
        let body = read_body(&parts.headers, body, app.body_timeout()).await?;
        app.authenticate(&parts.headers)?;
        let region = region_of(&parts.headers);
        let mut accounts = lock(&app.world)?;
        let world = accounts.region(region.as_deref())?;
        let handled = match op {
            "listtagsforresource" => ops_tags::list(world, &arn),
            "tagresource" => ops_tags::tag(world, &arn, &body),
            _ => {
                let keys: Vec<String> =
                    form_urlencoded::parse(query.unwrap_or_default().as_bytes())
                        .filter(|(k, _)| k == "tagKeys")
                        .map(|(_, v)| v.into_owned())
                        .collect();
                ops_tags::untag(world, &arn, &keys)
            }
        };
        Ok((handled, answer))
    }
    .await;
    match result {
        Ok((_, Answer::Lose)) => lose_answer(kill.as_deref()).await,
        Ok((handled, Answer::Send)) => handled.unwrap_or_else(IntoResponse::into_response),
        Err(e) => e.into_response(),
    }
}
