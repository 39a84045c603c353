use super::*;
use crate::audit::{AwsContext, JobRef, Operator, Outcome, RecordKind};

fn record(change: &str, kind: RecordKind) -> AuditRecord {
    AuditRecord {
        seq: 0,
        time: "2026-11-29T16:00:00.000Z".into(),
        kind,
        change_id: change.into(),
        operator: Operator {
            user: "oncall".into(),
            host: "ops-1".into(),
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
        prev_hash: String::new(),
        hash: String::new(),
    }
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "quotatop-audit-{}-{name}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    ));
    dir.join("audit.jsonl")
}

#[test]
fn appends_chain_and_verify() {
    let path = temp("chain");
    let log = AuditLog::new(&path);
    let a = log.append(record("c1", RecordKind::Intent)).unwrap();
    let b = log.append(record("c1", RecordKind::Outcome)).unwrap();
    assert_eq!((a.seq, b.seq), (1, 2));
    assert_eq!(b.prev_hash, a.hash);
    assert_eq!(verify(&path), Ok(2));
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
    let path = temp("tamper");
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
    assert_eq!(verify(&path), Ok(2));

    // Garbage.
    std::fs::write(&path, format!("{}\nnot json\n", lines[0])).unwrap();
    assert_eq!(verify(&path).unwrap_err().line, 2);
}

#[test]
fn concurrent_appenders_never_interleave_and_the_chain_verifies() {
    let path = temp("concurrent");
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
    assert_eq!(verify(&path), Ok(100));
}

#[test]
fn a_missing_log_is_empty_and_an_unreadable_tail_refuses_appends() {
    let path = temp("missing");
    assert_eq!(verify(&path), Ok(0));
    assert!(read_records(&path).unwrap().is_empty());
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, "{broken\n").unwrap();
    let err = AuditLog::new(&path)
        .append(record("c", RecordKind::Intent))
        .unwrap_err();
    assert!(matches!(err, AuditError::Corrupt { line: 1, .. }), "{err}");
}
