//! A holder's elapsed time counts from its attempt's start (`quotatop_model::attempt_start`),
//! as the engine's does: never from when the job was created.

use super::*;
use crate::fixture::{job, queue};
use quotatop_model::SharingConfig;

const P4: &str = "ml.p4d.24xlarge";

/// Two running jobs of equal priority, `early` created first but started last: the victim is
/// the shortest-running one (`early`), which an elapsed time counted from creation would get
/// wrong (`late` was created last, so it would look the shortest-running).
#[test]
fn equal_priority_victims_are_ordered_by_start_not_creation() {
    let mut q = queue(&[("s", P4, 2, SharingConfig::reserve())]);
    q.shares[0] = q.shares[0].clone().with_in_share_preemption(true);
    let mut early = job("early", "s", P4, 1, JobStatus::Running, 1, 0);
    std::sync::Arc::make_mut(&mut early.job).started_at = Some(600_000);
    let mut late = job("late", "s", P4, 1, JobStatus::Running, 1, 100);
    std::sync::Arc::make_mut(&mut late.job).started_at = Some(400_000);
    q.jobs = vec![
        early,
        late,
        job("target", "s", P4, 1, JobStatus::Runnable, 0, 200),
    ];
    let p = preview(&q, "id-target", 5).unwrap();
    assert!(p.preemptions.settled(), "{:?}", p.preemptions);
    let victims: Vec<(&str, Millis)> = p
        .preemptions
        .candidates
        .iter()
        .map(|c| (c.name.as_str(), c.running_ms))
        .collect();
    // Now is 1,000,000: `early` has run 400 s, `late` 600 s.
    assert_eq!(victims, [("early", 400_000)]);
}
