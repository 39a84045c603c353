//! The training job behind each attempt, read through quotatop's own client from the emulator:
//! its CloudWatch Logs and its checkpoint objects agree with the engine's record of the attempt,
//! pagination and throttling are handled, and the calls count in the client's pacer; then
//! `quotatop logs` prints them with each preemption marked.

use std::path::Path;
use std::process::Command;

use quotatop_aws::batch::{BatchClient, ConnectOptions, LogQuery, Op, StaticCredentials};
use quotatop_emulator::{
    self as emulator, ClockMode, EmulatorConfig, EmulatorHandle, FaultSpec, Scenario,
};
use quotatop_engine::JobId;

const START: i64 = 1_770_000_000_000;
const HOUR: i64 = 3_600_000;

/// The demo on a manual clock, `hours` simulated hours in.
async fn demo(hours: i64, faults: &str) -> EmulatorHandle {
    let scenario = Scenario::load(Path::new("scenarios/demo.toml")).unwrap();
    let mut config = EmulatorConfig::from_scenario(scenario).unwrap();
    config.clock = ClockMode::Manual;
    config.start_ms = Some(START);
    config.deterministic_ids = true;
    config.faults = FaultSpec::parse(faults).unwrap();
    let handle = emulator::start(config).await.unwrap();
    handle.advance(hours * HOUR).unwrap();
    handle
}

async fn client(handle: &EmulatorHandle) -> BatchClient {
    BatchClient::connect(ConnectOptions {
        profile: None,
        region: Some("us-east-1".into()),
        endpoint_url: Some(handle.endpoint_url()),
        credentials: Some(StaticCredentials {
            access_key_id: "AKIDTEST".into(),
            secret_access_key: "secret".into(),
        }),
    })
    .await
    .unwrap()
}

/// The engine's job named `name`, its training jobs' names and what each attempt did.
fn engine_job(
    handle: &EmulatorHandle,
    name: &str,
) -> (String, Vec<String>, Vec<quotatop_engine::AttemptWork>) {
    handle
        .with_engine(|e| {
            let job = e.jobs().find(|j| j.name == name).unwrap();
            let id: JobId = e.find(&job.id).unwrap();
            let names = job
                .attempts
                .iter()
                .map(|a| quotatop_analysis::training_job_name(&a.resource_id).to_string())
                .collect();
            (job.id.clone(), names, e.attempt_work(id).to_vec())
        })
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_and_checkpoints_come_through_the_client_paged_and_paced() {
    let handle = demo(2, "filterlogevents:throttle=0.3;listobjectsv2:throttle=0.3").await;
    let c = client(&handle).await;
    let (id, names, work) = engine_job(&handle, "research-burst");
    assert!(
        work.iter().any(|w| w.preempted),
        "research-burst was never preempted"
    );
    // Each attempt that ran has its stream; its lines end as the engine's attempt ended.
    for (name, w) in names.iter().zip(&work) {
        let Some(stop) = w.stopped_at.filter(|_| w.running_at.is_some()) else {
            continue;
        };
        let page = c
            .log_events(&LogQuery {
                stream_prefix: Some(format!("{name}/")),
                max_events: 10_000,
                ..LogQuery::default()
            })
            .await
            .unwrap();
        let last = page.lines.last().unwrap();
        assert_eq!(last.time, stop);
        if w.preempted {
            assert!(
                last.message.starts_with("received SIGTERM (preemption)"),
                "{}",
                last.message
            );
        }
        let restore = &page.lines[1].message;
        assert_eq!(
            restore.starts_with("restored from checkpoint"),
            w.resumed_ms > 0,
            "{restore}"
        );
    }
    // Bounded and paginated: 7 lines asked for, more there.
    let some = c
        .log_events(&LogQuery {
            stream_prefix: Some("AWSBatchresearch-burst".into()),
            max_events: 7,
            ..LogQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(some.lines.len(), 7);
    assert!(some.truncated);
    // Its checkpoints under the payload's S3Uri, listed in pages of at most `max`.
    let uri = format!("s3://quotatop-checkpoints/ml-training/{id}/");
    let all = c.list_checkpoints(&uri, 1000).await.unwrap();
    assert!(!all.truncated);
    let manifests = all
        .objects
        .iter()
        .filter(|o| o.key.ends_with("manifest.json"))
        .count();
    assert!(manifests >= 2, "{manifests} checkpoints");
    assert_eq!(all.objects.len(), manifests * 2);
    let first = c.list_checkpoints(&uri, 3).await.unwrap();
    assert_eq!(first.objects, all.objects[..3]);
    assert!(first.truncated);
    // Throttled calls were retried at the pace the pacer learned for each operation.
    assert!(handle.fault_stats().throttled > 0);
    assert!(
        c.learned_rate(Op::FilterLogEvents).is_some()
            || c.learned_rate(Op::ListObjectsV2).is_some()
    );
    handle.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_logs_command_prints_every_attempt_with_its_preemption_marked() {
    let handle = demo(2, "").await;
    let url = handle.endpoint_url();
    let run = |args: &[&str]| {
        let url = url.clone();
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        std::thread::spawn(move || {
            Command::new(env!("CARGO_BIN_EXE_quotatop"))
                .arg("logs")
                .args(&args)
                .args(["--endpoint-url", &url, "--region", "us-east-1"])
                .env("AWS_ACCESS_KEY_ID", "test")
                .env("AWS_SECRET_ACCESS_KEY", "test")
                .env_remove("AWS_PROFILE")
                .output()
                .unwrap()
        })
        .join()
        .unwrap()
    };
    let out = run(&["research-burst", "--all"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("#1 no checkpoint, starting from step 0"),
        "{text}"
    );
    assert!(text.contains("restored from checkpoint step"), "{text}");
    assert!(text.contains("── attempt 1 preempted: "), "{text}");
    // The mark follows the signal.
    let signal = text.find("#1 received SIGTERM").unwrap();
    assert!(signal < text.find("── attempt 1 preempted").unwrap());
    // The never-restoring job starts over every time.
    let out = run(&["video-pretrain", "--all"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let starts = text.matches("starting on 6 x").count();
    assert!(starts >= 2, "{text}");
    assert_eq!(
        text.matches("no checkpoint, starting from step 0").count(),
        starts
    );
    assert!(!text.contains("restored from checkpoint"), "{text}");
    // One attempt only.
    let out = run(&["video-pretrain", "--attempt", "1"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("#1 no checkpoint, starting from step 0"),
        "{text}"
    );
    assert!(!text.contains("#2 "), "{text}");
    // An attempt that does not exist is an error that says which exist.
    let out = run(&["research-burst", "--attempt", "99"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--attempt takes 1 to"));
    handle.shutdown().await.unwrap();
}
