//! A log event whose bytes are not UTF-8 (a training script prints any bytes) is shown, with
//! U+FFFD in place of each invalid sequence, and said so (issue 46, item 8): a loopback proxy in
//! front of the demo emulator puts two invalid bytes into every FilterLogEvents message. Before,
//! the SDK could not read the answer and `quotatop logs` failed, calling it "an empty body".

use std::net::SocketAddr;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::any;
use quotatop_emulator::{self as emulator, ClockMode, EmulatorConfig, Scenario};

use crate::terminal_escapes::{forward_with, quotatop, run};

async fn garbling(
    State(up): State<SocketAddr>,
    uri: axum::http::Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_string();
    let target = headers
        .get("x-amz-target")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let logs = target.as_deref() == Some("Logs_20140328.FilterLogEvents");
    let (status, headers, mut body) =
        tokio::task::spawn_blocking(move || forward_with(up, &path, target.as_deref(), &body))
            .await
            .unwrap();
    if logs {
        let marker = b"\"message\":\"";
        let mut out = Vec::with_capacity(body.len());
        let mut rest = &body[..];
        while let Some(i) = rest.windows(marker.len()).position(|w| w == marker) {
            out.extend_from_slice(&rest[..i + marker.len()]);
            out.extend_from_slice(b"\xff\xfe");
            rest = &rest[i + marker.len()..];
        }
        out.extend_from_slice(rest);
        assert!(std::str::from_utf8(&out).is_err() || out == body);
        body = out;
    }
    let mut r = Response::builder().status(status);
    for (k, v) in headers {
        r = r.header(k, v);
    }
    r.body(Body::from(body)).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_event_that_is_not_utf8_is_shown_and_said_so() {
    let scenario = Scenario::load("scenarios/demo.toml".as_ref()).unwrap();
    let mut config = EmulatorConfig::from_scenario(scenario).unwrap();
    config.clock = ClockMode::Manual;
    let h = emulator::start(config).await.unwrap();
    h.advance(10 * 60_000).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let app = Router::new().fallback(any(garbling)).with_state(h.addr());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let dir = tempfile::tempdir().unwrap();
    let mut c = quotatop(dir.path());
    c.args([
        "logs",
        "video-pretrain",
        "--all",
        "--queue",
        "ml-training",
        "--endpoint-url",
        &url,
    ]);
    let out = run(c).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}\n{stdout}");
    assert!(!stderr.contains("empty body"), "{stderr}");
    assert!(stdout.contains("\u{fffd}\u{fffd}"), "{stdout}");
    assert!(
        stdout
            .contains("held bytes that are not UTF-8; each invalid sequence is shown as \u{fffd}"),
        "{stdout}"
    );
}
