//! `quotatop requeue` end to end against the emulator: a copy with the retry cap and the tag
//! naming the job it replaces, then the original terminated — one audited change; a lost
//! answer on either call ends in one true record and one copy; a process killed between the
//! two calls is decided by `audit reconcile`, which finds the copy by its tag.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::terminate_cli::{cmd, reconcile, run, state, temp_log, text, world};
use quotatop_emulator::{EmulatorHandle, FaultSpec};
use quotatop_store::audit::{self, Outcome, Verdict};

const REASON: &str = "preemption loop, cap its retries";

/// The jobs named `name` other than `original`: (id, preemption retries).
fn copies(h: &EmulatorHandle, name: &str, original: &str) -> Vec<(String, Option<u32>)> {
    h.with_engine(|e| {
        (0..e.job_count())
            .filter_map(|i| e.job(quotatop_engine::JobId(i as u32)))
            .filter(|j| j.name == name && j.id != original)
            .map(|j| (j.id.clone(), j.preemption_retries))
            .collect()
    })
    .unwrap()
}

async fn requeue(h: &EmulatorHandle, log: &std::path::Path, job: &str) -> std::process::Output {
    run(cmd(
        "requeue",
        &h.endpoint_url(),
        log,
        &[job, "--retry-limit", "2", "--reason", REASON, "--yes"],
    ))
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_requeue_submits_a_capped_copy_then_terminates_the_original() {
    let (h, [a, _, _]) = world().await;
    let log = temp_log("requeue-ok");
    let out = requeue(&h, &log, &a).await;
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("preemptionRetriesBeforeTermination 2"), "{t}");
    let copies = copies(&h, "alpha", &a);
    assert_eq!(copies.len(), 1, "{copies:?}");
    assert_eq!(copies[0].1, Some(2));
    let (status, reason, terminated) = state(&h, &a);
    assert_eq!(status, "FAILED");
    assert!(terminated);
    assert!(reason.unwrap().starts_with("quotatop: "));
    let records = audit::read_records(&log).unwrap();
    assert_eq!(records.len(), 2, "one change: one intent, one outcome");
    assert_eq!(
        records[0].1.action.as_ref().unwrap().call,
        "RequeueServiceJob"
    );
    assert!(matches!(
        records[1].1.outcome,
        Some(Outcome::Succeeded { .. })
    ));
    assert!(records[1].1.preview.contains(&copies[0].0));
    h.shutdown().await.ok();
}

/// Every answer of the submission lost: the SDK's retries (the same clientToken) make no
/// second copy; the copy is found by its tags and the original terminated.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_submit_answer_makes_one_copy_and_one_true_record() {
    let (h, [a, _, _]) = world().await;
    h.set_faults(FaultSpec::parse("submitservicejob:lose-answer=1").unwrap());
    let log = temp_log("requeue-lost-submit");
    let out = requeue(&h, &log, &a).await;
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert_eq!(copies(&h, "alpha", &a).len(), 1, "{t}");
    assert!(state(&h, &a).2, "original terminated");
    let records = audit::read_records(&log).unwrap();
    assert_eq!(records.len(), 2, "{t}");
    assert!(
        matches!(
            &records[1].1.outcome,
            Some(Outcome::Reconciled { verdict: Verdict::Landed, call_error: Some(e), .. }) if e.contains("SubmitServiceJob")
        ),
        "{:?}",
        records[1].1.outcome
    );
    h.shutdown().await.ok();
}

/// One answer of the submission lost: the SDK's retry with the same clientToken gets the copy
/// the first try submitted, so the change succeeds outright with one copy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_submit_retried_after_a_lost_answer_gets_the_first_copy() {
    let (h, [a, _, _]) = world().await;
    h.set_faults(FaultSpec::parse("submitservicejob:lose-answer-first=1").unwrap());
    let log = temp_log("requeue-retried-submit");
    let out = requeue(&h, &log, &a).await;
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert_eq!(h.fault_stats().answers_lost, 1, "{t}");
    assert_eq!(copies(&h, "alpha", &a).len(), 1, "{t}");
    assert!(state(&h, &a).2, "original terminated");
    let records = audit::read_records(&log).unwrap();
    assert_eq!(records.len(), 2, "{t}");
    assert!(
        matches!(records[1].1.outcome, Some(Outcome::Succeeded { .. })),
        "{:?}",
        records[1].1.outcome
    );
    h.shutdown().await.ok();
}

/// The termination's answer lost on every try: the original is read back, terminated.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_terminate_answer_is_read_back() {
    let (h, [a, _, _]) = world().await;
    h.set_faults(FaultSpec::parse("terminateservicejob:lose-answer=1").unwrap());
    let log = temp_log("requeue-lost-terminate");
    let out = requeue(&h, &log, &a).await;
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert_eq!(copies(&h, "alpha", &a).len(), 1, "{t}");
    assert!(state(&h, &a).2);
    let records = audit::read_records(&log).unwrap();
    assert_eq!(records.len(), 2, "{t}");
    assert!(
        matches!(
            &records[1].1.outcome,
            Some(Outcome::Reconciled { verdict: Verdict::Landed, call_error: Some(e), .. }) if e.contains("TerminateServiceJob")
        ),
        "{:?}",
        records[1].1.outcome
    );
    h.shutdown().await.ok();
}

/// kill -9 between the two calls: the termination is held, the process killed; reconcile
/// (while the call is still held) finds the copy by its tag and the original running: half
/// made, "did not land"; once the held call lands, the next reconcile says "landed after
/// all". One copy throughout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kill_between_the_two_calls_is_decided_by_reconcile() {
    let (h, [a, _, _]) = world().await;
    h.set_faults(FaultSpec::parse("terminateservicejob:hold=8s").unwrap());
    let log = temp_log("requeue-killed");
    let mut child = cmd(
        "requeue",
        &h.endpoint_url(),
        &log,
        &[&a, "--retry-limit", "2", "--reason", REASON, "--yes"],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while h.fault_stats().held < 1 {
        assert!(
            Instant::now() < deadline,
            "the terminate call was never held"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(copies(&h, "alpha", &a).len(), 1, "the copy was submitted");
    assert_eq!(
        audit::read_records(&log).unwrap().len(),
        1,
        "the intent only"
    );
    let r = reconcile(&h.endpoint_url(), &log);
    let t = text(&r);
    assert!(
        !state(&h, &a).2,
        "the held call landed before reconcile: {t}"
    );
    assert!(
        t.contains("RequeueServiceJob") && t.contains("did not land"),
        "{t}"
    );
    assert!(
        t.contains("found by its tags") && t.contains("half made"),
        "{t}"
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while !state(&h, &a).2 {
        assert!(Instant::now() < deadline, "the held call never landed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let r = reconcile(&h.endpoint_url(), &log);
    let t = text(&r);
    assert!(t.contains("landed after all"), "{t}");
    assert_eq!(copies(&h, "alpha", &a).len(), 1);
    assert_eq!(audit::verify(&log).map(|h| h.count), Ok(3));
    h.shutdown().await.ok();
}
