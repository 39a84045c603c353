//! The five metrics over a set of job histories and a window. Each function is the single
//! definition of its metric; `METHOD_*` state it in words for the output.

use serde::{Deserialize, Serialize};

use crate::model::Millis;

use super::input::{AttemptEnd, JobHistory, Outcome, ScorecardOptions, Window};

const HOUR_MS: f64 = 3_600_000.0;

pub const METHOD_UTILISATION: &str = "completed-work utilisation = GPU-hours held (SCHEDULED until stopped, clipped to the window) by every attempt of jobs that SUCCEEDED before the window's end, divided by the GPU-hours allocated (capacity × GPUs per instance × window length); for a priority band the divisor is the queue's allocation; `final_attempt_gpu_hours` is the part held by the attempts that completed";
pub const METHOD_WAIT: &str = "wait = time from a job becoming RUNNABLE (after submission or after a preemption requeued it) to the attempt that ended it being SCHEDULED; counted when that dispatch falls in the window; P50/P95 by nearest rank; episodes still waiting at the window's end are counted apart with their age";
pub const METHOD_WASTE: &str = "preemption waste per attempt interrupted in the window = running time since its last durable checkpoint (checkpoint interval known) or its whole running time (unknown), plus restart overhead = the capacity it held before RUNNING (scheduling and provisioning) + the configured restart cost; in GPU-hours (× instances × GPUs per instance)";
pub const METHOD_FAIRNESS: &str = "fairness drift = a share's part of the GPU-hours held by all shares in the window minus its part of the entitlement (sum of capacity limits × GPUs), in percentage points; delivered ratio = GPU-hours held / entitled GPU-hours; wait ratio = the share's P50 wait / the queue's P50 wait";
pub const METHOD_RECOVERY: &str = "recovery reliability = of the jobs first interrupted in the window, the fraction that SUCCEEDED within the recovery window of that first interruption; jobs still open and inside that window are pending and left out of the fraction";

pub fn gpu_hours(ms: Millis, count: u32, gpus: u32) -> f64 {
    ms as f64 * f64::from(count) * f64::from(gpus) / HOUR_MS
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Utilisation {
    pub completed_gpu_hours: f64,
    pub final_attempt_gpu_hours: f64,
    pub allocated_gpu_hours: f64,
    /// `completed / allocated`; `None` without allocated GPU-hours.
    pub ratio: Option<f64>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaitStats {
    /// Waits that ended (dispatch) in the window.
    pub count: usize,
    pub p50_ms: Option<Millis>,
    pub p95_ms: Option<Millis>,
    pub max_ms: Option<Millis>,
    /// RUNNABLE episodes still waiting at the window's end.
    pub still_waiting: usize,
    pub oldest_waiting_ms: Option<Millis>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Waste {
    pub interrupted_attempts: usize,
    /// Of those, how many had a known checkpoint interval.
    pub with_checkpoint: usize,
    pub lost_compute_gpu_hours: f64,
    pub restart_overhead_gpu_hours: f64,
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
}

/// GPUs per instance of a job's type; unknown types count as 0 (the scorecard notes them).
fn gpus_of(job: &JobHistory, opts: &ScorecardOptions) -> u32 {
    opts.gpus.gpus(&job.instance_type).unwrap_or(0)
}

/// GPU-hours held by the job's attempts inside the window; with `only`, by the attempts that
/// ended that way.
pub fn held_gpu_hours(
    job: &JobHistory,
    window: Window,
    opts: &ScorecardOptions,
    only: Option<AttemptEnd>,
) -> f64 {
    let gpus = gpus_of(job, opts);
    job.attempts
        .iter()
        .filter(|a| only.is_none_or(|e| a.end == e))
        .filter_map(|a| {
            let from = a.held_from()?;
            let to = a.stopped_at.unwrap_or(window.end);
            Some(gpu_hours(
                window.overlap_ms(from, to),
                job.instance_count,
                gpus,
            ))
        })
        .sum()
}

pub fn utilisation(
    jobs: &[&JobHistory],
    window: Window,
    opts: &ScorecardOptions,
    allocated_gpu_hours: f64,
) -> Utilisation {
    let succeeded = jobs
        .iter()
        .filter(|j| matches!(j.outcome, Outcome::Succeeded(t) if t < window.end));
    let mut u = Utilisation {
        allocated_gpu_hours,
        ..Default::default()
    };
    for j in succeeded {
        u.completed_gpu_hours += held_gpu_hours(j, window, opts, None);
        u.final_attempt_gpu_hours += held_gpu_hours(j, window, opts, Some(AttemptEnd::Completed));
    }
    u.ratio = (allocated_gpu_hours > 0.0).then(|| u.completed_gpu_hours / allocated_gpu_hours);
    u
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
    stats.p50_ms = percentile(&values, 50.0);
    stats.p95_ms = percentile(&values, 95.0);
    stats.max_ms = values.last().copied();
    stats
}

pub fn waste(jobs: &[&JobHistory], window: Window, opts: &ScorecardOptions) -> Waste {
    let mut w = Waste::default();
    for j in jobs {
        let gpus = gpus_of(j, opts);
        for a in &j.attempts {
            let Some(stop) = a.stopped_at.filter(|&t| window.contains(t)) else {
                continue;
            };
            if a.end != AttemptEnd::Preempted {
                continue;
            }
            w.interrupted_attempts += 1;
            let held_from = a.held_from().unwrap_or(stop).min(stop);
            let (lost, before_running) = match a.started_at.filter(|&s| s <= stop) {
                Some(s) => {
                    let ran = stop - s;
                    let lost = match j.checkpoint_interval_ms.filter(|&c| c > 0) {
                        Some(c) => ran % (c.min(i64::MAX as u64) as i64),
                        None => ran,
                    };
                    (lost, (s - held_from).max(0))
                }
                None => (0, stop - held_from),
            };
            if j.checkpoint_interval_ms.is_some() {
                w.with_checkpoint += 1;
            }
            let overhead = before_running + opts.restart_cost_ms.min(i64::MAX as u64) as i64;
            w.lost_compute_gpu_hours += gpu_hours(lost, j.instance_count, gpus);
            w.restart_overhead_gpu_hours += gpu_hours(overhead, j.instance_count, gpus);
        }
    }
    w.total_gpu_hours = w.lost_compute_gpu_hours + w.restart_overhead_gpu_hours;
    w
}

pub fn recovery(jobs: &[&JobHistory], window: Window, opts: &ScorecardOptions) -> Recovery {
    let mut r = Recovery::default();
    for j in jobs {
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
