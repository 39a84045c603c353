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
            .contains("1.0 GPU-h of the gain comes from 1 job(s) the baseline can never run"),
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
