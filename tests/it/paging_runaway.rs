//! A server that answers every ListServiceJobs page with a fresh `nextToken` and no jobs is
//! not followed forever (issue 46, item 1): a loopback proxy in front of the demo emulator
//! answers every listing so, and `quotatop snapshot` stops paging, says which operation would
//! not end, and exits non-zero — within a bounded number of calls.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::response::Response;
use axum::routing::any;
use quotatop_emulator::{self as emulator, ClockMode, EmulatorConfig, Scenario};

use crate::terminal_escapes::{forward, quotatop, run};

#[derive(Clone)]
struct Upstream {
    addr: SocketAddr,
    listings: Arc<AtomicUsize>,
}

async fn endless(State(up): State<Upstream>, uri: axum::http::Uri, body: Bytes) -> Response {
    let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_string();
    if path.starts_with("/v1/listservicejobs") {
        let n = up.listings.fetch_add(1, Ordering::SeqCst);
        return Response::builder()
            .status(200)
            .header("content-type", "application/json")
            .body(Body::from(format!(
                "{{\"jobSummaryList\":[],\"nextToken\":\"page-{n}\"}}"
            )))
            .unwrap();
    }
    let (status, headers, body) =
        tokio::task::spawn_blocking(move || forward(up.addr, &path, &body))
            .await
            .unwrap();
    let mut r = Response::builder().status(status);
    for (k, v) in headers {
        r = r.header(k, v);
    }
    r.body(Body::from(body)).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endless_empty_pages_stop_with_an_error_naming_the_operation() {
    let scenario = Scenario::load("scenarios/demo.toml".as_ref()).unwrap();
    let mut config = EmulatorConfig::from_scenario(scenario).unwrap();
    config.clock = ClockMode::Manual;
    let h = emulator::start(config).await.unwrap();
    let listings = Arc::new(AtomicUsize::new(0));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let app = Router::new().fallback(any(endless)).with_state(Upstream {
        addr: h.addr(),
        listings: Arc::clone(&listings),
    });
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let dir = tempfile::tempdir().unwrap();
    let mut c = quotatop(dir.path());
    c.args(["snapshot", "--queue", "ml-training", "--endpoint-url", &url]);
    let started = Instant::now();
    let out = run(c).await;
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("ListServiceJobs") && stderr.contains("did not end"),
        "{stderr}"
    );
    // Each chain of pages (a status, or a status in one quota share: 7 shares here) stops
    // after its run of 50 empty pages; nothing pages on. Unbounded, it was ~95 calls a second
    // until killed.
    let calls = listings.load(Ordering::SeqCst);
    assert!(calls < 5_000, "{calls} ListServiceJobs calls");
    assert!(took < Duration::from_secs(120), "took {took:?}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        listings.load(Ordering::SeqCst),
        calls,
        "still paging after exit"
    );
    h.shutdown().await.unwrap();
}
