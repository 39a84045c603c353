//! The soak world at a chosen size, for the benchmarks that measure the emulator and the
//! poller against many active jobs.

use quotatop_emulator::Scenario;

/// Quota shares of the soak world.
pub const SHARES: usize = 20;

/// The soak world (20 shares over three instance types), every share submitting its part of
/// `jobs` long jobs in the first simulated minutes: all still active for hours.
pub fn world(jobs: u64) -> Scenario {
    let mut s = Scenario::load("scenarios/soak.toml".as_ref()).expect("scenarios/soak.toml");
    assert_eq!(s.shares.len(), SHARES, "the soak world has 20 shares");
    let per_share = jobs.div_ceil(SHARES as u64) as u32;
    for share in &mut s.shares {
        for (k, g) in share.generators.iter_mut().enumerate() {
            // All of a share's jobs within its first ten simulated minutes.
            g.arrivals_per_hour = (per_share as f64 * 6.0).max(60.0);
            g.duration_s = [100 * 3600, 200 * 3600];
            g.start_s = 0;
            g.max_jobs = Some(if k == 0 { per_share } else { 0 });
        }
        share.generators.retain(|g| g.max_jobs != Some(0));
    }
    s.jobs.clear();
    s
}
