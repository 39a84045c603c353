//! The ledger at its edges (issue 44): a success at the window's very end, attempts that
//! never ran, and failed attempts counted as failed work, apart from preemption.

use super::*;

const H: Millis = 3_600_000;
const G5: &str = "ml.g5.2xlarge"; // 1 GPU

fn attempt(s: Millis, st: Option<Millis>, stop: Millis, end: AttemptEnd) -> AttemptHistory {
    AttemptHistory {
        scheduled_at: Some(s),
        started_at: st,
        stopped_at: Some(stop),
        end,
        preempting_from: None,
        restored: None,
        restored_at: None,
    }
}

fn job(attempts: Vec<AttemptHistory>, outcome: Outcome) -> JobHistory {
    JobHistory {
        job_id: "j".into(),
        name: "j".into(),
        share: "s".into(),
        priority: 1,
        instance_type: G5.into(),
        instance_count: 1,
        submitted_at: 0,
        runnable_at: vec![0],
        attempts,
        outcome,
        checkpoint_interval_ms: None,
        restart_overhead_ms: None,
        preemption_retries: None,
        training: None,
    }
}

/// Windows are half-open: a job that succeeds at exactly `window.end` has not succeeded in
/// the window, so its progress is unfinished, not productive.
#[test]
fn a_success_at_the_windows_end_is_not_yet_productive() {
    let j = job(
        vec![attempt(0, Some(0), 2 * H, AttemptEnd::Completed)],
        Outcome::Succeeded(2 * H),
    );
    let opts = ScorecardOptions::default();
    let at_end = job_ledger(&j, Window::new(0, 2 * H), &opts);
    assert_eq!((at_end.productive, at_end.unfinished), (0, 2 * H));
    let after = job_ledger(&j, Window::new(0, 2 * H + 1), &opts);
    assert_eq!((after.productive, after.unfinished), (2 * H, 0));
}

/// Two attempts preempted before they ran (no `startedAt`), the first and a re-run, then one
/// that runs 1 h and succeeds: nothing was lost, no restart overhead; the two holds are held,
/// not running.
#[test]
fn attempts_that_never_ran_are_held_not_running_and_lose_nothing() {
    let j = job(
        vec![
            attempt(0, None, H, AttemptEnd::Preempted),
            attempt(2 * H, None, 3 * H, AttemptEnd::Preempted),
            attempt(3 * H, Some(3 * H), 4 * H, AttemptEnd::Completed),
        ],
        Outcome::Succeeded(4 * H),
    );
    let l = job_ledger(&j, Window::new(0, 5 * H), &ScorecardOptions::default());
    assert_eq!(l.held_not_running, 2 * H, "{l:?}");
    assert_eq!((l.lost, l.overhead, l.lost_measured), (0, 0, 0), "{l:?}");
    assert_eq!(l.productive, H);
    assert_eq!(l.basis.measured_attempts + l.basis.modelled_attempts, 0);
    assert_eq!(l.held(), 3 * H);
}

/// A failed attempt retried into a success: failed work with its own count, not an
/// interruption, not waste, not a recovery.
#[test]
fn a_failed_attempt_is_failed_work_not_a_preemption() {
    let j = job(
        vec![
            attempt(0, Some(0), H / 2, AttemptEnd::Failed),
            attempt(H, Some(H), 2 * H, AttemptEnd::Completed),
        ],
        Outcome::Succeeded(2 * H),
    );
    let input = ScorecardInput {
        queue: "q".into(),
        window: Window::new(0, 3 * H),
        capacity: vec![quotatop_model::CapacityLimit::new(G5, 1)],
        entitlements: vec![],
        jobs: vec![j],
    };
    let card = scorecard(&input, &ScorecardOptions::default());
    let q = &card.queue_row;
    assert_eq!(q.ledger.failed_attempts, 1);
    assert!((q.ledger.failed_gpu_hours - 0.5).abs() < 1e-9);
    assert_eq!(q.ledger.failed_text(), "failed attempts: 1, 0.50 GPU-h");
    assert_eq!(q.waste.interrupted_attempts, 0);
    assert_eq!(q.waste.total_gpu_hours, 0.0);
    assert_eq!(q.recovery.interrupted_jobs, 0);
}
