//! `quotatop replay --preset` on the eight Philly VCs: the three PRODUCT.md scenarios (isolated,
//! lending, lending with a protected share), scorecards included. Run:
//! `cargo bench --bench replay_presets`.

use std::path::PathBuf;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use quotatop::model::{CapacityLimit, QuotaShare, SharingConfig};
use quotatop::replay::{ReplayConfig, TraceJob, Workload, config, philly, presets, replay};

fn traces_dir() -> PathBuf {
    std::env::var_os("QUOTATOP_PHILLY_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/traces/philly-vc")
        })
}

fn bench(c: &mut Criterion) {
    let vcs = philly::load_dir(&traces_dir(), None)
        .expect("Philly traces readable")
        .into_iter()
        .map(|v| (v.vc, v.gpus, v.jobs))
        .collect::<Vec<_>>();
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
        capacity: config::summed_limits(&shares),
        shares,
        workload: Workload::default(),
        rules: Default::default(),
    };
    let jobs: Vec<TraceJob> = vcs.iter().flat_map(|v| v.2.iter().cloned()).collect();
    let configs = presets::product_presets(&base, None, &jobs);
    let mut g = c.benchmark_group("replay");
    g.sample_size(10).measurement_time(Duration::from_secs(30));
    g.bench_function("philly_three_presets", |b| {
        b.iter(|| {
            configs
                .iter()
                .map(|cfg| {
                    replay(&jobs, cfg, &mut |_, _| {})
                        .expect("replays")
                        .0
                        .completed
                })
                .sum::<usize>()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
