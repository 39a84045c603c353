//! `quotatop shares export / plan / apply` end to end against the emulator: a round trip with
//! no changes, a lint that lists every problem and refuses, an apply that lands (checked
//! through the API), and a fault mid-apply that leaves a truthful audit log.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::emulator_support::*;
use aws_sdk_batch::types::QuotaShareResourceSharingStrategy as Strategy;
use quotatop_emulator::EmulatorHandle;
use quotatop_store::audit::{AuditRecord, Outcome, RecordKind};

fn temp_dir(name: &str) -> crate::temp_support::TempPath {
    crate::temp_support::dir_path(&format!("shares-{name}"))
}

/// `quotatop shares SUB --queue qm-queue --endpoint-url URL ARGS`, with no user config or
/// journal (a temporary home), one API attempt per call, stdin not a terminal.
fn cmd(url: &str, dir: &Path, sub: &str, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_quotatop"));
    c.args(["shares", sub, "--queue", QUEUE, "--endpoint-url", url])
        .args(args)
        .env("AWS_ACCESS_KEY_ID", "AKIDTEST")
        .env("AWS_SECRET_ACCESS_KEY", "secret")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_MAX_ATTEMPTS", "1")
        .env_remove("QUOTATOP_READ_ONLY")
        .env_remove("QUOTATOP_CONFIG")
        .env_remove("QUOTATOP_AUDIT_LOG")
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_DATA_HOME", dir.join("data"))
        .stdin(Stdio::null());
    c
}

async fn run(c: Command) -> Output {
    let mut c = c;
    tokio::task::spawn_blocking(move || c.output().expect("quotatop runs"))
        .await
        .expect("join")
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Two shares on an environment of 8 × M5 and 4 × G5.
async fn world() -> EmulatorHandle {
    let h = start(&[(M5, 8), (G5, 4)], "").await;
    let c = client(&h, 1);
    create_share(
        &c,
        "alpha",
        &[(M5, 4)],
        Strategy::LendAndBorrow,
        Some(50),
        true,
    )
    .await;
    create_share(
        &c,
        "beta",
        &[(M5, 4), (G5, 2)],
        Strategy::Reserve,
        None,
        false,
    )
    .await;
    h
}

/// The queue's shares as the API lists them: (name, limits, strategy, borrow limit).
async fn listed(h: &EmulatorHandle) -> Vec<(String, Vec<(String, i32)>, String, Option<i32>)> {
    let out = client(h, 1)
        .list_quota_shares()
        .job_queue(QUEUE)
        .send()
        .await
        .unwrap();
    let mut v: Vec<_> = out
        .quota_shares()
        .iter()
        .map(|s| {
            let mut limits: Vec<(String, i32)> = s
                .capacity_limits()
                .iter()
                .map(|l| {
                    (
                        l.capacity_unit().unwrap().to_string(),
                        l.max_capacity().unwrap(),
                    )
                })
                .collect();
            limits.sort();
            let sharing = s.resource_sharing_configuration().unwrap();
            (
                s.quota_share_name().unwrap().to_string(),
                limits,
                sharing.strategy().unwrap().as_str().to_string(),
                sharing.borrow_limit(),
            )
        })
        .collect();
    v.sort();
    v
}

fn records(log: &Path) -> Vec<AuditRecord> {
    quotatop_store::audit::read_records(log)
        .unwrap()
        .into_iter()
        .map(|(_, r)| r)
        .collect()
}

fn share(name: &str, strategy: &str, limits: &str) -> String {
    format!("\n[[shares]]\nname = \"{name}\"\nstrategy = \"{strategy}\"\nlimits = {{ {limits} }}\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_then_plan_shows_no_changes() {
    let h = world().await;
    let url = h.endpoint_url();
    let dir = temp_dir("roundtrip");
    let out = run(cmd(&url, &dir, "export", &[])).await;
    assert!(out.status.success(), "{}", text(&out));
    let file = dir.join("shares.toml");
    std::fs::write(&file, &out.stdout).unwrap();
    let exported = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(exported.contains("borrow_limit = 50"), "{exported}");
    assert!(
        exported.contains("limits = { \"ml.g5.xlarge\" = 2, \"ml.m5.large\" = 4 }"),
        "{exported}"
    );
    // The exported file is a replay configuration as it stands (one format).
    let cfg = quotatop_replay::ReplayConfig::parse(&exported, "shares.toml", "x").unwrap();
    assert_eq!(cfg.shares.len(), 2);
    let out = run(cmd(&url, &dir, "plan", &["-f", file.to_str().unwrap()])).await;
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("No changes: the live shares match the file."),
        "{}",
        text(&out)
    );
    assert!(stdout.contains("Lint: 0 error(s)"), "{}", text(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lint_errors_are_all_listed_and_nothing_is_applied() {
    let h = world().await;
    let url = h.endpoint_url();
    let dir = temp_dir("lint");
    let mut doc = String::new();
    // 21 shares: one with 6 limits, one with an instance type the environment lacks.
    doc.push_str(&share(
        "six",
        "LEND",
        "\"ml.m5.large\" = 1, \"ml.g5.xlarge\" = 1, \"ml.g5.2xlarge\" = 1, \"ml.g5.4xlarge\" = 1, \
         \"ml.g5.8xlarge\" = 1, \"ml.g5.12xlarge\" = 1",
    ));
    doc.push_str(&share("p5", "LEND", "\"ml.p5.48xlarge\" = 2"));
    // A live share whose entry cannot be read: named, and never planned as a deletion.
    doc.push_str(&share("alpha", "SHARE", "\"ml.m5.large\" = 4"));
    for i in 0..18 {
        doc.push_str(&share(&format!("s{i}"), "LEND", "\"ml.m5.large\" = 1"));
    }
    let file = dir.join("bad.toml");
    std::fs::write(&file, &doc).unwrap();
    let f = file.to_str().unwrap();
    let out = run(cmd(&url, &dir, "plan", &["-f", f])).await;
    assert!(!out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    for want in [
        "error: 21 shares: a job queue holds at most 20",
        "error: share six: 6 capacity limits: a share has 1 to 5",
        "error: share six: ml.g5.2xlarge is not an instance type of the service environment",
        "error: share six: ml.g5.12xlarge is not an instance type of the service environment",
        "error: share p5: ml.p5.48xlarge is not an instance type of the service environment (it has ml.g5.xlarge, ml.m5.large)",
        "error: share alpha: strategy \"SHARE\" is not RESERVE, LEND or LEND_AND_BORROW",
        "No plan: some entries of the file could not be read (see the lint).",
    ] {
        assert!(stdout.contains(want), "missing {want:?}\n{}", text(&out));
    }
    assert!(!stdout.contains("delete alpha"), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("lint error(s); nothing would be applied"),
        "{}",
        text(&out)
    );
    let before = listed(&h).await;
    let log = dir.join("audit.jsonl");
    let out = run(cmd(
        &url,
        &dir,
        "apply",
        &[
            "-f",
            f,
            "--reason",
            "r",
            "--change-record",
            "C",
            "--yes",
            "--allow-delete",
            "--log",
            log.to_str().unwrap(),
        ],
    ))
    .await;
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("lint errors; nothing changed"),
        "{}",
        text(&out)
    );
    assert_eq!(listed(&h).await, before);
    assert!(
        !log.exists(),
        "nothing may be audited when nothing is called"
    );

    // A malformed file and an unknown queue are named.
    std::fs::write(&file, "[[shares]]\nname = 3\n").unwrap();
    let out = run(cmd(&url, &dir, "plan", &["-f", f])).await;
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("bad.toml: line 2"),
        "{}",
        text(&out)
    );
    let mut c = cmd(&url, &dir, "plan", &["-f", f]);
    c.args(["--queue", "nope"]);
    let out = run(c).await;
    assert!(!out.status.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_lands_and_is_audited_per_call() {
    let h = world().await;
    let url = h.endpoint_url();
    let dir = temp_dir("apply");
    let log = dir.join("audit.jsonl");
    let file = dir.join("new.toml");
    // alpha: 4 -> 6 and borrow limit 50 -> 100; beta gone; gamma new.
    let doc = format!(
        "name = \"rebalance\"\n{}borrow_limit = 100\nin_share_preemption = true\n{}",
        share("alpha", "LEND_AND_BORROW", "\"ml.m5.large\" = 6"),
        share("gamma", "LEND", "\"ml.g5.xlarge\" = 2")
    );
    std::fs::write(&file, doc).unwrap();
    let f = file.to_str().unwrap();
    let l = log.to_str().unwrap();
    let base = ["-f", f, "--reason", "rebalance", "--log", l];
    let before = listed(&h).await;

    // Each missing permission refuses before any call.
    for (extra, why) in [
        (vec!["--yes", "--change-record", "CHG-1"], "--allow-delete"),
        (
            vec!["--yes", "--allow-delete"],
            "a change record is required",
        ),
        (
            vec!["--allow-delete", "--change-record", "CHG-1"],
            "not on a terminal",
        ),
    ] {
        let args: Vec<&str> = base.iter().copied().chain(extra).collect();
        let out = run(cmd(&url, &dir, "apply", &args)).await;
        assert!(!out.status.success(), "{}", text(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(why) && stderr.contains("nothing changed"),
            "{}",
            text(&out)
        );
    }
    let mut ro = cmd(
        &url,
        &dir,
        "apply",
        &[
            &base[..],
            &["--yes", "--allow-delete", "--change-record", "C"][..],
        ]
        .concat(),
    );
    ro.env("QUOTATOP_READ_ONLY", "1");
    let out = run(ro).await;
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("read-only mode"),
        "{}",
        text(&out)
    );
    assert_eq!(listed(&h).await, before);
    assert!(!log.exists());

    let args: Vec<&str> = base
        .iter()
        .copied()
        .chain(["--yes", "--allow-delete", "--change-record", "CHG-1"])
        .collect();
    let out = run(cmd(&url, &dir, "apply", &args)).await;
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    for want in [
        "applied      update alpha (UpdateQuotaShare",
        "applied      disable beta (UpdateQuotaShare",
        "applied      delete beta (DeleteQuotaShare",
        "applied      create gamma (CreateQuotaShare",
    ] {
        assert!(stdout.contains(want), "missing {want:?}\n{}", text(&out));
    }
    assert_eq!(
        listed(&h).await,
        vec![
            (
                "alpha".to_string(),
                vec![(M5.to_string(), 6)],
                "LEND_AND_BORROW".to_string(),
                Some(100)
            ),
            (
                "gamma".to_string(),
                vec![(G5.to_string(), 2)],
                "LEND".to_string(),
                None
            ),
        ]
    );
    let recs = records(&log);
    let calls: Vec<(RecordKind, String, String)> = recs
        .iter()
        .map(|r| {
            let a = r.action.as_ref().unwrap();
            (r.kind, a.call.clone(), a.target.clone())
        })
        .collect();
    let pair = |call: &str, target: &str| {
        [
            (RecordKind::Intent, call.to_string(), target.to_string()),
            (RecordKind::Outcome, call.to_string(), target.to_string()),
        ]
    };
    let want: Vec<_> = [
        pair("UpdateQuotaShare", "alpha"),
        pair("UpdateQuotaShare", "beta"),
        pair("DeleteQuotaShare", "beta"),
        pair("CreateQuotaShare", "gamma"),
    ]
    .concat();
    assert_eq!(calls, want);
    assert!(
        recs.iter()
            .all(|r| r.change_record.as_deref() == Some("CHG-1")
                && r.justification == "rebalance"
                && r.queue == QUEUE)
    );
    assert_eq!(
        recs[0].action.as_ref().unwrap().detail,
        "capacityLimits: ml.m5.large 4 -> ml.m5.large 6; borrowLimit: 50% -> 100%"
    );
    let run_ids: std::collections::BTreeSet<_> = recs
        .iter()
        .map(|r| r.action.as_ref().unwrap().run_id.clone())
        .collect();
    assert_eq!(run_ids.len(), 1);
    // The same file again: nothing to do.
    let out = run(cmd(&url, &dir, "plan", &["-f", f])).await;
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("No changes"),
        "{}",
        text(&out)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fault_mid_apply_stops_and_the_audit_log_says_exactly_what_happened() {
    // Every CreateQuotaShare fails (HTTP 500): the update before it lands, the first create
    // fails, the second is never attempted.
    let h = world().await;
    h.set_faults(quotatop_emulator::FaultSpec::parse("createquotashare:error=1").unwrap());
    let url = h.endpoint_url();
    let dir = temp_dir("fault");
    let log = dir.join("audit.jsonl");
    let file = dir.join("new.toml");
    let doc = format!(
        "{}in_share_preemption = true\nborrow_limit = 50\n{}{}{}",
        share("alpha", "LEND_AND_BORROW", "\"ml.m5.large\" = 3"),
        share(
            "beta",
            "RESERVE",
            "\"ml.m5.large\" = 4, \"ml.g5.xlarge\" = 2"
        ),
        share("gamma", "LEND", "\"ml.g5.xlarge\" = 1"),
        share("delta", "LEND", "\"ml.g5.xlarge\" = 1"),
    );
    std::fs::write(&file, doc).unwrap();
    let out = run(cmd(
        &url,
        &dir,
        "apply",
        &[
            "-f",
            file.to_str().unwrap(),
            "--reason",
            "grow",
            "--change-record",
            "CHG-2",
            "--yes",
            "--log",
            log.to_str().unwrap(),
        ],
    ))
    .await;
    assert!(!out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("applied      update alpha"),
        "{}",
        text(&out)
    );
    assert!(
        stdout.contains(
            "FAILED       create gamma (CreateQuotaShare): did not land (confirmed by read-back); the call answered: "
        ),
        "{}",
        text(&out)
    );
    assert!(
        stdout.contains("not attempted create delta (CreateQuotaShare)"),
        "{}",
        text(&out)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("stopped after 2 of 3 call(s)"),
        "{}",
        text(&out)
    );
    // One CreateQuotaShare reached the API (one attempt per call): delta's was never sent.
    assert_eq!(
        h.calls("createquotashare"),
        3,
        "two by world(), one by apply"
    );
    // The API: alpha changed, nothing created.
    let names: Vec<(String, i32)> = listed(&h)
        .await
        .into_iter()
        .map(|(n, l, _, _)| (n, l[0].1))
        .collect();
    assert_eq!(names, vec![("alpha".into(), 3), ("beta".into(), 2)]);
    // The log: alpha's intent and success, gamma's intent and failure, nothing of delta.
    let recs = records(&log);
    let seen: Vec<(RecordKind, String, Option<bool>)> = recs
        .iter()
        .map(|r| {
            (
                r.kind,
                r.action.as_ref().unwrap().target.clone(),
                r.outcome
                    .as_ref()
                    .map(|o| matches!(o, Outcome::Succeeded { .. })),
            )
        })
        .collect();
    assert_eq!(
        seen,
        vec![
            (RecordKind::Intent, "alpha".to_string(), None),
            (RecordKind::Outcome, "alpha".to_string(), Some(true)),
            (RecordKind::Intent, "gamma".to_string(), None),
            (RecordKind::Outcome, "gamma".to_string(), Some(false)),
        ]
    );
    assert!(
        matches!(&recs[3].outcome, Some(Outcome::Reconciled { verdict: quotatop_store::audit::Verdict::DidNotLand, call_error: Some(error), observed: Some(o), .. })
            if (error.contains("ServerException") || error.contains("500")) && o == "absent"),
        "{:?}",
        recs[3].outcome
    );
    quotatop_store::audit::verify(&log).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_config_policy_can_waive_the_change_record_and_is_recorded() {
    let h = world().await;
    let url = h.endpoint_url();
    let dir = temp_dir("policy");
    let log = dir.join("audit.jsonl");
    let config = dir.join("quotatop.toml");
    std::fs::write(&config, "[shares]\nchange_record_for_limits = false\n").unwrap();
    let file = dir.join("new.toml");
    std::fs::write(
        &file,
        format!(
            "{}borrow_limit = 50\nin_share_preemption = true\n{}",
            share("alpha", "LEND_AND_BORROW", "\"ml.m5.large\" = 5"),
            share(
                "beta",
                "RESERVE",
                "\"ml.m5.large\" = 4, \"ml.g5.xlarge\" = 2"
            ),
        ),
    )
    .unwrap();
    let out = run(cmd(
        &url,
        &dir,
        "apply",
        &[
            "-f",
            file.to_str().unwrap(),
            "--reason",
            "grow alpha",
            "--yes",
            "--config",
            config.to_str().unwrap(),
            "--log",
            log.to_str().unwrap(),
        ],
    ))
    .await;
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(listed(&h).await[0].1, vec![(M5.to_string(), 5)]);
    let recs = records(&log);
    assert_eq!(recs.len(), 2);
    let policy = recs[0].policy.as_deref().unwrap_or("");
    assert!(
        policy.starts_with("shares.change_record_for_limits=false (config "),
        "{policy}"
    );
    assert_eq!(recs[0].change_record, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_whose_answer_is_lost_is_recorded_as_what_happened() {
    // The first DeleteQuotaShare and the first CreateQuotaShare are carried out, then their
    // connections close without an answer; the SDK retries, and the retries meet the changes
    // already made ("does not exist", "already exists"). The share read back says they landed.
    let h = world().await;
    h.set_faults(
        quotatop_emulator::FaultSpec::parse(
            "createquotashare|deletequotashare:lose-answer-first=1",
        )
        .unwrap(),
    );
    let url = h.endpoint_url();
    let dir = temp_dir("lost");
    let log = dir.join("audit.jsonl");
    let file = dir.join("new.toml");
    let doc = format!(
        "{}in_share_preemption = true\nborrow_limit = 50\n{}",
        share("alpha", "LEND_AND_BORROW", "\"ml.m5.large\" = 4"),
        share("gamma", "LEND", "\"ml.g5.xlarge\" = 1"),
    );
    std::fs::write(&file, doc).unwrap();
    let mut c = cmd(
        &url,
        &dir,
        "apply",
        &[
            "-f",
            file.to_str().unwrap(),
            "--reason",
            "swap",
            "--change-record",
            "CHG-3",
            "--yes",
            "--allow-delete",
            "--log",
            log.to_str().unwrap(),
        ],
    );
    c.env("AWS_MAX_ATTEMPTS", "3");
    let out = run(c).await;
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    for want in [
        "applied      disable beta (UpdateQuotaShare",
        "applied      delete beta (DeleteQuotaShare): landed (confirmed by read-back); the call answered: ",
        "applied      create gamma (CreateQuotaShare): landed (confirmed by read-back); the call answered: ",
    ] {
        assert!(stdout.contains(want), "missing {want:?}\n{}", text(&out));
    }
    assert!(!stdout.contains("FAILED"), "{}", text(&out));
    // Each was retried once: the first attempt landed, the second met it.
    assert_eq!(h.calls("createquotashare"), 2 + 2);
    assert_eq!(h.calls("deletequotashare"), 2);
    let names: Vec<String> = listed(&h).await.into_iter().map(|s| s.0).collect();
    assert_eq!(names, ["alpha", "gamma"]);
    let recs = records(&log);
    assert_eq!(recs.len(), 6);
    for (r, call, word) in [
        (&recs[3], "DeleteQuotaShare", "does not exist"),
        (&recs[5], "CreateQuotaShare", "already exists"),
    ] {
        assert_eq!(r.action.as_ref().unwrap().call, call);
        match &r.outcome {
            Some(Outcome::Reconciled {
                verdict: quotatop_store::audit::Verdict::Landed,
                call_error: Some(e),
                observed: Some(_),
                ..
            }) => assert!(e.contains(word), "{e}"),
            other => panic!("{call}: {other:?}"),
        }
    }
    quotatop_store::audit::verify(&log).unwrap();
}

/// The apply arguments of the race tests: alpha 4 -> 3 (limits), beta's M5 4 -> 3.
fn race_file(dir: &Path) -> PathBuf {
    let file = dir.join("new.toml");
    let doc = format!(
        "{}in_share_preemption = true\nborrow_limit = 50\n{}",
        share("alpha", "LEND_AND_BORROW", "\"ml.m5.large\" = 3"),
        share(
            "beta",
            "RESERVE",
            "\"ml.m5.large\" = 3, \"ml.g5.xlarge\" = 2"
        ),
    );
    std::fs::write(&file, doc).unwrap();
    file
}

fn race_args<'a>(file: &'a Path, log: &'a Path) -> Vec<&'a str> {
    vec![
        "-f",
        file.to_str().unwrap(),
        "--reason",
        "race",
        "--change-record",
        "CHG-4",
        "--yes",
        "--log",
        log.to_str().unwrap(),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_share_changed_after_the_plan_is_not_overwritten() {
    // alpha's UpdateQuotaShare is held 1.5 s in the emulator; meanwhile another writer sets
    // beta's M5 limit to 1. The run re-reads beta before its call, sees the change and stops.
    let h = world().await;
    h.set_faults(quotatop_emulator::FaultSpec::parse("updatequotashare:latency=1500ms").unwrap());
    let url = h.endpoint_url();
    let dir = temp_dir("cas");
    let log = dir.join("audit.jsonl");
    let file = race_file(&dir);
    let child = cmd(&url, &dir, "apply", &race_args(&file, &log))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while h.calls("updatequotashare") == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "alpha's update never came"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    // alpha's call is being held; the other writer's goes through at once.
    h.set_faults(quotatop_emulator::FaultSpec::none());
    let c = client(&h, 1);
    let beta_arn = c
        .list_quota_shares()
        .job_queue(QUEUE)
        .send()
        .await
        .unwrap()
        .quota_shares()
        .iter()
        .find(|s| s.quota_share_name() == Some("beta"))
        .and_then(|s| s.quota_share_arn().map(String::from))
        .unwrap();
    c.update_quota_share()
        .quota_share_arn(beta_arn)
        .capacity_limits(
            aws_sdk_batch::types::QuotaShareCapacityLimit::builder()
                .capacity_unit(M5)
                .max_capacity(1)
                .build(),
        )
        .capacity_limits(
            aws_sdk_batch::types::QuotaShareCapacityLimit::builder()
                .capacity_unit(G5)
                .max_capacity(2)
                .build(),
        )
        .send()
        .await
        .unwrap();
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    assert!(!out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("applied      update alpha"),
        "{}",
        text(&out)
    );
    assert!(
        stdout.contains(
            "CHANGED      update beta (UpdateQuotaShare) not called: beta changed since the plan: capacityLimits planned from ml.g5.xlarge 2, ml.m5.large 4, now ml.g5.xlarge 2, ml.m5.large 1; plan again"
        ),
        "{}",
        text(&out)
    );
    // beta keeps the other writer's value.
    let now = listed(&h).await;
    assert_eq!(now[1].1, vec![(G5.to_string(), 2), (M5.to_string(), 1)]);
    assert_eq!(now[0].1, vec![(M5.to_string(), 3)]);
    let recs = records(&log);
    assert_eq!(recs.len(), 4);
    assert!(
        matches!(&recs[3].outcome, Some(Outcome::Failed { error }) if error.starts_with("not called: beta changed since the plan")),
        "{:?}",
        recs[3].outcome
    );
    quotatop_store::audit::verify(&log).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_apply_on_the_queue_is_refused_while_one_runs() {
    let h = world().await;
    let url = h.endpoint_url();
    let dir = temp_dir("held");
    let log = dir.join("audit.jsonl");
    let file = race_file(&dir);
    let before = listed(&h).await;
    let lists = h.calls("listquotashares");
    // Another run holds the queue's lock (this test process stands in for it).
    let held = quotatop_store::audit::AuditLog::new(&log)
        .lock_queue(QUEUE)
        .unwrap();
    let out = run(cmd(&url, &dir, "apply", &race_args(&file, &log))).await;
    assert!(!out.status.success(), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "another `shares apply` on queue {QUEUE} is running (PID {}",
            std::process::id()
        )) && stderr.contains("nothing changed"),
        "{}",
        text(&out)
    );
    assert_eq!(h.calls("listquotashares"), lists, "not even read");
    assert_eq!(listed(&h).await, before);
    assert!(!log.exists());
    // Released: the same run goes through.
    drop(held);
    let out = run(cmd(&url, &dir, "apply", &race_args(&file, &log))).await;
    assert!(out.status.success(), "{}", text(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_reconcile_decides_share_changes_killed_mid_call() {
    // alpha's UpdateQuotaShare is held 2 s in the emulator; the run is killed (SIGKILL) while
    // it waits, leaving alpha's intent without an outcome. `audit reconcile` reads alpha back
    // and records what it shows, counted by kind.
    let h = world().await;
    h.set_faults(quotatop_emulator::FaultSpec::parse("updatequotashare:latency=2s").unwrap());
    let url = h.endpoint_url();
    let dir = temp_dir("reconcile");
    let log = dir.join("audit.jsonl");
    let file = race_file(&dir);
    let mut child = cmd(&url, &dir, "apply", &race_args(&file, &log))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while h.calls("updatequotashare") == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "alpha's update never came"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    child.kill().unwrap();
    child.wait().unwrap();
    h.set_faults(quotatop_emulator::FaultSpec::none());
    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    let recs = records(&log);
    assert_eq!(recs.len(), 1, "alpha's intent alone");
    let reconcile = |log: &Path| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_quotatop"));
        c.args(["audit", "reconcile", "--endpoint-url", &url, "--log"])
            .arg(log)
            .env("AWS_ACCESS_KEY_ID", "AKIDTEST")
            .env("AWS_SECRET_ACCESS_KEY", "secret")
            .env("AWS_REGION", "us-east-1")
            .env("AWS_MAX_ATTEMPTS", "1")
            .env_remove("QUOTATOP_READ_ONLY")
            .env("XDG_CONFIG_HOME", dir.join("config"))
            .env("XDG_DATA_HOME", dir.join("data"));
        c
    };
    let out = run(reconcile(&log)).await;
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let alpha_now = listed(&h).await[0].1.clone();
    let verdict = if alpha_now == vec![(M5.to_string(), 3)] {
        "landed"
    } else {
        "did not land"
    };
    assert!(
        stdout.contains(&format!(
            "UpdateQuotaShare alpha: {verdict} (read: capacityLimits "
        )),
        "alpha is {alpha_now:?}\n{}",
        text(&out)
    );
    assert!(
        stdout.contains("by kind: UpdateQuotaShare: 1 reconciled, 0 left unknown"),
        "{}",
        text(&out)
    );
    let recs = records(&log);
    assert_eq!(recs.len(), 2);
    assert!(
        matches!(
            &recs[1].outcome,
            Some(Outcome::Reconciled {
                observed: Some(_),
                ..
            })
        ),
        "{:?}",
        recs[1].outcome
    );
    let out = run(reconcile(&log)).await;
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("nothing to reconcile"),
        "{}",
        text(&out)
    );
    // A --log that does not exist is an error, not "nothing to reconcile".
    let out = run(reconcile(&dir.join("typo.jsonl"))).await;
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no audit log at"),
        "{}",
        text(&out)
    );
    assert!(!dir.join("typo.jsonl").exists());
}
