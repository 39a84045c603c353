//! Unit tests for each documented behaviour (reference §2) and each choice in `policy`.

use super::*;
use quotatop_model::{InSharePreemption, ShareState, SharingStrategy};

const P4: &str = "ml.p4d.24xlarge";
const G5: &str = "ml.g5.xlarge";
const M5: &str = "ml.m5.xlarge";
const HOUR: u64 = 3_600_000;

fn engine(capacity: &[(&str, u32)]) -> Engine {
    Engine::new(EngineConfig::new(
        capacity
            .iter()
            .map(|(t, n)| CapacityLimit::new(*t, *n))
            .collect(),
    ))
    .expect("valid environment")
}

fn share(name: &str, ty: &str, n: u32, sharing: SharingConfig) -> QuotaShare {
    QuotaShare::new(name, vec![CapacityLimit::new(ty, n)], sharing)
}

fn status(e: &Engine, j: JobId) -> JobStatus {
    e.status(j).expect("job exists")
}

fn reason(e: &Engine, j: JobId) -> Option<String> {
    e.job(j).expect("job exists").status_reason
}

fn used(e: &Engine, share: &str, ty: &str) -> (u32, u32) {
    e.usage()
        .into_iter()
        .find(|u| u.share.name == share)
        .and_then(|u| u.usage.into_iter().find(|t| t.instance_type == ty))
        .map_or((0, 0), |t| (t.used, t.borrowed))
}

/// The notebook's two shares: QS1 borrows (in-share preemption on), QS2 only lends.
fn notebook() -> Engine {
    let mut e = engine(&[(M5, 2)]);
    e.create_share(
        share("QS1", M5, 1, SharingConfig::lend_and_borrow(100)).with_in_share_preemption(true),
    )
    .unwrap();
    e.create_share(share("QS2", M5, 1, SharingConfig::lend()))
        .unwrap();
    e
}

#[test]
fn lifecycle_follows_configured_delays_and_sets_timestamps() {
    let delays = Delays {
        submitted_ms: 1_000,
        pending_ms: 2_000,
        scheduled_ms: 3_000,
        starting_ms: 4_000,
        preemption_ms: 0,
        jitter_ms: 0,
    };
    let mut e = Engine::new(
        EngineConfig::new(vec![CapacityLimit::new(M5, 4)])
            .with_delays(delays)
            .with_start(1_000_000),
    )
    .unwrap();
    e.create_share(share("a", M5, 4, SharingConfig::reserve()))
        .unwrap();
    let j = e.submit(JobSpec::new("train", "a", M5, 2, 10_000)).unwrap();
    assert_eq!(status(&e, j), JobStatus::Submitted);
    e.advance_to(1_001_000).unwrap();
    assert_eq!(status(&e, j), JobStatus::Pending);
    e.advance_to(1_003_000).unwrap();
    // RUNNABLE and dispatched in the same instant: capacity is free.
    assert_eq!(status(&e, j), JobStatus::Scheduled);
    e.advance_to(1_006_000).unwrap();
    assert_eq!(status(&e, j), JobStatus::Starting);
    e.advance_to(1_010_000).unwrap();
    assert_eq!(status(&e, j), JobStatus::Running);
    e.advance_to(1_019_999).unwrap();
    assert_eq!(status(&e, j), JobStatus::Running);
    e.advance_to(1_020_000).unwrap();
    let job = e.job(j).unwrap();
    assert_eq!(job.status, JobStatus::Succeeded);
    assert_eq!(job.created_at, 1_000_000);
    assert_eq!(job.scheduled_at, Some(1_003_000));
    assert_eq!(job.started_at, Some(1_010_000));
    assert_eq!(job.stopped_at, Some(1_020_000));
    assert_eq!(job.attempts.len(), 1);
    assert!(job.preemption.is_none());
    let path: Vec<JobStatus> = e
        .events()
        .iter()
        .filter(|ev| ev.job == j)
        .map(|ev| ev.to)
        .collect();
    assert_eq!(
        path,
        vec![
            JobStatus::Submitted,
            JobStatus::Pending,
            JobStatus::Runnable,
            JobStatus::Scheduled,
            JobStatus::Starting,
            JobStatus::Running,
            JobStatus::Succeeded
        ]
    );
    assert_eq!(used(&e, "a", M5), (0, 0));
}

#[test]
fn dispatch_order_is_priority_then_oldest() {
    let mut e = engine(&[(M5, 1)]);
    e.create_share(share("a", M5, 1, SharingConfig::reserve()))
        .unwrap();
    let first = e.submit(JobSpec::new("first", "a", M5, 1, 1000)).unwrap();
    e.advance_to(10).unwrap();
    let low = e
        .submit(JobSpec::new("low", "a", M5, 1, 1000).priority(1))
        .unwrap();
    e.advance_to(20).unwrap();
    let high_old = e
        .submit(JobSpec::new("high-old", "a", M5, 1, 1000).priority(5))
        .unwrap();
    e.advance_to(30).unwrap();
    let high_new = e
        .submit(JobSpec::new("high-new", "a", M5, 1, 1000).priority(5))
        .unwrap();
    assert_eq!(status(&e, first), JobStatus::Running);
    assert_eq!(e.share_queue("a"), vec![high_old, high_new, low]);
    assert_eq!(e.queue_order(), vec![high_old, high_new, low]);
    let mut order = Vec::new();
    let mut t = 30;
    while order.len() < 3 {
        t += 1000;
        e.advance_to(t).unwrap();
        for j in [high_old, high_new, low] {
            if status(&e, j) == JobStatus::Running && !order.contains(&j) {
                order.push(j);
            }
        }
    }
    assert_eq!(order, vec![high_old, high_new, low]);
}

#[test]
fn lend_and_borrow_share_borrows_idle_capacity_of_lenders_only() {
    let mut e = engine(&[(M5, 12)]);
    e.create_share(share("borrower", M5, 2, SharingConfig::lend_and_borrow(-1)))
        .unwrap();
    e.create_share(share("lender", M5, 4, SharingConfig::lend()))
        .unwrap();
    e.create_share(share("reserved", M5, 6, SharingConfig::reserve()))
        .unwrap();
    let jobs: Vec<JobId> = (0..4)
        .map(|i| {
            e.submit(JobSpec::new(format!("b{i}"), "borrower", M5, 2, HOUR))
                .unwrap()
        })
        .collect();
    // Own 2 + the lender's 4; the RESERVE share's 6 idle instances are never lent.
    assert_eq!(used(&e, "borrower", M5), (6, 4));
    assert_eq!(status(&e, jobs[3]), JobStatus::Runnable);
    assert_eq!(reason(&e, jobs[3]), None);
}

#[test]
fn reserve_and_lend_shares_never_borrow() {
    let mut e = engine(&[(M5, 8)]);
    e.create_share(share("r", M5, 2, SharingConfig::reserve()))
        .unwrap();
    e.create_share(share("l", M5, 2, SharingConfig::lend()))
        .unwrap();
    e.create_share(share("idle", M5, 4, SharingConfig::lend()))
        .unwrap();
    for s in ["r", "l"] {
        for i in 0..3 {
            e.submit(JobSpec::new(format!("{s}{i}"), s, M5, 1, HOUR))
                .unwrap();
        }
        assert_eq!(used(&e, s, M5), (2, 0));
    }
}

#[test]
fn single_job_combines_own_and_borrowed_capacity_reference_examples() {
    // 2 instances with borrowLimit 100: the largest job is 4.
    let mut e = engine(&[(M5, 20)]);
    e.create_share(share("a", M5, 2, SharingConfig::lend_and_borrow(100)))
        .unwrap();
    e.create_share(share("b", M5, 10, SharingConfig::lend()))
        .unwrap();
    let four = e.submit(JobSpec::new("four", "a", M5, 4, HOUR)).unwrap();
    assert_eq!(status(&e, four), JobStatus::Running);
    assert_eq!(used(&e, "a", M5), (4, 2));
    let five = e.submit(JobSpec::new("five", "a", M5, 5, HOUR)).unwrap();
    assert_eq!(
        reason(&e, five).as_deref(),
        Some(Misconfiguration::ExceedsShareAndBorrowLimit.reason())
    );

    // 4 with borrowLimit 200 next to another such share: the largest job is 8, 10 is too big.
    let mut e = engine(&[(M5, 8)]);
    for s in ["A", "B"] {
        e.create_share(share(s, M5, 4, SharingConfig::lend_and_borrow(200)))
            .unwrap();
    }
    let eight = e.submit(JobSpec::new("eight", "A", M5, 8, HOUR)).unwrap();
    assert_eq!(status(&e, eight), JobStatus::Running);
    assert_eq!(used(&e, "A", M5), (8, 4));
    let ten = e.submit(JobSpec::new("ten", "A", M5, 10, HOUR)).unwrap();
    assert_eq!(status(&e, ten), JobStatus::Runnable);
    assert_eq!(
        reason(&e, ten).as_deref(),
        Some(Misconfiguration::ExceedsBorrowableCapacity.reason())
    );
}

#[test]
fn every_misconfiguration_reason_text_is_exact() {
    let mut e = engine(&[(M5, 6), (P4, 2)]);
    e.create_share(share("res", M5, 2, SharingConfig::reserve()))
        .unwrap();
    e.create_share(share("lend", M5, 2, SharingConfig::lend()))
        .unwrap();
    e.create_share(share("lab", M5, 2, SharingConfig::lend_and_borrow(50)))
        .unwrap();
    e.create_share(QuotaShare::new(
        "big",
        vec![CapacityLimit::new(P4, 4)],
        SharingConfig::reserve(),
    ))
    .unwrap();
    let cases = [
        (
            "res",
            M5,
            3,
            "MISCONFIGURATION:QUOTA_MANAGEMENT_LIMIT_EXCEEDED - Job requirements exceed quota share capacity limits.",
        ),
        (
            "lend",
            M5,
            3,
            "MISCONFIGURATION:QUOTA_MANAGEMENT_LIMIT_EXCEEDED - Job requirements exceed quota share capacity limits.",
        ),
        (
            "lab",
            M5,
            4,
            "MISCONFIGURATION:QUOTA_MANAGEMENT_LIMIT_EXCEEDED - Job requirements exceed quota share capacity limits and borrow limits.",
        ),
        (
            "big",
            P4,
            3,
            "MISCONFIGURATION:SERVICE_ENVIRONMENT_MAX_RESOURCE - Service environment(s) associated with the job queue cannot meet the capacity requirement of the job.",
        ),
    ];
    for (s, ty, n, text) in cases {
        let j = e.submit(JobSpec::new("x", s, ty, n, HOUR)).unwrap();
        assert_eq!(status(&e, j), JobStatus::Runnable, "{s}");
        assert_eq!(reason(&e, j).as_deref(), Some(text), "{s}");
    }
    let mut e = engine(&[(M5, 20)]);
    e.create_share(share("lab", M5, 2, SharingConfig::lend_and_borrow(-1)))
        .unwrap();
    e.create_share(share("lend", M5, 3, SharingConfig::lend()))
        .unwrap();
    e.create_share(share("res", M5, 10, SharingConfig::reserve()))
        .unwrap();
    let j = e.submit(JobSpec::new("x", "lab", M5, 6, HOUR)).unwrap();
    assert_eq!(
        reason(&e, j).as_deref(),
        Some(
            "MISCONFIGURATION:QUOTA_MANAGEMENT_LIMIT_EXCEEDED - Job requires borrowing that exceeds all configured borrowable capacity."
        )
    );
    // Misconfigured jobs do not block the queue behind them.
    let small = e.submit(JobSpec::new("small", "lab", M5, 1, HOUR)).unwrap();
    assert_eq!(status(&e, small), JobStatus::Running);
    // Raising the lender's limit makes the job placeable: the reason goes away and it runs.
    e.update_share(
        "lend",
        ShareUpdate {
            capacity_limits: Some(vec![CapacityLimit::new(M5, 8)]),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(status(&e, j), JobStatus::Running);
    assert!(
        e.events()
            .iter()
            .any(|ev| ev.job == j && ev.reason == EventReason::Reconfigured)
    );
}

#[test]
fn notebook_walkthrough_cross_share_then_in_share_preemption() {
    let mut e = notebook();
    let high = e
        .submit(JobSpec::new("qs1_job_high", "QS1", M5, 1, 10 * HOUR).priority(3))
        .unwrap();
    e.advance_to(1).unwrap();
    let med = e
        .submit(JobSpec::new("qs1_job_med", "QS1", M5, 1, 10 * HOUR).priority(2))
        .unwrap();
    e.advance_to(2).unwrap();
    let low = e
        .submit(JobSpec::new("qs1_job_low", "QS1", M5, 1, 10 * HOUR).priority(1))
        .unwrap();
    // Priority 3 runs on QS1's own capacity, priority 2 borrows QS2's idle capacity.
    assert_eq!(status(&e, high), JobStatus::Running);
    assert_eq!(status(&e, med), JobStatus::Running);
    assert_eq!(status(&e, low), JobStatus::Runnable);
    assert_eq!(used(&e, "QS1", M5), (2, 1));

    // QS2 takes its capacity back with a job of *lower* priority than the borrower.
    e.advance_to(60_000).unwrap();
    let qs2 = e
        .submit(JobSpec::new("qs2_job_1", "QS2", M5, 1, 10 * HOUR).priority(1))
        .unwrap();
    assert_eq!(status(&e, qs2), JobStatus::Running);
    assert_eq!(status(&e, med), JobStatus::Runnable);
    let summary = e.job(med).unwrap().preemption.expect("preempted");
    assert_eq!(summary.preempted_attempt_count, 1);
    assert_eq!(
        summary.recent_preempted_attempts[0].status_reason,
        "Cross-share preemption triggered to reclaim borrowed capacity"
    );
    assert_eq!(summary.recent_preempted_attempts[0].stopped_at, 60_000);
    assert!(e.events().iter().any(|ev| ev.job == med
        && ev.reason == EventReason::PreemptionStarted(PreemptionKind::CrossShare)
        && ev.to == JobStatus::Running));

    // Raising qs1_job_low above qs1_job_high preempts it inside QS1.
    e.advance_to(120_000).unwrap();
    e.update_priority(low, 4).unwrap();
    assert_eq!(status(&e, low), JobStatus::Running);
    assert_eq!(status(&e, high), JobStatus::Runnable);
    assert_eq!(
        e.job(high)
            .unwrap()
            .preemption
            .unwrap()
            .recent_preempted_attempts[0]
            .status_reason,
        "In-share preemption triggered by a higher priority job"
    );
    assert_eq!(status(&e, qs2), JobStatus::Running);
    assert_eq!(e.share_queue("QS1"), vec![high, med]);
}

#[test]
fn preemption_in_progress_holds_capacity_and_shows_reason() {
    let mut e = Engine::new(
        EngineConfig::new(vec![CapacityLimit::new(M5, 2)]).with_delays(Delays {
            preemption_ms: 30_000,
            ..Delays::default()
        }),
    )
    .unwrap();
    e.create_share(share("QS1", M5, 1, SharingConfig::lend_and_borrow(-1)))
        .unwrap();
    e.create_share(share("QS2", M5, 1, SharingConfig::lend()))
        .unwrap();
    let a = e.submit(JobSpec::new("a", "QS1", M5, 1, HOUR)).unwrap();
    let b = e.submit(JobSpec::new("b", "QS1", M5, 1, HOUR)).unwrap();
    e.advance_to(1000).unwrap();
    let owner = e.submit(JobSpec::new("owner", "QS2", M5, 1, HOUR)).unwrap();
    assert_eq!(status(&e, b), JobStatus::Running);
    assert_eq!(
        reason(&e, b).as_deref(),
        Some(
            "PREEMPTION_IN_PROGRESS: Cross-share preemption triggered to reclaim borrowed capacity"
        )
    );
    assert_eq!(status(&e, owner), JobStatus::Runnable);
    // Only one victim although the owner is re-examined meanwhile.
    e.advance_to(20_000).unwrap();
    assert_eq!(status(&e, a), JobStatus::Running);
    assert_eq!(reason(&e, a), None);
    e.advance_to(31_000).unwrap();
    assert_eq!(status(&e, b), JobStatus::Runnable);
    assert_eq!(status(&e, owner), JobStatus::Running);
}

#[test]
fn in_share_preemption_needs_strictly_lower_priority_and_must_be_enabled() {
    for enabled in [true, false] {
        let mut e = engine(&[(M5, 1)]);
        e.create_share(
            share("s", M5, 1, SharingConfig::reserve()).with_in_share_preemption(enabled),
        )
        .unwrap();
        let running = e
            .submit(JobSpec::new("r", "s", M5, 1, HOUR).priority(5))
            .unwrap();
        let equal = e
            .submit(JobSpec::new("eq", "s", M5, 1, HOUR).priority(5))
            .unwrap();
        assert_eq!(status(&e, running), JobStatus::Running);
        assert_eq!(status(&e, equal), JobStatus::Runnable);
        let higher = e
            .submit(JobSpec::new("hi", "s", M5, 1, HOUR).priority(6))
            .unwrap();
        if enabled {
            assert_eq!(status(&e, higher), JobStatus::Running);
            assert_eq!(status(&e, running), JobStatus::Runnable);
        } else {
            assert_eq!(status(&e, higher), JobStatus::Runnable);
            assert_eq!(status(&e, running), JobStatus::Running);
        }
    }
}

#[test]
fn cross_share_victim_is_lowest_priority_then_shortest_running() {
    let mut e = engine(&[(M5, 4)]);
    e.create_share(share("borrower", M5, 1, SharingConfig::lend_and_borrow(-1)))
        .unwrap();
    e.create_share(share("owner", M5, 3, SharingConfig::lend()))
        .unwrap();
    let own = e
        .submit(JobSpec::new("own", "borrower", M5, 1, HOUR).priority(0))
        .unwrap();
    let old_low = e
        .submit(JobSpec::new("old-low", "borrower", M5, 1, HOUR).priority(1))
        .unwrap();
    e.advance_to(1000).unwrap();
    let new_low = e
        .submit(JobSpec::new("new-low", "borrower", M5, 1, HOUR).priority(1))
        .unwrap();
    let high = e
        .submit(JobSpec::new("high", "borrower", M5, 1, HOUR).priority(9))
        .unwrap();
    assert_eq!(used(&e, "borrower", M5), (4, 3));
    e.advance_to(2000).unwrap();
    e.submit(JobSpec::new("o1", "owner", M5, 1, HOUR)).unwrap();
    // The job counted as "own" (dispatched first) is never the cross-share victim; among the
    // borrowers the lowest priority goes first, and of those the one that ran least.
    assert_eq!(status(&e, new_low), JobStatus::Runnable);
    assert_eq!(status(&e, old_low), JobStatus::Running);
    assert_eq!(status(&e, own), JobStatus::Running);
    e.submit(JobSpec::new("o2", "owner", M5, 1, HOUR)).unwrap();
    assert_eq!(status(&e, old_low), JobStatus::Runnable);
    assert_eq!(status(&e, high), JobStatus::Running);
    e.submit(JobSpec::new("o3", "owner", M5, 1, HOUR)).unwrap();
    assert_eq!(status(&e, high), JobStatus::Runnable);
    assert_eq!(status(&e, own), JobStatus::Running);
    assert_eq!(used(&e, "owner", M5), (3, 0));
}

#[test]
fn retries_before_termination_zero_fails_on_first_preemption_unset_requeues_forever() {
    let mut e = notebook();
    let capped = e
        .submit(JobSpec::new("capped", "QS1", M5, 2, HOUR).retries(0))
        .unwrap();
    assert_eq!(status(&e, capped), JobStatus::Running);
    e.advance_to(1000).unwrap();
    e.submit(JobSpec::new("owner", "QS2", M5, 1, 1000)).unwrap();
    let job = e.job(capped).unwrap();
    assert_eq!(job.status, JobStatus::Failed);
    assert_eq!(job.stopped_at, Some(1000));
    // It ends with its last attempt: when it was scheduled and started stays known.
    assert_eq!(job.scheduled_at, Some(0));
    assert_eq!(job.started_at, Some(0));
    assert_eq!(job.preemption_count(), 1);
    assert!(
        e.events()
            .iter()
            .any(|ev| ev.job == capped && ev.reason == EventReason::RetriesExhausted)
    );

    // Unset: a loop of preemptions, every one requeued, the window bounded and newest first.
    let mut e = notebook();
    let looped = e
        .submit(JobSpec::new("looped", "QS1", M5, 2, 100 * HOUR))
        .unwrap();
    let mut t = 0;
    for round in 0..8 {
        t += 10_000;
        e.advance_to(t).unwrap();
        let owner = e
            .submit(JobSpec::new(format!("owner{round}"), "QS2", M5, 1, 5_000))
            .unwrap();
        assert_eq!(status(&e, looped), JobStatus::Runnable, "round {round}");
        t += 5_000;
        e.advance_to(t).unwrap();
        assert_eq!(status(&e, owner), JobStatus::Succeeded);
        assert_eq!(status(&e, looped), JobStatus::Running, "round {round}");
    }
    let summary = e.job(looped).unwrap().preemption.unwrap();
    assert_eq!(summary.preempted_attempt_count, 8);
    assert_eq!(summary.recent_preempted_attempts.len(), 5);
    let stops: Vec<Millis> = summary
        .recent_preempted_attempts
        .iter()
        .map(|a| a.stopped_at)
        .collect();
    assert_eq!(stops, vec![115_000, 100_000, 85_000, 70_000, 55_000]);
    // Every attempt (8 preempted + the current one) is in `attempts`.
    assert_eq!(e.job(looped).unwrap().attempts.len(), 9);
}

#[test]
fn preempted_job_resumes_from_last_checkpoint_and_lost_work_is_measured() {
    for (checkpoint, saved, lost) in [(Some(1_000), 7_000, 500), (None, 0, 7_500)] {
        let mut e = notebook();
        let mut spec = JobSpec::new("ckpt", "QS1", M5, 2, 20_000);
        spec.checkpoint_interval_ms = checkpoint;
        let j = e.submit(spec).unwrap();
        e.advance_to(7_500).unwrap();
        e.submit(JobSpec::new("owner", "QS2", M5, 1, 1_000))
            .unwrap();
        let w = e.work(j).unwrap();
        assert_eq!(
            (w.saved_ms, w.rolled_back_ms, w.run_ms),
            (saved, lost, 7_500)
        );
        // The owner finishes at 8_500; the job runs again for the remaining work.
        let t = e.run_until_idle(i64::MAX).unwrap();
        assert_eq!(status(&e, j), JobStatus::Succeeded);
        assert_eq!(t, 8_500 + (20_000 - saved as i64));
        let w = e.work(j).unwrap();
        assert_eq!(w.run_ms, 20_000 + lost);
    }
}

#[test]
fn each_attempt_records_what_it_did_with_the_work() {
    for (checkpoint, lost) in [(Some(1_000), 500), (None, 7_500)] {
        let mut e = notebook();
        let mut spec = JobSpec::new("ckpt", "QS1", M5, 2, 20_000);
        spec.checkpoint_interval_ms = checkpoint;
        let j = e.submit(spec).unwrap();
        e.advance_to(7_500).unwrap();
        e.submit(JobSpec::new("owner", "QS2", M5, 1, 1_000))
            .unwrap();
        e.run_until_idle(i64::MAX).unwrap();
        let work = e.attempt_work(j);
        assert_eq!(work.len(), 2);
        let (first, second) = (work[0], work[1]);
        assert!(first.preempted && !second.preempted);
        assert_eq!(first.running_at, Some(0));
        assert_eq!(first.stopped_at, Some(7_500));
        assert_eq!((first.progress_ms, first.rolled_back_ms), (7_500, lost));
        // The sum of the attempts' losses is the job's.
        assert_eq!(
            work.iter().map(|w| w.rolled_back_ms).sum::<u64>(),
            e.work(j).unwrap().rolled_back_ms
        );
        assert_eq!(second.resumed_ms, 7_500 - lost);
        assert_eq!(second.resumed_ms + second.progress_ms, 20_000);
        assert_eq!(second.running_at, Some(8_500));
    }
}

#[test]
fn lowering_a_limit_preempts_what_the_share_may_no_longer_hold() {
    let mut e = engine(&[(M5, 8)]);
    e.create_share(share("s", M5, 4, SharingConfig::reserve()))
        .unwrap();
    let jobs: Vec<JobId> = (0..4)
        .map(|i| {
            e.submit(JobSpec::new(format!("j{i}"), "s", M5, 1, HOUR).priority(i))
                .unwrap()
        })
        .collect();
    e.advance_to(1000).unwrap();
    e.update_share(
        "s",
        ShareUpdate {
            capacity_limits: Some(vec![CapacityLimit::new(M5, 2)]),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(used(&e, "s", M5), (2, 0));
    assert_eq!(status(&e, jobs[0]), JobStatus::Runnable);
    assert_eq!(status(&e, jobs[1]), JobStatus::Runnable);
    assert_eq!(status(&e, jobs[3]), JobStatus::Running);
    assert_eq!(
        e.job(jobs[0])
            .unwrap()
            .preemption
            .unwrap()
            .recent_preempted_attempts[0]
            .status_reason,
        PreemptionKind::LimitReduced.reason()
    );
}

#[test]
fn switching_a_borrower_to_lend_preempts_its_borrowed_jobs() {
    let mut e = notebook();
    let a = e.submit(JobSpec::new("a", "QS1", M5, 1, HOUR)).unwrap();
    let b = e.submit(JobSpec::new("b", "QS1", M5, 1, HOUR)).unwrap();
    assert_eq!(used(&e, "QS1", M5), (2, 1));
    e.update_share(
        "QS1",
        ShareUpdate {
            sharing: Some(SharingConfig::lend()),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(status(&e, a), JobStatus::Running);
    assert_eq!(status(&e, b), JobStatus::Runnable);
    assert_eq!(
        e.share("QS1").unwrap().sharing.strategy,
        SharingStrategy::Lend
    );
}

#[test]
fn environment_capacity_is_never_exceeded_even_when_limits_oversubscribe_it() {
    let mut e = engine(&[(M5, 3)]);
    e.create_share(share("a", M5, 2, SharingConfig::reserve()))
        .unwrap();
    e.create_share(share("b", M5, 2, SharingConfig::reserve()))
        .unwrap();
    for s in ["a", "b"] {
        for i in 0..2 {
            e.submit(JobSpec::new(format!("{s}{i}"), s, M5, 1, HOUR))
                .unwrap();
        }
    }
    let total: u32 = e.total_usage().iter().map(|(_, n)| n).sum();
    assert_eq!(total, 3);
}

#[test]
fn terminate_releases_capacity_and_ends_failed() {
    let mut e = engine(&[(M5, 1)]);
    e.create_share(share("s", M5, 1, SharingConfig::reserve()))
        .unwrap();
    let a = e.submit(JobSpec::new("a", "s", M5, 1, HOUR)).unwrap();
    let b = e.submit(JobSpec::new("b", "s", M5, 1, HOUR)).unwrap();
    e.advance_to(500).unwrap();
    e.terminate(a, "no longer needed").unwrap();
    let job = e.job(a).unwrap();
    assert_eq!(job.status, JobStatus::Failed);
    assert!(job.is_terminated);
    assert_eq!(job.status_reason.as_deref(), Some("no longer needed"));
    assert_eq!(job.stopped_at, Some(500));
    assert_eq!(status(&e, b), JobStatus::Running);
    // Terminating again is a no-op; updating a finished job is refused.
    e.terminate(a, "again").unwrap();
    assert_eq!(
        e.update_priority(a, 5),
        Err(EngineError::JobFinished(job.id.clone()))
    );
}

#[test]
fn delete_requires_disabled_and_fails_remaining_jobs() {
    let mut e = engine(&[(M5, 2)]);
    e.create_share(share("s", M5, 1, SharingConfig::reserve()))
        .unwrap();
    let a = e.submit(JobSpec::new("a", "s", M5, 1, HOUR)).unwrap();
    let b = e.submit(JobSpec::new("b", "s", M5, 1, HOUR)).unwrap();
    assert_eq!(
        e.delete_share("s"),
        Err(EngineError::ShareNotDisabled("s".into()))
    );
    e.update_share(
        "s",
        ShareUpdate {
            state: Some(ShareState::Disabled),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(
        e.submit(JobSpec::new("c", "s", M5, 1, HOUR)),
        Err(EngineError::ShareDisabled("s".into()))
    );
    // A disabled share still runs what it already had.
    e.advance_to(10).unwrap();
    assert_eq!(status(&e, a), JobStatus::Running);
    e.delete_share("s").unwrap();
    for j in [a, b] {
        let job = e.job(j).expect("job exists");
        assert_eq!(job.status, JobStatus::Failed);
        // Terminated as TerminateServiceJob does: AWS says they are "eventually terminated".
        assert!(job.is_terminated);
        assert_eq!(job.status_reason.as_deref(), Some("Quota share deleted"));
    }
    assert!(e.shares().is_empty());
    assert!(e.total_usage().is_empty());
    // The name can be used again.
    e.create_share(share("s", M5, 1, SharingConfig::reserve()))
        .unwrap();
}

#[test]
fn bad_input_is_rejected_with_typed_errors_and_changes_nothing() {
    let mut e = engine(&[(M5, 4), (G5, 4)]);
    e.create_share(share("s", M5, 2, SharingConfig::reserve()))
        .unwrap();
    let j = e.submit(JobSpec::new("j", "s", M5, 1, HOUR)).unwrap();
    let events = e.events().len();
    let shares = e.shares();

    let lim = |n: usize| {
        (0..n)
            .map(|i| CapacityLimit::new(format!("ml.t{i}.large"), 1))
            .collect::<Vec<_>>()
    };
    let cases: Vec<(Result<(), EngineError>, EngineError)> = vec![
        (
            e.submit(JobSpec::new("x", "nope", M5, 1, 1)).map(|_| ()),
            EngineError::UnknownShare("nope".into()),
        ),
        (
            e.submit(JobSpec::new("x", "s", M5, 1, 1).priority(10_000))
                .map(|_| ()),
            EngineError::PriorityOutOfRange(10_000),
        ),
        (
            e.submit(JobSpec::new("x", "s", M5, 1, 1).priority(-1))
                .map(|_| ()),
            EngineError::PriorityOutOfRange(-1),
        ),
        (
            e.submit(JobSpec::new("x", "s", M5, 0, 1)).map(|_| ()),
            EngineError::InvalidInstanceCount,
        ),
        (
            e.update_priority(j, 10_000),
            EngineError::PriorityOutOfRange(10_000),
        ),
        (
            e.update_priority(JobId(999), 1),
            EngineError::UnknownJob("#999".into()),
        ),
        (
            e.create_share(QuotaShare::new("zero", lim(0), SharingConfig::reserve())),
            EngineError::LimitCount(0),
        ),
        (
            e.create_share(QuotaShare::new("six", lim(6), SharingConfig::reserve())),
            EngineError::LimitCount(6),
        ),
        (
            e.create_share(share("below", M5, 0, SharingConfig::reserve())),
            EngineError::LimitBelowOne(M5.into()),
        ),
        (
            e.create_share(share(
                "bl",
                M5,
                1,
                SharingConfig {
                    strategy: SharingStrategy::Lend,
                    borrow_limit: Some(100),
                },
            )),
            EngineError::BorrowLimitNotAllowed("LEND"),
        ),
        (
            e.create_share(share("neg", M5, 1, SharingConfig::lend_and_borrow(-2))),
            EngineError::InvalidBorrowLimit(-2),
        ),
        (
            e.create_share(share("s", M5, 1, SharingConfig::reserve())),
            EngineError::DuplicateShare("s".into()),
        ),
        (
            e.create_share(share("bad name!", M5, 1, SharingConfig::reserve())),
            EngineError::InvalidShareName("bad name!".into()),
        ),
        (
            e.update_share("nope", ShareUpdate::default()),
            EngineError::UnknownShare("nope".into()),
        ),
        (
            e.update_share(
                "s",
                ShareUpdate {
                    sharing: Some(SharingConfig {
                        strategy: SharingStrategy::Reserve,
                        borrow_limit: Some(5),
                    }),
                    capacity_limits: Some(vec![CapacityLimit::new(M5, 1)]),
                    ..Default::default()
                },
            ),
            EngineError::BorrowLimitNotAllowed("RESERVE"),
        ),
        (
            e.advance_to(-5),
            EngineError::ClockBackwards { now: 0, to: -5 },
        ),
    ];
    for (got, want) in cases {
        assert_eq!(got, Err(want));
    }
    assert_eq!(e.events().len(), events);
    assert_eq!(e.shares(), shares);
    assert_eq!(e.job(j).unwrap().priority, 0);

    for i in 0..19 {
        e.create_share(share(&format!("s{i}"), G5, 1, SharingConfig::reserve()))
            .unwrap();
    }
    assert_eq!(
        e.create_share(share("s21", G5, 1, SharingConfig::reserve())),
        Err(EngineError::TooManyShares { max: 20 })
    );
}

#[test]
fn instance_type_outside_the_shares_limits_is_misconfigured() {
    let mut e = engine(&[(M5, 4), (G5, 4)]);
    e.create_share(share("s", M5, 2, SharingConfig::lend()))
        .unwrap();
    let j = e.submit(JobSpec::new("g", "s", G5, 1, HOUR)).unwrap();
    assert_eq!(
        reason(&e, j).as_deref(),
        Some(Misconfiguration::ExceedsShareLimit.reason())
    );
}

#[test]
fn head_of_line_blocks_smaller_jobs_behind_in_the_same_share() {
    let mut e = engine(&[(M5, 4)]);
    e.create_share(share("s", M5, 4, SharingConfig::reserve()))
        .unwrap();
    e.submit(JobSpec::new("a", "s", M5, 2, 1000)).unwrap();
    let big = e
        .submit(JobSpec::new("big", "s", M5, 4, 1000).priority(5))
        .unwrap();
    let small = e.submit(JobSpec::new("small", "s", M5, 1, 1000)).unwrap();
    assert_eq!(status(&e, big), JobStatus::Runnable);
    assert_eq!(status(&e, small), JobStatus::Runnable);
    e.advance_to(1000).unwrap();
    assert_eq!(status(&e, big), JobStatus::Running);
}

#[test]
fn borrowing_is_served_fifo_across_shares() {
    let mut e = engine(&[(M5, 6)]);
    e.create_share(share("x", M5, 1, SharingConfig::lend_and_borrow(-1)))
        .unwrap();
    e.create_share(share("y", M5, 1, SharingConfig::lend_and_borrow(-1)))
        .unwrap();
    e.create_share(share("lender", M5, 4, SharingConfig::lend()))
        .unwrap();
    let hold = e
        .submit(JobSpec::new("hold", "lender", M5, 4, 1000))
        .unwrap();
    e.submit(JobSpec::new("x0", "x", M5, 1, HOUR)).unwrap();
    e.submit(JobSpec::new("y0", "y", M5, 1, HOUR)).unwrap();
    e.advance_to(10).unwrap();
    let y1 = e.submit(JobSpec::new("y1", "y", M5, 3, HOUR)).unwrap();
    e.advance_to(20).unwrap();
    let x1 = e
        .submit(JobSpec::new("x1", "x", M5, 3, HOUR).priority(9999))
        .unwrap();
    assert_eq!(status(&e, hold), JobStatus::Running);
    e.advance_to(1000).unwrap();
    // The lender's 4 come free: the older borrower takes 3; the other waits.
    assert_eq!(status(&e, y1), JobStatus::Running);
    assert_eq!(status(&e, x1), JobStatus::Runnable);
}

#[test]
fn in_share_preemption_makes_room_for_a_borrowing_share_as_well() {
    let mut e = engine(&[(M5, 2)]);
    e.create_share(
        share("s", M5, 2, SharingConfig::lend_and_borrow(-1)).with_in_share_preemption(true),
    )
    .unwrap();
    let low = e.submit(JobSpec::new("low", "s", M5, 2, HOUR)).unwrap();
    let high = e
        .submit(JobSpec::new("high", "s", M5, 1, HOUR).priority(3))
        .unwrap();
    assert_eq!(status(&e, high), JobStatus::Running);
    assert_eq!(status(&e, low), JobStatus::Runnable);
    assert_eq!(
        e.job(high).unwrap().share,
        "s".to_string(),
        "sanity: same share"
    );
    assert_eq!(
        e.share("s").unwrap().in_share_preemption,
        InSharePreemption::Enabled
    );
}

/// Regression: with victims released at different times, the instance freed first must wait for
/// the owner instead of going straight back to a borrower (which made the owner starve while the
/// borrowers were preempted again and again).
#[test]
fn owner_is_not_starved_when_victims_release_at_different_times() {
    let mut e = Engine::new(
        EngineConfig::new(vec![CapacityLimit::new(M5, 3)])
            .with_delays(Delays {
                preemption_ms: 10_000,
                jitter_ms: 5_000,
                ..Delays::default()
            })
            .with_seed(1),
    )
    .unwrap();
    e.create_share(share("A", M5, 1, SharingConfig::lend_and_borrow(-1)))
        .unwrap();
    e.create_share(share("B", M5, 2, SharingConfig::lend()))
        .unwrap();
    let a: Vec<JobId> = (0..3)
        .map(|i| {
            e.submit(JobSpec::new(format!("a{i}"), "A", M5, 1, HOUR))
                .unwrap()
        })
        .collect();
    e.advance_to(1_000).unwrap();
    let b = e.submit(JobSpec::new("b", "B", M5, 2, 600_000)).unwrap();
    e.advance_to(60_000).unwrap();
    assert_eq!(status(&e, b), JobStatus::Running);
    let preemptions: u32 = a
        .iter()
        .map(|&j| e.job(j).unwrap().preemption_count())
        .sum();
    assert_eq!(preemptions, 2);
}

/// Regression: an owner's job waiting for reclaimed capacity reserves it against borrowers in
/// the same pass (with zero preemption delay this used to loop forever at one instant).
#[test]
fn reclaim_with_instant_preemption_terminates_and_serves_the_owner() {
    let mut e = engine(&[(M5, 10)]);
    e.create_share(share("A", M5, 2, SharingConfig::lend_and_borrow(-1)))
        .unwrap();
    e.create_share(share("B", M5, 8, SharingConfig::lend()))
        .unwrap();
    for i in 0..5 {
        e.submit(JobSpec::new(format!("a{i}"), "A", M5, 2, HOUR))
            .unwrap();
    }
    e.advance_to(1_000).unwrap();
    // B needs 6 with only... all 8 lent out: three borrowers must go, and stay gone.
    let b = e.submit(JobSpec::new("b", "B", M5, 6, HOUR)).unwrap();
    assert_eq!(status(&e, b), JobStatus::Running);
    assert_eq!(used(&e, "A", M5), (4, 2));
}

#[test]
fn lender_reclaims_lent_capacity_even_with_idle_capacity_outside_every_share() {
    // Environment 6; the shares' limits cover 2. The borrower's instance is the lender's, so
    // the lender's job of 2 reclaims it instead of using the 4 instances outside every share.
    let mut e = engine(&[(P4, 6), (G5, 1)]);
    e.create_share(share("lender", P4, 2, SharingConfig::lend()))
        .unwrap();
    // The borrower has no p4d limit of its own.
    e.create_share(share("borrower", G5, 1, SharingConfig::lend_and_borrow(-1)))
        .unwrap();
    let b = e
        .submit(JobSpec::new("borrowing", "borrower", P4, 1, HOUR))
        .unwrap();
    assert_eq!(used(&e, "borrower", P4), (1, 1));
    e.advance_to(1_000).unwrap();
    let l = e
        .submit(JobSpec::new("owner", "lender", P4, 2, HOUR))
        .unwrap();
    // Preemption is instant by default: the owner runs, the borrower waits again.
    assert_eq!(status(&e, l), JobStatus::Running);
    assert_eq!(status(&e, b), JobStatus::Runnable);
    assert_eq!(e.job(b).expect("job exists").preemption_count(), 1);
    assert_eq!(used(&e, "borrower", P4), (0, 0));
}

#[test]
fn a_lean_engine_runs_exactly_as_a_full_one_without_the_api_view() {
    let delays = Delays {
        submitted_ms: 1_000,
        pending_ms: 2_000,
        scheduled_ms: 3_000,
        starting_ms: 4_000,
        preemption_ms: 5_000,
        jitter_ms: 777,
    };
    let run = |lean: bool| {
        let mut e = Engine::new(
            EngineConfig::new(vec![CapacityLimit::new(M5, 3)])
                .with_delays(delays)
                .with_seed(42),
        )
        .unwrap();
        e.set_lean(lean);
        e.create_share(
            share("QS1", M5, 1, SharingConfig::lend_and_borrow(100)).with_in_share_preemption(true),
        )
        .unwrap();
        e.create_share(share("QS2", M5, 2, SharingConfig::lend()))
            .unwrap();
        let mut t = 0;
        for i in 0..12u64 {
            let (s, p) = if i % 3 == 0 {
                ("QS2", 0)
            } else {
                ("QS1", (i * 7 % 5) as i64)
            };
            let spec = JobSpec::new(format!("j{i}"), s, M5, 1, (i % 4 + 1) * 600_000)
                .priority(p)
                .checkpoint_every(120_000)
                .retries(2);
            e.submit(spec).unwrap();
            t += 97_000;
            e.advance_to(t).unwrap();
        }
        e.submit(JobSpec::new("too-big", "QS2", M5, 9, 1_000))
            .unwrap();
        e.run_until_idle(Millis::MAX / 4).unwrap();
        e
    };
    let (full, lean) = (run(false), run(true));
    assert_eq!(lean.events(), full.events());
    assert!(
        full.events()
            .iter()
            .any(|ev| matches!(ev.reason, EventReason::Preempted(_))),
        "the workload preempts"
    );
    for j in 0..full.job_count() as u32 {
        let (f, l) = (full.job(JobId(j)).unwrap(), lean.job(JobId(j)).unwrap());
        assert_eq!(lean.work(JobId(j)), full.work(JobId(j)));
        assert_eq!(
            (l.status, l.status_reason.clone()),
            (f.status, f.status_reason.clone())
        );
        assert_eq!((l.created_at, l.stopped_at), (f.created_at, f.stopped_at));
        assert_eq!(l.preemption_count(), f.preemption_count());
        assert!(l.id.is_empty() && l.name.is_empty() && l.attempts.is_empty());
        assert!(!f.id.is_empty() && !f.attempts.is_empty() || f.status == JobStatus::Runnable);
        assert_eq!(lean.find(&f.id), None);
        assert_eq!(full.find(&f.id), Some(JobId(j)));
    }
}

#[test]
fn a_strategy_update_without_a_borrow_limit_keeps_the_current_one() {
    let mut e = engine(&[(M5, 4)]);
    e.create_share(share("s", M5, 2, SharingConfig::lend_and_borrow(150)))
        .unwrap();
    let update = |strategy| ShareUpdate {
        sharing: Some(SharingConfig {
            strategy,
            borrow_limit: None,
        }),
        ..Default::default()
    };
    e.update_share("s", update(SharingStrategy::LendAndBorrow))
        .unwrap();
    assert_eq!(e.share("s").unwrap().sharing.borrow_limit, Some(150));
    // From a strategy that does not borrow, there is no limit to keep: unlimited.
    e.update_share("s", update(SharingStrategy::Lend)).unwrap();
    e.update_share("s", update(SharingStrategy::LendAndBorrow))
        .unwrap();
    assert_eq!(
        e.share("s").unwrap().sharing.borrow_limit,
        Some(quotatop_model::UNLIMITED_BORROW)
    );
}

fn failing(spec: JobSpec, f: FailureSpec) -> JobSpec {
    JobSpec {
        failures: Some(f),
        ..spec
    }
}

#[test]
fn an_attempt_times_out_and_the_job_fails_with_awss_reason() {
    let mut e = engine(&[(M5, 2)]);
    e.create_share(share("s", M5, 2, SharingConfig::reserve()))
        .unwrap();
    let j = e
        .submit(failing(
            JobSpec::new("slow", "s", M5, 1, HOUR),
            FailureSpec {
                attempt_timeout_ms: Some(60_000),
                ..Default::default()
            },
        ))
        .unwrap();
    e.advance_to(59_999).unwrap();
    assert_eq!(status(&e, j), JobStatus::Running);
    e.advance_to(60_000).unwrap();
    let job = e.job(j).unwrap();
    assert_eq!(job.status, JobStatus::Failed);
    assert_eq!(
        job.status_reason.as_deref(),
        Some("Job attempt duration exceeded timeout")
    );
    assert_eq!(job.started_at, Some(0));
    assert_eq!(job.stopped_at, Some(60_000));
    assert_eq!(
        job.attempts[0].status_reason.as_deref(),
        Some("Job attempt duration exceeded timeout")
    );
    assert_eq!(used(&e, "s", M5), (0, 0));
}

#[test]
fn a_failed_attempt_is_retried_from_its_checkpoint_and_the_job_succeeds() {
    let mut e = engine(&[(M5, 2)]);
    e.create_share(share("s", M5, 2, SharingConfig::reserve()))
        .unwrap();
    let j = e
        .submit(failing(
            JobSpec::new("flaky", "s", M5, 1, 100_000).checkpoint_every(10_000),
            FailureSpec {
                attempts: 2,
                fail_after_ms: Some(25_000),
                failing_attempts: 1,
                ..Default::default()
            },
        ))
        .unwrap();
    e.advance_to(25_000).unwrap();
    // Failed after 25 s, retried at once (capacity is free), from the 20 s checkpoint.
    let job = e.job(j).unwrap();
    assert_eq!(job.status, JobStatus::Running);
    assert_eq!(
        job.attempts[0].status_reason.as_deref(),
        Some("AlgorithmError: Training job failed")
    );
    assert_eq!(job.attempts.len(), 2);
    e.advance_to(25_000 + 79_999).unwrap();
    assert_eq!(status(&e, j), JobStatus::Running);
    e.advance_to(25_000 + 80_000).unwrap();
    assert_eq!(status(&e, j), JobStatus::Succeeded);
    let p = e.work(j).unwrap();
    assert_eq!(p.rolled_back_ms, 5_000);
    assert_eq!(p.run_ms, 105_000);
    assert!(e.events().iter().any(|ev| ev.job == j
        && ev.reason == EventReason::AttemptFailed(FailureKind::Error)
        && ev.to == JobStatus::Runnable));
}

#[test]
fn evaluate_on_exit_exit_ends_the_job_at_the_first_failure() {
    let mut e = engine(&[(M5, 2)]);
    e.create_share(share("s", M5, 2, SharingConfig::reserve()))
        .unwrap();
    let spec = |rule: &str| {
        failing(
            JobSpec::new("flaky", "s", M5, 1, 100_000),
            FailureSpec {
                attempts: 3,
                rules: vec![RetryRule {
                    on_status_reason: rule.to_string(),
                    action: RetryAction::Exit,
                }],
                fail_after_ms: Some(1_000),
                failing_attempts: 3,
                ..Default::default()
            },
        )
    };
    let exits = e.submit(spec("AlgorithmError*")).unwrap();
    // A rule that does not match: retried until the attempts are used up.
    let retried = e.submit(spec("Job attempt*")).unwrap();
    e.advance_to(10_000).unwrap();
    assert_eq!(status(&e, exits), JobStatus::Failed);
    assert_eq!(e.job(exits).unwrap().attempts.len(), 1);
    assert_eq!(status(&e, retried), JobStatus::Failed);
    assert_eq!(e.job(retried).unwrap().attempts.len(), 3);
}

#[test]
fn max_runtime_fails_a_longer_job_and_a_job_reaching_its_limit() {
    let mut e = engine(&[(M5, 3)]);
    e.create_share(share("s", M5, 3, SharingConfig::reserve()))
        .unwrap();
    let limit = |work| {
        failing(
            JobSpec::new("j", "s", M5, 1, work),
            FailureSpec {
                max_runtime_ms: Some(HOUR),
                ..Default::default()
            },
        )
    };
    let long = e.submit(limit(2 * HOUR)).unwrap();
    let exact = e.submit(limit(HOUR)).unwrap();
    let within = e.submit(limit(HOUR - 1_000)).unwrap();
    e.advance_to(HOUR as i64).unwrap();
    assert_eq!(status(&e, long), JobStatus::Failed);
    assert!(
        reason(&e, long).is_some_and(|r| r.starts_with("MaxRuntimeExceeded")),
        "{:?}",
        reason(&e, long)
    );
    // Reaching the limit is exceeding it, as SageMaker reports it; a second less completes.
    assert_eq!(status(&e, exact), JobStatus::Failed);
    assert!(reason(&e, exact).is_some_and(|r| r.starts_with("MaxRuntimeExceeded")));
    assert_eq!(status(&e, within), JobStatus::Succeeded);
}

#[test]
fn a_new_environment_capacity_applies_to_the_next_dispatch() {
    let mut e = engine(&[(M5, 1)]);
    e.create_share(share("s", M5, 4, SharingConfig::reserve()))
        .unwrap();
    let a = e.submit(JobSpec::new("a", "s", M5, 1, HOUR)).unwrap();
    let b = e.submit(JobSpec::new("b", "s", M5, 2, HOUR)).unwrap();
    // b needs 2 of an environment of 1: misconfigured.
    assert!(reason(&e, b).is_some_and(|r| r.contains("SERVICE_ENVIRONMENT_MAX_RESOURCE")));
    e.set_capacity(vec![CapacityLimit::new(M5, 3)]).unwrap();
    assert_eq!(status(&e, a), JobStatus::Running);
    assert_eq!(status(&e, b), JobStatus::Running);
    // Refused changes leave the capacity as it was.
    assert!(e.set_capacity(vec![CapacityLimit::new(M5, 0)]).is_err());
    assert_eq!(e.config().capacity, vec![CapacityLimit::new(M5, 3)]);
    // The environment's 3 are in use: the next job waits.
    let c = e.submit(JobSpec::new("c", "s", M5, 1, HOUR)).unwrap();
    assert_eq!(status(&e, c), JobStatus::Runnable);
}

#[test]
fn among_equal_borrowers_the_one_borrowing_most_is_reclaimed_first() {
    // Two borrowers of the same priority dispatched at the same instant (the same elapsed
    // time): only "borrowing most first" tells them apart, and it decides against the last
    // tie-break (most recently submitted first), which would pick `small`.
    let mut e = engine(&[(M5, 5)]);
    e.create_share(share("borrower", M5, 1, SharingConfig::lend_and_borrow(-1)))
        .unwrap();
    e.create_share(share("owner", M5, 4, SharingConfig::lend()))
        .unwrap();
    let own = e
        .submit(JobSpec::new("own", "borrower", M5, 1, HOUR).priority(1))
        .unwrap();
    let big = e
        .submit(JobSpec::new("big", "borrower", M5, 2, HOUR).priority(1))
        .unwrap();
    let small = e
        .submit(JobSpec::new("small", "borrower", M5, 1, HOUR).priority(1))
        .unwrap();
    assert_eq!(used(&e, "borrower", M5), (4, 3));
    e.advance_to(1000).unwrap();
    // One instance is idle; the owner needs two, so one instance must be reclaimed: either
    // borrower frees enough.
    e.submit(JobSpec::new("o", "owner", M5, 2, HOUR)).unwrap();
    assert_eq!(
        status(&e, big),
        JobStatus::Runnable,
        "the larger borrower goes"
    );
    assert_eq!(status(&e, small), JobStatus::Running);
    assert_eq!(status(&e, own), JobStatus::Running);
}

/// A pass whose `dispatch` leaves the job at the head of its queue: the pass must stop with an
/// error naming it rather than loop.
struct StuckHead {
    state: placement::TypeState,
    dispatches: u32,
}

impl placement::Pass for StuckHead {
    fn shares(&self) -> usize {
        1
    }
    fn types(&self) -> usize {
        1
    }
    fn live(&self, _s: usize) -> bool {
        true
    }
    fn borrows(&self, _s: usize) -> bool {
        false
    }
    fn head(&self, _s: usize, _ty: usize) -> Option<placement::Head> {
        Some(placement::Head {
            id: 7,
            order: 0,
            count: 1,
            priority: 1,
            created_at: 0,
        })
    }
    fn view(&self, _ty: usize) -> impl placement::TypeView + '_ {
        &self.state
    }
    fn dispatch(&mut self, _id: u32) {
        self.dispatches += 1;
    }
    fn preempt(&mut self, _victim: &placement::Victim) {}
}

#[test]
fn a_pass_that_would_not_end_is_an_error_naming_the_job() {
    let mut p = StuckHead {
        state: placement::TypeState {
            ledger: placement::CapacityLedger {
                own: vec![4],
                used: vec![0],
                lends: vec![false],
                borrows: vec![false],
                borrow_cap: vec![None],
                env: 4,
            },
            releasing: vec![0],
            holders: vec![Vec::new()],
            in_share_preemption: vec![false],
        },
        dispatches: 0,
    };
    let err = placement::pass(&mut p).unwrap_err();
    assert_eq!(
        err,
        placement::NoFixpoint {
            job: 7,
            share: 0,
            ty: 0
        }
    );
    assert_eq!(
        p.dispatches, 1,
        "stopped at the second offer of the same job"
    );
}

#[test]
fn a_paused_engine_dispatches_nothing_and_running_jobs_run_on() {
    let mut e = engine(&[(M5, 2)]);
    e.create_share(share("a", M5, 2, SharingConfig::reserve()))
        .unwrap();
    let first = e.submit(JobSpec::new("first", "a", M5, 1, HOUR)).unwrap();
    e.advance_to(60_000).unwrap();
    assert_eq!(status(&e, first), JobStatus::Running);
    e.set_dispatching(false).unwrap();
    assert!(!e.dispatching());
    let second = e.submit(JobSpec::new("second", "a", M5, 1, HOUR)).unwrap();
    e.advance_to(600_000).unwrap();
    assert_eq!(status(&e, second), JobStatus::Runnable);
    assert_eq!(status(&e, first), JobStatus::Running);
    e.set_dispatching(true).unwrap();
    e.advance_to(700_000).unwrap();
    assert_eq!(status(&e, second), JobStatus::Running);
}

#[test]
fn created_at_never_decreases_with_the_job_id() {
    let mut e = engine(&[(M5, 2)]);
    e.create_share(share("a", M5, 2, SharingConfig::reserve()))
        .unwrap();
    for k in 0..20u64 {
        e.submit(JobSpec::new(format!("j{k}"), "a", M5, 1, HOUR))
            .unwrap();
        e.advance_to(k as i64 * 700).unwrap();
    }
    let created: Vec<Millis> = (0..20)
        .map(|j| e.facts(JobId(j)).unwrap().created_at)
        .collect();
    assert!(created.windows(2).all(|w| w[0] <= w[1]), "{created:?}");
    let f = e.facts(JobId(3)).unwrap();
    assert_eq!(
        (f.name, f.share, f.status),
        ("j3", "a", e.status(JobId(3)).unwrap())
    );
    assert!(e.facts(JobId(20)).is_none());
}

/// The indexes the emulator reads instead of sorting or scanning ([`Engine::queue_front`],
/// [`Engine::share_first`], [`Engine::with_status`]) give exactly what the full sort and scan
/// give, at every step of a busy queue: priorities, terminations, priority changes, a share
/// with no limit of a type (misconfigured jobs) and a deleted-by-disable share.
#[test]
fn the_queue_front_share_fronts_and_status_index_match_the_full_sort_and_scan() {
    let mut e = engine(&[(M5, 6), (G5, 3)]);
    e.create_share(share("a", M5, 3, SharingConfig::lend_and_borrow(100)))
        .unwrap();
    e.create_share(QuotaShare::new(
        "b",
        vec![CapacityLimit::new(M5, 2), CapacityLimit::new(G5, 3)],
        SharingConfig::lend(),
    ))
    .unwrap();
    e.create_share(share("c", M5, 1, SharingConfig::reserve()))
        .unwrap();
    let mut rng = Rng::new(7);
    let mut ids = Vec::new();
    for step in 0..400u64 {
        let s = ["a", "b", "c"][rng.upto(2) as usize];
        // Share c has no G5: those jobs are misconfigured.
        let ty = if rng.upto(3) == 0 { G5 } else { M5 };
        let spec = JobSpec::new(format!("j{step}"), s, ty, 1 + rng.upto(1) as u32, 5_000)
            .priority(rng.upto(4) as i64);
        ids.push(e.submit(spec).unwrap());
        if step % 7 == 0 {
            let j = ids[rng.upto(ids.len() as u64 - 1) as usize];
            e.terminate(j, "test").unwrap();
        }
        if step % 5 == 0 {
            let j = ids[rng.upto(ids.len() as u64 - 1) as usize];
            let _ = e.update_priority(j, rng.upto(9) as i64);
        }
        e.advance_to(e.now() + rng.upto(1_500) as i64).unwrap();
        let order = e.queue_order();
        for n in [0, 1, 3, 50, order.len() + 5] {
            assert_eq!(e.queue_front(n), order[..n.min(order.len())], "step {step}");
        }
        for name in ["a", "b", "c", "nope"] {
            assert_eq!(
                e.share_first(name),
                e.share_queue(name).first().copied(),
                "{name} at step {step}"
            );
        }
        let below = (e.job_count() as u32).saturating_sub(rng.upto(10) as u32);
        for status in JobStatus::ALL {
            let scanned: Vec<JobId> = (0..below)
                .rev()
                .map(JobId)
                .filter(|&j| e.status(j) == Some(status))
                .collect();
            assert_eq!(e.with_status(status, below).collect::<Vec<_>>(), scanned);
        }
    }
    assert!(!e.queue_order().is_empty(), "the test reached a queue");
    assert!(ids.iter().any(|&j| e.status(j) == Some(JobStatus::Running)));
}

/// `fits` as it was defined: the pool of a copy of the ledger with the `n` instances added.
fn fits_by_copy(l: &placement::CapacityLedger, s: usize, n: u32) -> bool {
    let pool = |l: &placement::CapacityLedger| -> i64 {
        let mut pool = 0i64;
        for ((&own, &used), &lends) in l.own.iter().zip(&l.used).zip(&l.lends) {
            let (own, used) = (own as i64, used as i64);
            if lends && used < own {
                pool += own - used;
            }
            if used > own {
                pool -= used - own;
            }
        }
        pool
    };
    let used = l.used[s] as u64 + n as u64;
    let own = l.own[s] as u64;
    if used > own {
        if !l.borrows[s] {
            return false;
        }
        if let Some(cap) = l.borrow_cap[s]
            && used - own > cap as u64
        {
            return false;
        }
    }
    if l.used.iter().map(|&u| u as u64).sum::<u64>() + n as u64 > l.env as u64 {
        return false;
    }
    let mut after = l.clone();
    after.used[s] += n;
    let (before, after) = (pool(l), pool(&after));
    after >= 0 || after >= before
}

#[test]
fn fits_says_what_the_pool_of_a_copy_with_the_instances_added_says() {
    let mut rng = Rng::new(11);
    let (mut fit, mut unfit) = (0, 0);
    for _ in 0..20_000 {
        let n = 1 + rng.upto(4) as usize;
        let own: Vec<u32> = (0..n).map(|_| rng.upto(6) as u32).collect();
        let l = placement::CapacityLedger {
            used: own.iter().map(|&o| rng.upto(o as u64 + 4) as u32).collect(),
            own,
            lends: (0..n).map(|_| rng.upto(1) == 0).collect(),
            borrows: (0..n).map(|_| rng.upto(1) == 0).collect(),
            borrow_cap: (0..n)
                .map(|_| (rng.upto(2) == 0).then(|| rng.upto(4) as u32))
                .collect(),
            env: rng.upto(30) as u32,
        };
        let (s, count) = (rng.upto(n as u64 - 1) as usize, rng.upto(5) as u32);
        let want = fits_by_copy(&l, s, count);
        assert_eq!(l.fits(s, count), want, "{l:?} share {s} count {count}");
        if want { fit += 1 } else { unfit += 1 }
    }
    assert!(
        fit > 1_000 && unfit > 1_000,
        "both answers tried: {fit} fit, {unfit} do not"
    );
}

/// The engine's own-limit check the pass asks for every head is the ledger's.
#[test]
fn the_engines_own_limit_check_is_the_ledgers() {
    use placement::{Pass, TypeView};
    let mut e = engine(&[(G5, 8)]);
    e.create_share(share("a", G5, 3, SharingConfig::lend_and_borrow(100)))
        .unwrap();
    e.create_share(share("b", G5, 2, SharingConfig::reserve()))
        .unwrap();
    for i in 0..4 {
        e.submit(JobSpec::new(format!("a{i}"), "a", G5, 1, HOUR))
            .unwrap();
    }
    e.advance_to(e.now() + 60_000).unwrap();
    let view = Pass::view(&e, 0);
    for s in 0..2 {
        for count in 0..6 {
            assert_eq!(
                view.fits_own(s, count),
                placement::fits_own(&view.ledger(false), s, count),
                "share {s} count {count}"
            );
        }
    }
}
