//! `quotatop audit` end to end, and the audit log under two real processes.

use std::path::{Path, PathBuf};
use std::process::Command;

use quotatop::audit::{AuditLog, AuditRecord, AwsContext, JobRef, Operator, Outcome, RecordKind};

fn temp_log(name: &str) -> PathBuf {
    std::env::temp_dir()
        .join(format!(
            "quotatop-audit-cli-{}-{name}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        ))
        .join("audit.jsonl")
}

fn record(change: &str, kind: RecordKind, outcome: Option<Outcome>) -> AuditRecord {
    AuditRecord {
        v: 2,
        seq: 0,
        time: "2026-11-29T16:00:00.000Z".into(),
        kind,
        change_id: change.into(),
        operator: Operator {
            user: "oncall".into(),
            host: "ops-1".into(),
        },
        aws: AwsContext::default(),
        queue: "ml-training".into(),
        share: "research".into(),
        job: JobRef {
            id: format!("id-{change}"),
            name: format!("job-{change}"),
            arn: format!("arn:aws:batch:us-east-1:1:service-job/id-{change}"),
        },
        old_priority: 1,
        new_priority: 50,
        justification: "deadline, \"paper\"\u{1b}[2J".into(),
        change_record: Some("CHG-7".into()),
        preview: "position 3 -> 1".into(),
        outcome,
        repair: None,
        prev_hash: String::new(),
        hash: String::new(),
    }
}

fn quotatop(args: &[&str], log: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .args(args)
        .arg("--log")
        .arg(log)
        .output()
        .expect("quotatop runs")
}

/// Child mode: when re-run with QUOTATOP_TEST_APPEND set, append 50 records and exit.
#[test]
fn two_processes_append_concurrently_without_interleaving() {
    if let Ok(path) = std::env::var("QUOTATOP_TEST_APPEND") {
        let log = AuditLog::new(path);
        for i in 0..50 {
            log.append(record(
                &format!("{}-{i}", std::process::id()),
                RecordKind::Intent,
                None,
            ))
            .expect("append");
        }
        return;
    }
    let path = temp_log("two-procs");
    let me = std::env::current_exe().expect("test binary");
    let children: Vec<_> = (0..2)
        .map(|_| {
            Command::new(&me)
                .args([
                    "--exact",
                    "two_processes_append_concurrently_without_interleaving",
                ])
                .env("QUOTATOP_TEST_APPEND", &path)
                .spawn()
                .expect("child starts")
        })
        .collect();
    for mut c in children {
        assert!(c.wait().expect("child ends").success());
    }
    let out = quotatop(&["audit", "verify"], &path);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("100 records, chain intact"));
}

#[test]
fn verify_fails_at_the_tampered_line_with_a_nonzero_exit() {
    let path = temp_log("tamper");
    let log = AuditLog::new(&path);
    for i in 0..5 {
        log.append(record(&i.to_string(), RecordKind::Intent, None))
            .unwrap();
    }
    let text = std::fs::read_to_string(&path).unwrap();
    let tampered: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if i == 3 {
                l.replace("\"new_priority\":50", "\"new_priority\":9999")
            } else {
                l.to_string()
            }
        })
        .collect();
    std::fs::write(&path, tampered.join("\n") + "\n").unwrap();
    let out = quotatop(&["audit", "verify"], &path);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("line 4") && err.contains("edited"), "{err}");
}

#[test]
fn list_shows_intents_without_outcome_and_strips_escapes() {
    let path = temp_log("list");
    let log = AuditLog::new(&path);
    log.append(record("a", RecordKind::Intent, None)).unwrap();
    log.append(record(
        "a",
        RecordKind::Outcome,
        Some(Outcome::Succeeded {
            request_id: Some("req-9".into()),
        }),
    ))
    .unwrap();
    // A process killed between intent and outcome leaves only the intent.
    log.append(record("b", RecordKind::Intent, None)).unwrap();
    let out = quotatop(&["audit", "list"], &path);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("succeeded (req-9)"), "{text}");
    assert!(
        text.contains("job-b") && text.contains("OUTCOME UNKNOWN"),
        "{text}"
    );
    assert!(!text.contains('\u{1b}'), "escape reached the terminal");
    let only_a = quotatop(&["audit", "list", "--job", "job-a"], &path);
    assert!(!String::from_utf8_lossy(&only_a.stdout).contains("job-b"));
    let by_op = quotatop(&["audit", "list", "--by-operator"], &path);
    let t = String::from_utf8_lossy(&by_op.stdout);
    assert!(t.contains("oncall@ops-1") && t.contains("research"), "{t}");
    let future = quotatop(&["audit", "list", "--since", "2030-01-01T00:00:00Z"], &path);
    assert!(String::from_utf8_lossy(&future.stdout).contains("no priority changes"));
    let bad = quotatop(&["audit", "list", "--since", "soon"], &path);
    assert!(!bad.status.success());
}

#[test]
fn export_csv_and_json() {
    let path = temp_log("export");
    let log = AuditLog::new(&path);
    log.append(record("a", RecordKind::Intent, None)).unwrap();
    log.append(record(
        "a",
        RecordKind::Outcome,
        Some(Outcome::Failed {
            error: "ClientException: job has finished".into(),
        }),
    ))
    .unwrap();
    let json = quotatop(&["audit", "export", "--format", "json"], &path);
    let rows: serde_json::Value = serde_json::from_slice(&json.stdout).expect("valid JSON");
    assert_eq!(rows.as_array().map(Vec::len), Some(1));
    assert_eq!(
        rows[0]["outcome"],
        "FAILED: ClientException: job has finished"
    );
    assert_eq!(rows[0]["change_record"], "CHG-7");
    let csv = quotatop(&["audit", "export", "--format", "csv"], &path);
    let text = String::from_utf8_lossy(&csv.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(lines[0].starts_with("time,change_id,operator"));
    assert!(lines[1].contains("\"deadline, \"\"paper\"\""), "{text}");
}
