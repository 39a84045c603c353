//! A job whose `capacityUsage` unit is not an instance type (`NUM_INSTANCES`, which the API
//! reference lets service jobs report) is not counted as one (issue 46, item 5): a loopback
//! proxy in front of the demo emulator rewrites every job's `capacityUnit` to `NUM_INSTANCES`.
//! `snapshot` must show no `NUM_INSTANCES` usage row (it was a phantom `1/0, borrowed` row),
//! count the jobs by their payload's `ResourceConfig.InstanceType`, and name the disagreement.

use std::net::SocketAddr;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::response::Response;
use axum::routing::any;
use quotatop_emulator::{self as emulator, ClockMode, EmulatorConfig, Scenario};
use serde_json::Value;

use crate::terminal_escapes::{forward, quotatop, run};

fn rewrite_units(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if let Some(Value::Array(usage)) = m.get_mut("capacityUsage") {
                for u in usage {
                    u["capacityUnit"] = Value::String("NUM_INSTANCES".into());
                }
            }
            m.values_mut().for_each(rewrite_units);
        }
        Value::Array(a) => a.iter_mut().for_each(rewrite_units),
        _ => {}
    }
}

async fn units(State(up): State<SocketAddr>, uri: axum::http::Uri, body: Bytes) -> Response {
    let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_string();
    let jobs =
        path.starts_with("/v1/listservicejobs") || path.starts_with("/v1/describeservicejob");
    let (status, headers, mut body) =
        tokio::task::spawn_blocking(move || forward(up, &path, &body))
            .await
            .unwrap();
    if jobs && status == 200 {
        let mut v: Value = serde_json::from_slice(&body).unwrap();
        rewrite_units(&mut v);
        body = serde_json::to_vec(&v).unwrap();
    }
    let mut r = Response::builder().status(status);
    for (k, v) in headers {
        r = r.header(k, v);
    }
    r.body(Body::from(body)).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unit_that_is_not_an_instance_type_is_no_phantom_row_and_is_flagged() {
    let scenario = Scenario::load("scenarios/demo.toml".as_ref()).unwrap();
    let mut config = EmulatorConfig::from_scenario(scenario).unwrap();
    config.clock = ClockMode::Manual;
    let h = emulator::start(config).await.unwrap();
    // Let the scripted jobs start: they hold capacity.
    for _ in 0..20 {
        h.advance(10_000).unwrap();
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let app = Router::new().fallback(any(units)).with_state(h.addr());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let dir = tempfile::tempdir().unwrap();
    let mut c = quotatop(dir.path());
    c.args([
        "snapshot",
        "--queue",
        "ml-training",
        "--format",
        "json",
        "--endpoint-url",
        &url,
    ]);
    let out = run(c).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    let q = &doc["queues"][0];
    let usage = q["usage"].as_array().unwrap();
    assert!(
        usage.iter().all(|u| u["instance_type"] != "NUM_INSTANCES"),
        "phantom row: {usage:#?}"
    );
    let used: u64 = usage.iter().map(|u| u["used"].as_u64().unwrap()).sum();
    assert!(
        used > 0,
        "the running jobs are counted by their type: {usage:#?}"
    );
    let notes = q["job_notes"].as_array().unwrap();
    assert!(
        notes
            .iter()
            .any(|n| n["note"].as_str().unwrap().contains("NUM_INSTANCES")
                && n["note"].as_str().unwrap().contains("not an instance type")),
        "{notes:#?}"
    );

    // The table says so too.
    let mut c = quotatop(dir.path());
    c.args(["snapshot", "--queue", "ml-training", "--endpoint-url", &url]);
    let out = run(c).await;
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("NOTE ") && table.contains("not an instance type"),
        "{table}"
    );
    assert!(!table.contains("NUM_INSTANCES 1/0"), "{table}");
    h.shutdown().await.unwrap();
}
