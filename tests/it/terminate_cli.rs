//! `quotatop terminate` end to end against the emulator: the reason AWS records, the audit
//! trail around the call, a lost answer read back, two operators at once, read-only mode, a
//! policy refusal in the gate's words, and `audit reconcile` deciding an intent left without
//! outcome.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::emulator_support::*;
use aws_sdk_batch::types::QuotaShareResourceSharingStrategy as Strategy;
use quotatop_emulator::{EmulatorHandle, FaultSpec};
use quotatop_store::audit::{self, Outcome, RecordKind, Verdict};

pub fn temp_log(name: &str) -> crate::temp_support::TempPath {
    crate::temp_support::path(&format!("terminate-{name}"), "audit.jsonl")
}

/// `quotatop SUB ARGS` against the emulator at `url`, writing `log`, with no user config.
pub fn cmd(sub: &str, url: &str, log: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_quotatop"));
    c.arg(sub)
        .args(args)
        .args(["--endpoint-url", url, "--queue", QUEUE, "--log"])
        .arg(log)
        .env("AWS_ACCESS_KEY_ID", "AKIDTEST")
        .env("AWS_SECRET_ACCESS_KEY", "secret")
        .env("AWS_REGION", "us-east-1")
        .env_remove("QUOTATOP_READ_ONLY")
        .env_remove("QUOTATOP_CONFIG")
        .env("XDG_CONFIG_HOME", log.with_file_name("no-config"))
        .stdin(Stdio::null());
    c
}

pub fn reconcile(url: &str, log: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .args(["audit", "reconcile", "--endpoint-url", url, "--log"])
        .arg(log)
        .env("AWS_ACCESS_KEY_ID", "AKIDTEST")
        .env("AWS_SECRET_ACCESS_KEY", "secret")
        .env("AWS_REGION", "us-east-1")
        .output()
        .unwrap()
}

pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

pub async fn run(c: Command) -> Output {
    let mut c = c;
    tokio::task::spawn_blocking(move || c.output().expect("quotatop runs"))
        .await
        .expect("join")
}

/// One share of 2 instances: two running jobs and one waiting.
pub async fn world() -> (EmulatorHandle, [String; 3]) {
    let h = start(&[(M5, 4)], "").await;
    let c = client(&h, 3);
    create_share(&c, "team", &[(M5, 2)], Strategy::Reserve, None, false).await;
    let a = submit(&c, "alpha", "team", M5, 1, 3).await;
    let b = submit(&c, "beta", "team", M5, 1, 1).await;
    h.advance(10_000).unwrap();
    let w = submit(&c, "waiter", "team", M5, 1, 0).await;
    h.advance(1_000).unwrap();
    (h, [a, b, w])
}

/// The job's status, status reason and whether it was terminated, as the engine has it.
pub fn state(h: &EmulatorHandle, id: &str) -> (String, Option<String>, bool) {
    h.with_engine(|e| {
        let j = e.job(e.find(id).unwrap()).unwrap();
        (
            j.status.as_str().to_string(),
            j.status_reason.clone(),
            j.is_terminated,
        )
    })
    .unwrap()
}

const REASON: &str = "freeing capacity for incident 12";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminating_records_the_reason_in_aws_and_the_audit_log() {
    let (h, [a, _, w]) = world().await;
    let log = temp_log("ok");
    let dry = run(cmd(
        "terminate",
        &h.endpoint_url(),
        &log,
        &[&a, "--reason", REASON, "--dry-run"],
    ))
    .await;
    let t = text(&dry);
    assert!(dry.status.success(), "{t}");
    // The preview: the job's run, the waiting job the freed instance starts.
    assert!(t.contains("has run") && t.contains("throws"), "{t}");
    assert!(t.contains("- waiter (share team"), "{t}");
    assert!(t.contains("dry run: nothing changed"), "{t}");
    assert!(!log.exists());
    assert_eq!(state(&h, &a).0, "RUNNING");

    let out = run(cmd(
        "terminate",
        &h.endpoint_url(),
        &log,
        &[&a, "--reason", REASON, "--yes"],
    ))
    .await;
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    let (status, reason, terminated) = state(&h, &a);
    assert_eq!(status, "FAILED");
    assert!(terminated);
    let reason = reason.unwrap();
    assert!(
        reason.starts_with("quotatop: ") && reason.ends_with(REASON),
        "{reason}"
    );
    let records = audit::read_records(&log).unwrap();
    assert_eq!(records.len(), 2, "one intent, one outcome");
    assert_eq!(records[0].1.kind, RecordKind::Intent);
    let action = records[0].1.action.as_ref().unwrap();
    assert_eq!(action.call, "TerminateServiceJob");
    assert_eq!(action.target, a);
    assert!(
        records[0].1.preview.contains("starts waiter"),
        "{:?}",
        records[0].1.preview
    );
    assert!(matches!(
        records[1].1.outcome,
        Some(Outcome::Succeeded { .. })
    ));
    assert_eq!(audit::verify(&log).map(|h| h.count), Ok(2));
    let _ = w;
    h.shutdown().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_answer_is_read_back_and_recorded_once() {
    let (h, [a, _, _]) = world().await;
    // Every answer lost: the SDK's retries all lose theirs too; the job is read back.
    h.set_faults(FaultSpec::parse("terminateservicejob:lose-answer=1").unwrap());
    let log = temp_log("lost");
    let out = run(cmd(
        "terminate",
        &h.endpoint_url(),
        &log,
        &[&a, "--reason", REASON, "--yes"],
    ))
    .await;
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("landed as read back"), "{t}");
    assert!(h.calls("terminateservicejob") >= 1);
    assert!(state(&h, &a).2, "terminated");
    let records = audit::read_records(&log).unwrap();
    assert_eq!(records.len(), 2, "one true record: intent and outcome");
    match &records[1].1.outcome {
        Some(Outcome::Reconciled {
            verdict,
            call_error,
            ..
        }) => {
            assert_eq!(*verdict, Verdict::Landed);
            assert!(call_error.is_some());
        }
        other => panic!("{other:?}"),
    }
    // Nothing left for reconcile.
    h.set_faults(FaultSpec::none());
    let r = reconcile(&h.endpoint_url(), &log);
    assert!(text(&r).contains("nothing to reconcile"), "{}", text(&r));
    h.shutdown().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_operators_at_once_each_get_one_true_record() {
    let (h, [a, _, _]) = world().await;
    // Each call held a second: both processes read the job running and both call.
    h.set_faults(FaultSpec::parse("terminateservicejob:hold=1s").unwrap());
    let log = temp_log("race");
    let spawn = |reason: &str| {
        cmd(
            "terminate",
            &h.endpoint_url(),
            &log,
            &[&a, "--reason", reason, "--yes"],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
    };
    let one = spawn("operator one: incident 12");
    let two = spawn("operator two: incident 12");
    let (one, two) = (
        one.wait_with_output().unwrap(),
        two.wait_with_output().unwrap(),
    );
    let records = audit::read_records(&log).unwrap();
    let changes = audit::changes(&records);
    assert!(
        one.status.success() && two.status.success(),
        "{}\n{}",
        text(&one),
        text(&two)
    );
    assert_eq!(changes.len(), 2, "{}\n{}", text(&one), text(&two));
    assert_eq!(h.calls("terminateservicejob"), 2);
    assert_ne!(changes[0].intent.change_id, changes[1].intent.change_id);
    for c in &changes {
        let outcome = c.outcome.as_ref().expect("each change has its outcome");
        assert!(c.took_effect(), "{:?}", outcome.outcome);
    }
    let (status, reason, terminated) = state(&h, &a);
    assert_eq!(status, "FAILED");
    assert!(terminated);
    // Terminated once: the reason is one operator's, whole.
    let reason = reason.unwrap();
    assert!(
        reason.ends_with("operator one: incident 12")
            || reason.ends_with("operator two: incident 12"),
        "{reason}"
    );
    assert_eq!(audit::verify(&log).map(|h| h.count), Ok(4));
    h.shutdown().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_and_the_policy_refuse_before_anything_is_written() {
    let (h, [a, _, _]) = world().await;
    let log = temp_log("refused");
    let mut c = cmd(
        "terminate",
        &h.endpoint_url(),
        &log,
        &[&a, "--reason", REASON, "--yes"],
    );
    c.env("QUOTATOP_READ_ONLY", "1");
    let out = run(c).await;
    assert!(!out.status.success());
    assert!(
        text(&out).contains("read-only mode: terminate refuses"),
        "{}",
        text(&out)
    );
    assert!(!log.exists());

    // A class whose jobs only on-call may end.
    let dir: PathBuf = log.with_file_name("cfg");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.toml"), "").unwrap();
    std::fs::write(
        dir.join("policy.toml"),
        "version = 1\n[[class]]\nname = \"team-work\"\npriority = [0, 9]\nshares = [\"team\"]\nterminate = [\"oncall-nobody\"]\n",
    )
    .unwrap();
    let mut c = cmd(
        "terminate",
        &h.endpoint_url(),
        &log,
        &[&a, "--reason", REASON, "--yes"],
    );
    c.arg("--config").arg(dir.join("config.toml"));
    let out = run(c).await;
    let t = text(&out);
    assert!(!out.status.success(), "{t}");
    assert!(t.contains("refused by the policy"), "{t}");
    assert!(t.contains("nothing changed"), "{t}");
    assert!(!log.exists());
    assert_eq!(state(&h, &a).0, "RUNNING");
    assert_eq!(h.calls("terminateservicejob"), 0);
    h.shutdown().await.ok();
}

/// A process killed while its TerminateServiceJob is held: the intent has no outcome;
/// `audit reconcile` reads the job and decides it (once the held call landed: landed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconcile_decides_a_termination_left_without_outcome() {
    let (h, [a, _, _]) = world().await;
    h.set_faults(FaultSpec::parse("terminateservicejob:hold=2s").unwrap());
    let log = temp_log("killed");
    let mut child = cmd(
        "terminate",
        &h.endpoint_url(),
        &log,
        &[&a, "--reason", REASON, "--yes"],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while h.fault_stats().held < 1 {
        assert!(Instant::now() < deadline, "the call was never held");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(
        audit::read_records(&log).unwrap().len(),
        1,
        "the intent only"
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while !state(&h, &a).2 {
        assert!(Instant::now() < deadline, "the held call never landed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    h.set_faults(FaultSpec::none());
    let r = reconcile(&h.endpoint_url(), &log);
    let t = text(&r);
    assert!(r.status.success(), "{t}");
    assert!(
        t.contains("TerminateServiceJob") && t.contains("landed"),
        "{t}"
    );
    let records = audit::read_records(&log).unwrap();
    assert_eq!(records.len(), 2);
    assert!(matches!(
        records[1].1.outcome,
        Some(Outcome::Reconciled {
            verdict: Verdict::Landed,
            ..
        })
    ));
    h.shutdown().await.ok();
}
