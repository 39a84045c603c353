//! Shared by `drill` and `drill_safety`: an emulator world for drills on a fast scaled clock,
//! the drill command against it, and what the engine says is still alive.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use quotatop_emulator::{self as emulator, ClockMode, EmulatorConfig, EmulatorHandle, Scenario};
use quotatop_model::JobStatus;
use quotatop_store::audit;

pub const XL: &str = "ml.g5.xlarge";
pub const XXL: &str = "ml.g5.2xlarge";
pub const QUEUE: &str = "drill-queue";

/// A quiet world: a lender and a borrower sharing two instance types; a lending share with
/// work waiting, and a reserved one.
pub const SCENARIO: &str = r#"
name = "drill-test"
seed = 3
speed = 1.0

[queue]
name = "drill-queue"
scheduling_policy = "drill-policy"
service_environment = "drill-env"

[[capacity]]
instance_type = "ml.g5.xlarge"
max = 4

[[capacity]]
instance_type = "ml.g5.2xlarge"
max = 3

[delays]
submitted_ms = 1000
pending_ms = 1000
scheduled_ms = 5000
starting_ms = 10000
preemption_ms = 10000
jitter_ms = 2000

[[shares]]
name = "lender"
strategy = "LEND"
limits = { "ml.g5.xlarge" = 2, "ml.g5.2xlarge" = 1 }

[[shares]]
name = "borrower"
strategy = "LEND_AND_BORROW"
borrow_limit = 200
limits = { "ml.g5.xlarge" = 1, "ml.g5.2xlarge" = 1 }

[[shares]]
name = "busy"
strategy = "LEND"
limits = { "ml.g5.xlarge" = 1 }

[[shares]]
name = "reserved"
strategy = "RESERVE"
limits = { "ml.g5.2xlarge" = 1 }

# Work waiting in the busy share: a drill with it as the lender is refused.
[[jobs]]
at_s = 0
share = "busy"
name = "too-big"
instance_type = "ml.g5.xlarge"
instance_count = 1
duration_s = 36000

[[jobs]]
at_s = 0
share = "busy"
name = "waiting"
instance_type = "ml.g5.xlarge"
instance_count = 1
duration_s = 600
"#;

pub async fn start(speed: f64) -> EmulatorHandle {
    let scenario = Scenario::parse(SCENARIO).unwrap();
    let mut config = EmulatorConfig::from_scenario(scenario).unwrap();
    config.clock = ClockMode::Scaled(speed);
    config.tick = Duration::from_millis(20);
    emulator::start(config).await.unwrap()
}

/// A temporary directory (removed when dropped) holding the drill's template `job.json`.
pub fn temp(name: &str) -> tempfile::TempDir {
    let d = tempfile::Builder::new()
        .prefix(&format!("quotatop-drill-{name}-"))
        .tempdir()
        .unwrap();
    std::fs::write(
        d.path().join("job.json"),
        r#"{"AlgorithmSpecification":{"TrainingImage":"img","TrainingInputMode":"File"},
            "RoleArn":"arn:aws:iam::123456789012:role/r",
            "ResourceConfig":{"InstanceType":"ml.g5.xlarge","InstanceCount":1,"VolumeSizeInGB":30},
            "StoppingCondition":{"MaxRuntimeInSeconds":36000}}"#,
    )
    .unwrap();
    d
}

pub fn drill(url: &str, dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_quotatop"));
    c.arg("drill")
        .args(["--queue", QUEUE, "--template"])
        .arg(dir.join("job.json"))
        .arg("--log")
        .arg(dir.join("audit.jsonl"))
        .args(if args.contains(&"--no-journal") {
            vec![]
        } else {
            vec!["--journal".into(), dir.join("journal.sqlite3")]
        })
        .args(["--endpoint-url", url, "--poll-interval", "0.05"])
        .args(args)
        .env("AWS_ACCESS_KEY_ID", "AKIDTEST")
        .env("AWS_SECRET_ACCESS_KEY", "secret")
        .env("AWS_REGION", "us-east-1")
        .env_remove("QUOTATOP_READ_ONLY")
        .env_remove("QUOTATOP_CONFIG")
        .env("XDG_CONFIG_HOME", dir.join("no-config"))
        // A journal at the default place would be in `dir` too.
        .env("HOME", dir)
        .env("XDG_DATA_HOME", dir.join("data"))
        .stdin(Stdio::null());
    c
}

pub async fn run(c: Command) -> Output {
    let mut c = c;
    tokio::task::spawn_blocking(move || c.output().expect("quotatop runs"))
        .await
        .expect("join")
}

pub fn text(o: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Engine jobs whose name starts with `prefix` and that have not finished.
pub fn alive(h: &EmulatorHandle, prefix: &str) -> Vec<String> {
    h.with_engine(|e| {
        e.jobs()
            .filter(|j| j.name.starts_with(prefix) && !j.status.is_terminal())
            .map(|j| format!("{} {}", j.name, j.status))
            .collect()
    })
    .unwrap()
}

/// The run id of the drill whose submissions are in `log`, once its jobs run in the engine.
pub async fn running_drill(h: &EmulatorHandle, log: &Path) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let running = h
            .with_engine(|e| {
                e.jobs()
                    .filter(|j| j.name.starts_with("drill-") && j.status == JobStatus::Running)
                    .count()
            })
            .unwrap();
        if running >= 2 {
            let recs = audit::read_records(log).unwrap();
            return recs
                .iter()
                .find_map(|(_, r)| r.action.as_ref()?.run_id.clone())
                .expect("the drill's records");
        }
        assert!(Instant::now() < deadline, "the drill's jobs never ran");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
