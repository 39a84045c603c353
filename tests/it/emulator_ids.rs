//! Job ids, training-job names and request ids are new on every emulator run unless
//! `deterministic_ids` (`quotatop emulator --deterministic`) asks for reproducible ones; the
//! seeded schedule is the same either way.

use std::path::Path;

use aws_sdk_batch::operation::RequestId as _;
use quotatop_emulator::{self as emulator, ClockMode, EmulatorConfig, Scenario};
use quotatop_engine::Event;

use crate::emulator_support::client;

const START: i64 = 1_700_000_000_000;

struct Run {
    ids: Vec<String>,
    training_jobs: Vec<String>,
    events: Vec<Event>,
    request_id: String,
}

async fn run(deterministic: bool) -> Run {
    let scenario = Scenario::load(Path::new("scenarios/demo.toml")).unwrap();
    let mut config = EmulatorConfig::from_scenario(scenario).unwrap();
    config.clock = ClockMode::Manual;
    config.start_ms = Some(START);
    config.deterministic_ids = deterministic;
    let handle = emulator::start(config).await.unwrap();
    handle.advance(20 * 60_000).unwrap();
    let (ids, training_jobs) = handle
        .with_engine(|e| {
            let jobs: Vec<_> = e.jobs().collect();
            (
                jobs.iter().map(|j| j.id.clone()).collect::<Vec<_>>(),
                jobs.iter()
                    .flat_map(|j| j.attempts.iter().map(|a| a.resource_id.clone()))
                    .collect::<Vec<_>>(),
            )
        })
        .unwrap();
    let events = handle.recent_events().unwrap().into_iter().collect();
    let out = client(&handle, 1)
        .list_service_jobs()
        .job_queue("ml-training")
        .send()
        .await
        .unwrap();
    let request_id = out.request_id().unwrap_or_default().to_string();
    handle.shutdown().await.unwrap();
    Run {
        ids,
        training_jobs,
        events,
        request_id,
    }
}

#[tokio::test]
async fn ids_are_new_each_run_while_the_schedule_stays_the_seeds() {
    let (a, b) = (run(false).await, run(false).await);
    assert!(a.ids.len() > 10, "{} jobs", a.ids.len());
    assert!(!a.training_jobs.is_empty());
    assert!(!a.request_id.is_empty());
    // The same jobs at the same times: only their names differ.
    assert_eq!(a.events, b.events);
    assert_eq!(a.ids.len(), b.ids.len());
    for (x, y) in a.ids.iter().zip(&b.ids) {
        assert_ne!(x, y, "a job id repeated across two runs");
    }
    for (x, y) in a.training_jobs.iter().zip(&b.training_jobs) {
        assert_ne!(x, y, "a training job name repeated across two runs");
    }
    assert_ne!(a.request_id, b.request_id);
    // And the schedule is the deterministic run's too.
    let d = run(true).await;
    assert_eq!(a.events, d.events);
}

#[tokio::test]
async fn deterministic_ids_repeat_run_to_run() {
    let (a, b) = (run(true).await, run(true).await);
    assert_eq!(a.ids, b.ids);
    assert_eq!(a.training_jobs, b.training_jobs);
    assert_eq!(a.request_id, b.request_id);
}
