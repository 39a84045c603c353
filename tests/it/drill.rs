//! `quotatop drill` end to end against an emulator on a fast scaled clock: a full drill (two
//! lengths, two instance types, repeat 2) whose measurements are checked against the engine's
//! event log, `--dry-run` submitting nothing, the refusals, and the demo world's drill shares.
//! Stopping a drill (SIGTERM, timeout, kill and cleanup) is `drill_safety`.

use std::collections::BTreeSet;
use std::process::Command;

use crate::drill_support::*;
use quotatop_analysis::drill::{CheckpointVerdict, DrillReport};
use quotatop_emulator::{self as emulator, ClockMode, EmulatorConfig, EmulatorHandle, Scenario};
use quotatop_engine::{Event, EventReason, JobId};
use quotatop_model::JobStatus;
use quotatop_store::audit::{self, RecordKind};

fn job_of(h: &EmulatorHandle, uuid: &str) -> JobId {
    h.with_engine(|e| e.find(uuid))
        .unwrap()
        .unwrap_or_else(|| panic!("the engine has no job {uuid}"))
}

fn events_of(events: &[Event], job: JobId) -> Vec<&Event> {
    events.iter().filter(|e| e.job == job).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_drill_measures_what_the_engine_did() {
    // 400x: a 10-minute borrower job lasts 1.5 s of wall time, so a drill slowed by a loaded
    // machine still submits the priority job before any borrower job ends.
    let h = start(400.0).await;
    let tmp = temp("full");
    let dir = tmp.path();
    let checks = dir.join("checks.txt");
    // The check also writes to stdout (which must not break --format json) and leaves a
    // process in the background (which must not outlive the drill).
    let pids = dir.join("pids.txt");
    let check = format!(
        "echo noise; sleep 300 >/dev/null 2>&1 & echo $! >> {}; echo \"$QUOTATOP_DRILL_RUN $QUOTATOP_DRILL_JOB_ID $QUOTATOP_DRILL_ATTEMPT\" >> {}; test \"$QUOTATOP_DRILL_ATTEMPT\" = 2",
        pids.display(),
        checks.display()
    );
    let out = run({
        let mut c = drill(
            &h.endpoint_url(),
            dir,
            &[
                "--lender",
                "lender",
                "--borrower",
                "borrower",
                "--instance-type",
                XL,
                "--instance-type",
                XXL,
                "--lengths",
                "10m,20m",
                "--repeat",
                "2",
                "--priority-length",
                "2m",
                "--format",
                "json",
                "--yes",
                "--checkpoint-check",
                &check,
            ],
        );
        c.arg("--timeout").arg("5m");
        c
    })
    .await;
    assert!(out.status.success(), "{}", text(&out));
    let report: DrillReport = serde_json::from_slice(&out.stdout).expect("a JSON report");
    // Alive: /proc has it and it is not a zombie waiting to be reaped (killed, not yet reaped).
    let process_alive = |pid: &str| {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            s.rsplit(')')
                .next()
                .is_some_and(|r| !r.trim_start().starts_with('Z'))
        })
    };
    let pids_text = std::fs::read_to_string(&pids).expect("the check ran");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
    let left = loop {
        let left: Vec<&str> = pids_text.lines().filter(|p| process_alive(p)).collect();
        if left.is_empty() || std::time::Instant::now() > deadline {
            break left;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert!(
        left.is_empty(),
        "the check's background processes outlived it: {left:?}"
    );
    assert_eq!(report.interrupted, None);
    assert_eq!(report.repetitions.len(), 8, "2 types x 2 lengths x 2");
    let types: BTreeSet<&str> = report
        .repetitions
        .iter()
        .map(|r| r.spec.instance_type.as_str())
        .collect();
    assert_eq!(types, BTreeSet::from([XL, XXL]));
    let lengths: BTreeSet<i64> = report
        .repetitions
        .iter()
        .map(|r| r.spec.length_ms)
        .collect();
    assert_eq!(lengths, BTreeSet::from([600_000, 1_200_000]));

    let events: Vec<Event> = h.recent_events().unwrap().into_iter().collect();
    let mut checked_preemptions = 0;
    for r in &report.repetitions {
        // Reclaim latency: the engine's submission of the priority job to its RUNNING.
        let prio = job_of(&h, &r.priority_job_id);
        let ev = events_of(&events, prio);
        let submitted = ev
            .iter()
            .find(|e| e.reason == EventReason::Submitted)
            .unwrap()
            .time;
        let running = ev
            .iter()
            .find(|e| e.to == JobStatus::Running)
            .expect("the priority job ran")
            .time;
        assert_eq!(
            r.priority_submitted_at, submitted,
            "repetition {}",
            r.spec.index
        );
        assert_eq!(
            r.reclaim_latency_ms,
            Some(running - submitted),
            "repetition {}",
            r.spec.index
        );
        // Preemptions: exactly the borrower jobs the engine preempted after that submission,
        // at the times it did, and their next start.
        let mut preempted_by_engine = BTreeSet::new();
        for b in &r.borrower_job_ids {
            let id = job_of(&h, b);
            let ev = events_of(&events, id);
            let Some(p) = ev
                .iter()
                .find(|e| matches!(e.reason, EventReason::Preempted(_)) && e.time >= submitted)
            else {
                continue;
            };
            preempted_by_engine.insert(b.clone());
            let m = r
                .preempted
                .iter()
                .find(|m| &m.job_id == b)
                .unwrap_or_else(|| panic!("{b} was preempted but the drill did not see it"));
            assert_eq!(m.requeued_at, p.time);
            assert_eq!(p.to, JobStatus::Runnable);
            let restart = ev
                .iter()
                .find(|e| e.to == JobStatus::Running && e.time > p.time)
                .expect("the preempted job restarted");
            assert_eq!(m.restarted_at, Some(restart.time));
            assert_eq!(m.requeue_to_restart_ms, Some(restart.time - p.time));
            assert_eq!(m.preempted_attempts, 1);
            assert_eq!(m.attempt, 2);
            assert_eq!(m.checkpoint, CheckpointVerdict::Resumed);
            checked_preemptions += 1;
        }
        let seen: BTreeSet<String> = r.preempted.iter().map(|p| p.job_id.clone()).collect();
        assert_eq!(seen, preempted_by_engine, "repetition {}", r.spec.index);
        // The priority job takes all the lender's idle capacity: everything lent comes back.
        let lent = if r.spec.instance_type == XL { 2 } else { 1 };
        assert_eq!(r.preempted.len(), lent, "repetition {}", r.spec.index);
        assert!(r.lost_gpu_hours.is_some_and(|l| l > 0.0), "{r:?}");
    }
    assert_eq!(checked_preemptions, 12);
    assert_eq!(report.aggregate.preempted, 12);
    assert_eq!(report.aggregate.resumed, 12);
    assert!(report.aggregate.reclaim_p50_ms.is_some());
    // The checkpoint check ran once per restarted job, with its id and attempt.
    let lines = std::fs::read_to_string(&checks).unwrap();
    assert_eq!(lines.lines().count(), 12, "{lines}");
    assert!(
        lines
            .lines()
            .all(|l| l.starts_with(&report.run_id) && l.ends_with(" 2"))
    );

    // Nothing of the drill is left running; every job was tagged and every call audited.
    assert_eq!(
        alive(&h, &format!("{}-", report.run_id)),
        Vec::<String>::new()
    );
    let recs = audit::read_records(&dir.join("audit.jsonl")).unwrap();
    let submits: Vec<_> = recs
        .iter()
        .filter(|(_, r)| {
            r.action
                .as_ref()
                .is_some_and(|a| a.call == "SubmitServiceJob")
        })
        .collect();
    let jobs: usize = report
        .repetitions
        .iter()
        .map(|r| r.borrower_job_ids.len() + 1)
        .sum();
    assert_eq!(submits.len(), 2 * jobs, "an intent and an outcome per job");
    for (_, r) in &submits {
        let a = r.action.as_ref().unwrap();
        assert_eq!(a.run_id.as_deref(), Some(report.run_id.as_str()));
        assert!(
            a.detail.contains("preemptionRetriesBeforeTermination 3"),
            "{a:?}"
        );
        if r.kind == RecordKind::Outcome {
            let tags = h.with_engine(|e| e.find(&r.job.id).is_some()).unwrap();
            assert!(tags, "{} exists", r.job.id);
        }
    }
    // The report is kept in the journal.
    let j = quotatop_store::journal::Journal::open_existing(
        &dir.join("journal.sqlite3"),
        quotatop_store::journal::JournalConfig::default(),
    )
    .unwrap();
    let kept = j.drills(QUEUE, 0).unwrap();
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].run_id, report.run_id);
    drop(j);
    // ... and `report` shows it.
    let out = run({
        let mut c = Command::new(env!("CARGO_BIN_EXE_quotatop"));
        c.args(["report", "--queue", QUEUE, "--since", "30d", "--journal"])
            .arg(dir.join("journal.sqlite3"))
            .env("XDG_CONFIG_HOME", dir.join("no-config"))
            .env("XDG_DATA_HOME", dir.join("no-data"));
        c
    })
    .await;
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("## Preemption drills"), "{t}");
    assert!(
        t.contains(&format!(
            "- {} (lender / borrower): 8 repetitions",
            report.run_id
        )),
        "{t}"
    );
    // Every drill job carries the run's tag.
    let sdk = crate::emulator_support::client(&h, 1);
    for (_, r) in submits
        .iter()
        .filter(|(_, r)| r.kind == RecordKind::Outcome)
    {
        let tags = sdk
            .list_tags_for_resource()
            .resource_arn(&r.job.arn)
            .send()
            .await
            .unwrap();
        assert_eq!(
            tags.tags().and_then(|t| t.get("quotatop:drill")),
            Some(&report.run_id),
            "{}",
            r.job.name
        );
    }
    h.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_submits_nothing_and_refusals_name_the_share_to_change() {
    let h = start(60.0).await;
    let tmp = temp("dry");
    let dir = tmp.path();
    let url = h.endpoint_url();
    let submits = || h.calls("submitservicejob");

    let out = run(drill(
        &url,
        dir,
        &[
            "--lender",
            "lender",
            "--borrower",
            "borrower",
            "--lengths",
            "10m,1h",
            "--repeat",
            "2",
            "--baseline",
            "--dry-run",
        ],
    ))
    .await;
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("dry run: nothing submitted"), "{t}");
    assert!(t.contains("repetitions (10):"), "{t}");
    assert!(
        t.contains("ml.g5.xlarge: lender idle 2 of 2, borrower idle 1 of 1, may borrow 2 -> 3 borrower jobs (2 borrowed), priority job of 2"),
        "{t}"
    );
    assert!(t.contains("every job tagged quotatop:drill="), "{t}");
    assert!(t.contains("expected"), "{t}");
    assert_eq!(submits(), 0);

    // With prices, the estimated cost.
    let cfg = dir.join("config.toml");
    std::fs::write(
        &cfg,
        "currency = \"USD\"\n[prices]\n\"ml.g5.xlarge\" = 1.5\n",
    )
    .unwrap();
    let out = run({
        let mut c = drill(
            &url,
            dir,
            &[
                "--lender",
                "lender",
                "--borrower",
                "borrower",
                "--instance-type",
                XL,
                "--dry-run",
            ],
        );
        c.arg("--config").arg(&cfg);
        c
    })
    .await;
    let t = text(&out);
    assert!(t.contains("cost      about ") && t.contains(" USD"), "{t}");

    let refused = |args: &'static [&'static str], why: &'static str| {
        let c = drill(&url, dir, args);
        async move {
            let out = run(c).await;
            let t = text(&out);
            assert!(!out.status.success(), "{t}");
            assert!(t.contains(why), "expected {why:?} in\n{t}");
        }
    };
    refused(
        &[
            "--lender",
            "reserved",
            "--borrower",
            "borrower",
            "--allow-busy",
            "--yes",
        ],
        "share reserved does not lend (strategy RESERVE): change its strategy",
    )
    .await;
    refused(
        &["--lender", "borrower", "--borrower", "lender", "--yes"],
        "share lender does not borrow (strategy LEND): change it to LEND_AND_BORROW",
    )
    .await;
    refused(
        &["--lender", "busy", "--borrower", "borrower", "--yes"],
        "share busy has 1 RUNNABLE job of others (",
    )
    .await;
    refused(
        &[
            "--lender",
            "lender",
            "--borrower",
            "borrower",
            "--read-only",
            "--yes",
        ],
        "read-only mode: drill refuses",
    )
    .await;
    refused(
        &[
            "--lender",
            "lender",
            "--borrower",
            "borrower",
            "--lengths",
            "20h",
            "--yes",
        ],
        "the template's stopping condition (MaxRuntimeInSeconds 36000) is shorter",
    )
    .await;
    refused(
        &["--lender", "lender", "--borrower", "borrower"],
        "not on a terminal: pass --yes",
    )
    .await;
    assert_eq!(submits(), 0, "no refusal submitted anything");
    h.shutdown().await.unwrap();
}

/// The demo world has the two quiet drill shares: a dry run plans a drill with no override.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_world_can_be_drilled_without_overrides() {
    let scenario = Scenario::parse(quotatop::commands::demo::DEMO_SCENARIO).unwrap();
    let mut config = EmulatorConfig::from_scenario(scenario).unwrap();
    config.clock = ClockMode::Scaled(60.0);
    let h = emulator::start(config).await.unwrap();
    let tmp = temp("demo");
    let dir = tmp.path();
    let mut c = Command::new(env!("CARGO_BIN_EXE_quotatop"));
    c.args([
        "drill",
        "--queue",
        "ml-training",
        "--lender",
        "lender",
        "--borrower",
        "borrower",
        "--dry-run",
        "--endpoint-url",
        &h.endpoint_url(),
        "--template",
    ])
    .arg(dir.join("job.json"))
    .arg("--log")
    .arg(dir.join("audit.jsonl"))
    .env("AWS_ACCESS_KEY_ID", "AKIDTEST")
    .env("AWS_SECRET_ACCESS_KEY", "secret")
    .env("AWS_REGION", "us-east-1")
    .env_remove("QUOTATOP_READ_ONLY")
    .env_remove("QUOTATOP_CONFIG")
    .env("XDG_CONFIG_HOME", dir.join("no-config"));
    let out = run(c).await;
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(
        t.contains("ml.g5.2xlarge: lender idle 2 of 2, borrower idle 2 of 2, may borrow 2 -> 4 borrower jobs (2 borrowed), priority job of 2"),
        "{t}"
    );
    h.shutdown().await.unwrap();
}
