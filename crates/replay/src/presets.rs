//! The built-in comparison of three scenarios (isolated, lending, lending with a protected
//! share), derived from one base configuration (the trace's shares and their limits).
//!
//! 1. `isolated`: every share `RESERVE`, nothing lent, nothing preempted.
//! 2. `lending`: every share `LEND_AND_BORROW` without a borrow limit, checkpoint-safe
//!    workloads (the base's checkpoint interval, else every 30 minutes) and a restart overhead
//!    (the base's, else 2 minutes).
//! 3. `lending-protected`: as `lending`, but one share keeps a protected allocation: `RESERVE`
//!    with in-share preemption, its jobs at priority 1000. The protected share is the one named
//!    (`--protect`), else the one with the largest capacity (sum of its limits, in instances);
//!    a tie goes to the share with the most GPU-hours of demand in the trace (instance count ×
//!    GPUs per instance × work; instance types of unknown GPU count add 0), then to the first
//!    name in alphabetical order.

use std::collections::BTreeMap;

use quotatop_analysis::GpuTable;
use quotatop_model::{QuotaShare, SharingConfig};

use super::{ReplayConfig, TraceJob};

/// Default checkpoint interval of checkpoint-safe workloads.
pub const DEFAULT_CHECKPOINT_S: u64 = 1800;
/// Default restart overhead after a preemption.
pub const DEFAULT_RESTART_OVERHEAD_S: u64 = 120;
/// Priority of the protected share's jobs.
pub const PROTECTED_PRIORITY: i64 = 1000;

fn with_sharing(base: &ReplayConfig, f: impl Fn(&QuotaShare) -> QuotaShare) -> Vec<QuotaShare> {
    base.shares.iter().map(f).collect()
}

/// The share the third preset protects, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct ProtectedChoice {
    pub name: String,
    /// One line for stderr: `protected share: X (largest capacity …)`.
    pub reason: String,
}

/// GPU-milliseconds of demand per share in `trace`: instance count × GPUs per instance × work,
/// summed over the share's jobs. Instance types without a known GPU count add 0, as in the
/// scorecard.
pub fn gpu_ms_of_demand(trace: &[TraceJob]) -> BTreeMap<&str, u128> {
    let gpus = GpuTable::default();
    let mut out: BTreeMap<&str, u128> = BTreeMap::new();
    for j in trace {
        let g = u128::from(gpus.gpus(&j.instance_type).unwrap_or(0));
        *out.entry(&*j.share).or_default() +=
            u128::from(j.instance_count) * g * u128::from(j.work_ms);
    }
    out
}

fn gpu_hours(gpu_ms: u128) -> String {
    format!("{:.0}", gpu_ms as f64 / 3.6e6)
}

/// The share protected by the third preset: `name` if given (`None` if there is no such
/// share); else the largest capacity (the sum of its limits), ties broken by the most
/// GPU-hours of demand in `trace`, then by name (the first in alphabetical order).
pub fn protected_share(
    base: &ReplayConfig,
    name: Option<&str>,
    trace: &[TraceJob],
) -> Option<ProtectedChoice> {
    if let Some(n) = name {
        return base
            .shares
            .iter()
            .find(|s| s.name == n)
            .map(|s| ProtectedChoice {
                name: s.name.clone(),
                reason: format!("protected share: {} (named by --protect)", s.name),
            });
    }
    let demand = gpu_ms_of_demand(trace);
    let capacity = |s: &QuotaShare| -> u64 {
        s.capacity_limits
            .iter()
            .map(|l| u64::from(l.max_capacity))
            .sum()
    };
    let gpu_ms = |s: &QuotaShare| demand.get(s.name.as_str()).copied().unwrap_or(0);
    let largest = base.shares.iter().map(capacity).max()?;
    let mut tied: Vec<&QuotaShare> = base
        .shares
        .iter()
        .filter(|s| capacity(s) == largest)
        .collect();
    tied.sort_by(|a, b| gpu_ms(b).cmp(&gpu_ms(a)).then_with(|| a.name.cmp(&b.name)));
    let (chosen, others) = tied.split_first()?;
    let mut reason = format!(
        "protected share: {} (largest capacity {largest} instances",
        chosen.name
    );
    if !others.is_empty() {
        let names: Vec<&str> = others.iter().map(|s| s.name.as_str()).collect();
        let hours: Vec<String> = others.iter().map(|s| gpu_hours(gpu_ms(s))).collect();
        reason.push_str(&format!(
            "; tie with {} broken by GPU-hours of demand {} vs {}",
            names.join(", "),
            gpu_hours(gpu_ms(chosen)),
            hours.join(", ")
        ));
        if others.iter().any(|s| gpu_ms(s) == gpu_ms(chosen)) {
            reason.push_str(", then by name");
        }
    }
    reason.push(')');
    Some(ProtectedChoice {
        name: chosen.name.clone(),
        reason,
    })
}

/// The three preset configurations.
pub fn product_presets(
    base: &ReplayConfig,
    protect: Option<&str>,
    trace: &[TraceJob],
) -> Vec<ReplayConfig> {
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
    let protected = protected_share(base, protect, trace).map(|c| c.name);
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

#[cfg(test)]
mod tests {
    use super::*;
    use quotatop_model::CapacityLimit;

    fn base(limits: &[(&str, u32)]) -> ReplayConfig {
        let shares: Vec<QuotaShare> = limits
            .iter()
            .map(|(n, l)| {
                QuotaShare::new(
                    *n,
                    vec![CapacityLimit::new("ml.g5.2xlarge", *l)],
                    SharingConfig::reserve(),
                )
            })
            .collect();
        ReplayConfig {
            name: "base".to_string(),
            capacity: super::super::config::summed_limits(&shares),
            shares,
            workload: Default::default(),
            rules: Default::default(),
        }
    }

    fn job(share: &str, count: u32, work_s: u64) -> TraceJob {
        TraceJob {
            name: format!("{share}-{count}").into(),
            origin: "t.csv:2".into(),
            share: share.into(),
            submit_ms: 0,
            instance_type: "ml.g5.2xlarge".into(),
            instance_count: count,
            work_ms: work_s * 1000,
            priority: 0,
            checkpoint_interval_ms: None,
            preemption_retries: None,
            extras: Default::default(),
        }
    }

    #[test]
    fn largest_capacity_then_gpu_hours_of_demand_then_name() {
        let b = base(&[("a", 64), ("b", 512), ("c", 512), ("d", 512)]);
        // c demands 2 GPU-h, d 1 GPU-h, b none: c wins although b comes first by name.
        let trace = [job("c", 2, 3600), job("d", 1, 3600), job("a", 64, 36_000)];
        let c = protected_share(&b, None, &trace).unwrap();
        assert_eq!(c.name, "c");
        assert_eq!(
            c.reason,
            "protected share: c (largest capacity 512 instances; tie with d, b broken by GPU-hours of demand 2 vs 1, 0)"
        );
        // Equal demand: the first name.
        let c = protected_share(&b, None, &[]).unwrap();
        assert_eq!(c.name, "b");
        assert!(
            c.reason.ends_with("demand 0 vs 0, 0, then by name)"),
            "{}",
            c.reason
        );
        // No tie.
        let c = protected_share(&base(&[("a", 8), ("z", 16)]), None, &trace).unwrap();
        assert_eq!(
            c.reason,
            "protected share: z (largest capacity 16 instances)"
        );
        // --protect wins, and names only a real share.
        assert_eq!(protected_share(&b, Some("a"), &trace).unwrap().name, "a");
        assert_eq!(protected_share(&b, Some("zz"), &trace), None);
        let presets = product_presets(&b, None, &trace);
        assert_eq!(presets[2].name, "lending-protected(c)");
    }
}
