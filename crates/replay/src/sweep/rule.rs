//! The recommendation's rule: of the settings that keep the class's promise and budget, the
//! cheapest; ties by the least waste, then by the order the settings were given.

use serde::Serialize;

use super::{ClassFigures, Setting};

/// The rule in words, stated in every report.
pub const RULE: &str = "A setting keeps the class's promise when its jobs miss no more deadlines than under the reference (the class as the trace and configuration give it, no override), end no more of its jobs unfinished at the retry limit than there (a job ended at the limit is work the class never gets, however much capacity ending it frees) and, when the class has an interruption budget, breach it no more often than there. Of the settings that keep it, the recommendation is the cheapest: the least GPU-hours held that did not become finished work plus the checkpoint overhead (held - productive + checkpoint overhead); ties go to the least waste (lost + restart overhead + checkpoint overhead), then to the first setting given. The runner-up is the next by the same order, and its margin is how much more it costs.";

/// What the rule chose for one class.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Recommendation {
    /// The index of the chosen setting, and of the runner-up with how many GPU-hours more it
    /// costs.
    Chosen {
        best: usize,
        runner_up: Option<(usize, f64)>,
    },
    /// No setting keeps the promise.
    NoneKeeps,
}

/// Whether `f` keeps the class's promise and budget, against `reference`.
pub fn keeps(reference: &ClassFigures, f: &ClassFigures) -> bool {
    f.missed_deadlines <= reference.missed_deadlines
        && f.failed_at_limit <= reference.failed_at_limit
        && match (f.budget_breaches, reference.budget_breaches) {
            (Some(b), Some(r)) => b <= r,
            _ => true,
        }
}

/// The rule over `points` (in the order given).
pub fn recommend(reference: &ClassFigures, points: &[(Setting, ClassFigures)]) -> Recommendation {
    let mut kept: Vec<usize> = (0..points.len())
        .filter(|&i| keeps(reference, &points[i].1))
        .collect();
    kept.sort_by(|&a, &b| {
        let (fa, fb) = (&points[a].1, &points[b].1);
        fa.cost_gpu_hours()
            .total_cmp(&fb.cost_gpu_hours())
            .then(fa.waste_gpu_hours().total_cmp(&fb.waste_gpu_hours()))
            .then(a.cmp(&b))
    });
    match kept.as_slice() {
        [] => Recommendation::NoneKeeps,
        [best, rest @ ..] => Recommendation::Chosen {
            best: *best,
            runner_up: rest.first().map(|&r| {
                (
                    r,
                    points[r].1.cost_gpu_hours() - points[*best].1.cost_gpu_hours(),
                )
            }),
        },
    }
}
