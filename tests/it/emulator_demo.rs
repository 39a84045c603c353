//! scenarios/demo.toml shows, within its first real minute at its default speed, every behaviour
//! the console is meant to explain. Runs the scenario's world directly in the engine.

use std::collections::HashMap;
use std::path::Path;

use quotatop_emulator::Scenario;
use quotatop_emulator::{Workload, advance};
use quotatop_engine::{Engine, EventReason, FailureKind, JobId, PreemptionKind};
use quotatop_model::{JobStatus, SharingStrategy};

const START: i64 = 1_700_000_000_000;

/// The demo world run in the engine for `real_s` real seconds at the scenario's own speed,
/// and that speed.
fn demo_after(real_s: f64) -> (Engine, f64) {
    let scenario = Scenario::load(Path::new("scenarios/demo.toml")).unwrap();
    let mut engine = scenario.build_engine(START).unwrap();
    let mut workload = Workload::new(&scenario, START);
    let horizon = START + (real_s * scenario.speed * 1000.0) as i64;
    advance(
        &mut engine,
        &mut workload,
        horizon,
        |_, _, _| {},
        |a, e| panic!("{} refused: {e}", a.spec.name),
    )
    .unwrap();
    (engine, scenario.speed)
}

#[test]
fn demo_shows_every_storyline_in_the_first_minute() {
    // One real minute at the scenario's speed.
    let (engine, _) = demo_after(60.0);

    let shares = engine.shares();
    assert!(shares.len() >= 5, "{} shares", shares.len());
    let mut types: Vec<&str> = shares
        .iter()
        .flat_map(|s| s.capacity_limits.iter().map(|l| l.instance_type.as_str()))
        .collect();
    types.sort();
    types.dedup();
    assert!(types.len() >= 2, "{types:?}");
    for strategy in [
        SharingStrategy::Reserve,
        SharingStrategy::Lend,
        SharingStrategy::LendAndBorrow,
    ] {
        assert!(
            shares.iter().any(|s| s.sharing.strategy == strategy),
            "no {strategy:?} share"
        );
    }

    let events = engine.events();
    let borrowed = events
        .iter()
        .filter(|e| matches!(e.reason, EventReason::Dispatched { borrowed } if borrowed > 0))
        .count();
    assert!(borrowed > 0, "no share borrowed");
    let cross = events
        .iter()
        .filter(|e| e.reason == EventReason::PreemptionStarted(PreemptionKind::CrossShare))
        .count();
    assert!(cross > 0, "no lender reclaimed by cross-share preemption");
    let in_share = events
        .iter()
        .filter(|e| e.reason == EventReason::PreemptionStarted(PreemptionKind::InShare))
        .count();
    assert!(in_share > 0, "no in-share preemption");

    // A job preempted again and again although it never gives up: unbounded retries.
    let mut preempted: HashMap<JobId, u32> = HashMap::new();
    for e in events {
        if matches!(e.reason, EventReason::Preempted(_)) {
            *preempted.entry(e.job).or_default() += 1;
        }
    }
    let looping: Vec<String> = preempted
        .iter()
        .filter(|&(&id, &n)| {
            let job = engine.job(id).unwrap();
            n >= 3 && job.preemption_retries.is_none() && job.status != JobStatus::Failed
        })
        .map(|(&id, n)| format!("{} x{n}", engine.job(id).unwrap().name))
        .collect();
    assert!(!looping.is_empty(), "no preemption loop: {preempted:?}");

    // A misconfigured job, still RUNNABLE at the end with the documented reason.
    let stuck: Vec<_> = events
        .iter()
        .filter(|e| matches!(e.reason, EventReason::Misconfigured(_)))
        .map(|e| engine.job(e.job).unwrap())
        .filter(|j| j.status == JobStatus::Runnable)
        .collect();
    assert!(!stuck.is_empty(), "no misconfigured job stuck RUNNABLE");
    assert!(
        stuck[0]
            .status_reason
            .as_deref()
            .unwrap()
            .starts_with("MISCONFIGURATION:"),
        "{:?}",
        stuck[0].status_reason
    );
    // An attempt that timed out (the job FAILED), and one that failed and recovered by retry.
    let failed_by = |kind: FailureKind, to: JobStatus| -> Vec<JobId> {
        events
            .iter()
            .filter(|e| e.reason == EventReason::AttemptFailed(kind) && e.to == to)
            .map(|e| e.job)
            .collect()
    };
    let timed_out = failed_by(FailureKind::Timeout, JobStatus::Failed);
    assert!(!timed_out.is_empty(), "no attempt timed out");
    let retried = failed_by(FailureKind::Error, JobStatus::Runnable);
    assert!(
        retried
            .iter()
            .any(|&id| engine.job(id).unwrap().status == JobStatus::Succeeded),
        "no job recovered by retry: {retried:?}"
    );
    eprintln!(
        "borrowed dispatches {borrowed}, cross-share {cross}, in-share {in_share}, loops {looping:?}, stuck {}",
        stuck[0].name
    );
}

/// The console's first screen tells the story: within ten real seconds at the default speed a
/// share borrows (and so another lends), a lender reclaims by preemption, a job is caught in a
/// preemption loop (preempted twice within the hour: the default loop rule) and the misconfigured
/// job is stuck.
#[test]
fn demo_tells_its_story_within_ten_seconds() {
    let (engine, speed) = demo_after(10.0);
    let events = engine.events();
    // Borrowing from the first seconds on.
    let first_borrow = events
        .iter()
        .filter(|e| matches!(e.reason, EventReason::Dispatched { borrowed } if borrowed > 0))
        .map(|e| e.time)
        .min()
        .expect("no share borrowed");
    assert!(
        first_borrow <= START + (2.0 * speed * 1000.0) as i64,
        "first borrowing only after {} ms",
        first_borrow - START
    );
    assert!(
        events
            .iter()
            .any(|e| e.reason == EventReason::PreemptionStarted(PreemptionKind::CrossShare)),
        "no cross-share preemption"
    );
    let mut preempted: HashMap<JobId, u32> = HashMap::new();
    for e in events {
        if matches!(e.reason, EventReason::Preempted(_)) {
            *preempted.entry(e.job).or_default() += 1;
        }
    }
    assert!(
        preempted.values().any(|&n| n >= 2),
        "no loop yet: {preempted:?}"
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e.reason, EventReason::Misconfigured(_))),
        "no misconfigured job"
    );
}
