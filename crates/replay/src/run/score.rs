//! Reading a finished run: the scorecard, the evaluation, the per-job rows and the schedule the
//! verdict compares.

use std::time::Instant;

use quotatop_analysis::scorecard::decision::{self, JobFacts, Schedule, deadline_in};
use quotatop_analysis::scorecard::{
    self, JobHistory, Outcome, PriorityBand, ScorecardInput, ScorecardOptions, Window,
};
use quotatop_engine::JobId;
use quotatop_model::Millis;

use super::super::{JobName, ReplayConfig, TraceJob};
use super::{Comparison, JobRow, ReplayOutcome, Tally, band_of, horizon_end, submission_order};

/// Reads a run: the scorecard, the evaluation and the rows of `jobs` (the histories with their
/// engine ids, in submission order).
pub(super) fn score(
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
        .map(|(h, t)| {
            let class = t.and_then(|t| {
                cmp.class_by_policy
                    .get(&(t.share.clone(), t.priority))
                    .copied()
            });
            job_fact(h, *t, class, cmp)
        })
        .collect()
}

/// One job's [`JobFacts`]: its own deadline (the trace's), else its class's promise, else its
/// share's rule.
fn job_fact(
    h: &JobHistory,
    t: Option<&TraceJob>,
    class: Option<u16>,
    cmp: &Comparison,
) -> JobFacts {
    JobFacts {
        important: t.is_some_and(|t| cmp.important(t)),
        band: t.map_or(PriorityBand::of(h.priority), band_of),
        class,
        deadline: t.and_then(|t| {
            deadline_in(
                &cmp.rules,
                class,
                &h.share,
                h.submitted_at,
                t.work_ms,
                t.extras.deadline_ms(),
            )
        }),
    }
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
                name: t.map_or_else(
                    || JobName::Given(h.name.as_str().into()),
                    |t| t.name.clone(),
                ),
                origin: t.map(|t| t.origin.clone()),
                share: t.map_or_else(|| h.share.as_str().into(), |t| t.share.clone()),
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
                lost_basis: l.basis,
                important: f.important,
                deadline_met: f.deadline.map(|d| d.met(h)),
                priority: t.map_or(i64::from(h.priority), |t| t.priority),
                gpus: h.instance_count.saturating_mul(gpus),
                held_gpu_hours: g(l.held()),
                unfinished_gpu_hours: g(l.unfinished),
                checkpoints_written: super::checkpoints_written(
                    scorecard::checkpoint_ms(h, opts),
                    matches!(h.outcome, Outcome::Succeeded(_)),
                    t.map_or(0, |t| t.work_ms),
                    l.unfinished,
                ),
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
