//! The built-in comparison of PRODUCT.md's three scenarios, derived from one base
//! configuration (the trace's shares and their limits).
//!
//! 1. `isolated`: every share `RESERVE`, nothing lent, nothing preempted.
//! 2. `lending`: every share `LEND_AND_BORROW` without a borrow limit, checkpoint-safe
//!    workloads (the base's checkpoint interval, else every 30 minutes) and a restart overhead
//!    (the base's, else 2 minutes).
//! 3. `lending-protected`: as `lending`, but one share keeps a protected allocation: `RESERVE`
//!    with in-share preemption, its jobs at priority 1000. The protected share is the one named,
//!    else the one with the largest limits.

use crate::model::{QuotaShare, SharingConfig};

use super::ReplayConfig;

/// Default checkpoint interval of checkpoint-safe workloads.
pub const DEFAULT_CHECKPOINT_S: u64 = 1800;
/// Default restart overhead after a preemption.
pub const DEFAULT_RESTART_OVERHEAD_S: u64 = 120;
/// Priority of the protected share's jobs.
pub const PROTECTED_PRIORITY: i64 = 1000;

fn with_sharing(base: &ReplayConfig, f: impl Fn(&QuotaShare) -> QuotaShare) -> Vec<QuotaShare> {
    base.shares.iter().map(f).collect()
}

/// The share protected by the third preset: `name` if given, else the largest.
pub fn protected_share(base: &ReplayConfig, name: Option<&str>) -> Option<String> {
    match name {
        Some(n) => base
            .shares
            .iter()
            .find(|s| s.name == n)
            .map(|s| s.name.clone()),
        None => base
            .shares
            .iter()
            .max_by_key(|s| {
                (
                    s.capacity_limits
                        .iter()
                        .map(|l| l.max_capacity as u64)
                        .sum::<u64>(),
                    std::cmp::Reverse(s.name.clone()),
                )
            })
            .map(|s| s.name.clone()),
    }
}

/// The three preset configurations.
pub fn product_presets(base: &ReplayConfig, protect: Option<&str>) -> Vec<ReplayConfig> {
    let isolated = ReplayConfig {
        name: "isolated".to_string(),
        shares: with_sharing(base, |s| {
            QuotaShare {
                sharing: SharingConfig::reserve(),
                ..s.clone()
            }
            .with_in_share_preemption(false)
        }),
        ..base.clone()
    };
    let mut workload = base.workload.clone();
    workload.checkpoint_s = workload.checkpoint_s.or(Some(DEFAULT_CHECKPOINT_S));
    if workload.restart_overhead_s == 0 {
        workload.restart_overhead_s = DEFAULT_RESTART_OVERHEAD_S;
    }
    let lending = ReplayConfig {
        name: "lending".to_string(),
        shares: with_sharing(base, |s| QuotaShare {
            sharing: SharingConfig::lend_and_borrow(-1),
            ..s.clone()
        }),
        workload: workload.clone(),
        ..base.clone()
    };
    let protected = protected_share(base, protect);
    let mut pworkload = workload;
    if let Some(p) = &protected {
        pworkload.priority.insert(p.clone(), PROTECTED_PRIORITY);
    }
    let lending_protected = ReplayConfig {
        name: match &protected {
            Some(p) => format!("lending-protected({p})"),
            None => "lending-protected".to_string(),
        },
        shares: with_sharing(base, |s| {
            if Some(&s.name) == protected.as_ref() {
                QuotaShare {
                    sharing: SharingConfig::reserve(),
                    ..s.clone()
                }
                .with_in_share_preemption(true)
            } else {
                QuotaShare {
                    sharing: SharingConfig::lend_and_borrow(-1),
                    ..s.clone()
                }
            }
        }),
        workload: pworkload,
        ..base.clone()
    };
    vec![isolated, lending, lending_protected]
}
