//! The drill's plan and report as text (markdown) and JSON.

use std::fmt::Write as _;

use quotatop_analysis::drill::{Aggregate, DrillPlan, DrillReport, RepetitionResult};
use quotatop_analysis::scorecard::format::duration;
use quotatop_model::{Millis, clean_text};

/// `42s`, `3m07s`, `5h12m` (the scorecard's format).
pub fn ms(ms: Millis) -> String {
    duration(Some(ms))
}

fn opt(ms: Option<Millis>) -> String {
    duration(ms)
}

fn gpu_h(h: Option<f64>) -> String {
    h.map_or("- (GPU count unknown)".to_string(), |h| format!("{h:.2}"))
}

/// The plan as printed before anything is submitted.
pub fn plan_text(p: &DrillPlan, run_id: &str, currency: Option<&str>) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "Preemption drill {run_id} on queue {}",
        clean_text(&p.queue)
    );
    let _ = writeln!(
        o,
        "lender    {} (priority job: priority {}, works {})",
        clean_text(&p.lender),
        p.priority,
        ms(p.priority_length_ms)
    );
    let _ = writeln!(
        o,
        "borrower  {} (jobs of 1 instance, priority {}, preempted halfway through their length)",
        clean_text(&p.borrower),
        p.borrower_priority
    );
    let _ = writeln!(
        o,
        "every job tagged quotatop:drill={run_id}, preemptionRetriesBeforeTermination {}, the template's stopping condition",
        p.preemption_retries
    );
    for t in &p.types {
        let _ = writeln!(
            o,
            "{}: lender idle {} of {}, borrower idle {} of {}, may borrow {} -> {} borrower job{} ({} borrowed), priority job of {}",
            clean_text(&t.instance_type),
            t.lender_idle,
            t.lender_limit,
            t.borrower_idle,
            t.borrower_limit,
            t.borrow_room.map_or("any".to_string(), |r| r.to_string()),
            t.borrower_jobs,
            if t.borrower_jobs == 1 { "" } else { "s" },
            t.borrowed,
            t.priority_count
        );
    }
    let _ = writeln!(o, "repetitions ({}):", p.repetitions.len());
    for r in &p.repetitions {
        let _ = writeln!(
            o,
            "  {:>2}. {}",
            r.index,
            clean_text(&super::procedure::describe_spec(r))
        );
    }
    let _ = writeln!(
        o,
        "expected  {} (assuming {} of start-up per job)",
        ms(p.expected_ms),
        ms(quotatop_analysis::drill::ASSUMED_STARTUP_MS)
    );
    cost_lines(&mut o, p, currency);
    o
}

/// What the drill holds, and its cost when the config has prices.
fn cost_lines(o: &mut String, p: &DrillPlan, currency: Option<&str>) {
    let held: Vec<String> = p
        .instance_hours
        .iter()
        .map(|(t, h)| format!("{h:.1} instance-h of {}", clean_text(t)))
        .collect();
    let _ = writeln!(*o, "holds     about {}", held.join(", "));
    match p.cost {
        Some(c) => {
            let _ = writeln!(
                *o,
                "cost      about {c:.2}{}{}",
                currency
                    .map(|c| format!(" {}", clean_text(c)))
                    .unwrap_or_default(),
                if p.unpriced.is_empty() {
                    String::new()
                } else {
                    format!(" (no price for {})", clean_text(&p.unpriced.join(", ")))
                }
            );
        }
        None => {
            let _ = writeln!(*o, "cost      - (no [prices] in the config)");
        }
    }
}

fn aggregate_lines(o: &mut String, a: &Aggregate) {
    let _ = writeln!(
        o,
        "| reclaim latency P50 / P95 | {} / {} ({} of {} measured) |",
        opt(a.reclaim_p50_ms),
        opt(a.reclaim_p95_ms),
        a.measured,
        a.repetitions
    );
    let _ = writeln!(
        o,
        "| borrower jobs preempted | {} ({} preempted attempts) |",
        a.preempted, a.preempted_attempts
    );
    let _ = writeln!(
        o,
        "| requeue to restart P50 / P95 | {} / {} ({} of {} restarted) |",
        opt(a.requeue_to_restart_p50_ms),
        opt(a.requeue_to_restart_p95_ms),
        a.restarted,
        a.preempted
    );
    let _ = writeln!(o, "| lost GPU-h (ledger) | {} |", gpu_h(a.lost_gpu_hours));
    let _ = writeln!(
        o,
        "| checkpoint restored / restarted from scratch / unknown | {} / {} / {} |",
        a.resumed, a.not_resumed, a.unknown
    );
}

fn repetition_md(o: &mut String, r: &RepetitionResult) {
    let _ = writeln!(
        o,
        "\n### {}. {}\n",
        r.spec.index,
        clean_text(&super::procedure::describe_spec(&r.spec))
    );
    let _ = writeln!(
        o,
        "priority job {}: {} {}",
        clean_text(&r.priority_job_id),
        if r.spec.baseline {
            "start latency (nothing to reclaim)"
        } else {
            "reclaim latency"
        },
        opt(r.reclaim_latency_ms)
    );
    if !r.spec.baseline {
        let _ = writeln!(o, "lost GPU-h (ledger): {}", gpu_h(r.lost_gpu_hours));
    }
    if !r.preempted.is_empty() {
        let _ = writeln!(
            o,
            "\n| preempted job | RUNNABLE after | restarted after | preempted attempts | checkpoint | evidence |"
        );
        let _ = writeln!(o, "|---|---|---|---|---|---|");
        for p in &r.preempted {
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | {} | {} |",
                clean_text(&p.name),
                ms(p.requeued_after_ms),
                opt(p.requeue_to_restart_ms),
                p.preempted_attempts,
                p.checkpoint.as_str(),
                clean_text(&p.checkpoint_evidence).replace('|', "/")
            );
        }
    } else if !r.spec.baseline {
        let _ = writeln!(o, "no borrower job was preempted");
    }
    for n in &r.notes {
        let _ = writeln!(o, "note: {}", clean_text(n));
    }
}

/// The report in markdown.
pub fn report_md(r: &DrillReport) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "# Preemption drill {} — queue {}\n",
        clean_text(&r.run_id),
        clean_text(&r.queue)
    );
    let _ = writeln!(
        o,
        "lender {}, borrower {}; run by {}; {} of API time",
        clean_text(&r.lender),
        clean_text(&r.borrower),
        clean_text(&r.operator),
        ms(r.finished_at - r.started_at)
    );
    if let Some(why) = &r.interrupted {
        let _ = writeln!(o, "\n**Stopped early: {}**", clean_text(why));
    }
    let _ = writeln!(o, "\n## Aggregate\n\n| figure | value |\n|---|---|");
    aggregate_lines(&mut o, &r.aggregate);
    if let Some(b) = &r.baseline {
        let _ = writeln!(
            o,
            "\nbaseline (nothing borrowing): start latency P50 / P95 {} / {} over {} run{}",
            opt(b.reclaim_p50_ms),
            opt(b.reclaim_p95_ms),
            b.repetitions,
            if b.repetitions == 1 { "" } else { "s" }
        );
    }
    if r.groups.len() > 1 {
        let _ = writeln!(
            o,
            "\n## Per instance type and length\n\n| instance type | length | runs | reclaim P50 / P95 | preempted | requeue→restart P50 | lost GPU-h |\n|---|---|---|---|---|---|---|"
        );
        for g in &r.groups {
            let a = &g.aggregate;
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} / {} | {} | {} | {} |",
                clean_text(&g.instance_type),
                ms(g.length_ms),
                a.repetitions,
                opt(a.reclaim_p50_ms),
                opt(a.reclaim_p95_ms),
                a.preempted,
                opt(a.requeue_to_restart_p50_ms),
                gpu_h(a.lost_gpu_hours)
            );
        }
    }
    let _ = writeln!(o, "\n## Repetitions");
    for rep in &r.repetitions {
        repetition_md(&mut o, rep);
    }
    let _ = writeln!(
        o,
        "\n## Cleanup\n\n{} drill job{} terminated by the drill (at the end of {} repetition, or when it stopped); the others had finished",
        r.terminated.len(),
        if r.terminated.len() == 1 { "" } else { "s" },
        if r.terminated.len() == 1 {
            "its"
        } else {
            "their"
        }
    );
    for e in &r.termination_errors {
        let _ = writeln!(o, "- could not terminate: {}", clean_text(e));
    }
    let _ = writeln!(
        o,
        "\nTimes are the API's. Reclaim latency: the priority job's submission to its start. \
RUNNABLE after: the priority job's submission to the preempted attempt's end. Requeue to \
restart: that end to the next attempt's start. Lost GPU-h: the scorecard ledger's `lost` \
(progress after the last checkpoint; a job's checkpoint interval is its quotatop:checkpoint-seconds tag, else its share's in [scorecard.checkpoint_minutes]). Checkpoint: measured from the job's \
checkpoints under the template's CheckpointConfig.S3Uri (each job's own prefix, <S3Uri>/<job name>/) and its restarted attempt's \
log, unless --checkpoint-check decides."
    );
    o
}
