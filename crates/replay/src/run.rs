//! Running a trace under one configuration.

use std::time::{Duration, Instant};

use quotatop_analysis::scorecard::decision::{
    self, Evaluation, JobFacts, Rules, Schedule, deadline_of,
};
use quotatop_analysis::scorecard::{
    self, JobHistory, Ledger, Outcome, PriorityBand, Scorecard, ScorecardInput, ScorecardOptions,
    Window, from_engine,
};
use quotatop_engine::{Engine, EngineError, JobId, JobSpec};
use quotatop_model::{JobStatus, Millis};

use super::{ReplayConfig, ReplayError, StuckJob, TraceJob};

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

/// Applies the configuration's workload assumptions to a trace job.
pub(crate) fn spec_for(job: &TraceJob, cfg: &ReplayConfig) -> JobSpec {
    let w = &cfg.workload;
    let mut spec = job.spec();
    if let Some(&p) = w.priority.get(&*job.share) {
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
/// every 1,000 submissions and at the end; `between(engine)` after each submission and each
/// step of the run to idle (e.g. to drain the event log). A failed submission returns the job's
/// index.
pub(crate) fn submit_all(
    engine: &mut Engine,
    jobs: &[TraceJob],
    spec: impl Fn(&TraceJob) -> JobSpec,
    progress: &mut dyn FnMut(usize, usize),
    between: &mut dyn FnMut(&mut Engine),
) -> Result<Vec<JobId>, (usize, EngineError)> {
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&i| jobs[i].submit_ms);
    let start = engine.now();
    engine.reserve_jobs(jobs.len());
    // Priority changes (trace column `priority_changes`): (time, job index, priority), applied
    // at their times between submissions and while the engine runs on.
    let mut changes: Vec<(Millis, usize, i64)> = jobs
        .iter()
        .enumerate()
        .flat_map(|(i, j)| {
            j.extras
                .priority_changes()
                .iter()
                .map(move |&(t, p)| (start + t.max(j.submit_ms).max(0), i, p))
        })
        .collect();
    changes.sort_by_key(|&(t, i, _)| (t, i));
    let mut changes = changes.into_iter().peekable();
    let mut id_of: Vec<Option<JobId>> = if changes.peek().is_some() {
        vec![None; jobs.len()]
    } else {
        Vec::new()
    };
    let mut ids = Vec::with_capacity(jobs.len());
    for (n, &i) in order.iter().enumerate() {
        let j = &jobs[i];
        let at = start + j.submit_ms.max(0);
        apply_due(engine, &mut changes, at.saturating_sub(1), &id_of)?;
        engine.advance_to(at).map_err(|e| (i, e))?;
        let id = engine.submit(spec(j)).map_err(|e| (i, e))?;
        if let Some(slot) = id_of.get_mut(i) {
            *slot = Some(id);
        }
        ids.push(id);
        between(engine);
        if n % 1000 == 999 {
            progress(n + 1, jobs.len());
        }
    }
    // Engine::run_until_idle(Millis::MAX / 4), one step at a time, with the changes left.
    loop {
        let now = engine.now();
        apply_due(engine, &mut changes, now, &id_of)?;
        let next_change = changes.peek().map(|&(t, _, _)| t);
        let at = match (engine.next_step_at(), next_change) {
            (Some(a), Some(c)) => a.min(c),
            (Some(a), None) => a,
            (None, Some(c)) => c,
            (None, None) => break,
        };
        if at > Millis::MAX / 4 || engine.advance_to(at.max(engine.now())).is_err() {
            break;
        }
        between(engine);
    }
    progress(jobs.len(), jobs.len());
    Ok(ids)
}

/// Applies the priority changes due by `t`; a job already finished in this scenario keeps its
/// end.
fn apply_due(
    engine: &mut Engine,
    changes: &mut std::iter::Peekable<std::vec::IntoIter<(Millis, usize, i64)>>,
    t: Millis,
    id_of: &[Option<JobId>],
) -> Result<(), (usize, EngineError)> {
    while let Some(&(at, i, p)) = changes.peek() {
        if at > t {
            break;
        }
        changes.next();
        engine
            .advance_to(at.max(engine.now()))
            .map_err(|e| (i, e))?;
        if let Some(Some(id)) = id_of.get(i) {
            match engine.update_priority(*id, p) {
                Ok(()) | Err(EngineError::JobFinished(_)) => {}
                Err(e) => return Err((i, e)),
            }
        }
    }
    Ok(())
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
    pub important_by_policy: Option<std::collections::BTreeSet<(String, i64)>>,
}

impl Comparison {
    /// Important work: what the policy names when one is given; else high or critical band as
    /// submitted in the trace, or the protected share.
    pub fn important(&self, job: &TraceJob) -> bool {
        if let Some(set) = &self.important_by_policy {
            return set.contains(&(job.share.to_string(), job.priority));
        }
        band_of(job) >= PriorityBand::High || self.protected.as_deref() == Some(&*job.share)
    }
}

fn band_of(job: &TraceJob) -> PriorityBand {
    PriorityBand::of(job.priority.clamp(0, i64::from(u32::MAX)) as u32)
}

/// One job under one configuration, for `--jobs-out`. Times in seconds from the trace start.
#[derive(Debug, Clone, PartialEq)]
pub struct JobRow {
    pub name: String,
    pub origin: String,
    pub share: String,
    pub submit_s: f64,
    /// `(held from, stopped)` of each attempt.
    pub attempts: Vec<(Option<f64>, Option<f64>)>,
    pub outcome: &'static str,
    pub ended_s: Option<f64>,
    pub productive_gpu_hours: f64,
    pub lost_gpu_hours: f64,
    pub overhead_gpu_hours: f64,
    /// How its lost work is known: "measured", "modelled (interval N min)", … (`LostBasis`).
    pub lost_basis: String,
    pub important: bool,
    pub deadline_met: Option<bool>,
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

/// Reads a run: the scorecard, the evaluation and the rows of `jobs` (the histories with their
/// engine ids, in submission order).
fn score(
    trace: &[TraceJob],
    cfg: &ReplayConfig,
    cmp: &Comparison,
    mut input: ScorecardInput,
    jobs: Vec<(JobId, JobHistory)>,
    tally: Tally,
    began: Instant,
) -> ReplayOutcome {
    let order = submission_order(trace);
    // The trace job behind each history: ids are in submission order (stable by time).
    let traced: Vec<Option<&TraceJob>> = jobs
        .iter()
        .map(|(id, _)| order.get(id.0 as usize).map(|&i| &trace[i]))
        .collect();
    let opts = ScorecardOptions {
        restart_cost_ms: cfg.workload.restart_overhead_s.saturating_mul(1000),
        ..ScorecardOptions::default()
    };
    let schedule = schedule_of(trace, &order, &jobs, &input, &opts);
    drop(order);
    input.jobs = jobs.into_iter().map(|(_, h)| h).collect();
    let first = input.window.start;
    let card = scorecard::scorecard(&input, &opts);
    let horizon = Window::new(first, horizon_end(trace, first, cmp.horizon_ms));
    let facts = job_facts(&input, &traced, cmp);
    let evaluation = decision::evaluate(&input, &facts, horizon, &opts, &cmp.rules);
    let start = first - trace.iter().map(|j| j.submit_ms).min().unwrap_or(0);
    let jobs_rows = if cmp.per_job {
        job_rows(&input, &traced, &facts, &opts, start)
    } else {
        Vec::new()
    };
    ReplayOutcome {
        config: cfg.name.clone(),
        jobs: tally.jobs,
        completed: tally.completed,
        failed: tally.failed,
        unfinished: tally.unfinished,
        makespan_ms: tally.makespan_ms,
        preemptions: tally.preemptions,
        ledger: card.queue_row.ledger,
        horizon,
        evaluation,
        jobs_rows,
        schedule,
        never_run: Vec::new(),
        unknown_gpu_types: scorecard::unknown_gpu_types(&input, &opts),
        scorecard: card,
        elapsed: began.elapsed(),
    }
}

/// What the evaluation needs of each job: whether it is important, its band and deadline.
fn job_facts(
    input: &ScorecardInput,
    traced: &[Option<&TraceJob>],
    cmp: &Comparison,
) -> Vec<JobFacts> {
    input
        .jobs
        .iter()
        .zip(traced)
        .map(|(h, t)| JobFacts {
            important: t.is_some_and(|t| cmp.important(t)),
            band: t.map_or(PriorityBand::of(h.priority), band_of),
            deadline: t.and_then(|t| {
                deadline_of(
                    &cmp.rules,
                    &h.share,
                    h.submitted_at,
                    t.work_ms,
                    t.extras.deadline_ms(),
                )
            }),
        })
        .collect()
}

/// The per-job rows (`--jobs-out`), times in seconds after `start`.
fn job_rows(
    input: &ScorecardInput,
    traced: &[Option<&TraceJob>],
    facts: &[JobFacts],
    opts: &ScorecardOptions,
    start: Millis,
) -> Vec<JobRow> {
    let secs = |t: Millis| (t - start) as f64 / 1000.0;
    input
        .jobs
        .iter()
        .zip(traced)
        .zip(facts)
        .map(|((h, t), f)| {
            let l = scorecard::job_ledger(h, input.window, opts);
            let gpus = opts.gpus.gpus(&h.instance_type).unwrap_or(0);
            let g = |ms: Millis| scorecard::gpu_hours(ms, h.instance_count, gpus);
            let (outcome, ended) = match h.outcome {
                Outcome::Succeeded(t) => ("succeeded", Some(secs(t))),
                Outcome::Failed(t) => ("failed", Some(secs(t))),
                Outcome::Open => ("never finished", None),
            };
            JobRow {
                // The name the engine was given: the trace's.
                name: t
                    .map(|t| t.name.to_string())
                    .unwrap_or_else(|| h.name.clone()),
                origin: t.map(|t| t.origin.to_string()).unwrap_or_default(),
                share: h.share.clone(),
                submit_s: secs(h.submitted_at),
                attempts: h
                    .attempts
                    .iter()
                    .map(|a| (a.held_from().map(secs), a.stopped_at.map(secs)))
                    .collect(),
                outcome,
                ended_s: ended,
                productive_gpu_hours: g(l.productive),
                lost_gpu_hours: g(l.lost),
                overhead_gpu_hours: g(l.overhead),
                lost_basis: l.basis.label(),
                important: f.important,
                deadline_met: f.deadline.map(|d| d.met(h)),
            }
        })
        .collect()
}

/// What the verdict compares of a run: each job's work and completion in submission order,
/// the schedule's digest, the run's window, its last submission and its capacity in GPUs.
fn schedule_of(
    trace: &[TraceJob],
    order: &[usize],
    jobs: &[(JobId, JobHistory)],
    input: &ScorecardInput,
    opts: &ScorecardOptions,
) -> Schedule {
    let gpus = |ty: &str| opts.gpus.gpus(ty).unwrap_or(0);
    let work_gpu_hours = order
        .iter()
        .map(|&i| {
            let j = &trace[i];
            let ms = Millis::try_from(j.work_ms).unwrap_or(Millis::MAX);
            scorecard::gpu_hours(ms, j.instance_count, gpus(&j.instance_type))
        })
        .collect();
    let mut completed_at = vec![None; order.len()];
    for (id, h) in jobs {
        if let (Some(slot), Outcome::Succeeded(t)) =
            (completed_at.get_mut(id.0 as usize), h.outcome)
        {
            *slot = Some(t);
        }
    }
    let lo = trace.iter().map(|j| j.submit_ms).min().unwrap_or(0);
    let hi = trace.iter().map(|j| j.submit_ms).max().unwrap_or(0);
    Schedule {
        work_gpu_hours,
        completed_at,
        never_run: Vec::new(),
        fingerprint: decision::fingerprint(jobs.iter().map(|(_, h)| h)),
        window: input.window,
        last_submission: input.window.start + (hi - lo),
        capacity_gpus: input
            .capacity
            .iter()
            .map(|l| f64::from(l.max_capacity) * f64::from(gpus(&l.instance_type)))
            .sum(),
    }
}
