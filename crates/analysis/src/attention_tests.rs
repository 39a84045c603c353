use super::*;
use crate::fixture::{job, queue};
use crate::{LoopRule, dispatch_order, preemptions, share_usage};
use quotatop_engine::Misconfiguration;
use quotatop_model::{JobStatus, PreemptedAttempt, PreemptionSummary, SharingConfig, TrackedJob};

const P4D: &str = "ml.p4d.24xlarge";
const G5: &str = "ml.g5.12xlarge";

fn preempted(mut j: TrackedJob, count: u32, stops: &[Millis]) -> TrackedJob {
    std::sync::Arc::make_mut(&mut j.job).preemption = Some(PreemptionSummary {
        preempted_attempt_count: count,
        recent_preempted_attempts: stops
            .iter()
            .map(|&s| PreemptedAttempt {
                resource_id: format!("r{s}"),
                started_at: Some(s - 600_000),
                stopped_at: s,
                status_reason: "Cross-share preemption".into(),
            })
            .collect(),
    });
    j
}

fn misconfigured(mut j: TrackedJob, reason: &str) -> TrackedJob {
    std::sync::Arc::make_mut(&mut j.job).status_reason = Some(reason.into());
    j
}

const LIMIT: &str = "MISCONFIGURATION:QUOTA_MANAGEMENT_LIMIT_EXCEEDED - Job requirements exceed quota share capacity limits.";

fn items(q: &QueueSnapshot, rule: &LoopRule) -> Vec<Attention> {
    attention(
        q,
        &share_usage(q),
        &dispatch_order(q),
        &preemptions(q, rule),
    )
}

/// research borrows 2 of prod's p4d; regulated (RESERVE) is full with work waiting.
fn world() -> QueueSnapshot {
    let mut q = queue(&[
        ("research", P4D, 4, SharingConfig::lend_and_borrow(200)),
        ("prod", P4D, 4, SharingConfig::lend()),
        ("regulated", P4D, 2, SharingConfig::reserve()),
    ]);
    q.jobs = vec![
        preempted(
            job("looper", "research", P4D, 6, JobStatus::Running, 1, 0),
            4,
            &[500_000, 900_000],
        ),
        preempted(
            job("once", "research", P4D, 1, JobStatus::Runnable, 1, 0),
            1,
            &[100_000],
        ),
        job("held", "regulated", P4D, 2, JobStatus::Running, 1, 0),
        job(
            "behind",
            "regulated",
            P4D,
            1,
            JobStatus::Runnable,
            1,
            10_000,
        ),
        misconfigured(
            job(
                "oversized",
                "regulated",
                P4D,
                4,
                JobStatus::Runnable,
                1,
                20_000,
            ),
            LIMIT,
        ),
        job("urgent", "prod", P4D, 1, JobStatus::Runnable, 6000, 400_000),
        job("high", "prod", P4D, 1, JobStatus::Runnable, 1000, 100_000),
    ];
    q
}

#[test]
fn nothing_to_report_in_a_quiet_queue() {
    let mut q = queue(&[("a", P4D, 4, SharingConfig::lend())]);
    q.jobs = vec![job("j", "a", P4D, 1, JobStatus::Running, 1, 0)];
    assert!(items(&q, &LoopRule::default()).is_empty());
    assert!(share_badges(&share_usage(&q), &[]).is_empty());
}

#[test]
fn every_kind_is_found_and_ranked_by_urgency() {
    let q = world();
    let got = items(&q, &LoopRule::default());
    let kinds: Vec<(AttentionKind, &str)> = got
        .iter()
        .map(|a| {
            (
                a.kind,
                match &a.target {
                    AttentionTarget::Job(id) | AttentionTarget::Share(id) => id.as_str(),
                },
            )
        })
        .collect();
    assert_eq!(
        kinds,
        vec![
            (AttentionKind::Loop, "id-looper"),
            // Critical before high, whatever the wait; waiting work (a cost now) before a job
            // that can never run.
            (AttentionKind::ImportantWait, "id-urgent"),
            (AttentionKind::ImportantWait, "id-high"),
            (AttentionKind::Misconfigured, "id-oversized"),
            // Not "regulated at its limit 2/2 while prod lends 2 to research": a RESERVE share
            // cannot borrow, so what others lend does not concern it.
        ]
    );
    // A job preempted once is not a loop.
    assert!(!got.iter().any(|a| a.text.contains("once")));
    assert_eq!(
        got[3].text,
        "oversized (regulated) needs 4 ml.p4d.24xlarge; share regulated may hold at most 2 (RESERVE shares do not borrow)"
    );
    assert!(got[0].text.contains("preempted 4×"), "{}", got[0].text);
    assert!(got[0].text.contains("no retry cap"), "{}", got[0].text);
    // The remedy's key is the console's to name (its keymap may rebind it).
    assert!(!got[0].text.contains("press"), "{}", got[0].text);
    assert_eq!(
        super::requeue_hint("R"),
        "press R to requeue it with a retry cap"
    );
    assert!(
        got[1].text.contains("critical priority 6000"),
        "{}",
        got[1].text
    );
    assert_eq!(got[1].waiting_ms, Some(600_000));
}

/// Issue 29 §2.10: "at its limit while X lends" only for a share that could borrow: not for
/// LEND or RESERVE shares, nor for a borrower that has borrowed all its limit allows.
#[test]
fn at_limit_only_for_shares_that_could_borrow() {
    let at_limit = |team: SharingConfig, running: u32| {
        let mut q = queue(&[
            ("team", P4D, 2, team),
            ("prod", P4D, 4, SharingConfig::lend()),
            ("research", P4D, 2, SharingConfig::lend_and_borrow(200)),
        ]);
        q.environment.capacity = vec![quotatop_model::CapacityLimit::new(P4D, 10)];
        q.jobs = vec![
            job("held", "team", P4D, running, JobStatus::Running, 1, 0),
            job("waits", "team", P4D, 1, JobStatus::Runnable, 1, 10_000),
            job("borrower", "research", P4D, 4, JobStatus::Running, 1, 0),
        ];
        items(&q, &LoopRule::default())
            .into_iter()
            .filter(|a| a.kind == AttentionKind::AtLimit)
            .map(|a| a.text)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        at_limit(SharingConfig::lend_and_borrow(100), 2),
        ["team at its limit 2/2 p4d.24xlarge with 1 job waiting while prod lends 2 to research"]
    );
    assert!(at_limit(SharingConfig::lend(), 2).is_empty());
    assert!(at_limit(SharingConfig::reserve(), 2).is_empty());
    assert!(at_limit(SharingConfig::lend_and_borrow(0), 2).is_empty());
    // Borrowing 2 of the 2 its 100% allows: nothing more to borrow.
    assert!(at_limit(SharingConfig::lend_and_borrow(100), 4).is_empty());
}

#[test]
fn over_budget_outranks_a_loop_and_replaces_it() {
    let mut q = world();
    q.jobs.push(preempted(
        job("budget", "prod", P4D, 1, JobStatus::Runnable, 1, 0),
        2,
        &[100_000],
    ));
    let mut rule = LoopRule::default();
    rule.preemption_budgets.insert("prod".into(), 1);
    let got = items(&q, &rule);
    assert_eq!(got[0].kind, AttentionKind::OverBudget);
    assert_eq!(got[0].target, AttentionTarget::Job("id-budget".into()));
    assert!(
        got[0].text.contains("over its budget of 1"),
        "{}",
        got[0].text
    );
    assert_eq!(got[1].kind, AttentionKind::Loop);
    // Loops rank by preemptions, most first.
    q.jobs.push(preempted(
        job("worse", "research", P4D, 1, JobStatus::Runnable, 1, 0),
        9,
        &[],
    ));
    let got = items(&q, &LoopRule::default());
    assert_eq!(got[0].target, AttentionTarget::Job("id-worse".into()));
    assert_eq!(got[1].target, AttentionTarget::Job("id-looper".into()));
}

#[test]
fn finished_jobs_need_no_attention() {
    let mut q = world();
    std::sync::Arc::make_mut(&mut q.jobs[0].job).status = JobStatus::Succeeded;
    let got = items(&q, &LoopRule::default());
    assert!(!got.iter().any(|a| a.kind == AttentionKind::Loop));
}

#[test]
fn misconfiguration_reasons_in_words() {
    let mut q = queue(&[
        ("lb", G5, 2, SharingConfig::lend_and_borrow(100)),
        ("other", G5, 1, SharingConfig::lend()),
    ]);
    q.environment.capacity = vec![quotatop_model::CapacityLimit::new(G5, 8)];
    q.jobs = vec![
        misconfigured(
            job("big", "lb", G5, 5, JobStatus::Runnable, 1, 0),
            Misconfiguration::ExceedsShareAndBorrowLimit.reason(),
        ),
        // A reason the service did not word as AWS documents: the engine's check decides.
        misconfigured(
            job("lend", "lb", G5, 4, JobStatus::Runnable, 1, 0),
            "MISCONFIGURATION",
        ),
        misconfigured(
            job("env", "lb", G5, 9, JobStatus::Runnable, 1, 0),
            "MISCONFIGURATION:SERVICE_ENVIRONMENT_MAX_RESOURCE - no",
        ),
    ];
    let d = dispatch_order(&q);
    let say =
        |name: &str| misconfiguration_in_words(&q, d.iter().find(|j| j.name == name).expect("job"));
    assert_eq!(
        say("big"),
        "needs 5 ml.g5.12xlarge; share lb may hold at most 4 (limit 2 + borrow 100%)"
    );
    assert_eq!(
        say("lend"),
        "needs 4 ml.g5.12xlarge; share lb has 2 of its own and the other shares lend at most 1"
    );
    assert_eq!(
        say("env"),
        "needs 9 ml.g5.12xlarge; the service environment has 8"
    );
}

#[test]
fn badges_count_loops_misconfigurations_and_borrowing_by_partner() {
    let q = world();
    let usage = share_usage(&q);
    let got = share_badges(&usage, &items(&q, &LoopRule::default()));
    let research = &got["research"];
    assert_eq!(research.loops, 1);
    assert_eq!(research.borrows_from, vec![("prod".to_string(), 2)]);
    assert_eq!(got["prod"].lends_to, vec![("research".to_string(), 2)]);
    assert_eq!(got["regulated"].misconfigured, 1);
    let labels: Vec<String> = research.labels().into_iter().map(|(_, l)| l).collect();
    assert_eq!(labels, vec!["LOOP 1", "← prod 2"]);
    let labels: Vec<String> = got["prod"].labels().into_iter().map(|(_, l)| l).collect();
    assert_eq!(labels, vec!["→ research 2"]);
}

#[test]
fn a_loop_of_a_job_larger_than_its_own_limit_names_the_cause() {
    let q = world();
    let got = items(&q, &LoopRule::default());
    let looper = got
        .iter()
        .find(|a| a.kind == AttentionKind::Loop)
        .expect("the looper is flagged");
    assert!(
        looper.text.contains(
            "cause: needs 6 × ml.p4d.24xlarge but share research's own limit is 4: it always runs partly on borrowed capacity"
        ),
        "{}",
        looper.text
    );
    // Within its own limit, no such cause.
    let mut q = world();
    std::sync::Arc::make_mut(&mut q.jobs[0].job).instance_count = 4;
    let got = items(&q, &LoopRule::default());
    let looper = got.iter().find(|a| a.kind == AttentionKind::Loop).unwrap();
    assert!(!looper.text.contains("cause:"), "{}", looper.text);
    // A share that cannot borrow never runs a job over its limit: no cause either.
    let job = &q.jobs[0].job;
    assert_eq!(crate::over_own_limit(&q, job), None);
    let mut big = (**job).clone();
    big.instance_count = 6;
    big.share = "prod".into();
    assert_eq!(crate::over_own_limit(&q, &big), None);
    big.share = "research".into();
    let over = crate::over_own_limit(&q, &big).unwrap();
    assert_eq!((over.needs, over.own), (6, 4));
    assert!(over.remedies()[0].contains("4 or fewer ml.p4d.24xlarge"));
}

/// A looping job that waits at high priority is one item, its loop (cause and remedy), not a
/// second line for its wait: at 80×24 the duplicate pushed the loop's cause off the panel.
#[test]
fn a_looping_job_waiting_at_high_priority_is_named_once() {
    let mut q = world();
    q.jobs.push(preempted(
        job(
            "hot-loop",
            "research",
            P4D,
            1,
            JobStatus::Runnable,
            1000,
            50_000,
        ),
        5,
        &[300_000, 700_000, 950_000],
    ));
    let got = items(&q, &LoopRule::default());
    let named: Vec<&Attention> = got
        .iter()
        .filter(|a| a.target == AttentionTarget::Job("id-hot-loop".into()))
        .collect();
    assert_eq!(named.len(), 1, "{got:#?}");
    assert_eq!(named[0].kind, AttentionKind::Loop);
    // Other waiting work is still named.
    assert!(got.iter().any(|a| a.kind == AttentionKind::ImportantWait
        && a.target == AttentionTarget::Job("id-high".into())));
}
