use super::*;

const H: Millis = 3_600_000;

fn schedule(done: &[Option<f64>], window_end_h: f64) -> Schedule {
    Schedule {
        work_gpu_hours: vec![1.0; done.len()],
        completed_at: done
            .iter()
            .map(|t| t.map(|h| (h * H as f64) as Millis))
            .collect(),
        never_run: Vec::new(),
        fingerprint: done.len() as u64,
        window: Window::new(0, (window_end_h * H as f64) as Millis),
        last_submission: (1.2 * H as f64) as Millis,
        capacity_gpus: 2.0,
    }
}

fn scenario<'a>(name: &'a str, s: &'a Schedule, e: &'a Evaluation) -> Scenario<'a> {
    Scenario {
        name,
        schedule: s,
        evaluation: e,
        productive_gpu_hours: 3.0,
        waste_gpu_hours: 0.0,
    }
}

/// Worked example 2, trace G, read from the schedules alone.
#[test]
fn trace_g_from_schedules() {
    let (iso, mut lend) = (
        schedule(&[Some(1.0), Some(2.0), Some(2.2)], 2.2),
        schedule(&[Some(1.0), Some(1.0), Some(2.2)], 2.2),
    );
    lend.fingerprint += 1;
    let e = Evaluation::default();
    let all = [
        scenario("isolated", &iso, &e),
        scenario("lending", &lend, &e),
    ];
    let frame = CurveFrame::of(&all);
    let v = verdict(&all[0], &all[1], &frame, &DecisionRule::default());
    assert!((v.base.mean_completion_h.unwrap() - 5.2 / 3.0).abs() < 1e-12);
    assert!((v.this.mean_completion_h.unwrap() - 1.4).abs() < 1e-12);
    assert_eq!(v.base.goodput_by_submission_end_gpu_hours, 1.0);
    assert_eq!(v.this.goodput_by_submission_end_gpu_hours, 2.0);
    assert_eq!(v.max_behind_pct, 0.0);
    // The baseline is 1 GPU-h behind lending on [1, 2).
    assert_eq!(max_behind_gpu_hours(&lend, &iso, &frame), 1.0);
    assert_eq!(v.kind, VerdictKind::Approve, "{v:?}");
    assert!(
        v.summary
            .contains("interruption not judged: no budget defined")
    );
    let w = window_figures(&all[0], common_window(&all));
    assert!((w.allocated_gpu_hours - 4.4).abs() < 1e-12);
    assert_eq!(format!("{:.1}%", w.utilisation.unwrap() * 100.0), "68.2%");
}

/// Falling behind by more than the limit rejects, even when the mean is sooner; identical
/// schedules say NO DIFFERENCE.
#[test]
fn behind_and_no_difference() {
    let base = schedule(&[Some(1.0), Some(3.0)], 3.0);
    let mut late_then_early = schedule(&[Some(2.0), Some(1.5)], 3.0);
    late_then_early.fingerprint += 1;
    let e = Evaluation::default();
    let all = [
        scenario("a", &base, &e),
        scenario("b", &late_then_early, &e),
    ];
    let frame = CurveFrame::of(&all);
    let v = verdict(&all[0], &all[1], &frame, &DecisionRule::default());
    // Mean 2.0 → 1.75, but on [1, 1.5) b has nothing done against a's 1 of 2 GPU-h: 50% behind.
    assert_eq!(v.max_behind_pct, 50.0);
    assert_eq!(v.kind, VerdictKind::Reject);
    assert!(v.summary.contains("too far behind"), "{}", v.summary);
    let same = verdict(&all[0], &all[0], &frame, &DecisionRule::default());
    assert_eq!(same.kind, VerdictKind::NoDifference);
}

/// A job the baseline can never run, completed by the scenario, is named in an APPROVE.
#[test]
fn gain_from_jobs_the_baseline_never_runs() {
    let mut base = schedule(&[Some(1.0), None], 2.0);
    base.never_run = vec![1];
    let mut s = schedule(&[Some(1.0), Some(1.5)], 2.0);
    s.fingerprint += 1;
    let e = Evaluation::default();
    let all = [scenario("a", &base, &e), scenario("b", &s, &e)];
    let v = verdict(
        &all[0],
        &all[1],
        &CurveFrame::of(&all),
        &DecisionRule::default(),
    );
    assert_eq!(v.kind, VerdictKind::Approve, "{v:?}");
    assert!(
        v.summary
            .contains("completed more work: b completes 1 job, 1.0 GPU-h, that a never runs; mean completion time of the 1 job every scenario completes 1.00 h → 1.00 h"),
        "{}",
        v.summary
    );
}

/// With a budget defined, more breaches than the baseline reject.
#[test]
fn budget_clause_counts() {
    let base = schedule(&[Some(2.0)], 2.0);
    let mut s = schedule(&[Some(1.0)], 2.0);
    s.fingerprint += 1;
    let e0 = Evaluation {
        budgets_defined: true,
        ..Default::default()
    };
    let mut e = e0.clone();
    e.budgets.push(super::super::BudgetBreaches {
        share: "a".into(),
        by_class: false,
        jobs_over_preemptions: 2,
        days_over_lost: 0,
    });
    let all = [scenario("a", &base, &e0), scenario("b", &s, &e)];
    let v = verdict(
        &all[0],
        &all[1],
        &CurveFrame::of(&all),
        &DecisionRule::default(),
    );
    assert_eq!(v.kind, VerdictKind::Reject);
    assert_eq!(v.budget_breaches_delta, Some(2));
    assert!(
        v.summary.contains("interruption-budget breaches 0 → 2"),
        "{}",
        v.summary
    );
}

/// Issue 44, item 3: a job only the scenario completes no longer moves the mean by a censored
/// millisecond; the mean compares the jobs every scenario completes.
#[test]
fn a_job_only_one_scenario_completes_is_counted_apart() {
    let mut base = schedule(&[Some(1.0), Some(1.0), None], 2.0);
    base.never_run = vec![2];
    base.work_gpu_hours[2] = 2.0;
    let mut s = schedule(&[Some(1.0), Some(1.0), Some(2.0)], 2.0);
    s.work_gpu_hours[2] = 2.0;
    s.fingerprint += 1;
    let e = Evaluation::default();
    let all = [scenario("isolated", &base, &e), scenario("lending", &s, &e)];
    let frame = CurveFrame::of(&all);
    assert_eq!(frame.compared, vec![true, true, false]);
    let v = verdict(&all[0], &all[1], &frame, &DecisionRule::default());
    assert_eq!(v.mean_completion_change_h, Some(0.0));
    assert_eq!(v.completed_only_here.jobs, 1);
    assert_eq!(v.completed_only_here.work_gpu_hours, 2.0);
    assert!(v.completed_only_here.never_run_by_other);
    assert_eq!(v.base.never_completed, 1);
    assert_eq!(v.kind, VerdictKind::Approve, "{}", v.summary);
    assert!(
        v.summary
            .contains("lending completes 1 job, 2.0 GPU-h, that isolated never runs"),
        "{}",
        v.summary
    );
    // The other way round: the scenario completes less work: REJECT.
    let back = verdict(&all[1], &all[0], &frame, &DecisionRule::default());
    assert_eq!(back.kind, VerdictKind::Reject, "{}", back.summary);
    assert!(
        back.summary.starts_with("fails: completed less work"),
        "{}",
        back.summary
    );
}

/// A change below `min_material_change_s` is NO MATERIAL DIFFERENCE, unless another clause
/// fails; at the threshold it is material.
#[test]
fn materiality_threshold() {
    let base = schedule(&[Some(1.0), Some(2.0)], 2.0);
    let mut s = base.clone();
    s.fingerprint += 1;
    // 59 s sooner for one of two equal jobs: the mean falls by 29.5 s.
    s.completed_at[1] = Some(2 * H - 59_000);
    let e = Evaluation::default();
    let all = [scenario("a", &base, &e), scenario("b", &s, &e)];
    let frame = CurveFrame::of(&all);
    let rule = DecisionRule::default();
    let v = verdict(&all[0], &all[1], &frame, &rule);
    assert!(!v.material);
    assert_eq!(v.kind, VerdictKind::NoMaterialDifference, "{}", v.summary);
    assert!(
        v.summary
            .contains("below the materiality threshold of 60 s"),
        "{}",
        v.summary
    );
    let at = DecisionRule {
        min_material_change_s: 29.0,
        ..DecisionRule::default()
    };
    let v = verdict(&all[0], &all[1], &frame, &at);
    assert!(v.material);
    assert_eq!(v.kind, VerdictKind::Approve, "{}", v.summary);
    assert!(v.summary.contains("per hour gained"), "{}", v.summary);
    // Immaterial, but with more waste: waste for nothing, REJECT (worked example 2, trace L).
    let mut wasteful = [scenario("a", &base, &e), scenario("b", &s, &e)];
    wasteful[1].waste_gpu_hours = 0.5;
    let v = verdict(&wasteful[0], &wasteful[1], &frame, &rule);
    assert_eq!(v.kind, VerdictKind::Reject, "{}", v.summary);
    assert!(
        v.summary.starts_with("fails: completed work no sooner"),
        "{}",
        v.summary
    );
    // Immaterial, but a clause fails: REJECT, not NO MATERIAL DIFFERENCE.
    let e0 = Evaluation {
        budgets_defined: true,
        ..Default::default()
    };
    let mut e1 = e0.clone();
    e1.budgets.push(super::super::BudgetBreaches {
        share: "a".into(),
        by_class: false,
        jobs_over_preemptions: 1,
        days_over_lost: 0,
    });
    let all = [scenario("a", &base, &e0), scenario("b", &s, &e1)];
    let v = verdict(&all[0], &all[1], &frame, &rule);
    assert_eq!(v.kind, VerdictKind::Reject, "{}", v.summary);
}

/// An APPROVE states its waste per hour gained, and its cost where prices are given.
#[test]
fn an_approve_states_what_it_costs() {
    let base = schedule(&[Some(1.0), Some(3.0)], 3.0);
    let mut s = schedule(&[Some(1.0), Some(2.0)], 3.0);
    s.fingerprint += 1;
    let price = |wasted: f64| Evaluation {
        cost: Some(super::super::Cost {
            currency: "USD".into(),
            wasted,
            ..Default::default()
        }),
        ..Default::default()
    };
    let (e0, e1) = (price(0.0), price(3.0));
    let mut all = [scenario("a", &base, &e0), scenario("b", &s, &e1)];
    all[1].waste_gpu_hours = 2.0;
    let frame = CurveFrame::of(&all);
    let v = verdict(&all[0], &all[1], &frame, &DecisionRule::default());
    assert_eq!(v.kind, VerdictKind::Approve, "{}", v.summary);
    // Mean 2.0 h → 1.5 h: 0.5 h sooner for 2 GPU-h (3 USD) of waste.
    assert!(
        v.summary.contains(
            "costs waste +2.0 GPU-h (+3 USD) for 0.50 h sooner: 4.0 GPU-h (6 USD) per hour gained"
        ),
        "{}",
        v.summary
    );
}

/// Issue 44, item 6: `max_behind_pct` is compared without a tolerance, and equal curves are
/// exactly 0 behind even where their GPU-hours do not add up exactly in floating point.
#[test]
fn behind_is_exact_and_the_limit_has_no_tolerance() {
    let mut base = schedule(&[Some(1.0), Some(1.0), Some(2.0)], 2.0);
    base.work_gpu_hours = vec![0.1, 0.2, 0.3];
    let mut s = base.clone();
    s.fingerprint += 1;
    s.completed_at = vec![Some(H), Some(H), Some(2 * H)];
    let e = Evaluation::default();
    let all = [scenario("a", &base, &e), scenario("b", &s, &e)];
    let frame = CurveFrame::of(&all);
    assert_eq!(max_behind_gpu_hours(&base, &s, &frame), 0.0);
    // Judged with a limit of 0: the curves are equal, so the clause holds (summed in floating
    // point, 0.1 + 0.2 − 0.1 − 0.2 is 2.8e-17, which only a tolerance let through).
    let strict = DecisionRule {
        max_behind_pct: 0.0,
        min_material_change_s: 0.0,
        ..DecisionRule::default()
    };
    let v = verdict(&all[0], &all[1], &frame, &strict);
    assert_eq!(v.max_behind_pct, 0.0);
    assert!(!v.summary.contains("too far behind"), "{}", v.summary);
}

/// "By the last submission" counts completions in [first submission, last submission): one at
/// the last submission itself is not counted, as the horizon does not count one at its end.
#[test]
fn by_the_last_submission_is_half_open() {
    let mut s = schedule(&[Some(1.2), Some(1.0)], 2.0);
    s.last_submission = (1.2 * H as f64) as Millis;
    let e = Evaluation::default();
    let all = [scenario("a", &s, &e)];
    let f = completion_figures(&s, &CurveFrame::of(&all));
    assert_eq!(f.completed_by_submission_end, 1);
    assert_eq!(f.goodput_by_submission_end_gpu_hours, 1.0);
}
