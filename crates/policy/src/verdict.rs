//! The policy in a replay's verdict (`replay --policy`): each class's promise and interruption
//! budget as the comparison's class rules, and each job's class by the one membership rule
//! ([`class_of`]), so that deadlines, budgets and important work read the same class a job
//! has in `policy check`, `report` and at change time.

use quotatop_analysis::scorecard::decision::{ClassRule, DeadlineRule};

use crate::file::{Class, Policy};
use crate::membership::class_of;

/// The class rules of `policy`, in its class order (the indices [`class_index`] returns).
pub fn class_rules(policy: &Policy) -> Vec<ClassRule> {
    policy.classes.iter().map(class_rule).collect()
}

fn class_rule(c: &Class) -> ClassRule {
    let b = &c.budget;
    ClassRule {
        name: c.name.clone(),
        deadline: (!c.promise.is_empty()).then(|| DeadlineRule {
            deadline_factor: c.promise.deadline_factor,
            max_wait_s: c
                .promise
                .max_wait_ms
                .map(|ms| u64::try_from(ms / 1000).unwrap_or(0)),
        }),
        budget: (b.max_preemptions_per_job.is_some() || b.max_lost_gpu_hours_per_day.is_some())
            .then(|| b.clone()),
    }
}

/// The index in [`class_rules`] of the class of a job in `share` at `priority` (no tag: a
/// trace carries none), by [`class_of`].
pub fn class_index(policy: &Policy, share: &str, priority: u32) -> Option<u16> {
    let m = class_of(policy, None, share, priority)?;
    let i = policy
        .classes
        .iter()
        .position(|c| std::ptr::eq(c, m.class))?;
    u16::try_from(i).ok()
}

/// Whether a class's jobs are important work in a comparison: it has a promise or is
/// protected.
pub fn important(c: &Class) -> bool {
    c.protected || !c.promise.is_empty()
}
