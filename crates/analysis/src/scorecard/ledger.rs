//! The GPU-time ledger (docs/architecture.md, "The GPU-time ledger"): every attempt's held time split into productive, lost,
//! restart overhead, held-but-not-running, failed and unfinished. Every GPU-time figure of the
//! scorecard (utilisation, goodput, waste, fairness) reads it, and so do replay and `report`.

use serde::{Deserialize, Serialize};

use quotatop_model::Millis;

use super::input::{AttemptEnd, JobHistory, Outcome, ScorecardOptions, Window};
use super::measured::{LostBasis, RestoreVerdict, measure_attempt, restore_time};
use super::metrics::gpu_hours;

/// One job's held time by category, in milliseconds of capacity held (multiply by instances and
/// GPUs per instance for GPU-time). The categories add up to the held time inside the window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobLedger {
    /// Progress that survives in a job that SUCCEEDED before the window's end.
    pub productive: Millis,
    /// Progress of interrupted attempts after their last checkpoint, and the time a preemption
    /// held the capacity before giving it back.
    pub lost: Millis,
    /// Re-runs: the time held before RUNNING (unless it stopped without running), plus the
    /// restart cost spent restoring.
    pub overhead: Millis,
    /// The first attempt's time held before RUNNING (scheduling, provisioning), and the whole
    /// hold of any attempt that stopped without running (preempted before RUNNING).
    pub held_not_running: Millis,
    /// The whole held time of attempts that ended FAILED or timed out (not by preemption).
    pub failed: Millis,
    /// Progress of jobs that have not succeeded by the window's end (saved or in flight).
    pub unfinished: Millis,
    /// The part of `lost` in attempts whose loss was measured from the job's own checkpoints
    /// (the rest is modelled from the interval).
    #[serde(default)]
    pub lost_measured: Millis,
    /// How the preempted attempts' lost work is known.
    #[serde(default)]
    pub basis: LostBasis,
    /// Attempts that ended FAILED or timed out (not by preemption) holding capacity in the
    /// window: the attempts whose hold is `failed`.
    #[serde(default)]
    pub failed_attempts: u32,
}

impl JobLedger {
    pub fn held(&self) -> Millis {
        self.productive
            + self.lost
            + self.overhead
            + self.held_not_running
            + self.failed
            + self.unfinished
    }
}

/// The same categories in GPU-hours, summed over jobs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Ledger {
    pub productive_gpu_hours: f64,
    pub lost_gpu_hours: f64,
    pub overhead_gpu_hours: f64,
    pub held_not_running_gpu_hours: f64,
    pub failed_gpu_hours: f64,
    pub unfinished_gpu_hours: f64,
    /// The part of `lost_gpu_hours` measured from the jobs' own checkpoints; the rest is
    /// modelled (see `basis`).
    #[serde(default)]
    pub lost_measured_gpu_hours: f64,
    #[serde(default)]
    pub basis: LostBasis,
    /// Attempts that failed (not preempted) holding capacity in the window; their hold is
    /// `failed_gpu_hours`.
    #[serde(default)]
    pub failed_attempts: u32,
}

impl Ledger {
    pub fn held_gpu_hours(&self) -> f64 {
        self.productive_gpu_hours
            + self.lost_gpu_hours
            + self.overhead_gpu_hours
            + self.held_not_running_gpu_hours
            + self.failed_gpu_hours
            + self.unfinished_gpu_hours
    }
    /// Preemption waste (docs/architecture.md): lost + restart overhead.
    pub fn waste_gpu_hours(&self) -> f64 {
        self.lost_gpu_hours + self.overhead_gpu_hours
    }
    /// Adds one job's ledger, `count` instances of `gpus` GPUs each.
    pub fn add(&mut self, l: &JobLedger, count: u32, gpus: u32) {
        let g = |ms: Millis| gpu_hours(ms, count, gpus);
        self.productive_gpu_hours += g(l.productive);
        self.lost_gpu_hours += g(l.lost);
        self.overhead_gpu_hours += g(l.overhead);
        self.held_not_running_gpu_hours += g(l.held_not_running);
        self.failed_gpu_hours += g(l.failed);
        self.unfinished_gpu_hours += g(l.unfinished);
        self.lost_measured_gpu_hours += g(l.lost_measured);
        self.basis.merge(&l.basis);
        self.failed_attempts += l.failed_attempts;
    }

    /// The failed work, in words: attempts that failed (not preemptions) and the GPU-hours they
    /// held. Every total that states it (report, console scorecard) says it with this.
    pub fn failed_text(&self) -> String {
        let n = self.failed_attempts;
        format!("failed attempts: {n}, {:.2} GPU-h", self.failed_gpu_hours)
    }

    /// Lost GPU-hours that were modelled from a checkpoint interval (not measured).
    pub fn lost_modelled_gpu_hours(&self) -> f64 {
        (self.lost_gpu_hours - self.lost_measured_gpu_hours).max(0.0)
    }

    /// How much of the lost work is measured and how much modelled, in words: every total
    /// (report, console scorecard, replay) says it with this.
    pub fn lost_basis_text(&self) -> String {
        let b = &self.basis;
        match (b.measured_attempts, b.modelled_attempts) {
            (0, 0) => b.label(),
            (_, 0) => format!("{:.1} GPU-h measured", self.lost_measured_gpu_hours),
            (0, _) => format!("{:.1} GPU-h {}", self.lost_gpu_hours, b.modelled_label()),
            (m, n) => format!(
                "{:.1} GPU-h measured ({m} attempts) + {:.1} GPU-h {}",
                self.lost_measured_gpu_hours,
                self.lost_modelled_gpu_hours(),
                b.modelled_label_over(n as usize)
            ),
        }
    }
}

/// The restart cost that applies to `job`: its own when the producer knows it (the engine),
/// else the configured one.
pub fn restart_cost_ms(job: &JobHistory, opts: &ScorecardOptions) -> Millis {
    to_millis(job.restart_overhead_ms.unwrap_or(opts.restart_cost_ms))
}

/// The checkpoint interval that applies to `job`: its own, else the one declared for its share.
pub fn checkpoint_ms(job: &JobHistory, opts: &ScorecardOptions) -> Option<Millis> {
    job.checkpoint_interval_ms
        .or_else(|| opts.checkpoint_by_share.get(&job.share).copied())
        .filter(|&c| c > 0)
        .map(to_millis)
}

fn to_millis(ms: u64) -> Millis {
    Millis::try_from(ms).unwrap_or(Millis::MAX)
}

/// The ledger of one job over `window` (docs/architecture.md, "The GPU-time ledger"). Spans are clipped to the window; progress
/// counts as productive only when the job SUCCEEDED before the window's end.
pub fn job_ledger(job: &JobHistory, window: Window, opts: &ScorecardOptions) -> JobLedger {
    let succeeded = matches!(job.outcome, Outcome::Succeeded(t) if t < window.end);
    let c = checkpoint_ms(job, opts);
    let restart = restart_cost_ms(job, opts);
    let clip = |a: Millis, b: Millis| window.overlap_ms(a, b);
    let mut l = JobLedger::default();
    // Cumulative durable progress before the attempt (P₀).
    let mut p0: Millis = 0;
    for (i, a) in job.attempts.iter().enumerate() {
        let Some(from) = a.held_from() else {
            continue;
        };
        let to = a.stopped_at.unwrap_or(window.end).max(from);
        if a.end == AttemptEnd::Failed {
            let held = clip(from, to);
            l.failed += held;
            l.failed_attempts += u32::from(held > 0);
            continue;
        }
        // Stopped without ever RUNNING (no `startedAt`): it ran for no time, so it lost nothing
        // and restored nothing; its whole hold was held, not running, first attempt or re-run.
        if a.started_at.is_none() && a.stopped_at.is_some() {
            l.held_not_running += clip(from, to);
            continue;
        }
        let rerun = i > 0;
        // Progress stops when a preemption begins; the capacity is held until `to`.
        let run_end = a.preempting_from.map_or(to, |p| p.clamp(from, to));
        let started = a.started_at.map(|s| s.clamp(from, run_end));
        let before = clip(from, started.unwrap_or(run_end));
        if rerun {
            l.overhead += before;
        } else {
            l.held_not_running += before;
        }
        l.lost += clip(run_end, to);
        let Some(s) = started else {
            continue;
        };
        // A re-run restores for as long as its log says, else for the restart cost.
        let restore_end = match restore_time(job, i, restart) {
            Some(r) => s.saturating_add(r.ms).min(run_end),
            None => s,
        };
        l.overhead += clip(s, restore_end);
        let into = |l: &mut JobLedger, ms: Millis| {
            if succeeded {
                l.productive += ms;
            } else {
                l.unfinished += ms;
            }
        };
        match a.end {
            AttemptEnd::Preempted => {
                let (saved_end, basis) = durable_until(job, i, c, &mut p0, restore_end, run_end);
                into(&mut l, clip(restore_end, saved_end));
                l.lost += clip(saved_end, run_end);
                if basis.measured_attempts > 0 {
                    // The whole loss of the attempt, the preemption's hold included.
                    l.lost_measured += clip(saved_end, run_end) + clip(run_end, to);
                }
                l.basis.merge(&basis);
            }
            AttemptEnd::Completed => into(&mut l, clip(restore_end, run_end)),
            AttemptEnd::Open => l.unfinished += clip(restore_end, run_end),
            AttemptEnd::Failed => {}
        }
    }
    l
}

/// Until when a preempted attempt's progress (from `restore_end` to `run_end`) is durable, and
/// how that is known: measured from the job's own checkpoints when they say
/// ([`measure_attempt`]), else modelled from the interval `c` over the cumulative durable
/// progress `p0` (which it advances).
fn durable_until(
    job: &JobHistory,
    i: usize,
    c: Option<Millis>,
    p0: &mut Millis,
    restore_end: Millis,
    run_end: Millis,
) -> (Millis, LostBasis) {
    if let Some(m) = measure_attempt(job, i, restore_end, run_end) {
        let saved = m.saved_until - restore_end;
        *p0 = match m.restore {
            RestoreVerdict::Restored => *p0 + saved,
            _ => 0,
        };
        return (m.saved_until, LostBasis::measured());
    }
    let progress = run_end - restore_end;
    let saved = c.map_or(0, |c| ((*p0 + progress) / c) * c - *p0).max(0);
    *p0 += saved;
    (
        restore_end + saved,
        LostBasis::modelled(c.map(|c| c as u64)),
    )
}

/// The ledger of `jobs` over `window`, in GPU-hours.
pub fn ledger(jobs: &[&JobHistory], window: Window, opts: &ScorecardOptions) -> Ledger {
    let mut total = Ledger::default();
    for j in jobs {
        let gpus = opts.gpus.gpus(&j.instance_type).unwrap_or(0);
        total.add(&job_ledger(j, window, opts), j.instance_count, gpus);
    }
    total
}
