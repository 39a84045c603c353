//! Many regions in one console (`[[sources]]`): two emulators in two regions, both with a queue
//! named `ml-training`, polled by one fleet of pollers into one console whose Overview groups
//! the queues by source, with each source's health; `--source` picking from the config, and an
//! unknown one named with the known ones.

use std::time::Duration;

use quotatop_aws::batch::{BatchClient, ConnectOptions, StaticCredentials};
use quotatop_aws::poll::{self, PollConfig};
use quotatop_emulator::{self as emulator, ClockMode, EmulatorConfig, EmulatorHandle, Scenario};
use quotatop_model::{HealthState, QueueSnapshot, Snapshot};

use crate::emulator_support::START;

const DELAYS: &str = "[delays]\nsubmitted_ms = 0\npending_ms = 0\nscheduled_ms = 0\nstarting_ms = 0\npreemption_ms = 0\njitter_ms = 0\n";

fn us_world() -> String {
    format!(
        "name = \"us\"\nseed = 1\n[queue]\nname = \"ml-training\"\n\
         [[capacity]]\ninstance_type = \"ml.p4d.24xlarge\"\nmax = 4\n{DELAYS}\
         [[shares]]\nname = \"research\"\nstrategy = \"LEND\"\nlimits = {{ \"ml.p4d.24xlarge\" = 2 }}\n\
         [[shares]]\nname = \"prod\"\nstrategy = \"RESERVE\"\nlimits = {{ \"ml.p4d.24xlarge\" = 2 }}\n\
         [[jobs]]\nat_s = 0\nshare = \"research\"\nname = \"us-sweep\"\ninstance_type = \"ml.p4d.24xlarge\"\ninstance_count = 1\nduration_s = 36000\n"
    )
}

fn eu_world() -> String {
    format!(
        "name = \"eu\"\nseed = 2\n[queue]\nname = \"ml-training\"\n\
         [[capacity]]\ninstance_type = \"ml.g5.12xlarge\"\nmax = 6\n{DELAYS}\
         [[shares]]\nname = \"vision\"\nstrategy = \"LEND\"\nlimits = {{ \"ml.g5.12xlarge\" = 6 }}\n\
         [[jobs]]\nat_s = 0\nshare = \"vision\"\nname = \"eu-finetune\"\ninstance_type = \"ml.g5.12xlarge\"\ninstance_count = 3\nduration_s = 36000\n"
    )
}

/// An emulator of `world` in `region`, on a manual clock one second after [`START`].
async fn emulator(region: &str, world: &str) -> EmulatorHandle {
    let mut config = EmulatorConfig::from_scenario(Scenario::parse(world).unwrap()).unwrap();
    config.clock = ClockMode::Manual;
    config.start_ms = Some(START);
    config.region = region.to_string();
    let h = emulator::start(config).await.unwrap();
    h.advance(1_000).unwrap();
    h
}

async fn client(h: &EmulatorHandle, region: &str) -> BatchClient {
    BatchClient::connect(ConnectOptions {
        profile: None,
        region: Some(region.into()),
        endpoint_url: Some(h.endpoint_url()),
        credentials: Some(StaticCredentials {
            access_key_id: "AKIDTEST".into(),
            secret_access_key: "secret".into(),
        }),
    })
    .await
    .unwrap()
}

/// The merged snapshot once both sources answered completely, with what varies from run to
/// run (local times, call counts, the emulators' ports) set to fixed values.
async fn both_regions() -> (Snapshot, Vec<EmulatorHandle>) {
    let us = emulator("us-east-1", &us_world()).await;
    let eu = emulator("eu-west-1", &eu_world()).await;
    let config = PollConfig {
        interval: Duration::from_millis(200),
        ..PollConfig::default()
    };
    let mut fleet = poll::spawn_fleet(vec![
        ("us".into(), client(&us, "us-east-1").await, config.clone()),
        ("eu".into(), client(&eu, "eu-west-1").await, config),
    ]);
    let mut snap = loop {
        let s = tokio::time::timeout(Duration::from_secs(20), fleet.snapshots.recv())
            .await
            .expect("a merged snapshot within 20 s")
            .expect("the fleet runs");
        let healthy = s
            .sources
            .iter()
            .all(|x| x.health.state == HealthState::Healthy);
        if healthy && s.queues.len() == 2 && s.is_complete() {
            break s;
        }
    };
    fleet.shutdown().await;
    let now = crate::tui_support::NOW;
    snap.taken_at = now - 2_000;
    snap.health.calls_last_minute = 12;
    for q in &mut snap.queues {
        q.refreshed_at = Some(now - 2_000);
        for j in &mut q.jobs {
            j.listed_at = now - 2_000;
            j.described_at = Some(now - 2_000);
        }
    }
    for (i, s) in snap.sources.iter_mut().enumerate() {
        s.taken_at = Some(now - 2_000);
        s.health.calls_last_minute = 6;
        s.source.endpoint = Some(format!("http://127.0.0.1:{}", 5566 + i));
    }
    (snap, vec![us, eu])
}

/// Issue 19: one console, two regions, the same queue name in both: the Overview shows each
/// source's heading (name, region, endpoint, health in words) with its own `ml-training`
/// below it, and the status bar each source's health.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_regions_on_one_overview() {
    let (snap, emulators) = both_regions().await;
    let keys: Vec<String> = snap.queues.iter().map(QueueSnapshot::key).collect();
    assert_eq!(keys, ["ml-training@us", "ml-training@eu"]);
    let regions: Vec<_> = snap
        .sources
        .iter()
        .map(|s| s.source.region.clone().unwrap_or_default())
        .collect();
    assert_eq!(regions, ["us-east-1", "eu-west-1"]);
    let (t, app) = crate::tui_support::run_with(
        110,
        30,
        crate::tui_support::options(),
        vec![snap],
        Vec::new(),
    )
    .await;
    // The console's model keeps both queues apart by their keys.
    let data = app.live_data();
    assert_eq!(
        data.queue(Some("ml-training@eu"))
            .map(|(q, _)| q.shares.len()),
        Some(1)
    );
    assert_eq!(
        data.queue(Some("ml-training@us"))
            .map(|(q, _)| q.shares.len()),
        Some(2)
    );
    insta::assert_snapshot!(crate::tui_support::screen_text(&t));
    for h in emulators {
        h.shutdown().await.unwrap();
    }
}

/// A source that fails is named with its reason in words in the status bar and on its
/// Overview heading (shown though it has no queue), while the other source's queue is still
/// shown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_source_is_named_with_its_reason() {
    let (mut snap, emulators) = both_regions().await;
    for h in emulators {
        h.shutdown().await.unwrap();
    }
    // Unreachable from the start: no queue of it to show, its heading says why.
    snap.queues.retain(|q| q.source.as_deref() != Some("eu"));
    let eu = &mut snap.sources[1];
    eu.health.state = HealthState::Unreachable;
    eu.health.last_error = Some("cannot reach the AWS Batch endpoint".into());
    let (t, _) = crate::tui_support::run_with(
        110,
        30,
        crate::tui_support::options(),
        vec![snap],
        Vec::new(),
    )
    .await;
    let text = crate::tui_support::screen_text(&t);
    let status = text.lines().next().unwrap_or_default();
    assert!(
        status.contains("us ● ok · eu ● error: cannot reach the AWS Batch endpoint"),
        "{text}"
    );
    assert!(
        text.contains(
            "■ eu  region eu-west-1 · endpoint http://127.0.0.1:5567 · ● error: cannot reach"
        ),
        "{text}"
    );
    assert!(text.contains("▾ ml-training  ENABLED VALID"), "{text}");
}

fn config(dir: &std::path::Path, us: &EmulatorHandle, eu: &EmulatorHandle) -> std::path::PathBuf {
    let path = dir.join("config.toml");
    std::fs::write(
        &path,
        format!(
            "[[sources]]\nname = \"us\"\nregion = \"us-east-1\"\nendpoint_url = \"{}\"\n\
             [[sources]]\nname = \"eu\"\nregion = \"eu-west-1\"\nendpoint_url = \"{}\"\n",
            us.endpoint_url(),
            eu.endpoint_url()
        ),
    )
    .unwrap();
    path
}

async fn snapshot_json(config: &std::path::Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["snapshot".to_string(), "--format".into(), "json".into()];
    args.extend(extra.iter().map(|s| s.to_string()));
    let config = config.to_path_buf();
    tokio::task::spawn_blocking(move || {
        crate::data_support::quotatop()
            .env("QUOTATOP_CONFIG", config)
            .args(args)
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

/// `quotatop snapshot` with `[[sources]]`: every source by default, `--source` picks some, and
/// an unknown one is an error naming the known ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_reads_each_source_of_the_config() {
    let us = emulator("us-east-1", &us_world()).await;
    let eu = emulator("eu-west-1", &eu_world()).await;
    let dir = tempfile::tempdir().unwrap();
    let path = config(dir.path(), &us, &eu);
    let doc = |out: &std::process::Output| -> serde_json::Value {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let both = doc(&snapshot_json(&path, &[]).await);
    let queues: Vec<(String, String)> = both["queues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| {
            (
                q["source"].as_str().unwrap_or("").to_string(),
                q["name"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert_eq!(
        queues,
        [
            ("us".to_string(), "ml-training".to_string()),
            ("eu".to_string(), "ml-training".to_string())
        ]
    );
    assert_eq!(both["sources"][1]["region"], "eu-west-1");
    assert_eq!(both["sources"][1]["verdict"], "ok");
    let eu_only = doc(&snapshot_json(&path, &["--source", "eu"]).await);
    assert_eq!(eu_only["queues"].as_array().map(Vec::len), Some(1));
    assert_eq!(eu_only["queues"][0]["source"], "eu");
    let unknown = snapshot_json(&path, &["--source", "ap"]).await;
    assert!(!unknown.status.success());
    let err = String::from_utf8_lossy(&unknown.stderr);
    assert!(
        err.contains("unknown source `ap` (known sources: us, eu)"),
        "{err}"
    );
    us.shutdown().await.unwrap();
    eu.shutdown().await.unwrap();
}

/// `quotatop record` with `[[sources]]`: one journal, each source's `ml-training` under its own
/// key, with its own jobs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn record_journals_each_source_under_its_key() {
    let us = emulator("us-east-1", &us_world()).await;
    let eu = emulator("eu-west-1", &eu_world()).await;
    let dir = tempfile::tempdir().unwrap();
    let path = config(dir.path(), &us, &eu);
    let journal = dir.path().join("journal.sqlite3");
    let mut child = crate::data_support::quotatop()
        .args(["record", "--interval", "1", "--config"])
        .arg(&path)
        .arg("--journal")
        .arg(&journal)
        .arg("--log-dir")
        .arg(dir.path())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let j = journal.clone();
    tokio::task::spawn_blocking(move || {
        crate::data_support::wait_until_journaled(&j, "ml-training@us");
        crate::data_support::wait_until_journaled(&j, "ml-training@eu");
    })
    .await
    .unwrap();
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let exit = tokio::task::spawn_blocking(move || child.wait().unwrap())
        .await
        .unwrap();
    assert!(exit.success(), "{exit:?}");
    let j = quotatop_store::journal::Journal::open_existing(&journal, Default::default()).unwrap();
    let names = |key: &str| -> Vec<String> {
        j.jobs(key, 0)
            .unwrap()
            .into_iter()
            .map(|r| r.name)
            .collect()
    };
    assert_eq!(names("ml-training@us"), ["us-sweep"]);
    assert_eq!(names("ml-training@eu"), ["eu-finetune"]);
    assert!(names("ml-training").is_empty());
    us.shutdown().await.unwrap();
    eu.shutdown().await.unwrap();
}

/// A config whose sources cannot be used (a name given twice) makes `--source` an error that
/// says why, not a silent fall back to the one implicit source.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicate_source_names_are_named_when_a_source_is_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(
        &path,
        "[[sources]]\nname = \"us\"\nregion = \"us-east-1\"\n[[sources]]\nname = \"us\"\nregion = \"eu-west-1\"\n",
    )
    .unwrap();
    let out = snapshot_json(&path, &["--source", "us"]).await;
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown source `us`"), "{err}");
    assert!(err.contains("the name `us` is used twice"), "{err}");
    assert!(out.stdout.is_empty());
}
