//! `quotatop replay --preset` on the eight Philly VCs: the three preset scenarios (isolated,
//! lending, lending with a protected share), scorecards included. Run:
//! `cargo bench --bench replay_presets`.
//!
//! It first runs the three scenarios once and prints the wall time and the process's peak
//! resident set size (`VmHWM`) after that run, then lets criterion time them. The traces are read
//! from the repository's `traces/philly-vc` (or `QUOTATOP_PHILLY_DIR`); without them the benchmark
//! fails rather than measuring nothing.

// Benchmarks are test code: a broken setup should stop the run loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use quotatop_model::{CapacityLimit, QuotaShare, SharingConfig};
use quotatop_replay::{
    Comparison, ReplayConfig, TraceJob, Workload, philly, presets, replay_lean, summed_limits,
};

fn traces_dir() -> PathBuf {
    let dir = std::env::var_os("QUOTATOP_PHILLY_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("traces/philly-vc"));
    assert!(
        dir.is_dir(),
        "the Philly traces are missing: no directory {} (set QUOTATOP_PHILLY_DIR)",
        dir.display()
    );
    dir
}

/// The process's peak resident set size so far, in KiB (`VmHWM` of /proc/self/status).
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status readable");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/self/status")
}

/// The traces and the three preset configurations, as `quotatop replay --preset` builds them.
fn load() -> (Vec<TraceJob>, Vec<ReplayConfig>) {
    let dir = traces_dir();
    let vcs: Vec<_> = philly::load_dir(&dir, None)
        .unwrap_or_else(|e| panic!("Philly traces in {} unreadable: {e}", dir.display()))
        .into_iter()
        .map(|v| (v.vc, v.gpus, v.jobs))
        .collect();
    assert!(!vcs.is_empty(), "no Philly traces in {}", dir.display());
    let shares: Vec<QuotaShare> = vcs
        .iter()
        .map(|(vc, gpus, _)| {
            QuotaShare::new(
                vc.clone(),
                vec![CapacityLimit::new(philly::GPU_INSTANCE_TYPE, *gpus)],
                SharingConfig::reserve(),
            )
        })
        .collect();
    let base = ReplayConfig {
        name: "philly".into(),
        capacity: summed_limits(&shares),
        shares,
        workload: Workload::default(),
        rules: Default::default(),
    };
    let mut jobs: Vec<TraceJob> = vcs.into_iter().flat_map(|v| v.2).collect();
    jobs.shrink_to_fit();
    let configs = presets::product_presets(&base, None, &jobs);
    (jobs, configs)
}

/// Replays the trace under every configuration, keeping only the outcomes (as the command does).
fn run(jobs: &[TraceJob], configs: &[ReplayConfig]) -> usize {
    configs
        .iter()
        .map(|cfg| {
            replay_lean(jobs, cfg, &Comparison::default(), &mut |_, _| {})
                .unwrap_or_else(|e| panic!("{} replays: {e}", cfg.name))
                .0
                .completed
        })
        .sum()
}

fn bench(c: &mut Criterion) {
    // As `quotatop replay` does.
    quotatop_replay::fix_mmap_threshold();
    let (jobs, configs) = load();
    let began = Instant::now();
    let completed = run(&jobs, &configs);
    eprintln!(
        "replay --preset: {} jobs x {} configurations ({completed} completed) in {:.2} s wall; \
         peak RSS {:.1} MiB",
        jobs.len(),
        configs.len(),
        began.elapsed().as_secs_f64(),
        peak_rss_kib() as f64 / 1024.0
    );
    let mut g = c.benchmark_group("replay");
    g.sample_size(10).measurement_time(Duration::from_secs(30));
    g.bench_function("philly_three_presets", |b| b.iter(|| run(&jobs, &configs)));
    g.finish();
    eprintln!(
        "peak RSS after the benchmark: {:.1} MiB",
        peak_rss_kib() as f64 / 1024.0
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
