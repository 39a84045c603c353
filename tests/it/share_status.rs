//! A quota share's `status` as AWS sends it (issue 46, item 6): a loopback proxy in front of
//! the demo emulator says `INVALID` of `research` and `UPDATING` of `lender`, and sends
//! `lender` with no capacity limits. `snapshot` keeps both statuses and still lists `lender`.
//! It also sends every job's `schedulingPriority` as 12000, outside the documented 0-9999:
//! shown as 9999, and noted on the job (item 13; it was clamped silently).

use std::net::SocketAddr;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::response::Response;
use axum::routing::any;
use quotatop_emulator::{self as emulator, ClockMode, EmulatorConfig, Scenario};
use serde_json::Value;

use crate::terminal_escapes::{forward, quotatop, run};

async fn statuses(State(up): State<SocketAddr>, uri: axum::http::Uri, body: Bytes) -> Response {
    let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_string();
    let shares = path.starts_with("/v1/listquotashares");
    let job = path.starts_with("/v1/describeservicejob");
    let (status, headers, mut body) =
        tokio::task::spawn_blocking(move || forward(up, &path, &body))
            .await
            .unwrap();
    if shares && status == 200 {
        let mut v: Value = serde_json::from_slice(&body).unwrap();
        for s in v["quotaShares"].as_array_mut().into_iter().flatten() {
            match s["quotaShareName"].as_str() {
                Some("research") => s["status"] = "INVALID".into(),
                Some("lender") => {
                    s["status"] = "UPDATING".into();
                    s["capacityLimits"] = Value::Array(Vec::new());
                }
                _ => {}
            }
        }
        body = serde_json::to_vec(&v).unwrap();
    }
    if job && status == 200 {
        // Out of the documented 0-9999: shown clamped, and noted.
        let mut v: Value = serde_json::from_slice(&body).unwrap();
        v["schedulingPriority"] = 12_000.into();
        body = serde_json::to_vec(&v).unwrap();
    }
    let mut r = Response::builder().status(status);
    for (k, v) in headers {
        r = r.header(k, v);
    }
    r.body(Body::from(body)).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_share_s_status_is_kept_and_a_share_without_limits_listed() {
    let scenario = Scenario::load("scenarios/demo.toml".as_ref()).unwrap();
    let mut config = EmulatorConfig::from_scenario(scenario).unwrap();
    config.clock = ClockMode::Manual;
    let h = emulator::start(config).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let app = Router::new().fallback(any(statuses)).with_state(h.addr());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let dir = tempfile::tempdir().unwrap();
    let mut c = quotatop(dir.path());
    c.args(["snapshot", "--queue", "ml-training", "--format", "json"])
        .args(["--endpoint-url", &url]);
    let out = run(c).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    let shares = doc["queues"][0]["shares"].as_array().unwrap();
    let share = |name: &str| {
        shares
            .iter()
            .find(|s| s["name"] == name)
            .unwrap_or_else(|| panic!("no share {name}: {shares:#?}"))
    };
    assert_eq!(share("research")["status"], "INVALID");
    assert_eq!(share("lender")["status"], "UPDATING");
    assert_eq!(share("lender")["limits"], Value::Array(Vec::new()));
    assert!(share("prod").get("status").is_none(), "{shares:#?}");
    let notes = doc["queues"][0]["job_notes"].as_array().unwrap();
    assert!(
        notes.iter().any(|n| n["note"]
            == "schedulingPriority 12000 is outside 0-9999; shown and exported as 9999"),
        "{notes:#?}"
    );
    h.shutdown().await.unwrap();
}
