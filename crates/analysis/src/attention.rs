//! What needs an operator's attention in one queue, most urgent first, and the per-share badges
//! the Overview and the Share screen show. Built only from figures other analysis already
//! derives (preemption facts and their loop flag, the dispatch order, the borrowing
//! attribution), so a badge, a panel line and the screens behind them agree.
//!
//! Urgency, highest first:
//! 1. jobs over their share's interruption budget (`max_preemptions_per_job`);
//! 2. jobs in a preemption loop ([`super::LoopRule`]);
//! 3. misconfigured jobs: stuck RUNNABLE forever, the reason in words;
//! 4. (in the console) the policy's breached classes, from its conformance;
//! 5. the longest waits of important work (priority band high or critical), critical first;
//! 6. shares at their limit with RUNNABLE work while other shares lend their capacity.
//!
//! Within a kind: most preemptions, longest wait, or most waiting jobs first.

use std::collections::BTreeMap;

use quotatop_engine::Misconfiguration;
use quotatop_model::{Millis, QueueSnapshot};

use super::scorecard::PriorityBand;
use super::{PreemptionFacts, QueuedJob, ShareUsage};

/// What kind of trouble a line reports, in order of what it costs now: jobs burning GPU-hours
/// in preemptions, important work waiting, shares held at their limit while others lend, then
/// broken promises and jobs that can never run (they hold nothing).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum AttentionKind {
    OverBudget,
    Loop,
    ImportantWait,
    AtLimit,
    /// A class of the policy breached (the console adds these from the policy's conformance).
    PolicyBreach,
    Misconfigured,
}

impl AttentionKind {
    /// A short tag for the start of a line.
    pub fn tag(self) -> &'static str {
        match self {
            Self::OverBudget => "BUDGET",
            Self::Loop => "LOOP",
            Self::Misconfigured => "MISCONFIG",
            Self::PolicyBreach => "POLICY",
            Self::ImportantWait => "WAIT",
            Self::AtLimit => "LIMIT",
        }
    }
}

/// What Enter on a line opens.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum AttentionTarget {
    /// A job, by id.
    Job(String),
    /// A share, by name.
    Share(String),
}

/// One line of the "needs attention" list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attention {
    pub kind: AttentionKind,
    pub target: AttentionTarget,
    /// The share concerned.
    pub share: String,
    /// The finding in words (untrusted names included as they are: clean before drawing).
    pub text: String,
    /// For waits: how long (the console formats it).
    pub waiting_ms: Option<Millis>,
}

/// `ml.p4d.24xlarge` → `p4d.24xlarge`.
fn short(t: &str) -> &str {
    t.strip_prefix("ml.").unwrap_or(t)
}

fn plural(n: u32, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Why a misconfigured job can never run, in words, from the queue's configuration.
pub fn misconfiguration_in_words(q: &QueueSnapshot, j: &QueuedJob) -> String {
    let reason = j.reason.as_deref().unwrap_or("");
    let Some(share) = q.shares.iter().find(|s| s.name == j.share) else {
        return format!(
            "needs {} {}; share {} is not configured",
            j.instance_count, j.instance_type, j.share
        );
    };
    // What the service's reason names, when it is one of AWS's texts; else the engine's check
    // on the snapshot's configuration.
    let kind = Misconfiguration::from_reason(reason)
        .or_else(|| super::why::misconfiguration(q, share, &j.instance_type, j.instance_count));
    match kind {
        Some(m) => {
            super::why::misconfiguration_words(q, share, &j.instance_type, j.instance_count, m).0
        }
        None => quotatop_model::clean(reason).into_owned(),
    }
}

/// Everything that needs attention in one queue, most urgent first.
pub fn attention(
    q: &QueueSnapshot,
    usage: &[ShareUsage],
    dispatch: &[QueuedJob],
    preemptions: &[PreemptionFacts],
) -> Vec<Attention> {
    let mut out = preemption_items(q, preemptions);
    // A job already named for its preemptions (with their cause and remedy) is not named a
    // second time for waiting: one item per job, its costliest. (A misconfigured job is never
    // an important wait.) A set: thousands of items each way at 50,000 jobs.
    let named: std::collections::HashSet<AttentionTarget> =
        out.iter().map(|(a, _)| a.target.clone()).collect();
    out.extend(misconfigured_items(q, dispatch));
    out.extend(
        important_waits(dispatch)
            .into_iter()
            .filter(|(a, _)| !named.contains(&a.target)),
    );
    out.extend(at_limit(q, usage, dispatch));
    out.sort_by(|(a, ra), (b, rb)| {
        a.kind
            .cmp(&b.kind)
            .then(ra.cmp(rb))
            .then(a.text.cmp(&b.text))
    });
    out.into_iter().map(|(a, _)| a).collect()
}

/// What ends a loop, naming the console's key for the requeue dialog (`R` unless rebound):
/// the console adds it to every [`AttentionKind::Loop`] line, with the key its keymap binds.
pub fn requeue_hint(key: &str) -> String {
    format!("press {key} to requeue it with a retry cap")
}

/// Jobs preempted over their budget or in a loop, most preempted first.
fn preemption_items(q: &QueueSnapshot, preemptions: &[PreemptionFacts]) -> Vec<(Attention, u64)> {
    let mut out: Vec<(Attention, u64)> = Vec::new();
    for f in preemptions {
        // Finished jobs no longer burn capacity.
        if f.status.is_terminal() {
            continue;
        }
        let retries = if f.unbounded_retries {
            ", no retry cap".to_string()
        } else {
            match f.retries_left {
                Some(0) => ", no retries left: the next preemption terminates it".to_string(),
                Some(r) => format!(", {} left", plural(r, "retry", "retries")),
                None => String::new(),
            }
        };
        let lost = format!("{:.1} instance-h lost", f.instance_hours_lost);
        let item = if let Some(budget) = f.over_budget {
            Some((
                AttentionKind::OverBudget,
                format!(
                    "{} ({}) preempted {}×, over its budget of {budget}{retries}; {lost}",
                    f.name, f.share, f.count
                ),
            ))
        } else if f.looping {
            let cause = q
                .jobs
                .iter()
                .find(|t| t.job.id == f.job_id)
                .and_then(|t| crate::over_own_limit(q, &t.job))
                .map(|o| format!("; cause: {}", o.cause()))
                .unwrap_or_default();
            Some((
                AttentionKind::Loop,
                format!(
                    "{} ({}) preempted {}×{retries}; {lost}{cause}",
                    f.name, f.share, f.count
                ),
            ))
        } else {
            None
        };
        if let Some((kind, text)) = item {
            out.push((
                Attention {
                    kind,
                    target: AttentionTarget::Job(f.job_id.clone()),
                    share: f.share.clone(),
                    text,
                    waiting_ms: None,
                },
                u64::MAX - f.count as u64,
            ));
        }
    }
    out
}

/// Misconfigured jobs, longest waiting first.
fn misconfigured_items(q: &QueueSnapshot, dispatch: &[QueuedJob]) -> Vec<(Attention, u64)> {
    let mut out = Vec::new();
    for j in dispatch.iter().filter(|j| j.misconfigured) {
        out.push((
            Attention {
                kind: AttentionKind::Misconfigured,
                target: AttentionTarget::Job(j.job_id.clone()),
                share: j.share.clone(),
                text: format!(
                    "{} ({}) {}",
                    j.name,
                    j.share,
                    misconfiguration_in_words(q, j)
                ),
                waiting_ms: j.waiting_ms,
            },
            u64::MAX - j.waiting_ms.unwrap_or(0).max(0) as u64,
        ));
    }
    out
}

/// High and critical priority jobs waiting, by band, then longest waiting first.
fn important_waits(dispatch: &[QueuedJob]) -> Vec<(Attention, u64)> {
    let mut out = Vec::new();
    let mut important: Vec<(&QueuedJob, PriorityBand)> = dispatch
        .iter()
        .filter(|j| !j.misconfigured)
        .filter_map(|j| {
            let band = PriorityBand::of(j.priority?);
            (band >= PriorityBand::High).then_some((j, band))
        })
        .collect();
    important.sort_by_key(|(j, b)| (std::cmp::Reverse(*b), std::cmp::Reverse(j.waiting_ms)));
    for (rank, (j, band)) in important.iter().enumerate() {
        out.push((
            Attention {
                kind: AttentionKind::ImportantWait,
                target: AttentionTarget::Job(j.job_id.clone()),
                share: j.share.clone(),
                text: format!(
                    "{} ({}) {} priority {} waiting, #{} in its share",
                    j.name,
                    j.share,
                    band.as_str(),
                    j.priority.unwrap_or(0),
                    j.share_position
                ),
                waiting_ms: j.waiting_ms,
            },
            rank as u64,
        ));
    }
    out
}

/// Shares at their limit of a type with RUNNABLE work of it while other shares lend that type,
/// and that could borrow it: a share that cannot borrow (LEND, RESERVE, a borrow limit of 0) or
/// has borrowed all it may is at its limit by its own configuration, whoever lends.
fn at_limit(
    q: &QueueSnapshot,
    usage: &[ShareUsage],
    dispatch: &[QueuedJob],
) -> Vec<(Attention, u64)> {
    let mut out = Vec::new();
    for u in usage {
        if u.limit == 0 || u.used < u.limit {
            continue;
        }
        let could_borrow = q.shares.iter().any(|s| {
            s.name == u.share
                && s.sharing.strategy.borrows()
                && s.sharing
                    .borrow_cap(u.limit)
                    .is_none_or(|cap| u.borrowed < cap)
        });
        if !could_borrow {
            continue;
        }
        let waiting = dispatch
            .iter()
            .filter(|j| {
                !j.misconfigured && j.share == u.share && j.instance_type == u.instance_type
            })
            .count() as u32;
        if waiting == 0 {
            continue;
        }
        let lending: Vec<String> = usage
            .iter()
            .filter(|o| o.instance_type == u.instance_type && o.share != u.share)
            .flat_map(|o| {
                o.lent_to
                    .iter()
                    .filter(|(to, _)| *to != u.share)
                    .map(move |(to, n)| format!("{} lends {n} to {to}", o.share))
            })
            .collect();
        if lending.is_empty() {
            continue;
        }
        out.push((
            Attention {
                kind: AttentionKind::AtLimit,
                target: AttentionTarget::Share(u.share.clone()),
                share: u.share.clone(),
                text: format!(
                    "{} at its limit {}/{} {} with {} waiting while {}",
                    u.share,
                    u.used,
                    u.limit,
                    short(&u.instance_type),
                    plural(waiting, "job", "jobs"),
                    lending.join(", ")
                ),
                waiting_ms: None,
            },
            u64::MAX - waiting as u64,
        ));
    }
    out
}

/// The badges of one share: its loops and misconfigured jobs (counted from the attention list,
/// so badge and panel agree) and whom it borrows from and lends to (the borrowing attribution of
/// [`super::share_usage`], summed over instance types).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ShareBadges {
    /// Jobs in a preemption loop or over their interruption budget.
    pub loops: u32,
    pub misconfigured: u32,
    /// (lender, instances), in share order.
    pub borrows_from: Vec<(String, u32)>,
    /// (borrower, instances), in share order.
    pub lends_to: Vec<(String, u32)>,
}

impl ShareBadges {
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// `LOOP 1`, `MISCONFIG 1`, `← prod 2`, `→ research 2`, in that order.
    pub fn labels(&self) -> Vec<(BadgeKind, String)> {
        let mut out = Vec::new();
        if self.loops > 0 {
            out.push((BadgeKind::Loop, format!("LOOP {}", self.loops)));
        }
        if self.misconfigured > 0 {
            out.push((
                BadgeKind::Misconfigured,
                format!("MISCONFIG {}", self.misconfigured),
            ));
        }
        for (s, n) in &self.borrows_from {
            out.push((BadgeKind::Borrows, format!("← {s} {n}")));
        }
        for (s, n) in &self.lends_to {
            out.push((BadgeKind::Lends, format!("→ {s} {n}")));
        }
        out
    }
}

/// Which badge a label is (for its colour).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadgeKind {
    Loop,
    Misconfigured,
    Borrows,
    Lends,
}

fn add(list: &mut Vec<(String, u32)>, who: &str, n: u32) {
    match list.iter_mut().find(|(s, _)| s == who) {
        Some(e) => e.1 += n,
        None => list.push((who.to_string(), n)),
    }
}

/// Badges of every share that has one.
pub fn share_badges(usage: &[ShareUsage], items: &[Attention]) -> BTreeMap<String, ShareBadges> {
    let mut out: BTreeMap<String, ShareBadges> = BTreeMap::new();
    for a in items {
        match a.kind {
            AttentionKind::Loop | AttentionKind::OverBudget => {
                out.entry(a.share.clone()).or_default().loops += 1
            }
            AttentionKind::Misconfigured => {
                out.entry(a.share.clone()).or_default().misconfigured += 1
            }
            _ => {}
        }
    }
    for u in usage {
        for (s, n) in &u.borrowed_from {
            add(
                &mut out.entry(u.share.clone()).or_default().borrows_from,
                s,
                *n,
            );
        }
        for (s, n) in &u.lent_to {
            add(&mut out.entry(u.share.clone()).or_default().lends_to, s, *n);
        }
    }
    out.retain(|_, b| !b.is_empty());
    out
}

#[cfg(test)]
#[path = "attention_tests.rs"]
mod tests;
