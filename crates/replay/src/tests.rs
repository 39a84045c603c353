//! The replay's streamed histories against the whole event log, and the lean replay against the
//! full one.

use std::path::Path;
use std::time::Duration;

use quotatop_analysis::scorecard::AttemptEnd;
use quotatop_analysis::scorecard::decision::{Budget, DeadlineRule, Rules};
use quotatop_analysis::scorecard::from_engine::{HistoryBuilder, histories_from_events};
use quotatop_engine::Engine;
use quotatop_model::{CapacityLimit, QuotaShare, SharingConfig};

use super::run::{spec_for, submit_all};
use super::{
    Comparison, JobExtras, ReplayConfig, TraceJob, never_run, philly, presets, replay_lean,
    replay_to, trace_csv,
};

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(name)
}

fn trace() -> Vec<TraceJob> {
    let text = std::fs::read_to_string(fixture("replay_trace.csv")).unwrap();
    trace_csv::parse(&text, "replay_trace.csv").unwrap()
}

/// Runs the trace, calling `between` after each submission and step.
fn run(cfg: &ReplayConfig, between: &mut dyn FnMut(&mut Engine)) -> Engine {
    let mut engine = cfg.build_engine().unwrap();
    submit_all(
        &mut engine,
        &trace(),
        |j| spec_for(j, cfg),
        &mut |_, _| {},
        between,
    )
    .unwrap();
    engine
}

#[test]
fn histories_built_while_draining_equal_those_of_the_whole_log() {
    let cfg = ReplayConfig::load(&fixture("replay_lending.toml")).unwrap();
    let whole = run(&cfg, &mut |_| {});
    let expected = histories_from_events(&whole, whole.events());
    assert_eq!(expected.len(), 9);
    assert!(
        expected
            .iter()
            .flat_map(|h| &h.attempts)
            .any(|a| a.end == AttemptEnd::Preempted),
        "the lending fixture preempts"
    );
    for every in [1, 3, 64] {
        let mut b = HistoryBuilder::new();
        let mut engine = run(&cfg, &mut |e| {
            if e.events().len() >= every {
                b.extend(&e.drain_events());
            }
        });
        b.extend(&engine.drain_events());
        assert!(engine.events().is_empty());
        assert_eq!(b.last_time(), whole.events().last().map(|e| e.time));
        assert_eq!(b.finish(&engine), expected, "draining every {every} events");
    }
}

/// A lean replay (engine dropped, facts from the trace) gives exactly the full replay's outcome,
/// rows and stuck jobs; only the wall time differs.
fn assert_lean_equals_full(trace: &[TraceJob], cfg: &ReplayConfig, cmp: &Comparison) {
    let (mut full, engine) = replay_to(trace, cfg, cmp, &mut |_, _| {}).unwrap();
    let (mut lean, stuck) = replay_lean(trace, cfg, cmp, &mut |_, _| {}).unwrap();
    full.elapsed = Duration::ZERO;
    lean.elapsed = Duration::ZERO;
    assert_eq!(lean, full, "{}", cfg.name);
    assert_eq!(stuck, never_run(trace, &engine), "{}", cfg.name);
}

/// Every rule the evaluation knows: deadlines, budgets, prices.
fn full_comparison(protected: Option<&str>) -> Comparison {
    let mut rules = Rules::default();
    rules.deadlines.insert(
        "*".to_string(),
        DeadlineRule {
            deadline_factor: Some(2.0),
            max_wait_s: None,
        },
    );
    rules.deadlines.insert(
        "b".to_string(),
        DeadlineRule {
            deadline_factor: None,
            max_wait_s: Some(600),
        },
    );
    rules.budgets.insert(
        "*".to_string(),
        Budget {
            max_preemptions_per_job: Some(0),
            max_lost_gpu_hours_per_day: Some(0.5),
        },
    );
    rules.prices.insert("ml.p4d.24xlarge".to_string(), 30.0);
    rules
        .prices
        .insert(philly::GPU_INSTANCE_TYPE.to_string(), 3.0);
    Comparison {
        horizon_ms: Some(6 * 3_600_000),
        rules,
        protected: protected.map(str::to_string),
        per_job: true,
        important_by_policy: None,
        class_by_policy: Default::default(),
    }
}

#[test]
fn lean_replay_equals_full_replay_on_the_fixture() {
    for name in ["replay_lending.toml", "replay_isolated.toml"] {
        let cfg = ReplayConfig::load(&fixture(name)).unwrap();
        assert_lean_equals_full(&trace(), &cfg, &Comparison::default());
        assert_lean_equals_full(&trace(), &cfg, &full_comparison(Some("prod")));
    }
}

/// A generated workload on three shares: mixed sizes, priorities, checkpoints, retries and own
/// deadlines, bursts that make the presets lend and preempt, and one job too large to ever run.
fn generated(n: usize) -> (ReplayConfig, Vec<TraceJob>) {
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let mut next = |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    };
    let shares = ["a", "b", "c"];
    let mut jobs: Vec<TraceJob> = (0..n)
        .map(|i| {
            let share = shares[next(3) as usize];
            TraceJob {
                name: format!("{share}-{i}").into(),
                origin: format!("gen:{}", i + 2).into(),
                share: share.into(),
                submit_ms: (next(40) as i64) * 60_000 + if share == "a" { 0 } else { 600_000 },
                instance_type: philly::GPU_INSTANCE_TYPE.into(),
                instance_count: 1 + next(6) as u32,
                work_ms: (1 + next(180)) * 60_000,
                priority: [0, 10, 600, 900][next(4) as usize],
                checkpoint_interval_ms: (next(3) == 0).then_some(15 * 60_000),
                preemption_retries: (next(4) == 0).then(|| next(3) as u32),
                extras: JobExtras::new(
                    (next(5) == 0).then(|| (1 + next(8)) * 3_600_000),
                    Vec::new(),
                ),
            }
        })
        .collect();
    jobs.push(TraceJob {
        name: "too-big".into(),
        origin: "gen:1".into(),
        instance_count: 1000,
        ..jobs[0].clone()
    });
    let limits: Vec<QuotaShare> = [("a", 8), ("b", 16), ("c", 8)]
        .iter()
        .map(|(s, n)| {
            QuotaShare::new(
                *s,
                vec![CapacityLimit::new(philly::GPU_INSTANCE_TYPE, *n)],
                SharingConfig::reserve(),
            )
        })
        .collect();
    let base = ReplayConfig {
        name: "gen".to_string(),
        capacity: super::config::summed_limits(&limits),
        shares: limits,
        workload: Default::default(),
        rules: Default::default(),
    };
    (base, jobs)
}

#[test]
fn lean_replay_equals_full_replay_on_a_generated_workload() {
    let (base, jobs) = generated(400);
    let presets = presets::product_presets(&base, None, &jobs);
    let mut preempted = 0;
    for cfg in &presets {
        assert_lean_equals_full(&jobs, cfg, &full_comparison(Some("b")));
        assert_lean_equals_full(&jobs, cfg, &Comparison::default());
        preempted += replay_lean(&jobs, cfg, &Comparison::default(), &mut |_, _| {})
            .unwrap()
            .0
            .preemptions;
    }
    assert!(preempted > 0, "the generated workload preempts somewhere");
}

/// The first 250 jobs of each Philly VC in the repository's `traces/philly-vc`; missing or
/// unreadable traces fail the test (never a silent skip).
#[test]
fn lean_replay_equals_full_replay_on_a_philly_subset() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../traces/philly-vc");
    let vcs = philly::load_dir(&dir, None)
        .unwrap_or_else(|e| panic!("the repository's Philly traces in {}: {e}", dir.display()));
    assert_eq!(vcs.len(), 8, "the eight Philly VCs in {}", dir.display());
    let shares: Vec<QuotaShare> = vcs
        .iter()
        .map(|v| {
            QuotaShare::new(
                v.vc.clone(),
                vec![CapacityLimit::new(philly::GPU_INSTANCE_TYPE, v.gpus)],
                SharingConfig::reserve(),
            )
        })
        .collect();
    let base = ReplayConfig {
        name: "philly".to_string(),
        capacity: super::config::summed_limits(&shares),
        shares,
        workload: Default::default(),
        rules: Default::default(),
    };
    let jobs: Vec<TraceJob> = vcs
        .into_iter()
        .flat_map(|v| v.jobs.into_iter().take(250))
        .collect();
    for cfg in presets::product_presets(&base, None, &jobs) {
        assert_lean_equals_full(&jobs, &cfg, &full_comparison(None));
    }
}

/// A trace's `priority_changes` are applied at their times: a job raised while it waits runs
/// before one submitted ahead of it at a higher priority (and does not without the change).
#[test]
fn priority_changes_are_replayed_at_their_times() {
    let t = "submit_s,share,instance_type,instance_count,work_s,priority,name,priority_changes\n\
             0,a,ml.m5.large,1,100,5,first,\n\
             1,a,ml.m5.large,1,100,5,ahead,\n\
             2,a,ml.m5.large,1,100,1,raised,50:9\n";
    let cfg = ReplayConfig {
        name: "one".into(),
        capacity: vec![CapacityLimit::new("ml.m5.large", 1)],
        shares: vec![QuotaShare::new(
            "a",
            vec![CapacityLimit::new("ml.m5.large", 1)],
            SharingConfig::reserve(),
        )],
        workload: Default::default(),
        rules: Default::default(),
    };
    let started = |text: &str| -> Vec<(String, i64)> {
        let mut engine = cfg.build_engine().unwrap();
        let jobs = trace_csv::parse(text, "t.csv").unwrap();
        submit_all(
            &mut engine,
            &jobs,
            |j| spec_for(j, &cfg),
            &mut |_, _| {},
            &mut |_| {},
        )
        .unwrap();
        let mut s: Vec<(String, i64)> = engine
            .jobs()
            .map(|j| (j.name.clone(), j.started_at.unwrap()))
            .collect();
        s.sort_by_key(|(_, at)| *at);
        s
    };
    let order = |s: Vec<(String, i64)>| s.into_iter().map(|(n, _)| n).collect::<Vec<_>>();
    assert_eq!(order(started(t)), ["first", "raised", "ahead"]);
    assert_eq!(
        order(started(&t.replace("50:9", ""))),
        ["first", "ahead", "raised"]
    );
}
