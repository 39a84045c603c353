//! Fairness drift: each share's delivered GPU-hours and waits against its entitlement.

use serde::{Deserialize, Serialize};

use quotatop_model::Millis;

use super::input::{JobHistory, ScorecardInput, ScorecardOptions, Window};
use super::metrics::{self, WaitStats};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FairnessRow {
    pub share: String,
    /// Capacity limits × GPUs × window.
    pub entitled_gpu_hours: f64,
    /// The share's part of all shares' entitlement (0..1).
    pub entitled_fraction: f64,
    /// GPU-hours held by the share's attempts in the window (own and borrowed).
    pub used_gpu_hours: f64,
    /// The share's part of all GPU-hours held (0..1).
    pub used_fraction: f64,
    /// `100 × (used_fraction − entitled_fraction)`: positive = got more than its part.
    pub drift_pp: f64,
    /// `used / entitled`; `None` without entitlement.
    pub delivered_ratio: Option<f64>,
    pub wait_p50_ms: Option<Millis>,
    /// `share P50 / queue P50`; `None` when either is missing or the queue's is 0.
    pub wait_ratio: Option<f64>,
}

pub fn fairness(
    input: &ScorecardInput,
    window: Window,
    opts: &ScorecardOptions,
    queue_wait: &WaitStats,
) -> Vec<FairnessRow> {
    let rows: Vec<(String, f64, f64, WaitStats)> = input
        .entitlements
        .iter()
        .map(|e| {
            let jobs: Vec<&JobHistory> = input.jobs.iter().filter(|j| j.share == e.share).collect();
            let entitled = super::allocated_gpu_hours(&e.limits, window, opts);
            let used = super::ledger::ledger(&jobs, window, opts).held_gpu_hours();
            (
                e.share.clone(),
                entitled,
                used,
                metrics::waits(&jobs, window),
            )
        })
        .collect();
    let total_entitled: f64 = rows.iter().map(|r| r.1).sum();
    let total_used: f64 = rows.iter().map(|r| r.2).sum();
    let frac = |x: f64, total: f64| if total > 0.0 { x / total } else { 0.0 };
    rows.into_iter()
        .map(|(share, entitled, used, wait)| {
            let entitled_fraction = frac(entitled, total_entitled);
            let used_fraction = frac(used, total_used);
            let wait_ratio = match (wait.p50_ms, queue_wait.p50_ms) {
                (Some(s), Some(q)) if q > 0 => Some(s as f64 / q as f64),
                _ => None,
            };
            FairnessRow {
                share,
                entitled_gpu_hours: entitled,
                entitled_fraction,
                used_gpu_hours: used,
                used_fraction,
                drift_pp: 100.0 * (used_fraction - entitled_fraction),
                delivered_ratio: (entitled > 0.0).then(|| used / entitled),
                wait_p50_ms: wait.p50_ms,
                wait_ratio,
            }
        })
        .collect()
}
