//! Warm start from the journal: the console shows the newest journaled snapshot at once, marked
//! "from history, N min old" (never live, never complete) until the first refresh replaces it;
//! the poller starts from it, so a restart describes about what a steady refresh does, and a job
//! that changed while quotatop was stopped is described again. A partial snapshot (progressive
//! first load) is journaled as partial, and says so when time travel shows it.

use crate::data_support::{batch_client, job};
use crate::emulator_support::{M5, QUEUE, create_share, submit};
use crate::tui_support::{NOW, options, run_with, screen_text, snapshot};
use aws_sdk_batch::types::QuotaShareResourceSharingStrategy as Strategy;
use quotatop::commands::warm;
use quotatop_aws::poll::{PollConfig, Poller};
use quotatop_model::{JobStatus, Snapshot};
use quotatop_store::journal::{Journal, JournalConfig};

const DESCRIBE: &str = "describeservicejob";
const JOBS: usize = 60;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_describes_what_changed_not_every_job() {
    let h = crate::emulator_support::start(&[(M5, 4)], "").await;
    let sdk = crate::emulator_support::client(&h, 3);
    create_share(&sdk, "team", &[(M5, 4)], Strategy::Reserve, None, false).await;
    let mut ids = Vec::new();
    for i in 0..JOBS {
        ids.push(submit(&sdk, &format!("j{i:02}"), "team", M5, 1, (i % 5) as i32).await);
    }
    h.advance(1_000).unwrap(); // 4 run, 56 wait
    let client = batch_client(&h).await;
    let budget = 5;
    let config = PollConfig {
        queues: vec![QUEUE.to_string()],
        describe_budget: budget,
        concurrency: 4,
        ..PollConfig::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite3");

    // The first run: a cold first refresh describes every job; it is journaled.
    let mut first_run = Poller::new(config.clone());
    let before = h.calls(DESCRIBE);
    let journaled = first_run.refresh(&client).await;
    assert_eq!(h.calls(DESCRIBE) - before, JOBS as u64, "cold: every job");
    assert!(journaled.is_complete());
    Journal::open(&path, JournalConfig::default())
        .unwrap()
        .record(&journaled)
        .unwrap();
    let before = h.calls(DESCRIBE);
    first_run.refresh(&client).await;
    let steady = h.calls(DESCRIBE) - before;
    assert_eq!(steady, budget as u64, "a quiet steady refresh: the budget");
    drop(first_run);

    // While stopped: a running job is terminated and another starts in its place.
    sdk.terminate_service_job()
        .job_id(&ids[0])
        .reason("test")
        .send()
        .await
        .unwrap();
    h.advance(1_000).unwrap();
    let started: Vec<String> = h
        .with_engine(|e| {
            e.jobs()
                .filter(|j| j.started_at.is_some_and(|t| t >= e.now() - 1_000))
                .map(|j| j.id.clone())
                .collect()
        })
        .unwrap();
    assert!(!started.is_empty());

    // The restart, from the journal.
    let warm = warm::load(&path, &[QUEUE.to_string()], client.source()).expect("a warm start");
    assert!(warm.health.from_history && !warm.is_complete());
    assert_eq!(warm.queues[0].jobs.len(), JOBS);
    let mut restarted = Poller::new(config);
    restarted.seed(&warm);
    let before = h.calls(DESCRIBE);
    let s = restarted.refresh(&client).await;
    let made = h.calls(DESCRIBE) - before;
    let changed = 1 + started.len() as u64;
    assert!(
        made <= steady + changed,
        "a restart describes {made}: about a steady refresh ({steady}) plus the {changed} \
         jobs that changed, not all {JOBS}"
    );
    assert!(s.is_complete() && !s.health.from_history);
    let q = &s.queues[0];
    assert_eq!(q.jobs.len(), JOBS);
    // What changed while stopped is described again, now.
    let done = job(q, &ids[0]).unwrap();
    assert_eq!(done.job.status, JobStatus::Failed);
    assert!(done.job.is_terminated);
    assert!(done.described_at > job(&warm.queues[0], &ids[0]).unwrap().described_at);
    for id in &started {
        let j = job(q, id).unwrap();
        assert_eq!(j.job.status, JobStatus::Running, "{id}");
        assert!(j.described_at > job(&warm.queues[0], id).unwrap().described_at);
    }
    // A job that did not change keeps its journaled details (its priority) without a describe.
    let kept = q
        .jobs
        .iter()
        .filter(|j| j.described_at == job(&warm.queues[0], &j.job.id).unwrap().described_at)
        .count();
    assert!(kept >= JOBS - made as usize, "{kept} kept");
    h.shutdown().await.unwrap();
}

/// The fixture snapshot as journaled twelve minutes before the console's clock.
fn from_history() -> Snapshot {
    let mut s = snapshot();
    s.taken_at = NOW + 1_000 - 12 * 60_000;
    s.into_history()
}

#[tokio::test]
async fn the_journaled_snapshot_is_shown_marked_then_replaced_by_live_data() {
    let (t, _) = run_with(160, 24, options(), vec![from_history()], vec![]).await;
    let text = screen_text(&t);
    assert!(text.contains("from history, 12m00s old"), "{text}");
    assert!(text.contains("waiting for the first refresh"), "{text}");
    // Never shown as live: no health, no calls.
    assert!(!text.contains("healthy"), "{text}");
    assert!(!text.contains("calls/min"), "{text}");
    // Its data is on screen at once (the fixture's shares).
    assert!(text.contains("research"), "{text}");

    // The first live refresh replaces it (through the same chain the console uses).
    let (tx, live) = tokio::sync::mpsc::channel(1);
    let mut chained = warm::chain(Some(from_history()), live);
    tx.send(snapshot()).await.unwrap();
    drop(tx);
    let mut arrived = Vec::new();
    while let Some(s) = chained.recv().await {
        arrived.push(s);
    }
    assert_eq!(arrived.len(), 2);
    assert!(arrived[0].health.from_history && !arrived[1].health.from_history);
    let (t, _) = run_with(160, 24, options(), arrived, vec![]).await;
    let text = screen_text(&t);
    assert!(!text.contains("from history"), "{text}");
    assert!(text.contains("healthy"), "{text}");
}

/// `quotatop record` on the test queue, refreshing once a minute (one refresh in a test).
fn recorder(
    url: &str,
    journal: &std::path::Path,
    log_dir: &std::path::Path,
) -> std::process::Child {
    crate::data_support::quotatop()
        .args([
            "record",
            "--queue",
            QUEUE,
            "--interval",
            "60",
            "--endpoint-url",
            url,
        ])
        .arg("--journal")
        .arg(journal)
        .arg("--log-dir")
        .arg(log_dir)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

/// Waits (at most 60 s) until the journal at `path` stores `n` snapshots.
fn wait_for_snapshots(path: &std::path::Path, n: usize) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let stored = Journal::open_existing(path, JournalConfig::default())
            .and_then(|j| j.snapshot_times(i64::MIN, i64::MAX))
            .map_or(0, |t| t.len());
        if stored >= n {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{stored} of {n} snapshots"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

fn stop(mut child: std::process::Child) {
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    child.wait().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn record_restarts_from_its_journal() {
    const MANY: usize = 150;
    let h = crate::emulator_support::start(&[(M5, 4)], "").await;
    let sdk = crate::emulator_support::client(&h, 3);
    create_share(&sdk, "team", &[(M5, 4)], Strategy::Reserve, None, false).await;
    let mut ids = Vec::new();
    for i in 0..MANY {
        ids.push(submit(&sdk, &format!("r{i:03}"), "team", M5, 1, 1).await);
    }
    h.advance(1_000).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal.sqlite3");
    let url = h.endpoint_url();

    let before = h.calls(DESCRIBE);
    let first = recorder(&url, &journal, dir.path());
    wait_for_snapshots(&journal, 1);
    stop(first);
    assert_eq!(h.calls(DESCRIBE) - before, MANY as u64, "cold: every job");

    sdk.terminate_service_job()
        .job_id(&ids[0])
        .reason("test")
        .send()
        .await
        .unwrap();
    h.advance(1_000).unwrap();
    let before = h.calls(DESCRIBE);
    let second = recorder(&url, &journal, dir.path());
    wait_for_snapshots(&journal, 2);
    stop(second);
    let made = h.calls(DESCRIBE) - before;
    // The rolling budget (40 by default) and the jobs that changed, not all 150.
    let budget = PollConfig::default().describe_budget as u64;
    assert!(made <= budget + 4, "warm: {made} describes");
    let newest = Journal::open_existing(&journal, JournalConfig::default())
        .unwrap()
        .newest_snapshot()
        .unwrap()
        .unwrap();
    assert!(newest.is_complete());
    assert_eq!(
        job(&newest.queues[0], &ids[0]).unwrap().job.status,
        JobStatus::Failed,
        "the job terminated while stopped was described again"
    );
    h.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_partial_snapshot_in_history_is_marked_partial_when_travelled_to() {
    use crate::tui_support::{Step, drive_steps};
    use quotatop::services::JournalReader;
    use quotatop_tui::data::HISTORY_LEN;
    use quotatop_tui::effects::Services;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite3");
    // Ten minutes ago the console had described only two jobs (a progressive first load).
    let mut partial = snapshot();
    partial.taken_at = NOW - 10 * 60_000;
    for q in &mut partial.queues {
        q.server_time = Some(partial.taken_at);
        q.refreshed_at = Some(partial.taken_at);
    }
    let total = partial.queues[0].jobs.len();
    for j in partial.queues[0].jobs.iter_mut().skip(2) {
        j.described_at = None;
    }
    Journal::open(&path, JournalConfig::default())
        .unwrap()
        .record(&partial)
        .unwrap();
    let services = Services {
        history: Some(std::sync::Arc::new(JournalReader {
            location: path.into(),
            spark_len: HISTORY_LEN,
        })),
        ..Services::default()
    };
    let (t, _) = drive_steps(
        160,
        30,
        options(),
        services,
        snapshot(),
        vec![Step::Keys("[")],
    )
    .await;
    let text = screen_text(&t);
    assert!(text.contains("recorded 10m"), "{text}");
    let want = format!("partial: 2 of {total} jobs described");
    assert!(text.contains(&want), "{text}");
}
