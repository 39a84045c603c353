use super::*;
use quotatop_model::{Attempt, PreemptedAttempt, PreemptionSummary};

fn job(status: JobStatus) -> ServiceJob {
    ServiceJob {
        id: "j".into(),
        name: "n".into(),
        share: "s".into(),
        priority: 1,
        instance_type: "ml.g5.xlarge".into(),
        instance_count: 1,
        status,
        status_reason: None,
        created_at: 1_000,
        scheduled_at: None,
        started_at: None,
        stopped_at: None,
        preemption_retries: None,
        class_tag: None,
        preemption: None,
        attempts: vec![],
        checkpoint_interval_ms: None,
        is_terminated: false,
        extras: Default::default(),
    }
}

fn attempt(id: &str, start: Option<Millis>, stop: Option<Millis>) -> Attempt {
    Attempt {
        resource_id: id.into(),
        started_at: start,
        stopped_at: stop,
        status_reason: None,
    }
}

fn kinds(ts: &[Transition]) -> Vec<(&'static str, &str, Millis, bool)> {
    ts.iter()
        .map(|t| (t.kind.as_str(), t.attempt.as_str(), t.at, t.exact))
        .collect()
}

#[test]
fn submitted_then_runnable_estimated_at_the_observation() {
    let a = job(JobStatus::Pending);
    assert_eq!(
        kinds(&transitions(None, &a, 2_000)),
        [("submitted", "", 1_000, true)]
    );
    let b = job(JobStatus::Runnable);
    assert_eq!(
        kinds(&transitions(Some(&a), &b, 7_000)),
        [("runnable", "", 7_000, false)]
    );
    // Seen again: nothing new.
    assert!(transitions(Some(&b), &b, 9_000).is_empty());
}

#[test]
fn first_runnable_is_capped_at_the_first_start() {
    let a = job(JobStatus::Pending);
    let mut b = job(JobStatus::Running);
    b.scheduled_at = Some(3_000);
    b.attempts = vec![attempt("r1", Some(4_000), None)];
    assert_eq!(
        kinds(&transitions(Some(&a), &b, 9_000)),
        [
            ("scheduled", "r1", 3_000, true),
            ("started", "r1", 4_000, true),
            ("runnable", "", 3_000, false)
        ]
    );
    // First seen past PENDING: createdAt.
    assert_eq!(
        transitions(None, &b, 9_000).last().map(|t| t.at),
        Some(1_000)
    );
}

#[test]
fn preemption_requeue_resume_and_completion() {
    let mut running = job(JobStatus::Running);
    running.scheduled_at = Some(3_000);
    running.attempts = vec![attempt("r1", Some(4_000), None)];
    let mut requeued = job(JobStatus::Runnable);
    requeued.attempts = vec![attempt("r1", Some(4_000), Some(8_000))];
    requeued.preemption = Some(PreemptionSummary {
        preempted_attempt_count: 1,
        recent_preempted_attempts: vec![PreemptedAttempt {
            resource_id: "r1".into(),
            started_at: Some(4_000),
            stopped_at: 8_000,
            status_reason: "x".into(),
        }],
    });
    assert_eq!(
        kinds(&transitions(Some(&running), &requeued, 9_000)),
        [
            ("preempted", "r1", 8_000, true),
            ("runnable", "r1", 8_000, true)
        ]
    );
    let mut done = requeued.clone();
    done.status = JobStatus::Succeeded;
    done.scheduled_at = Some(10_000);
    done.stopped_at = Some(20_000);
    done.attempts
        .push(attempt("r2", Some(11_000), Some(20_000)));
    assert_eq!(
        kinds(&transitions(Some(&requeued), &done, 21_000)),
        [
            ("scheduled", "r2", 10_000, true),
            ("resumed", "r2", 11_000, true),
            ("completed", "r2", 20_000, true)
        ]
    );
}

#[test]
fn retries_exhausted_is_a_preemption_then_a_failure_without_requeue() {
    let mut failed = job(JobStatus::Failed);
    failed.stopped_at = Some(8_000);
    failed.attempts = vec![attempt("r1", Some(4_000), Some(8_000))];
    failed.preemption = Some(PreemptionSummary {
        preempted_attempt_count: 1,
        recent_preempted_attempts: vec![PreemptedAttempt {
            resource_id: "r1".into(),
            started_at: Some(4_000),
            stopped_at: 8_000,
            status_reason: "x".into(),
        }],
    });
    let all = derived(&failed);
    let ks = kinds(&all);
    assert!(ks.contains(&("preempted", "r1", 8_000, true)));
    assert!(ks.contains(&("failed", "", 8_000, true)));
    assert!(!ks.iter().any(|k| k.0 == "runnable"));
}

#[test]
fn kinds_round_trip() {
    for k in TransitionKind::ALL {
        assert_eq!(TransitionKind::parse(k.as_str()), Some(k));
    }
}

/// An attempt that failed (`AlgorithmError`) and was retried is a failed attempt, never a
/// preemption: no preemption summary lists it and its reason is no preemption's. A stopped
/// attempt whose reason says preempted is one, also once the summary's window dropped it.
#[test]
fn a_failed_and_retried_attempt_is_not_a_preemption() {
    let mut retried = job(JobStatus::Runnable);
    let mut a1 = attempt("r1", Some(4_000), Some(8_000));
    a1.status_reason = Some("AlgorithmError: Training job failed".into());
    retried.attempts = vec![a1.clone()];
    assert_eq!(
        kinds(&derived(&retried))[2..],
        [
            ("attempt_failed", "r1", 8_000, true),
            ("runnable", "r1", 8_000, true)
        ]
    );
    let t = derived(&retried);
    assert_eq!(t[2].reason, "AlgorithmError: Training job failed");
    // The retry runs and succeeds: the job completes with it; attempt 1 stays failed.
    let mut done = retried.clone();
    done.status = JobStatus::Succeeded;
    done.stopped_at = Some(20_000);
    done.attempts
        .push(attempt("r2", Some(11_000), Some(20_000)));
    let all = derived(&done);
    let ks = kinds(&all);
    assert!(
        ks.contains(&("attempt_failed", "r1", 8_000, true)),
        "{ks:?}"
    );
    assert!(ks.contains(&("completed", "r2", 20_000, true)), "{ks:?}");
    assert!(!ks.iter().any(|k| k.0 == "preempted"), "{ks:?}");
    // Preempted by its reason alone (older than the summary's window).
    let mut old = done.clone();
    old.attempts[0].status_reason =
        Some("In-share preemption triggered by a higher priority job".into());
    let all = derived(&old);
    let ks = kinds(&all);
    assert!(ks.contains(&("preempted", "r1", 8_000, true)), "{ks:?}");
}
