//! Answers that are not AWS's are named for what they are (issue 46, item 13): a stub server on
//! 127.0.0.1 answering every call with moto's HTML 404 page makes `snapshot` say "an HTML page
//! ("404 Not Found")", not "an empty body".

use axum::Router;
use axum::response::Response;
use axum::routing::any;

use crate::terminal_escapes::{quotatop, run};

async fn html_404() -> Response {
    Response::builder()
        .status(404)
        .header("content-type", "text/html; charset=utf-8")
        .body(axum::body::Body::from(
            "<!doctype html>\n<html lang=en>\n<title>404 Not Found</title>\n<h1>Not Found</h1>\n<p>The requested URL was not found on the server.</p>\n",
        ))
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_html_page_is_named_not_called_an_empty_body() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let app = Router::new().fallback(any(html_404));
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let dir = tempfile::tempdir().unwrap();
    let mut c = quotatop(dir.path());
    c.args(["snapshot", "--queue", "q", "--endpoint-url", &url]);
    let out = run(c).await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("HTTP 404 with an HTML page (\"404 Not Found\"), not an AWS answer"),
        "{err}"
    );
    assert!(!err.contains("empty body"), "{err}");
}

async fn throttled() -> Response {
    Response::builder()
        .status(429)
        .header("content-type", "application/json")
        .header("x-amzn-errortype", "TooManyRequestsException")
        .header("retry-after", "4")
        .body(axum::body::Body::from(
            r#"{"__type":"TooManyRequestsException","message":"Too Many Requests"}"#,
        ))
        .unwrap()
}

/// A throttling answer's `Retry-After` is read off the wire and kept: the poller waits at
/// least that long before its next refresh (it was ignored).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_throttling_answer_s_retry_after_is_followed() {
    use quotatop_aws::batch::{BatchClient, ConnectOptions, StaticCredentials};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let app = Router::new().fallback(any(throttled));
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let client = BatchClient::connect(ConnectOptions {
        profile: None,
        region: Some("us-east-1".into()),
        endpoint_url: Some(url),
        credentials: Some(StaticCredentials {
            access_key_id: "AKIDTEST".into(),
            secret_access_key: "secret".into(),
        }),
    })
    .await
    .unwrap();
    assert_eq!(client.stats().retry_after_left(), None);
    let e = client.describe_job_queues(&[]).await.unwrap_err();
    assert!(e.to_string().contains("throttled"), "{e}");
    let left = client.stats().retry_after_left().unwrap_or_default();
    assert!(
        left > std::time::Duration::from_secs(1) && left <= std::time::Duration::from_secs(4),
        "{left:?}"
    );
}
