//! The connection loop: accepting within the connection cap, the header, idle and shutdown
//! timeouts, and closing a connection without an answer.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::ServerLimits;

/// Closes the connection a request came in on, without a response.
#[derive(Clone)]
pub(super) struct ConnKill(pub(super) Arc<Notify>);

/// Marks a connection busy while one of its requests is being handled, so the idle timeout
/// never closes a connection whose answer is still being worked out (e.g. an injected delay).
#[derive(Clone)]
pub(super) struct ConnActivity(Arc<Activity>);

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

pub(super) struct InFlight(Option<Arc<Activity>>);

impl InFlight {
    pub(super) fn new(a: Option<&ConnActivity>) -> Self {
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
