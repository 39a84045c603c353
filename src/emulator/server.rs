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
use tokio::sync::{Notify, watch};
use tokio::task::JoinSet;

use super::error::ApiError;
use super::faults::{Decision, FaultInjector, OPERATIONS};
use super::state::World;
use super::{ops_jobs, ops_list_jobs, ops_queue, ops_resources, ops_shares, ops_tags};

/// Largest request body read (SubmitServiceJob, the largest request, is limited to 30 KiB).
pub const MAX_BODY: usize = 64 * 1024;

pub(crate) struct App {
    pub world: Arc<Mutex<World>>,
    pub faults: Arc<FaultInjector>,
    requests: AtomicU64,
}

impl App {
    pub fn new(world: Arc<Mutex<World>>, faults: Arc<FaultInjector>) -> Self {
        Self {
            world,
            faults,
            requests: AtomicU64::new(0),
        }
    }

    fn request_id(&self) -> String {
        let n = self.requests.fetch_add(1, Ordering::Relaxed);
        let mut rng = crate::engine::Rng::new(n ^ 0x5151_7a7a);
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
        .fallback(unknown_path)
        .layer(axum::middleware::map_response_with_state(
            app.clone(),
            add_request_id,
        ))
        .with_state(app)
}

async fn add_request_id(State(app): State<Arc<App>>, mut response: Response) -> Response {
    if let Ok(v) = HeaderValue::from_str(&app.request_id()) {
        response.headers_mut().insert("x-amzn-RequestId", v);
    }
    response
}

async fn unknown_path(method: Method, uri: axum::http::Uri) -> Response {
    ApiError::UnknownOperation(format!("No such operation: {method} {}", uri.path()))
        .into_response()
}

fn lock(world: &Mutex<World>) -> Result<MutexGuard<'_, World>, ApiError> {
    world
        .lock()
        .map_err(|_| ApiError::Server("emulator state is poisoned by an earlier panic".into()))
}

/// Applies the operation's faults; `Err` is the response to send instead of handling it.
async fn inject(app: &App, op: &str, kill: Option<&ConnKill>) -> Result<(), ApiError> {
    let (delay, decision) = app.faults.decide(op);
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    match decision {
        Decision::Proceed => Ok(()),
        Decision::Throttle => Err(ApiError::Throttled),
        Decision::ServerError => Err(ApiError::Server(
            "Injected fault: internal server error".into(),
        )),
        Decision::Drop => match kill {
            Some(kill) => {
                kill.0.notify_one();
                // The connection task drops this request with the connection.
                std::future::pending::<()>().await;
                Ok(())
            }
            None => Err(ApiError::Server(
                "Injected fault: connection dropped".into(),
            )),
        },
    }
}

/// Bodies up to this size are read (and thrown away) even when too large, so that the client
/// has sent everything before it reads the 400: closing a socket with unread data resets the
/// connection and can destroy the response before the client sees it.
const DRAIN_LIMIT: usize = 1024 * 1024;

/// Reads the whole body, refusing more than [`MAX_BODY`] bytes with a ClientException.
async fn read_body(headers: &HeaderMap, body: Body) -> Result<Bytes, ApiError> {
    let too_big = || ApiError::client(format!("Request body is larger than {MAX_BODY} bytes"));
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > DRAIN_LIMIT as u64) {
        return Err(too_big());
    }
    match axum::body::to_bytes(body, DRAIN_LIMIT).await {
        Ok(bytes) if bytes.len() > MAX_BODY => Err(too_big()),
        Ok(bytes) => Ok(bytes),
        Err(e) => {
            let text = e.to_string();
            if text.contains("length limit") {
                Err(too_big())
            } else {
                Err(ApiError::client(format!(
                    "Cannot read request body: {text}"
                )))
            }
        }
    }
}

type OpFn = fn(&mut World, &[u8]) -> Result<Response, ApiError>;

fn operation(op: &str) -> Option<OpFn> {
    Some(match op {
        "createschedulingpolicy" => ops_resources::create_policy,
        "describeschedulingpolicies" => ops_resources::describe_policies,
        "listschedulingpolicies" => ops_resources::list_policies,
        "describeserviceenvironments" => ops_resources::describe_environments,
        "describejobqueues" => ops_resources::describe_queues,
        "createquotashare" => ops_shares::create,
        "updatequotashare" => ops_shares::update,
        "describequotashare" => ops_shares::describe,
        "listquotashares" => ops_shares::list,
        "deletequotashare" => ops_shares::delete,
        "submitservicejob" => ops_jobs::submit,
        "listservicejobs" => ops_list_jobs::list,
        "describeservicejob" => ops_jobs::describe,
        "updateservicejob" => ops_jobs::update,
        "terminateservicejob" => ops_jobs::terminate,
        "terminateservicejobs" => ops_jobs::terminate_many,
        "getjobqueuesnapshot" => ops_queue::snapshot,
        _ => return None,
    })
}

async fn op_handler(
    State(app): State<Arc<App>>,
    path: Result<Path<String>, axum::extract::rejection::PathRejection>,
    kill: Option<axum::Extension<ConnKill>>,
    request: Request<Body>,
) -> Response {
    let result = async {
        let Path(op) = path.map_err(|e| ApiError::UnknownOperation(format!("Bad path: {e}")))?;
        let Some(handler) = operation(&op) else {
            return Err(ApiError::UnknownOperation(format!(
                "No such operation: {} /v1/{op}",
                request.method()
            )));
        };
        debug_assert!(OPERATIONS.contains(&op.as_str()));
        inject(&app, &op, kill.as_deref()).await?;
        if request.method() != Method::POST {
            return Err(ApiError::client(format!(
                "Operation /v1/{op} takes POST, not {}",
                request.method()
            )));
        }
        let (parts, body) = request.into_parts();
        let body = read_body(&parts.headers, body).await?;
        let mut world = lock(&app.world)?;
        world.catch_up()?;
        handler(&mut world, &body)
    }
    .await;
    result.unwrap_or_else(IntoResponse::into_response)
}

async fn tags_handler(
    State(app): State<Arc<App>>,
    path: Result<Path<String>, axum::extract::rejection::PathRejection>,
    RawQuery(query): RawQuery,
    kill: Option<axum::Extension<ConnKill>>,
    request: Request<Body>,
) -> Response {
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
        inject(&app, op, kill.as_deref()).await?;
        let Path(arn) =
            path.map_err(|e| ApiError::client(format!("Invalid resourceArn in path: {e}")))?;
        let (parts, body) = request.into_parts();
        let body = read_body(&parts.headers, body).await?;
        let mut world = lock(&app.world)?;
        world.catch_up()?;
        match op {
            "listtagsforresource" => ops_tags::list(&mut world, &arn),
            "tagresource" => ops_tags::tag(&mut world, &arn, &body),
            _ => {
                let keys: Vec<String> =
                    form_urlencoded::parse(query.unwrap_or_default().as_bytes())
                        .filter(|(k, _)| k == "tagKeys")
                        .map(|(_, v)| v.into_owned())
                        .collect();
                ops_tags::untag(&mut world, &arn, &keys)
            }
        }
    }
    .await;
    result.unwrap_or_else(IntoResponse::into_response)
}

/// Serves HTTP/1.1 on `listener` until `shutdown` turns true (or its sender goes away). Open
/// connections finish their requests (graceful), for at most five seconds.
pub(crate) async fn serve(
    listener: TcpListener,
    router: Router,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let stream = match accepted {
                    Ok((stream, _)) => stream,
                    Err(_) => {
                        // Out of file descriptors and the like: back off instead of spinning.
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let kill = Arc::new(Notify::new());
                let service = TowerToHyperService::new(
                    router.clone().layer(axum::Extension(ConnKill(kill.clone()))),
                );
                let mut stop = shutdown.clone();
                conns.spawn(async move {
                    let conn = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service);
                    tokio::pin!(conn);
                    tokio::select! {
                        _ = conn.as_mut() => {}
                        // Dropping the connection closes the socket without a response.
                        _ = kill.notified() => {}
                        _ = stopped(&mut stop) => {
                            conn.as_mut().graceful_shutdown();
                            tokio::select! {
                                _ = conn.as_mut() => {}
                                _ = kill.notified() => {}
                            }
                        }
                    }
                });
            }
            _ = stopped(&mut shutdown) => break,
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

/// Resolves once shutdown is asked for (or nobody can ask any more).
pub(crate) async fn stopped(rx: &mut watch::Receiver<bool>) {
    let _ = rx.wait_for(|s| *s).await;
}
