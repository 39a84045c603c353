//! The drill's checkpoint verdict measured, without `--checkpoint-check` (issue 34, slice 5): on
//! the demo world, a drill whose jobs checkpoint every minute reports each restarted job
//! "restored", and one whose jobs write checkpoints they never restore reports "restarted from
//! scratch", each with its evidence; `--checkpoint-check` still overrides.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::drill_support::{run, text};
use quotatop_analysis::drill::{CheckpointVerdict, DrillReport};
use quotatop_emulator::{self as emulator, ClockMode, EmulatorConfig, EmulatorHandle, Scenario};

async fn demo() -> EmulatorHandle {
    let scenario = Scenario::parse(quotatop::commands::demo::DEMO_SCENARIO).unwrap();
    let mut config = EmulatorConfig::from_scenario(scenario).unwrap();
    config.clock = ClockMode::Scaled(400.0);
    config.tick = std::time::Duration::from_millis(20);
    emulator::start(config).await.unwrap()
}

/// A template checkpointing every minute under `s3://quotatop-checkpoints/drill`, with `tags`.
fn template(dir: &Path, tags: &str) -> std::path::PathBuf {
    let path = dir.join("job.json");
    std::fs::write(
        &path,
        format!(
            r#"{{"serviceRequestPayload":{{
                "AlgorithmSpecification":{{"TrainingImage":"img","TrainingInputMode":"File"}},
                "RoleArn":"arn:aws:iam::123456789012:role/r",
                "ResourceConfig":{{"InstanceType":"ml.g5.2xlarge","InstanceCount":1,"VolumeSizeInGB":30}},
                "CheckpointConfig":{{"S3Uri":"s3://quotatop-checkpoints/drill"}},
                "StoppingCondition":{{"MaxRuntimeInSeconds":36000}}}},
              "tags":{{"quotatop:checkpoint-seconds":"60"{tags}}}}}"#
        ),
    )
    .unwrap();
    path
}

async fn drill(h: &EmulatorHandle, dir: &Path, tags: &str, extra: &[&str]) -> DrillReport {
    let mut c = Command::new(env!("CARGO_BIN_EXE_quotatop"));
    c.args(["drill", "--queue", "ml-training", "--template"])
        .arg(template(dir, tags))
        .arg("--log")
        .arg(dir.join("audit.jsonl"))
        .arg("--journal")
        .arg(dir.join("journal.sqlite3"))
        .args([
            "--endpoint-url",
            &h.endpoint_url(),
            "--poll-interval",
            "0.05",
        ])
        .args(["--lender", "lender", "--borrower", "borrower"])
        .args([
            "--lengths",
            "20m",
            "--priority-length",
            "2m",
            "--repeat",
            "1",
        ])
        .args(["--format", "json", "--yes", "--timeout", "5m"])
        .args(extra)
        .env("AWS_ACCESS_KEY_ID", "AKIDTEST")
        .env("AWS_SECRET_ACCESS_KEY", "secret")
        .env("AWS_REGION", "us-east-1")
        .env_remove("QUOTATOP_READ_ONLY")
        .env_remove("QUOTATOP_CONFIG")
        .env("XDG_CONFIG_HOME", dir.join("no-config"))
        .env("HOME", dir)
        .env("XDG_DATA_HOME", dir.join("data"))
        .stdin(Stdio::null());
    let out = run(c).await;
    assert!(out.status.success(), "{}", text(&out));
    serde_json::from_slice(&out.stdout).expect("a JSON report")
}

fn verdicts(r: &DrillReport) -> Vec<(CheckpointVerdict, String)> {
    r.repetitions
        .iter()
        .flat_map(|r| &r.preempted)
        .filter(|p| p.restarted_at.is_some())
        .map(|p| (p.checkpoint, p.checkpoint_evidence.clone()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_drill_measures_restored_and_restarted_from_scratch() {
    let h = demo().await;
    let tmp = tempfile::tempdir().unwrap();

    // The demo's restores take no time: the restarted attempt's first two log lines are at its
    // start. (A restore that takes time is not yet in the log when the drill measures at the
    // restart: the verdict is then the sequence's or unknown.)
    let restoring = verdicts(&drill(&h, tmp.path(), "", &[]).await);
    assert!(!restoring.is_empty(), "no borrower job restarted");
    for (v, evidence) in &restoring {
        assert_eq!(*v, CheckpointVerdict::Resumed, "{evidence}");
        assert_eq!(v.as_str(), "restored");
        assert!(
            evidence.contains("continues from")
                || evidence.contains("next attempt's log says \"restored from checkpoint\""),
            "{evidence}"
        );
        assert!(
            evidence.ends_with(
                "; the restore took 0s (measured: from the attempt's start to its log's line)"
            ),
            "{evidence}"
        );
    }

    let never = verdicts(
        &drill(
            &h,
            tmp.path(),
            r#","quotatop:checkpoint-fault":"never-restored""#,
            &[],
        )
        .await,
    );
    assert!(!never.is_empty(), "no borrower job restarted");
    for (v, evidence) in &never {
        assert_eq!(*v, CheckpointVerdict::NotResumed, "{evidence}");
        assert_eq!(v.as_str(), "restarted from scratch");
        assert!(
            evidence.contains("starts again") || evidence.contains("do not say"),
            "{evidence}"
        );
        assert!(evidence.contains("checkpoints listed"), "{evidence}");
        assert!(!evidence.contains("the restore took"), "{evidence}");
    }

    // --checkpoint-check still decides when given.
    let overridden = verdicts(
        &drill(
            &h,
            tmp.path(),
            r#","quotatop:checkpoint-fault":"never-restored""#,
            &["--checkpoint-check", "true"],
        )
        .await,
    );
    assert!(!overridden.is_empty());
    for (v, evidence) in &overridden {
        assert_eq!(
            (*v, evidence.as_str()),
            (CheckpointVerdict::Resumed, "--checkpoint-check")
        );
    }
    println!("restoring: {restoring:?}\nnever restored: {never:?}");
    h.shutdown().await.unwrap();
}
