//! Generated engine worlds shared by the engine's property tests (`engine_props`) and the
//! preview-against-the-engine test (`preview_engine`): the shares' configuration and how an
//! engine is set up from it. Each test keeps its own generators (their ranges differ on
//! purpose).

use quotatop_engine::Engine;
use quotatop_model::{CapacityLimit, QuotaShare, SharingConfig, SharingStrategy};

pub const TYPES: [&str; 2] = ["ml.g5.xlarge", "ml.p4d.24xlarge"];

#[derive(Debug, Clone)]
pub struct ShareCfg {
    /// (index into [`TYPES`], instances).
    pub limits: Vec<(usize, u32)>,
    pub strategy: SharingStrategy,
    pub borrow_limit: i32,
    pub in_share: bool,
}

pub fn sharing(c: &ShareCfg) -> SharingConfig {
    match c.strategy {
        SharingStrategy::Reserve => SharingConfig::reserve(),
        SharingStrategy::Lend => SharingConfig::lend(),
        SharingStrategy::LendAndBorrow => SharingConfig::lend_and_borrow(c.borrow_limit),
    }
}

/// The environment's capacity: per type, the sum of the shares' limits plus `spare` (at
/// least one).
pub fn environment(shares: &[ShareCfg], spare: [u32; 2]) -> Vec<CapacityLimit> {
    let mut env = [0u32; 2];
    for s in shares {
        for &(ty, n) in &s.limits {
            env[ty] += n;
        }
    }
    (0..2)
        .map(|t| CapacityLimit::new(TYPES[t], env[t] + spare[t].max(1)))
        .collect()
}

/// Creates the shares `s0`, `s1`, … in `e`.
pub fn create_shares(e: &mut Engine, shares: &[ShareCfg]) -> Result<(), String> {
    for (i, s) in shares.iter().enumerate() {
        let limits = s
            .limits
            .iter()
            .map(|&(t, n)| CapacityLimit::new(TYPES[t], n))
            .collect();
        e.create_share(
            QuotaShare::new(format!("s{i}"), limits, sharing(s))
                .with_in_share_preemption(s.in_share),
        )
        .map_err(|err| err.to_string())?;
    }
    Ok(())
}

/// The engine's state as a poller would show it: every job described at this instant.
pub fn snapshot(e: &Engine) -> quotatop_model::QueueSnapshot {
    let now = e.now();
    quotatop_model::QueueSnapshot {
        name: "q".into(),
        environment: e.service_environment("se"),
        shares: e.shares(),
        jobs: e
            .jobs()
            .map(|j| quotatop_model::TrackedJob {
                arn: format!("arn:aws:batch:us-east-1:123456789012:service-job/{}", j.id),
                job: j.into(),
                described_at: Some(now),
                listed_at: now,
            })
            .collect(),
        server_time: Some(now),
        ..Default::default()
    }
}

/// A share for the preview and "why" worlds: one or two instance types of 1–4 instances, every
/// strategy (borrowing twice as likely), borrow limits unlimited or 0–299 %, in-share
/// preemption on or off.
pub fn share_cfg() -> impl proptest::strategy::Strategy<Value = ShareCfg> {
    use proptest::prelude::*;
    (
        prop::collection::btree_map(0usize..2, 1u32..5, 1..=2),
        prop_oneof![
            1 => Just(SharingStrategy::Reserve),
            1 => Just(SharingStrategy::Lend),
            2 => Just(SharingStrategy::LendAndBorrow)
        ],
        prop_oneof![Just(-1i32), 0i32..300],
        any::<bool>(),
    )
        .prop_map(|(limits, strategy, borrow_limit, in_share)| ShareCfg {
            limits: limits.into_iter().collect(),
            strategy,
            borrow_limit,
            in_share,
        })
}
