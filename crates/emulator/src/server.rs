//! The HTTP side: routing `POST /v1/<op>` and `/v1/tags/{resourceArn}`, request ids, body limits,
//! fault injection, and a connection loop that can drop a connection without answering.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, Method, Request, header};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::account::{Accounts, signing_region};
use super::error::ApiError;
use super::faults::{Decision, FaultInjector};
use super::routes::{Route, logs_operation, operation};
use super::{auth, ops_logs, ops_s3, ops_sts, ops_tags};

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

/// Closes the connection a request came in on, without a response.
#[derive(Clone)]
struct ConnKill(Arc<Notify>);

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
/// scope, else `X-Amz-Target` (CloudWatch Logs' `Logs_20140328.*`), else the path (a GET or
/// HEAD outside `/v1/` is S3, path-style).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Service {
    Logs,
    S3,
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
    match scope.as_deref() {
        Some("logs") => Service::Logs,
        Some("s3") => Service::S3,
        Some(_) => Service::Other,
        None if target.starts_with("Logs_20140328.") => Service::Logs,
        None => {
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
        Service::Other => next.run(request).await,
    }
}

/// `POST /` with `X-Amz-Target: Logs_20140328.<Operation>` (JSON 1.1).
async fn logs_handler(app: &App, request: Request<Body>) -> Response {
    let kill = request.extensions().get::<ConnKill>().cloned();
    let activity = request.extensions().get::<ConnActivity>().cloned();
    let _busy = InFlight::new(activity.as_ref());
    let result = async {
        let target = request
            .headers()
            .get("x-amz-target")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let op = target
            .strip_prefix("Logs_20140328.")
            .unwrap_or("")
            .to_ascii_lowercase();
        let Some(f) = logs_operation(&op) else {
            return Err(ApiError::UnknownOperation(format!(
                "The emulator serves no CloudWatch Logs operation {:?} (X-Amz-Target); it serves DescribeLogStreams, GetLogEvents and FilterLogEvents",
                quotatop_model::clean(target)
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

/// S3, path-style: ListObjectsV2, HeadObject, GetObject.
async fn s3_handler(app: &App, request: Request<Body>) -> Response {
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

/// Whether the answer of a handled request is to be lost (see [`lose_answer`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    Send,
    Lose,
}

/// Applies the operation's faults; `Err` is the response to send instead of handling it.
async fn inject(app: &App, op: &str, kill: Option<&ConnKill>) -> Result<Answer, ApiError> {
    let (delay, decision) = app.faults.decide(op);
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    match decision {
        Decision::Proceed => Ok(Answer::Send),
        Decision::LoseAnswer => Ok(Answer::Lose),
        Decision::Throttle => Err(ApiError::Throttled),
        Decision::ServerError => Err(ApiError::Server(
            "Injected fault: internal server error".into(),
        )),
        Decision::AccessDenied => Err(ApiError::AccessDenied(format!(
            "Injected fault: User: arn:aws:iam::{}:user/test is not authorized to perform: batch:{op}",
            app.account
        ))),
        Decision::ExpiredToken => Err(ApiError::ExpiredToken(
            "Injected fault: The security token included in the request is expired".into(),
        )),
        Decision::Drop => match kill {
            Some(kill) => {
                kill.0.notify_one();
                // The connection task drops this request with the connection.
                std::future::pending::<()>().await;
                Ok(Answer::Send)
            }
            None => Err(ApiError::Server(
                "Injected fault: connection dropped".into(),
            )),
        },
    }
}

/// The request has been handled (the change made); its answer is lost: the connection closes
/// without it (a 500 where the connection cannot be closed).
async fn lose_answer(kill: Option<&ConnKill>) -> Response {
    match kill {
        Some(kill) => {
            kill.0.notify_one();
            std::future::pending::<()>().await;
            ApiError::Server("Injected fault: answer lost".into()).into_response()
        }
        None => ApiError::Server("Injected fault: answer lost".into()).into_response(),
    }
}

/// Bodies up to this size are read (and thrown away) even when too large, so that the client
/// has sent everything before it reads the 400: closing a socket with unread data resets the
/// connection and can destroy the response before the client sees it.
const DRAIN_LIMIT: usize = 1024 * 1024;

/// Reads the whole body, refusing more than [`MAX_BODY`] bytes with a ClientException. At most
/// `MAX_BODY` bytes are ever held: the rest of a larger body (up to [`DRAIN_LIMIT`]) is read and
/// dropped piece by piece. A body that does not arrive within `timeout` is refused too.
async fn read_body(headers: &HeaderMap, body: Body, timeout: Duration) -> Result<Bytes, ApiError> {
    use futures_util::StreamExt;
    let too_big = || ApiError::client(format!("Request body is larger than {MAX_BODY} bytes"));
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > DRAIN_LIMIT as u64) {
        return Err(too_big());
    }
    let read = async {
        let mut stream = body.into_data_stream();
        let mut kept: Vec<u8> = Vec::new();
        let mut seen = 0usize;
        while let Some(chunk) = stream.next().await {
            let chunk =
                chunk.map_err(|e| ApiError::client(format!("Cannot read request body: {e}")))?;
            seen += chunk.len();
            if seen > DRAIN_LIMIT {
                return Err(too_big());
            }
            if seen <= MAX_BODY {
                kept.extend_from_slice(&chunk);
            } else if !kept.is_empty() {
                // Too big: stop keeping anything, read on only to drain.
                kept = Vec::new();
            }
        }
        if seen > MAX_BODY {
            Err(too_big())
        } else {
            Ok(Bytes::from(kept))
        }
    };
    match tokio::time::timeout(timeout, read).await {
        Ok(result) => result,
        Err(_) => Err(ApiError::client(format!(
            "Request body not received within {} s",
            timeout.as_secs()
        ))),
    }
}

/// Marks a connection busy while one of its requests is being handled, so the idle timeout
/// never closes a connection whose answer is still being worked out (e.g. an injected delay).
#[derive(Clone)]
struct ConnActivity(Arc<Activity>);

struct Activity {
    in_flight: std::sync::atomic::AtomicUsize,
    /// Milliseconds since `epoch` of the last byte read or written.
    last: AtomicU64,
    epoch: std::time::Instant,
}

impl Activity {
    fn new() -> Self {
        Self {
            in_flight: std::sync::atomic::AtomicUsize::new(0),
            last: AtomicU64::new(0),
            epoch: std::time::Instant::now(),
        }
    }

    fn touch(&self) {
        let ms = self.epoch.elapsed().as_millis() as u64;
        self.last.store(ms, Ordering::Relaxed);
    }

    /// How long the connection has been idle (zero while a request is in flight).
    fn idle_for(&self) -> Duration {
        if self.in_flight.load(Ordering::Relaxed) > 0 {
            return Duration::ZERO;
        }
        let now = self.epoch.elapsed().as_millis() as u64;
        Duration::from_millis(now.saturating_sub(self.last.load(Ordering::Relaxed)))
    }
}

struct InFlight(Option<Arc<Activity>>);

impl InFlight {
    fn new(a: Option<&ConnActivity>) -> Self {
        let a = a.map(|a| a.0.clone());
        if let Some(a) = &a {
            a.in_flight.fetch_add(1, Ordering::Relaxed);
        }
        Self(a)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Some(a) = &self.0 {
            a.touch();
            a.in_flight.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// A socket that notes when bytes last moved.
struct Watched<T> {
    inner: T,
    activity: Arc<Activity>,
}

impl<T: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for Watched<T> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.touch();
        }
        r
    }
}

impl<T: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for Watched<T> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let r = std::pin::Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(r, std::task::Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        r
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Resolves once the connection has been idle for `limit`.
async fn idle(activity: &Activity, limit: Duration) {
    loop {
        let idle = activity.idle_for();
        if idle >= limit {
            return;
        }
        tokio::time::sleep(limit - idle).await;
    }
}

/// The region a request is for: its SigV4 signing region, else the home region.
fn region_of(headers: &axum::http::HeaderMap) -> Option<String> {
    let auth = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    signing_region(auth).map(str::to_string)
}

async fn op_handler(
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
        let hold = app.faults.hold(&op);
        if hold.is_zero() {
            return Ok((carry_out(&app, handler, region.as_deref(), &body)?, answer));
        }
        // Received in full: held, then carried out in a task of its own, which the client
        // going away (this handler dropped with its connection) does not cancel.
        let held = Arc::clone(&app);
        let task = tokio::spawn(async move {
            tokio::time::sleep(hold).await;
            carry_out(&held, handler, region.as_deref(), &body)
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

/// Carries out the operation `handler` with `body` in `region`'s world: the response, or the
/// error that stopped it before the operation ran.
fn carry_out(
    app: &App,
    handler: Route,
    region: Option<&str>,
    body: &Bytes,
) -> Result<Result<Response, ApiError>, ApiError> {
    let mut accounts = lock(&app.world)?;
    let account = accounts.region(region)?;
    Ok(match handler {
        Route::Post(f) => f(account, body),
        Route::Queue(key, check, f) => {
            check(body)?;
            f(account.route(key, body)?, body)
        }
        Route::Tags | Route::Logs(_) | Route::S3 => Err(ApiError::Server(
            "not an operation on /v1/ (tags, Logs and S3 have their own routes)".into(),
        )),
    })
}

/// `POST /`: the awsQuery protocol, which here serves STS `GetCallerIdentity` only.
async fn sts_handler(
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

async fn tags_handler(
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

/// Serves HTTP/1.1 on `listener` until `shutdown` is cancelled. Open
/// connections finish their requests (graceful), for at most five seconds. `limits` bounds
/// what each connection may hold (see [`ServerLimits`]).
pub(crate) async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ServerLimits,
    shutdown: CancellationToken,
) {
    let mut conns = JoinSet::new();
    let slots = Arc::new(tokio::sync::Semaphore::new(limits.max_connections.max(1)));
    loop {
        // At the cap, stop accepting: new clients wait in the kernel's backlog.
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => break,
            },
            _ = shutdown.cancelled() => break,
        };
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else {
                    // Out of file descriptors and the like: back off instead of spinning.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                };
                let kill = Arc::new(Notify::new());
                let activity = Arc::new(Activity::new());
                let service = TowerToHyperService::new(
                    router
                        .clone()
                        .layer(axum::Extension(ConnKill(kill.clone())))
                        .layer(axum::Extension(ConnActivity(activity.clone()))),
                );
                let stop = shutdown.clone();
                let io = TokioIo::new(Watched { inner: stream, activity: activity.clone() });
                conns.spawn(async move {
                    let _slot = slot;
                    let conn = hyper::server::conn::http1::Builder::new()
                        .timer(hyper_util::rt::TokioTimer::new())
                        .header_read_timeout(limits.header_timeout)
                        // hyper reads ahead into a buffer of up to ~400 KiB per connection by
                        // default; 64 KiB keeps 128 connections within a few MiB.
                        .max_buf_size(64 * 1024)
                        .serve_connection(io, service);
                    tokio::pin!(conn);
                    tokio::select! {
                        _ = conn.as_mut() => {}
                        // Dropping the connection closes the socket without a response.
                        _ = kill.notified() => {}
                        _ = idle(&activity, limits.idle_timeout) => {}
                        _ = stop.cancelled() => {
                            conn.as_mut().graceful_shutdown();
                            tokio::select! {
                                _ = conn.as_mut() => {}
                                _ = kill.notified() => {}
                            }
                        }
                    }
                });
            }
            _ = shutdown.cancelled() => break,
        }
        while conns.try_join_next().is_some() {}
    }
    let drain = async { while conns.join_next().await.is_some() {} };
    if tokio::time::timeout(Duration::from_secs(5), drain)
        .await
        .is_err()
    {
        conns.abort_all();
    }
}
