//! Cells shared by the decision table and the figures: wait deltas, money, cost and budget
//! breaches.

use quotatop_analysis::scorecard::decision::{Cost, Evaluation, WindowFigures};
use quotatop_analysis::scorecard::format::duration as dur;
use quotatop_model::Millis;

pub(super) fn wait_delta(ms: Option<Millis>) -> String {
    match ms {
        Some(d) if d < 0 => format!("-{}", dur(Some(-d))),
        Some(d) => format!("+{}", dur(Some(d))),
        None => "-".to_string(),
    }
}

pub(super) fn money(c: Option<&Cost>, f: impl Fn(&Cost) -> f64) -> String {
    c.map_or("-".to_string(), |c| {
        format!("{:.0} {}", f(c), c.currency).trim().to_string()
    })
}

/// Cost over the common window: allocated / per productive GPU-hour / wasted.
pub(super) fn cost_cell(w: &WindowFigures) -> String {
    let per = w
        .cost
        .as_ref()
        .zip(w.cost_per_productive_gpu_hour)
        .map_or("-".to_string(), |(c, p)| {
            format!("{p:.2} {}", c.currency).trim().to_string()
        });
    format!(
        "{} / {per} / {}",
        money(w.cost.as_ref(), |c| c.allocated),
        money(w.cost.as_ref(), |c| c.wasted)
    )
}

pub(super) fn budget_cell(e: &Evaluation) -> String {
    if e.budgets_defined {
        e.budget_breaches().to_string()
    } else {
        "not judged: no budget defined".to_string()
    }
}
