//! `quotatop policy lint`: every problem of a policy at once, errors first. Relations with
//! the queue's shares are checked when the shares are known (live, or a shares file).

use quotatop_analysis::shares_lint::Severity;
use quotatop_model::{QuotaShare, SharingStrategy};

use crate::file::{Class, Policy};

/// One problem, and the class it is about (`None`: the whole policy).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub severity: Severity,
    pub class: Option<String>,
    pub message: String,
}

impl Finding {
    fn error(class: Option<&Class>, message: String) -> Self {
        Self {
            severity: Severity::Error,
            class: class.map(|c| c.name.clone()),
            message,
        }
    }
    fn warning(class: Option<&Class>, message: String) -> Self {
        Self {
            severity: Severity::Warning,
            class: class.map(|c| c.name.clone()),
            message,
        }
    }
    /// `error: class incident: …` / `warning: …`.
    pub fn line(&self) -> String {
        match &self.class {
            Some(c) => format!("{}: class {c}: {}", self.severity.as_str(), self.message),
            None => format!("{}: {}", self.severity.as_str(), self.message),
        }
    }
}

/// Every problem of `policy`; `shares`: the queue's shares when known.
pub fn lint(policy: &Policy, shares: Option<&[QuotaShare]>) -> Vec<Finding> {
    let mut out = Vec::new();
    ranges(policy, &mut out);
    for c in &policy.classes {
        if c.shares.is_empty() {
            out.push(Finding::error(
                Some(c),
                "runs in no share: list the shares its jobs are submitted to in `shares`".into(),
            ));
        }
        if let Some(f) = c.promise.deadline_factor.filter(|f| *f < 1.0) {
            out.push(Finding::error(
                Some(c),
                format!(
                    "deadline_factor = {f} cannot hold: no job finishes sooner than its own work (use 1 or more)"
                ),
            ));
        }
    }
    if let Some(shares) = shares {
        with_shares(policy, shares, &mut out);
    }
    for share in policy.owners.keys() {
        if !policy.classes.iter().any(|c| c.shares.contains(share)) {
            out.push(Finding::warning(
                None,
                format!("[owners] names share {share:?}, which no class runs in"),
            ));
        }
    }
    out.sort_by_key(|f| f.severity);
    out
}

/// Overlapping priority ranges between classes that share a share: membership and the
/// change-time check could not tell them apart. (Across different shares a job's share decides;
/// a job in a share no class lists goes to the first class whose range holds its priority.)
fn ranges(policy: &Policy, out: &mut Vec<Finding>) {
    for (i, a) in policy.classes.iter().enumerate() {
        for b in &policy.classes[i + 1..] {
            if !a.priority.overlaps(b.priority) {
                continue;
            }
            if let Some(common) = a.shares.iter().find(|s| b.shares.contains(s)) {
                out.push(Finding::error(
                    Some(a),
                    format!(
                        "priority {} overlaps class {}'s {} in share {common}: give the classes of one share ranges that do not overlap",
                        a.priority, b.name, b.priority
                    ),
                ));
            }
        }
    }
}

/// The checks that need the queue's shares.
fn with_shares(policy: &Policy, shares: &[QuotaShare], out: &mut Vec<Finding>) {
    for c in &policy.classes {
        let mut capacity = 0u64;
        for name in &c.shares {
            let Some(s) = shares.iter().find(|s| &s.name == name) else {
                out.push(Finding::error(
                    Some(c),
                    format!("runs in share {name:?}, which the queue does not have"),
                ));
                continue;
            };
            capacity += s
                .capacity_limits
                .iter()
                .map(|l| u64::from(l.max_capacity))
                .sum::<u64>();
            share_checks(c, s, out);
        }
        if !c.shares.is_empty() && !c.promise.is_empty() && capacity == 0 && !c.may_borrow {
            out.push(Finding::error(
                Some(c),
                "its promise cannot hold: its shares have no capacity and it may not borrow".into(),
            ));
        }
    }
    for s in shares {
        if !policy.classes.iter().any(|c| c.shares.contains(&s.name)) {
            out.push(Finding::warning(
                None,
                format!(
                    "share {} is in no class: its jobs are classed by priority range alone",
                    s.name
                ),
            ));
        }
    }
}

/// One class against one of its shares.
fn share_checks(c: &Class, s: &QuotaShare, out: &mut Vec<Finding>) {
    let strategy = s.sharing.strategy;
    if c.protected && strategy.lends() {
        out.push(Finding::error(
            Some(c),
            format!(
                "is protected but share {} is {}: its capacity is lent and reclaimed by preemption (make the share RESERVE, or the class not protected)",
                s.name,
                strategy.as_str()
            ),
        ));
    }
    let has_budget =
        c.budget.max_preemptions_per_job.is_some() || c.budget.max_lost_gpu_hours_per_day.is_some();
    if has_budget && strategy == SharingStrategy::Reserve && !s.in_share_preemption.enabled() {
        out.push(Finding::warning(
            Some(c),
            format!(
                "has an interruption budget, but share {} never lends or borrows and has no in-share preemption: no job of it is ever preempted",
                s.name
            ),
        ));
    }
    if c.may_borrow && !strategy.borrows() {
        out.push(Finding::warning(
            Some(c),
            format!(
                "may borrow, but share {} is {}: it cannot (make the share LEND_AND_BORROW, or the class not borrow)",
                s.name,
                strategy.as_str()
            ),
        ));
    } else if !c.may_borrow && strategy.borrows() {
        out.push(Finding::warning(
            Some(c),
            format!(
                "may not borrow, but share {} is LEND_AND_BORROW: its jobs can run on borrowed capacity",
                s.name
            ),
        ));
    }
}

/// How many findings are errors.
pub fn errors(findings: &[Finding]) -> usize {
    findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .count()
}
