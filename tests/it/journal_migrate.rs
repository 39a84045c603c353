//! Journal schema migrations against a committed version-1 journal
//! (tests/fixtures/journal_v1.sqlite3, written by tests/fixtures/make_journal_v1.py from the
//! schema-1 SQL of crates/store/src/journal/schema.rs): a writable open migrates it and keeps its history,
//! new preempted attempts then get their reason; a read-only open refuses it until then; a
//! journal from a newer quotatop is refused (`TooNew`) and left as it was.

use std::path::{Path, PathBuf};

use quotatop_model::{
    Attempt, JobStatus, PreemptedAttempt, PreemptionSummary, QueueSnapshot, ServiceJob, Snapshot,
    TrackedJob,
};
use quotatop_store::journal::{
    Journal, JournalConfig, JournalError, SCHEMA_VERSION, TransitionKind,
};

const FIXTURE: &str = "tests/fixtures/journal_v1.sqlite3";
const G5: &str = "ml.g5.12xlarge";

/// A private copy of the fixture (the committed file is never opened for writing).
fn copy(dir: &Path) -> PathBuf {
    let path = dir.join("journal.sqlite3");
    std::fs::copy(FIXTURE, &path).unwrap_or_else(|e| panic!("{FIXTURE}: {e}"));
    path
}

fn user_version(path: &Path) -> i64 {
    rusqlite::Connection::open(path)
        .unwrap()
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap()
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn columns(path: &Path, table: &str) -> Vec<String> {
    let c = rusqlite::Connection::open(path).unwrap();
    let mut stmt = c
        .prepare(&format!("SELECT name FROM pragma_table_info('{table}')"))
        .unwrap();
    stmt.query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// Job `id-x` of the fixture, preempted at 12 s (its attempt `tj-x` stopped, back to RUNNABLE).
fn x_preempted() -> Snapshot {
    let reason = "Preempted to return capacity lent to share b";
    let job = ServiceJob {
        id: "id-x".into(),
        name: "x".into(),
        share: "a".into(),
        priority: 10,
        instance_type: G5.into(),
        instance_count: 1,
        status: JobStatus::Runnable,
        status_reason: None,
        created_at: 1_000,
        scheduled_at: None,
        started_at: None,
        stopped_at: None,
        preemption_retries: None,
        class_tag: None,
        preemption: Some(PreemptionSummary {
            preempted_attempt_count: 1,
            recent_preempted_attempts: vec![PreemptedAttempt {
                resource_id: "tj-x".into(),
                started_at: Some(7_000),
                stopped_at: 12_000,
                status_reason: reason.into(),
            }],
        }),
        attempts: vec![Attempt {
            resource_id: "tj-x".into(),
            started_at: Some(7_000),
            stopped_at: Some(12_000),
            status_reason: Some(reason.into()),
        }],
        checkpoint_interval_ms: None,
        is_terminated: false,
        extras: Default::default(),
    };
    let q = QueueSnapshot {
        name: "q".into(),
        server_time: Some(13_000),
        refreshed_at: Some(13_000),
        jobs: vec![TrackedJob {
            job: job.into(),
            arn: "arn:aws:batch:us-east-1:123456789012:service-job/id-x".into(),
            described_at: Some(13_000),
            listed_at: 13_000,
        }],
        ..Default::default()
    };
    Snapshot {
        taken_at: 13_000,
        sequence: 1,
        queues: vec![q],
        ..Default::default()
    }
}

#[test]
fn the_fixture_is_version_1() {
    assert_eq!(user_version(Path::new(FIXTURE)), 1);
    let cols = columns(Path::new(FIXTURE), "transitions");
    assert!(!cols.iter().any(|c| c == "reason"), "{cols:?}");
    const { assert!(SCHEMA_VERSION > 1, "this test is about migrating from 1") };
}

#[test]
fn a_version_1_journal_is_migrated_and_keeps_its_history() {
    let dir = tempfile::tempdir().unwrap();
    let path = copy(dir.path());
    // Reading alone cannot migrate: refused with the versions named.
    match Journal::open_existing(&path, JournalConfig::default()) {
        Err(e @ JournalError::TooOldToRead { found: 1, .. }) => {
            assert!(e.to_string().contains("version 1"), "{e}");
        }
        other => panic!("read-only open of a v1 journal: {:?}", other.err()),
    }
    assert_eq!(user_version(&path), 1, "a read-only open changes nothing");

    // The copy is as loose as the umask made it; the writable open tightens it (docs/figures.md,
    // "Reliability": files are 0600 also when they existed with a looser mode).
    set_mode(&path, 0o644);
    let mut j = Journal::open(&path, JournalConfig::default()).unwrap();
    assert_eq!(mode(&path), 0o600, "journal tightened to 0600");
    assert_eq!(user_version(&path), SCHEMA_VERSION);
    assert!(columns(&path, "transitions").iter().any(|c| c == "reason"));
    // The history is all there, with the reasons version 1 did not record left empty.
    let x = j.transitions("id-x").unwrap();
    let kinds: Vec<(TransitionKind, i64)> = x.iter().map(|t| (t.kind, t.at)).collect();
    assert_eq!(
        kinds,
        [
            (TransitionKind::Runnable, 1_000),
            (TransitionKind::Submitted, 1_000),
            (TransitionKind::Scheduled, 6_000),
            (TransitionKind::Started, 7_000),
        ]
    );
    let y = j.transitions("id-y").unwrap();
    let old = y
        .iter()
        .find(|t| t.kind == TransitionKind::Preempted)
        .expect("v1 preemption kept");
    assert_eq!((old.at, old.reason.as_str()), (8_000, ""));
    let jobs = j.jobs("q", 0).unwrap();
    assert_eq!(jobs.len(), 2);
    assert_eq!(jobs[0].status, Some(JobStatus::Running));
    assert_eq!(j.queue("q").unwrap().unwrap().environment.name, "q-se");
    // Rows from before sources (schema 3) are the implicit source's: read by the plain name.
    for table in ["jobs", "queues", "usage_samples"] {
        assert!(
            columns(&path, table).iter().any(|c| c == "source"),
            "{table}"
        );
    }
    assert_eq!(j.queue("q").unwrap().unwrap().source, None);
    assert!(j.jobs("q@some-source", 0).unwrap().is_empty());

    // A preemption observed after the migration gets its reason; the old one stays as it was.
    j.record(&x_preempted()).unwrap();
    let x = j.transitions("id-x").unwrap();
    let new = x
        .iter()
        .find(|t| t.kind == TransitionKind::Preempted)
        .expect("new preemption recorded");
    assert_eq!(new.at, 12_000);
    assert_eq!(
        new.reason, "Preempted to return capacity lent to share b",
        "the reason of a preempted attempt seen after migration"
    );
    assert!(
        x.iter()
            .any(|t| t.kind == TransitionKind::Started && t.at == 7_000),
        "history before the migration is kept: {x:?}"
    );
    drop(j);
    // Once migrated, a read-only open works.
    let r = Journal::open_existing(&path, JournalConfig::default()).unwrap();
    assert_eq!(r.transitions("id-x").unwrap().len(), x.len());
}

#[test]
fn a_journal_from_a_newer_quotatop_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = copy(dir.path());
    let newer = SCHEMA_VERSION + 1;
    rusqlite::Connection::open(&path)
        .unwrap()
        .pragma_update(None, "user_version", newer)
        .unwrap();
    for (how, r) in [
        ("open", Journal::open(&path, JournalConfig::default()).err()),
        (
            "open_existing",
            Journal::open_existing(&path, JournalConfig::default()).err(),
        ),
    ] {
        match r {
            Some(JournalError::TooNew { found, known, .. }) => {
                assert_eq!((found, known), (newer, SCHEMA_VERSION), "{how}");
            }
            other => panic!("{how}: expected TooNew, got {other:?}"),
        }
    }
    let e = Journal::open(&path, JournalConfig::default())
        .err()
        .unwrap();
    let text = e.to_string();
    assert!(
        text.contains(&format!("schema version {newer}")) && text.contains("knows up to"),
        "{text}"
    );
    assert_eq!(user_version(&path), newer);
    assert!(!columns(&path, "transitions").iter().any(|c| c == "reason"));
    let found = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row("SELECT count(*) FROM transitions", [], |r| {
            r.get::<_, i64>(0)
        })
        .unwrap();
    assert_eq!(found, 9, "rows untouched");
}
