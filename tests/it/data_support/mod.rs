//! Shared by the data-path tests (`tests/poll_*.rs`, `tests/snapshot_*.rs`): a `BatchClient`
//! for an in-process emulator, and the environment that makes the `quotatop` binary talk to it
//! hermetically (static keys, no profile files, no instance metadata).

use std::process::Command;

use quotatop_aws::batch::{BatchClient, ConnectOptions, StaticCredentials};
use quotatop_emulator::EmulatorHandle;
use quotatop_model::{QueueSnapshot, TrackedJob};

pub async fn batch_client(handle: &EmulatorHandle) -> BatchClient {
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

/// The `quotatop` binary with an environment that reaches only what the arguments name.
pub fn quotatop() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_quotatop"));
    c.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("AWS_ACCESS_KEY_ID", "AKIDTEST")
        .env("AWS_SECRET_ACCESS_KEY", "secret")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("AWS_CONFIG_FILE", "/nonexistent/quotatop-test-config")
        .env(
            "AWS_SHARED_CREDENTIALS_FILE",
            "/nonexistent/quotatop-test-credentials",
        )
        .env("RUST_BACKTRACE", "0");
    c
}

pub fn job<'a>(q: &'a QueueSnapshot, id: &str) -> Option<&'a TrackedJob> {
    q.jobs.iter().find(|j| j.job.id == id)
}

/// Waits (at most 60 s) until the journal at `path` holds at least one job of `queue`: a
/// recorder has journaled a snapshot. Replaces fixed sleeps before stopping a recorder.
pub fn wait_until_journaled(path: &std::path::Path, queue: &str) {
    use quotatop_store::journal::{Journal, JournalConfig};
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let jobs = Journal::open_existing(path, JournalConfig::default())
            .and_then(|j| j.jobs(queue, 0))
            .map(|jobs| jobs.len());
        if jobs.as_ref().is_ok_and(|&n| n > 0) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "nothing journaled in {} after 60 s: {jobs:?}",
            path.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// The world `journal_scorecard` and `journal_trace` record: one g5 environment of 8 shared by
/// a borrowing share with checkpoints, a lender with capped retries and a RESERVE share, with
/// lifecycle delays, so the poller sees every kind of transition.
pub const RECORDED_WORLD: &str = r#"
name = "recorded-world"
seed = 11
[queue]
name = "ml-training"
[[capacity]]
instance_type = "ml.g5.12xlarge"
max = 8
[delays]
submitted_ms = 1000
pending_ms = 2000
scheduled_ms = 5000
starting_ms = 10000
preemption_ms = 5000
jitter_ms = 2000

[[shares]]
name = "research"
strategy = "LEND_AND_BORROW"
in_share_preemption = true
limits = { "ml.g5.12xlarge" = 3 }
[[shares.generators]]
name = "sweep"
arrivals_per_hour = 12.0
instance_type = "ml.g5.12xlarge"
instance_counts = [1, 2]
priorities = [{ priority = 10, weight = 3 }, { priority = 2000, weight = 1 }]
duration_s = [600, 1800]
checkpoint_s = 300
max_jobs = 30

[[shares]]
name = "prod"
strategy = "LEND"
limits = { "ml.g5.12xlarge" = 3 }
[[shares.generators]]
name = "release"
arrivals_per_hour = 6.0
start_s = 900
instance_type = "ml.g5.12xlarge"
instance_counts = [2, 3]
priorities = [{ priority = 500, weight = 1 }, { priority = 6000, weight = 1 }]
duration_s = [300, 900]
preemption_retries = 2
max_jobs = 15

[[shares]]
name = "regulated"
strategy = "RESERVE"
limits = { "ml.g5.12xlarge" = 2 }
[[shares.generators]]
name = "audit"
arrivals_per_hour = 3.0
instance_type = "ml.g5.12xlarge"
duration_s = [900, 1800]
max_jobs = 6
"#;
