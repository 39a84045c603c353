//! The Philly figures docs/figures.md's "Performance" table quotes, computed from the traces in
//! the repository's `traces/philly-vc/` (missing traces fail the test, naming the folder):
//! `cargo test --test it philly_figures:: -- --nocapture` prints them.

use std::path::PathBuf;

use quotatop_replay::philly;

pub(crate) fn traces() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("traces/philly-vc");
    assert!(
        dir.join("philly_vc_nodes.csv").exists(),
        "the Philly traces are missing: expected {} with trace_<vc>.csv.gz and \
         philly_vc_nodes.csv, which the repository ships (traces/philly-vc/README.md); restore \
         them from version control",
        dir.display()
    );
    dir
}

/// The pooled peak demand: the most GPUs that jobs submitted and not yet done ask for at one
/// instant, each job running from its submission for its work time (what happens when the
/// pooled capacity holds the peak: nothing waits, nothing is preempted).
#[test]
fn pooled_peak_demand_fits_in_the_pooled_capacity() {
    let vcs = philly::load_dir(&traces(), None).expect("traces readable");
    let capacity: u32 = vcs.iter().map(|v| v.gpus).sum();
    let mut edges: Vec<(i64, i64)> = Vec::new();
    for j in vcs.iter().flat_map(|v| &v.jobs) {
        let n = i64::from(j.instance_count);
        edges.push((j.submit_ms, n));
        edges.push((j.submit_ms + j.work_ms as i64, -n));
    }
    // Ends before starts at the same instant: a job that ends frees its GPUs first.
    edges.sort();
    let (mut now, mut peak) = (0i64, 0i64);
    for (_, d) in edges {
        now += d;
        peak = peak.max(now);
    }
    println!("pooled peak demand {peak} GPUs; pooled capacity {capacity} GPUs");
    assert_eq!((peak, capacity), (1_910, 2_432));
}
