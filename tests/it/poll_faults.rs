//! Acceptance: under injected faults (20% throttling, 5% server errors, 200 ms latency on every
//! operation) a background poller keeps emitting snapshots for a sustained period, marks what is
//! stale, never panics; once the faults stop it converges to the engine's true state by itself.
//! The demo world runs on a manual clock that the test advances while the poller works.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::data_support::batch_client;
use quotatop_analysis as analysis;
use quotatop_aws::poll::{self, PollConfig};
use quotatop_emulator::{
    self as emulator, ClockMode, EmulatorConfig, EmulatorHandle, FaultSpec, Scenario,
};
use quotatop_model::{HealthState, JobStatus, QueueSnapshot, Snapshot};

const FAULTS: &str = "latency=200ms,throttle=20%,error=5%,seed=11";

async fn demo() -> EmulatorHandle {
    let scenario = Scenario::load("scenarios/demo.toml".as_ref()).unwrap();
    let mut config = EmulatorConfig::from_scenario(scenario).unwrap();
    config.clock = ClockMode::Manual;
    config.start_ms = Some(1_770_000_000_000);
    config.faults = FaultSpec::parse(FAULTS).unwrap();
    emulator::start(config).await.unwrap()
}

/// Differences between the snapshot's active jobs and the engine's (empty = converged).
fn differences(h: &EmulatorHandle, q: &QueueSnapshot) -> Vec<String> {
    let (jobs, order) = h
        .with_engine(|e| {
            let jobs: Vec<_> = e.jobs().filter(|j| !j.status.is_terminal()).collect();
            let order: Vec<String> = e
                .queue_order()
                .into_iter()
                .map(|id| e.job_uuid(id).unwrap().to_string())
                .collect();
            (jobs, order)
        })
        .unwrap();
    let mut diffs = Vec::new();
    for j in &jobs {
        match q.jobs.iter().find(|t| t.job.id == j.id) {
            None => diffs.push(format!("{} missing", j.name)),
            Some(t) => {
                let seen = (
                    t.job.status,
                    t.job.priority,
                    t.job.preemption_count(),
                    &t.job.share,
                );
                let truth = (j.status, j.priority, j.preemption_count(), &j.share);
                if seen != truth {
                    diffs.push(format!("{}: saw {seen:?}, engine {truth:?}", j.name));
                }
            }
        }
    }
    let active_seen = q
        .jobs
        .iter()
        .filter(|t| !t.job.status.is_terminal())
        .count();
    if active_seen != jobs.len() {
        diffs.push(format!(
            "{active_seen} active jobs seen, engine has {}",
            jobs.len()
        ));
    }
    let seen_order: Vec<String> = analysis::dispatch_order(q)
        .into_iter()
        .filter(|r| !r.misconfigured)
        .map(|r| r.job_id)
        .collect();
    if seen_order != order {
        diffs.push(format!("dispatch order {seen_order:?} != {order:?}"));
    }
    diffs
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn poller_survives_faults_and_converges_after_them() {
    let h = Arc::new(demo().await);
    h.advance(600_000).unwrap(); // ten simulated minutes of workload first
    let client = batch_client(&h).await;
    let mut handle = poll::spawn(
        client,
        PollConfig {
            interval: Duration::from_millis(300),
            max_backoff: Duration::from_secs(1),
            describe_budget: 10,
            concurrency: 8,
            finished_limit: 20,
            refresh_deadline: Duration::from_secs(2),
            queues: vec!["ml-training".to_string()],
            progressive: false,
            training: Default::default(),
            reconcile_every: None,
        },
    );

    // The world keeps moving while the faults last: one simulated minute per 500 ms.
    let moving = Arc::new(AtomicBool::new(true));
    let clock = {
        let (h, moving) = (h.clone(), moving.clone());
        tokio::spawn(async move {
            while moving.load(Ordering::SeqCst) {
                h.advance(60_000).unwrap();
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        })
    };

    // Phase 1: 20 s of faults.
    let faulted_until = Instant::now() + Duration::from_secs(20);
    let mut seen: Vec<Snapshot> = Vec::new();
    let mut had_jobs = false;
    while Instant::now() < faulted_until {
        let left = faulted_until.saturating_duration_since(Instant::now());
        let Ok(next) = tokio::time::timeout(left, handle.snapshots.recv()).await else {
            break;
        };
        let s = next.expect("poller alive");
        if let Some(prev) = seen.last() {
            assert!(s.sequence > prev.sequence);
        }
        if let Some(q) = s.queues.first() {
            // A failed refresh keeps the last data: every job active in the previous snapshot
            // is still there (not only "the list is not empty").
            if let Some(prev) = seen.last().and_then(|p: &Snapshot| p.queues.first()) {
                for j in prev.jobs.iter().filter(|j| !j.job.status.is_terminal()) {
                    // A job that has finished since may be gone legitimately (the poller keeps
                    // only the newest finished jobs); one still active in the engine was lost.
                    let finished = h
                        .with_engine(|e| {
                            e.jobs()
                                .find(|t| t.id == j.job.id)
                                .is_some_and(|t| t.status.is_terminal())
                        })
                        .unwrap();
                    assert!(
                        finished || q.jobs.iter().any(|k| k.job.id == j.job.id),
                        "snapshot {} lost active job {} ({:?}) that snapshot {} had",
                        s.sequence,
                        j.job.name,
                        j.job.status,
                        seen.last().unwrap().sequence
                    );
                }
            }
            had_jobs |= !q.jobs.is_empty();
            if q.stale_reason.is_some() {
                assert!(s.health.state != HealthState::Healthy);
                assert!(s.health.last_error.is_some());
            }
        }
        seen.push(s);
    }
    let stats = h.fault_stats();
    assert!(stats.throttled > 0 && stats.server_errors > 0, "{stats:?}");
    assert!(
        seen.len() >= 4,
        "kept emitting under faults: {} snapshots",
        seen.len()
    );
    assert!(had_jobs);
    assert!(
        seen.iter().any(
            |s| s.queues.first().is_none_or(|q| q.stale_reason.is_some())
                || s.health.state != HealthState::Healthy
        ),
        "staleness was marked at least once"
    );
    assert!(
        seen.iter().any(|s| s.health.throttled_last_minute > 0),
        "throttled responses are counted"
    );
    // Data that could not be refreshed keeps its last value: a job described once stays
    // described (its `described_at` never goes back or away) in every later snapshot.
    for pair in seen.windows(2) {
        let (Some(a), Some(b)) = (pair[0].queues.first(), pair[1].queues.first()) else {
            continue;
        };
        for ja in a.jobs.iter().filter(|j| j.described_at.is_some()) {
            if let Some(jb) = b.jobs.iter().find(|j| j.job.id == ja.job.id) {
                assert!(jb.described_at >= ja.described_at, "{}", ja.job.name);
            }
        }
    }

    // A priority change the listing cannot show, made while faults still hit the API.
    let sdk = {
        let creds = aws_credential_types::Credentials::from_keys("AKIDTEST", "secret", None);
        aws_sdk_batch::Client::from_conf(
            aws_sdk_batch::Config::builder()
                .behavior_version(aws_sdk_batch::config::BehaviorVersion::latest())
                .region(aws_sdk_batch::config::Region::new("us-east-1"))
                .credentials_provider(creds)
                .endpoint_url(h.endpoint_url())
                .build(),
        )
    };
    moving.store(false, Ordering::SeqCst);
    clock.await.unwrap();
    // Any waiting job will do; the new priority differs from its current one. None waiting
    // would make the check below meaningless, so that fails instead of skipping it.
    let (runnable, new_priority) = h
        .with_engine(|e| {
            e.jobs()
                .find(|j| j.status == JobStatus::Runnable)
                .map(|j| (j.id, if j.priority == 50 { 51 } else { 50 }))
        })
        .unwrap()
        .expect("the demo has a RUNNABLE job after ten simulated minutes");
    h.set_faults(FaultSpec::none());
    sdk.update_service_job()
        .job_id(&runnable)
        .scheduling_priority(new_priority as i32)
        .send()
        .await
        .unwrap();

    // Phase 2: faults off, world frozen: the poller must converge by itself.
    let deadline = Instant::now() + Duration::from_secs(45);
    let mut last_diffs = vec!["no snapshot".to_string()];
    let mut converged = None;
    while Instant::now() < deadline {
        let left = deadline.saturating_duration_since(Instant::now());
        let Ok(Some(s)) = tokio::time::timeout(left, handle.snapshots.recv()).await else {
            break;
        };
        let q = &s.queues[0];
        last_diffs = differences(&h, q);
        if last_diffs.is_empty() && q.stale_reason.is_none() {
            converged = Some(s);
            break;
        }
    }
    let s = converged.unwrap_or_else(|| panic!("did not converge: {last_diffs:#?}"));
    println!(
        "{} snapshots under faults; converged {:.1} s after the faults stopped",
        seen.len(),
        45.0 - deadline
            .saturating_duration_since(Instant::now())
            .as_secs_f64()
    );
    assert_eq!(s.health.state, HealthState::Healthy);
    assert!(s.queues[0].refreshed_at.is_some());
    let j = s.queues[0]
        .jobs
        .iter()
        .find(|j| j.job.id == runnable)
        .expect("the re-prioritised job is in the converged snapshot");
    assert_eq!(j.job.priority, new_priority);
    handle.shutdown().await;
}
