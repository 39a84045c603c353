//! A drill's report: its plan, every repetition's measurements, and the aggregates (overall,
//! per instance type and length, and the baseline apart). Kept in the journal as JSON.

use serde::{Deserialize, Serialize};

use quotatop_model::Millis;

use super::measure::{Aggregate, RepetitionResult, aggregate};
use super::plan::DrillPlan;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DrillReport {
    pub run_id: String,
    pub queue: String,
    pub lender: String,
    pub borrower: String,
    /// `user@host` (as AWS principal) who ran it.
    pub operator: String,
    /// The API's clock when the drill began and ended.
    pub started_at: Millis,
    pub finished_at: Millis,
    pub plan: DrillPlan,
    pub repetitions: Vec<RepetitionResult>,
    /// Borrowing repetitions, all together.
    pub aggregate: Aggregate,
    /// Per instance type and length.
    pub groups: Vec<GroupRow>,
    /// The baseline repetitions (nothing borrowing), when run.
    pub baseline: Option<Aggregate>,
    /// Why the drill stopped early (signal, timeout, error); `None` when it ran to the end.
    pub interrupted: Option<String>,
    /// Drill jobs terminated at the end (ids).
    pub terminated: Vec<String>,
    /// Drill jobs that could not be terminated, with the reason.
    pub termination_errors: Vec<String>,
}

/// The aggregate of one instance type and length.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupRow {
    pub instance_type: String,
    pub length_ms: Millis,
    pub aggregate: Aggregate,
}

impl DrillReport {
    /// Fills the aggregates from the repetitions.
    pub fn summarise(&mut self) {
        self.aggregate = aggregate(self.repetitions.iter().filter(|r| !r.spec.baseline));
        self.groups = groups(&self.repetitions);
        let base: Vec<&RepetitionResult> = self
            .repetitions
            .iter()
            .filter(|r| r.spec.baseline)
            .collect();
        self.baseline = (!base.is_empty()).then(|| aggregate(base));
    }
}

/// Borrowing repetitions grouped by instance type and length, in the order first run.
pub fn groups(results: &[RepetitionResult]) -> Vec<GroupRow> {
    let mut keys: Vec<(String, Millis)> = Vec::new();
    for r in results.iter().filter(|r| !r.spec.baseline) {
        let k = (r.spec.instance_type.clone(), r.spec.length_ms);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.into_iter()
        .map(|(t, l)| GroupRow {
            aggregate: aggregate(results.iter().filter(|r| {
                !r.spec.baseline && r.spec.instance_type == t && r.spec.length_ms == l
            })),
            instance_type: t,
            length_ms: l,
        })
        .collect()
}
