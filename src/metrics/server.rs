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

/// The latest snapshot and journal status, shared by the record loop and the endpoint. The
/// journal's status is `None` when there is no journal (`record --no-journal`): its families
/// are then left out rather than saying "down".
#[derive(Debug, Clone)]
pub struct Latest {
    inner: Arc<Mutex<(Option<Snapshot>, Option<JournalStatus>)>>,
    /// Whether this recorder leads its source on a shared store (`None`: no store, no family).
    leader: Arc<Mutex<Option<bool>>>,
    /// Why the shared store refuses this recorder now (`None`: it does not), and how many
    /// tries failed in all: the journal is then down, whatever its writer last said.
    refused: Arc<Mutex<(Option<String>, u64)>>,
}

impl Default for Latest {
    fn default() -> Self {
        Self {
            inner: Arc::new(Mutex::new((None, Some(JournalStatus::default())))),
            leader: Arc::default(),
            refused: Arc::default(),
        }
    }
}

impl Latest {
    /// What `record --no-journal` serves: the snapshots, and no journal families.
    pub fn without_journal() -> Self {
        Self {
            inner: Arc::new(Mutex::new((None, None))),
            leader: Arc::default(),
            refused: Arc::default(),
        }
    }
    /// This recorder leads (true) or stands by (false): `quotatop_record_leader`.
    pub fn set_leader(&self, leads: bool) {
        if let Ok(mut g) = self.leader.lock() {
            *g = Some(leads);
        }
    }
    /// A recorder that stepped down: standing by, and no snapshot of its own any more (the
    /// leader's `/metrics` is the one to read; two recorders exporting a source's series
    /// would count it twice).
    pub fn step_down(&self) {
        self.set_leader(false);
        if let Ok(mut g) = self.inner.lock() {
            g.0 = None;
        }
    }
    /// The shared store refused this recorder (`why`: one more failed try), or (`None`)
    /// takes part again: `quotatop_journal_up` is 0 meanwhile, and each failed try counts in
    /// `quotatop_journal_store_errors_total`.
    pub fn set_refused(&self, why: Option<String>) {
        if let Ok(mut g) = self.refused.lock() {
            if why.is_some() {
                g.1 += 1;
            }
            g.0 = why;
        }
    }
    /// Why the shared store refuses this recorder now, if it does.
    pub fn refused(&self) -> Option<String> {
        self.refused.lock().ok().and_then(|g| g.0.clone())
    }
    fn leader(&self) -> Option<bool> {
        self.leader.lock().ok().and_then(|g| *g)
    }
    /// Replaces the snapshot the next scrape encodes.
    pub fn update_snapshot(&self, snap: Snapshot) {
        if let Ok(mut g) = self.inner.lock() {
            g.0 = Some(snap);
        }
    }
    /// Replaces what the next scrape encodes.
    pub fn update(&self, snap: Snapshot, journal: JournalStatus) {
        if let Ok(mut g) = self.inner.lock() {
            *g = (Some(snap), Some(journal));
        }
    }
    /// Only the journal's status changed.
    pub fn update_journal(&self, journal: JournalStatus) {
        if let Ok(mut g) = self.inner.lock() {
            g.1 = Some(journal);
        }
    }
    /// The queues of the latest snapshot.
    pub fn queue_names(&self) -> Vec<String> {
        self.get()
            .0
            .map(|s| s.queues.iter().map(|q| q.name.clone()).collect())
            .unwrap_or_default()
    }
    fn get(&self) -> (Option<Snapshot>, Option<JournalStatus>) {
        let (snap, mut journal) = self.inner.lock().map(|g| g.clone()).unwrap_or_default();
        if let (Some(j), Ok(r)) = (journal.as_mut(), self.refused.lock()) {
            j.store_errors = r.1;
            if let Some(why) = &r.0 {
                j.unavailable = Some(why.clone());
                j.last_error = Some(why.clone());
            }
        }
        (snap, journal)
    }
}

/// A `/metrics` address refused: not loopback, and remote serving was not asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "--metrics-addr {0} is not a loopback address: the metrics name queues, shares and jobs' counts to anyone who can connect; add --metrics-allow-remote to serve them on {0} anyway"
)]
pub struct RemoteBindRefused(pub SocketAddr);

/// Why `addr` may not be bound: not loopback without `allow_remote`.
pub fn check_bind(addr: SocketAddr, allow_remote: bool) -> Result<(), RemoteBindRefused> {
    if addr.ip().is_loopback() || allow_remote {
        Ok(())
    } else {
        Err(RemoteBindRefused(addr))
    }
}

#[derive(Clone)]
struct AppState {
    latest: Latest,
    ctx: Arc<Context>,
}

/// Serves `/metrics` on `listener` until `stop` is cancelled.
/// What one scraper may hold of `record`: a scrape is one small GET, so a connection that has
/// not sent its headers in [`HEADER_TIMEOUT`], or lives longer than [`CONNECTION_LIFETIME`], is
/// closed, and at most [`MAX_CONNECTIONS`] are open at once (more are closed as they arrive), so
/// idle or stalled clients can neither keep `record` from stopping nor use up its files.
pub const MAX_CONNECTIONS: usize = 32;
pub const HEADER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);
pub const CONNECTION_LIFETIME: std::time::Duration = std::time::Duration::from_secs(30);
/// After `stop`, connections still open get this long to finish their answer.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

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
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    let mut conns = tokio::task::JoinSet::new();
    loop {
        let (tcp, _) = tokio::select! {
            () = stop.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                // Out of files or a connection reset before accept: try the next one.
                Err(_) => continue,
            },
        };
        // Over the cap the connection is closed at once (dropped), not queued.
        let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
            continue;
        };
        let service = hyper_util::service::TowerToHyperService::new(app.clone());
        let stop = stop.clone();
        conns.spawn(async move {
            let _slot = slot;
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(hyper_util::rt::TokioIo::new(tcp), service);
            let mut conn = std::pin::pin!(conn);
            tokio::select! {
                _ = tokio::time::timeout(CONNECTION_LIFETIME, conn.as_mut()) => {}
                () = stop.cancelled() => {
                    conn.as_mut().graceful_shutdown();
                    let _ = tokio::time::timeout(SHUTDOWN_GRACE, conn).await;
                }
            }
        });
        // Reap finished connections as they end.
        while conns.try_join_next().is_some() {}
    }
    drop(listener);
    let _ = tokio::time::timeout(SHUTDOWN_GRACE * 2, async {
        while conns.join_next().await.is_some() {}
    })
    .await;
    conns.abort_all();
    Ok(())
}

async fn metrics(State(st): State<AppState>, headers: HeaderMap) -> Response {
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    let (snap, journal) = st.latest.get();
    let (mut body, ty) = exposition(
        snap.as_ref(),
        journal.as_ref(),
        &st.ctx,
        quotatop_model::wall_clock_ms(),
        wants_openmetrics(accept),
    );
    if let Some(leads) = st.latest.leader() {
        body = with_leader(body, leads);
    }
    (StatusCode::OK, [(header::CONTENT_TYPE, ty)], body).into_response()
}

/// `body` with the `quotatop_record_leader` gauge (1: this recorder writes the store; 0: it
/// stands by), before OpenMetrics' closing `# EOF` when there is one.
pub fn with_leader(body: String, leads: bool) -> String {
    let family = format!(
        "# HELP quotatop_record_leader Whether this recorder leads its source on the shared store (1) or stands by (0).\n# TYPE quotatop_record_leader gauge\nquotatop_record_leader {}\n",
        u8::from(leads)
    );
    match body.strip_suffix("# EOF\n") {
        Some(head) => format!("{head}{family}# EOF\n"),
        None => body + &family,
    }
}
