//! Soak: the console's poller and journal against the emulator with `scenarios/soak.toml` (20
//! quota shares, a workload of 10,000 jobs), cycles of faults (latency, throttling, server
//! errors, dropped connections) with the world moving, each followed by faults off and the world
//! frozen until the snapshot equals the engine's state. Checked: every snapshot arrives
//! (contiguous sequence numbers) and is journaled or counted as dropped; staleness is shown
//! under faults; full recovery after each fault phase; resident memory after the warm-up stays
//! within a stated bound. Peak memory and CPU time are printed.
//!
//! A test binary of its own (not a module of `tests/it`): it measures this process's memory
//! and CPU, which other tests running in the same process would distort.
//! `cargo test --test soak` runs the short version (about 45 s). The long version:
//!
//! ```sh
//! QUOTATOP_SOAK_MINUTES=10 cargo test --release --test soak soak_long -- --ignored --nocapture
//! ```

// Test code: clippy.toml allows unwrap/expect/panic in #[test] functions; the support
// modules' helpers are neither.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// Test code may be longer than the 80 lines denied to the libraries and binaries.
#![allow(clippy::too_many_lines)]

mod soak_support;

use std::time::Duration;

use crate::soak_support::child::{SOAK_CHILD_ENV, serve_child};
use crate::soak_support::driver::{Plan, Report, run};
use crate::soak_support::procfs::RssSeries;
use quotatop_aws::poll::PollConfig;

const FAULTS: &str = "latency=5ms+45ms,throttle=10%,error=5%,drop=2%";

/// Growth allowed after the warm-up, over the highest resident size during it. The poller
/// holds the active jobs plus the newest finished ones and the journal's SQLite cache is
/// bounded, so a leak is the only way past this; the measured growth is printed.
const RSS_GROWTH_BOUND_KIB: u64 = 16 * 1024;

fn poll_config() -> PollConfig {
    PollConfig {
        interval: Duration::from_millis(500),
        max_backoff: Duration::from_secs(2),
        refresh_deadline: Duration::from_secs(5),
        queues: vec!["soak-training".to_string()],
        ..PollConfig::default()
    }
}

fn print(r: &Report) {
    let mib = |k: u64| k as f64 / 1024.0;
    println!(
        "soak: {:.1} s real, {:.1} h simulated, {} jobs submitted",
        r.elapsed.as_secs_f64(),
        r.simulated.as_secs_f64() / 3600.0,
        r.jobs_total
    );
    println!(
        "  faults injected: {} delayed, {} throttled, {} server errors, {} dropped connections",
        r.faults_injected.0, r.faults_injected.1, r.faults_injected.2, r.faults_injected.3
    );
    println!(
        "  snapshots: {} received, {} sequence gaps; journal: {} written, {} dropped, {} transitions, {:.1} MiB",
        r.received,
        r.gaps.len(),
        r.journal.snapshots_written,
        r.journal.dropped,
        r.journal.transitions_written,
        mib(r.journal_bytes / 1024)
    );
    println!(
        "  under faults: {} snapshots, {} with a stale queue, {} not healthy, oldest description {:.1} s; health states seen {:?}",
        r.faulted_snapshots,
        r.stale_snapshots,
        r.unhealthy_snapshots,
        r.max_described_age_faulted.as_secs_f64(),
        r.health_seen
    );
    for (i, rec) in r.recoveries.iter().enumerate() {
        match rec {
            Ok(d) => println!(
                "  cycle {}: equal to the engine {:.1} s after faults stopped",
                i + 1,
                d.as_secs_f64()
            ),
            Err(diffs) => println!("  cycle {}: NOT recovered: {diffs:?}", i + 1),
        }
    }
    let w = r.warm_up_end;
    println!(
        "  console process: RSS baseline {:.1} MiB (max during warm-up, first {:.0} s), growth after it {:.1} MiB, slope after it {:.0} KiB/min, peak (VmHWM) {:.1} MiB, CPU {:.1} s",
        mib(r.rss.baseline(w).unwrap_or(0)),
        w.as_secs_f64(),
        mib(r.rss.growth_after(w).unwrap_or(0)),
        r.rss.slope_kib_per_min(w).unwrap_or(f64::NAN),
        mib(r.peak_rss_kib),
        r.cpu.as_secs_f64()
    );
    println!(
        "  emulator process: peak RSS {:.1} MiB, CPU {:.1} s",
        mib(r.emulator_peak_rss_kib),
        r.emulator_cpu.as_secs_f64()
    );
}

fn check(r: &Report) {
    assert!(r.received > 0);
    assert_eq!(
        r.gaps,
        [],
        "no snapshot lost between the poller and the receiver"
    );
    assert_eq!(
        r.journal.snapshots_written + r.journal.dropped,
        r.received,
        "every snapshot journaled or counted as dropped"
    );
    assert_eq!(r.journal.last_error, None);
    assert_eq!(r.journal.unavailable, None);
    let (_, throttled, errors, dropped) = r.faults_injected;
    assert!(
        throttled > 0 && errors > 0 && dropped > 0,
        "the faults happened"
    );
    assert!(
        r.faulted_snapshots > 0,
        "snapshots kept coming under faults"
    );
    assert!(r.unhealthy_snapshots > 0, "health shows the faults");
    assert!(r.stale_snapshots > 0, "staleness is marked");
    assert_eq!(
        r.stale_but_healthy, 0,
        "a stale queue is never reported healthy"
    );
    assert_eq!(r.lost_jobs, 0, "a failed refresh keeps the last data");
    for (i, rec) in r.recoveries.iter().enumerate() {
        assert!(rec.is_ok(), "cycle {}: {rec:?}", i + 1);
    }
    let growth = r.rss.growth_after(r.warm_up_end).expect("memory samples");
    assert!(
        growth < RSS_GROWTH_BOUND_KIB,
        "resident memory grew {growth} KiB after the warm-up (bound {RSS_GROWTH_BOUND_KIB} KiB)"
    );
}

async fn soak(plan: Plan) {
    let dir = tempfile::tempdir().unwrap();
    let report = run(&plan, "soak_emulator_child", dir.path()).await;
    print(&report);
    check(&report);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn soak_short() {
    soak(Plan {
        warm_up: Duration::from_secs(4),
        cycles: 2,
        faulted: Duration::from_secs(12),
        recovery_limit: Duration::from_secs(20),
        speed: 600.0,
        faults: FAULTS.to_string(),
        poll: poll_config(),
    })
    .await;
}

/// The long soak: `QUOTATOP_SOAK_MINUTES` (default 10) of one-minute cycles (45 s faulted,
/// then recovery), the world at `QUOTATOP_SOAK_SPEED` (default 240, so all 10,000 jobs arrive within ten minutes) simulated seconds per
/// second while it moves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long: run with QUOTATOP_SOAK_MINUTES=N and --ignored"]
async fn soak_long() {
    let minutes: f64 = env_or("QUOTATOP_SOAK_MINUTES", 10.0);
    let speed: f64 = env_or("QUOTATOP_SOAK_SPEED", 240.0);
    soak(Plan {
        warm_up: Duration::from_secs(10),
        cycles: (minutes.max(1.0)) as u32,
        faulted: Duration::from_secs(45),
        recovery_limit: Duration::from_secs(30),
        speed,
        faults: FAULTS.to_string(),
        poll: poll_config(),
    })
    .await;
}

fn env_or(name: &str, default: f64) -> f64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The emulator's side of the soak, in the child process `crate::soak_support::child` starts; does
/// nothing unless run as that child.
#[test]
#[ignore = "the soak's emulator process; started by the soak tests"]
fn soak_emulator_child() {
    if std::env::var_os(SOAK_CHILD_ENV).is_some() {
        serve_child();
    }
}

#[test]
fn rss_series_figures() {
    let mut s = RssSeries::default();
    for (i, k) in [100, 120, 110, 130, 140, 150].into_iter().enumerate() {
        s.push(Duration::from_secs(60 * i as u64), k);
    }
    let w = Duration::from_secs(60);
    assert_eq!(s.baseline(w), Some(120));
    assert_eq!(s.growth_after(w), Some(30));
    assert_eq!(s.peak(), Some(150));
    let slope = s.slope_kib_per_min(w).unwrap();
    assert!((slope - 13.0).abs() < 1e-9, "{slope}");
    let (rss, hwm) = crate::soak_support::procfs::memory_kib("self").unwrap();
    assert!(rss > 0 && hwm >= rss);
    assert!(crate::soak_support::procfs::cpu_time("self").is_some());
}
