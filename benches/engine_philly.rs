//! Replays the real Philly demand (8 VCs, ~86k jobs) through the engine: one share per VC,
//! capacity = the VC's nodes × 8 one-GPU instances, every share LEND_AND_BORROW without a
//! borrow limit. Run: `cargo bench --bench engine_philly`.

// Benchmarks are test code: a broken setup should stop the run loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use quotatop_engine::{Engine, EngineConfig};
use quotatop_model::{CapacityLimit, QuotaShare, SharingConfig};
use quotatop_replay::{TraceJob, philly, run_trace};

fn traces_dir() -> PathBuf {
    std::env::var_os("QUOTATOP_PHILLY_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("traces/philly-vc"))
}

/// Replays with every VC's capacity scaled by `percent`; returns (events, preemptions).
fn replay(vcs: &[(String, u32, Vec<TraceJob>)], jobs: &[TraceJob], percent: u32) -> (usize, u32) {
    let gpus = |g: u32| (g * percent / 100).max(48);
    let total: u32 = vcs.iter().map(|v| gpus(v.1)).sum();
    let mut e = Engine::new(EngineConfig::new(vec![CapacityLimit::new(
        philly::GPU_INSTANCE_TYPE,
        total,
    )]))
    .expect("valid environment");
    for (vc, g, _) in vcs {
        e.create_share(QuotaShare::new(
            vc.clone(),
            vec![CapacityLimit::new(philly::GPU_INSTANCE_TYPE, gpus(*g))],
            SharingConfig::lend_and_borrow(-1),
        ))
        .expect("valid share");
    }
    let ids = run_trace(&mut e, jobs).expect("trace replays");
    let preemptions = ids
        .iter()
        .filter_map(|&id| e.job(id))
        .map(|j| j.preemption_count())
        .sum();
    (e.events().len(), preemptions)
}

fn bench(c: &mut Criterion) {
    let vcs = philly::load_dir(&traces_dir(), None)
        .expect("Philly traces readable")
        .into_iter()
        .map(|v| (v.vc, v.gpus, v.jobs))
        .collect::<Vec<_>>();
    let jobs: Vec<TraceJob> = vcs.iter().flat_map(|v| v.2.iter().cloned()).collect();
    eprintln!("{} VCs, {} jobs", vcs.len(), jobs.len());
    for percent in [100, 50] {
        let (events, preemptions) = replay(&vcs, &jobs, percent);
        eprintln!("capacity {percent}%: {events} events, {preemptions} preemptions");
    }
    let mut g = c.benchmark_group("philly");
    g.sample_size(10).measurement_time(Duration::from_secs(20));
    // The setting: each VC's nodes x 8 GPUs, every share LEND_AND_BORROW.
    g.bench_function("lend_and_borrow_all_vcs", |b| {
        b.iter(|| replay(&vcs, &jobs, 100))
    });
    // Half the capacity (at least 48 GPUs, the largest job): long queues and many reclaims.
    g.bench_function("lend_and_borrow_half_capacity", |b| {
        b.iter(|| replay(&vcs, &jobs, 50))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
