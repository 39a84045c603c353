//! A class's checkpoint interval and retry limit reach its jobs, and only its jobs.

use std::collections::BTreeSet;
use std::path::Path;

use quotatop_analysis::scorecard::PriorityBand;

use super::super::run::spec_for;
use super::super::{Comparison, ReplayConfig, TraceJob, replay_to, trace_csv};
use super::{ClassMembers, ClassWorkload};

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(name)
}

/// The replay fixture with prod's jobs raised to the normal band (priority 500).
fn trace() -> Vec<TraceJob> {
    let text = std::fs::read_to_string(fixture("replay_trace.csv")).unwrap();
    let mut jobs = trace_csv::parse(&text, "replay_trace.csv").unwrap();
    for j in &mut jobs {
        if &*j.share == "prod" {
            j.priority = 500;
        }
    }
    jobs
}

fn config() -> ReplayConfig {
    let mut cfg = ReplayConfig::load(&fixture("replay_lending.toml")).unwrap();
    cfg.workload.checkpoint_s = Some(1200);
    cfg.workload.preemption_retries = Some(4);
    cfg
}

#[test]
fn a_class_override_changes_only_that_class_jobs() {
    let trace = trace();
    let plain = config();
    let mut swept = config();
    swept.workload.by_class = vec![ClassWorkload {
        members: ClassMembers::Band(PriorityBand::Normal),
        checkpoint_interval_ms: Some(300_000),
        preemption_retries: Some(2),
    }];
    let mut changed = 0;
    for j in &trace {
        let (before, after) = (spec_for(j, &plain), spec_for(j, &swept));
        if &*j.share == "prod" {
            // release-2's own retry cap (1) and the workload's interval give way to the class's.
            assert_eq!(after.checkpoint_interval_ms, Some(300_000), "{}", j.name);
            assert_eq!(after.preemption_retries, Some(2), "{}", j.name);
            assert_eq!(
                JobSpecRest::of(&after),
                JobSpecRest::of(&before),
                "{}",
                j.name
            );
            changed += 1;
        } else {
            assert_eq!(after, before, "{} is not of the class", j.name);
        }
    }
    assert_eq!(changed, 3);

    // A policy class by (share, priority): "none" and "unlimited" replace the trace's own
    // interval (sweep-2: 600 s) and cap (fragile: 0).
    swept.workload.by_class = vec![ClassWorkload {
        members: ClassMembers::Pairs(BTreeSet::from([("research".to_string(), 1)])),
        checkpoint_interval_ms: None,
        preemption_retries: None,
    }];
    for j in &trace {
        let (before, after) = (spec_for(j, &plain), spec_for(j, &swept));
        if &*j.share == "research" && j.priority == 1 {
            assert_eq!(after.checkpoint_interval_ms, None, "{}", j.name);
            assert_eq!(after.preemption_retries, None, "{}", j.name);
        } else {
            assert_eq!(after, before, "{} is not of the class", j.name);
        }
    }
    assert_eq!(
        spec_for(&trace[1], &plain).checkpoint_interval_ms,
        Some(600_000)
    );
    assert_eq!(spec_for(&trace[6], &plain).preemption_retries, Some(0));

    // The engine runs the class's jobs with them: what the replay submitted, job by job.
    let (_, engine) = replay_to(&trace, &swept, &Comparison::default(), &mut |_, _| {}).unwrap();
    let mut order: Vec<&TraceJob> = trace.iter().collect();
    order.sort_by_key(|j| j.submit_ms);
    for (j, e) in order.iter().zip(engine.jobs()) {
        let want = spec_for(j, &swept);
        assert_eq!(
            e.checkpoint_interval_ms, want.checkpoint_interval_ms,
            "{}",
            j.name
        );
        assert_eq!(e.preemption_retries, want.preemption_retries, "{}", j.name);
    }
}

/// A spec's fields other than the checkpoint interval and retry cap.
#[derive(Debug, PartialEq)]
struct JobSpecRest {
    name: String,
    share: String,
    priority: i64,
    count: u32,
    work_ms: u64,
    restart_overhead_ms: u64,
}

impl JobSpecRest {
    fn of(s: &quotatop_engine::JobSpec) -> Self {
        Self {
            name: s.name.clone(),
            share: s.share.clone(),
            priority: s.priority,
            count: s.instance_count,
            work_ms: s.work_ms,
            restart_overhead_ms: s.restart_overhead_ms,
        }
    }
}
