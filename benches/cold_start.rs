//! Cold start at scale (issue 20): how soon the console's first screen and its complete view
//! come, against the emulator with 20 quota shares, many active jobs, a fixed latency per call
//! and a per-operation rate limit; the calls a steady refresh makes; the same for a warm restart
//! from the journal; and the console's resident memory and frame time at that size.
//!
//! The poller runs as the console runs it (`progressive`, the default interval and concurrency)
//! against an in-process emulator, through the real SDK client. Sizes are environment
//! variables, so the full sizes can be run where there is time (at 10/s, 10,000 describes alone
//! take 1,000 s):
//!
//! | variable | default | meaning |
//! |---|---|---|
//! | `QT_JOBS` | 10000 | active jobs (spread over 20 shares) |
//! | `QT_LATENCY_MS` | 50 | latency of every call |
//! | `QT_RATE` | 10 | calls a second allowed per operation (a token bucket each, burst one second's worth); `none` for no limit |
//! | `QT_CAP_S` | 600 | longest wait for a complete view; past it the time is projected from the rate reached |
//! | `QT_STEADY` | 3 | steady refreshes measured |
//! | `QT_CHANGED_S` | 120 | simulated seconds the world moves on between the journaled snapshot and the warm restart |
//! | `QT_CHANGED_JOBS` | 1% of `QT_JOBS` | jobs terminated between the journaled snapshot and the warm restart (others start in their place) |
//! | `QT_CONSOLE` | 1 | 0 skips the console's memory and frame time |
//! | `QT_COLD` | 1 | 0 skips the cold start and the steady refreshes (a warm restart only) |
//!
//! ```sh
//! cargo bench --bench cold_start
//! QT_JOBS=50000 QT_RATE=100 cargo bench --bench cold_start
//! QT_JOBS=1000 QT_RATE=10 QT_CONSOLE=0 cargo bench --bench cold_start
//! ```
//!
//! The console's memory is measured in a child process (this binary again, with
//! `QT_CONSOLE_CHILD` set to the emulator's endpoint): it polls the world once, completely, as
//! the console's poller does, applies the snapshot to the console and draws; its resident set
//! (VmRSS, VmHWM) is then the console's, not the emulator's.

// Benchmarks are test code: a broken setup should stop the run loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// Test code may be longer than the 80 lines denied to the libraries and binaries.
#![allow(clippy::too_many_lines)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use quotatop::commands::warm;
use quotatop_aws::batch::{BatchClient, ConnectOptions, StaticCredentials};
use quotatop_emulator::{
    self as emulator, ClockMode, EmulatorConfig, EmulatorHandle, FaultSpec, OPERATIONS,
};
use quotatop_model::Snapshot;
use quotatop_store::journal::{Journal, JournalConfig};

#[path = "cold_start/console.rs"]
mod console;
#[path = "support/memory.rs"]
mod memory;
#[path = "support/soak_world.rs"]
mod soak_world;
use quotatop_aws::poll::{self, PollConfig, Poller};
use soak_world::{SHARES, world};

const DESCRIBE: &str = "describeservicejob";
const LIST: &str = "listservicejobs";

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

struct Args {
    jobs: u64,
    latency_ms: u64,
    /// `None`: no rate limit.
    rate: Option<f64>,
    cap: Duration,
    steady: usize,
    changed_s: u64,
    changed_jobs: u64,
    console: bool,
    cold: bool,
}

fn args() -> Args {
    let rate = std::env::var("QT_RATE").unwrap_or_else(|_| "10".into());
    Args {
        jobs: env_u64("QT_JOBS", 10_000),
        latency_ms: env_u64("QT_LATENCY_MS", 50),
        rate: if rate == "none" {
            None
        } else {
            Some(rate.parse().expect("QT_RATE: a number or none"))
        },
        cap: Duration::from_secs(env_u64("QT_CAP_S", 600)),
        steady: env_u64("QT_STEADY", 3) as usize,
        changed_s: env_u64("QT_CHANGED_S", 120),
        changed_jobs: env_u64("QT_CHANGED_JOBS", env_u64("QT_JOBS", 10_000) / 100),
        console: env_u64("QT_CONSOLE", 1) != 0,
        cold: env_u64("QT_COLD", 1) != 0,
    }
}

fn counts(h: &EmulatorHandle) -> BTreeMap<&'static str, u64> {
    OPERATIONS.iter().map(|op| (*op, h.calls(op))).collect()
}

fn delta(
    after: &BTreeMap<&'static str, u64>,
    before: &BTreeMap<&'static str, u64>,
) -> BTreeMap<&'static str, u64> {
    after
        .iter()
        .map(|(op, n)| (*op, n - before.get(op).copied().unwrap_or(0)))
        .filter(|(_, n)| *n > 0)
        .collect()
}

fn total(m: &BTreeMap<&'static str, u64>) -> u64 {
    m.values().sum()
}

async fn connect(endpoint: String) -> BatchClient {
    BatchClient::connect(ConnectOptions {
        profile: None,
        region: Some("us-east-1".into()),
        endpoint_url: Some(endpoint),
        credentials: Some(StaticCredentials {
            access_key_id: "AKIDBENCH".into(),
            secret_access_key: "bench".into(),
        }),
    })
    .await
    .expect("client")
}

/// The console's poller settings (`tui`: progressive, default interval and concurrency).
fn console_poll(queue: &str) -> PollConfig {
    PollConfig {
        queues: vec![queue.to_string()],
        progressive: true,
        ..PollConfig::default()
    }
}

/// One run of the console's poller until the view is complete (or `cap`).
struct Run {
    /// The first snapshot received (cold: the poller's early look, before any job is listed).
    first_screen: Duration,
    /// The first snapshot with jobs in it (listed so far), if any came.
    first_listed: Option<Duration>,
    first_jobs: usize,
    first_described: usize,
    /// `None`: not complete within the cap.
    complete: Option<Duration>,
    /// Described jobs and total at the end, and when.
    last: (usize, usize, Duration),
    calls: BTreeMap<&'static str, u64>,
    snapshots: usize,
    /// Refreshes seen (distinct sequence numbers of live snapshots: a refresh's progress
    /// snapshots carry its number).
    refreshes: usize,
    throttled: u64,
    /// ListServiceJobs calls refused by the rate limit (of `calls`).
    list_throttled: u64,
    snapshot: Snapshot,
}

async fn until_complete(
    h: &EmulatorHandle,
    handle: &mut poll::PollHandle,
    started: Instant,
    cap: Duration,
) -> Run {
    let before = counts(h);
    let throttled_before = h.fault_stats().rate_limited;
    let list_throttled_before = h.rate_limited(LIST);
    let first = handle.snapshots.recv().await.expect("a first snapshot");
    let first_screen = started.elapsed();
    let q = &first.queues[0];
    let (first_described, first_jobs) = q
        .describe_progress()
        .unwrap_or((q.jobs.len(), q.jobs.len()));
    assert!(!q.shares.is_empty(), "the first screen has the shares");
    let mut first_listed = (!q.jobs.is_empty()).then_some(first_screen);
    let mut sequences = std::collections::BTreeSet::new();
    if !first.health.from_history {
        sequences.insert(first.sequence);
    }
    let mut snap = first;
    let mut snapshots = 1;
    while !snap.is_complete() && started.elapsed() < cap {
        if first_listed.is_none() && snap.queues.iter().any(|q| !q.jobs.is_empty()) {
            first_listed = Some(started.elapsed());
        }
        match tokio::time::timeout(
            cap.saturating_sub(started.elapsed()),
            handle.snapshots.recv(),
        )
        .await
        {
            Ok(Some(s)) => {
                if !s.health.from_history {
                    sequences.insert(s.sequence);
                }
                snap = s;
                snapshots += 1;
            }
            _ => break,
        }
    }
    let q = &snap.queues[0];
    let (done, all) = q
        .describe_progress()
        .unwrap_or((q.jobs.len(), q.jobs.len()));
    if first_listed.is_none() && snap.queues.iter().any(|q| !q.jobs.is_empty()) {
        first_listed = Some(started.elapsed());
    }
    Run {
        first_screen,
        first_listed,
        first_jobs,
        first_described,
        complete: snap.is_complete().then(|| started.elapsed()),
        last: (done, all, started.elapsed()),
        calls: delta(&counts(h), &before),
        snapshots,
        refreshes: sequences.len(),
        throttled: h.fault_stats().rate_limited - throttled_before,
        list_throttled: h.rate_limited(LIST) - list_throttled_before,
        snapshot: snap,
    }
}

fn secs(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

/// Time to a complete view: measured, or projected from the describe rate reached by the cap.
fn complete_text(r: &Run) -> String {
    match r.complete {
        Some(d) => secs(d),
        None => {
            let (done, all, at) = r.last;
            let rate = done.saturating_sub(r.first_described) as f64 / at.as_secs_f64();
            if rate <= 0.0 {
                return format!(
                    "not within {} ({done} of {all} described; no describe progress)",
                    secs(at)
                );
            }
            let projected = at.as_secs_f64() + (all - done) as f64 / rate;
            format!(
                "not within {} ({done} of {all} described; ~{projected:.0} s projected at {rate:.1}/s)",
                secs(at)
            )
        }
    }
}

/// The floor of a complete view: every job described once, at the rate limit (per operation,
/// so the describes' bucket bounds it), or without one at the latency and concurrency.
fn floor(jobs: usize, a: &Args, concurrency: usize) -> Duration {
    match a.rate {
        Some(r) => Duration::from_secs_f64(jobs as f64 / r),
        None => {
            Duration::from_secs_f64(jobs as f64 * a.latency_ms as f64 / 1000.0 / concurrency as f64)
        }
    }
}

fn report(name: &str, r: &Run, floor: Duration) {
    let ratio = r.complete.map_or("-".to_string(), |c| {
        format!("{:.2}×", c.as_secs_f64() / floor.as_secs_f64().max(1e-9))
    });
    println!(
        "{name}: first screen {} ({} jobs listed, {} described); first jobs listed {}; \
         complete view {} vs floor {} ({ratio}); \
         {} snapshots of {} refreshes, {} calls ({} describes, {} list pages), {} answered 429",
        secs(r.first_screen),
        r.first_jobs,
        r.first_described,
        r.first_listed.map_or("-".to_string(), secs),
        complete_text(r),
        secs(floor),
        r.snapshots,
        r.refreshes,
        total(&r.calls),
        r.calls.get(DESCRIBE).copied().unwrap_or(0),
        r.calls.get(LIST).copied().unwrap_or(0),
        r.throttled,
    );
    println!("  calls by operation: {:?}", r.calls);
}

fn main() {
    if let Ok(endpoint) = std::env::var("QT_CONSOLE_CHILD") {
        console::console_child(endpoint);
        return;
    }
    let a = args();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(bench(a));
}

async fn bench(a: Args) {
    let nproc = std::thread::available_parallelism().map_or(0, |n| n.get());
    let setup = Instant::now();
    let scenario = world(a.jobs);
    let queue = scenario.queue.name.clone();
    let mut config = EmulatorConfig::from_scenario(scenario).expect("config");
    config.clock = ClockMode::Manual;
    let h = emulator::start(config).await.expect("emulator");
    // Twenty simulated minutes: every job has arrived; a few hundred run, the rest wait.
    for _ in 0..20 {
        h.advance(60_000).expect("advance");
    }
    let active = h
        .with_engine(|e| e.jobs().filter(|j| !j.status.is_terminal()).count())
        .expect("engine");
    let client = connect(h.endpoint_url()).await;
    println!(
        "world: {SHARES} shares, {active} active jobs; {} ms latency per call; rate limit {} per \
         operation; {nproc} CPUs; set up in {}",
        a.latency_ms,
        a.rate.map_or("none".to_string(), |r| format!("{r}/s")),
        secs(setup.elapsed())
    );

    // The journal a warm restart starts from: a complete view, taken without faults (the
    // journal of an earlier run), before the world moves on.
    let dir = tempfile::tempdir().expect("tempdir");
    let journal = dir.path().join("journal.sqlite3");
    {
        let t = Instant::now();
        let mut p = Poller::new(PollConfig {
            queues: vec![queue.clone()],
            concurrency: 32,
            refresh_deadline: Duration::from_secs(3600),
            ..PollConfig::default()
        });
        let s = p.refresh(&client).await;
        assert!(s.is_complete(), "the journaled view is complete");
        Journal::open(&journal, JournalConfig::default())
            .expect("journal")
            .record(&s)
            .expect("record");
        println!(
            "journaled a complete view in {} (setup, no faults)",
            secs(t.elapsed())
        );
    }

    let mut faults = format!("latency={}ms", a.latency_ms);
    if let Some(r) = a.rate {
        faults.push_str(&format!(";rate={r}/s"));
    }
    h.set_faults(FaultSpec::parse(&faults).expect("faults"));
    let concurrency = PollConfig::default().concurrency;

    let cold = if a.cold {
        Some(cold_phase(&h, &client, &queue, &a, concurrency).await)
    } else {
        println!("cold start: skipped (QT_COLD=0)");
        None
    };

    // Warm restart: the world moved on since the journal (jobs terminated, others started in
    // their place); the console loads the journal, shows it, and its poller starts from it.
    h.set_faults(FaultSpec::parse("").expect("no faults"));
    let terminated = terminate_some(&h, a.changed_jobs).await;
    h.advance(a.changed_s as i64 * 1000).expect("advance");
    h.set_faults(FaultSpec::parse(&faults).expect("faults"));
    // A restarted console is a new process: a new client, whose pacer has learned nothing.
    let client = connect(h.endpoint_url()).await;
    let started = Instant::now();
    let warm =
        warm::load(&journal, std::slice::from_ref(&queue), client.source()).expect("a warm start");
    let shown = started.elapsed();
    let mut handle = poll::spawn_seeded(client.clone(), console_poll(&queue), Some(&warm));
    let restart = until_complete(&h, &mut handle, started, a.cap).await;
    handle.shutdown().await;
    // The listing floor: one listing's pages (each status's pages come one after another) at
    // the rate limit, or at the latency, and the describes of what changed at the rate limit.
    // Pages answered: a page refused 429 and asked again is one page, not two.
    let pages = restart
        .calls
        .get(LIST)
        .copied()
        .unwrap_or(0)
        .saturating_sub(restart.list_throttled)
        / restart.refreshes.max(1) as u64;
    let needed = changed(&warm, &restart.snapshot);
    let by_latency = pages as f64 * a.latency_ms as f64 / 1000.0;
    let list_floor = Duration::from_secs_f64(match a.rate {
        Some(r) => (pages.max(needed) as f64 / r).max(by_latency),
        None => by_latency,
    });
    println!(
        "warm restart: {pages} list pages per refresh, {needed} jobs changed since the journal"
    );
    println!(
        "warm restart: journal shown in {} ({} jobs, from history); since the journal \
         {terminated} jobs were terminated and the world moved on {} s",
        secs(shown),
        warm.queues[0].jobs.len(),
        a.changed_s
    );
    report("warm restart", &restart, list_floor);

    println!();
    println!("| measure | goal | measured |");
    println!("|---|---|---:|");
    if let Some(c) = &cold {
        c.table();
    }
    println!("| first screen, warm (journal) | ≤ 2 s | {} |", secs(shown));
    println!(
        "| complete view, warm | ≤ 1.2× listing floor ({}) | {} ({} calls, {} describes) |",
        secs(list_floor),
        complete_text(&restart),
        total(&restart.calls),
        restart.calls.get(DESCRIBE).copied().unwrap_or(0)
    );
    drop(cold);
    drop(restart.snapshot);

    if a.console {
        h.set_faults(FaultSpec::parse("").expect("no faults"));
        let out = std::process::Command::new(std::env::current_exe().expect("exe"))
            .env("QT_CONSOLE_CHILD", h.endpoint_url())
            .env("QT_QUEUE", &queue)
            .output()
            .expect("console child");
        print!("{}", String::from_utf8_lossy(&out.stdout));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    h.shutdown().await.expect("shutdown");
}

/// The cold start and the steady refreshes after it.
struct Cold {
    run: Run,
    floor: Duration,
    /// Calls and wall time of each steady refresh.
    steady: Vec<(u64, Duration)>,
}

impl Cold {
    fn table(&self) {
        println!(
            "| first screen, cold | ≤ 2 s | {} |",
            secs(self.run.first_screen)
        );
        println!(
            "| first jobs listed, cold | | {} |",
            self.run.first_listed.map_or("-".to_string(), secs)
        );
        println!(
            "| complete view, cold | ≤ 1.2× floor ({}) | {} |",
            secs(self.floor),
            complete_text(&self.run)
        );
        if let Some(s) = self.steady.iter().map(|s| s.0).min() {
            println!(
                "| calls per steady refresh | (about a listing) | {s}–{} |",
                self.steady.iter().map(|s| s.0).max().unwrap_or(s)
            );
        }
    }
}

async fn cold_phase(
    h: &EmulatorHandle,
    client: &BatchClient,
    queue: &str,
    a: &Args,
    concurrency: usize,
) -> Cold {
    // Cold start: the console's poller from nothing.
    let started = Instant::now();
    let mut handle = poll::spawn(client.clone(), console_poll(queue));
    let run = until_complete(h, &mut handle, started, a.cap).await;
    let floor = floor(run.last.1, a, concurrency);
    report("cold start", &run, floor);

    // Steady refreshes (thirty simulated seconds apart), once complete.
    let mut steady = Vec::new();
    if run.complete.is_some() {
        for _ in 0..a.steady {
            h.advance(30_000).expect("advance");
            handle.refresh_now();
            let before = counts(h);
            let t = Instant::now();
            // A long refresh sends progress snapshots (at most one a second) before its own:
            // the refresh is over when none follows for a while.
            handle.snapshots.recv().await.expect("snapshot");
            let mut wall = t.elapsed();
            while let Ok(s) =
                tokio::time::timeout(Duration::from_millis(1_500), handle.snapshots.recv()).await
            {
                s.expect("snapshot");
                wall = t.elapsed();
            }
            steady.push((total(&delta(&counts(h), &before)), wall));
        }
        println!(
            "steady refreshes (calls, wall): {:?}",
            steady
                .iter()
                .map(|(c, d)| (*c, format!("{:.1} s", d.as_secs_f64())))
                .collect::<Vec<_>>()
        );
    } else {
        println!("steady refreshes: not measured (no complete view within the cap)");
    }
    handle.shutdown().await;

    Cold { run, floor, steady }
}

/// Jobs whose listing differs between the journaled snapshot and the complete view (new,
/// moved on, vanished): what a warm restart must describe.
fn changed(journaled: &Snapshot, now: &Snapshot) -> u64 {
    let then: std::collections::HashMap<&str, &quotatop_model::ServiceJob> = journaled.queues[0]
        .jobs
        .iter()
        .map(|j| (j.job.id.as_str(), &*j.job))
        .collect();
    let key = |j: &quotatop_model::ServiceJob| {
        (
            j.status,
            j.status_reason.clone(),
            j.scheduled_at,
            j.started_at,
            j.stopped_at,
            j.is_terminated,
        )
    };
    let listed: std::collections::HashSet<&str> = now.queues[0]
        .jobs
        .iter()
        .map(|j| j.job.id.as_str())
        .collect();
    let moved = now.queues[0]
        .jobs
        .iter()
        .filter(|j| {
            then.get(j.job.id.as_str())
                .is_none_or(|t| key(t) != key(&j.job))
        })
        .count();
    let vanished = then
        .iter()
        .filter(|(id, j)| !j.status.is_terminal() && !listed.contains(*id))
        .count();
    (moved + vanished) as u64
}

/// Terminates `n` active jobs (spread over the queue) through the API; returns how many.
async fn terminate_some(h: &EmulatorHandle, n: u64) -> u64 {
    let ids: Vec<String> = h
        .with_engine(|e| {
            e.jobs()
                .filter(|j| !j.status.is_terminal())
                .map(|j| j.id.clone())
                .collect()
        })
        .expect("engine");
    let step = (ids.len() / n.max(1) as usize).max(1);
    let conf = aws_sdk_batch::Config::builder()
        .behavior_version(aws_sdk_batch::config::BehaviorVersion::latest())
        .region(aws_sdk_batch::config::Region::new("us-east-1"))
        .credentials_provider(aws_credential_types::Credentials::from_keys(
            "AKIDBENCH",
            "bench",
            None,
        ))
        .endpoint_url(h.endpoint_url())
        .build();
    let sdk = aws_sdk_batch::Client::from_conf(conf);
    let mut done = 0;
    for id in ids.iter().step_by(step).take(n as usize) {
        sdk.terminate_service_job()
            .job_id(id)
            .reason("cold_start bench")
            .send()
            .await
            .expect("terminate");
        done += 1;
    }
    done
}
