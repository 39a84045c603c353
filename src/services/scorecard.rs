//! The console's scorecard service: a queue's scorecard computed from the journal the console
//! writes, with the audit log naming who changed priorities.

use quotatop_store::StoreLocation;
use std::sync::Arc;

use super::history::unavailable;
use quotatop_analysis::scorecard::decision::{self, Rules};
use quotatop_analysis::scorecard::{self, ScorecardOptions};
use quotatop_model::Millis;
use quotatop_store::audit::ChangeLog;
use quotatop_store::journal::{self, Journal, JournalConfig};
use quotatop_tui::effects::{HistoryError, ScorecardFn};
use quotatop_tui::scorecard::{ScorecardResult, ScorecardView, WINDOW_MS};

/// Jobs raised at least this often in the window are exceptions.
pub const RAISED_REPEATEDLY: usize = 2;

/// How the console's scorecard is computed (config `[scorecard]` and `[gpus]`).
#[derive(Debug, Clone)]
pub struct ScorecardSettings {
    /// The window, ending at the queue's last observation (or the time travelled to), and
    /// starting no earlier than the queue's first observation.
    pub window_ms: Millis,
    pub options: ScorecardOptions,
    /// The audit log that names who made each priority change: the file on this machine, or
    /// the store's log for a console following a store (`None`: operators unknown).
    pub audit_log: Option<ChangeLog>,
    /// Deadlines, interruption budgets and prices (config `[deadlines]`, `[budgets]`,
    /// `[prices]`).
    pub rules: Rules,
}

impl Default for ScorecardSettings {
    fn default() -> Self {
        Self {
            window_ms: WINDOW_MS,
            options: ScorecardOptions::default(),
            audit_log: None,
            rules: Rules::default(),
        }
    }
}

/// Reads the journal at `location` (a file or a store) and computes the scorecard of `queue` over the window of
/// `settings` ending at `as_of` (service clock; `None`: the queue's last observation), cut to
/// the history the journal holds ([`journal::history_window`]). Blocking (SQLite): run it off
/// the async threads.
pub fn compute(
    location: &StoreLocation,
    queue: &str,
    settings: &ScorecardSettings,
    as_of: Option<Millis>,
) -> Result<ScorecardView, HistoryError> {
    let j = Journal::open_existing_at(location, JournalConfig::default()).map_err(unavailable)?;
    let q = j
        .queue(queue)
        .map_err(unavailable)?
        .ok_or_else(|| HistoryError::NoQueue(queue.to_string()))?;
    let until = as_of.unwrap_or(q.last_observed_at);
    let history =
        journal::history_window(&j, queue, until, settings.window_ms).map_err(unavailable)?;
    let window = history.window;
    let opts = &settings.options;
    let input = journal::scorecard_input(&j, queue, window, opts).map_err(unavailable)?;
    let observed = j.priority_changes(queue, window).map_err(unavailable)?;
    // An audit log that cannot be read leaves operators unknown; the scorecard still stands.
    let audited = match settings
        .audit_log
        .as_ref()
        .map(|log| log.queue_priority_changes(queue))
    {
        None => Vec::new(),
        Some(Ok(changes)) => changes,
        Some(Err(e)) => {
            tracing::warn!(error = %quotatop_model::error_chain(&e), "scorecard: the audit log cannot be read; operators left unknown");
            Vec::new()
        }
    };
    let changes = scorecard::join_changes(&observed, &audited);
    let mut v = quotatop_tui::scorecard::view(&input, opts);
    v.asked_ms = history.asked_ms;
    v.exceptions = scorecard::audit_view(&changes, window, RAISED_REPEATEDLY);
    v.evaluation = decision::evaluate_observed(&input, opts, &settings.rules);
    v.rules_set = !settings.rules.deadlines.is_empty() || !settings.rules.budgets.is_empty();
    Ok(v)
}

/// The real scorecard service: [`compute`] on the journal at `location` (a path or a store).
pub fn journal_scorecard(
    location: impl Into<StoreLocation>,
    settings: ScorecardSettings,
) -> ScorecardFn {
    let location = location.into();
    Arc::new(move |queue: &str, as_of: Option<Millis>| ScorecardResult {
        queue: queue.to_string(),
        result: compute(&location, queue, &settings, as_of).map(Box::new),
    })
}
