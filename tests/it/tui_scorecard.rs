//! The Scorecard screen through the real loop: a fixed scorecard comes back from an injected
//! service (no journal file), and the "history unavailable" state without one.

use std::sync::Arc;

use crate::tui_support::{G5, options, run, run_services, screen_text, snapshot, typed};
use insta::assert_snapshot;
use quotatop_analysis::scorecard::{
    AttemptEnd, AttemptHistory, Entitlement, JobHistory, Outcome, ScorecardInput, ScorecardOptions,
    Window,
};
use quotatop_model::{CapacityLimit, Millis};
use quotatop_tui::effects::Services;
use quotatop_tui::scorecard::{self, ScorecardResult, ScorecardState};
use quotatop_tui::screen::Kind;
use quotatop_tui::{History, StatusInfo};

const H: Millis = 3_600_000;

fn job(id: &str, share: &str, count: u32) -> JobHistory {
    JobHistory {
        job_id: id.into(),
        name: id.into(),
        share: share.into(),
        priority: 10,
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

fn attempt(s: Millis, stop: Millis, end: AttemptEnd) -> AttemptHistory {
    AttemptHistory {
        scheduled_at: Some(s),
        started_at: Some(s),
        stopped_at: Some(stop),
        preempting_from: None,
        restored: None,
        restored_at: None,
        end,
    }
}

/// research: one job waits 1 h, runs 1–3 h, succeeds. inference: one job runs 0.5–1.5 h, is
/// preempted, runs again 2–3.5 h and succeeds. Queue capacity 4 g5 instances, 2 each.
fn fixed() -> scorecard::ScorecardView {
    scorecard::view(&fixed_input(), &ScorecardOptions::default())
}

fn fixed_input() -> ScorecardInput {
    let mut a = job("A", "research", 1);
    a.attempts = vec![attempt(H, 3 * H, AttemptEnd::Completed)];
    a.outcome = Outcome::Succeeded(3 * H);
    let mut b = job("B", "inference", 2);
    b.runnable_at = vec![0, 3 * H / 2];
    b.attempts = vec![
        attempt(H / 2, 3 * H / 2, AttemptEnd::Preempted),
        attempt(2 * H, 7 * H / 2, AttemptEnd::Completed),
    ];
    b.outcome = Outcome::Succeeded(7 * H / 2);
    ScorecardInput {
        queue: "ml-training".into(),
        window: Window::new(0, 4 * H),
        capacity: vec![CapacityLimit::new(G5, 4)],
        entitlements: ["research", "inference"]
            .into_iter()
            .map(|s| Entitlement {
                share: s.into(),
                limits: vec![CapacityLimit::new(G5, 2)],
            })
            .collect(),
        jobs: vec![a, b],
    }
}

fn services() -> Services {
    let view = fixed();
    Services {
        scorecard: Some(Arc::new(
            move |queue: &str, _as_of: Option<quotatop_model::Millis>| ScorecardResult {
                queue: queue.to_string(),
                result: Ok(Box::new(view.clone())),
            },
        )),
        ..Services::default()
    }
}

#[tokio::test]
async fn scorecard_screen_draws_the_computed_result() {
    let (t, app) = run_services(
        110,
        24,
        options(),
        snapshot(),
        typed(":scorecard\n"),
        services(),
    )
    .await;
    assert_eq!(app.screen_kind(), Kind::Scorecard);
    assert!(matches!(app.scorecard(), ScorecardState::Ready(_)));
    assert_snapshot!(t.backend());
}

#[tokio::test]
async fn key_4_opens_the_scorecard() {
    let (_, app) = run_services(110, 24, options(), snapshot(), typed("4"), services()).await;
    assert_eq!(app.screen_kind(), Kind::Scorecard);
}

#[tokio::test]
async fn without_history_the_screen_and_status_bar_say_so() {
    let mut opts = options();
    opts.status = StatusInfo {
        history: History::Unavailable,
        ..StatusInfo::default()
    };
    // Services that would answer are not asked: there is no history to compute from.
    let (t, app) = run_services(100, 24, opts, snapshot(), typed(":scorecard\n"), services()).await;
    assert_eq!(app.scorecard(), &ScorecardState::Unavailable);
    let s = screen_text(&t);
    assert!(s.contains("history unavailable"), "{s}");
    assert_snapshot!(t.backend());
}

#[tokio::test]
async fn a_console_without_a_scorecard_service_shows_history_unavailable() {
    let (t, app) = run(100, 24, options(), typed(":scorecard\n")).await;
    assert_eq!(app.scorecard(), &ScorecardState::Unavailable);
    assert!(screen_text(&t).contains("history unavailable"));
}

/// The real service: the fixture snapshot journaled to a file, the scorecard computed from it
/// through the loop's blocking task, and drawn.
#[tokio::test]
async fn the_journal_service_computes_from_a_journal_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite3");
    let mut j = quotatop_store::journal::Journal::open(&path, Default::default()).unwrap();
    j.record(&snapshot()).unwrap();
    // A priority raise the poller sees, which the audit log says oncall@ops-1 made.
    let mut second = snapshot();
    second.taken_at += 5_000;
    second.sequence += 1;
    let raised = second.queues[0]
        .jobs
        .iter_mut()
        .find(|j| j.job.status == quotatop_model::JobStatus::Runnable)
        .unwrap();
    let (id, name, share, old) = (
        raised.job.id.clone(),
        raised.job.name.clone(),
        raised.job.share.clone(),
        raised.job.priority,
    );
    std::sync::Arc::make_mut(&mut raised.job).priority = old + 500;
    j.record(&second).unwrap();
    drop(j);
    let log = quotatop_store::audit::AuditLog::new(dir.path().join("audit.jsonl"));
    for (kind, outcome) in [
        (quotatop_store::audit::RecordKind::Intent, None),
        (
            quotatop_store::audit::RecordKind::Outcome,
            Some(quotatop_store::audit::Outcome::Succeeded { request_id: None }),
        ),
    ] {
        log.append(quotatop_store::audit::AuditRecord {
            v: 2,
            seq: 0,
            time: "2026-02-02T02:40:00Z".into(),
            kind,
            change_id: "c1".into(),
            operator: quotatop_store::audit::Operator {
                user: "oncall".into(),
                host: "ops-1".into(),
                ..Default::default()
            },
            aws: Default::default(),
            queue: "ml-training".into(),
            share: share.clone(),
            job: quotatop_store::audit::JobRef {
                id: id.clone(),
                name: name.clone(),
                arn: String::new(),
            },
            old_priority: old,
            new_priority: old + 500,
            justification: "deadline".into(),
            change_record: None,
            preview: String::new(),
            outcome,
            policy: None,
            repair: None,
            action: None,
            class_policy: None,
            batch_id: None,
            prev_hash: String::new(),
            hash: String::new(),
        })
        .unwrap();
    }
    let settings = quotatop::services::ScorecardSettings {
        audit_log: Some(log.clone().into()),
        ..Default::default()
    };
    let services = Services {
        scorecard: Some(quotatop::services::journal_scorecard(path, settings)),
        ..Services::default()
    };
    let (t, app) = run_services(110, 24, options(), snapshot(), typed("4"), services).await;
    let ScorecardState::Ready(view) = app.scorecard() else {
        panic!("{:?}\n{}", app.scorecard(), screen_text(&t));
    };
    assert_eq!(view.card.queue, "ml-training");
    assert!(
        view.card
            .shares
            .iter()
            .any(|r| r.scope.label() == "share research")
    );
    assert!(screen_text(&t).contains("research"));
    // The exceptions: the observed raise, joined with the audit log's operator.
    let ops = &view.exceptions.per_operator;
    assert_eq!(ops.len(), 1, "{ops:?}");
    assert_eq!(
        (
            ops[0].operator.as_str(),
            ops[0].changes,
            ops[0].without_change_record
        ),
        ("oncall@ops-1", 1, 1)
    );
    assert!(
        screen_text(&t).contains(&format!("oncall@ops-1 · {share} · 1 / 1 / 1")),
        "{}",
        screen_text(&t)
    );
}

/// A queue observed for 30 minutes, its one share at its limit the whole time: two jobs on its
/// two instances, both succeeding at the last observation.
fn half_hour_at_the_limit(path: &std::path::Path) -> (Millis, Millis) {
    use quotatop_model::{
        Attempt, JobStatus, QueueSnapshot, QuotaShare, ServiceEnvironment, ServiceJob,
        SharingConfig, Snapshot, TrackedJob,
    };
    let first = crate::tui_support::NOW - 30 * 60_000 - 2_000;
    let last = crate::tui_support::NOW - 2_000;
    let job = |i: u32, status: JobStatus| ServiceJob {
        id: format!("job-{i}"),
        name: format!("train-{i}"),
        share: "research".into(),
        priority: 10,
        instance_type: G5.into(),
        instance_count: 1,
        status,
        status_reason: None,
        created_at: first,
        scheduled_at: Some(first),
        started_at: Some(first),
        stopped_at: (status == JobStatus::Succeeded).then_some(last),
        preemption_retries: None,
        class_tag: None,
        preemption: None,
        attempts: vec![Attempt {
            resource_id: format!("tj-{i}"),
            started_at: Some(first),
            stopped_at: (status == JobStatus::Succeeded).then_some(last),
            status_reason: None,
        }],
        checkpoint_interval_ms: None,
        is_terminated: status == JobStatus::Succeeded,
        extras: Default::default(),
    };
    let snap = |t: Millis, status: JobStatus| Snapshot {
        taken_at: t,
        sequence: t as u64,
        queues: vec![QueueSnapshot {
            name: "ml-training".into(),
            environment: ServiceEnvironment {
                name: "se".into(),
                capacity: vec![CapacityLimit::new(G5, 2)],
            },
            shares: vec![QuotaShare::new(
                "research",
                vec![CapacityLimit::new(G5, 2)],
                SharingConfig::reserve(),
            )],
            jobs: (1..=2)
                .map(|i| TrackedJob {
                    job: job(i, status).into(),
                    arn: format!("arn-{i}"),
                    described_at: Some(t),
                    listed_at: t,
                })
                .collect(),
            server_time: Some(t),
            ..Default::default()
        }],
        ..Default::default()
    };
    let mut j = quotatop_store::journal::Journal::open(path, Default::default()).unwrap();
    j.record(&snap(first, JobStatus::Running)).unwrap();
    j.record(&snap(first + 15 * 60_000, JobStatus::Running))
        .unwrap();
    j.record(&snap(last, JobStatus::Succeeded)).unwrap();
    (first, last)
}

/// Half an hour of history under a 24 h window: the scorecard covers the half hour observed
/// (not 23 h 30 min before anything was seen), says so, reads 100 % for a share at its limit,
/// and its sparkline's buckets all fall inside the observed span.
#[tokio::test]
async fn a_short_history_is_the_window_and_the_screen_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite3");
    let (first, last) = half_hour_at_the_limit(&path);
    let services = Services {
        scorecard: Some(quotatop::services::journal_scorecard(
            path,
            quotatop::services::ScorecardSettings::default(),
        )),
        ..Services::default()
    };
    let (t, app) = run_services(120, 24, options(), snapshot(), typed("4"), services).await;
    let text = screen_text(&t);
    let ScorecardState::Ready(view) = app.scorecard() else {
        panic!("{:?}\n{text}", app.scorecard());
    };
    // Half-open, from the first observation to just after the last.
    assert_eq!(
        (view.card.window.start, view.card.window.end),
        (first, last + 1),
        "{text}"
    );
    assert_eq!(view.asked_ms, scorecard::WINDOW_MS);
    assert!(
        text.contains("Scorecard · ml-training · 30m00s of history (window 1d00h) to"),
        "{text}"
    );
    assert!(
        text.contains(
            "queue, 30m00s of history: util 100.0% (finished work) · capacity held 100.0%"
        ),
        "{text}"
    );
    let research = text
        .lines()
        .find(|l| l.contains("│research"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(research.contains("100.0%"), "{research}");
    // Every bucket of the series is at the limit: none lies before the first observation.
    assert!(research.contains(&"█".repeat(24)), "{research}");
    let (_, series) = &view.series[0];
    assert_eq!(series.len(), 24);
}

/// With an interruption budget of 0 preemptions for inference and a 2 h deadline, the Scorecard
/// says in words that the budget is breached, and by whom, and counts the missed deadline.
#[tokio::test]
async fn a_breached_interruption_budget_is_said_in_words() {
    use quotatop_analysis::scorecard::decision::{self, Budget, DeadlineRule, Rules};
    let mut view = fixed();
    let mut rules = Rules::default();
    rules.budgets.insert(
        "inference".into(),
        Budget {
            max_preemptions_per_job: Some(0),
            max_lost_gpu_hours_per_day: None,
        },
    );
    rules.deadlines.insert(
        "*".into(),
        DeadlineRule {
            deadline_factor: None,
            max_wait_s: Some(1800),
        },
    );
    // The input the view was made from, evaluated as `compute` does.
    let input = fixed_input();
    view.evaluation = decision::evaluate_observed(&input, &ScorecardOptions::default(), &rules);
    view.rules_set = true;
    let breached = Services {
        scorecard: Some(Arc::new(
            move |queue: &str, _as_of: Option<quotatop_model::Millis>| ScorecardResult {
                queue: queue.to_string(),
                result: Ok(Box::new(view.clone())),
            },
        )),
        ..Services::default()
    };
    let (t, _) = run_services(130, 24, options(), snapshot(), typed("4"), breached).await;
    let s = screen_text(&t);
    assert!(
        s.contains("BUDGET BREACHED: inference 1 job(s) over its preemption budget"),
        "{s}"
    );
    // A waited 1 h for a 30 min start deadline; B started at once.
    assert!(s.contains("deadlines missed 1/2"), "{s}");
    // Without rules the screen says how to set them, and where a policy's are judged (it
    // said "none set" while the Policy screen judged the policy's deadlines and budgets).
    let (t, _) = run_services(130, 24, options(), snapshot(), typed("4"), services()).await;
    let text = screen_text(&t)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        text.contains("no deadlines or interruption budgets in the config"),
        "{text}"
    );
    assert!(
        text.contains("judged on the Policy screen (:policy)"),
        "{text}"
    );
    assert!(!text.contains("budgets set"), "{text}");
}

/// At 80 columns the summary wraps: nothing of it is cut off.
#[tokio::test]
async fn the_summary_wraps_at_80_columns() {
    let (t, _) = run_services(80, 24, options(), snapshot(), typed("4"), services()).await;
    let s = screen_text(&t);
    assert!(s.contains("in unfinished jobs"), "{s}");
    assert!(s.contains("recovery 100.0% · 2 jobs"), "{s}");
    assert!(s.contains("(:policy)"), "{s}");
    // Issue 29 §2.15: the last column, held, is there with its sparkline.
    let header = s.lines().find(|l| l.contains("drift pp")).unwrap();
    assert!(header.contains("held"), "{s}");
    let research = s.lines().find(|l| l.contains("│research")).unwrap();
    assert!(
        research.chars().filter(|c| ('▁'..='█').contains(c)).count() >= 4,
        "{s}"
    );
}

/// Wide enough for every figure: the table's head is the scorecard's column list, in its order,
/// between the share and the sparkline (the list `report` and `replay` iterate too).
#[tokio::test]
async fn the_table_lists_the_scorecard_columns_in_order() {
    let (t, _) = run_services(600, 24, options(), snapshot(), typed("4"), services()).await;
    let s = screen_text(&t);
    let header = s.lines().find(|l| l.contains("drift pp")).unwrap();
    let shown: Vec<&str> = header
        .trim_matches(|c: char| c == '│' || c.is_whitespace())
        .split("  ")
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .collect();
    let want: Vec<&str> = std::iter::once("share")
        .chain(
            quotatop_analysis::scorecard::COLUMNS
                .iter()
                .map(|c| c.header),
        )
        .chain(std::iter::once("held"))
        .collect();
    assert_eq!(shown, want, "{s}");
}
