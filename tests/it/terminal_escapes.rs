//! Security: untrusted text cannot drive the operator's terminal. The emulator refuses such
//! names itself, so a hostile endpoint is stood in for by a loopback proxy in front of it that
//! renames a job and a quota share in every response to names carrying escape sequences (window
//! title, clear screen, colour, bell, an 8-bit CSI), and maps them back in requests.
//! `snapshot` (table and JSON), `record` then `report` (md and csv) must print none of those
//! control characters, but still show the names.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::response::Response;
use axum::routing::any;
use quotatop_emulator::{self as emulator, ClockMode, EmulatorConfig, EmulatorHandle, Scenario};

use crate::emulator_support::SIGNED;

fn has_control(bytes: &[u8]) -> bool {
    let text = String::from_utf8_lossy(bytes);
    text.chars().any(|c| c.is_control() && c != '\n')
}

pub fn quotatop(home: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_quotatop"));
    c.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("AWS_ACCESS_KEY_ID", "AKIDTEST")
        .env("AWS_SECRET_ACCESS_KEY", "secret")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("AWS_CONFIG_FILE", "/nonexistent/quotatop-test-config")
        .env(
            "AWS_SHARED_CREDENTIALS_FILE",
            "/nonexistent/quotatop-test-credentials",
        );
    c
}

pub async fn run(mut c: Command) -> Output {
    tokio::task::spawn_blocking(move || c.output().unwrap())
        .await
        .unwrap()
}

/// Names renamed by the proxy: (as the emulator has it, as JSON text in a hostile response).
/// The job is the demo's one that stays RUNNABLE for good (it asks for more than its share's
/// limit), so the table lists it whatever the timing (a running job would not be listed).
const RENAMES: [(&str, &str); 2] = [
    (
        "oversized-finetune",
        "evil\\u001b]0;pwned\\u0007\\u001b[2J-job",
    ),
    ("research", "res\\u001b[31mearch\u{9b}0m"),
];

/// Forwards one request to the emulator (HTTP/1.1, connection closed after it) and returns the
/// status, headers and body of its answer.
pub fn forward(
    upstream: SocketAddr,
    path: &str,
    body: &[u8],
) -> (u16, Vec<(String, String)>, Vec<u8>) {
    forward_with(upstream, path, None, body)
}

/// [`forward`], with the `X-Amz-Target` of a JSON 1.1 service (CloudWatch Logs) when given.
pub fn forward_with(
    upstream: SocketAddr,
    path: &str,
    target: Option<&str>,
    body: &[u8],
) -> (u16, Vec<(String, String)>, Vec<u8>) {
    let mut s = TcpStream::connect(upstream).unwrap();
    let target = target.map_or(String::new(), |t| {
        format!("X-Amz-Target: {t}\r\nContent-Type: application/x-amz-json-1.1\r\n")
    });
    let content_type = if target.is_empty() {
        "Content-Type: application/json\r\n"
    } else {
        ""
    };
    // The emulator tells services apart by the signature's scope, as AWS's endpoints do.
    let signed = if target.is_empty() {
        SIGNED.to_string()
    } else {
        SIGNED.replace("/batch/", "/logs/")
    };
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: {upstream}\r\n{content_type}{target}{signed}Connection: close\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .unwrap();
    s.write_all(body).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
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
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .filter(|(k, _)| k != "content-length" && k != "connection" && k != "transfer-encoding")
        .collect();
    (status, headers, raw[split + 4..].to_vec())
}

async fn proxy(State(upstream): State<SocketAddr>, uri: axum::http::Uri, body: Bytes) -> Response {
    let mut text = String::from_utf8_lossy(&body).to_string();
    for (plain, hostile) in RENAMES {
        text = text.replace(hostile, plain);
        // The SDK may write the 8-bit CSI as an escape too.
        text = text.replace(&hostile.replace('\u{9b}', "\\u009b"), plain);
    }
    let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_string();
    let (status, headers, body) =
        tokio::task::spawn_blocking(move || forward(upstream, &path, text.as_bytes()))
            .await
            .unwrap();
    let mut text = String::from_utf8_lossy(&body).to_string();
    for (plain, hostile) in RENAMES {
        text = text.replace(&format!("\"{plain}"), &format!("\"{hostile}"));
        text = text.replace(&format!("/{plain}\""), &format!("/{hostile}\""));
    }
    let mut r = Response::builder().status(status);
    for (k, v) in headers {
        r = r.header(k, v);
    }
    r.body(Body::from(text)).unwrap()
}

/// The demo world behind the renaming proxy; returns the proxy's endpoint.
async fn hostile_endpoint() -> (EmulatorHandle, String) {
    let scenario = Scenario::load("scenarios/demo.toml".as_ref()).unwrap();
    let mut config = EmulatorConfig::from_scenario(scenario).unwrap();
    config.clock = ClockMode::Scaled(600.0);
    let h = emulator::start(config).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let app = Router::new().fallback(any(proxy)).with_state(h.addr());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (h, url)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn escape_sequences_in_names_never_reach_the_terminal() {
    let (h, url) = hostile_endpoint().await;
    // The job the proxy renames arrives within seconds at 600x: waited for, not slept on.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !h
        .with_engine(|e| e.jobs().any(|j| j.name == RENAMES[0].0))
        .unwrap()
    {
        assert!(Instant::now() < deadline, "{} never arrived", RENAMES[0].0);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();

    let mut table = quotatop(home);
    table.args(["snapshot", "--queue", "ml-training", "--endpoint-url", &url]);
    let out = run(table).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("evil"), "the job is shown:\n{text}");
    assert!(text.contains("-job"), "the proxy renamed it:\n{text}");
    assert!(text.contains("res"), "the share is shown:\n{text}");
    assert!(!has_control(&out.stdout), "table:\n{text:?}");
    assert!(!has_control(&out.stderr));

    let mut json = quotatop(home);
    json.args(["snapshot", "--queue", "ml-training", "--format", "json"])
        .args(["--endpoint-url", &url]);
    let out = run(json).await;
    assert!(out.status.success());
    assert!(!has_control(&out.stdout), "json");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        doc.to_string().contains("evil"),
        "JSON keeps the name (escaped)"
    );

    // record, then report from the journal.
    let journal = home.join("journal.sqlite3");
    let mut rec = quotatop(home);
    rec.args(["record", "--queue", "ml-training", "--interval", "1"])
        .args(["--endpoint-url", &url])
        .arg("--journal")
        .arg(&journal)
        .arg("--log-dir")
        .arg(home)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut rec = rec.spawn().unwrap();
    // Stopped once it has journaled (not after a fixed time).
    let waited = journal.clone();
    tokio::task::spawn_blocking(move || {
        crate::data_support::wait_until_journaled(&waited, "ml-training")
    })
    .await
    .unwrap();
    let pid = rec.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let out = tokio::task::spawn_blocking(move || {
        let deadline = Instant::now() + Duration::from_secs(20);
        while rec.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "record did not stop");
            std::thread::sleep(Duration::from_millis(50));
        }
        rec.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    assert!(out.status.success());
    assert!(!has_control(&out.stderr));
    h.shutdown().await.unwrap();

    for format in ["md", "csv"] {
        let mut report = quotatop(home);
        report
            .args(["report", "--queue", "ml-training", "--format", format])
            .arg("--journal")
            .arg(&journal);
        let out = run(report).await;
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("res"),
            "{format}: the share is listed:\n{text}"
        );
        assert!(!has_control(&out.stdout), "report {format}:\n{text:?}");
    }
}

/// Error messages quote input (here a scenario's share name); main prints them cleaned.
#[test]
fn escape_sequences_in_error_messages_never_reach_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    let demo = std::fs::read_to_string("scenarios/demo.toml").unwrap();
    let bad = demo.replacen(
        "name = \"research\"\nstrategy = \"LEND_AND_BORROW\"",
        "name = \"x\\u001b]0;pwned\\u0007\\u001b[2J\"\nstrategy = \"BOGUS\"",
        1,
    );
    assert_ne!(bad, demo);
    std::fs::write(&path, bad).unwrap();
    let out = quotatop(dir.path())
        .args(["emulator", "--port", "0", "--scenario"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("BOGUS"), "the error is shown: {err}");
    assert!(!has_control(&out.stderr), "{err:?}");
}

/// A replay configuration's name (share names are validated) reaches every format cleaned.
#[test]
fn escape_sequences_in_replay_inputs_never_reach_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = std::fs::read_to_string("tests/fixtures/replay_lending.toml")
        .unwrap()
        .replacen(
            "name = \"lending\"",
            "name = \"lend\\u001b[2J\\u009b31m\"",
            1,
        );
    let trace = std::fs::read_to_string("tests/fixtures/replay_trace.csv").unwrap();
    std::fs::write(dir.path().join("c.toml"), cfg).unwrap();
    std::fs::write(dir.path().join("t.csv"), trace).unwrap();
    for format in ["md", "csv", "json"] {
        let out = quotatop(dir.path())
            .args(["replay", "--format", format, "--trace"])
            .arg(dir.path().join("t.csv"))
            .arg("--config")
            .arg(dir.path().join("c.toml"))
            .arg("--jobs-out")
            .arg(dir.path().join("jobs.csv"))
            .output()
            .unwrap();
        let rows = std::fs::read(dir.path().join("jobs.csv")).unwrap();
        assert!(
            !has_control(&rows),
            "--jobs-out: {:?}",
            String::from_utf8_lossy(&rows)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(text.contains("lend"), "{format}: {text}");
        assert!(!has_control(&out.stdout), "replay {format}:\n{text:?}");
    }
}
