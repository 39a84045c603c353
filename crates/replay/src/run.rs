//! Running a trace under one configuration.
//!
//! This file holds the outcome and the run itself; feeding the trace into the engine is in
//! `submit`, reading the finished run (scorecard, evaluation, rows) in `score`.

mod score;
mod submit;

use std::sync::Arc;
use std::time::{Duration, Instant};

use quotatop_analysis::scorecard::decision::{Evaluation, Rules, Schedule};
use quotatop_analysis::scorecard::{
    JobHistory, Ledger, LostBasis, Outcome, PriorityBand, Scorecard, ScorecardInput, Window,
    from_engine,
};
use quotatop_engine::Engine;
use quotatop_model::{JobStatus, Millis};

use super::{JobName, Origin, ReplayConfig, ReplayError, StuckJob, TraceJob};
use score::score;
pub(crate) use submit::{spec_for, submit_all};

/// What one configuration did with the trace. Every GPU-time figure comes from the scorecard's
/// ledger (docs/architecture.md), over the whole run or up to the horizon.
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
    /// The whole run: from the first submission until after the last event.
    pub ledger: Ledger,
    /// Goodput (`evaluation.all.goodput`) counts what had finished by the end of this.
    pub horizon: Window,
    /// Important work, deadlines, interruption budgets and cost, by the comparison's rules.
    pub evaluation: Evaluation,
    /// One row per job, when the comparison asked for them.
    pub jobs_rows: Vec<JobRow>,
    /// What the verdict compares: each job's completion (in submission order), the schedule's
    /// digest, the run's window and capacity.
    pub schedule: Schedule,
    /// The jobs this configuration can never run, in submission order (named in the report).
    pub never_run: Vec<NeverRun>,
    /// Instance types without a known GPU count (their GPU-hours count as 0; the scorecard
    /// notes them).
    pub unknown_gpu_types: Vec<String>,
    /// The five-metric scorecard of the whole run, from the engine's event log.
    pub scorecard: Scorecard,
    /// Wall-clock time of the replay itself.
    pub elapsed: Duration,
}

/// A job a configuration can never run, as the report names it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct NeverRun {
    pub name: String,
    pub origin: String,
    pub share: String,
    pub reason: String,
}

impl ReplayOutcome {
    /// Records the jobs the configuration left stuck ([`super::never_run`]).
    pub(crate) fn set_never_run(&mut self, stuck: &[StuckJob<'_>]) {
        self.schedule.never_run = stuck.iter().map(|s| s.index).collect();
        self.never_run = stuck
            .iter()
            .map(|s| NeverRun {
                name: s.job.name.to_string(),
                origin: s.job.origin.to_string(),
                share: s.job.share.to_string(),
                reason: s.reason.clone(),
            })
            .collect();
    }

    /// Preemption waste: lost work plus restart overhead.
    pub fn waste_gpu_hours(&self) -> f64 {
        self.ledger.waste_gpu_hours()
    }
}

/// Events kept in the engine before they are folded into the histories.
const DRAIN_EVERY: usize = 4096;

/// Folds the engine's event log into `histories` once it holds [`DRAIN_EVERY`] events (or
/// always, with `all`), so a replay never keeps the whole log.
fn drain_into(engine: &mut Engine, histories: &mut from_engine::HistoryBuilder, all: bool) {
    if all || engine.events().len() >= DRAIN_EVERY {
        histories.extend(&engine.drain_events());
    }
}

/// Replays `trace` under `cfg`. Returns the outcome and the engine (its jobs; its event log was
/// consumed as the replay went, see [`from_engine::HistoryBuilder`]).
pub fn replay(
    trace: &[TraceJob],
    cfg: &ReplayConfig,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<(ReplayOutcome, Engine), ReplayError> {
    replay_to(trace, cfg, &Comparison::default(), progress)
}

/// How a comparison reads every scenario: the same horizon, rules and important work.
#[derive(Debug, Clone, Default)]
pub struct Comparison {
    /// Goodput horizon after the first submission (`None`: the last submission +
    /// [`DEFAULT_HORIZON_TAIL_MS`]).
    pub horizon_ms: Option<Millis>,
    pub rules: Rules,
    /// The share the comparison protects: its jobs are important work in every scenario.
    pub protected: Option<String>,
    /// Keep one row per job (for `--jobs-out`).
    pub per_job: bool,
    /// The (share, priority as submitted) of important work when a policy says which it is
    /// (`replay --policy`): replaces the band heuristic.
    /// Keyed by the trace's own share names (`TraceJob::share`), so a lookup copies none.
    pub important_by_policy: Option<std::collections::BTreeSet<(Arc<str>, i64)>>,
    /// Each job's policy class by (share, priority as submitted), an index of the rules'
    /// `classes` (`replay --policy`; one membership rule, `quotatop_policy::class_of`): its
    /// class's promise and budget judge it.
    pub class_by_policy: std::collections::BTreeMap<(Arc<str>, i64), u16>,
}

impl Comparison {
    /// Important work: what the policy names when one is given; else high or critical band as
    /// submitted in the trace, or the protected share.
    pub fn important(&self, job: &TraceJob) -> bool {
        if let Some(set) = &self.important_by_policy {
            return set.contains(&(job.share.clone(), job.priority));
        }
        band_of(job) >= PriorityBand::High || self.protected.as_deref() == Some(&*job.share)
    }
}

pub(crate) fn band_of(job: &TraceJob) -> PriorityBand {
    band_of_priority(job.priority)
}

/// The band of a priority as submitted.
pub(crate) fn band_of_priority(priority: i64) -> PriorityBand {
    PriorityBand::of(priority.clamp(0, i64::from(u32::MAX)) as u32)
}

/// One job under one configuration, for `--jobs-out`. Times in seconds from the trace start.
/// Its name, origin and share are the trace's own (shared, not copied: a sweep makes a row per
/// job for every replay); the words of its lost work's basis are made when written.
#[derive(Debug, Clone, PartialEq)]
pub struct JobRow {
    pub name: JobName,
    /// `None`: a job the trace does not hold.
    pub origin: Option<Origin>,
    pub share: Arc<str>,
    pub submit_s: f64,
    /// `(held from, stopped)` of each attempt.
    pub attempts: Vec<(Option<f64>, Option<f64>)>,
    pub outcome: &'static str,
    pub ended_s: Option<f64>,
    pub productive_gpu_hours: f64,
    pub lost_gpu_hours: f64,
    pub overhead_gpu_hours: f64,
    /// How its lost work is known (`LostBasis::label`: "measured", "modelled (interval N
    /// min)", …).
    pub lost_basis: LostBasis,
    pub important: bool,
    pub deadline_met: Option<bool>,
    /// Its priority as submitted in the trace (what its class is read by).
    pub priority: i64,
    /// Its instances × GPUs per instance (0 when the type's GPU count is unknown).
    pub gpus: u32,
    /// Every GPU-hour it held (the ledger's categories summed).
    pub held_gpu_hours: f64,
    /// Progress of a job that did not succeed (saved or in flight).
    pub unfinished_gpu_hours: f64,
    /// Checkpoints it wrote under its interval ([`checkpoints_written`]).
    pub checkpoints_written: u64,
}

/// The checkpoints a job writes under interval `c` (ms of progress; `None`: none): one each
/// time its cumulative progress reaches a multiple of `c` before it ends. A re-run resumes from
/// the last checkpoint, so no multiple is reached twice: a job that SUCCEEDED with work `W`
/// wrote ⌈W / c⌉ − 1 (none at its very end); any other wrote its saved progress ÷ `c`
/// (`unfinished_ms`, the ledger's progress of a job that did not succeed, less what was in
/// flight past its last multiple).
pub fn checkpoints_written(
    c: Option<Millis>,
    succeeded: bool,
    work_ms: u64,
    unfinished_ms: Millis,
) -> u64 {
    let Some(c) = c.filter(|&c| c > 0) else {
        return 0;
    };
    let c = c as u64;
    if succeeded {
        work_ms.div_ceil(c).saturating_sub(1)
    } else {
        unfinished_ms.max(0) as u64 / c
    }
}

/// The default horizon's tail after the trace's last submission.
pub const DEFAULT_HORIZON_TAIL_MS: Millis = 24 * 3_600_000;

/// The end of the goodput horizon: `horizon_ms` after the first submission when given, else the
/// last submission plus [`DEFAULT_HORIZON_TAIL_MS`].
pub fn horizon_end(trace: &[TraceJob], first: Millis, horizon_ms: Option<Millis>) -> Millis {
    let lo = trace.iter().map(|j| j.submit_ms).min().unwrap_or(0);
    let hi = trace.iter().map(|j| j.submit_ms).max().unwrap_or(0);
    match horizon_ms {
        Some(h) => first.saturating_add(h.max(1)),
        None => first
            .saturating_add(hi - lo)
            .saturating_add(DEFAULT_HORIZON_TAIL_MS),
    }
}

/// [`replay`] read the comparison's way: its horizon, rules and important work. Returns the
/// engine too (a full one: its jobs carry their ids, names and attempts).
pub fn replay_to(
    trace: &[TraceJob],
    cfg: &ReplayConfig,
    cmp: &Comparison,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<(ReplayOutcome, Engine), ReplayError> {
    let began = Instant::now();
    let (engine, ran) = run(trace, cfg, false, progress)?;
    let jobs = ran
        .histories
        .finish_with(|id| from_engine::facts_of(&engine, id));
    let mut out = score(trace, cfg, cmp, ran.input, jobs, ran.tally, began);
    out.set_never_run(&super::never_run(trace, &engine));
    Ok((out, engine))
}

/// [`replay_to`] as `quotatop replay` runs it: a lean engine ([`Engine::set_lean`]), dropped
/// once the run is over, before the histories are put together and read, so that only the
/// outcome is left. Returns the jobs the configuration left stuck ([`super::never_run`]).
/// The figures are [`replay_to`]'s: the histories' facts come from the trace and the
/// configuration's workload ([`spec_for`]), as the engine took them.
pub fn replay_lean<'a>(
    trace: &'a [TraceJob],
    cfg: &ReplayConfig,
    cmp: &Comparison,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<(ReplayOutcome, Vec<StuckJob<'a>>), ReplayError> {
    let began = Instant::now();
    let (engine, ran) = run(trace, cfg, true, progress)?;
    let stuck = super::never_run(trace, &engine);
    let start = engine.config().start_ms;
    drop(engine);
    let order = submission_order(trace);
    let jobs = ran.histories.finish_with(|id| {
        let j = &trace[*order.get(id.0 as usize)?];
        let spec = spec_for(j, cfg);
        Some(JobHistory {
            job_id: String::new(),
            name: String::new(),
            share: spec.share,
            priority: u32::try_from(spec.priority).ok()?,
            instance_type: spec.instance_type,
            instance_count: spec.instance_count,
            submitted_at: start.saturating_add(j.submit_ms.max(0)),
            runnable_at: Vec::new(),
            attempts: Vec::new(),
            outcome: Outcome::Open,
            checkpoint_interval_ms: spec.checkpoint_interval_ms.filter(|&c| c > 0),
            restart_overhead_ms: Some(spec.restart_overhead_ms),
            preemption_retries: spec.preemption_retries,
            training: None,
        })
    });
    let mut out = score(trace, cfg, cmp, ran.input, jobs, ran.tally, began);
    out.set_never_run(&stuck);
    Ok((out, stuck))
}

/// The trace's indices in submission order (stable by time): the engine's job ids, as
/// [`submit_all`] submits them.
fn submission_order(trace: &[TraceJob]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..trace.len()).collect();
    order.sort_by_key(|&i| trace[i].submit_ms);
    order
}

/// What a run leaves once its engine is gone.
struct Ran {
    histories: from_engine::HistoryBuilder,
    /// The scorecard's input without its jobs: window, capacity, entitlements.
    input: ScorecardInput,
    tally: Tally,
}

/// The outcome's counts, from the engine's jobs.
struct Tally {
    jobs: usize,
    completed: usize,
    failed: usize,
    unfinished: usize,
    preemptions: u64,
    makespan_ms: Millis,
}

/// Runs the trace under `cfg` to the end, folding the event log into histories as it goes.
fn run(
    trace: &[TraceJob],
    cfg: &ReplayConfig,
    lean: bool,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<(Engine, Ran), ReplayError> {
    let mut engine = cfg.build_engine()?;
    engine.set_lean(lean);
    for j in trace {
        if !cfg.shares.iter().any(|s| *s.name == *j.share) {
            return Err(ReplayError::Trace {
                origin: j.origin.to_string(),
                message: format!("share {:?} is not in configuration {:?}", j.share, cfg.name),
            });
        }
    }
    let mut histories = from_engine::HistoryBuilder::new();
    histories.reserve_jobs(trace.len());
    let ids = submit_all(
        &mut engine,
        trace,
        |j| spec_for(j, cfg),
        progress,
        &mut |e| drain_into(e, &mut histories, false),
    )
    .map_err(|(i, e)| ReplayError::Trace {
        origin: trace[i].origin.to_string(),
        message: e.to_string(),
    })?;
    drain_into(&mut engine, &mut histories, true);
    let first = engine.config().start_ms + trace.iter().map(|j| j.submit_ms).min().unwrap_or(0);
    // Half-open windows end after the last event, so the jobs that finish last count.
    let end = histories
        .last_time()
        .unwrap_or(first)
        .max(first)
        .saturating_add(1);
    let input =
        from_engine::input_with_jobs(&engine, Vec::new(), &cfg.name, Window::new(first, end));
    let mut tally = Tally {
        jobs: ids.len(),
        completed: 0,
        failed: 0,
        unfinished: 0,
        preemptions: 0,
        makespan_ms: 0,
    };
    let mut last = first;
    for &id in &ids {
        let Some(job) = engine.job(id) else {
            continue;
        };
        match job.status {
            JobStatus::Succeeded => tally.completed += 1,
            JobStatus::Failed => tally.failed += 1,
            _ => tally.unfinished += 1,
        }
        tally.preemptions += job.preemption_count() as u64;
        if let Some(t) = job.stopped_at {
            last = last.max(t);
        }
    }
    tally.makespan_ms = last - first;
    Ok((
        engine,
        Ran {
            histories,
            input,
            tally,
        },
    ))
}
