use super::*;
use crate::fixture::{job, queue};
use quotatop_model::{PreemptionSummary, SharingConfig};

fn attempt(start: Millis, stop: Millis) -> PreemptedAttempt {
    PreemptedAttempt {
        resource_id: format!("r{start}"),
        started_at: Some(start),
        stopped_at: stop,
        status_reason: "Cross-share preemption triggered to reclaim borrowed capacity".into(),
    }
}

#[test]
fn facts_loss_and_loop_flags() {
    let mut q = queue(&[
        (
            "a",
            "ml.p4d.24xlarge",
            4,
            SharingConfig::lend_and_borrow(-1),
        ),
        ("b", "ml.p4d.24xlarge", 4, SharingConfig::lend()),
    ]);
    q.server_time = Some(10 * 3_600_000);
    let mut looper = job(
        "looper",
        "a",
        "ml.p4d.24xlarge",
        2,
        JobStatus::Runnable,
        1,
        0,
    );
    std::sync::Arc::make_mut(&mut looper.job).preemption = Some(PreemptionSummary {
        preempted_attempt_count: 7,
        recent_preempted_attempts: vec![attempt(0, 1_800_000), attempt(0, 3_600_000)],
    });
    let mut once = job("once", "a", "ml.p4d.24xlarge", 1, JobStatus::Running, 5, 0);
    std::sync::Arc::make_mut(&mut once.job).preemption_retries = Some(2);
    std::sync::Arc::make_mut(&mut once.job).preemption = Some(PreemptionSummary {
        preempted_attempt_count: 1,
        recent_preempted_attempts: vec![attempt(9 * 3_600_000, 9 * 3_600_000 + 1_800_000)],
    });
    let never = job("never", "b", "ml.p4d.24xlarge", 1, JobStatus::Running, 0, 0);
    q.jobs = vec![once, looper, never];
    let rule = LoopRule::default();
    let facts = preemptions(&q, &rule);
    assert_eq!(facts.len(), 2);
    let l = &facts[0];
    assert_eq!((l.name.as_str(), l.count), ("looper", 7));
    // (0.5 h + 1 h) x 2 instances = 3 instance-hours, x 8 GPUs = 24 GPU-hours.
    assert!((l.instance_hours_lost - 3.0).abs() < 1e-9);
    assert_eq!(l.gpu_hours_lost.map(|g| g.round()), Some(24.0));
    assert!(l.loss_is_partial && l.unbounded_retries && l.looping);
    let o = &facts[1];
    assert!(!o.looping && !o.unbounded_retries && !o.loss_is_partial);
    // AWS's definition: a cap of 2 with 1 preemption leaves 1 retry.
    assert_eq!(o.retries_left, Some(1));
    // Two preemptions within the last hour make a loop under the window rule.
    let strict = LoopRule {
        min_preemptions: 100,
        within: Some((1, 3_600_000)),
        ..LoopRule::default()
    };
    assert!(preemptions(&q, &strict)[1].looping);
    assert!(!preemptions(&q, &strict)[0].looping);
    // Interruption budgets: share a allows 5 preemptions per job, others ("*") 0.
    assert!(facts.iter().all(|f| f.over_budget.is_none()));
    let budgets = LoopRule {
        preemption_budgets: [("a".to_string(), 5), ("*".to_string(), 0)].into(),
        ..LoopRule::default()
    };
    let flagged = preemptions(&q, &budgets);
    assert_eq!(flagged[0].over_budget, Some(5), "7 preemptions > 5");
    assert_eq!(flagged[1].over_budget, None, "1 preemption, not over 5");
    assert_eq!(budgets.budget_of("elsewhere"), Some(0));
    let per_share = share_preemptions(&q, &rule);
    assert_eq!(per_share["a"].preemptions, 8);
    assert_eq!(per_share["a"].jobs, 2);
    assert_eq!(per_share["a"].looping, 1);
    assert_eq!(per_share["b"], SharePreemptions::default());
}

fn recorded(id: &str, attempts: Vec<PreemptedAttempt>) -> RecordedPreemptions {
    RecordedPreemptions {
        job_id: id.into(),
        name: id.into(),
        share: "a".into(),
        status: JobStatus::Succeeded,
        instance_type: "ml.p4d.24xlarge".into(),
        instance_count: 1,
        priority: 1,
        attempts,
        from_events: 0,
    }
}

#[test]
fn history_widens_the_api_window_and_adds_jobs_the_api_no_longer_lists() {
    let mut q = queue(&[(
        "a",
        "ml.p4d.24xlarge",
        4,
        SharingConfig::lend_and_borrow(-1),
    )]);
    q.server_time = Some(10 * 3_600_000);
    let mut live = job("live", "a", "ml.p4d.24xlarge", 1, JobStatus::Runnable, 1, 0);
    std::sync::Arc::make_mut(&mut live.job).preemption_retries = Some(5);
    // The API shows 2 preemptions and only the newest attempt.
    std::sync::Arc::make_mut(&mut live.job).preemption = Some(PreemptionSummary {
        preempted_attempt_count: 2,
        recent_preempted_attempts: vec![attempt(8 * 3_600_000, 9 * 3_600_000)],
    });
    q.jobs = vec![live];
    let rule = LoopRule {
        min_preemptions: 3,
        within: None,
        ..LoopRule::default()
    };
    let api = preemptions(&q, &rule);
    assert!(api[0].loss_is_partial && !api[0].looping);
    // The journal saw three attempts of it: the API's newest (same resource id), the one
    // the API dropped, and one more the count had not reached yet.
    let hist = vec![
        recorded(
            "id-live",
            vec![
                attempt(8 * 3_600_000, 9 * 3_600_000),
                attempt(3_600_000, 2 * 3_600_000),
                attempt(0, 1_800_000),
            ],
        ),
        recorded("gone", vec![attempt(0, 3_600_000)]),
        // Stopped after `now`: a past view must not see it.
        recorded("future", vec![attempt(11 * 3_600_000, 12 * 3_600_000)]),
    ];
    let merged = with_history(&api, &hist, &rule, q.server_time);
    assert_eq!(merged.len(), 2, "{merged:?}");
    let l = &merged[0];
    assert_eq!((l.job_id.as_str(), l.count), ("id-live", 3));
    assert_eq!(l.recent.len(), 3);
    assert!(
        l.recent
            .windows(2)
            .all(|w| w[0].stopped_at >= w[1].stopped_at)
    );
    // 1 h + 1 h + 0.5 h on one instance; no longer partial; three reach the loop rule.
    assert!((l.instance_hours_lost - 2.5).abs() < 1e-9);
    assert!(!l.loss_is_partial && l.looping && !l.journal_only);
    // Retry facts stay the API's.
    assert_eq!(l.retries_left, api[0].retries_left);
    let g = &merged[1];
    assert_eq!((g.job_id.as_str(), g.count), ("gone", 1));
    assert!(g.journal_only && !g.unbounded_retries && g.retries_left.is_none());
    assert_eq!(g.gpu_hours_lost.map(|x| x.round()), Some(8.0));
    // Without history nothing changes.
    assert_eq!(with_history(&api, &[], &rule, q.server_time), api);
}

/// An attempt whose start was never seen counts as unknown: left out of the loss (which
/// says it is a lower bound), never as zero; the API's window without a start takes the one
/// the journal kept.
#[test]
fn attempts_with_an_unknown_start_are_counted_as_unknown() {
    let h = 3_600_000;
    let unknown = |id: &str, stop: Millis| PreemptedAttempt {
        resource_id: id.into(),
        started_at: None,
        ..attempt(0, stop)
    };
    let mut q = queue(&[(
        "a",
        "ml.p4d.24xlarge",
        4,
        SharingConfig::lend_and_borrow(-1),
    )]);
    q.server_time = Some(10 * h);
    let mut live = job("live", "a", "ml.p4d.24xlarge", 2, JobStatus::Runnable, 1, 0);
    std::sync::Arc::make_mut(&mut live.job).preemption = Some(PreemptionSummary {
        preempted_attempt_count: 2,
        recent_preempted_attempts: vec![unknown("new", 9 * h), attempt(h, 2 * h)],
    });
    q.jobs = vec![live];
    let rule = LoopRule::default();
    let api = preemptions(&q, &rule);
    // 1 h x 2 instances; the other attempt is unknown, not 0 h.
    assert!((api[0].instance_hours_lost - 2.0).abs() < 1e-9);
    assert_eq!(api[0].starts_unknown, 1);
    // The journal saw the new attempt start at 8 h, and one more whose start it never saw.
    let mut known = attempt(8 * h, 9 * h);
    known.resource_id = "new".into();
    let hist = vec![recorded("id-live", vec![known, unknown("old", h / 2)])];
    let merged = with_history(&api, &hist, &rule, q.server_time);
    let l = &merged[0];
    assert_eq!(l.recent.len(), 3);
    assert_eq!(
        l.recent[0].started_at,
        Some(8 * h),
        "the journal's start fills the API's"
    );
    assert!((l.instance_hours_lost - 4.0).abs() < 1e-9, "{l:?}");
    assert_eq!(l.starts_unknown, 1);
}

/// The attempts a job lists that ended by preemption count as kept: a loss is partial only
/// when the count is above every attempt known, and a failed attempt is not a preemption.
#[test]
fn listed_attempts_widen_the_window() {
    let mut q = queue(&[("a", "ml.p4d.24xlarge", 4, SharingConfig::lend())]);
    q.server_time = Some(10 * 3_600_000);
    let mut j = job("j", "a", "ml.p4d.24xlarge", 1, JobStatus::Running, 0, 0);
    let listed = |start: Millis, stop: Option<Millis>, reason: &str| quotatop_model::Attempt {
        resource_id: format!("r{start}"),
        started_at: Some(start),
        stopped_at: stop,
        status_reason: Some(reason.to_string()),
    };
    let cross = "Cross-share preemption triggered to reclaim borrowed capacity";
    let h = 3_600_000;
    let sj = std::sync::Arc::make_mut(&mut j.job);
    sj.attempts = vec![
        listed(0, Some(h), cross),
        listed(2 * h, Some(3 * h), "AlgorithmError: Training job failed"),
        listed(4 * h, Some(6 * h), cross),
        listed(7 * h, Some(8 * h), cross),
        listed(9 * h, None, ""),
    ];
    // The summary's window holds only the newest; the job lists all three.
    sj.preemption = Some(PreemptionSummary {
        preempted_attempt_count: 3,
        recent_preempted_attempts: vec![attempt(7 * h, 8 * h)],
    });
    q.jobs = vec![j];
    let facts = preemptions(&q, &LoopRule::default());
    let f = &facts[0];
    assert_eq!(f.count, 3);
    assert_eq!(
        f.recent.len(),
        3,
        "the failed and the running attempt are not preemptions"
    );
    assert!(!f.loss_is_partial, "every preempted attempt is listed");
    // 1 h + 2 h + 1 h on one instance.
    assert!((f.instance_hours_lost - 4.0).abs() < 1e-9);
    let newest_first: Vec<Millis> = f.recent.iter().map(|a| a.stopped_at).collect();
    assert_eq!(newest_first, vec![8 * h, 6 * h, h]);

    // One more preemption than any list holds: partial again.
    let sj = std::sync::Arc::make_mut(&mut q.jobs[0].job);
    if let Some(p) = sj.preemption.as_mut() {
        p.preempted_attempt_count = 4;
    }
    assert!(preemptions(&q, &LoopRule::default())[0].loss_is_partial);
}
