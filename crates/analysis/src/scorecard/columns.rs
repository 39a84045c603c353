//! The scorecard's figures as one column list. The console's Scorecard screen, `report`
//! (Markdown and CSV) and `replay`'s comparison each iterate [`COLUMNS`]: a figure added here is
//! shown by all of them, under the same header, written the same way.

use quotatop_model::{Millis, format_duration_opt};

use super::{Row, Scope, Scorecard};

/// What a figure measures, which says how it is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Jobs, attempts, waits: `12`.
    Count,
    /// GPU-hours: `4.0`.
    GpuHours,
    /// A fraction, shown as a percentage: `49.8%`.
    Fraction,
    /// Milliseconds, shown as a span: `2h05m`.
    Millis,
    /// Percentage points, signed: `+1.5`.
    Points,
}

impl Unit {
    /// For people: `-` when there is no figure.
    pub fn text(self, value: Option<f64>) -> String {
        let Some(v) = value else {
            return "-".to_string();
        };
        match self {
            Unit::Count => format!("{v:.0}"),
            Unit::GpuHours => format!("{v:.1}"),
            Unit::Fraction => super::format::percent(Some(v)),
            Unit::Millis => format_duration_opt(Some(v.round() as Millis)),
            Unit::Points => format!("{v:+.1}"),
        }
    }

    /// For tools (CSV): the number as it is (milliseconds, a fraction of 1), empty when there
    /// is none.
    pub fn value(self, value: Option<f64>) -> String {
        value.map(|v| v.to_string()).unwrap_or_default()
    }
}

/// One figure of a scorecard row.
#[derive(Debug, Clone, Copy)]
pub struct Column {
    /// Its name for tools: the CSV's `metric`.
    pub key: &'static str,
    /// Its name for people: a table's header.
    pub header: &'static str,
    pub unit: Unit,
    /// How readily a narrow table leaves it out: 0 never, the highest first.
    pub drop: u8,
    /// Its figure for `row` of `card` (`None`: none, e.g. no wait ended in the window).
    pub of: fn(&Scorecard, &Row) -> Option<f64>,
}

/// The five metrics (and the P95 wait) have a `drop` up to this; the other figures above it.
pub const FIVE_METRICS_DROP: u8 = 6;

impl Column {
    /// One of the five metrics: what a narrow table keeps before any other figure.
    pub fn is_metric(&self) -> bool {
        self.drop <= FIVE_METRICS_DROP
    }

    /// The figure of `row`, for people.
    pub fn text(&self, card: &Scorecard, row: &Row) -> String {
        self.unit.text((self.of)(card, row))
    }

    /// The figure of `row`, for tools.
    pub fn value(&self, card: &Scorecard, row: &Row) -> String {
        self.unit.value((self.of)(card, row))
    }
}

fn count(n: usize) -> Option<f64> {
    Some(n as f64)
}

fn millis(ms: Option<Millis>) -> Option<f64> {
    ms.map(|m| m as f64)
}

/// A share's fairness drift; for the queue, the drift of the share furthest from its
/// entitlement (either way); a band has none.
fn drift(card: &Scorecard, row: &Row) -> Option<f64> {
    match &row.scope {
        Scope::Share(s) => card
            .fairness
            .iter()
            .find(|f| &f.share == s)
            .map(|f| f.drift_pp),
        Scope::Queue(_) => card
            .fairness
            .iter()
            .map(|f| f.drift_pp)
            .max_by(|a, b| a.abs().total_cmp(&b.abs())),
        Scope::Band(_) => None,
    }
}

const fn col(
    key: &'static str,
    header: &'static str,
    unit: Unit,
    drop: u8,
    of: fn(&Scorecard, &Row) -> Option<f64>,
) -> Column {
    Column {
        key,
        header,
        unit,
        drop,
        of,
    }
}

/// Every figure of a scorecard row, in the order each table lists them. The five metrics
/// (completed-work utilisation, P50/P95 wait, preemption waste, fairness drift, recovery)
/// are the ones a narrow table keeps longest.
pub const COLUMNS: &[Column] = &[
    col("jobs", "jobs", Unit::Count, 9, |_, r| count(r.jobs)),
    col("utilisation", "util", Unit::Fraction, 0, |_, r| {
        r.utilisation.ratio
    }),
    col(
        "productive_gpu_hours",
        "productive GPU-h",
        Unit::GpuHours,
        10,
        |_, r| Some(r.utilisation.productive_gpu_hours),
    ),
    col(
        "allocated_gpu_hours",
        "allocated GPU-h",
        Unit::GpuHours,
        10,
        |_, r| Some(r.utilisation.allocated_gpu_hours),
    ),
    col(
        "held_gpu_hours",
        "held GPU-h",
        Unit::GpuHours,
        10,
        |_, r| Some(r.ledger.held_gpu_hours()),
    ),
    col(
        "held_not_running_gpu_hours",
        "held before run GPU-h",
        Unit::GpuHours,
        11,
        |_, r| Some(r.ledger.held_not_running_gpu_hours),
    ),
    col(
        "failed_attempts",
        "failed attempts",
        Unit::Count,
        11,
        |_, r| count(r.ledger.failed_attempts as usize),
    ),
    col(
        "failed_gpu_hours",
        "failed GPU-h",
        Unit::GpuHours,
        11,
        |_, r| Some(r.ledger.failed_gpu_hours),
    ),
    col(
        "unfinished_gpu_hours",
        "unfinished GPU-h",
        Unit::GpuHours,
        10,
        |_, r| Some(r.ledger.unfinished_gpu_hours),
    ),
    col("waits", "waits", Unit::Count, 10, |_, r| {
        count(r.wait.count)
    }),
    col("wait_mean_ms", "mean wait", Unit::Millis, 9, |_, r| {
        millis(r.wait.mean_ms)
    }),
    col("wait_p50_ms", "wait P50", Unit::Millis, 0, |_, r| {
        millis(r.wait.p50_ms)
    }),
    col("wait_p95_ms", "wait P95", Unit::Millis, 3, |_, r| {
        millis(r.wait.p95_ms)
    }),
    col("wait_max_ms", "max wait", Unit::Millis, 9, |_, r| {
        millis(r.wait.max_ms)
    }),
    col("still_waiting", "still waiting", Unit::Count, 8, |_, r| {
        count(r.wait.still_waiting)
    }),
    col(
        "oldest_waiting_ms",
        "oldest waiting",
        Unit::Millis,
        8,
        |_, r| millis(r.wait.oldest_waiting_ms),
    ),
    col(
        "interrupted_attempts",
        "interrupted",
        Unit::Count,
        8,
        |_, r| count(r.waste.interrupted_attempts),
    ),
    col("lost_gpu_hours", "lost GPU-h", Unit::GpuHours, 7, |_, r| {
        Some(r.waste.lost_gpu_hours)
    }),
    col(
        "overhead_gpu_hours",
        "overhead GPU-h",
        Unit::GpuHours,
        7,
        |_, r| Some(r.waste.overhead_gpu_hours),
    ),
    col(
        "waste_gpu_hours",
        "waste GPU-h",
        Unit::GpuHours,
        4,
        |_, r| Some(r.waste.total_gpu_hours),
    ),
    col("drift_pp", "drift pp", Unit::Points, 5, drift),
    col(
        "interrupted_jobs",
        "interrupted jobs",
        Unit::Count,
        10,
        |_, r| count(r.recovery.interrupted_jobs),
    ),
    col("recovered", "recovered", Unit::Count, 10, |_, r| {
        count(r.recovery.recovered)
    }),
    col("not_recovered", "not recovered", Unit::Count, 10, |_, r| {
        count(r.recovery.not_recovered)
    }),
    col(
        "recovery_pending",
        "recovery pending",
        Unit::Count,
        10,
        |_, r| count(r.recovery.pending),
    ),
    col("recovery", "recovery", Unit::Fraction, 6, |_, r| {
        r.recovery.ratio
    }),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_headers_are_unique() {
        for (i, a) in COLUMNS.iter().enumerate() {
            for b in COLUMNS.iter().skip(i + 1) {
                assert_ne!(a.key, b.key);
                assert_ne!(a.header, b.header);
            }
        }
    }

    #[test]
    fn the_five_metrics_are_kept_longest() {
        let metrics: Vec<&str> = COLUMNS
            .iter()
            .filter(|c| c.is_metric())
            .map(|c| c.key)
            .collect();
        assert_eq!(
            metrics,
            [
                "utilisation",
                "wait_p50_ms",
                "wait_p95_ms",
                "waste_gpu_hours",
                "drift_pp",
                "recovery"
            ]
        );
    }

    #[test]
    fn units_write_people_and_tools_apart() {
        assert_eq!(Unit::Count.text(Some(3.0)), "3");
        assert_eq!(Unit::GpuHours.text(Some(4.04)), "4.0");
        assert_eq!(Unit::Fraction.text(Some(0.498)), "49.8%");
        assert_eq!(Unit::Millis.text(Some(7_500_000.0)), "2h05m");
        assert_eq!(Unit::Points.text(Some(-1.26)), "-1.3");
        assert_eq!(Unit::Points.text(Some(1.5)), "+1.5");
        assert_eq!(Unit::Millis.text(None), "-");
        assert_eq!(Unit::Millis.value(Some(7_500_000.0)), "7500000");
        assert_eq!(Unit::Count.value(Some(3.0)), "3");
        assert_eq!(Unit::Fraction.value(None), "");
    }
}
