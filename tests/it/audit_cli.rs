//! `quotatop audit` end to end, and the audit log under two real processes.

use std::path::Path;
use std::process::Command;

use quotatop_store::audit::{
    AuditLog, AuditRecord, AwsContext, JobRef, Operator, Outcome, RecordKind,
};

fn temp_log(name: &str) -> crate::temp_support::TempPath {
    crate::temp_support::path(&format!("audit-cli-{name}"), "audit.jsonl")
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
            ..Default::default()
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
        policy: None,
        repair: None,
        action: None,
        class_policy: None,
        batch_id: None,
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

fn epoch_nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

/// Child mode: when re-run with QUOTATOP_TEST_APPEND set, wait until both children are ready
/// (a start barrier of files), append 50 records, and write when the first append began and the
/// last ended to `<log>.times.<child>`.
#[test]
fn two_processes_append_concurrently_without_interleaving() {
    if let Ok(path) = std::env::var("QUOTATOP_TEST_APPEND") {
        let child = std::env::var("QUOTATOP_TEST_CHILD").expect("child index");
        std::fs::write(format!("{path}.ready.{child}"), b"").unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !(0..2).all(|i| Path::new(&format!("{path}.ready.{i}")).exists()) {
            assert!(
                std::time::Instant::now() < deadline,
                "the other child never started"
            );
            std::thread::yield_now();
        }
        let log = AuditLog::new(&path);
        let start = epoch_nanos();
        for i in 0..50 {
            log.append(record(
                &format!("child{child}-{i}"),
                RecordKind::Intent,
                None,
            ))
            .expect("append");
        }
        let end = epoch_nanos();
        std::fs::write(format!("{path}.times.{child}"), format!("{start} {end}")).unwrap();
        return;
    }
    let path = temp_log("two-procs");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let me = std::env::current_exe().expect("test binary");
    let children: Vec<_> = (0..2)
        .map(|i| {
            Command::new(&me)
                .args([
                    "--exact",
                    "audit_cli::two_processes_append_concurrently_without_interleaving",
                ])
                .env("QUOTATOP_TEST_APPEND", &path)
                .env("QUOTATOP_TEST_CHILD", i.to_string())
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
    // The writers overlapped: each one's interval from its first append's start to its last
    // append's end intersects the other's, so one appended while the other held or waited for
    // the lock (the file lock is not fair: one child often appends all 50 while the other
    // waits, which is contention all the same).
    let times: Vec<(u128, u128)> = (0..2)
        .map(|i| {
            let t = std::fs::read_to_string(format!("{}.times.{i}", path.display())).unwrap();
            let (a, b) = t.split_once(' ').unwrap();
            (a.parse().unwrap(), b.parse().unwrap())
        })
        .collect();
    let (a, b) = (times[0], times[1]);
    assert!(
        a.0 < b.1 && b.0 < a.1,
        "the two writers did not overlap: {a:?} and {b:?} (ns since the epoch)"
    );
    let owners: Vec<char> = lines_of(&path)
        .iter()
        .filter_map(|l| l.find("\"child").and_then(|i| l[i + 6..].chars().next()))
        .collect();
    assert_eq!(owners.len(), 100, "{owners:?}");
    let switches = owners.windows(2).filter(|w| w[0] != w[1]).count();
    eprintln!("the two writers' records switch {switches} times in the log");
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
    // Nothing to show names the log it read (issue 45 item 4: the demo's was elsewhere).
    assert!(
        String::from_utf8_lossy(&future.stdout)
            .contains(&format!("no changes recorded in {}", path.display())),
        "{}",
        String::from_utf8_lossy(&future.stdout)
    );
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

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A log of `n` changes (intent and outcome each) written by quotatop.
fn write_log(name: &str, n: usize) -> crate::temp_support::TempPath {
    let path = temp_log(name);
    let log = AuditLog::new(&path);
    for i in 0..n {
        log.append(record(&i.to_string(), RecordKind::Intent, None))
            .unwrap();
        log.append(record(
            &i.to_string(),
            RecordKind::Outcome,
            Some(Outcome::Succeeded {
                request_id: Some(format!("req-{i}")),
            }),
        ))
        .unwrap();
    }
    path
}

fn lines_of(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// `audit anchor`'s record count and head hash.
fn anchor(path: &Path) -> (usize, String) {
    let out = quotatop(&["audit", "anchor"], path);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(name))
            .map(|v| v.trim().to_string())
            .unwrap_or_else(|| panic!("no {name} in {text}"))
    };
    assert!(text.contains(&path.display().to_string()), "{text}");
    assert!(text.contains("taken"), "{text}");
    (field("records").parse().unwrap(), field("head"))
}

fn no_raw_controls(text: &str) -> bool {
    text.chars().all(|c| c == '\n' || !c.is_control())
}

#[test]
fn a_v1_log_written_before_scheme_2_still_verifies() {
    let path = temp_log("v1");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/audit_v1.jsonl"),
        &path,
    )
    .unwrap();
    let last: serde_json::Value = serde_json::from_str(lines_of(&path).last().unwrap()).unwrap();
    let out = quotatop(&["audit", "verify"], &path);
    let text = stdout(&out);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(text.contains("4 records, chain intact"), "{text}");
    assert!(
        text.contains(&format!("head {}", last["hash"].as_str().unwrap())),
        "{text}"
    );
}

#[test]
fn a_cut_tail_keeps_a_valid_chain_but_fails_the_expected_head() {
    let path = write_log("cut", 3);
    let (count, head) = anchor(&path);
    assert_eq!(count, 6);
    let ok = quotatop(&["audit", "verify", "--expect-head", &head], &path);
    assert!(ok.status.success(), "{}", stderr(&ok));
    assert!(stdout(&ok).contains(&format!("head {head} (record 6")));
    let lines = lines_of(&path);
    // The last two records dropped: the chain alone cannot tell.
    std::fs::write(&path, lines[..4].join("\n") + "\n").unwrap();
    let plain = quotatop(&["audit", "verify"], &path);
    assert!(plain.status.success());
    assert!(stdout(&plain).contains("4 records, chain intact"));
    let cut = quotatop(&["audit", "verify", "--expect-head", &head], &path);
    assert!(!cut.status.success());
    assert!(
        stderr(&cut).contains("cut or rewritten"),
        "{}",
        stderr(&cut)
    );
    let fewer = quotatop(&["audit", "verify", "--expect-count", "6"], &path);
    assert!(!fewer.status.success());
    assert!(
        stderr(&fewer).contains("fewer than the 6 expected"),
        "{}",
        stderr(&fewer)
    );
    // Records appended after the anchor do not fail it.
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    AuditLog::new(&path)
        .append(record("later", RecordKind::Intent, None))
        .unwrap();
    let grown = quotatop(
        &[
            "audit",
            "verify",
            "--expect-head",
            &head,
            "--expect-count",
            "6",
        ],
        &path,
    );
    assert!(grown.status.success(), "{}", stderr(&grown));
    assert!(
        stdout(&grown).contains("record 6, 1 records appended since"),
        "{}",
        stdout(&grown)
    );
}

#[test]
fn a_rewrite_with_a_recomputed_chain_fails_the_expected_head() {
    let path = write_log("rewrite", 2);
    let (count, head) = anchor(&path);
    // Someone with write access rewrites record 1's justification and recomputes the chain.
    let rewritten = temp_log("rewritten");
    let log = AuditLog::new(&rewritten);
    for (_, mut r) in quotatop_store::audit::read_records(&path).unwrap() {
        if r.seq == 1 {
            r.justification = "whim".into();
        }
        log.append(r).unwrap();
    }
    std::fs::copy(&rewritten, &path).unwrap();
    let plain = quotatop(&["audit", "verify"], &path);
    assert!(plain.status.success(), "the chain alone cannot tell");
    let anchored = quotatop(
        &[
            "audit",
            "verify",
            "--expect-head",
            &head,
            "--expect-count",
            &count.to_string(),
        ],
        &path,
    );
    assert!(!anchored.status.success());
    assert!(
        stderr(&anchored).contains("cut or rewritten"),
        "{}",
        stderr(&anchored)
    );
}

#[test]
fn crlf_extra_fields_and_reordered_keys_fail_verify() {
    let path = write_log("forms", 2);
    let lines = lines_of(&path);
    let l2 = &lines[1];
    let with_line_2 = |new: String| {
        let mut l = lines.clone();
        l[1] = new;
        l.join("\n") + "\n"
    };
    let cases = [
        ("CRLF", lines.join("\r\n") + "\r\n", "line 1"),
        (
            "extra field",
            with_line_2(l2.replacen("{\"v\":2,", "{\"v\":2,\"note\":\"x\",", 1)),
            "line 2",
        ),
        (
            "reordered keys",
            with_line_2(l2.replacen("\"queue\":\"ml-training\",", "", 1).replacen(
                "\"share\":\"research\",",
                "\"share\":\"research\",\"queue\":\"ml-training\",",
                1,
            )),
            "line 2",
        ),
    ];
    for (what, text, line) in cases {
        std::fs::write(&path, &text).unwrap();
        let out = quotatop(&["audit", "verify"], &path);
        assert!(!out.status.success(), "{what} passed verify");
        assert!(stderr(&out).contains(line), "{what}: {}", stderr(&out));
    }
}

#[test]
fn a_torn_line_is_named_by_every_command_and_repair_lets_appends_work() {
    let path = write_log("torn", 2);
    let mut data = std::fs::read(&path).unwrap();
    // A write cut short (disk full): half a record, no newline.
    data.extend_from_slice(b"{\"v\":2,\"seq\":5,\"time\":\"2026-11-");
    std::fs::write(&path, &data).unwrap();
    let repair_hint = |t: &str| t.contains("line 5") && t.contains("quotatop audit repair");
    let verify = quotatop(&["audit", "verify"], &path);
    assert!(!verify.status.success());
    assert!(
        repair_hint(&stderr(&verify)) && stderr(&verify).contains("torn"),
        "{}",
        stderr(&verify)
    );
    for args in [
        &["audit", "list"][..],
        &["audit", "export", "--format", "csv"][..],
    ] {
        let out = quotatop(args, &path);
        assert!(repair_hint(&stderr(&out)), "{args:?}: {}", stderr(&out));
        assert!(stdout(&out).contains("job-1"), "{args:?}: {}", stdout(&out));
    }
    let set = Command::new(env!("CARGO_BIN_EXE_quotatop"))
        .args([
            "set-priority",
            "some-job",
            "--priority",
            "5",
            "--reason",
            "x",
        ])
        .args(["--yes", "--endpoint-url", "http://127.0.0.1:1", "--log"])
        .arg(&path)
        .env_remove("QUOTATOP_READ_ONLY")
        .output()
        .unwrap();
    assert!(!set.status.success());
    assert!(repair_hint(&stderr(&set)), "{}", stderr(&set));

    let repair = quotatop(&["audit", "repair"], &path);
    assert!(repair.status.success(), "{}", stderr(&repair));
    let said = stdout(&repair);
    assert!(said.contains("line 5 was torn: 31 bytes"), "{said}");
    let aside = said
        .split(" moved to ")
        .nth(1)
        .and_then(|s| s.split(';').next())
        .unwrap();
    assert!(aside.contains("audit.jsonl.torn-"), "{said}");
    assert_eq!(
        std::fs::read(aside).unwrap(),
        b"{\"v\":2,\"seq\":5,\"time\":\"2026-11-"
    );
    let ok = quotatop(&["audit", "verify"], &path);
    assert!(ok.status.success(), "{}", stderr(&ok));
    assert!(stdout(&ok).contains("5 records, chain intact"));
    let recs = quotatop_store::audit::read_records(&path).unwrap();
    let rep = &recs[4].1;
    assert_eq!(rep.kind, RecordKind::Repair);
    assert_eq!(rep.repair.as_ref().unwrap().cut_bytes, 31);
    AuditLog::new(&path)
        .append(record("after", RecordKind::Intent, None))
        .unwrap();
    let ok = quotatop(&["audit", "verify"], &path);
    assert!(stdout(&ok).contains("6 records, chain intact"));
    let list = quotatop(&["audit", "list"], &path);
    assert!(stderr(&list).is_empty(), "{}", stderr(&list));
    assert!(
        stdout(&list).contains("REPAIR (line 5): 31 bytes cut from line 5"),
        "{}",
        stdout(&list)
    );
    assert!(stdout(&quotatop(&["audit", "repair"], &path)).contains("nothing to repair"));
}

#[test]
fn invalid_utf8_is_named_by_its_line() {
    let path = write_log("utf8", 3);
    let mut data = Vec::new();
    for (i, l) in lines_of(&path).iter().enumerate() {
        let mut b = l.as_bytes().to_vec();
        if i == 2 {
            let at = l.find("paper").unwrap();
            b[at] = 0xc3;
        }
        data.extend_from_slice(&b);
        data.push(b'\n');
    }
    std::fs::write(&path, data).unwrap();
    let out = quotatop(&["audit", "verify"], &path);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("line 3") && err.contains("UTF-8") && !err.contains("line 0"),
        "{err}"
    );
    let list = quotatop(&["audit", "list"], &path);
    assert!(!list.status.success());
    assert!(stderr(&list).contains("line 3"), "{}", stderr(&list));
}

#[test]
fn control_characters_never_reach_the_log_exports_or_the_terminal() {
    let path = temp_log("controls");
    let log = AuditLog::new(&path);
    let mut r = record("c", RecordKind::Intent, None);
    r.justification = "esc \u{1b}[2J bel \u{7} cr \r csi \u{9b}31m".into();
    r.job.name = "name\u{9b}1m".into();
    log.append(r).unwrap();
    let raw = std::fs::read_to_string(&path).unwrap();
    assert!(no_raw_controls(&raw), "{raw:?}");
    assert!(raw.contains("\\u009b31m"), "{raw}");
    let csv = quotatop(&["audit", "export", "--format", "csv"], &path);
    let text = stdout(&csv);
    assert!(csv.status.success());
    assert!(no_raw_controls(&text), "{text:?}");
    assert!(
        text.contains("esc \\u001b[2J bel \\u0007 cr \\u000d csi \\u009b31m"),
        "{text}"
    );
    for args in [
        &["audit", "export", "--format", "json"][..],
        &["audit", "list"][..],
        &["audit", "list", "--by-operator"][..],
        &["audit", "verify"][..],
        &["audit", "anchor"][..],
    ] {
        let out = quotatop(args, &path);
        assert!(out.status.success(), "{args:?}");
        assert!(
            no_raw_controls(&stdout(&out)),
            "{args:?}: {:?}",
            stdout(&out)
        );
    }
}

/// The anchor and verify edge cases an attacker found: a missing or empty log cannot be
/// anchored (its "check later" could never pass), `verify` of a missing `--log` is an error
/// (not "0 records, chain intact"), a head is compared case-insensitively and a malformed one
/// is named, the "check later" line is one shell word per argument, and a bad lock timeout is
/// an error rather than a silent 30 s.
#[test]
fn anchor_and_verify_edge_cases() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.jsonl");
    let out = quotatop(&["audit", "anchor"], &missing);
    assert!(!out.status.success());
    assert!(text(&out).contains("no audit log at"), "{}", text(&out));
    let out = quotatop(&["audit", "verify"], &missing);
    assert!(!out.status.success());
    assert!(text(&out).contains("no audit log at"), "{}", text(&out));
    let out = quotatop(&["audit", "list"], &missing);
    assert!(!out.status.success(), "{}", text(&out));
    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let out = quotatop(&["audit", "anchor"], &empty);
    assert!(!out.status.success());
    assert!(text(&out).contains("nothing to anchor"), "{}", text(&out));

    // A log in a directory whose name needs quoting, with one record.
    let odd = dir.path().join("my log $(id)");
    std::fs::create_dir_all(&odd).unwrap();
    let path = odd.join("audit.jsonl");
    AuditLog::new(&path)
        .append(record("c1", RecordKind::Intent, None))
        .unwrap();
    let out = quotatop(&["audit", "anchor"], &path);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    let check = t
        .lines()
        .find_map(|l| l.strip_prefix("check later: "))
        .expect("check later line");
    assert!(check.contains(&format!("'{}'", path.display())), "{check}");
    let head = t
        .lines()
        .find_map(|l| l.trim().strip_prefix("head"))
        .unwrap()
        .trim()
        .to_string();
    // Upper case is the same head; a prefix or garbage is named as not a head.
    let out = quotatop(
        &["audit", "verify", "--expect-head", &head.to_uppercase()],
        &path,
    );
    assert!(out.status.success(), "{}", text(&out));
    for bad in [&head[..12], "xyz"] {
        let out = quotatop(&["audit", "verify", "--expect-head", bad], &path);
        assert!(!out.status.success());
        assert!(text(&out).contains("is not a head"), "{}", text(&out));
    }
    for bad in ["nan", "-5", "inf", "1e300"] {
        let arg = format!("--lock-timeout={bad}");
        let out = quotatop(&["audit", "repair", &arg], &path);
        assert!(!out.status.success(), "{bad}: {}", text(&out));
        assert!(
            text(&out).contains("0 to 86400 seconds"),
            "{bad}: {}",
            text(&out)
        );
    }
}

fn text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// README, "Security": an audit log that already existed with a looser mode (0644, as a copy
/// or an editor leaves it) is 0600 after the next append.
#[test]
fn a_looser_existing_audit_log_is_tightened_to_0600() {
    use std::os::unix::fs::PermissionsExt;
    let path = temp_log("loose");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, b"").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    AuditLog::new(&path)
        .append(record("loose-1", RecordKind::Intent, None))
        .unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert!(
        quotatop(&["audit", "verify"], &path).status.success(),
        "the tightened log still verifies"
    );
}

/// A change that is not a priority (a share's configuration here) is listed with its call and
/// values, exported with them, never counted as a priority change, and left alone by
/// `audit reconcile`'s judgement of priorities.
#[test]
fn changes_other_than_priorities_are_listed_and_kept_out_of_priority_views() {
    let path = temp_log("actions");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let log = AuditLog::new(&path);
    let mut intent = record("share", RecordKind::Intent, None);
    intent.job = JobRef {
        id: String::new(),
        name: String::new(),
        arn: String::new(),
    };
    intent.old_priority = 0;
    intent.new_priority = 0;
    intent.action = Some(quotatop_store::audit::Action {
        call: "UpdateQuotaShare".into(),
        target: "research".into(),
        detail: "capacityLimits: ml.p4d.24xlarge 4 -> 6".into(),
        run_id: Some("run-1".into()),
    });
    log.append(intent.clone()).unwrap();
    let mut outcome = intent.clone();
    outcome.kind = RecordKind::Outcome;
    outcome.outcome = Some(Outcome::Succeeded { request_id: None });
    log.append(outcome).unwrap();
    // An action whose outcome was never written.
    let mut open = intent.clone();
    open.change_id = "open".into();
    log.append(open).unwrap();

    let out = quotatop(&["audit", "list"], &path);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("UpdateQuotaShare research on ml-training (run run-1)  succeeded"),
        "{text}"
    );
    assert!(
        text.contains("detail: capacityLimits: ml.p4d.24xlarge 4 -> 6"),
        "{text}"
    );
    assert!(!text.contains(" 0 -> 0"), "{text}");
    assert!(text.contains("check the resource"), "{text}");
    let csv = quotatop(&["audit", "export", "--format", "csv"], &path);
    let csv = String::from_utf8_lossy(&csv.stdout);
    assert!(
        csv.lines()
            .next()
            .unwrap()
            .ends_with(",action,target,detail,run_id,batch_id")
    );
    assert!(csv.contains(",UpdateQuotaShare,research,"), "{csv}");

    let records = quotatop_store::audit::read_records(&path).unwrap();
    let changes = quotatop_store::audit::changes(&records);
    assert_eq!(changes.len(), 2);
    assert!(quotatop_store::audit::priority_changes(&changes, "ml-training").is_empty());
}

/// Issue 29 §2.7: `audit list` of an edited log still lists it, but warns that the chain does
/// not verify and names the first record that fails.
#[test]
fn list_warns_and_names_the_record_when_the_chain_does_not_verify() {
    let path = temp_log("list-tamper");
    let log = AuditLog::new(&path);
    for i in 0..5 {
        log.append(record(&i.to_string(), RecordKind::Intent, None))
            .unwrap();
    }
    let out = quotatop(&["audit", "list"], &path);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("does not verify"), "an intact log: {err}");
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
    let out = quotatop(&["audit", "list"], &path);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("does not verify at line 4"), "{err}");
    assert!(err.contains("change 3") && err.contains("job-3"), "{err}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("9999"));
}

/// `audit list | head`, `audit export | head`: the reader closes the pipe after a line; the
/// command ends quietly with exit 0 (it panicked with exit 101).
#[test]
fn a_closed_pipe_ends_the_output_quietly() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    // Far more than a pipe holds (64 KiB), so the writer meets the closed end.
    let path = write_log("pipe", 600);
    for args in [
        vec!["audit", "list"],
        vec!["audit", "export", "--format", "json"],
        vec!["audit", "export", "--format", "csv"],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_quotatop"))
            .args(&args)
            .arg("--log")
            .arg(&path)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        assert!(!first.is_empty(), "{args:?}");
        // The read end is dropped here, as `head -1` exits.
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

/// `audit repair --log <missing>` is an error and creates nothing; `--log <directory>` is
/// named as a directory by every command (verify printed "verification failed at cannot read").
#[test]
fn repair_of_a_missing_log_and_a_directory_as_log_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.jsonl");
    let out = quotatop(&["audit", "repair"], &missing);
    assert!(!out.status.success(), "{}", stdout(&out));
    assert!(stderr(&out).contains("no audit log at"), "{}", stderr(&out));
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
    for cmd in ["verify", "list", "export", "anchor", "repair"] {
        let out = quotatop(&["audit", cmd], dir.path());
        assert!(!out.status.success(), "{cmd}");
        let err = stderr(&out);
        assert!(
            err.contains("is a directory: the audit log must be a regular file")
                && !err.contains("verification failed at"),
            "{cmd}: {err}"
        );
    }
}
