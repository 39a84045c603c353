//! Clause 1 (completed work) in words, and the verdict's one line with what an APPROVE costs.
//!
//! Jobs one scenario completes and the other never does are counted apart, in jobs and
//! GPU-hours; the mean completion time compares only the jobs every scenario completes, and a
//! change of it smaller than `min_material_change_s` is not material.

use super::{Clause, OnlyCompleted, Verdict, VerdictKind};
use crate::scorecard::decision::{DecisionRule, Evaluation};
use crate::scorecard::format::duration;

fn jobs(n: usize) -> String {
    if n == 1 {
        "1 job".to_string()
    } else {
        format!("{n} jobs")
    }
}

/// `lending completes 1 job, 2.0 GPU-h, that isolated never runs`.
fn only_text(o: &OnlyCompleted, who: &str, other: &str) -> String {
    format!(
        "{who} completes {}, {:.1} GPU-h, that {other} never {}",
        jobs(o.jobs),
        o.work_gpu_hours,
        if o.never_run_by_other {
            "runs"
        } else {
            "completes"
        }
    )
}

/// A signed duration: `-20m00s`, `+0s`.
fn signed(h: f64) -> String {
    let ms = (h * 3_600_000.0).round() as i64;
    let sign = if ms < 0 { "-" } else { "+" };
    if ms.abs() < 1000 {
        return format!("{sign}{:.3} s", (ms.abs() as f64) / 1000.0);
    }
    format!("{sign}{}", duration(Some(ms.abs())))
}

/// Clause 1: more work completed, or the same work sooner by a material amount, and never too
/// far behind; `holds: None` when the difference is not material and costs no more waste (an
/// immaterial change that adds waste fails: waste for nothing).
pub(super) fn clause(v: &Verdict, rule: &DecisionRule, (base, this): (&str, &str)) -> Clause {
    let (here, there) = (&v.completed_only_here, &v.completed_only_by_baseline);
    let net = here.work_gpu_hours - there.work_gpu_hours;
    let more = net > 0.0 || (net == 0.0 && here.jobs > there.jobs);
    let less = net < 0.0 || (net == 0.0 && here.jobs < there.jobs);
    let sooner = v.material
        && v.mean_completion_change_pct
            .is_some_and(|p| p < -rule.min_completion_gain_pct);
    let close = v.max_behind_pct <= rule.max_behind_pct;
    let (label, holds) = if less {
        ("completed less work", Some(false))
    } else if !close && (sooner || more) {
        (
            "completed work sooner on average but too far behind at times",
            Some(false),
        )
    } else if !close {
        ("completed work no sooner", Some(false))
    } else if more {
        ("completed more work", Some(true))
    } else if sooner {
        ("completed work sooner", Some(true))
    } else if !v.material && v.waste_gpu_hours_delta <= 0.0 {
        ("no material difference in completed work", None)
    } else {
        ("completed work no sooner", Some(false))
    };
    let mut parts = Vec::new();
    if here.jobs > 0 {
        parts.push(only_text(here, this, base));
    }
    if there.jobs > 0 {
        parts.push(only_text(there, base, this));
    }
    let change = match (v.mean_completion_change_pct, v.mean_completion_change_h) {
        (Some(p), Some(h)) => format!("{p:+.1}%, {}", signed(h)),
        _ => "no job completed in every scenario".to_string(),
    };
    let threshold = if v.material || v.mean_completion_change_h.is_none() {
        format!(
            "must fall by more than {}% and by at least {} s",
            rule.min_completion_gain_pct, rule.min_material_change_s
        )
    } else {
        format!(
            "below the materiality threshold of {} s",
            rule.min_material_change_s
        )
    };
    let hours = |h: Option<f64>| h.map_or("-".to_string(), |h| format!("{h:.2} h"));
    parts.push(format!(
        "mean completion time of the {} every scenario completes {} → {} ({change}; {threshold}), at most {:.1}% of the work behind the baseline at any time (limit {}%)",
        jobs(v.this.compared_jobs),
        hours(v.base.mean_completion_h),
        hours(v.this.mean_completion_h),
        v.max_behind_pct,
        rule.max_behind_pct,
    ));
    Clause {
        name: "completed work".to_string(),
        holds,
        text: format!("{label}: {}", parts.join("; ")),
    }
}

/// What an APPROVE costs: its added waste (and its cost) per hour by which the mean
/// completion time falls, else per GPU-hour of work only it completes.
fn cost_text(v: &Verdict, currency: &str) -> String {
    let money = |x: f64| format!("{:.0} {currency}", x + 0.0).trim().to_string();
    let signed_money = |x: f64| format!("{:+.0} {currency}", x + 0.0).trim().to_string();
    let waste = v.waste_gpu_hours_delta + 0.0;
    let cost = v.waste_cost_delta;
    let with_cost = |gpu: String, c: Option<String>| match c {
        Some(c) => format!("{gpu} ({c})"),
        None => gpu,
    };
    let spent = with_cost(format!("waste {waste:+.1} GPU-h"), cost.map(signed_money));
    let gained_h = v.mean_completion_change_h.map(|h| -h).filter(|&h| h > 0.0);
    match gained_h {
        Some(g) if v.material => {
            format!(
                "{spent} for {g:.2} h sooner: {}",
                with_cost(
                    format!("{:.1} GPU-h", waste / g + 0.0),
                    cost.map(|c| money(c / g))
                )
            ) + " per hour gained"
        }
        _ => {
            let w =
                v.completed_only_here.work_gpu_hours - v.completed_only_by_baseline.work_gpu_hours;
            format!(
                "{spent} for {w:.1} GPU-h of work only it completes: {}",
                with_cost(
                    format!("{:.2} GPU-h", if w > 0.0 { waste / w } else { 0.0 } + 0.0),
                    cost.map(|c| money(if w > 0.0 { c / w } else { 0.0 }))
                )
            ) + " per GPU-h completed"
        }
    }
}

/// The verdict's one line.
pub(super) fn summary(v: &Verdict, base: &str, this: &Evaluation) -> String {
    let texts = |keep: &dyn Fn(&Clause) -> bool| {
        v.clauses
            .iter()
            .filter(|c| keep(c))
            .map(|c| c.text.clone())
            .collect::<Vec<_>>()
            .join("; ")
    };
    match v.kind {
        VerdictKind::NoDifference => format!(
            "every job runs exactly as under {base} (nothing to lend or borrow, or no job that could use it); {}",
            texts(&|c| c.holds.is_none())
        ),
        VerdictKind::NoMaterialDifference => format!(
            "nothing material against {base}: {} (waste {:+.1} GPU-h)",
            texts(&|_| true),
            v.waste_gpu_hours_delta + 0.0
        ),
        VerdictKind::Reject => format!(
            "fails: {} (waste {:+.1} GPU-h)",
            texts(&|c| c.holds == Some(false)),
            v.waste_gpu_hours_delta + 0.0
        ),
        VerdictKind::Approve => {
            let currency = this.cost.as_ref().map_or("", |c| c.currency.as_str());
            format!(
                "rests on: {}; costs {}",
                texts(&|_| true),
                cost_text(v, currency)
            )
        }
    }
}
