//! Hand-computed scorecards: every figure below is worked out in the comments.

use super::*;
use quotatop_model::CapacityLimit;

const H: Millis = 3_600_000;
const M: Millis = 60_000;
const G5: &str = "ml.g5.12xlarge"; // 4 GPUs

fn attempt(s: Millis, st: Option<Millis>, stop: Option<Millis>, end: AttemptEnd) -> AttemptHistory {
    AttemptHistory {
        scheduled_at: Some(s),
        started_at: st,
        stopped_at: stop,
        end,
        preempting_from: None,
        restored: None,
        restored_at: None,
    }
}

fn job(id: &str, share: &str, priority: u32, count: u32) -> JobHistory {
    JobHistory {
        job_id: id.into(),
        name: id.into(),
        share: share.into(),
        priority,
        instance_type: G5.into(),
        instance_count: count,
        submitted_at: 0,
        runnable_at: vec![0],
        attempts: vec![],
        outcome: Outcome::Open,
        checkpoint_interval_ms: None,
        restart_overhead_ms: None,
        preemption_retries: None,
        training: None,
    }
}

/// A: share a, low, 1 instance: waits 1 h, runs 1 h–3 h, succeeds.
/// B: share b, critical, 2 instances, checkpoint 20 min: waits 0.5 h, runs 0.5 h–1.5 h and is
///    preempted, requeued at 1.5 h, scheduled 2 h, running 2.25 h, succeeds 3.5 h.
/// C: share b, low: RUNNABLE from 1 h, never dispatched.
fn input() -> ScorecardInput {
    let mut a = job("A", "a", 10, 1);
    a.attempts = vec![attempt(H, Some(H), Some(3 * H), AttemptEnd::Completed)];
    a.outcome = Outcome::Succeeded(3 * H);
    let mut b = job("B", "b", 6000, 2);
    b.runnable_at = vec![0, 3 * H / 2];
    b.checkpoint_interval_ms = Some((20 * M) as u64);
    b.attempts = vec![
        attempt(H / 2, Some(H / 2), Some(3 * H / 2), AttemptEnd::Preempted),
        attempt(
            2 * H,
            Some(9 * H / 4),
            Some(7 * H / 2),
            AttemptEnd::Completed,
        ),
    ];
    b.outcome = Outcome::Succeeded(7 * H / 2);
    let mut c = job("C", "b", 50, 1);
    c.runnable_at = vec![H];
    ScorecardInput {
        queue: "q".into(),
        window: Window::new(0, 4 * H),
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

fn opts() -> ScorecardOptions {
    ScorecardOptions {
        restart_cost_ms: (6 * M) as u64,
        ..Default::default()
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn utilisation_counts_only_productive_work_of_succeeded_jobs() {
    let card = scorecard(&input(), &opts());
    let u = &card.queue_row.utilisation;
    // A: 2 h × 1 × 4 = 8. B (2 × 4 GPUs): its preempted hour was all checkpointed (3 × 20 min)
    // = 8; its re-run held 2 h–3.5 h: 0.25 h before RUNNING and the 6 min restart cost are
    // overhead (0.35 h × 8 = 2.8), the remaining 1.15 h is progress (9.2).
    assert!(close(u.productive_gpu_hours, 25.2), "{u:?}");
    assert!(close(card.queue_row.ledger.overhead_gpu_hours, 2.8));
    // 4 instances × 4 GPUs × 4 h.
    assert!(close(u.allocated_gpu_hours, 64.0));
    assert!(close(u.ratio.unwrap_or(0.0), 25.2 / 64.0));
    let b = card
        .shares
        .iter()
        .find(|r| r.scope == Scope::Share("b".into()))
        .unwrap();
    assert!(close(b.utilisation.allocated_gpu_hours, 32.0));
    assert!(close(b.utilisation.ratio.unwrap_or(0.0), 17.2 / 32.0));
}

#[test]
fn waits_use_nearest_rank_and_count_open_episodes_apart() {
    let card = scorecard(&input(), &opts());
    let w = &card.queue_row.wait;
    // Finished waits: 1 h (A), 0.5 h and 0.5 h (B).
    assert_eq!(w.count, 3);
    assert_eq!(w.p50_ms, Some(H / 2));
    assert_eq!(w.p95_ms, Some(H));
    assert_eq!(w.still_waiting, 1);
    assert_eq!(w.oldest_waiting_ms, Some(3 * H));
    let critical = card
        .bands
        .iter()
        .find(|r| r.scope == Scope::Band(PriorityBand::Critical))
        .unwrap();
    assert_eq!(critical.wait.count, 2);
    assert_eq!(critical.wait.p95_ms, Some(H / 2));
    assert_eq!(card.bands.len(), 2, "only bands with jobs");
}

#[test]
fn waste_is_since_checkpoint_plus_overhead() {
    let card = scorecard(&input(), &opts());
    let w = &card.queue_row.waste;
    assert_eq!(w.interrupted_attempts, 1);
    assert_eq!(w.with_checkpoint, 1);
    // Ran 60 min with a 20 min checkpoint: nothing lost since the last checkpoint.
    assert!(close(w.lost_gpu_hours, 0.0));
    // The re-run's 15 min before RUNNING + the 6 min restart cost, × 2 × 4 GPUs = 2.8.
    assert!(close(w.overhead_gpu_hours, 2.8), "{w:?}");
    // Without a known checkpoint the whole hour is lost: 1 h × 8 GPUs.
    let mut i = input();
    i.jobs[1].checkpoint_interval_ms = None;
    let w = scorecard(&i, &opts()).queue_row.waste;
    assert!(close(w.lost_gpu_hours, 8.0));
    // A 25 min checkpoint leaves 10 min lost: 10/60 × 8.
    i.jobs[1].checkpoint_interval_ms = Some((25 * M) as u64);
    let w = scorecard(&i, &opts()).queue_row.waste;
    assert!(close(w.lost_gpu_hours, 8.0 / 6.0));
}

#[test]
fn recovery_within_the_window_only() {
    let card = scorecard(&input(), &opts());
    let r = &card.queue_row.recovery;
    assert_eq!(
        (r.interrupted_jobs, r.recovered, r.not_recovered),
        (1, 1, 0)
    );
    assert_eq!(r.ratio, Some(1.0));
    let short = ScorecardOptions {
        recovery_window_ms: H,
        ..opts()
    };
    // Succeeded 2 h after the interruption: late.
    let r = scorecard(&input(), &short).queue_row.recovery;
    assert_eq!((r.recovered, r.not_recovered, r.ratio), (0, 1, Some(0.0)));
    // Still open, window not over: pending.
    let mut i = input();
    i.jobs[1].outcome = Outcome::Open;
    i.jobs[1].attempts[1].stopped_at = None;
    i.jobs[1].attempts[1].end = AttemptEnd::Open;
    let r = scorecard(&i, &opts()).queue_row.recovery;
    assert_eq!((r.pending, r.ratio), (1, None));
}

#[test]
fn fairness_against_entitlement() {
    let card = scorecard(&input(), &opts());
    let a = &card.fairness[0];
    let b = &card.fairness[1];
    // Held: a 8, b 20 (C never ran); entitlement 32 each.
    assert!(close(a.used_gpu_hours, 8.0) && close(b.used_gpu_hours, 20.0));
    assert!(close(a.entitled_fraction, 0.5));
    assert!(close(a.drift_pp, 100.0 * (8.0 / 28.0 - 0.5)));
    assert!(close(b.drift_pp, -a.drift_pp));
    assert_eq!(a.delivered_ratio, Some(0.25));
    // a's P50 wait is 1 h, the queue's 0.5 h.
    assert_eq!(a.wait_ratio, Some(2.0));
}

#[test]
fn window_clips_gpu_hours_and_series_add_up() {
    let i = input();
    let early = scorecard_in(&i, Window::new(0, 2 * H), &opts());
    // Nothing succeeded before 2 h.
    assert!(close(early.queue_row.utilisation.productive_gpu_hours, 0.0));
    let series = share_series(&i, &opts(), H);
    let (name, points) = &series[1];
    assert_eq!(name, "b");
    assert_eq!(points.len(), 4);
    let held: f64 = points.iter().map(|p| p.held_gpu_hours).sum();
    assert!(close(held, 20.0));
    assert_eq!(points[1].interrupted_attempts, 1);
}

#[test]
fn unknown_gpu_types_are_noted() {
    let mut i = input();
    i.jobs[0].instance_type = "ml.zz9.huge".into();
    let card = scorecard(&i, &opts());
    assert_eq!(card.notes.len(), 1);
    assert!(card.notes[0].contains("ml.zz9.huge"));
}

#[test]
fn audit_view_groups_exceptions() {
    let ch = |at, job: &str, op: Option<&str>, old, new, cr: Option<&str>| PriorityChange {
        at,
        job_id: job.into(),
        share: "prod".into(),
        operator: op.map(str::to_string),
        old,
        new,
        change_record: cr.map(str::to_string),
    };
    let changes = vec![
        ch(10, "j1", Some("ana"), 1, 50, None),
        ch(20, "j1", Some("ana"), 50, 900, Some("CR-1")),
        ch(30, "j2", Some("bo"), 9, 1, None),
        ch(40, "j1", None, 900, 5000, None),
        ch(9_999, "j3", Some("bo"), 1, 2, None),
    ];
    let v = audit_view(&changes, Window::new(0, 100), 2);
    assert_eq!(v.per_operator.len(), 3);
    let ana = &v.per_operator[1];
    assert_eq!(
        (
            ana.operator.as_str(),
            ana.changes,
            ana.raises,
            ana.without_change_record
        ),
        ("ana", 2, 2, 1)
    );
    assert_eq!(v.raised_repeatedly.len(), 1);
    let j1 = &v.raised_repeatedly[0];
    assert_eq!((j1.raises, j1.from, j1.to), (3, 1, 5000));
}

/// The ledger's worked example (docs/architecture.md, "The GPU-time ledger"), reproduced exactly (hours as milliseconds).
mod metrics_md {
    use super::*;

    const P4D: &str = "ml.p4d.24xlarge"; // 8 GPUs
    const G5_1: &str = "ml.g5.2xlarge"; // 1 GPU

    fn h(x: f64) -> Millis {
        (x * H as f64).round() as Millis
    }

    fn worked() -> ScorecardInput {
        let mut a = job("A", "s", 10, 1);
        a.instance_type = P4D.into();
        a.checkpoint_interval_ms = Some(H as u64);
        a.restart_overhead_ms = Some(h(0.1) as u64);
        a.runnable_at = vec![0, h(2.55)];
        a.attempts = vec![
            attempt(0, Some(h(0.05)), Some(h(2.55)), AttemptEnd::Preempted),
            attempt(h(3.0), Some(h(3.05)), Some(h(4.15)), AttemptEnd::Completed),
        ];
        a.outcome = Outcome::Succeeded(h(4.15));
        let mut b = job("B", "s", 10, 2);
        b.instance_type = G5_1.into();
        b.restart_overhead_ms = Some(h(0.1) as u64);
        b.runnable_at = vec![0, h(0.6)];
        b.attempts = vec![
            attempt(0, Some(0), Some(h(0.6)), AttemptEnd::Preempted),
            attempt(h(1.0), Some(h(1.0)), Some(h(2.1)), AttemptEnd::Completed),
        ];
        b.outcome = Outcome::Succeeded(h(2.1));
        let mut c = job("C", "s", 10, 1);
        c.instance_type = G5_1.into();
        c.runnable_at = vec![h(5.0)];
        c.attempts = vec![attempt(
            h(5.0),
            Some(h(5.0)),
            Some(h(5.5)),
            AttemptEnd::Failed,
        )];
        c.outcome = Outcome::Failed(h(5.5));
        ScorecardInput {
            queue: "q".into(),
            window: Window::new(0, h(5.5)),
            capacity: vec![CapacityLimit::new(P4D, 8), CapacityLimit::new(G5_1, 2)],
            entitlements: vec![],
            jobs: vec![a, b, c],
        }
    }

    fn near(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn per_job_and_total_ledger() {
        let i = worked();
        let o = ScorecardOptions::default();
        let a = job_ledger(&i.jobs[0], i.window, &o);
        assert_eq!(
            (
                a.productive,
                a.lost,
                a.overhead,
                a.held_not_running,
                a.failed
            ),
            (h(3.0), h(0.5), h(0.15), h(0.05), 0)
        );
        let b = job_ledger(&i.jobs[1], i.window, &o);
        assert_eq!((b.productive, b.lost, b.overhead), (h(1.0), h(0.6), h(0.1)));
        let c = job_ledger(&i.jobs[2], i.window, &o);
        assert_eq!((c.failed, c.held()), (h(0.5), h(0.5)));
        let card = scorecard(&i, &o);
        let l = card.queue_row.ledger;
        assert!(near(l.held_gpu_hours(), 33.5), "{l:?}");
        assert!(near(l.productive_gpu_hours, 26.0), "{l:?}");
        assert!(near(l.lost_gpu_hours, 5.2), "{l:?}");
        assert!(near(l.overhead_gpu_hours, 1.4), "{l:?}");
        assert!(near(l.held_not_running_gpu_hours, 0.4), "{l:?}");
        assert!(near(l.failed_gpu_hours, 0.5), "{l:?}");
        assert!(near(card.queue_row.waste.total_gpu_hours, 6.6));
        let u = &card.queue_row.utilisation;
        assert!(near(u.allocated_gpu_hours, 363.0), "{u:?}");
        assert!(near(u.ratio.unwrap_or(0.0), 26.0 / 363.0));
        assert_eq!(format!("{:.2}%", 100.0 * u.ratio.unwrap_or(0.0)), "7.16%");
    }

    #[test]
    fn goodput_by_horizon() {
        let i = worked();
        let o = ScorecardOptions::default();
        let by = |x: f64| {
            scorecard_in(&i, Window::new(0, h(x)), &o)
                .queue_row
                .ledger
                .productive_gpu_hours
        };
        assert!(near(by(4.0), 2.0));
        assert!(near(by(5.0), 26.0));
    }

    #[test]
    fn configured_restart_cost_applies_when_the_job_has_none() {
        let mut i = worked();
        i.jobs[1].restart_overhead_ms = None;
        let o = ScorecardOptions {
            restart_cost_ms: h(0.1) as u64,
            ..Default::default()
        };
        let b = job_ledger(&i.jobs[1], i.window, &o);
        assert_eq!((b.productive, b.overhead), (h(1.0), h(0.1)));
    }

    #[test]
    fn any_window_splits_the_held_time_exactly() {
        let i = worked();
        let o = ScorecardOptions::default();
        for (s, e) in [(0.0, 1.0), (1.0, 3.02), (2.5, 4.1), (3.0, 9.0)] {
            let w = Window::new(h(s), h(e));
            for j in &i.jobs {
                let held: Millis = j
                    .attempts
                    .iter()
                    .map(|a| {
                        w.overlap_ms(a.held_from().unwrap_or(0), a.stopped_at.unwrap_or(w.end))
                    })
                    .sum();
                assert_eq!(
                    job_ledger(j, w, &o).held(),
                    held,
                    "{} in {s}..{e}",
                    j.job_id
                );
            }
        }
    }
}

/// Measured lost work (`measured.rs`): job B's two attempts, preempted at 1.5 h and 2.5 h, with
/// its own checkpoints listed.
mod measured_lost_work {
    use super::*;

    fn mark(at: Millis, number: u64) -> CheckpointMark {
        CheckpointMark {
            at,
            number: Some(number),
            bytes: 10,
        }
    }

    /// B runs 0.5 h–1.5 h (preempted), 2 h–2.5 h (preempted), 3 h–4 h (completed); interval 20 min.
    fn b(checkpoints: Option<Vec<CheckpointMark>>) -> JobHistory {
        let mut b = job("B", "b", 10, 1);
        b.checkpoint_interval_ms = Some((20 * M) as u64);
        b.attempts = vec![
            attempt(H / 2, Some(H / 2), Some(3 * H / 2), AttemptEnd::Preempted),
            attempt(2 * H, Some(2 * H), Some(5 * H / 2), AttemptEnd::Preempted),
            attempt(3 * H, Some(3 * H), Some(4 * H), AttemptEnd::Completed),
        ];
        b.outcome = Outcome::Succeeded(4 * H);
        b.training = checkpoints.map(|checkpoints| TrainingRecord {
            checkpoints,
            truncated: false,
            stored: StoredObjects::default(),
        });
        b
    }

    fn window() -> Window {
        Window::new(0, 5 * H)
    }

    #[test]
    fn a_continued_sequence_measures_from_the_last_checkpoint() {
        // Checkpoints 1 (0.5 h + 25 min) and 2 (0.5 h + 50 min), then 3 in the second attempt
        // (2 h + 10 min): restored. First attempt loses 1.5 h − 1 h 20 = 10 min (modelled: 1 h of
        // progress at 20 min intervals also loses 0); second loses 20 min (from 2 h 10).
        let j = b(Some(vec![
            mark(H / 2 + 25 * M, 1),
            mark(H / 2 + 50 * M, 2),
            mark(2 * H + 10 * M, 3),
            mark(3 * H + 10 * M, 4),
        ]));
        let m = measure_attempt(&j, 0, H / 2, 3 * H / 2).unwrap();
        assert_eq!(m.restore, RestoreVerdict::Restored);
        assert_eq!(m.lost_ms(3 * H / 2), 10 * M);
        let l = job_ledger(&j, window(), &ScorecardOptions::default());
        assert_eq!(l.lost, 10 * M + 20 * M);
        assert_eq!(l.lost_measured, l.lost);
        assert_eq!(l.basis.label(), "measured");
        assert_eq!(l.held(), H + H / 2 + H);
    }

    #[test]
    fn a_sequence_that_starts_again_loses_every_attempt_whole() {
        // Never restored: each attempt writes 1, 2, … again.
        let j = b(Some(vec![
            mark(H / 2 + 20 * M, 1),
            mark(H / 2 + 40 * M, 2),
            mark(2 * H + 20 * M, 1),
            mark(3 * H + 20 * M, 1),
        ]));
        let m = measure_attempt(&j, 0, H / 2, 3 * H / 2).unwrap();
        assert_eq!(m.restore, RestoreVerdict::FromScratch);
        assert_eq!(
            m.evidence,
            RestoreEvidence::Sequence {
                before: 2,
                after: 1
            }
        );
        let l = job_ledger(&j, window(), &ScorecardOptions::default());
        assert_eq!(l.lost, H + H / 2);
        assert_eq!(l.lost_measured, H + H / 2);
        // Modelled, the same job loses nothing of its first attempt (3 × 20 min saved).
        let modelled = job_ledger(&b(None), window(), &ScorecardOptions::default());
        assert_eq!(modelled.lost_measured, 0);
        assert_eq!(modelled.basis.label(), "modelled (interval 20 min)");
        assert!(modelled.lost < l.lost);
    }

    #[test]
    fn without_a_later_checkpoint_the_log_decides_or_it_stays_modelled() {
        // One checkpoint in the first attempt; nothing after it.
        let mut j = b(Some(vec![mark(H / 2 + 20 * M, 1)]));
        assert_eq!(measure_attempt(&j, 0, H / 2, 3 * H / 2), None);
        j.attempts[1].restored = Some(true);
        let m = measure_attempt(&j, 0, H / 2, 3 * H / 2).unwrap();
        assert_eq!(
            (m.restore, m.evidence),
            (
                RestoreVerdict::Restored,
                RestoreEvidence::Log { restored: true }
            )
        );
        assert_eq!(m.lost_ms(3 * H / 2), 40 * M);
        // The second attempt wrote nothing after restoring: bounded by its own running time.
        j.attempts[2].restored = Some(true);
        let m = measure_attempt(&j, 1, 2 * H, 5 * H / 2).unwrap();
        assert_eq!(m.lost_ms(5 * H / 2), H / 2);
        // A listing cut at its bound measures nothing.
        j.training.as_mut().unwrap().truncated = true;
        assert_eq!(measure_attempt(&j, 0, H / 2, 3 * H / 2), None);
    }

    #[test]
    fn totals_say_how_much_is_measured_and_how_much_modelled() {
        let measured = b(Some(vec![]));
        let mut modelled = b(None);
        modelled.job_id = "C".into();
        let opts = ScorecardOptions::default();
        let jobs = [&measured, &modelled];
        let total = ledger::ledger(&jobs, window(), &opts);
        assert_eq!(total.basis.measured_attempts, 2);
        assert_eq!(total.basis.modelled_attempts, 2);
        // No checkpoint listed for B: both its attempts lost whole (1 h + 0.5 h) × 4 GPUs.
        assert!((total.lost_measured_gpu_hours - 6.0).abs() < 1e-9);
        assert_eq!(
            total.lost_basis_text(),
            format!(
                "6.0 GPU-h measured (2 attempts) + {:.1} GPU-h modelled over 2 attempts (interval 20 min)",
                total.lost_modelled_gpu_hours()
            )
        );
        assert_eq!(checkpoint_number("step-00001800/model.pt"), Some(1800));
        assert_eq!(checkpoint_number("latest/model.pt"), None);
    }

    #[test]
    fn a_logged_restore_is_measured_and_the_ledger_and_recovery_use_it() {
        // B's second attempt logs its restore 3 min after it started (2 h); its third says it
        // restored but not when, so it is modelled at the restart cost (2 min).
        let mut j = b(Some(vec![
            mark(H / 2 + 25 * M, 1),
            mark(H / 2 + 50 * M, 2),
            mark(2 * H + 20 * M, 3),
            mark(3 * H + 20 * M, 4),
        ]));
        j.attempts[1].restored = Some(true);
        j.attempts[1].restored_at = Some(2 * H + 3 * M);
        j.attempts[2].restored = Some(true);
        let opts = ScorecardOptions {
            restart_cost_ms: (2 * M) as u64,
            ..ScorecardOptions::default()
        };
        let restart = ledger::restart_cost_ms(&j, &opts);
        assert_eq!(restore_time(&j, 0, restart), None);
        assert_eq!(
            restore_time(&j, 1, restart),
            Some(RestoreTime {
                ms: 3 * M,
                measured: true
            })
        );
        assert_eq!(
            restore_time(&j, 2, restart),
            Some(RestoreTime {
                ms: 2 * M,
                measured: false
            })
        );
        // A restore line logged before startedAt (another clock) is not a negative restore.
        let mut early = j.clone();
        early.attempts[1].restored_at = Some(2 * H - M);
        assert_eq!(restore_time(&early, 1, restart).map(|r| r.ms), Some(0));
        // An attempt whose log said it did not restore has no measured restore.
        let mut scratch = j.clone();
        scratch.attempts[1].restored = Some(false);
        assert_eq!(
            restore_time(&scratch, 1, restart).map(|r| r.measured),
            Some(false)
        );
        // The ledger's restart overhead is the same figure: 3 min + 2 min.
        let l = job_ledger(&j, window(), &opts);
        assert_eq!(l.overhead, 3 * M + 2 * M);
        assert_eq!(l.held(), H + H / 2 + H);
        // Recovery reliability reports both, labelled.
        let r = metrics::recovery(&[&j], window(), &opts).restores;
        assert_eq!((r.measured, r.measured_total_ms, r.modelled), (1, 3 * M, 1));
        assert_eq!(
            r.label(),
            "restore measured 3m00s mean, 3m00s max (1 re-run); modelled 2m00s restart cost (1 re-run)"
        );
        assert_eq!(
            RestoreStats::default().label(),
            "no re-run after a preemption"
        );
    }
}
