//! `record`'s unit tests: the recording loop, and record.log's mode.

use std::time::Duration;

use tokio::sync::mpsc;

use super::*;
use quotatop_model::{JobStatus, QueueSnapshot};
use quotatop_store::journal::{Journal, JournalConfig};

use super::super::log_file::RotatingLog;
use quotatop_model::Snapshot;
use quotatop_store::journal::JournalHandle;

fn snap(t: i64, status: JobStatus) -> Snapshot {
    let mut j = quotatop_analysis::fixture::job("x", "a", "ml.g5.xlarge", 1, status, 1, 1_000);
    j.listed_at = t;
    Snapshot {
        taken_at: t,
        sequence: t as u64,
        queues: vec![QueueSnapshot {
            name: "q".into(),
            jobs: vec![j],
            server_time: Some(t),
            ..Default::default()
        }],
        ..Default::default()
    }
}

#[tokio::test]
async fn records_until_shutdown_then_flushes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.sqlite3");
    let journal = JournalHandle::start(&path, quotatop_store::journal::JournalConfig::default());
    let (tx, mut rx) = mpsc::channel(4);
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let task = async {
        record_loop(
            &mut rx,
            &journal,
            0,
            async {
                let _ = stop_rx.await;
            },
            None,
        )
        .await
    };
    let feed = async {
        tx.send(snap(2_000, JobStatus::Pending)).await.unwrap();
        tx.send(snap(5_000, JobStatus::Runnable)).await.unwrap();
        tokio::task::yield_now().await;
        // Both sends were taken before the stop (the channel is drained in order).
        while tx.capacity() < 4 {
            tokio::task::yield_now().await;
        }
        let _ = stop_tx.send(());
    };
    let (summary, ()) = tokio::join!(task, feed);
    assert_eq!(
        (summary.received, summary.queued, summary.written),
        (2, 2, 2)
    );
    assert_eq!(summary.failure(Some(&path.display())), None);
    journal.shutdown();
    let j = Journal::open_existing(&path, JournalConfig::default()).unwrap();
    let kinds: Vec<_> = j
        .transitions("id-x")
        .unwrap()
        .into_iter()
        .map(|t| (t.kind.as_str(), t.at))
        .collect();
    assert_eq!(kinds, [("submitted", 1_000), ("runnable", 5_000)]);
}

#[cfg(unix)]
#[test]
fn the_log_is_private_even_if_it_existed_with_a_looser_mode() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("record.log");
    std::fs::write(&path, "old\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    drop(RotatingLog::open(&path, super::super::log_file::DEFAULT_ROTATION).unwrap());
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let fresh = dir.path().join("new.log");
    drop(RotatingLog::open(&fresh, super::super::log_file::DEFAULT_ROTATION).unwrap());
    let mode = std::fs::metadata(&fresh).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}

#[tokio::test]
async fn a_closed_poller_ends_the_loop() {
    let dir = tempfile::tempdir().unwrap();
    let journal = JournalHandle::start(&dir.path().join("j.sqlite3"), JournalConfig::default());
    let (tx, mut rx) = mpsc::channel(1);
    drop(tx);
    let s = record_loop(&mut rx, &journal, 0, std::future::pending(), None).await;
    assert_eq!((s.received, s.written), (0, 0));
    assert!(
        s.failure(Some(&dir.path().display()))
            .unwrap()
            .contains("journaled nothing")
    );
}

/// A journal that cannot be opened (its directory is a file) is tried again with back-off;
/// once the obstacle is gone the same session journals, and until then the loop gives up
/// after `max_unjournaled` snapshots with a reason that names the path.
#[tokio::test]
async fn an_unavailable_journal_is_retried_and_a_hopeless_one_fails_loudly() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("sub");
    std::fs::write(&blocker, "not a directory").unwrap();
    let path = blocker.join("j.sqlite3");

    // Hopeless: gives up after 3 snapshots in a row, naming the journal.
    let journal = JournalHandle::start(&path, JournalConfig::default());
    assert!(journal.status().unavailable.is_some());
    let (tx, mut rx) = mpsc::channel(16);
    for t in 1..=10 {
        tx.send(snap(t * 1_000, JobStatus::Pending)).await.unwrap();
    }
    let s = record_loop(&mut rx, &journal, 3, std::future::pending(), None).await;
    assert_eq!(s.gave_up_after, Some(3));
    let why = s.failure(Some(&path.display())).unwrap();
    assert!(why.contains("3 snapshots in a row"), "{why}");
    assert!(why.contains(&path.display().to_string()), "{why}");
    journal.shutdown();

    // Recoverable: the directory appears after the first failure; after the back-off
    // the writer opens the journal and stores what comes next.
    let journal = JournalHandle::start(&path, JournalConfig::default());
    journal.record(snap(1_000, JobStatus::Pending));
    journal.flush();
    assert_eq!(journal.status().snapshots_written, 0);
    std::fs::remove_file(&blocker).unwrap();
    std::fs::create_dir(&blocker).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while journal.status().snapshots_written == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "{:?}",
            journal.status()
        );
        journal.record(snap(2_000, JobStatus::Runnable));
        journal.flush();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let st = journal.status();
    assert_eq!(st.reopened, 1);
    assert!(st.unavailable.is_none());
    assert!(st.last_error.is_some());
    journal.shutdown();
}
