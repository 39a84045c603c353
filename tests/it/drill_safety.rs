//! Stopping a drill leaves no drill job alive: SIGTERM in the middle, the timeout, and
//! `drill cleanup --run ID` after a SIGKILL.

use std::process::{Command, Stdio};

use crate::drill_support::*;
use quotatop_store::audit;

/// `drill --no-journal` prints its report and keeps it nowhere: no journal file is created,
/// and `--journal` with it is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drill_without_a_journal_creates_none() {
    let h = start(600.0).await;
    let tmp = temp("no-journal");
    let dir = tmp.path();
    let args = [
        "--lender",
        "lender",
        "--borrower",
        "borrower",
        "--lengths",
        "5h",
        "--yes",
        "--no-journal",
        "--timeout",
        "2s",
        "--instance-type",
        XL,
    ];
    let out = run(drill(&h.endpoint_url(), dir, &args)).await;
    let t = text(&out);
    assert!(t.contains("stopped: timeout after 2s of wall time"), "{t}");
    assert!(t.contains("report not kept (--no-journal)"), "{t}");
    assert!(!t.contains("kept in the journal"), "{t}");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    // The template and the audit log's files; no journal, no data directory.
    assert_eq!(
        names,
        [
            "audit.jsonl",
            "audit.jsonl.inflight",
            "audit.jsonl.lock",
            "job.json"
        ],
        "{t}"
    );
    assert_eq!(alive(&h, "drill-"), Vec::<String>::new());

    let mut c = drill(&h.endpoint_url(), dir, &args);
    c.arg("--journal").arg(dir.join("journal.sqlite3"));
    let out = run(c).await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("cannot be used with"), "{}", text(&out));
    assert!(!dir.join("journal.sqlite3").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_terminates_and_cleanup_ends_a_killed_drill() {
    let h = start(600.0).await;
    // The timeout: the drill stops, terminating its jobs, and says so.
    let tmp = temp("timeout");
    let dir = tmp.path();
    let out = run({
        let mut c = drill(
            &h.endpoint_url(),
            dir,
            &[
                "--lender",
                "lender",
                "--borrower",
                "borrower",
                "--lengths",
                "5h",
                "--yes",
            ],
        );
        c.args(["--timeout", "3s", "--instance-type", XL]);
        c
    })
    .await;
    let t = text(&out);
    assert!(!out.status.success(), "{t}");
    assert!(t.contains("stopped: timeout after 3s of wall time"), "{t}");
    assert!(t.contains("no drill job left alive"), "{t}");
    assert_eq!(alive(&h, "drill-"), Vec::<String>::new());

    // SIGKILL leaves the jobs running; `drill cleanup --run ID` ends them.
    let tmp = temp("kill");
    let dir = tmp.path();
    let mut child = drill(
        &h.endpoint_url(),
        dir,
        &[
            "--lender",
            "lender",
            "--borrower",
            "borrower",
            "--lengths",
            "5h",
            "--yes",
            "--instance-type",
            XL,
        ],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let run_id = running_drill(&h, &dir.join("audit.jsonl")).await;
    child.kill().unwrap();
    child.wait().unwrap();
    let prefix = format!("{run_id}-");
    assert!(!alive(&h, &prefix).is_empty(), "SIGKILL terminates nothing");
    let out = run({
        let mut c = Command::new(env!("CARGO_BIN_EXE_quotatop"));
        c.args([
            "drill",
            "cleanup",
            "--run",
            &run_id,
            "--endpoint-url",
            &h.endpoint_url(),
            "--log",
        ])
        .arg(dir.join("audit.jsonl"))
        .env("AWS_ACCESS_KEY_ID", "AKIDTEST")
        .env("AWS_SECRET_ACCESS_KEY", "secret")
        .env("AWS_REGION", "us-east-1")
        .env_remove("QUOTATOP_READ_ONLY")
        .env_remove("QUOTATOP_CONFIG")
        .env("XDG_CONFIG_HOME", dir.join("no-config"));
        c
    })
    .await;
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(
        t.contains(&format!("drill {run_id}: terminated 3 jobs")),
        "{t}"
    );
    assert_eq!(alive(&h, &prefix), Vec::<String>::new());
    h.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_mid_run_leaves_no_drill_job_alive() {
    let h = start(600.0).await;
    let tmp = temp("sigterm");
    let dir = tmp.path();
    let child = drill(
        &h.endpoint_url(),
        dir,
        &[
            "--lender",
            "lender",
            "--borrower",
            "borrower",
            "--lengths",
            "5h",
            "--yes",
        ],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    // Wait until the drill's borrower jobs run (the lender's capacity is lent).
    let prefix = format!("{}-", running_drill(&h, &dir.join("audit.jsonl")).await);
    assert!(!alive(&h, &prefix).is_empty());
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("interrupted (Ctrl-C or SIGTERM)"), "{err}");
    assert!(err.contains("no drill job left alive"), "{err}");
    assert_eq!(alive(&h, &prefix), Vec::<String>::new());
    // The terminations are in the audit log, intent and outcome.
    let recs = audit::read_records(&dir.join("audit.jsonl")).unwrap();
    let terms: Vec<_> = recs
        .iter()
        .filter(|(_, r)| {
            r.action
                .as_ref()
                .is_some_and(|a| a.call == "TerminateServiceJobs")
        })
        .collect();
    assert_eq!(terms.len(), 2, "{terms:?}");
    assert!(matches!(
        terms[1].1.outcome,
        Some(audit::Outcome::Succeeded { .. })
    ));
    h.shutdown().await.unwrap();
}

/// Stopped once the priority job runs, the drill still reports what the repetition measured.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drill_stopped_mid_repetition_reports_what_it_measured() {
    let h = start(600.0).await;
    let tmp = temp("partial");
    let dir = tmp.path();
    let child = drill(
        &h.endpoint_url(),
        dir,
        &[
            "--lender",
            "lender",
            "--borrower",
            "borrower",
            "--instance-type",
            XL,
            "--lengths",
            "20m",
            "--priority-length",
            "5h",
            "--format",
            "json",
            "--yes",
        ],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let running = h
            .with_engine(|e| {
                e.jobs().any(|j| {
                    j.name.ends_with("-priority") && j.status == quotatop_model::JobStatus::Running
                })
            })
            .unwrap();
        if running {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the priority job never ran"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(
        Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .unwrap()
            .success()
    );
    let out = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert!(!out.status.success());
    let report: quotatop_analysis::drill::DrillReport =
        serde_json::from_slice(&out.stdout).expect("a JSON report");
    assert_eq!(
        report.interrupted.as_deref(),
        Some("interrupted (Ctrl-C or SIGTERM)")
    );
    assert_eq!(report.repetitions.len(), 1);
    let r = &report.repetitions[0];
    assert!(r.reclaim_latency_ms.is_some_and(|l| l > 0), "{r:?}");
    assert_eq!(r.preempted.len(), 2, "{r:?}");
    assert!(r.notes[0].contains("the drill stopped during this repetition"));
    assert_eq!(report.aggregate.measured, 1);
    assert_eq!(
        alive(&h, &format!("{}-", report.run_id)),
        Vec::<String>::new()
    );
    h.shutdown().await.unwrap();
}
