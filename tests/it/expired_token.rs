//! Expired credentials are named as such (issue 46, item 7): a stub server on 127.0.0.1
//! answers every call with `ExpiredTokenException`, as AWS does once a session's token has
//! expired. `snapshot` must say "credentials expired — refresh them", not "access denied".

use axum::Router;
use axum::response::Response;
use axum::routing::any;

use crate::terminal_escapes::{quotatop, run};

async fn expired() -> Response {
    Response::builder()
        .status(403)
        .header("content-type", "application/json")
        .header("x-amzn-errortype", "ExpiredTokenException")
        .body(axum::body::Body::from(
            r#"{"__type":"ExpiredTokenException","message":"The security token included in the request is expired"}"#,
        ))
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_token_says_refresh_the_credentials() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let app = Router::new().fallback(any(expired));
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let dir = tempfile::tempdir().unwrap();
    let mut c = quotatop(dir.path());
    c.args(["snapshot", "--queue", "q", "--endpoint-url", &url]);
    let started = std::time::Instant::now();
    let out = run(c).await;
    let err = String::from_utf8_lossy(&out.stderr);
    println!("snapshot ended in {:.1} s", started.elapsed().as_secs_f64());
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("credentials expired — refresh them"), "{err}");
    assert!(!err.contains("access denied"), "{err}");
}
