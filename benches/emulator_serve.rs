//! How fast the emulator serves a client at scale (issue 36): DescribeServiceJob calls a second
//! and the time to list 1,000 jobs with ListServiceJobs (ten pages of 100, the API's largest
//! page) and one 100-job page, against the soak world of `QT_JOBS` active jobs (default 50,000).
//!
//! The emulator runs on a runtime of one thread (one core at most); the client, the real
//! `aws_sdk_batch` SDK, on another thread with `QT_CONCURRENCY` calls in flight (default 8).
//! Each figure is given two ways: per wall-clock second as the client saw it, and per second of
//! the emulator thread's own CPU time (from `/proc`), which is what one core could serve and
//! moves least when other work shares the machine. The load average is printed beside them.
//!
//! ```sh
//! cargo bench --bench emulator_serve
//! QT_JOBS=10000 QT_DESCRIBES=5000 cargo bench --bench emulator_serve
//! ```

// Benchmarks are test code: a broken setup should stop the run loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use aws_sdk_batch::config::{BehaviorVersion, Region};
use aws_sdk_batch::types::ServiceJobStatus;
use quotatop_emulator::{self as emulator, ClockMode, EmulatorConfig, EmulatorHandle};

#[path = "support/soak_world.rs"]
mod soak_world;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The 1-minute load average.
fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

/// CPU time (user + system) of one thread of this process, from `/proc`.
fn thread_cpu(tid: &str) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap();
    // Fields after the command name (which may hold spaces): state is field 3, utime 14,
    // stime 15; in clock ticks (100 a second on Linux).
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap();
    Duration::from_millis(ticks * 10)
}

/// The emulator on a one-thread runtime of its own: its handle, that thread's id, and what stops
/// the runtime when dropped.
fn start_emulator(jobs: u64) -> (EmulatorHandle, String, tokio::sync::oneshot::Sender<()>) {
    let (tx, rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let mut config = EmulatorConfig::from_scenario(soak_world::world(jobs)).unwrap();
            config.clock = ClockMode::Manual;
            let h = emulator::start(config).await.unwrap();
            // Twenty simulated minutes: every job has arrived; a few hundred run, the rest wait.
            for _ in 0..20 {
                h.advance(60_000).unwrap();
            }
            let tid = std::fs::read_link("/proc/thread-self")
                .unwrap()
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            tx.send((h, tid)).unwrap();
            let _ = stop_rx.await;
        });
    });
    let (h, tid) = rx.recv().unwrap();
    (h, tid, stop_tx)
}

fn client(endpoint: String) -> aws_sdk_batch::Client {
    let creds = aws_credential_types::Credentials::from_keys("AKIDBENCH", "bench", None);
    let conf = aws_sdk_batch::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(creds)
        .endpoint_url(endpoint)
        .build();
    aws_sdk_batch::Client::from_conf(conf)
}

/// Calls a second by the wall clock and by the emulator thread's CPU time.
struct Rate {
    calls: u64,
    wall: Duration,
    cpu: Duration,
}

impl Rate {
    fn print(&self, what: &str) {
        let per = |d: Duration| self.calls as f64 / d.as_secs_f64().max(1e-9);
        println!(
            "{what}: {} calls in {:.2} s: {:.0}/s by the wall clock; emulator thread {:.2} s CPU = {:.0}/s on one core ({:.0} µs a call); load {}",
            self.calls,
            self.wall.as_secs_f64(),
            per(self.wall),
            self.cpu.as_secs_f64(),
            per(self.cpu),
            self.cpu.as_secs_f64() * 1e6 / self.calls.max(1) as f64,
            load()
        );
    }
}

async fn describes(
    c: &aws_sdk_batch::Client,
    ids: &[String],
    n: u64,
    conc: u64,
    tid: &str,
) -> Rate {
    let cpu0 = thread_cpu(tid);
    let t = Instant::now();
    let next = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let mut tasks = Vec::new();
    for _ in 0..conc {
        let (c, ids, next) = (c.clone(), ids.to_vec(), next.clone());
        tasks.push(tokio::spawn(async move {
            loop {
                let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if k >= n {
                    return;
                }
                let id = &ids[(k as usize * 7919) % ids.len()];
                c.describe_service_job().job_id(id).send().await.unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    Rate {
        calls: n,
        wall: t.elapsed(),
        cpu: thread_cpu(tid) - cpu0,
    }
}

/// Lists `pages` pages of 100 RUNNABLE jobs, one after another (as a poller pages).
async fn list_pages(c: &aws_sdk_batch::Client, queue: &str, pages: u64) -> usize {
    let mut token = None;
    let mut listed = 0;
    for _ in 0..pages {
        let out = c
            .list_service_jobs()
            .job_queue(queue)
            .job_status(ServiceJobStatus::Runnable)
            .max_results(100)
            .set_next_token(token)
            .send()
            .await
            .unwrap();
        listed += out.job_summary_list().len();
        token = out.next_token().map(str::to_string);
        if token.is_none() {
            break;
        }
    }
    listed
}

async fn lists(
    c: &aws_sdk_batch::Client,
    queue: &str,
    rounds: u64,
    pages: u64,
    tid: &str,
) -> (Rate, Duration) {
    let cpu0 = thread_cpu(tid);
    let t = Instant::now();
    let mut each = Vec::new();
    for _ in 0..rounds {
        let t1 = Instant::now();
        let listed = list_pages(c, queue, pages).await;
        assert_eq!(listed as u64, pages * 100, "a full listing");
        each.push(t1.elapsed());
    }
    each.sort();
    (
        Rate {
            calls: rounds * pages,
            wall: t.elapsed(),
            cpu: thread_cpu(tid) - cpu0,
        },
        each[each.len() / 2],
    )
}

fn main() {
    let jobs = env_u64("QT_JOBS", 50_000);
    let n = env_u64("QT_DESCRIBES", 20_000);
    let conc = env_u64("QT_CONCURRENCY", 8);
    let setup = Instant::now();
    let (h, tid, stop) = start_emulator(jobs);
    let ids: Vec<String> = h.with_engine(|e| e.jobs().map(|j| j.id).collect()).unwrap();
    let active = h
        .with_engine(|e| e.jobs().filter(|j| !j.status.is_terminal()).count())
        .unwrap();
    let queue_name = soak_world::world(jobs).queue.name;
    println!(
        "world: {} shares, {} jobs ({active} active), set up in {:.1} s; {} CPUs; load {}",
        soak_world::SHARES,
        ids.len(),
        setup.elapsed().as_secs_f64(),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load()
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let c = client(h.endpoint_url());
        // Warm the connections.
        describes(&c, &ids, 100, conc, &tid).await;
        describes(&c, &ids, n, conc, &tid)
            .await
            .print("DescribeServiceJob");
        let (rate, median) = lists(&c, &queue_name, 20, 10, &tid).await;
        rate.print("ListServiceJobs (pages of 100)");
        println!(
            "  1,000 jobs listed (10 pages of 100, one after another): median {:.2} ms by the wall clock, {:.2} ms of emulator CPU; load {}",
            median.as_secs_f64() * 1e3,
            rate.cpu.as_secs_f64() * 1e3 / 20.0,
            load()
        );
        let (rate, median) = lists(&c, &queue_name, 200, 1, &tid).await;
        println!(
            "  one 100-job page: median {:.2} ms by the wall clock, {:.0} µs of emulator CPU; load {}",
            median.as_secs_f64() * 1e3,
            rate.cpu.as_secs_f64() * 1e6 / 200.0,
            load()
        );
    });
    drop(stop);
}
