//! Measured restores: only re-runs after a preemption whose log said they restored, and when;
//! a class's restart overhead is measured when it has any, else modelled.

use super::*;
use quotatop_analysis::scorecard::{AttemptHistory, JobHistory, Outcome, Window};
use std::collections::BTreeSet;

const M: Millis = 60_000;

fn attempt(start: Millis, end: AttemptEnd, restored_at: Option<Millis>) -> AttemptHistory {
    AttemptHistory {
        scheduled_at: Some(start),
        started_at: Some(start),
        stopped_at: Some(start + 30 * M),
        end,
        preempting_from: None,
        restored: restored_at.map(|_| true),
        restored_at,
    }
}

fn job(id: &str, share: &str, priority: u32, attempts: Vec<AttemptHistory>) -> JobHistory {
    JobHistory {
        job_id: id.into(),
        name: id.into(),
        share: share.into(),
        priority,
        instance_type: "ml.p4d.24xlarge".into(),
        instance_count: 1,
        submitted_at: 0,
        runnable_at: vec![0],
        attempts,
        outcome: Outcome::Succeeded(300 * M),
        checkpoint_interval_ms: None,
        restart_overhead_ms: None,
        preemption_retries: None,
        training: None,
    }
}

fn input() -> ScorecardInput {
    ScorecardInput {
        queue: "q".into(),
        window: Window::new(0, 400 * M),
        capacity: Vec::new(),
        entitlements: Vec::new(),
        jobs: vec![
            // a: preempted twice; both re-runs restored, 2 and 4 min after they started.
            job(
                "a",
                "research",
                50,
                vec![
                    attempt(0, AttemptEnd::Preempted, None),
                    attempt(60 * M, AttemptEnd::Preempted, Some(62 * M)),
                    attempt(120 * M, AttemptEnd::Completed, Some(124 * M)),
                ],
            ),
            // b: its second attempt follows a failure, not a preemption: not a restart.
            job(
                "b",
                "research",
                50,
                vec![
                    attempt(0, AttemptEnd::Failed, None),
                    attempt(60 * M, AttemptEnd::Completed, Some(70 * M)),
                ],
            ),
            // c: preempted, its re-run's log never said it restored: modelled, left out.
            job(
                "c",
                "prod",
                500,
                vec![
                    attempt(0, AttemptEnd::Preempted, None),
                    attempt(60 * M, AttemptEnd::Completed, None),
                ],
            ),
        ],
    }
}

#[test]
fn only_logged_restores_after_a_preemption_are_measured() {
    let r = measured_restores(&input(), &[]);
    let ms: Vec<Millis> = r.iter().map(|r| r.ms).collect();
    assert_eq!(ms, [2 * M, 4 * M]);
    assert!(r.iter().all(|r| r.share == "research" && r.priority == 50));
    assert_eq!(held_restart_s(&r), Some(180));
    assert_eq!(held_restart_s(&[]), None);
}

#[test]
fn the_priority_is_the_one_submitted() {
    let changes = [PriorityChange {
        at: 100 * M,
        job_id: "a".into(),
        old: 10,
        new: 50,
        share: "research".into(),
        operator: None,
        change_record: None,
    }];
    let r = measured_restores(&input(), &changes);
    assert!(r.iter().all(|r| r.priority == 10), "{r:?}");
}

#[test]
fn a_class_with_restores_is_measured_and_one_without_is_modelled() {
    let r = measured_restores(&input(), &[]);
    let research = ClassMembers::Pairs(BTreeSet::from([("research".to_string(), 50)]));
    let prod = ClassMembers::Pairs(BTreeSet::from([("prod".to_string(), 500)]));
    let m = RestartBasis::of_class(&research, &r, 0);
    assert_eq!(
        m,
        RestartBasis::Measured {
            n: 2,
            mean_s: 180.0
        }
    );
    assert_eq!(m.text(), "measured (2 restores, mean 180.0 s)");
    let p = RestartBasis::of_class(&prod, &r, 120);
    assert_eq!(p.text(), "modelled (restart_overhead_s = 120 s)");
}
