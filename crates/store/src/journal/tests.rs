//! SQLite-only journal tests (a corrupt, locked or deleted file, file mode, two openers of
//! a fresh file), and the shared suite (`suite/`) on SQLite.

use super::*;
use crate::StoreLocation;

/// A fresh SQLite journal in a temporary directory (in a subdirectory not yet made).
fn fresh_sqlite() -> (tempfile::TempDir, StoreLocation) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub").join("journal.sqlite3");
    (dir, StoreLocation::File(path))
}

/// One `#[test]` per test of the shared suite, each on a fresh SQLite journal.
macro_rules! on_sqlite {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                let (_dir, store) = fresh_sqlite();
                super::suite::$name(&store);
            }
        )*
    };
}
super::suite::with_suite_tests!(on_sqlite);
use quotatop_analysis::fixture;
use quotatop_model::{JobStatus, Millis, QueueSnapshot, SharingConfig, Snapshot, TrackedJob};

const G5: &str = "ml.g5.12xlarge";

fn queue_at(t: Millis, jobs: Vec<TrackedJob>) -> QueueSnapshot {
    let mut q = fixture::queue(&[("a", G5, 2, SharingConfig::lend())]);
    q.server_time = Some(t);
    q.jobs = jobs;
    q
}

fn snap(t: Millis, jobs: Vec<TrackedJob>) -> Snapshot {
    Snapshot {
        taken_at: t,
        sequence: t as u64,
        queues: vec![queue_at(t, jobs)],
        ..Default::default()
    }
}

fn job(name: &str, status: JobStatus) -> TrackedJob {
    fixture::job(name, "a", G5, 1, status, 10, 1_000)
}

fn kinds(j: &Journal, id: &str) -> Vec<(&'static str, Millis)> {
    j.transitions(id)
        .unwrap()
        .into_iter()
        .map(|t| (t.kind.as_str(), t.at))
        .collect()
}

#[cfg(unix)]
#[test]
fn file_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.sqlite3");
    let _j = Journal::open(&path, JournalConfig::default()).unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
}

#[test]
fn corrupt_file_is_reported_and_the_caller_continues() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.sqlite3");
    std::fs::write(&path, vec![b'x'; 8192]).unwrap();
    let err = Journal::open(&path, JournalConfig::default())
        .err()
        .unwrap();
    assert!(matches!(err, JournalError::Corrupt { .. }), "{err:?}");
    assert!(err.to_string().contains("move it away"), "{err}");
    let handle = JournalHandle::start(&path, JournalConfig::default());
    assert!(!handle.record(snap(1, vec![])));
    handle.flush();
    let st = handle.status();
    assert!(st.unavailable.unwrap().contains("not a readable database"));
    assert_eq!(st.dropped, 1);
    // The file was left alone for the user to inspect.
    assert_eq!(std::fs::read(&path).unwrap(), vec![b'x'; 8192]);
}

#[test]
fn locked_database_is_reported_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.sqlite3");
    let cfg = JournalConfig {
        busy_timeout_ms: 50,
        ..Default::default()
    };
    let holder = Journal::open(&path, cfg).unwrap();
    holder
        .with_sqlite(|c| c.execute_batch("BEGIN EXCLUSIVE"))
        .unwrap()
        .unwrap();
    let mut other = Journal::open(&path, cfg).unwrap();
    let err = other
        .record(&snap(1, vec![job("x", JobStatus::Pending)]))
        .err()
        .unwrap();
    assert!(matches!(err, JournalError::Locked { .. }), "{err:?}");
    assert!(!err.is_fatal());
    holder
        .with_sqlite(|c| c.execute_batch("COMMIT"))
        .unwrap()
        .unwrap();
    other
        .record(&snap(2, vec![job("x", JobStatus::Pending)]))
        .unwrap();
    assert_eq!(kinds(&other, "id-x"), [("submitted", 1_000)]);
}

/// Two processes opening a fresh journal at the same moment (two recorders, a recorder and a
/// console) both get a working journal: the schema version is read inside the migration's
/// exclusive transaction, so the second waits and then finds nothing to do.
#[test]
fn two_openers_of_a_fresh_journal_both_succeed() {
    let dir = tempfile::tempdir().unwrap();
    for round in 0..40 {
        let path = dir.path().join(format!("fresh-{round}.sqlite3"));
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(2));
        let openers: Vec<_> = (0..2)
            .map(|i| {
                let (path, barrier) = (path.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    let mut j = Journal::open(&path, JournalConfig::default())?;
                    j.record(&snap(
                        1_000 + i,
                        vec![job(&format!("j{i}"), JobStatus::Pending)],
                    ))
                    .map(|_| ())
                })
            })
            .collect();
        for o in openers {
            let r = o.join().unwrap();
            assert!(r.is_ok(), "round {round}: {r:?}");
        }
    }
}

/// A journal deleted while open is noticed (SQLite would go on writing into the unlinked
/// file): what went into it no longer counts as journaled, and a new journal is started at
/// the same path.
#[test]
fn a_journal_deleted_while_open_is_noticed_and_started_again() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("data");
    let path = sub.join("j.sqlite3");
    let handle = JournalHandle::start(&path, JournalConfig::default());
    handle.record(snap(1_000, vec![job("a", JobStatus::Pending)]));
    handle.flush();
    assert_eq!(handle.status().snapshots_written, 1);
    std::fs::remove_dir_all(&sub).unwrap();
    // The next write finds the path gone: taken back from the count, tried again later.
    handle.record(snap(2_000, vec![job("a", JobStatus::Runnable)]));
    handle.flush();
    let st = handle.status();
    assert_eq!(st.snapshots_written, 0, "{st:?}");
    assert!(
        st.unavailable
            .as_deref()
            .is_some_and(|u| u.contains("deleted, moved or replaced"))
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while handle.status().snapshots_written == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "{:?}",
            handle.status()
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
        handle.record(snap(3_000, vec![job("a", JobStatus::Running)]));
        handle.flush();
    }
    assert!(path.exists());
    assert_eq!(handle.status().reopened, 1);
    drop(handle);
    let j = Journal::open_existing(&path, JournalConfig::default()).unwrap();
    assert!(!j.queues().unwrap().is_empty());
}
