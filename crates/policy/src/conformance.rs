//! Whether what happened matches the policy: per class, its jobs' waits against its promise,
//! missed deadlines, interruption-budget breaches, jobs outside the class's shares or range, and
//! priority changes per operator. One function, [`conformance`], computes it from the journal's
//! histories; `policy check`, `report`, the console and `/metrics` all read its result.

use std::collections::BTreeMap;

use serde::Serialize;

use quotatop_analysis::scorecard::decision::Deadline;
use quotatop_analysis::scorecard::{
    AttemptEnd, JobHistory, Outcome, PriorityChange, ScorecardInput, ScorecardOptions, Window,
    job_ledger, ledger, percentile,
};
use quotatop_model::{Millis, format_duration};

use crate::file::{Class, Policy};
use crate::membership::{Basis, class_of};

const DAY_MS: Millis = 86_400_000;

/// One job that breached a rule, and how.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobBreach {
    pub job_id: String,
    pub name: String,
    /// `waited 42m00s (promise 15m00s)`.
    pub detail: String,
    /// How bad, for ordering (the worst first): milliseconds, counts.
    #[serde(skip)]
    pub weight: f64,
    /// Still waiting for its first capacity at the window's end (wait breaches only).
    #[serde(skip)]
    pub still_waiting: bool,
}

/// What a check looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckKind {
    Wait,
    Deadlines,
    Budget,
    Outside,
    Exceptions,
}

impl CheckKind {
    pub fn label(self) -> &'static str {
        match self {
            CheckKind::Wait => "wait",
            CheckKind::Deadlines => "deadlines",
            CheckKind::Budget => "interruption budget",
            CheckKind::Outside => "shares and range",
            CheckKind::Exceptions => "priority changes",
        }
    }
}

/// One line of a class's conformance.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    pub kind: CheckKind,
    /// What was measured, e.g. `P95 wait to first capacity 12m00s, promise 15m00s`.
    pub summary: String,
    /// Whether the policy says anything to judge (`false`: nothing promised).
    pub judged: bool,
    /// The jobs that breached it, the worst first.
    pub jobs: Vec<JobBreach>,
    /// Breaches that are not jobs (a day over the lost-GPU-hours budget).
    pub other: Vec<String>,
}

impl Check {
    /// Jobs and other breaches.
    pub fn breaches(&self) -> usize {
        self.jobs.len() + self.other.len()
    }
    /// `holds`, `breached: 2 jobs, worst j-1 (train-a): waited 42m00s …; j-2 …`, or `not
    /// judged`.
    pub fn verdict(&self) -> String {
        if !self.judged {
            return "not judged".into();
        }
        if self.breaches() == 0 {
            return "holds".into();
        }
        let mut parts = Vec::new();
        if !self.jobs.is_empty() {
            let named: Vec<String> = self
                .jobs
                .iter()
                .take(5)
                .map(|j| format!("{} ({}): {}", j.job_id, j.name, j.detail))
                .collect();
            let more = self.jobs.len().saturating_sub(5);
            parts.push(format!(
                "{} job(s), worst {}{}",
                self.jobs.len(),
                named.join("; "),
                if more > 0 {
                    format!("; and {more} more")
                } else {
                    String::new()
                }
            ));
        }
        parts.extend(self.other.iter().cloned());
        format!("breached: {}", parts.join("; "))
    }
    /// `wait: P95 … — holds`.
    pub fn line(&self) -> String {
        format!(
            "{}: {} — {}",
            self.kind.label(),
            self.summary,
            self.verdict()
        )
    }
}

/// One class over the window.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassConformance {
    pub class: String,
    pub jobs: usize,
    pub checks: Vec<Check>,
}

impl ClassConformance {
    /// Breaches over every check (what `/metrics` exports per class).
    pub fn breaches(&self) -> usize {
        self.checks.iter().map(Check::breaches).sum()
    }
}

/// The policy against a window of history.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Conformance {
    pub policy_hash: String,
    pub window: Window,
    pub classes: Vec<ClassConformance>,
    /// Jobs no class claims.
    pub unclassified: Vec<String>,
}

impl Conformance {
    /// Breaches per class, every class of the policy listed.
    pub fn breaches_by_class(&self) -> Vec<(String, usize)> {
        self.classes
            .iter()
            .map(|c| (c.class.clone(), c.breaches()))
            .collect()
    }
}

/// A job's wait from submission to its first capacity, and whether it has had capacity: a job
/// still waiting at the window's end counts its wait so far; one that ended without ever
/// getting capacity has none.
pub fn first_capacity_wait(job: &JobHistory, end: Millis) -> Option<(Millis, bool)> {
    match job.attempts.first().and_then(|a| a.held_from()) {
        Some(s) => Some(((s - job.submitted_at).max(0), true)),
        None if job.outcome == Outcome::Open => Some(((end - job.submitted_at).max(0), false)),
        None => None,
    }
}

fn breach(j: &JobHistory, detail: String, weight: f64) -> JobBreach {
    JobBreach {
        job_id: j.job_id.clone(),
        name: j.name.clone(),
        detail,
        weight,
        still_waiting: false,
    }
}

fn worst_first(mut v: Vec<JobBreach>) -> Vec<JobBreach> {
    v.sort_by(|a, b| b.weight.total_cmp(&a.weight).then(a.job_id.cmp(&b.job_id)));
    v
}

fn wait_check(c: &Class, jobs: &[&JobHistory], window: Window) -> Check {
    let waits: Vec<(&JobHistory, Millis, bool)> = jobs
        .iter()
        .filter_map(|j| first_capacity_wait(j, window.end).map(|(w, s)| (*j, w, s)))
        .collect();
    let mut sorted: Vec<Millis> = waits.iter().map(|(_, w, _)| *w).collect();
    sorted.sort_unstable();
    let p95 = percentile(&sorted, 95.0);
    let p95_text = p95.map_or_else(|| "no waits".to_string(), format_duration);
    let Some(max) = c.promise.max_wait_ms else {
        return Check {
            kind: CheckKind::Wait,
            summary: format!("P95 wait to first capacity {p95_text}; no wait promised"),
            judged: false,
            jobs: vec![],
            other: vec![],
        };
    };
    let over = waits
        .iter()
        .filter(|(_, w, _)| *w > max)
        .map(|(j, w, started)| {
            let how = if *started {
                "waited"
            } else {
                "still waiting after"
            };
            JobBreach {
                still_waiting: !*started,
                ..breach(j, format!("{how} {}", format_duration(*w)), *w as f64)
            }
        })
        .collect();
    Check {
        kind: CheckKind::Wait,
        summary: format!(
            "P95 wait to first capacity {p95_text}, promise {}",
            format_duration(max)
        ),
        judged: true,
        jobs: worst_first(over),
        other: vec![],
    }
}

fn deadline_check(
    c: &Class,
    jobs: &[&JobHistory],
    window: Window,
    opts: &ScorecardOptions,
) -> Check {
    let Some(factor) = c.promise.deadline_factor else {
        return Check {
            kind: CheckKind::Deadlines,
            summary: "no deadline promised".into(),
            judged: false,
            jobs: vec![],
            other: vec![],
        };
    };
    let mut with = 0;
    let mut missed = Vec::new();
    for j in jobs {
        // A job's work is known once it succeeded (its productive running time).
        let Outcome::Succeeded(done) = j.outcome else {
            continue;
        };
        with += 1;
        let work = job_ledger(j, window, opts).productive.max(0);
        let due = j
            .submitted_at
            .saturating_add((work as f64 * factor).min(Millis::MAX as f64 / 4.0) as Millis);
        if !Deadline::FinishBy(due).met(j) {
            let late = done - due;
            missed.push(breach(
                j,
                format!("succeeded {} after its deadline", format_duration(late)),
                late as f64,
            ));
        }
    }
    Check {
        kind: CheckKind::Deadlines,
        summary: format!(
            "{} of {with} succeeded job(s) late (deadline {factor}× its work)",
            missed.len()
        ),
        judged: true,
        jobs: worst_first(missed),
        other: vec![],
    }
}

fn budget_check(c: &Class, jobs: &[&JobHistory], window: Window, opts: &ScorecardOptions) -> Check {
    let b = &c.budget;
    let judged = b.max_preemptions_per_job.is_some() || b.max_lost_gpu_hours_per_day.is_some();
    let preemptions = |j: &JobHistory| {
        j.attempts
            .iter()
            .filter(|a| a.end == AttemptEnd::Preempted)
            .count()
    };
    let total: usize = jobs.iter().map(|j| preemptions(j)).sum();
    let mut over = Vec::new();
    if let Some(max) = b.max_preemptions_per_job {
        for j in jobs {
            let n = preemptions(j);
            if n > max as usize {
                over.push(breach(
                    j,
                    format!("preempted {n} time(s), budget {max}"),
                    n as f64,
                ));
            }
        }
    }
    let mut days = Vec::new();
    if let Some(max) = b.max_lost_gpu_hours_per_day {
        let hit: Vec<&JobHistory> = jobs
            .iter()
            .copied()
            .filter(|j| preemptions(j) > 0)
            .collect();
        let mut start = window.start;
        while start < window.end && !hit.is_empty() {
            let day = Window::new(start, start.saturating_add(DAY_MS).min(window.end));
            let lost = ledger::ledger(&hit, day, opts).waste_gpu_hours();
            if lost > max + 1e-9 {
                days.push(format!(
                    "{lost:.1} GPU-h lost on the day from {} (budget {max})",
                    quotatop_model::format_utc(start)
                ));
            }
            start = day.end;
        }
    }
    Check {
        kind: CheckKind::Budget,
        summary: format!("{total} preemption(s), budget {}", c.budget_text()),
        judged,
        jobs: worst_first(over),
        other: days,
    }
}

/// Jobs of the class outside its shares or its priority range.
fn outside_check(c: &Class, jobs: &[(&JobHistory, Basis)]) -> Check {
    let mut out = Vec::new();
    for (j, _) in jobs {
        let mut why = Vec::new();
        if !c.shares.contains(&j.share) {
            why.push(format!("in share {}, not {}", j.share, c.shares.join(", ")));
        }
        if !c.priority.contains(j.priority) {
            why.push(format!("priority {} outside {}", j.priority, c.priority));
        }
        if !why.is_empty() {
            out.push(breach(j, why.join(", "), why.len() as f64));
        }
    }
    Check {
        kind: CheckKind::Outside,
        summary: format!("shares {}, priority {}", c.shares.join(", "), c.priority),
        judged: true,
        jobs: worst_first(out),
        other: vec![],
    }
}

/// Priority changes of the class's jobs, per operator; a change by an operator the class does
/// not allow, or without a change record where the class needs one, is a breach.
fn exceptions_check(c: &Class, jobs: &[&JobHistory], changes: &[&PriorityChange]) -> Check {
    let mut per_operator: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = Vec::new();
    for ch in changes {
        let Some(j) = jobs.iter().find(|j| j.job_id == ch.job_id) else {
            continue;
        };
        let op = ch.operator.clone().unwrap_or_else(|| "(unknown)".into());
        *per_operator.entry(op.clone()).or_default() += 1;
        let user = op.split('@').next().unwrap_or(&op);
        let mut why = Vec::new();
        if !c.allows([op.as_str(), user].into_iter()) {
            why.push(format!(
                "{} → {} by {op}, who may not use {}",
                ch.old, ch.new, c.name
            ));
        }
        if c.change_record && ch.change_record.is_none() {
            why.push(format!(
                "{} → {} by {op} without a change record",
                ch.old, ch.new
            ));
        }
        if !why.is_empty() {
            out.push(breach(j, why.join(", "), ch.at as f64));
        }
    }
    let summary = if per_operator.is_empty() {
        "none".to_string()
    } else {
        per_operator
            .iter()
            .map(|(o, n)| format!("{o} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    Check {
        kind: CheckKind::Exceptions,
        summary,
        judged: true,
        jobs: out,
        other: vec![],
    }
}

/// The policy against `input` (the journal's histories over its window): `changes` are the
/// window's priority changes (observed and audited, joined), `tags` each job's class tag when
/// known.
pub fn conformance(
    policy: &Policy,
    input: &ScorecardInput,
    opts: &ScorecardOptions,
    changes: &[PriorityChange],
    tags: &BTreeMap<String, String>,
) -> Conformance {
    let window = input.window;
    let mut by_class: Vec<Vec<(&JobHistory, Basis)>> = vec![Vec::new(); policy.classes.len()];
    let mut unclassified = Vec::new();
    for j in &input.jobs {
        let tag = tags.get(&j.job_id).map(String::as_str);
        match class_of(policy, tag, &j.share, j.priority) {
            Some(m) => {
                let i = policy
                    .classes
                    .iter()
                    .position(|c| c.name == m.class.name)
                    .unwrap_or_default();
                by_class[i].push((j, m.basis));
            }
            None => unclassified.push(j.job_id.clone()),
        }
    }
    let changes: Vec<&PriorityChange> = changes.iter().filter(|c| window.contains(c.at)).collect();
    let classes = policy
        .classes
        .iter()
        .zip(&by_class)
        .map(|(c, members)| {
            let jobs: Vec<&JobHistory> = members.iter().map(|(j, _)| *j).collect();
            ClassConformance {
                class: c.name.clone(),
                jobs: jobs.len(),
                checks: vec![
                    wait_check(c, &jobs, window),
                    deadline_check(c, &jobs, window, opts),
                    budget_check(c, &jobs, window, opts),
                    outside_check(c, members),
                    exceptions_check(c, &jobs, &changes),
                ],
            }
        })
        .collect();
    Conformance {
        policy_hash: policy.hash.clone(),
        window,
        classes,
        unclassified,
    }
}

/// One breached check of one class, in words, for the console's "needs attention" panel:
/// `incident: 2 job(s) waiting over their 15m00s promise, worst train-a: still waiting after
/// 20m00s` (the job by its name; with its id, `train-a (j-1)`, where two have that name).
#[derive(Debug, Clone, PartialEq)]
pub struct BreachItem {
    pub class: String,
    pub kind: CheckKind,
    pub text: String,
    /// The worst job, when the breach is jobs'.
    pub job: Option<String>,
    /// The class's first share (where the breach shows on the overview).
    pub share: Option<String>,
}

/// Every breached check of `c`, one item each, in the policy's class order: what the console's
/// attention panel lists (from the same [`Conformance`] `policy check` prints).
pub fn breach_items(c: &Conformance, policy: &Policy) -> Vec<BreachItem> {
    let mut out = Vec::new();
    for k in &c.classes {
        let class = policy.class(&k.class);
        for check in k.checks.iter().filter(|ch| ch.judged && ch.breaches() > 0) {
            let n = check.jobs.len();
            let what = match check.kind {
                CheckKind::Wait => {
                    let promise = class
                        .and_then(|cl| cl.promise.max_wait_ms)
                        .map_or_else(String::new, |ms| format!(" {}", format_duration(ms)));
                    let verb = if check.jobs.iter().any(|j| j.still_waiting) {
                        "waiting"
                    } else {
                        "waited"
                    };
                    format!("{n} job(s) {verb} over their{promise} promise")
                }
                CheckKind::Deadlines => format!("{n} job(s) past their deadline"),
                CheckKind::Budget => {
                    format!("{} breach(es) of its interruption budget", check.breaches())
                }
                CheckKind::Outside => format!("{n} job(s) outside its shares or priority range"),
                CheckKind::Exceptions => format!("{n} priority change(s) against its rules"),
            };
            let worst = match (check.jobs.first(), check.other.first()) {
                (Some(j), _) => format!(", worst {}: {}", worst_label(j, &check.jobs), j.detail),
                (None, Some(o)) => format!(": {o}"),
                (None, None) => String::new(),
            };
            out.push(BreachItem {
                class: k.class.clone(),
                kind: check.kind,
                text: format!("{}: {what}{worst}", k.class),
                job: check.jobs.first().map(|j| j.job_id.clone()),
                share: class.and_then(|cl| cl.shares.first().cloned()),
            });
        }
    }
    out
}

/// How an attention item names the worst job: by its name, which a person knows it by, with
/// its id after it where another job of the same check has that name (its id alone where it has
/// none).
fn worst_label(worst: &JobBreach, jobs: &[JobBreach]) -> String {
    let repeated = jobs
        .iter()
        .any(|j| j.job_id != worst.job_id && j.name == worst.name);
    if worst.name.trim().is_empty() {
        worst.job_id.clone()
    } else if repeated {
        format!("{} ({})", worst.name, worst.job_id)
    } else {
        worst.name.clone()
    }
}

/// The conformance as a Markdown section (what `policy check` prints and `report` includes).
pub fn markdown(c: &Conformance, policy: &Policy) -> String {
    let mut out = format!(
        "## Policy conformance\n\nPolicy {} (sha256 {}), {} to {}. A job's class: its `{}` tag, else its share, else its priority range.\n",
        policy.origin,
        policy.short_hash(),
        quotatop_model::format_utc(c.window.start),
        quotatop_model::format_utc(c.window.end),
        crate::file::CLASS_TAG,
    );
    for k in &c.classes {
        out.push_str(&format!(
            "\n### {} — {} job(s), {}\n\n",
            k.class,
            k.jobs,
            if k.breaches() == 0 {
                "holds".to_string()
            } else {
                format!("{} breach(es)", k.breaches())
            }
        ));
        for check in &k.checks {
            out.push_str(&format!("- {}\n", check.line()));
        }
    }
    if !c.unclassified.is_empty() {
        out.push_str(&format!(
            "\n{} job(s) in no class: {}\n",
            c.unclassified.len(),
            c.unclassified.join(", ")
        ));
    }
    out
}

#[cfg(test)]
#[path = "conformance_tests.rs"]
mod tests;
