//! API calls and wall time per refresh of the console's poller, against the emulator with 20
//! quota shares and 5,000 active jobs, next to the naive design (list, then describe every job
//! on every refresh) measured in the same run on the same world.
//!
//! Every call pays a fixed latency injected by the emulator (`--latency-ms`, default 5 ms), so
//! a design that waited for calls one by one would show it: 5,000 serial describes cost at least
//! 25 s. Both designs run with the same concurrency (the poller's default, 8).
//!
//! ```sh
//! cargo bench --bench poll_refresh
//! cargo bench --bench poll_refresh -- --latency-ms 20 --steady 10
//! ```

// Benchmarks are test code: a broken setup should stop the run loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// Test code may be longer than the 80 lines denied to the libraries and binaries.
#![allow(clippy::too_many_lines)]

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use quotatop_aws::batch::{BatchClient, ConnectOptions, StaticCredentials};
use quotatop_aws::poll::{PollConfig, Poller};
use quotatop_emulator::{
    self as emulator, ClockMode, EmulatorConfig, EmulatorHandle, FaultSpec, OPERATIONS, Scenario,
};
use quotatop_model::JobStatus;

const SHARES: usize = 20;
const JOBS_PER_SHARE: u32 = 250;

struct Args {
    latency_ms: u64,
    steady: usize,
    naive: usize,
}

fn args() -> Args {
    let mut a = Args {
        latency_ms: 5,
        steady: 5,
        naive: 2,
    };
    let argv: Vec<String> = std::env::args().collect();
    let mut i = 1;
    while i < argv.len() {
        let value = || argv.get(i + 1).and_then(|v| v.parse::<u64>().ok());
        match argv[i].as_str() {
            "--latency-ms" => a.latency_ms = value().unwrap_or(a.latency_ms),
            "--steady" => a.steady = value().map_or(a.steady, |v| v.max(1) as usize),
            "--naive" => a.naive = value().map_or(a.naive, |v| v.max(1) as usize),
            _ => {
                i += 1;
                continue;
            }
        }
        i += 2;
    }
    a
}

/// The soak world (20 shares over three instance types), every share submitting 250 long
/// jobs in its first simulated minutes: 5,000 jobs, all still active for hours.
fn world() -> Scenario {
    let mut s = Scenario::load("scenarios/soak.toml".as_ref()).expect("scenarios/soak.toml");
    assert_eq!(s.shares.len(), SHARES, "the soak world has 20 shares");
    for share in &mut s.shares {
        for (k, g) in share.generators.iter_mut().enumerate() {
            let first = k == 0;
            g.arrivals_per_hour = 15_000.0;
            g.duration_s = [100 * 3600, 200 * 3600];
            g.start_s = 0;
            g.max_jobs = Some(if first { JOBS_PER_SHARE } else { 0 });
        }
        share.generators.retain(|g| g.max_jobs != Some(0));
    }
    s.jobs.clear();
    s
}

fn total_calls(h: &EmulatorHandle) -> u64 {
    OPERATIONS.iter().map(|op| h.calls(op)).sum()
}

/// (calls, wall) of one refresh.
type Sample = (u64, Duration);

fn median(v: &mut [Sample]) -> Sample {
    v.sort_by_key(|s| s.1);
    v[v.len() / 2]
}

/// The naive design: every status listed (all pages), then every job described.
async fn naive_refresh(client: &BatchClient, queue: &str, concurrency: usize) -> usize {
    let mut ids = Vec::new();
    for status in JobStatus::ALL {
        let jobs = client
            .list_service_jobs(queue, status, None)
            .await
            .expect("list");
        ids.extend(jobs.into_iter().map(|j| j.id));
    }
    futures_util::stream::iter(ids)
        .map(|id| async move { client.describe_service_job(&id).await.is_ok() })
        .buffer_unordered(concurrency)
        .filter(|ok| std::future::ready(*ok))
        .count()
        .await
}

fn main() {
    let a = args();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async move {
        let scenario = world();
        let queue = scenario.queue.name.clone();
        let mut config = EmulatorConfig::from_scenario(scenario).expect("config");
        config.clock = ClockMode::Manual;
        let h = emulator::start(config).await.expect("emulator");
        // Twenty simulated minutes: every job has arrived; a few hundred run, the rest wait.
        for _ in 0..20 {
            h.advance(60_000).expect("advance");
        }
        let (active, running) = h
            .with_engine(|e| {
                let active = e.jobs().filter(|j| !j.status.is_terminal()).count();
                let running = e.jobs().filter(|j| j.status == JobStatus::Running).count();
                (active, running)
            })
            .expect("engine");
        h.set_faults(FaultSpec::parse(&format!("latency={}ms", a.latency_ms)).expect("faults"));
        let client = BatchClient::connect(ConnectOptions {
            profile: None,
            region: Some("us-east-1".into()),
            endpoint_url: Some(h.endpoint_url()),
            credentials: Some(StaticCredentials {
                access_key_id: "AKIDBENCH".into(),
                secret_access_key: "bench".into(),
            }),
        })
        .await
        .expect("client");
        let poll = PollConfig {
            queues: vec![queue.clone()],
            refresh_deadline: Duration::from_secs(600),
            ..PollConfig::default()
        };
        let concurrency = poll.concurrency;
        let budget = poll.describe_budget;
        println!(
            "world: {SHARES} shares, {active} active jobs ({running} running), \
             {} ms latency per call, concurrency {concurrency}, describe budget {budget}",
            a.latency_ms
        );

        let mut poller = Poller::new(poll);
        let before = total_calls(&h);
        let t = Instant::now();
        let first = poller.refresh(&client).await;
        let first_sample = (total_calls(&h) - before, t.elapsed());
        let seen = first.queues.first().map_or(0, |q| q.jobs.len());
        assert!(
            first
                .queues
                .first()
                .is_some_and(|q| q.stale_reason.is_none()),
            "the first refresh completed"
        );

        let mut steady = Vec::new();
        let mut per_op: Vec<(&str, u64)> = Vec::new();
        for _ in 0..a.steady {
            // Thirty simulated seconds between refreshes, as at the default interval.
            h.advance(30_000).expect("advance");
            let ops: Vec<u64> = OPERATIONS.iter().map(|op| h.calls(op)).collect();
            let before = total_calls(&h);
            let t = Instant::now();
            poller.refresh(&client).await;
            steady.push((total_calls(&h) - before, t.elapsed()));
            per_op = OPERATIONS
                .iter()
                .zip(ops)
                .map(|(op, b)| (*op, h.calls(op) - b))
                .filter(|(_, n)| *n > 0)
                .collect();
        }
        let steady_sample = median(&mut steady);

        let mut naive = Vec::new();
        for _ in 0..a.naive {
            h.advance(30_000).expect("advance");
            let before = total_calls(&h);
            let t = Instant::now();
            let described = naive_refresh(&client, &queue, concurrency).await;
            naive.push((total_calls(&h) - before, t.elapsed()));
            assert!(
                described >= active,
                "naive described {described} of {active}"
            );
        }
        let naive_sample = median(&mut naive);

        let serial = |calls: u64| Duration::from_millis(calls * a.latency_ms);
        println!("jobs in the poller's first snapshot: {seen}");
        println!();
        println!("| design | refresh | API calls | wall | calls × latency (serial floor) |");
        println!("|---|---|---:|---:|---:|");
        for (design, refresh, (calls, wall)) in [
            ("poller", "first", first_sample),
            ("poller", "steady (median)", steady_sample),
            ("naive", "every (median)", naive_sample),
        ] {
            println!(
                "| {design} | {refresh} | {calls} | {:.2} s | {:.2} s |",
                wall.as_secs_f64(),
                serial(calls).as_secs_f64()
            );
        }
        println!();
        println!(
            "steady state: {:.1}× fewer calls than naive; first refresh {:.1}× faster than its \
             calls made one by one",
            naive_sample.0 as f64 / steady_sample.0.max(1) as f64,
            serial(first_sample.0).as_secs_f64() / first_sample.1.as_secs_f64().max(1e-9)
        );
        println!(
            "steady samples (calls, ms): {:?}",
            steady
                .iter()
                .map(|(c, d)| (*c, d.as_millis()))
                .collect::<Vec<_>>()
        );
        println!("last steady refresh by operation: {per_op:?}");
        h.shutdown().await.expect("shutdown");
    });
}
