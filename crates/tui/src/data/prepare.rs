//! A snapshot's analysis derived on any thread: what it reads ([`DeriveInputs`]), what it makes
//! ([`Prepared`], swapped in by [`Data::apply_prepared`]) and what it replaces ([`Retired`]).

use std::collections::HashMap;

use quotatop_analysis::{LoopRule, RecordedPreemptions};
use quotatop_model::Snapshot;

use super::{QueueView, Recorded, queue_position};
use crate::jobs::{self, JobRows};
use crate::list::RowsKey;

/// What deriving a snapshot's analysis reads from the console's data ([`Data::inputs`]):
/// cheap to clone and to send to another thread.
#[derive(Debug, Clone)]
pub struct DeriveInputs {
    pub(super) loop_rule: LoopRule,
    pub(super) recorded: Recorded,
    /// [`Data::recorded`]'s version: a record replaced meanwhile makes the analysis stale.
    pub(super) recorded_version: u64,
    /// The queue whose Jobs rows the open screens take ready-made ([`Data::queue`]'s name),
    /// and their filters and sorts ([`DeriveInputs::with_rows`]).
    pub(super) rows_queue: Option<String>,
    pub(super) rows_keys: Vec<RowsKey>,
}

impl DeriveInputs {
    /// Also derives the Jobs rows of queue `queue` (as [`Data::queue`] finds it) for each of
    /// `keys`. Every queue's rows for a fresh Jobs screen are derived anyway.
    pub fn with_rows(mut self, queue: Option<String>, keys: Vec<RowsKey>) -> Self {
        self.rows_queue = queue;
        self.rows_keys = keys;
        self
    }
}

/// A snapshot and its analysis replaced by a newer one ([`Data::apply_prepared`]), for the
/// caller to free off the UI thread.
#[derive(Debug)]
pub struct Retired {
    pub(super) snapshot: Option<Snapshot>,
    /// Held only to be freed with it.
    pub(super) _views: Vec<QueueView>,
    pub(super) _rows: Vec<JobRows>,
}

impl Retired {
    /// When the snapshot it holds was taken.
    pub fn taken_at(&self) -> Option<quotatop_model::Millis> {
        self.snapshot.as_ref().map(|s| s.taken_at)
    }
}

/// A snapshot and its analysis, derived on any thread ([`Prepared::new`]) and applied on the
/// UI thread by [`Data::apply_prepared`], which only swaps them in.
#[derive(Debug)]
pub struct Prepared {
    pub(super) snapshot: Snapshot,
    pub(super) views: Vec<QueueView>,
    /// The Jobs rows asked for ([`DeriveInputs::with_rows`]).
    pub(super) rows: Vec<JobRows>,
    pub(super) recorded_version: u64,
    /// Preparations are numbered as they are asked for: an older one that finishes after a
    /// newer one is not applied ([`Prepared::order`]).
    order: u64,
}

impl Prepared {
    /// Derives `snapshot`'s analysis with `inputs`; `order` numbers it among the others.
    pub fn new(snapshot: Snapshot, inputs: &DeriveInputs, order: u64) -> Self {
        let views = derive_views(&snapshot, &inputs.loop_rule, &inputs.recorded);
        let rows = derive_rows(&snapshot, inputs);
        Self {
            snapshot,
            views,
            rows,
            recorded_version: inputs.recorded_version,
            order,
        }
    }

    /// Its number among the preparations asked for.
    pub fn order(&self) -> u64 {
        self.order
    }
}

pub(super) fn derive_views(
    snapshot: &Snapshot,
    rule: &LoopRule,
    recorded: &HashMap<String, Vec<RecordedPreemptions>>,
) -> Vec<QueueView> {
    snapshot
        .queues
        .iter()
        .map(|q| QueueView::derive(q, rule, recorded.get(&q.key())))
        .collect()
}

/// Each queue's Jobs rows for a fresh screen, and the asked queue's for each asked key.
fn derive_rows(snapshot: &Snapshot, inputs: &DeriveInputs) -> Vec<JobRows> {
    let asked = queue_position(&snapshot.queues, inputs.rows_queue.as_deref());
    let mut out = Vec::new();
    for (i, q) in snapshot.queues.iter().enumerate() {
        let mut keys = vec![jobs::first_rows_key()];
        if Some(i) == asked {
            for k in &inputs.rows_keys {
                if !keys.contains(k) {
                    keys.push(k.clone());
                }
            }
        }
        out.extend(keys.into_iter().map(|k| JobRows::of(q.key(), &q.jobs, k)));
    }
    out
}
