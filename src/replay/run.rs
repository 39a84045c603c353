//! Running a trace under one configuration.

use std::time::{Duration, Instant};

use crate::analysis::gpus_per_instance;
use crate::analysis::scorecard::{self, Scorecard, ScorecardOptions, Window, from_engine};
use crate::engine::{Engine, EngineError, JobId, JobSpec};
use crate::model::{JobStatus, Millis};

use super::{ReplayConfig, ReplayError, TraceJob};

const HOUR_MS: f64 = 3_600_000.0;

/// What one configuration did with the trace.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayOutcome {
    pub config: String,
    pub jobs: usize,
    pub completed: usize,
    /// Ended FAILED (preemption retries exhausted).
    pub failed: usize,
    /// Never finished: misconfigured for this configuration (stuck RUNNABLE).
    pub unfinished: usize,
    /// From the first submission to the last job's end.
    pub makespan_ms: Millis,
    pub preemptions: u64,
    /// GPU-hours of the trace's work (of jobs that completed).
    pub work_gpu_hours: f64,
    /// GPU-hours run and thrown away by preemptions (since the last checkpoint).
    pub lost_gpu_hours: f64,
    /// GPU-hours of restart overhead after preemptions.
    pub overhead_gpu_hours: f64,
    /// GPU-hours delivered: all running time of all jobs.
    pub delivered_gpu_hours: f64,
    /// Instance types without a known GPU count (counted as 1 GPU per instance).
    pub unknown_gpu_types: Vec<String>,
    /// The five-metric scorecard of the run, from the engine's event log.
    pub scorecard: Scorecard,
    /// Wall-clock time of the replay itself.
    pub elapsed: Duration,
}

impl ReplayOutcome {
    /// Preemption waste: lost work plus restart overhead.
    pub fn waste_gpu_hours(&self) -> f64 {
        self.lost_gpu_hours + self.overhead_gpu_hours
    }
}

/// Applies the configuration's workload assumptions to a trace job.
fn spec_for(job: &TraceJob, cfg: &ReplayConfig) -> JobSpec {
    let w = &cfg.workload;
    let mut spec = job.spec();
    if let Some(&p) = w.priority.get(&job.share) {
        spec.priority = p;
    }
    if spec.checkpoint_interval_ms.is_none() {
        spec.checkpoint_interval_ms = w.checkpoint_s.map(|s| s * 1000).filter(|&c| c > 0);
    }
    if spec.preemption_retries.is_none() {
        spec.preemption_retries = w.preemption_retries;
    }
    spec.restart_overhead_ms = w.restart_overhead_s * 1000;
    spec
}

/// Submits the jobs at their times, then runs until idle. `progress(done, total)` is called
/// every 1,000 submissions and at the end. A failed submission returns the job's index.
pub(crate) fn submit_all(
    engine: &mut Engine,
    jobs: &[TraceJob],
    spec: impl Fn(&TraceJob) -> JobSpec,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Vec<JobId>, (usize, EngineError)> {
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&i| jobs[i].submit_ms);
    let start = engine.now();
    let mut ids = Vec::with_capacity(jobs.len());
    for (n, &i) in order.iter().enumerate() {
        let j = &jobs[i];
        engine
            .advance_to(start + j.submit_ms.max(0))
            .map_err(|e| (i, e))?;
        ids.push(engine.submit(spec(j)).map_err(|e| (i, e))?);
        if n % 1000 == 999 {
            progress(n + 1, jobs.len());
        }
    }
    engine.run_until_idle(Millis::MAX / 4);
    progress(jobs.len(), jobs.len());
    Ok(ids)
}

/// Replays `trace` under `cfg`. Returns the outcome and the engine (for the scorecard).
pub fn replay(
    trace: &[TraceJob],
    cfg: &ReplayConfig,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<(ReplayOutcome, Engine), ReplayError> {
    let began = Instant::now();
    let mut engine = cfg.build_engine()?;
    for j in trace {
        if !cfg.shares.iter().any(|s| s.name == j.share) {
            return Err(ReplayError::Trace {
                origin: j.origin.clone(),
                message: format!("share {:?} is not in configuration {:?}", j.share, cfg.name),
            });
        }
    }
    let ids =
        submit_all(&mut engine, trace, |j| spec_for(j, cfg), progress).map_err(|(i, e)| {
            ReplayError::Trace {
                origin: trace[i].origin.clone(),
                message: e.to_string(),
            }
        })?;
    let first = engine.config().start_ms + trace.iter().map(|j| j.submit_ms).min().unwrap_or(0);
    let last_stop = ids
        .iter()
        .filter_map(|&id| engine.job(id).and_then(|j| j.stopped_at))
        .max()
        .unwrap_or(first)
        .max(first + 1);
    let opts = ScorecardOptions {
        restart_cost_ms: cfg.workload.restart_overhead_s * 1000,
        ..ScorecardOptions::default()
    };
    let input = from_engine::input_from_engine(
        &engine,
        engine.events(),
        &cfg.name,
        Window::new(first, last_stop),
    );
    let card = scorecard::scorecard(&input, &opts);
    let mut out = ReplayOutcome {
        config: cfg.name.clone(),
        jobs: ids.len(),
        completed: 0,
        failed: 0,
        unfinished: 0,
        makespan_ms: 0,
        preemptions: 0,
        work_gpu_hours: 0.0,
        lost_gpu_hours: 0.0,
        overhead_gpu_hours: 0.0,
        delivered_gpu_hours: 0.0,
        unknown_gpu_types: Vec::new(),
        scorecard: card,
        elapsed: Duration::ZERO,
    };
    let mut last = first;
    for &id in &ids {
        let (Some(job), Some(work)) = (engine.job(id), engine.work(id)) else {
            continue;
        };
        let gpus = gpus_per_instance(&job.instance_type).unwrap_or_else(|| {
            if !out.unknown_gpu_types.contains(&job.instance_type) {
                out.unknown_gpu_types.push(job.instance_type.clone());
            }
            1
        });
        let gh = |ms: u64| ms as f64 / HOUR_MS * (job.instance_count * gpus) as f64;
        match job.status {
            JobStatus::Succeeded => {
                out.completed += 1;
                out.work_gpu_hours += gh(work.work_ms);
            }
            JobStatus::Failed => out.failed += 1,
            _ => out.unfinished += 1,
        }
        out.preemptions += job.preemption_count() as u64;
        out.lost_gpu_hours += gh(work.lost_ms);
        out.overhead_gpu_hours += gh(work.overhead_ms);
        out.delivered_gpu_hours += gh(work.run_ms);
        if let Some(t) = job.stopped_at {
            last = last.max(t);
        }
    }
    out.makespan_ms = last - first;
    out.elapsed = began.elapsed();
    Ok((out, engine))
}
