//! Malformed requests over raw HTTP/1.1 (no SDK): bad JSON, wrong types, oversized bodies,
//! unknown operations and wrong methods each get an error response with a message, and the server
//! keeps serving.

use std::time::Duration;

use crate::emulator_support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
}

/// Sends one request on a fresh connection (`Connection: close`) and reads the whole reply.
async fn send(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    extra: &str,
    body: &[u8],
) -> Option<Reply> {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{SIGNED}{extra}\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).await.unwrap();
    s.write_all(body).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut raw))
        .await
        .expect("the server answers instead of hanging")
        .ok()?;
    if raw.is_empty() {
        return None;
    }
    let text = String::from_utf8_lossy(&raw).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let mut lines = head.lines();
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    Some(Reply {
        status,
        headers,
        body: body.to_string(),
    })
}

fn assert_client_error(r: &Reply, needle: &str) {
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.header("x-amzn-ErrorType"), Some("ClientException"));
    assert!(r.header("x-amzn-RequestId").is_some_and(|v| !v.is_empty()));
    let body = r.json();
    assert_eq!(body["__type"], "ClientException");
    let message = body["message"].as_str().unwrap();
    assert!(message.contains(needle), "{message:?} lacks {needle:?}");
}

#[tokio::test]
async fn malformed_requests_get_400_with_a_message_and_the_server_keeps_serving() {
    let emu = start(&[(M5, 2)], "").await;
    let addr = emu.addr();
    let post = |path: &'static str, body: Vec<u8>| async move {
        send(addr, "POST", path, "", &body).await.unwrap()
    };

    let r = post("/v1/describeservicejob", b"{\"jobId\": ".to_vec()).await;
    assert_client_error(&r, "Malformed JSON in request body at line 1, column 10");
    let r = post("/v1/describeservicejob", b"[1,2]".to_vec()).await;
    assert_client_error(
        &r,
        "Invalid request body: it must be a JSON object, got a list",
    );
    let r = post("/v1/describeservicejob", b"{\"jobId\": 5}".to_vec()).await;
    assert_client_error(&r, "Invalid request body: jobId must be a string, got 5");
    let r = post(
        "/v1/listservicejobs",
        br#"{"jobQueue":"qm-queue","maxResults":"ten"}"#.to_vec(),
    )
    .await;
    assert_client_error(
        &r,
        "Invalid request body: maxResults must be an integer in range, got a string",
    );
    let r = post(
        "/v1/updateservicejob",
        br#"{"jobId":"x","schedulingPriority":1.5}"#.to_vec(),
    )
    .await;
    assert_client_error(
        &r,
        "Invalid request body: schedulingPriority must be an integer in range, got a number with a fraction",
    );
    let r = post(
        "/v1/createquotashare",
        br#"{"quotaShareName":"s","jobQueue":"qm-queue","capacityLimits":[{"maxCapacity":"x","capacityUnit":"ml.m5.large"}]}"#.to_vec(),
    )
    .await;
    assert_client_error(
        &r,
        "Invalid request body: capacityLimits[0].maxCapacity must be an integer in range, got a string",
    );
    // No parser internals in any of them.
    for body in [
        &b"{\"jobId\": 5}"[..],
        b"[1,2]",
        br#"{"jobId":"x","schedulingPriority":99999999999999999999}"#,
    ] {
        let r = post("/v1/updateservicejob", body.to_vec()).await;
        let text = r.body.clone();
        assert!(!text.contains("expected i"), "{text}");
        assert!(!text.contains("invalid type"), "{text}");
    }
    let r = post("/v1/describeservicejob", b"{}".to_vec()).await;
    assert_client_error(&r, "jobId is required");
    let r = post("/v1/describeservicejob", vec![0xff, 0xfe, 0x00]).await;
    assert_client_error(&r, "JSON");

    // Oversized: a 100 KiB body is read and refused; a huge declared length is refused at once.
    let big = format!("{{\"jobId\":\"{}\"}}", "x".repeat(100 * 1024));
    let r = post("/v1/describeservicejob", big.into_bytes()).await;
    assert_client_error(&r, "larger than 65536 bytes");
    let r = send(addr, "POST", "/v1/submitservicejob", "", b"")
        .await
        .unwrap();
    assert_client_error(&r, "jobQueue is required");
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(
        format!("POST /v1/submitservicejob HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 50000000\r\n\r\n{{")
            .as_bytes(),
    )
    .await
    .unwrap();
    let mut buf = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(10), s.read(&mut buf))
        .await
        .unwrap()
        .unwrap();
    let head = String::from_utf8_lossy(&buf[..n]).to_string();
    assert!(head.starts_with("HTTP/1.1 400"), "{head}");
    assert!(head.contains("larger than 65536 bytes"), "{head}");
    drop(s);

    // A SubmitServiceJob over 30 KiB is refused even under the general limit.
    let padded = serde_json::json!({
        "jobName": "j", "jobQueue": QUEUE, "serviceJobType": "SAGEMAKER_TRAINING",
        "serviceRequestPayload": payload(M5, 1), "quotaShareName": "qs",
        "tags": {"pad": "p".repeat(200)},
        "clientToken": "t",
        "retryStrategy": {"attempts": 1, "evaluateOnExit": (0..200).map(|_| serde_json::json!({"action":"EXIT","onStatusReason":"x".repeat(150)})).collect::<Vec<_>>()}
    })
    .to_string();
    assert!(padded.len() > 30 * 1024 && padded.len() < 64 * 1024);
    let r = post("/v1/submitservicejob", padded.into_bytes()).await;
    assert_client_error(&r, "limit is 30 KiB");

    // Unknown operations and paths: an error, not a hang.
    let r = post("/v1/launchrockets", b"{}".to_vec()).await;
    assert_eq!(r.status, 404);
    assert_eq!(
        r.header("x-amzn-ErrorType"),
        Some("UnknownOperationException")
    );
    assert!(
        r.json()["message"]
            .as_str()
            .unwrap()
            .contains("launchrockets")
    );
    let r = send(addr, "GET", "/", "", b"").await.unwrap();
    assert_eq!(r.status, 404);
    assert!(r.header("x-amzn-RequestId").is_some());
    let r = send(addr, "GET", "/v1/describejobqueues", "", b"")
        .await
        .unwrap();
    assert_client_error(&r, "takes POST");
    let r = send(addr, "PUT", "/v1/tags/arn", "", b"{}").await.unwrap();
    assert_eq!(r.status, 404);

    // Raw success: camelCase, epoch-millisecond numbers, no nulls.
    let r = post("/v1/describejobqueues", b"".to_vec()).await;
    assert_eq!(r.status, 200);
    assert!(r.header("x-amzn-RequestId").is_some());
    assert!(!r.body.contains("null"), "{}", r.body);
    assert_eq!(r.json()["jobQueues"][0]["jobQueueName"], QUEUE);
    let r = post(
        "/v1/getjobqueuesnapshot",
        br#"{"jobQueue":"qm-queue"}"#.to_vec(),
    )
    .await;
    assert_eq!(r.json()["frontOfQueue"]["lastUpdatedAt"], START);

    // Keep-alive connection: an error does not spoil the next request on it.
    let mut s = TcpStream::connect(addr).await.unwrap();
    let two = format!(
        "POST /v1/describeservicejob HTTP/1.1\r\nHost: {addr}\r\n{SIGNED}Content-Length: 3\r\n\r\n{{{{x\
         POST /v1/describejobqueues HTTP/1.1\r\nHost: {addr}\r\n{SIGNED}Connection: close\r\nContent-Length: 2\r\n\r\n{{}}"
    );
    s.write_all(two.as_bytes()).await.unwrap();
    let mut raw = String::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_string(&mut raw))
        .await
        .unwrap()
        .unwrap();
    assert!(raw.starts_with("HTTP/1.1 400"), "{raw}");
    assert!(raw.contains("HTTP/1.1 200"), "{raw}");
    emu.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_dropped_connection_closes_without_a_response() {
    let emu = start(&[(M5, 2)], "describejobqueues:drop=100%").await;
    assert!(
        send(emu.addr(), "POST", "/v1/describejobqueues", "", b"{}")
            .await
            .is_none()
    );
    let r = send(
        emu.addr(),
        "POST",
        "/v1/describeserviceenvironments",
        "",
        b"{}",
    )
    .await
    .unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(emu.fault_stats().dropped, 1);
    emu.shutdown().await.unwrap();
}

#[tokio::test]
async fn throttling_is_http_429_with_the_code_in_header_and_body() {
    let emu = start(&[(M5, 2)], "throttle=1").await;
    let r = send(emu.addr(), "POST", "/v1/listservicejobs", "", b"{}")
        .await
        .unwrap();
    assert_eq!(r.status, 429);
    assert_eq!(
        r.header("x-amzn-ErrorType"),
        Some("TooManyRequestsException")
    );
    assert_eq!(r.json()["__type"], "TooManyRequestsException");
    assert_eq!(r.json()["message"], "Too Many Requests");
    emu.shutdown().await.unwrap();
}
