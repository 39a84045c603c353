//! The five metrics over a set of job histories and a window. Each function is the single
//! definition of its metric; `METHOD_*` state it in words for the output.

use serde::{Deserialize, Serialize};

use quotatop_model::Millis;

use super::input::{AttemptEnd, JobHistory, Outcome, ScorecardOptions, Window};
use super::ledger::{Ledger, restart_cost_ms};
use super::measured::{RestoreStats, restore_time};

const HOUR_MS: f64 = 3_600_000.0;

pub const METHOD_UTILISATION: &str = "completed-work utilisation = productive GPU-hours (the GPU-time ledger (docs/architecture.md): the final attempt's progress plus the checkpointed progress of interrupted attempts, of jobs that SUCCEEDED before the window's end; lost work and restart overhead never count) held inside the window, divided by the GPU-hours allocated (capacity × GPUs per instance × window length); for a priority band the divisor is the queue's allocation; lost and overhead GPU-hours are reported beside it as waste";
pub const METHOD_WAIT: &str = "wait = time from a job becoming RUNNABLE (after submission or after a preemption requeued it) to the attempt that ended it being SCHEDULED; counted when that dispatch falls in the window; mean, and P50/P95 by nearest rank; episodes still waiting at the window's end are counted apart with their age";
pub const METHOD_WASTE: &str = "preemption waste = lost + restart overhead from the GPU-time ledger (docs/architecture.md), clipped to the window: lost = running time of interrupted attempts after their last durable checkpoint (the whole attempt when no checkpoint interval is known), plus the time a preemption held the capacity before giving it back; overhead = a re-run's time held before RUNNING (scheduling, provisioning) plus the restart cost it spends restoring; in GPU-hours (× instances × GPUs per instance)";
pub const METHOD_FAIRNESS: &str = "fairness drift = a share's part of the GPU-hours held by all shares in the window minus its part of the entitlement (sum of capacity limits × GPUs), in percentage points; delivered ratio = GPU-hours held / entitled GPU-hours; wait ratio = the share's P50 wait / the queue's P50 wait";
pub const METHOD_RECOVERY: &str = "recovery reliability = of the jobs first interrupted in the window, the fraction that SUCCEEDED within the recovery window of that first interruption; jobs still open and inside that window are pending and left out of the fraction; beside it, how long each re-run after a preemption (started in the window) took to restore: measured where its training job's log says it restored (from its startedAt to the logged \"restored from checkpoint\" line), else modelled as the restart cost; the ledger's restart overhead uses the same figure";

pub fn gpu_hours(ms: Millis, count: u32, gpus: u32) -> f64 {
    ms as f64 * f64::from(count) * f64::from(gpus) / HOUR_MS
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Utilisation {
    /// Productive GPU-hours of jobs that succeeded (the ledger's `productive`).
    pub productive_gpu_hours: f64,
    pub allocated_gpu_hours: f64,
    /// `productive / allocated`; `None` without allocated GPU-hours.
    pub ratio: Option<f64>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaitStats {
    /// Waits that ended (dispatch) in the window.
    pub count: usize,
    pub mean_ms: Option<Millis>,
    pub p50_ms: Option<Millis>,
    pub p95_ms: Option<Millis>,
    pub max_ms: Option<Millis>,
    /// RUNNABLE episodes still waiting at the window's end.
    pub still_waiting: usize,
    pub oldest_waiting_ms: Option<Millis>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Waste {
    /// Attempts interrupted by preemption (their capacity given back) in the window.
    pub interrupted_attempts: usize,
    /// Of those, how many had a known checkpoint interval.
    pub with_checkpoint: usize,
    pub lost_gpu_hours: f64,
    pub overhead_gpu_hours: f64,
    pub total_gpu_hours: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Recovery {
    pub interrupted_jobs: usize,
    pub recovered: usize,
    /// Failed, or succeeded later than the recovery window, or still open past it.
    pub not_recovered: usize,
    pub pending: usize,
    pub ratio: Option<f64>,
    /// How long the re-runs after a preemption (started in the window) took to restore:
    /// measured from their logs where they say, else modelled from the restart cost.
    #[serde(default)]
    pub restores: RestoreStats,
}

pub fn utilisation(ledger: &Ledger, allocated_gpu_hours: f64) -> Utilisation {
    Utilisation {
        productive_gpu_hours: ledger.productive_gpu_hours,
        allocated_gpu_hours,
        ratio: (allocated_gpu_hours > 0.0)
            .then(|| ledger.productive_gpu_hours / allocated_gpu_hours),
    }
}

/// The waits of one job: `(ended_at, wait)` for finished episodes, and the start of an episode
/// still waiting.
pub fn job_waits(job: &JobHistory) -> (Vec<(Millis, Millis)>, Option<Millis>) {
    let mut done = Vec::new();
    let mut open = None;
    for (i, &r) in job.runnable_at.iter().enumerate() {
        match job.attempts.get(i).and_then(|a| a.held_from()) {
            Some(s) => done.push((s, (s - r).max(0))),
            None if job.attempts.get(i).is_none() && job.outcome == Outcome::Open => open = Some(r),
            None => {}
        }
    }
    (done, open)
}

/// Nearest-rank percentile of sorted values.
pub fn percentile(sorted: &[Millis], p: f64) -> Option<Millis> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted.get(rank.clamp(1, sorted.len()) - 1).copied()
}

pub fn waits(jobs: &[&JobHistory], window: Window) -> WaitStats {
    let mut values = Vec::new();
    let mut stats = WaitStats::default();
    for j in jobs {
        let (done, open) = job_waits(j);
        values.extend(
            done.into_iter()
                .filter(|(at, _)| window.contains(*at))
                .map(|(_, w)| w),
        );
        if let Some(r) = open.filter(|&r| r < window.end) {
            stats.still_waiting += 1;
            let age = window.end - r;
            stats.oldest_waiting_ms = Some(stats.oldest_waiting_ms.map_or(age, |o| o.max(age)));
        }
    }
    values.sort_unstable();
    stats.count = values.len();
    stats.mean_ms = (!values.is_empty()).then(|| {
        (values.iter().map(|&v| v as i128).sum::<i128>() / values.len() as i128) as Millis
    });
    stats.p50_ms = percentile(&values, 50.0);
    stats.p95_ms = percentile(&values, 95.0);
    stats.max_ms = values.last().copied();
    stats
}

pub fn waste(
    jobs: &[&JobHistory],
    window: Window,
    opts: &ScorecardOptions,
    ledger: &Ledger,
) -> Waste {
    let mut w = Waste {
        lost_gpu_hours: ledger.lost_gpu_hours,
        overhead_gpu_hours: ledger.overhead_gpu_hours,
        total_gpu_hours: ledger.waste_gpu_hours(),
        ..Waste::default()
    };
    for j in jobs {
        let interrupted = j
            .attempts
            .iter()
            .filter(|a| a.end == AttemptEnd::Preempted)
            .filter(|a| a.stopped_at.is_some_and(|t| window.contains(t)))
            .count();
        w.interrupted_attempts += interrupted;
        if super::ledger::checkpoint_ms(j, opts).is_some() {
            w.with_checkpoint += interrupted;
        }
    }
    w
}

/// The restores of `job`'s re-runs after a preemption that started in `window`
/// ([`restore_time`]: measured, else the restart cost).
pub fn restores(job: &JobHistory, window: Window, opts: &ScorecardOptions) -> RestoreStats {
    let mut s = RestoreStats::default();
    for (i, a) in job.attempts.iter().enumerate().skip(1) {
        let after_preemption = job
            .attempts
            .get(i - 1)
            .is_some_and(|p| p.end == AttemptEnd::Preempted);
        if !after_preemption || !a.started_at.is_some_and(|t| window.contains(t)) {
            continue;
        }
        if let Some(t) = restore_time(job, i, restart_cost_ms(job, opts)) {
            s.add(t);
        }
    }
    s
}

pub fn recovery(jobs: &[&JobHistory], window: Window, opts: &ScorecardOptions) -> Recovery {
    let mut r = Recovery::default();
    for j in jobs {
        r.restores.merge(&restores(j, window, opts));
        let first = j
            .attempts
            .iter()
            .filter(|a| a.end == AttemptEnd::Preempted)
            .filter_map(|a| a.stopped_at)
            .min();
        let Some(first) = first.filter(|&t| window.contains(t)) else {
            continue;
        };
        r.interrupted_jobs += 1;
        let deadline = first.saturating_add(opts.recovery_window_ms);
        match j.outcome {
            Outcome::Succeeded(t) if t <= deadline && t < window.end => r.recovered += 1,
            Outcome::Open if window.end <= deadline => r.pending += 1,
            Outcome::Succeeded(t) if t >= window.end && window.end <= deadline => r.pending += 1,
            _ => r.not_recovered += 1,
        }
    }
    let decided = r.recovered + r.not_recovered;
    r.ratio = (decided > 0).then(|| r.recovered as f64 / decided as f64);
    r
}
