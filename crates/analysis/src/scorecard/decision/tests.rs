use super::*;
use crate::scorecard::{AttemptHistory, Entitlement};
use quotatop_model::CapacityLimit;

const H: Millis = 3_600_000;
const G5: &str = "ml.g5.2xlarge"; // 1 GPU

fn attempt(s: Millis, stop: Millis, end: AttemptEnd) -> AttemptHistory {
    AttemptHistory {
        scheduled_at: Some(s),
        started_at: Some(s),
        stopped_at: Some(stop),
        end,
        preempting_from: None,
        restored: None,
        restored_at: None,
    }
}

fn job(id: &str, share: &str, attempts: Vec<AttemptHistory>, outcome: Outcome) -> JobHistory {
    JobHistory {
        job_id: id.into(),
        name: id.into(),
        share: share.into(),
        priority: 0,
        instance_type: G5.into(),
        instance_count: 2,
        submitted_at: 0,
        runnable_at: vec![0],
        attempts,
        outcome,
        checkpoint_interval_ms: None,
        restart_overhead_ms: Some(0),
        preemption_retries: None,
        training: None,
    }
}

/// A: share a, runs 0–2 h, succeeds. B: share b, preempted at 1 h and 2 h (2 GPU-h lost
/// each), then runs 3 h–5 h and succeeds. C: share b, submitted at 0, first given capacity
/// at 4 h, still running at the end (6 h).
fn input() -> ScorecardInput {
    let a = job(
        "A",
        "a",
        vec![attempt(0, 2 * H, AttemptEnd::Completed)],
        Outcome::Succeeded(2 * H),
    );
    let mut b = job(
        "B",
        "b",
        vec![
            attempt(0, H, AttemptEnd::Preempted),
            attempt(H, 2 * H, AttemptEnd::Preempted),
            attempt(3 * H, 5 * H, AttemptEnd::Completed),
        ],
        Outcome::Succeeded(5 * H),
    );
    b.runnable_at = vec![0, H, 2 * H];
    let mut c = job("C", "b", vec![], Outcome::Open);
    c.attempts = vec![AttemptHistory {
        stopped_at: None,
        end: AttemptEnd::Open,
        ..attempt(4 * H, 0, AttemptEnd::Open)
    }];
    ScorecardInput {
        queue: "q".into(),
        window: Window::new(0, 6 * H),
        capacity: vec![CapacityLimit::new(G5, 4)],
        entitlements: vec![
            Entitlement {
                share: "a".into(),
                limits: vec![CapacityLimit::new(G5, 2)],
            },
            Entitlement {
                share: "b".into(),
                limits: vec![CapacityLimit::new(G5, 2)],
            },
        ],
        jobs: vec![a, b, c],
    }
}

fn facts(important: [bool; 3], deadlines: [Option<Deadline>; 3]) -> Vec<JobFacts> {
    (0..3)
        .map(|i| JobFacts {
            important: important[i],
            band: PriorityBand::Low,
            deadline: deadlines[i],
            class: None,
        })
        .collect()
}

#[test]
fn deadlines_come_from_the_trace_then_the_share_then_star() {
    let mut rules = Rules::default();
    rules.deadlines.insert(
        "*".into(),
        DeadlineRule {
            deadline_factor: Some(2.0),
            max_wait_s: None,
        },
    );
    rules.deadlines.insert(
        "b".into(),
        DeadlineRule {
            deadline_factor: None,
            max_wait_s: Some(600),
        },
    );
    assert_eq!(
        deadline_of(&rules, "a", 1000, 5000, Some(7000)),
        Some(Deadline::FinishBy(8000))
    );
    assert_eq!(
        deadline_of(&rules, "a", 1000, 5000, None),
        Some(Deadline::FinishBy(11_000))
    );
    assert_eq!(
        deadline_of(&rules, "b", 1000, 5000, None),
        Some(Deadline::StartBy(601_000))
    );
    assert_eq!(deadline_of(&Rules::default(), "a", 0, 5000, None), None);
    let i = input();
    assert!(Deadline::FinishBy(5 * H).met(&i.jobs[1]));
    assert!(!Deadline::FinishBy(5 * H - 1).met(&i.jobs[1]));
    assert!(Deadline::StartBy(4 * H).met(&i.jobs[2]));
    assert!(!Deadline::StartBy(4 * H - 1).met(&i.jobs[2]));
}

#[test]
fn important_work_budgets_and_cost() {
    let i = input();
    let mut rules = Rules::default();
    rules.budgets.insert(
        "b".into(),
        Budget {
            max_preemptions_per_job: Some(1),
            max_lost_gpu_hours_per_day: Some(3.0),
        },
    );
    rules.prices.insert(G5.into(), 1.5);
    rules.currency = Some("USD".into());
    let f = facts(
        [false, true, true],
        [
            None,
            Some(Deadline::FinishBy(4 * H)),
            Some(Deadline::StartBy(H)),
        ],
    );
    let e = evaluate(
        &i,
        &f,
        Window::new(0, 3 * H),
        &ScorecardOptions::default(),
        &rules,
    );
    assert_eq!(e.important.jobs, 2);
    // Both important deadlines missed: B succeeded at 5 h, C started at 4 h.
    assert_eq!(
        e.important.deadlines,
        Deadlines {
            with_deadline: 2,
            missed: 2
        }
    );
    assert_eq!(
        e.all.deadlines,
        Deadlines {
            with_deadline: 2,
            missed: 2
        }
    );
    // By the 3 h horizon only A has finished: 2 h × 2 GPUs.
    assert_eq!(e.all.goodput.completed_jobs, 1);
    assert!((e.all.goodput.productive_gpu_hours - 4.0).abs() < 1e-9);
    assert_eq!(e.important.goodput.completed_jobs, 0);
    // Important waits: B 0, 0, 1 h (requeued at 2 h, back at 3 h); C 4 h.
    assert_eq!(e.important.wait.count, 4);
    assert_eq!(e.important.wait.p95_ms, Some(4 * H));
    assert_eq!(e.important.wait.mean_ms, Some(5 * H / 4));
    // B preempted twice (> 1); 4 GPU-h lost on day one (> 3).
    assert_eq!(
        e.budgets,
        vec![BudgetBreaches {
            share: "b".into(),
            by_class: false,
            jobs_over_preemptions: 1,
            days_over_lost: 1,
        }]
    );
    assert_eq!(e.budget_breaches(), 2);
    let c = e.cost.expect("priced");
    // Allocated 4 × 6 h × 1.5; productive A 2 h + B 2 h, × 2 instances × 1.5; wasted 2 h × 2 × 1.5.
    assert!((c.allocated - 36.0).abs() < 1e-9, "{c:?}");
    assert!((c.productive - 12.0).abs() < 1e-9, "{c:?}");
    assert!((c.wasted - 6.0).abs() < 1e-9, "{c:?}");
    assert!(c.unpriced.is_empty());
    // Per share: a holds 2 of the 4 instances' entitlement and A's 2 h; b the rest.
    let a = &c.by_share[0];
    assert_eq!(a.share, "a");
    assert!(
        (a.allocated - 18.0).abs() < 1e-9 && (a.productive - 6.0).abs() < 1e-9,
        "{a:?}"
    );
    let b = &c.by_share[1];
    assert!(
        (b.productive - 6.0).abs() < 1e-9 && (b.wasted - 6.0).abs() < 1e-9,
        "{b:?}"
    );
    // No prices, no cost.
    let e = evaluate(
        &i,
        &f,
        i.window,
        &ScorecardOptions::default(),
        &Rules::default(),
    );
    assert_eq!(e.cost, None);
    assert!(e.budgets.is_empty());
}

#[test]
fn old_decision_key_migrates_with_a_warning() {
    let mut d = DecisionRule {
        min_goodput_gain_pct: Some(5.0),
        ..Default::default()
    };
    let w = d.migrate().expect("warns");
    assert!(w.contains("min_completion_gain_pct = 5"), "{w}");
    assert_eq!(d.min_completion_gain_pct, 5.0);
    assert_eq!(d.min_goodput_gain_pct, None);
    assert_eq!(DecisionRule::default().migrate(), None);
}

#[test]
fn rules_reject_out_of_range_numbers() {
    let mut r = Rules::default();
    r.prices.insert(G5.into(), f64::NAN);
    assert!(r.validate().unwrap_err().to_string().contains("prices"));
    let mut r = Rules::default();
    r.deadlines.insert(
        "*".into(),
        DeadlineRule {
            deadline_factor: Some(-1.0),
            max_wait_s: None,
        },
    );
    assert!(r.validate().is_err());
    let mut r = Rules::default();
    r.deadlines.insert(
        "*".into(),
        DeadlineRule {
            deadline_factor: None,
            max_wait_s: Some(u64::MAX),
        },
    );
    assert!(r.validate().unwrap_err().to_string().contains("100 years"));
    assert!(Rules::default().validate().is_ok());
}
