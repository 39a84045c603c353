//! The console's history reader: time travel's recorded snapshots and the Preemptions screen's
//! record, from the journal the console writes.

use quotatop_store::StoreLocation;
use std::collections::BTreeMap;

use quotatop_analysis::now_of;
use quotatop_model::Millis;
use quotatop_store::journal::{Journal, JournalConfig, JournalError};
use quotatop_tui::effects::{
    HistoryError, HistoryReader, PastFrame, PreemptionHistory, TravelResult, TravelTo,
};

/// A journal that could not be read, as the console reports it.
pub fn unavailable(e: JournalError) -> HistoryError {
    HistoryError::Unavailable(quotatop_model::error_chain(&e))
}

/// The real reader: the journal the console writes (opened read-side per call, so a journal
/// that goes bad later is reported per request, never fatal).
pub struct JournalReader {
    pub location: StoreLocation,
    /// Samples per sparkline series of a past view.
    pub spark_len: usize,
}

impl JournalReader {
    fn open(&self) -> Result<Journal, HistoryError> {
        Journal::open_existing_at(&self.location, JournalConfig::default()).map_err(unavailable)
    }

    fn frame(&self, to: TravelTo) -> Result<Option<Box<PastFrame>>, HistoryError> {
        let j = self.open()?;
        let e = unavailable;
        let at = match to {
            TravelTo::Older(t) => j.snapshot_neighbour(t, true).map_err(e)?,
            TravelTo::Newer(t) => j.snapshot_neighbour(t, false).map_err(e)?,
            TravelTo::At(t) => match j.snapshot_neighbour(t.saturating_add(1), true).map_err(e)? {
                Some(at) => Some(at),
                None => j.snapshot_neighbour(t, false).map_err(e)?,
            },
            TravelTo::AtData(t) => at_data_time(&j, t)?,
        };
        let Some(at) = at else {
            return Ok(None);
        };
        // Retention may delete it between the two reads: then there is nothing to show.
        let Some(snapshot) = j.snapshot_at(at).map_err(e)? else {
            return Ok(None);
        };
        let (position, total) = j.snapshot_position(snapshot.taken_at).map_err(e)?;
        let mut usage = BTreeMap::new();
        for q in &snapshot.queues {
            let Some(until) = now_of(q) else {
                continue;
            };
            for ((share, ty), used) in j.usage_until(&q.key(), until, self.spark_len).map_err(e)? {
                usage.insert((q.key(), share, ty), used);
            }
        }
        Ok(Some(Box::new(PastFrame {
            snapshot,
            position,
            total,
            usage,
        })))
    }
}

/// The stored snapshot (its local `taken_at`) whose data is the newest as of service time `t`,
/// else the oldest: a binary search, as both clocks only move forward. Decodes about log2(n)
/// snapshots.
fn at_data_time(j: &Journal, t: Millis) -> Result<Option<Millis>, HistoryError> {
    let times = j
        .snapshot_times(Millis::MIN, Millis::MAX)
        .map_err(unavailable)?;
    let data_time = |taken: Millis| -> Result<Millis, HistoryError> {
        let s = j.snapshot_at(taken).map_err(unavailable)?;
        Ok(s.as_ref()
            .and_then(|s| s.queues.iter().filter_map(now_of).max())
            .unwrap_or(taken))
    };
    // First index whose data is after `t`.
    let (mut lo, mut hi) = (0, times.len());
    while lo < hi {
        let mid = (lo + hi) / 2;
        if data_time(times[mid])? <= t {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    Ok(match lo {
        0 => times.first().copied(),
        n => times.get(n - 1).copied(),
    })
}

impl HistoryReader for JournalReader {
    fn travel(&self, to: TravelTo) -> TravelResult {
        TravelResult {
            to,
            result: self.frame(to),
        }
    }

    fn preemptions(&self, queue: &str) -> PreemptionHistory {
        PreemptionHistory {
            queue: queue.to_string(),
            // Everything the journal kept (its retention bounds it).
            result: self
                .open()
                .and_then(|j| j.preempted_jobs(queue, 0).map_err(unavailable)),
        }
    }
}
