use std::collections::BTreeMap;

use super::*;
use crate::GpuTable;
use crate::fixture::{job, queue};
use crate::scorecard::Window;
use quotatop_model::{
    Attempt, JobStatus, PreemptedAttempt, PreemptionSummary, ServiceJob, SharingConfig,
};

const G5: &str = "ml.g5.xlarge";
const MIN: i64 = 60_000;

fn request() -> DrillRequest {
    DrillRequest {
        queue: "q".into(),
        lender: "lend".into(),
        borrower: "borrow".into(),
        instance_types: Vec::new(),
        lengths_ms: vec![10 * MIN, 60 * MIN],
        repeat: 2,
        baseline: true,
        priority: 100,
        priority_length_ms: 5 * MIN,
        borrower_priority: 0,
        preemption_retries: 3,
        allow_busy: false,
        max_runtime_ms: 2 * 60 * MIN,
    }
}

/// lend: LEND 3 of G5, one in use; borrow: LEND_AND_BORROW 50% of its own 2.
fn world() -> quotatop_model::QueueSnapshot {
    let mut q = queue(&[
        ("lend", G5, 3, SharingConfig::lend()),
        ("borrow", G5, 2, SharingConfig::lend_and_borrow(50)),
        ("other", G5, 1, SharingConfig::reserve()),
    ]);
    q.jobs = vec![job("own", "lend", G5, 1, JobStatus::Running, 0, 0)];
    q
}

#[test]
fn the_plan_fills_what_the_borrower_may_borrow_of_the_lenders_idle_capacity() {
    let mut prices = BTreeMap::new();
    prices.insert(G5.to_string(), 2.0);
    let p = plan(&world(), &request(), &prices).unwrap();
    let t = &p.types[0];
    assert_eq!((t.lender_limit, t.lender_idle), (3, 2));
    assert_eq!((t.borrower_limit, t.borrower_idle), (2, 2));
    // 50% of its own 2: one instance may be borrowed although the lender has 2 idle.
    assert_eq!(t.borrow_room, Some(1));
    assert_eq!((t.borrower_jobs, t.borrowed, t.priority_count), (3, 1, 2));
    // A baseline, then 2 lengths x 2 rounds, numbered in order.
    assert_eq!(p.repetitions.len(), 5);
    assert!(p.repetitions[0].baseline && p.repetitions[0].borrower_jobs == 0);
    assert_eq!(
        p.repetitions.iter().map(|r| r.index).collect::<Vec<_>>(),
        vec![1, 2, 3, 4, 5]
    );
    // Expected time and capacity held: the sum of the repetitions' estimates.
    let (mut wall, mut held) = (0, 0);
    for r in &p.repetitions {
        let (w, h) = expected_repetition(r, 5 * MIN);
        wall += w;
        held += h;
    }
    assert_eq!(p.expected_ms, wall);
    let hours = held as f64 / 3.6e6;
    assert!((p.instance_hours[G5] - hours).abs() < 1e-9);
    assert!((p.cost.unwrap() - 2.0 * hours).abs() < 1e-9);
    // A type named twice is drilled once.
    let mut twice = request();
    twice.instance_types = vec![G5.into(), G5.into()];
    assert_eq!(plan(&world(), &twice, &prices).unwrap().types.len(), 1);
    // Without prices, no cost (not zero).
    assert_eq!(
        plan(&world(), &request(), &BTreeMap::new()).unwrap().cost,
        None
    );
}

#[test]
fn refusals_name_the_share_to_change() {
    let no = BTreeMap::new();
    let mut r = request();
    r.lender = "other".into();
    let e = plan(&world(), &r, &no).unwrap_err().to_string();
    assert!(
        e.contains("share other does not lend (strategy RESERVE)"),
        "{e}"
    );
    let mut r = request();
    r.borrower = "lend".into();
    r.lender = "borrow".into();
    let e = plan(&world(), &r, &no).unwrap_err().to_string();
    assert!(
        e.contains("share lend does not borrow (strategy LEND)"),
        "{e}"
    );
    // A borrow limit of 0 borrows nothing.
    let mut q = world();
    q.shares[1].sharing = SharingConfig::lend_and_borrow(0);
    let e = plan(&q, &request(), &no).unwrap_err().to_string();
    assert!(e.contains("share borrow does not borrow"), "{e}");
    // RUNNABLE work in either share, unless --allow-busy.
    let mut q = world();
    q.jobs
        .push(job("queued", "borrow", G5, 1, JobStatus::Runnable, 0, 0));
    let e = plan(&q, &request(), &no).unwrap_err().to_string();
    assert!(
        e.contains("share borrow has 1 RUNNABLE job of others (queued)"),
        "{e}"
    );
    let mut r = request();
    r.allow_busy = true;
    assert!(plan(&q, &r, &no).is_ok());
    // Nothing idle to reclaim.
    let mut q = world();
    q.jobs
        .push(job("big", "lend", G5, 2, JobStatus::Running, 0, 0));
    let e = plan(&q, &request(), &no).unwrap_err().to_string();
    assert!(e.contains("share lend has no idle ml.g5.xlarge now"), "{e}");
    // A type the lender has no limit for.
    let mut r = request();
    r.instance_types = vec!["ml.p4d.24xlarge".into()];
    let e = plan(&world(), &r, &no).unwrap_err().to_string();
    assert!(e.contains("no capacity of ml.p4d.24xlarge to lend"), "{e}");
    // A stopping condition shorter than the longest job.
    let mut r = request();
    r.max_runtime_ms = 30 * MIN;
    let e = plan(&world(), &r, &no).unwrap_err().to_string();
    assert!(
        e.contains("stopping condition (MaxRuntimeInSeconds 1800)"),
        "{e}"
    );
}

fn borrower_job(id: &str, attempts: Vec<Attempt>, preempted: Vec<PreemptedAttempt>) -> ServiceJob {
    let mut j =
        std::sync::Arc::unwrap_or_clone(job(id, "borrow", G5, 1, JobStatus::Running, 0, 0).job);
    j.id = id.into();
    j.preemption = (!preempted.is_empty()).then_some(PreemptionSummary {
        preempted_attempt_count: preempted.len() as u32,
        recent_preempted_attempts: preempted,
    });
    j.attempts = attempts;
    j
}

fn attempt(id: &str, start: i64, stop: Option<i64>) -> Attempt {
    Attempt {
        resource_id: id.into(),
        started_at: Some(start),
        stopped_at: stop,
        status_reason: None,
    }
}

#[test]
fn preemptions_are_measured_from_the_attempts() {
    let p = PreemptedAttempt {
        resource_id: "a1".into(),
        started_at: Some(100 * MIN),
        stopped_at: 131 * MIN,
        status_reason: "Preempted by cross-share preemption".into(),
    };
    let hit = borrower_job(
        "hit",
        vec![
            attempt("a1", 100 * MIN, Some(131 * MIN)),
            attempt("a2", 140 * MIN, None),
        ],
        vec![p.clone()],
    );
    // Preempted before the priority job: not this repetition's.
    let earlier = borrower_job(
        "earlier",
        vec![
            attempt("a1", 100 * MIN, Some(131 * MIN)),
            attempt("a2", 140 * MIN, None),
        ],
        vec![p],
    );
    let untouched = borrower_job("untouched", vec![attempt("a1", 100 * MIN, None)], vec![]);
    let out = preempted_jobs(&[hit.clone(), untouched.clone()], 130 * MIN);
    assert_eq!(out.len(), 1);
    let m = &out[0];
    assert_eq!(m.job_id, "hit");
    assert_eq!(m.requeued_at, 131 * MIN);
    assert_eq!(m.requeued_after_ms, MIN);
    assert_eq!(m.restarted_at, Some(140 * MIN));
    assert_eq!(m.requeue_to_restart_ms, Some(9 * MIN));
    assert_eq!((m.preempted_attempts, m.attempt), (1, 2));
    assert_eq!(m.checkpoint, CheckpointVerdict::Unknown);
    assert!(preempted_jobs(&[earlier], 132 * MIN).is_empty());

    // Reclaim latency: the priority job's first start less its submission.
    let mut prio = std::sync::Arc::unwrap_or_clone(
        job("prio", "lend", G5, 2, JobStatus::Running, 100, 130 * MIN).job,
    );
    prio.attempts = vec![attempt("p1", 132 * MIN, None)];
    assert_eq!(reclaim_latency(&prio), Some(2 * MIN));
    prio.attempts.clear();
    assert_eq!(reclaim_latency(&prio), None);

    // Lost GPU-h is the ledger's: 31 minutes of progress on 1 GPU, no checkpoint.
    let opts = ledger_options(GpuTable::default(), BTreeMap::new());
    let w = Window::new(0, 200 * MIN);
    let lost = lost_gpu_hours(&[hit.clone(), untouched], w, &opts).unwrap();
    assert!((lost - 31.0 / 60.0).abs() < 1e-9, "{lost}");
    // With a 10-minute checkpoint declared for the share, only 1 minute is lost.
    let mut cp = BTreeMap::new();
    cp.insert("borrow".to_string(), (10 * MIN) as u64);
    let lost = lost_gpu_hours(
        std::slice::from_ref(&hit),
        w,
        &ledger_options(GpuTable::default(), cp),
    )
    .unwrap();
    assert!((lost - 1.0 / 60.0).abs() < 1e-9, "{lost}");
    // The job's own interval (its checkpoint tag, as DescribeServiceJob shows it) counts too.
    let mut tagged = hit.clone();
    tagged.checkpoint_interval_ms = Some((10 * MIN) as u64);
    let lost = lost_gpu_hours(&[tagged], w, &opts).unwrap();
    assert!((lost - 1.0 / 60.0).abs() < 1e-9, "{lost}");
    // An instance type without a GPU count: unknown, not zero.
    let mut odd = hit;
    odd.instance_type = "ml.zz9.large".into();
    assert_eq!(lost_gpu_hours(&[odd], w, &opts), None);
}

fn result(
    latency: Option<i64>,
    restarts: &[Option<i64>],
    verdicts: &[CheckpointVerdict],
) -> RepetitionResult {
    RepetitionResult {
        spec: RepetitionSpec {
            index: 1,
            instance_type: G5.into(),
            length_ms: 10 * MIN,
            round: 1,
            baseline: false,
            borrower_jobs: 2,
            priority_count: 1,
        },
        priority_job_id: "p".into(),
        priority_submitted_at: 0,
        priority_started_at: latency,
        reclaim_latency_ms: latency,
        borrower_job_ids: vec![],
        preempted: restarts
            .iter()
            .zip(verdicts)
            .map(|(r, v)| PreemptedJob {
                job_id: "j".into(),
                name: "j".into(),
                requeued_at: 0,
                requeued_after_ms: 0,
                restarted_at: *r,
                requeue_to_restart_ms: *r,
                preempted_attempts: 1,
                attempt: 2,
                checkpoint: *v,
                checkpoint_evidence: String::new(),
                final_status: JobStatus::Running,
            })
            .collect(),
        lost_gpu_hours: Some(0.5),
        notes: vec![],
    }
}

#[test]
fn the_aggregate_takes_percentiles_over_the_repetitions() {
    use CheckpointVerdict::*;
    let rs: Vec<RepetitionResult> = (1..=20)
        .map(|i| result(Some(i * 1000), &[Some(i * 10), None], &[Resumed, Unknown]))
        .collect();
    let a = aggregate(&rs);
    assert_eq!(a.repetitions, 20);
    assert_eq!(a.reclaim_p50_ms, Some(10_000));
    assert_eq!(a.reclaim_p95_ms, Some(19_000));
    assert_eq!((a.preempted, a.restarted), (40, 20));
    assert_eq!(a.requeue_to_restart_p50_ms, Some(100));
    assert_eq!((a.resumed, a.not_resumed, a.unknown), (20, 0, 20));
    assert!((a.lost_gpu_hours.unwrap() - 10.0).abs() < 1e-9);
    // One repetition without a GPU count makes the total unknown.
    let mut rs = rs;
    rs[3].lost_gpu_hours = None;
    assert_eq!(aggregate(&rs).lost_gpu_hours, None);
    // Unmeasured latencies are counted apart.
    rs[0].reclaim_latency_ms = None;
    assert_eq!(aggregate(&rs).measured, 19);
}

/// Borrower jobs that start minutes apart: the priority job is due halfway through the first
/// one's length, before any has finished (the latest start's halfway came after the first
/// job's end).
#[test]
fn the_priority_job_is_due_before_the_first_borrower_job_ends() {
    let first = borrower_job("first", vec![attempt("a", 0, None)], vec![]);
    let late = borrower_job("late", vec![attempt("b", 8 * MIN, None)], vec![]);
    let due = priority_due(&[late, first], 10 * MIN).unwrap();
    assert_eq!(due, 5 * MIN);
    assert!(due < 10 * MIN, "the first job works until 10m");
    assert_eq!(priority_due(&[], 10 * MIN), None);
}

/// A borrower job the drill terminated, with a reason that mentions preemption, is not a
/// preempted job: only the service's preemption count says so.
#[test]
fn a_terminated_job_is_not_counted_as_preempted() {
    let mut stopped = attempt("a", 100 * MIN, Some(140 * MIN));
    stopped.status_reason = Some("preemption drill stopped: interrupted".into());
    let mut j = borrower_job("terminated", vec![stopped], vec![]);
    j.status = JobStatus::Failed;
    assert!(preempted_jobs(&[j], 130 * MIN).is_empty());
}
