use super::*;
use crate::audit::{AwsContext, JobRef, Operator, Outcome, RecordKind};
use std::path::Path;

fn record(change: &str, kind: RecordKind) -> AuditRecord {
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
        queue: "q".into(),
        share: "research".into(),
        job: JobRef {
            id: "j-1".into(),
            name: "train".into(),
            arn: "arn:aws:batch:us-east-1:1:service-job/j-1".into(),
        },
        old_priority: 1,
        new_priority: 50,
        justification: "deadline".into(),
        change_record: None,
        preview: "position 3 -> 1".into(),
        outcome: (kind == RecordKind::Outcome).then(|| Outcome::Succeeded {
            request_id: Some("req".into()),
        }),
        policy: None,
        repair: None,
        action: None,
        class_policy: None,
        batch_id: None,
        prev_hash: String::new(),
        hash: String::new(),
    }
}

fn temp(name: &str) -> (tempfile::TempDir, PathBuf) {
    // Removed when the test ends: the directory is held beside the path.
    let dir = tempfile::Builder::new()
        .prefix(&format!("quotatop-audit-{name}-"))
        .tempdir()
        .unwrap();
    let path = dir.path().join("audit.jsonl");
    (dir, path)
}

#[test]
fn appends_chain_and_verify() {
    let (_dir, path) = temp("chain");
    let log = AuditLog::new(&path);
    let a = log.append(record("c1", RecordKind::Intent)).unwrap();
    let b = log.append(record("c1", RecordKind::Outcome)).unwrap();
    assert_eq!((a.seq, b.seq), (1, 2));
    assert_eq!(b.prev_hash, a.hash);
    assert_eq!(verify(&path).map(|h| h.count), Ok(2));
    let recs = read_records(&path).unwrap();
    assert_eq!(recs.len(), 2);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
}

#[test]
fn verify_finds_edits_removals_and_reordering_at_the_right_line() {
    let (_dir, path) = temp("tamper");
    let log = AuditLog::new(&path);
    for i in 0..4 {
        log.append(record(&format!("c{i}"), RecordKind::Intent))
            .unwrap();
    }
    let original = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = original.lines().collect();

    // Edited: the justification of record 3 changed.
    let edited = original.replacen(
        &lines[2].to_string(),
        &lines[2].replace("deadline", "whim"),
        1,
    );
    std::fs::write(&path, edited).unwrap();
    let e = verify(&path).unwrap_err();
    assert_eq!(e.line, 3);
    assert!(e.message.contains("edited"), "{e}");

    // Removed: record 2 gone.
    std::fs::write(&path, format!("{}\n{}\n{}\n", lines[0], lines[2], lines[3])).unwrap();
    let e = verify(&path).unwrap_err();
    assert_eq!(e.line, 2);
    assert!(e.message.contains("removed or reordered"), "{e}");

    // Reordered: records 3 and 4 swapped.
    std::fs::write(
        &path,
        format!("{}\n{}\n{}\n{}\n", lines[0], lines[1], lines[3], lines[2]),
    )
    .unwrap();
    assert_eq!(verify(&path).unwrap_err().line, 3);

    // The last record removed cannot be told from a shorter log; the rest still verifies.
    std::fs::write(&path, format!("{}\n{}\n", lines[0], lines[1])).unwrap();
    assert_eq!(verify(&path).map(|h| h.count), Ok(2));

    // Garbage in the middle is named by its line.
    std::fs::write(&path, format!("{}\nnot json\n{}\n", lines[0], lines[1])).unwrap();
    let e = verify(&path).unwrap_err();
    assert_eq!(e.line, 2, "{e}");
    assert!(e.message.contains("not an audit record"), "{e}");
}

#[test]
fn concurrent_appenders_never_interleave_and_the_chain_verifies() {
    let (_dir, path) = temp("concurrent");
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let path = path.clone();
            std::thread::spawn(move || {
                let log = AuditLog::new(&path);
                for i in 0..25 {
                    log.append(record(&format!("t{t}-{i}"), RecordKind::Intent))
                        .unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(verify(&path).map(|h| h.count), Ok(100));
}

#[test]
fn a_missing_log_is_empty_and_an_unreadable_tail_refuses_appends() {
    let (_dir, path) = temp("missing");
    assert_eq!(verify(&path).map(|h| h.count), Ok(0));
    assert!(read_records(&path).unwrap().is_empty());
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    // Cut short (no final newline): torn, and repair is the way out.
    std::fs::write(&path, "{broken").unwrap();
    let err = AuditLog::new(&path)
        .append(record("c", RecordKind::Intent))
        .unwrap_err();
    assert!(matches!(err, AuditError::Torn { line: 1, .. }), "{err}");
    assert!(err.to_string().contains("quotatop audit repair"), "{err}");
    // A complete line that is not a record is an edit, not a torn write: named, not repaired.
    std::fs::write(&path, "{broken\n").unwrap();
    let err = AuditLog::new(&path)
        .append(record("c", RecordKind::Intent))
        .unwrap_err();
    assert!(matches!(err, AuditError::Corrupt { line: 1, .. }), "{err}");
    let repaired = AuditLog::new(&path).repair(record("r", RecordKind::Repair));
    assert!(matches!(repaired, Ok(None)), "{repaired:?}");
}

fn write_records(name: &str, n: usize) -> (tempfile::TempDir, PathBuf, Vec<String>) {
    let (dir, path) = temp(name);
    let log = AuditLog::new(&path);
    for i in 0..n {
        log.append(record(&format!("c{i}"), RecordKind::Intent))
            .unwrap();
    }
    let text = std::fs::read_to_string(&path).unwrap();
    (dir, path, text.lines().map(str::to_string).collect())
}

fn with_line(path: &Path, lines: &[String], n: usize, new: &str) {
    let mut l = lines.to_vec();
    l[n - 1] = new.to_string();
    std::fs::write(path, l.join("\n") + "\n").unwrap();
}

#[test]
fn records_are_written_in_canonical_form_and_hash_their_bytes() {
    let (_dir, path) = temp("canonical");
    let log = AuditLog::new(&path);
    let mut r = record("c", RecordKind::Intent);
    r.justification = "csi \u{9b}31m esc \u{1b}[2J bel \u{7} cr \r del \u{7f}".into();
    let written = log.append(r.clone()).unwrap();
    assert_eq!(written.v, SCHEME);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.trim_end().chars().any(char::is_control), "{text:?}");
    assert!(
        text.contains("\\u009b31m") && text.contains("\\u007f"),
        "{text}"
    );
    assert!(text.starts_with("{\"v\":2,\"seq\":1,"), "{text}");
    let line = text.trim_end();
    let body = format!("{}}}", &line[..line.rfind(",\"hash\":").unwrap()]);
    assert_eq!(sha256_hex(body.as_bytes()), written.hash);
    assert_eq!(canonical_body(&written).unwrap(), body);
    // Read back, the text is the same.
    let back = read_records(&path).unwrap();
    assert_eq!(back[0].1.justification, r.justification);
    assert_eq!(verify(&path).map(|h| h.count), Ok(1));
}

#[test]
fn verify_rejects_every_rewrite_of_a_v2_line() {
    let (_dir, path, lines) = write_records("rewrites", 4);
    let l2 = lines[1].clone();
    let cases: Vec<(&str, String)> = vec![
        (
            "extra field",
            l2.replacen("{\"v\":2,", "{\"v\":2,\"x\":1,", 1),
        ),
        (
            "reordered keys",
            l2.replacen("\"seq\":2,\"time\"", "\"time\"", 1).replacen(
                "\"kind\"",
                "\"seq\":2,\"kind\"",
                1,
            ),
        ),
        ("spacing", l2.replacen("\"seq\":2", "\"seq\": 2", 1)),
        ("escape", l2.replacen("deadline", "\\u0064eadline", 1)),
        ("byte change", l2.replacen("deadline", "deadlinf", 1)),
    ];
    for (what, line) in cases {
        assert_ne!(line, l2, "{what}: the case changes nothing");
        with_line(&path, &lines, 2, &line);
        let e = verify(&path).unwrap_err();
        assert_eq!(e.line, 2, "{what}: {e}");
    }
    // CRLF line endings.
    std::fs::write(&path, lines.join("\r\n") + "\r\n").unwrap();
    let e = verify(&path).unwrap_err();
    assert_eq!(e.line, 1, "{e}");
    assert!(e.message.contains("CRLF"), "{e}");
    // The original still verifies.
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    assert_eq!(verify(&path).map(|h| h.count), Ok(4));
}

#[test]
fn a_v1_log_written_before_scheme_2_verifies_and_continues_in_v2() {
    let (_dir, path) = temp("v1");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let fixture = include_str!("../../../../../tests/fixtures/audit_v1.jsonl");
    std::fs::write(&path, fixture).unwrap();
    let head = verify(&path).unwrap();
    assert_eq!(head.count, 4);
    let recs = read_records(&path).unwrap();
    assert!(recs.iter().all(|(_, r)| r.v == 1));
    // An edit in a v1 record is still found.
    let edited = fixture.replacen("\"new_priority\":50", "\"new_priority\":51", 1);
    std::fs::write(&path, &edited).unwrap();
    assert_eq!(verify(&path).unwrap_err().line, 1);
    std::fs::write(&path, fixture).unwrap();
    // Appends continue the chain in scheme 2.
    let r = AuditLog::new(&path)
        .append(record("new", RecordKind::Intent))
        .unwrap();
    assert_eq!(
        (r.v, r.seq, r.prev_hash.as_str()),
        (2, 5, head.hash.as_str())
    );
    assert_eq!(verify(&path).map(|h| h.count), Ok(5));
    // A v1 record after a v2 one is a rewrite.
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(fixture.lines().next().unwrap());
    text.push('\n');
    std::fs::write(&path, text).unwrap();
    assert_eq!(verify(&path).unwrap_err().line, 6);
}

#[test]
fn a_torn_tail_is_named_repaired_and_appends_work_again() {
    let (_dir, path, lines) = write_records("torn", 3);
    let whole = std::fs::read(&path).unwrap();
    let cut = &lines[2].as_bytes()[..40];
    let mut data = whole[..whole.len() - lines[2].len() - 1].to_vec();
    data.extend_from_slice(cut);
    std::fs::write(&path, &data).unwrap();
    let e = verify(&path).unwrap_err();
    assert_eq!(e.line, 3, "{e}");
    assert!(
        e.message.contains("torn") && e.message.contains("audit repair"),
        "{e}"
    );
    let err = read_records(&path).unwrap_err();
    assert!(
        matches!(
            err,
            AuditError::Torn {
                line: 3,
                bytes: 40,
                ..
            }
        ),
        "{err}"
    );
    let log_contents = read_log(&path).unwrap();
    assert_eq!(log_contents.records.len(), 2);
    let warning = crate::audit::tail_warning(&path).expect("the console is told");
    assert!(
        warning.contains("line 3") && warning.contains("audit repair"),
        "{warning}"
    );
    let log = AuditLog::new(&path);
    assert!(matches!(
        log.append(record("x", RecordKind::Intent)),
        Err(AuditError::Torn { line: 3, .. })
    ));
    let mut template = record("repair", RecordKind::Repair);
    template.justification = "disk filled up".into();
    let rep = log.repair(template).unwrap().expect("repaired");
    assert_eq!(rep.kind, RecordKind::Repair);
    assert_eq!(rep.seq, 3);
    let info = rep.repair.clone().unwrap();
    assert_eq!(info.cut_bytes, 40);
    assert_eq!(info.cut_sha256, sha256_hex(cut));
    assert_eq!(std::fs::read(&info.moved_to).unwrap(), cut);
    assert_eq!(verify(&path).map(|h| h.count), Ok(3));
    log.append(record("after", RecordKind::Intent)).unwrap();
    assert_eq!(verify(&path).map(|h| h.count), Ok(4));
    assert_eq!(crate::audit::tail_warning(&path), None);
    // Nothing more to repair; a repair is not a change.
    assert_eq!(log.repair(record("r", RecordKind::Repair)).unwrap(), None);
    let recs = read_records(&path).unwrap();
    assert_eq!(crate::audit::changes(&recs).len(), 3);
}

#[test]
fn invalid_utf8_is_named_by_its_line() {
    let (_dir, path, lines) = write_records("utf8", 5);
    let mut data = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let mut b = l.as_bytes().to_vec();
        if i == 2 {
            let at = l.find("deadline").unwrap();
            b[at] = 0xff;
        }
        data.extend_from_slice(&b);
        data.push(b'\n');
    }
    std::fs::write(&path, data).unwrap();
    let e = verify(&path).unwrap_err();
    assert_eq!(e.line, 3, "{e}");
    assert!(e.message.contains("UTF-8"), "{e}");
    assert!(e.to_string().starts_with("line 3: "), "{e}");
    assert!(matches!(
        read_records(&path),
        Err(AuditError::Corrupt { line: 3, .. })
    ));
}

#[test]
fn a_held_lock_times_out_naming_its_holder() {
    let (_dir, path) = temp("lock");
    let holder = AuditLog::new(&path);
    let guard = holder.lock().unwrap();
    let waiter = AuditLog::new(&path).with_lock_timeout(std::time::Duration::from_millis(300));
    let start = std::time::Instant::now();
    let err = waiter.append(record("c", RecordKind::Intent)).unwrap_err();
    assert!(start.elapsed() >= std::time::Duration::from_millis(300));
    let text = err.to_string();
    assert!(
        matches!(err, AuditError::LockTimeout { .. })
            && text.contains(&format!("PID {}", std::process::id())),
        "{text}"
    );
    drop(guard);
    assert!(waiter.append(record("c", RecordKind::Intent)).is_ok());
}

/// A change made through a named source records it in `aws.source`, written only then (an
/// implicit-source record keeps the bytes it had before sources existed), and the scorecard's
/// audited changes of `q@eu` are that source's only.
#[test]
fn a_source_is_recorded_and_keys_the_queue() {
    let (_dir, path) = temp("sources");
    let log = AuditLog::new(&path);
    let plain = log.append(record("c1", RecordKind::Intent)).unwrap();
    log.append(record("c1", RecordKind::Outcome)).unwrap();
    let mut eu = record("c2", RecordKind::Intent);
    eu.aws.source = Some("eu".into());
    let eu = log.append(eu).unwrap();
    let mut eu_done = record("c2", RecordKind::Outcome);
    eu_done.aws.source = Some("eu".into());
    log.append(eu_done).unwrap();
    assert!(!format::canonical_body(&plain).unwrap().contains("source"));
    assert!(
        format::canonical_body(&eu)
            .unwrap()
            .contains(r#""endpoint":null,"source":"eu"}"#)
    );
    let changes = crate::audit::changes(&crate::audit::read_records(&path).unwrap());
    let ids = |key: &str| -> Vec<String> {
        crate::audit::priority_changes(&changes, key)
            .into_iter()
            .map(|c| c.job_id)
            .collect()
    };
    assert_eq!(ids("q@eu").len(), 1);
    assert_eq!(ids("q").len(), 1);
    assert!(ids("q@us").is_empty());
    assert_eq!(verify(&path).map(|h| h.count), Ok(4));
}

#[test]
fn a_middle_record_rewritten_with_a_valid_hash_of_its_own_breaks_the_chain_there() {
    let (_dir, path, lines) = write_records("middle", 4);
    let records: Vec<AuditRecord> = read_records(&path)
        .unwrap()
        .into_iter()
        .map(|(_, r)| r)
        .collect();
    // Record 2's justification rewritten, its own hash recomputed: the line alone is valid,
    // so only the link from record 3 (its prev_hash) can tell.
    let mut edited = records[1].clone();
    edited.justification = "nothing to see here, approved by nobody".into();
    let (line, _) = canonical_line(&edited).unwrap();
    assert_ne!(line, lines[1]);
    with_line(&path, &lines, 2, &line);
    let e = verify(&path).unwrap_err();
    assert_eq!(e.line, 3, "{e}");
    assert!(e.message.contains("chain is broken"), "{e}");
    // Record 2 pointed at another predecessor, with a valid hash of its own: it fails at 2.
    let mut relinked = records[1].clone();
    relinked.prev_hash = records[2].hash.clone();
    let (line, _) = canonical_line(&relinked).unwrap();
    with_line(&path, &lines, 2, &line);
    let e = verify(&path).unwrap_err();
    assert_eq!(e.line, 2, "{e}");
    assert!(e.message.contains("chain is broken"), "{e}");
    // The untouched log verifies.
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    assert_eq!(verify(&path).map(|h| h.count), Ok(4));
}

/// A record under a class policy keeps its hash and classes in the chain; one without leaves
/// the key out, so logs written before class policies keep their bytes (the v1 and v2 tests
/// above read such logs).
#[test]
fn the_class_policy_is_chained_and_absent_when_none_applied() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = AuditLog::new(&path);
    log.append(record("c0", RecordKind::Intent)).unwrap();
    let mut r = record("c1", RecordKind::Intent);
    r.class_policy = Some(crate::audit::ClassPolicy {
        hash: "ab".repeat(32),
        class_before: Some("delivery".into()),
        class_after: Some("incident".into()),
        approved_by: None,
    });
    log.append(r).unwrap();
    assert_eq!(verify(&path).map(|h| h.count), Ok(2));
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(!lines[0].contains("class_policy"), "{}", lines[0]);
    assert!(
        lines[1].contains(&format!(
            r#""class_policy":{{"hash":"{}","class_before":"delivery","class_after":"incident"}},"prev_hash""#,
            "ab".repeat(32)
        )),
        "{}",
        lines[1]
    );
    let back = read_records(&path).unwrap();
    assert_eq!(
        back[1]
            .1
            .class_policy
            .as_ref()
            .unwrap()
            .class_after
            .as_deref(),
        Some("incident")
    );
    // Changing the recorded class breaks the chain at that line.
    std::fs::write(&path, text.replace("\"incident\"", "\"delivery\"")).unwrap();
    assert!(verify(&path).is_err());
}

/// A batch id (one action on several jobs) is kept in each intent and chained; a line
/// written before batch ids existed still parses, with none, and keeps its exact bytes.
#[test]
fn a_batch_id_is_chained_and_old_lines_without_it_keep_their_bytes() {
    let old = r#"{"v":2,"seq":1,"time":"2026-11-29T16:00:00.000Z","kind":"intent","change_id":"c1","operator":{"user":"oncall","host":"ops-1"},"aws":{"profile":null,"region":null,"endpoint":null},"queue":"q","share":"research","job":{"id":"j-1","name":"train","arn":"arn:aws:batch:us-east-1:1:service-job/j-1"},"old_priority":1,"new_priority":50,"justification":"deadline","change_record":null,"preview":"position 3 -> 1","outcome":null,"prev_hash":""}"#;
    let r: AuditRecord = serde_json::from_str(old).unwrap();
    assert_eq!(r.batch_id, None);
    assert_eq!(format::canonical_body(&r).unwrap(), old);

    let (_dir, path) = temp("batch");
    let log = AuditLog::new(&path);
    log.append(record("c0", RecordKind::Intent)).unwrap();
    let mut b = record("c1", RecordKind::Intent);
    b.batch_id = Some("b-7".into());
    log.append(b).unwrap();
    assert_eq!(verify(&path).map(|h| h.count), Ok(2));
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(!lines[0].contains("batch_id"), "{}", lines[0]);
    assert!(
        lines[1].contains(r#""batch_id":"b-7","prev_hash""#),
        "{}",
        lines[1]
    );
    let back = read_records(&path).unwrap();
    assert_eq!(back[1].1.batch_id.as_deref(), Some("b-7"));
    // Changing the recorded batch breaks the chain at that line.
    std::fs::write(&path, text.replace("\"b-7\"", "\"b-8\"")).unwrap();
    assert!(verify(&path).is_err());
}
