//! The replay's streamed histories against the whole event log.

use std::path::Path;

use crate::analysis::scorecard::AttemptEnd;
use crate::analysis::scorecard::from_engine::{HistoryBuilder, histories_from_events};
use crate::engine::Engine;

use super::run::{spec_for, submit_all};
use super::{ReplayConfig, TraceJob, trace_csv};

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
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
