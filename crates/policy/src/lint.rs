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
    let by_share = classes_by_share(policy);
    ranges(policy, &by_share, &mut out);
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
        with_shares(policy, shares, &by_share, &mut out);
    }
    for share in policy.owners.keys() {
        if !by_share.contains_key(share.as_str()) {
            out.push(Finding::warning(
                None,
                format!("[owners] names share {share:?}, which no class runs in"),
            ));
        }
    }
    out.sort_by_key(|f| f.severity);
    out
}

/// The classes listing each share (their indexes, in class order), with the shares in the
/// order the classes first list them: every check across classes looks here, so a policy of
/// n classes is linted in about n steps, not n² (61,146 classes took 148 s).
struct ByShare<'a> {
    order: Vec<&'a str>,
    classes: std::collections::HashMap<&'a str, Vec<usize>>,
}

impl ByShare<'_> {
    fn contains_key(&self, share: &str) -> bool {
        self.classes.contains_key(share)
    }
}

fn classes_by_share(policy: &Policy) -> ByShare<'_> {
    let mut by = ByShare {
        order: Vec::new(),
        classes: std::collections::HashMap::new(),
    };
    for (i, c) in policy.classes.iter().enumerate() {
        for s in &c.shares {
            let list = by.classes.entry(s.as_str()).or_insert_with(|| {
                by.order.push(s.as_str());
                Vec::new()
            });
            if list.last() != Some(&i) {
                list.push(i);
            }
        }
    }
    by
}

/// Overlapping priority ranges between classes that share a share: membership and the
/// change-time check could not tell them apart. (Across different shares a job's share decides;
/// a job in a share no class lists goes to the first class whose range holds its priority.)
/// Per share, its classes sorted by where their ranges start: a class whose range starts
/// within the furthest-reaching range before it overlaps that one (named once per pair; the
/// finding is the earlier class's, naming the later one).
fn ranges(policy: &Policy, by_share: &ByShare<'_>, out: &mut Vec<Finding>) {
    let mut said = std::collections::HashSet::new();
    for share in &by_share.order {
        let mut classes = by_share.classes[share].clone();
        classes.sort_by_key(|&i| (policy.classes[i].priority.min, i));
        let mut reach: Option<usize> = None;
        for i in classes {
            let b = &policy.classes[i];
            if let Some(r) = reach {
                let a = &policy.classes[r];
                if a.priority.overlaps(b.priority) {
                    let (first, second) = if r < i { (r, i) } else { (i, r) };
                    if said.insert((first, second)) {
                        let (a, b) = (&policy.classes[first], &policy.classes[second]);
                        out.push(Finding::error(
                            Some(a),
                            format!(
                                "priority {} overlaps class {}'s {} in share {share}: give the classes of one share ranges that do not overlap",
                                a.priority, b.name, b.priority
                            ),
                        ));
                    }
                }
                if b.priority.max <= a.priority.max {
                    continue;
                }
            }
            reach = Some(i);
        }
    }
}

/// The checks that need the queue's shares.
fn with_shares(
    policy: &Policy,
    shares: &[QuotaShare],
    by_share: &ByShare<'_>,
    out: &mut Vec<Finding>,
) {
    let named: std::collections::HashMap<&str, &QuotaShare> =
        shares.iter().map(|s| (s.name.as_str(), s)).collect();
    for c in &policy.classes {
        let mut capacity = 0u64;
        for name in &c.shares {
            let Some(s) = named.get(name.as_str()) else {
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
        if !by_share.contains_key(&s.name) {
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
