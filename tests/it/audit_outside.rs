//! Changes made outside quotatop: while `record --events-queue` keeps CloudTrail's calls, a
//! priority change and a termination made with boto3 directly against the emulator appear in
//! `audit list` as made outside quotatop, by boto3's identity, with old -> new from the
//! journal and "no justification recorded", and `policy check` judges the priority change;
//! `quotatop set-priority`'s own change does not appear as outside. `--lookup-events` finds the
//! same change in CloudTrail's event history without a journal. A termination reason with
//! ESC, BEL and a newline reaches the terminal cleaned.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use quotatop_emulator::{self as emulator, ClockMode, EmulatorConfig, EmulatorHandle, Scenario};
use quotatop_model::CapacityLimit;

use crate::emulator_support::*;
use crate::events_cli::{cmd, run, text};
use crate::events_record::record;
use aws_sdk_batch::types::QuotaShareResourceSharingStrategy as Strategy;

/// Every change must carry a change record: one made outside quotatop has none.
const POLICY: &str = r#"version = 1
[[class]]
name = "research"
priority = [0, 100]
shares = ["qs"]
change_record = true
"#;

/// boto3's principal in the emulator (an IAM user named after the access key).
const BOTO3_ARN: &str = "arn:aws:iam::123456789012:user/AKIDBOTO3";

/// `quotatop ARGS` with the test's credentials, config and data directories in `dir`.
fn quotatop(emu: &EmulatorHandle, dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_quotatop"));
    c.args(args)
        .arg("--endpoint-url")
        .arg(emu.endpoint_url())
        .env("AWS_ACCESS_KEY_ID", "AKIDTEST")
        .env("AWS_SECRET_ACCESS_KEY", "secret")
        .env("AWS_REGION", "us-east-1")
        .env_remove("QUOTATOP_READ_ONLY")
        .env_remove("QUOTATOP_CONFIG")
        .env("QUOTATOP_AUDIT_LOG", dir.join("audit.jsonl"))
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_DATA_HOME", dir.join("data"))
        .stdin(Stdio::null());
    c
}

/// `quotatop ARGS` for a command that calls no AWS, with the test's directories in `dir`.
fn plain(dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_quotatop"));
    c.args(args)
        .env_remove("QUOTATOP_CONFIG")
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_DATA_HOME", dir.join("data"))
        .stdin(Stdio::null());
    c
}

/// boto3's Batch client running `code` (with `batch` and `job` defined).
async fn boto3(emu: &EmulatorHandle, job: &str, code: &str) -> Output {
    let script = format!("import boto3\nbatch = boto3.client('batch')\njob = '{job}'\n{code}\n");
    let mut c = Command::new("python3");
    c.args(["-c", &script])
        .env("AWS_ENDPOINT_URL", emu.endpoint_url())
        .env("AWS_ACCESS_KEY_ID", "AKIDBOTO3")
        .env("AWS_SECRET_ACCESS_KEY", "secret")
        .env("AWS_DEFAULT_REGION", "us-east-1")
        .env_remove("AWS_PROFILE")
        .env("AWS_CONFIG_FILE", "/dev/null")
        .env("AWS_SHARED_CREDENTIALS_FILE", "/dev/null");
    run(c).await
}

/// `audit list` until it holds `want` (60 s at most).
async fn list_until(emu: &EmulatorHandle, dir: &Path, args: &[&str], want: &[&str]) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let mut all = vec!["audit", "list"];
        all.extend_from_slice(args);
        let o = run(quotatop(emu, dir, &all)).await;
        let t = text(&o);
        if o.status.success() && want.iter().all(|w| t.contains(w)) {
            return t;
        }
        assert!(
            Instant::now() < deadline,
            "audit list never showed {want:?}:\n{t}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_made_with_boto3_is_listed_as_outside_quotatop_and_judged() {
    // Real time, so the recorder's snapshots and CloudTrail's times share one clock.
    let mut config =
        EmulatorConfig::from_scenario(Scenario::empty(QUEUE, vec![CapacityLimit::new(M5, 1)]))
            .unwrap();
    config.clock = ClockMode::Scaled(1.0);
    config.tick = Duration::from_millis(20);
    let emu = emulator::start(config).await.unwrap();
    let c = client(&emu, 1);
    create_share(&c, "qs", &[(M5, 1)], Strategy::Reserve, None, false).await;
    let dir = crate::temp_support::dir_path("audit-outside");
    let d = dir.as_path();
    std::fs::create_dir_all(d.join("config")).unwrap();
    std::fs::write(d.join("policy.toml"), POLICY).unwrap();
    let o = run(cmd(&emu, d, "setup", "ev", &["--yes"])).await;
    assert!(o.status.success(), "{}", text(&o));
    // One job runs; the other waits, RUNNABLE, at priority 10.
    submit(&c, "runs", "qs", M5, 1, 10).await;
    let waits = submit(&c, "waits", "qs", M5, 1, 10).await;
    let _rec = record(&emu, d);
    tokio::time::sleep(Duration::from_secs(3)).await;

    // quotatop's own change, 10 -> 20, and then one made with boto3, 20 -> 77.
    let o = run(quotatop(
        &emu,
        d,
        &[
            "set-priority",
            &waits,
            "--queue",
            QUEUE,
            "--priority",
            "20",
            "--reason",
            "paper deadline on friday",
            "--yes",
        ],
    ))
    .await;
    assert!(o.status.success(), "{}", text(&o));
    tokio::time::sleep(Duration::from_secs(3)).await;
    let o = boto3(
        &emu,
        &waits,
        "batch.update_service_job(jobId=job, schedulingPriority=77)",
    )
    .await;
    assert!(o.status.success(), "{}", text(&o));
    tokio::time::sleep(Duration::from_secs(3)).await;
    let o = boto3(
        &emu,
        &waits,
        "batch.terminate_service_job(jobId=job, reason='\\x1b[31mcleanup\\x07\\nfake line')",
    )
    .await;
    assert!(o.status.success(), "{}", text(&o));

    let journal = d.join("journal.sqlite3");
    let journal = journal.to_str().unwrap();
    let t = list_until(&emu, d, &["--journal", journal], &["TerminateServiceJob"]).await;
    println!("{t}");
    let outside = format!(
        "{BOTO3_ARN}  OUTSIDE quotatop  UpdateServiceJob waits ({waits})  priority 20 -> 77"
    );
    assert!(t.contains(&outside), "{t}");
    assert!(t.contains("why: no justification recorded"), "{t}");
    assert!(
        t.contains("that this audit log does not account for): 2"),
        "{t}"
    );
    // quotatop's own change is the log's, not outside.
    assert_eq!(
        t.matches("OUTSIDE quotatop  UpdateServiceJob").count(),
        1,
        "{t}"
    );
    assert!(t.contains("10 -> 20"), "{t}");
    // The hostile reason is cleaned: no ESC, no BEL, no line of its own.
    assert!(t.contains("OUTSIDE quotatop  TerminateServiceJob"), "{t}");
    assert!(!t.contains('\u{1b}') && !t.contains('\u{7}'), "{t:?}");
    assert!(!t.lines().any(|l| l.starts_with("fake line")), "{t}");

    // The event history alone (no journal: another data directory) names the same call.
    let other = d.join("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::copy(d.join("audit.jsonl"), other.join("audit.jsonl")).unwrap();
    let t = list_until(
        &emu,
        &other,
        &["--lookup-events", "--since", "1h"],
        &["from event history"],
    )
    .await;
    assert!(
        t.contains(&format!("{BOTO3_ARN}  OUTSIDE quotatop  UpdateServiceJob {waits}  priority ? (the journal did not see the job before the call) -> 77")),
        "{t}"
    );
    assert_eq!(
        t.matches("OUTSIDE quotatop  UpdateServiceJob").count(),
        1,
        "{t}"
    );

    // policy check judges the change like any other: no change record, by boto3's principal.
    let policy = d.join("policy.toml");
    let audit = d.join("audit.jsonl");
    let o = run(plain(
        d,
        &[
            "policy",
            "check",
            "--queue",
            QUEUE,
            "--since",
            "1h",
            "--journal",
            journal,
            "--policy",
            policy.to_str().unwrap(),
            "--audit-log",
            audit.to_str().unwrap(),
        ],
    ))
    .await;
    let t = text(&o);
    println!("{t}");
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(
        t.contains(&format!(
            "20 → 77 by {BOTO3_ARN} (outside quotatop) without a change record"
        )),
        "{t}"
    );
    emu.shutdown().await.unwrap();
}
