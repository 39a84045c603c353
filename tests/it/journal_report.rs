//! `quotatop report` in its three formats, from a journal written through the library, and its
//! errors for a missing journal or queue.

use std::path::Path;
use std::process::Command;

use quotatop_analysis::scorecard::COLUMNS;
use quotatop_model::{
    Attempt, CapacityLimit, JobStatus, Millis, QueueSnapshot, QuotaShare, ServiceEnvironment,
    ServiceJob, SharingConfig, Snapshot, TrackedJob,
};
use quotatop_store::audit::{
    AuditLog, AuditRecord, AwsContext, JobRef, Operator, Outcome, RecordKind,
};
use quotatop_store::journal::{Journal, JournalConfig};

const G5: &str = "ml.g5.12xlarge"; // 4 GPUs

fn job(status: JobStatus) -> ServiceJob {
    ServiceJob {
        id: "job-1".into(),
        name: "train".into(),
        share: "a".into(),
        priority: 10,
        instance_type: G5.into(),
        instance_count: 1,
        status,
        status_reason: None,
        created_at: 1_000,
        scheduled_at: None,
        started_at: None,
        stopped_at: None,
        preemption_retries: None,
        class_tag: None,
        preemption: None,
        attempts: vec![],
        checkpoint_interval_ms: None,
        is_terminated: false,
        extras: Default::default(),
    }
}

fn snap(t: Millis, j: ServiceJob) -> Snapshot {
    let q = QueueSnapshot {
        name: "q".into(),
        environment: ServiceEnvironment {
            name: "se".into(),
            capacity: vec![CapacityLimit::new(G5, 2)],
        },
        shares: vec![QuotaShare::new(
            "a",
            vec![CapacityLimit::new(G5, 2)],
            SharingConfig::lend(),
        )],
        jobs: vec![TrackedJob {
            job: j.into(),
            arn: "arn".into(),
            described_at: Some(t),
            listed_at: t,
        }],
        server_time: Some(t),
        ..Default::default()
    };
    Snapshot {
        taken_at: t,
        sequence: t as u64,
        queues: vec![q],
        ..Default::default()
    }
}

/// One job: submitted at 1 s, running 10 s → 3 610 s on 1 × 4 GPUs, succeeded: 4 GPU-hours.
fn write_journal(path: &Path) {
    let mut j = Journal::open(path, JournalConfig::default()).unwrap();
    j.record(&snap(2_000, job(JobStatus::Pending))).unwrap();
    let mut running = job(JobStatus::Running);
    running.scheduled_at = Some(10_000);
    running.started_at = Some(10_000);
    running.attempts = vec![Attempt {
        resource_id: "tj-1".into(),
        started_at: Some(10_000),
        stopped_at: None,
        status_reason: None,
    }];
    j.record(&snap(20_000, running.clone())).unwrap();
    let mut done = running;
    done.status = JobStatus::Succeeded;
    done.stopped_at = Some(3_610_000);
    done.attempts[0].stopped_at = Some(3_610_000);
    j.record(&snap(3_620_000, done)).unwrap();
}

fn report(path: &Path, format: &str) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .args([
            "report", "--queue", "q", "--since", "2h", "--format", format,
        ])
        .arg("--journal")
        .arg(path)
        // Never the developer's own audit log (the default one is read when it exists).
        .env("HOME", path.parent().unwrap())
        .env_remove("XDG_DATA_HOME")
        .output()
        .unwrap()
}

fn stdout(o: &std::process::Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout.clone()).unwrap()
}

#[test]
fn report_in_markdown_json_and_csv() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.sqlite3");
    write_journal(&path);

    let md = stdout(&report(&path, "md"));
    assert!(md.starts_with("# Scorecard: q\n"), "{md}");
    // Queue row: 1 job, 4.0 completed of 8.0 allocated (2 × 4 GPUs × the 1 h 0 min 18 s
    // observed, not the 2 h asked for) = 49.8 %.
    assert!(md.contains("| queue q | 1 | 49.8% | 4.0 | 8.0 |"), "{md}");
    // The table's columns are the scorecard's column list, in its order.
    let head: String = COLUMNS.iter().map(|c| format!(" {} |", c.header)).collect();
    assert!(md.contains(&format!("\n| scope |{head}\n")), "{md}");
    assert!(md.contains("| share a |"), "{md}");
    assert!(md.contains("| band low (0-99) |"), "{md}");
    assert!(
        md.contains("## Fairness") && md.contains("## Methods"),
        "{md}"
    );
    assert!(
        md.contains("completed-work utilisation = productive GPU-hours"),
        "{md}"
    );

    let json: serde_json::Value = serde_json::from_str(&stdout(&report(&path, "json"))).unwrap();
    let u = &json["scorecard"]["queue_row"]["utilisation"];
    assert!((u["productive_gpu_hours"].as_f64().unwrap() - 4.0).abs() < 1e-9);
    assert!((u["ratio"].as_f64().unwrap() - 4.0 / 8.040_002_2).abs() < 1e-6);
    // Runnable estimated at the observation after PENDING (20 s) but capped at scheduling (10 s).
    assert_eq!(json["scorecard"]["queue_row"]["wait"]["p50_ms"], 0);
    assert!(
        json["scorecard"]["methods"]["wait"]
            .as_str()
            .unwrap()
            .contains("RUNNABLE")
    );
    assert_eq!(json["exceptions"]["per_operator"], serde_json::json!([]));

    let csv = stdout(&report(&path, "csv"));
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("scope,name,metric,value"));
    assert!(csv.contains("\nqueue,q,productive_gpu_hours,4\n"), "{csv}");
    assert!(
        csv.contains("\nqueue,q,allocated_gpu_hours,8.04000"),
        "{csv}"
    );
    assert!(csv.contains("\nfairness,a,held_gpu_hours,4\n"), "{csv}");
    // Each scope's figures are the scorecard's column list, in its order.
    let queue_metrics: Vec<&str> = csv
        .lines()
        .filter_map(|l| l.strip_prefix("queue,q,"))
        .filter_map(|l| l.split(',').next())
        .collect();
    let keys: Vec<&str> = COLUMNS.iter().map(|c| c.key).collect();
    assert_eq!(queue_metrics, keys);
    // Method texts contain commas: quoted.
    assert!(
        csv.contains("\nmethod,utilisation,text,\"completed-work"),
        "{csv}"
    );
}

fn audit_record(kind: RecordKind, old: u32, new: u32, outcome: Option<Outcome>) -> AuditRecord {
    AuditRecord {
        v: 2,
        seq: 0,
        time: "1970-01-01T00:00:25Z".into(),
        kind,
        change_id: "c1".into(),
        operator: Operator {
            user: "oncall".into(),
            host: "ops-1".into(),
            ..Default::default()
        },
        aws: AwsContext::default(),
        queue: "q".into(),
        share: "a".into(),
        job: JobRef {
            id: "job-1".into(),
            name: "train".into(),
            arn: "arn".into(),
        },
        old_priority: old,
        new_priority: new,
        justification: "deadline".into(),
        change_record: Some("CHG-7".into()),
        preview: String::new(),
        outcome,
        policy: None,
        repair: None,
        action: None,
        class_policy: None,
        batch_id: None,
        prev_hash: String::new(),
        hash: String::new(),
    }
}

/// Exceptions name the operator: a change the poller observed is joined with the audit log's
/// record of it; a second observed change nobody audited stays `(unknown)`.
#[test]
fn exceptions_join_the_audit_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.sqlite3");
    {
        let mut j = Journal::open(&path, JournalConfig::default()).unwrap();
        j.record(&snap(20_000, job(JobStatus::Runnable))).unwrap();
        let mut raised = job(JobStatus::Runnable);
        raised.priority = 2_000;
        j.record(&snap(30_000, raised.clone())).unwrap();
        raised.priority = 3_000;
        j.record(&snap(40_000, raised)).unwrap();
    }
    let log = AuditLog::new(dir.path().join("audit.jsonl"));
    log.append(audit_record(RecordKind::Intent, 10, 2_000, None))
        .unwrap();
    log.append(audit_record(
        RecordKind::Outcome,
        10,
        2_000,
        Some(Outcome::Succeeded { request_id: None }),
    ))
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .args([
            "report", "--queue", "q", "--since", "2h", "--format", "json",
        ])
        .arg("--journal")
        .arg(&path)
        .arg("--audit-log")
        .arg(log.path())
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let ops = json["exceptions"]["per_operator"].as_array().unwrap();
    let by = |name: &str| {
        ops.iter()
            .find(|o| o["operator"] == name)
            .unwrap_or_else(|| panic!("{name} in {ops:?}"))
    };
    assert_eq!(by("oncall@ops-1")["changes"], 1);
    assert_eq!(by("oncall@ops-1")["without_change_record"], 0);
    assert_eq!(by("(unknown)")["changes"], 1);
    // Raised twice in the window: listed.
    assert_eq!(json["exceptions"]["raised_repeatedly"][0]["raises"], 2);
    // An explicitly named audit log that cannot be read is an error, not a silent omission.
    let bad = Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .args(["report", "--queue", "q", "--journal"])
        .arg(&path)
        .args(["--audit-log", "/nonexistent/audit.jsonl"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("audit"));
}

#[test]
fn report_errors_are_clear() {
    let dir = tempfile::tempdir().unwrap();
    let missing = report(&dir.path().join("none.sqlite3"), "md");
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no journal at"));

    let path = dir.path().join("j.sqlite3");
    write_journal(&path);
    let o = Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .args(["report", "--queue", "other", "--journal"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("has no queue \"other\""), "{err}");
    // Issue 29 §2.12: a mistyped queue lists the ones the journal has.
    assert!(err.contains("(queues in it: q)"), "{err}");

    let bad = Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .args(["report", "--queue", "q", "--since", "7y", "--journal"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("bad duration unit"));
}

/// `--since` longer than the journal's history: the window starts at the queue's first
/// observation (2 s), not 7 days before the last, ends just after the last observation, and
/// every format says the history is shorter than asked. A `--since` within the history is
/// taken as asked.
#[test]
fn a_window_never_starts_before_the_first_observation() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.sqlite3");
    write_journal(&path);
    let since = |since: &str, format: &str| {
        Command::new(env!("CARGO_BIN_EXE_quotatop"))
            .args([
                "report", "--queue", "q", "--since", since, "--format", format,
            ])
            .arg("--journal")
            .arg(&path)
            .env("HOME", dir.path())
            .env_remove("XDG_DATA_HOME")
            .output()
            .unwrap()
    };
    let json: serde_json::Value = serde_json::from_str(&stdout(&since("7d", "json"))).unwrap();
    let w = &json["scorecard"]["window"];
    assert_eq!(
        (w["start"].as_i64(), w["end"].as_i64()),
        (Some(2_000), Some(3_620_001))
    );
    let h = &json["history"];
    assert_eq!(h["asked_ms"], 7 * 86_400_000_i64);
    assert_eq!(h["first_observed_at"], 2_000);
    assert_eq!(h["shorter_than_asked"], true);
    // A share at half its limit for the hour observed reads about half, not 0.6 %.
    let ratio = json["scorecard"]["queue_row"]["utilisation"]["ratio"]
        .as_f64()
        .unwrap();
    assert!((ratio - 0.4975).abs() < 1e-3, "{ratio}");

    let md = stdout(&since("7d", "md"));
    assert!(
        md.contains("**The history is shorter than asked:** 7d00h asked, but the journal's first observation of this queue is at 1970-01-01T00:00:02Z, so the window starts there and covers only 1h00m of history."),
        "{md}"
    );
    // Issue 29 §2.11: times in RFC 3339 and durations for people, never epoch milliseconds.
    assert!(
        md.contains("Window: 1970-01-01T00:00:02Z to 1970-01-01T01:00:20Z (service clock; 1h00m)."),
        "{md}"
    );
    assert!(md.contains("recovery window 1d00h"), "{md}");
    assert!(!md.contains("epoch ms") && !md.contains(" ms"), "{md}");
    let csv = stdout(&since("7d", "csv"));
    assert!(
        csv.contains("\nwindow,q,shorter_than_asked,true\n"),
        "{csv}"
    );

    let json: serde_json::Value = serde_json::from_str(&stdout(&since("30m", "json"))).unwrap();
    assert_eq!(
        json["scorecard"]["window"]["start"].as_i64(),
        Some(3_620_001 - 30 * 60_000)
    );
    assert_eq!(json["history"]["shorter_than_asked"], false);
    assert!(!stdout(&since("30m", "md")).contains("shorter than asked"));
}

/// `[deadlines]`, `[budgets]` and `[prices]` of the config file reach the report.
#[test]
fn report_reads_deadlines_budgets_and_prices_from_the_config_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.sqlite3");
    write_journal(&path);
    let cfg = dir.path().join("config.toml");
    std::fs::write(
        &cfg,
        "currency = \"EUR\"\n[deadlines.a]\ndeadline_factor = 0.5\n[budgets.\"*\"]\nmax_preemptions_per_job = 0\n[prices]\n\"ml.g5.12xlarge\" = 2.0\n",
    )
    .unwrap();
    let run = |format: &str| {
        Command::new(env!("CARGO_BIN_EXE_quotatop"))
            .args([
                "report", "--queue", "q", "--since", "2h", "--format", format,
            ])
            .arg("--journal")
            .arg(&path)
            .arg("--config")
            .arg(&cfg)
            .env("HOME", dir.path())
            .env_remove("XDG_DATA_HOME")
            .output()
            .unwrap()
    };
    let md = stdout(&run("md"));
    // The job's work is its 1 h of productive running; it had to succeed within 0.5 h.
    assert!(md.contains("missed deadlines 0/0 (all jobs: 1/1)"), "{md}");
    assert!(md.contains("| a | 1/1 |"), "{md}");
    assert!(md.contains("| a | 0 | 0 |"), "{md}");
    assert!(md.contains("Cost (EUR):"), "{md}");
    assert!(md.contains("productive 2.00,"), "{md}");
    assert!(
        md.contains("| share | allocated | productive | wasted |"),
        "{md}"
    );
    let csv = stdout(&run("csv"));
    assert!(csv.contains("\ncost,EUR,productive,2\n"), "{csv}");
    assert!(csv.contains("\ndelivery,all,missed_deadlines,1\n"), "{csv}");
    // A bad number in the named config file is an error, not a silent default.
    std::fs::write(&cfg, "[prices]\n\"ml.g5.12xlarge\" = -1.0\n").unwrap();
    let out = run("md");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("config.toml") && err.contains("prices"),
        "{err}"
    );
}

/// An archived journal that this user cannot write — its file and directory read-only, no WAL
/// files beside it — is reported on, and the report writes nothing. As root (who may write
/// anything) the report runs as the unprivileged user `nobody`, so the permissions bind.
#[cfg(unix)]
#[test]
fn a_read_only_journal_can_be_reported_on() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("archive");
    std::fs::create_dir(&archive).unwrap();
    let path = archive.join("journal.sqlite3");
    write_journal(&path);
    assert!(!archive.join("journal.sqlite3-wal").exists());
    let before = std::fs::read(&path).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
    std::fs::set_permissions(&archive, std::fs::Permissions::from_mode(0o555)).unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let root = real_uid() == 0;
    let mut c = if root {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_quotatop"));
        c
    } else {
        Command::new(env!("CARGO_BIN_EXE_quotatop"))
    };
    let out = c
        .args([
            "report", "--queue", "q", "--since", "2h", "--format", "json",
        ])
        .arg("--journal")
        .arg(&path)
        .env("HOME", &archive)
        .env_remove("XDG_DATA_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .output()
        .unwrap();
    let text = stdout(&out);
    assert!(text.contains("\"queue\""), "{text}");
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "the report wrote nothing"
    );
    assert!(!archive.join("journal.sqlite3-wal").exists());
    std::fs::set_permissions(&archive, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The real uid, from `/proc/self/status` (no libc call needed).
fn real_uid() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(u32::MAX)
}

/// `report --since` takes an RFC 3339 time as docs/running.md says (as `audit list` does), the same
/// window as the equivalent duration; a time after the last observation, or a malformed one,
/// is a clear error.
#[test]
fn since_takes_a_time_or_a_duration() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.sqlite3");
    write_journal(&path);
    let run = |since: &str| {
        Command::new(env!("CARGO_BIN_EXE_quotatop"))
            .args([
                "report", "--queue", "q", "--format", "json", "--since", since,
            ])
            .arg("--journal")
            .arg(&path)
            .env("HOME", dir.path())
            .env_remove("XDG_DATA_HOME")
            .output()
            .unwrap()
    };
    // The last observation is at 3,620 s after the epoch.
    let by_time: serde_json::Value =
        serde_json::from_str(&stdout(&run("1970-01-01T00:10:20Z"))).unwrap();
    let by_duration: serde_json::Value = serde_json::from_str(&stdout(&run("3000s"))).unwrap();
    assert!(by_time["history"].is_object(), "{by_time}");
    assert_eq!(by_time["history"], by_duration["history"]);
    assert_eq!(by_time["history"]["asked_ms"], 3_000_000);
    for (since, want) in [
        (
            "2030-01-01T00:00:00Z",
            "after the journal's last observation",
        ),
        ("2026-13-01T00:00:00Z", "not an RFC 3339 time"),
    ] {
        let out = run(since);
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{since}: {err}");
    }
}
