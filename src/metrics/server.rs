//! The `/metrics` endpoint: axum on a listener `record` opens, reading the latest snapshot
//! from a [`Latest`] the record loop updates.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::{Context, exposition, wants_openmetrics};
use quotatop_model::Snapshot;
use quotatop_store::journal::JournalStatus;

/// The latest snapshot and journal status, shared by the record loop and the endpoint.
#[derive(Debug, Clone, Default)]
pub struct Latest {
    inner: Arc<Mutex<(Option<Snapshot>, JournalStatus)>>,
}

impl Latest {
    /// Replaces what the next scrape encodes.
    pub fn update(&self, snap: Snapshot, journal: JournalStatus) {
        if let Ok(mut g) = self.inner.lock() {
            *g = (Some(snap), journal);
        }
    }
    /// Only the journal's status changed.
    pub fn update_journal(&self, journal: JournalStatus) {
        if let Ok(mut g) = self.inner.lock() {
            g.1 = journal;
        }
    }
    fn get(&self) -> (Option<Snapshot>, JournalStatus) {
        self.inner.lock().map(|g| g.clone()).unwrap_or_default()
    }
}

/// Why `addr` may not be bound: not loopback without `allow_remote`.
pub fn check_bind(addr: SocketAddr, allow_remote: bool) -> Result<(), String> {
    if addr.ip().is_loopback() || allow_remote {
        Ok(())
    } else {
        Err(format!(
            "--metrics-addr {addr} is not a loopback address: the metrics name queues, shares \
             and jobs' counts to anyone who can connect; add --metrics-allow-remote to serve them \
             on {addr} anyway"
        ))
    }
}

#[derive(Clone)]
struct AppState {
    latest: Latest,
    ctx: Arc<Context>,
}

/// Serves `/metrics` on `listener` until `stop` is cancelled.
pub async fn serve(
    listener: TcpListener,
    latest: Latest,
    ctx: Context,
    stop: CancellationToken,
) -> std::io::Result<()> {
    let app = axum::Router::new()
        .route("/metrics", get(metrics))
        .with_state(AppState {
            latest,
            ctx: Arc::new(ctx),
        });
    axum::serve(listener, app)
        .with_graceful_shutdown(async move { stop.cancelled().await })
        .await
}

async fn metrics(State(st): State<AppState>, headers: HeaderMap) -> Response {
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    let (snap, journal) = st.latest.get();
    let (body, ty) = exposition(
        snap.as_ref(),
        &journal,
        &st.ctx,
        quotatop_model::wall_clock_ms(),
        wants_openmetrics(accept),
    );
    (StatusCode::OK, [(header::CONTENT_TYPE, ty)], body).into_response()
}
