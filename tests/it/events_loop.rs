//! The whole loop history from Batch's preemption events: a job preempted 30 times while
//! `record --events-queue` runs keeps all 30 attempts, with their true start and stop, in the
//! journal's preemption history, after the API's window of recent attempts dropped the early
//! ones.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::emulator_support::*;
use crate::events_cli::{cmd, queue_url, run, text};
use crate::events_record::{attr, record};
use aws_sdk_batch::types::QuotaShareResourceSharingStrategy as Strategy;
use quotatop_store::journal::{Journal, JournalConfig};

const LOOPS: usize = 30;

type Times = BTreeMap<String, (Option<i64>, Option<i64>)>;

/// The borrower's preempted attempts its DescribeServiceJob lists now (the API's window), and
/// its preemption count.
async fn window(c: &aws_sdk_batch::Client, job: &str) -> (Times, i32) {
    let d = c.describe_service_job().job_id(job).send().await.unwrap();
    let Some(p) = d.preemption_summary() else {
        return (Times::new(), 0);
    };
    let times = p
        .recent_preempted_attempts()
        .iter()
        .map(|a| {
            let id = a
                .service_resource_id()
                .and_then(|r| r.value())
                .map(str::to_string);
            (id.unwrap(), (a.started_at(), a.stopped_at()))
        })
        .collect();
    (times, p.preempted_attempt_count().unwrap_or(0))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loop_of_30_preemptions_keeps_every_attempt_with_its_true_times() {
    let emu = start(&[(M5, 2)], "").await;
    let c = client(&emu, 1);
    create_share(
        &c,
        "QS1",
        &[(M5, 1)],
        Strategy::LendAndBorrow,
        Some(100),
        false,
    )
    .await;
    create_share(&c, "QS2", &[(M5, 1)], Strategy::Lend, None, false).await;
    let dir = crate::temp_support::dir_path("events-loop");
    let d = dir.as_path();
    let o = run(cmd(&emu, d, "setup", "ev", &["--yes"])).await;
    assert!(o.status.success(), "{}", text(&o));
    let url = queue_url(&emu, "ev").await.unwrap();
    let rec = record(&emu, d);
    // QS1 fills its own instance and borrows QS2's; each lender QS2 submits takes it back
    // (preempting the borrower), and once the lender is terminated the borrower runs again.
    submit(&c, "own", "QS1", M5, 1, 1).await;
    emu.advance(1).unwrap();
    let borrower = submit(&c, "borrower", "QS1", M5, 1, 1).await;
    emu.advance(60_000).unwrap();
    let mut truth = Times::new();
    for i in 0..LOOPS {
        let lender = submit(&c, &format!("lender{i}"), "QS2", M5, 1, 1).await;
        emu.advance(60_000).unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        truth.extend(window(&c, &borrower).await.0);
        c.terminate_service_job()
            .job_id(&lender)
            .reason("done")
            .send()
            .await
            .unwrap();
        emu.advance(60_000).unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let (api, count) = window(&c, &borrower).await;
    assert_eq!(count as usize, LOOPS);
    assert_eq!(
        truth.len(),
        LOOPS,
        "the loop's attempts, seen as they happened"
    );
    assert!(
        api.len() < LOOPS,
        "the API's window kept every attempt: {}",
        api.len()
    );
    assert!(truth.values().all(|(s, e)| s.is_some() && e.is_some()));

    let deadline = Instant::now() + Duration::from_secs(60);
    while attr(&emu, &url, "ApproximateNumberOfMessages").await
        + attr(&emu, &url, "ApproximateNumberOfMessagesNotVisible").await
        > 0
    {
        assert!(Instant::now() < deadline, "the queue was not emptied");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    drop(rec);

    let j = Journal::open(&d.join("journal.sqlite3"), JournalConfig::default()).unwrap();
    let recs = j.preempted_jobs(QUEUE, 0).unwrap();
    let r = recs
        .iter()
        .find(|r| r.job_id == borrower)
        .expect("the borrower in the journal's preemption history");
    let kept: Times = r
        .attempts
        .iter()
        .map(|a| (a.resource_id.clone(), (a.started_at, Some(a.stopped_at))))
        .collect();
    assert_eq!(kept, truth, "every attempt with its true start and stop");
    assert_eq!(r.attempts.len(), LOOPS);
    assert_eq!(r.from_events as usize, LOOPS);
}
