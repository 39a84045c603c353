//! The HTTP side: routing `POST /v1/<op>` and `/v1/tags/{resourceArn}`, request ids, body limits,
//! fault injection, and a connection loop that can drop a connection without answering.
//!
//! This file holds the limits, the shared [`App`] state and the routing (which service a
//! request is for); the handlers of each protocol are in `handlers`, the injected faults' answers
//! in `inject`, body reading in `body`, and the connection loop in `conn`.

mod body;
mod conn;
mod handlers;
mod inject;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, Request, header};
use axum::response::{IntoResponse, Response};
use axum::routing::any;

use super::account::{Accounts, signing_region};
use super::auth;
use super::error::ApiError;
use super::faults::FaultInjector;
use super::routes::JsonService;
use handlers::{json_handler, logs_handler, op_handler, s3_handler, sts_handler, tags_handler};

pub(crate) use conn::serve;

/// Largest request body read (SubmitServiceJob, the largest request, is limited to 30 KiB).
pub const MAX_BODY: usize = 64 * 1024;

/// What one client may hold of the emulator: the timeouts that close a slow or idle connection
/// and the caps that bound memory. With the defaults, request bodies held in memory are at
/// most `max_connections × MAX_BODY` (8 MiB): a larger body is read and thrown away in
/// pieces, never buffered whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerLimits {
    /// Connections served at once; further clients wait in the listen backlog.
    pub max_connections: usize,
    /// A request's headers must arrive within this long.
    pub header_timeout: Duration,
    /// A request's body must arrive within this long of its headers.
    pub body_timeout: Duration,
    /// A connection with no request in flight and no bytes moving for this long is closed.
    pub idle_timeout: Duration,
}

impl Default for ServerLimits {
    fn default() -> Self {
        Self {
            max_connections: 128,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(60),
        }
    }
}
pub(crate) struct App {
    pub world: Arc<Mutex<Accounts>>,
    pub faults: Arc<FaultInjector>,
    requests: AtomicU64,
    body_timeout: Duration,
    /// Mixed into request ids (0: the same ids every run).
    request_salt: u64,
    /// The account id in ARNs and STS answers.
    pub account: String,
    /// Whether requests must carry a SigV4-shaped signature (`auth.rs`).
    auth_check: bool,
}

impl App {
    pub fn new(
        world: Arc<Mutex<Accounts>>,
        faults: Arc<FaultInjector>,
        body_timeout: Duration,
        request_salt: u64,
        account: String,
        auth_check: bool,
    ) -> Self {
        Self {
            world,
            faults,
            requests: AtomicU64::new(0),
            body_timeout,
            request_salt,
            account,
            auth_check,
        }
    }

    /// Refuses a Batch request not signed for Batch (unless the check is off).
    fn authenticate(&self, headers: &HeaderMap) -> Result<(), ApiError> {
        self.authenticate_for(headers, "batch")
    }

    /// Refuses a JSON-protocol request (Batch, CloudWatch Logs) not signed for `service`.
    fn authenticate_for(&self, headers: &HeaderMap, service: &str) -> Result<(), ApiError> {
        if !self.auth_check {
            return Ok(());
        }
        auth::check(headers, service)
            .map(|_| ())
            .map_err(|e| ApiError::Unauthenticated {
                code: e.code(true),
                message: e.message(service),
            })
    }

    fn body_timeout(&self) -> Duration {
        self.body_timeout
    }

    fn request_id(&self) -> String {
        let n = self.requests.fetch_add(1, Ordering::Relaxed);
        let mut rng = quotatop_engine::Rng::new((n ^ 0x5151_7a7a).wrapping_add(self.request_salt));
        rng.uuid()
    }
}

pub(crate) fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/v1/tags/{*arn}", any(tags_handler))
        .route("/v1/{op}", any(op_handler))
        .route("/", any(sts_handler))
        .fallback(unknown_path)
        .layer(axum::middleware::from_fn_with_state(
            app.clone(),
            by_service,
        ))
        .layer(axum::middleware::map_response_with_state(
            app.clone(),
            add_request_id,
        ))
        .with_state(app)
}

/// The service a request is for, told apart as AWS does: the service in its SigV4 credential
/// scope, else `X-Amz-Target` (CloudWatch Logs' `Logs_20140328.*`, EventBridge's, SQS's and
/// CloudTrail's prefixes), else the path (a GET or
/// HEAD outside `/v1/` is S3, path-style).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Service {
    Logs,
    S3,
    /// EventBridge, SQS, CloudTrail.
    Json(JsonService),
    /// Batch or STS: routed by path.
    Other,
}

fn service_of(request: &Request<Body>) -> Service {
    let headers = request.headers();
    let scope = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|a| a.split("Credential=").nth(1))
        .map(|c| c.split(['/', ',']).nth(3).unwrap_or("").trim().to_string())
        .or_else(|| {
            let query = request.uri().query()?;
            form_urlencoded::parse(query.as_bytes())
                .find(|(k, _)| k == "X-Amz-Credential")
                .and_then(|(_, v)| v.split('/').nth(3).map(str::to_string))
        });
    let target = headers
        .get("x-amz-target")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    // Batch's REST paths are Batch's whatever the signature names: a request under /v1/
    // signed for another service is refused there, as AWS's Batch endpoint refuses it.
    if request.uri().path().starts_with("/v1/") {
        return Service::Other;
    }
    let json = |pick: &dyn Fn(JsonService) -> bool| {
        JsonService::ALL
            .into_iter()
            .find(|&s| pick(s))
            .map(Service::Json)
    };
    match scope.as_deref() {
        Some("logs") => Service::Logs,
        Some("s3") => Service::S3,
        Some(name) => json(&|s| s.signing_name() == name).unwrap_or(Service::Other),
        None if target.starts_with("Logs_20140328.") => Service::Logs,
        None => {
            if let Some(s) = json(&|s| target.starts_with(s.target_prefix())) {
                return s;
            }
            let path = request.uri().path();
            let s3_like = matches!(*request.method(), Method::GET | Method::HEAD)
                && path != "/"
                && !path.starts_with("/v1/");
            if s3_like { Service::S3 } else { Service::Other }
        }
    }
}

/// Serves CloudWatch Logs and S3 requests itself; hands the rest to the Batch/STS routes.
async fn by_service(
    State(app): State<Arc<App>>,
    request: Request<Body>,
    next: axum::middleware::Next,
) -> Response {
    match service_of(&request) {
        Service::Logs => logs_handler(&app, request).await,
        Service::S3 => s3_handler(&app, request).await,
        Service::Json(service) => json_handler(&app, request, service).await,
        Service::Other => next.run(request).await,
    }
}

async fn add_request_id(State(app): State<Arc<App>>, mut response: Response) -> Response {
    if response.headers().contains_key("x-amzn-RequestId") {
        return response;
    }
    if let Ok(v) = HeaderValue::from_str(&app.request_id()) {
        response.headers_mut().insert("x-amzn-RequestId", v);
    }
    response
}

async fn unknown_path(method: Method, uri: axum::http::Uri) -> Response {
    ApiError::UnknownOperation(format!("No such operation: {method} {}", uri.path()))
        .into_response()
}

fn lock(world: &Mutex<Accounts>) -> Result<MutexGuard<'_, Accounts>, ApiError> {
    world
        .lock()
        .map_err(|_| ApiError::Server("emulator state is poisoned by an earlier panic".into()))
}

/// The region a request is for: its SigV4 signing region, else the home region.
fn region_of(headers: &axum::http::HeaderMap) -> Option<String> {
    let auth = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    signing_region(auth).map(str::to_string)
}
