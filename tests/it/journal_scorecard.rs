//! Acceptance of issue 7's history layer: an emulator scenario on a manual clock, observed every
//! `POLL_MS` of simulated time by the real poller (budgeted describes) and journaled; every scorecard metric computed from
//! the journal must match the same metric computed from the engine's ground-truth event log.
//!
//! Tolerance (stated, and derived from the polling interval `P`):
//! - every timestamp the journal uses is an API timestamp (exact) except the first RUNNABLE of a
//!   job, which is late by at most `P`, and the SCHEDULED time of a preempted attempt that began
//!   and ended between two polls (lasting < `P`), for which the journal falls back to its
//!   `startedAt`; so each wait is within `P`, P50/P95 are within `P`, and each attempt's
//!   GPU-hours are within `P × instances × GPUs`;
//! - GPU-hour totals are therefore within `P × Σ(instances × GPUs)` over the attempts counted
//!   (computed from the ground truth), ratios within that over their divisor, drift within
//!   `2 × 100 × tol / total held`;
//! - counts (waits, waiting jobs, interrupted attempts, recovery) must be equal.
//!
//! The observer is the production path: the real poller (`quotatop_aws::poll::Poller`) with the
//! default `PollConfig` (describe budget, concurrency, finished-job limit), through the real
//! `BatchClient`; shares and capacity are what it discovers.

use crate::data_support::RECORDED_WORLD as SCENARIO;
use std::collections::BTreeMap;

use quotatop_analysis::scorecard::{
    self, AttemptEnd, JobHistory, Row, Scorecard, ScorecardInput, ScorecardOptions, Window,
    from_engine,
};
use quotatop_aws::poll::{PollConfig, Poller};
use quotatop_emulator::{self as emulator, ClockMode, EmulatorConfig, Scenario};
use quotatop_model::{HealthState, Millis};
use quotatop_store::journal::{Journal, JournalConfig, JournalHandle, scorecard_input};

const START: Millis = 1_770_000_000_000;
const POLL_MS: Millis = 30_000;
const RUN_MS: Millis = 3 * 3_600_000;
const QUEUE: &str = "ml-training";

fn within(what: &str, observed: f64, truth: f64, tol: f64) {
    assert!(
        (observed - truth).abs() <= tol + 1e-9,
        "{what}: journal {observed} vs engine {truth}, tolerance {tol}"
    );
}

fn within_ms(what: &str, observed: Option<Millis>, truth: Option<Millis>) {
    match (observed, truth) {
        (Some(o), Some(t)) => assert!(
            (o - t).abs() <= POLL_MS,
            "{what}: journal {o} ms vs engine {t} ms, tolerance {POLL_MS} ms"
        ),
        (o, t) => assert_eq!(o, t, "{what}"),
    }
}

/// `P × Σ(instances × GPUs)` over the attempts of `jobs`, in GPU-hours.
fn resolution(jobs: &[&JobHistory], opts: &ScorecardOptions, only_preempted: bool) -> f64 {
    jobs.iter()
        .map(|j| {
            let n = j
                .attempts
                .iter()
                .filter(|a| !only_preempted || a.end == AttemptEnd::Preempted)
                .count() as u32;
            let gpus = opts.gpus.gpus(&j.instance_type).unwrap_or(0);
            scorecard::gpu_hours(POLL_MS, n * j.instance_count, gpus)
        })
        .sum()
}

fn compare_rows(o: &Row, t: &Row, truth_jobs: &[&JobHistory], opts: &ScorecardOptions) {
    let what = t.scope.label();
    assert_eq!(o.scope, t.scope);
    assert_eq!(o.jobs, t.jobs, "{what}: jobs");
    // Utilisation: the productive work of succeeded jobs.
    let succeeded: Vec<&JobHistory> = truth_jobs
        .iter()
        .copied()
        .filter(|j| matches!(j.outcome, scorecard::Outcome::Succeeded(_)))
        .collect();
    let tol = resolution(&succeeded, opts, false);
    let (ou, tu) = (&o.utilisation, &t.utilisation);
    within(
        &format!("{what} productive GPU-h"),
        ou.productive_gpu_hours,
        tu.productive_gpu_hours,
        tol,
    );
    assert_eq!(
        ou.allocated_gpu_hours, tu.allocated_gpu_hours,
        "{what}: allocated"
    );
    if let (Some(a), Some(b)) = (ou.ratio, tu.ratio) {
        within(
            &format!("{what} utilisation"),
            a,
            b,
            tol / tu.allocated_gpu_hours,
        );
    } else {
        assert_eq!(ou.ratio, tu.ratio, "{what}: utilisation");
    }
    // Waits.
    assert_eq!(o.wait.count, t.wait.count, "{what}: waits");
    assert_eq!(
        o.wait.still_waiting, t.wait.still_waiting,
        "{what}: still waiting"
    );
    within_ms(&format!("{what} P50 wait"), o.wait.p50_ms, t.wait.p50_ms);
    within_ms(&format!("{what} P95 wait"), o.wait.p95_ms, t.wait.p95_ms);
    within_ms(&format!("{what} max wait"), o.wait.max_ms, t.wait.max_ms);
    within_ms(
        &format!("{what} oldest waiting"),
        o.wait.oldest_waiting_ms,
        t.wait.oldest_waiting_ms,
    );
    // Waste: lost compute uses exact attempt timestamps; overhead may miss a SCHEDULED.
    let tol = resolution(truth_jobs, opts, true);
    assert_eq!(
        o.waste.interrupted_attempts, t.waste.interrupted_attempts,
        "{what}: interrupted"
    );
    assert_eq!(
        o.waste.with_checkpoint, t.waste.with_checkpoint,
        "{what}: with checkpoint"
    );
    within(
        &format!("{what} lost compute"),
        o.waste.lost_gpu_hours,
        t.waste.lost_gpu_hours,
        tol,
    );
    within(
        &format!("{what} restart overhead"),
        o.waste.overhead_gpu_hours,
        t.waste.overhead_gpu_hours,
        tol,
    );
    within(
        &format!("{what} waste"),
        o.waste.total_gpu_hours,
        t.waste.total_gpu_hours,
        tol,
    );
    // Every category of the ledger: each attempt's boundaries are known to one poll.
    let tol = resolution(truth_jobs, opts, false);
    let (ol, tl) = (&o.ledger, &t.ledger);
    for (name, a, b) in [
        ("held", ol.held_gpu_hours(), tl.held_gpu_hours()),
        (
            "productive",
            ol.productive_gpu_hours,
            tl.productive_gpu_hours,
        ),
        (
            "held before running",
            ol.held_not_running_gpu_hours,
            tl.held_not_running_gpu_hours,
        ),
        ("failed", ol.failed_gpu_hours, tl.failed_gpu_hours),
        (
            "unfinished",
            ol.unfinished_gpu_hours,
            tl.unfinished_gpu_hours,
        ),
    ] {
        within(&format!("{what} ledger {name}"), a, b, tol);
    }
    // Recovery: counts (how long restores took is compared in journal_checkpoints: the
    // engine's truth knows every restart overhead, the journal only the logged restores).
    let counts =
        |r: &quotatop_analysis::scorecard::Recovery| quotatop_analysis::scorecard::Recovery {
            restores: Default::default(),
            ..r.clone()
        };
    assert_eq!(counts(&o.recovery), counts(&t.recovery), "{what}: recovery");
}

fn compare(
    observed: &Scorecard,
    truth: &Scorecard,
    input: &ScorecardInput,
    opts: &ScorecardOptions,
) {
    let all: Vec<&JobHistory> = input.jobs.iter().collect();
    compare_rows(&observed.queue_row, &truth.queue_row, &all, opts);
    assert_eq!(observed.shares.len(), truth.shares.len());
    for (o, t) in observed.shares.iter().zip(&truth.shares) {
        let jobs: Vec<&JobHistory> = all
            .iter()
            .copied()
            .filter(|j| scorecard::Scope::Share(j.share.clone()) == t.scope)
            .collect();
        compare_rows(o, t, &jobs, opts);
    }
    assert_eq!(observed.bands.len(), truth.bands.len());
    for (o, t) in observed.bands.iter().zip(&truth.bands) {
        let jobs: Vec<&JobHistory> = all
            .iter()
            .copied()
            .filter(|j| scorecard::Scope::Band(scorecard::PriorityBand::of(j.priority)) == t.scope)
            .collect();
        compare_rows(o, t, &jobs, opts);
    }
    let total_held: f64 = truth.fairness.iter().map(|f| f.used_gpu_hours).sum();
    assert_eq!(observed.fairness.len(), truth.fairness.len());
    for (o, t) in observed.fairness.iter().zip(&truth.fairness) {
        let jobs: Vec<&JobHistory> = all.iter().copied().filter(|j| j.share == t.share).collect();
        let tol = resolution(&jobs, opts, false);
        let all_tol = resolution(&all, opts, false);
        assert_eq!(o.share, t.share);
        assert_eq!(o.entitled_gpu_hours, t.entitled_gpu_hours);
        within(
            &format!("{} held GPU-h", t.share),
            o.used_gpu_hours,
            t.used_gpu_hours,
            tol,
        );
        within(
            &format!("{} drift", t.share),
            o.drift_pp,
            t.drift_pp,
            200.0 * all_tol / total_held,
        );
        within_ms(
            &format!("{} fairness P50", t.share),
            o.wait_p50_ms,
            t.wait_p50_ms,
        );
    }
}

/// The default `PollConfig`: in this scenario its describe budget (40) never binds.
#[tokio::test]
async fn journal_scorecard_matches_the_engine_ground_truth() {
    let most = matches_ground_truth(PollConfig::default()).await;
    println!("default budget: at most {most} describes in one refresh");
}

/// A budget of 2 rolling describes per refresh, so the budget binds: changed jobs are still
/// described at once, and the metrics still match.
#[tokio::test]
async fn journal_scorecard_matches_with_a_binding_describe_budget() {
    let most = matches_ground_truth(PollConfig {
        describe_budget: 2,
        concurrency: 2,
        ..PollConfig::default()
    })
    .await;
    println!("budget 2: at most {most} describes in one refresh");
}

/// Runs the scenario observed by the real poller with `poll` (its queue set here), compares
/// the journal's scorecard with the engine's; returns the most describes one refresh made.
async fn matches_ground_truth(poll: PollConfig) -> u64 {
    let scenario = Scenario::parse(SCENARIO).unwrap();
    let mut config = EmulatorConfig::from_scenario(scenario).unwrap();
    config.clock = ClockMode::Manual;
    config.start_ms = Some(START);
    let emu = emulator::start(config).await.unwrap();

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite3");
    let journal = JournalHandle::start(&path, JournalConfig::default());

    let client = crate::data_support::batch_client(&emu).await;
    let mut poller = Poller::new(PollConfig {
        queues: vec![QUEUE.to_string()],
        ..poll
    });
    let mut t = 0;
    let mut most_described = 0;
    while t < RUN_MS {
        emu.advance(POLL_MS).unwrap();
        t += POLL_MS;
        let before = emu.calls("describeservicejob");
        let snap = poller.refresh(&client).await;
        most_described = most_described.max(emu.calls("describeservicejob") - before);
        assert_eq!(snap.health.state, HealthState::Healthy, "{:?}", snap.health);
        assert_eq!(snap.queues.len(), 1);
        assert_eq!(snap.queues[0].stale_reason, None);
        assert!(journal.record(snap), "journal queue full");
        if t % (20 * POLL_MS) == 0 {
            journal.flush();
        }
    }
    journal.flush();
    let status = journal.status();
    assert_eq!(status.unavailable, None);
    assert_eq!(status.dropped, 0);
    journal.shutdown();

    let end = emu.now().unwrap();
    let window = Window::new(START, end);
    let opts = ScorecardOptions {
        // The scenario's jobs restore instantly (the engine's restart overhead is 0); the journal
        // is told the same, so both sides measure the same overhead: time held before RUNNING.
        restart_cost_ms: 0,
        recovery_window_ms: 3_600_000,
        checkpoint_by_share: BTreeMap::from([("research".to_string(), 300_000)]),
        ..Default::default()
    };
    let events: Vec<_> = emu.recent_events().unwrap().into_iter().collect();
    let truth_input = emu
        .with_engine(|e| from_engine::input_from_engine(e, &events, QUEUE, window))
        .unwrap();
    let j = Journal::open_existing(&path, JournalConfig::default()).unwrap();
    let observed_input = scorecard_input(&j, QUEUE, window, &opts).unwrap();

    let truth = scorecard::scorecard(&truth_input, &opts);
    let observed = scorecard::scorecard(&observed_input, &opts);

    // The run must exercise every metric, or the comparison proves little.
    let q = &truth.queue_row;
    assert!(
        truth_input.jobs.len() >= 30,
        "jobs: {}",
        truth_input.jobs.len()
    );
    assert!(q.wait.count >= 30, "{:?}", q.wait);
    assert!(q.waste.interrupted_attempts >= 3, "{:?}", q.waste);
    assert!(q.waste.with_checkpoint >= 1, "{:?}", q.waste);
    assert!(q.recovery.interrupted_jobs >= 2, "{:?}", q.recovery);
    assert!(q.utilisation.productive_gpu_hours > 0.0);
    assert!(truth.bands.len() >= 3, "bands: {:?}", truth.bands.len());
    assert!(truth.fairness.iter().all(|f| f.used_gpu_hours > 0.0));

    compare(&observed, &truth, &truth_input, &opts);
    emu.shutdown().await.unwrap();
    most_described
}
