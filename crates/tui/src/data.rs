//! What the console knows: the latest snapshot, what analysis derives from it (computed once per
//! snapshot, not per frame), and the usage history behind the sparklines.
//!
//! A snapshot's analysis can be derived on any thread ([`Prepared`]) and then only swapped in
//! ([`Data::apply_prepared`]): the console's loop derives each live snapshot's on a blocking
//! thread (`event_loop`), and `console_scale` measures the two parts.

mod prepare;
mod storage;
mod view;

use prepare::derive_views;
pub use prepare::{DeriveInputs, Prepared, Retired};
pub use storage::StoragePrice;
pub use view::{JobIndex, QueueView, SharedJobs};

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use quotatop_analysis::scorecard::StoredObjects;
use quotatop_analysis::{self as analysis, Attention, LoopRule, RecordedPreemptions};
use quotatop_model::{QueueSnapshot, Snapshot, TrackedJob};

use super::jobs::JobRows;
use super::list::RowsKey;

/// Samples kept per share and instance type (one per snapshot).
pub const HISTORY_LEN: usize = 120;

/// The journal's preemption record per queue: shared with the analysis under way.
pub type Recorded = Arc<HashMap<String, Vec<RecordedPreemptions>>>;

/// The position of the queue of key `name` ([`quotatop_model::queue_key`]; else the first
/// queue of that name), or the first one.
fn queue_position(queues: &[QueueSnapshot], name: Option<&str>) -> Option<usize> {
    name.and_then(|n| {
        (queues.iter().position(|q| q.key() == n))
            .or_else(|| queues.iter().position(|q| q.name == n))
    })
    .or(if queues.is_empty() { None } else { Some(0) })
}

/// A number no other snapshot applied in this process has ([`Data::generation`]).
fn next_generation() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// The data side of the console state.
#[derive(Debug, Default)]
pub struct Data {
    pub snapshot: Option<Snapshot>,
    /// Parallel to `snapshot.queues`.
    pub views: Vec<QueueView>,
    /// (queue, share, instance type) → instances used, oldest first.
    pub history: HashMap<(String, String, String), VecDeque<u32>>,
    /// The poller stopped (its channel closed).
    pub source_closed: bool,
    pub loop_rule: LoopRule,
    /// The journal's preemption record per queue (when it has been read).
    pub recorded: Recorded,
    /// Bumped each time `recorded` changes ([`DeriveInputs`]).
    pub(crate) recorded_version: u64,
    /// The policy's breaches per queue, as attention items (added to each view's own).
    pub policy_items: HashMap<String, Vec<Attention>>,
    /// When the conformance behind each queue's policy items was asked for (see
    /// [`super::policy::PolicyAnswer::asked`]).
    pub(crate) policy_asked: HashMap<String, u64>,
    /// Which snapshot is applied: a new number with each, unique in the process (rows made
    /// off the UI thread are taken only for the snapshot they index into).
    pub(crate) generation: u64,
    /// The Jobs rows derived with this snapshot off the UI thread.
    pub(crate) job_rows: Vec<JobRows>,
    /// The snapshot this one replaced, not yet handed off ([`Data::take_retired`]).
    pub(crate) retired: Option<Retired>,
    /// (queue, job id) → its checkpoint objects as its last listing showed them.
    pub(crate) stored: HashMap<(String, String), StoredObjects>,
    /// What S3 storage costs (`[prices] s3_gb_month`), for a job's checkpoint storage.
    pub storage_price: StoragePrice,
    /// Attempt (its training job's ARN) → when its log said it restored a checkpoint.
    pub(crate) restored_at: HashMap<String, quotatop_model::Millis>,
}

impl Data {
    pub fn new(loop_rule: LoopRule) -> Self {
        Self {
            loop_rule,
            ..Self::default()
        }
    }

    /// What deriving a snapshot's analysis reads ([`Prepared::new`]).
    pub fn inputs(&self) -> DeriveInputs {
        DeriveInputs {
            loop_rule: self.loop_rule.clone(),
            recorded: Arc::clone(&self.recorded),
            recorded_version: self.recorded_version,
            rows_queue: None,
            rows_keys: Vec::new(),
        }
    }

    /// Applies a snapshot, deriving its analysis here (the previous snapshot and its analysis
    /// go first, so the two are never held at once).
    pub fn apply(&mut self, snapshot: Snapshot) {
        let unchanged = self.unchanged(&snapshot);
        self.snapshot = None;
        self.views = Vec::new();
        self.job_rows = Vec::new();
        let views = derive_views(&snapshot, &self.loop_rule, &self.recorded);
        self.install(snapshot, views, &unchanged);
    }

    /// Applies a snapshot whose analysis was derived elsewhere: a swap, unless the journal's
    /// record changed since it was derived (then the analysis is derived again here; its
    /// Jobs rows do not read the record). The one it replaces is kept for the caller to free
    /// ([`Data::take_retired`]).
    pub fn apply_prepared(&mut self, prepared: Prepared) {
        let Prepared {
            snapshot,
            mut views,
            rows,
            recorded_version,
            ..
        } = prepared;
        let unchanged = self.unchanged(&snapshot);
        self.retired = Some(Retired {
            snapshot: self.snapshot.take(),
            _views: std::mem::take(&mut self.views),
            _rows: std::mem::take(&mut self.job_rows),
        });
        if recorded_version != self.recorded_version {
            views = derive_views(&snapshot, &self.loop_rule, &self.recorded);
        }
        self.job_rows = rows;
        self.install(snapshot, views, &unchanged);
    }

    /// The snapshot the last [`Data::apply_prepared`] replaced, with its analysis.
    pub fn take_retired(&mut self) -> Option<Retired> {
        self.retired.take()
    }

    /// The Jobs rows of queue `queue` for `key` derived with this snapshot, if they were.
    pub(crate) fn job_rows(&self, queue: &str, key: &RowsKey) -> Option<&JobRows> {
        self.job_rows
            .iter()
            .find(|r| r.queue == queue && &r.key == key)
    }

    /// Some Jobs rows of queue `queue` derived with this snapshot (a fresh screen's, if any).
    pub(crate) fn any_job_rows(&self, queue: &str) -> Option<&JobRows> {
        self.job_rows.iter().find(|r| r.queue == queue)
    }

    /// Per queue of `snapshot`: whether it is a source's queue that did not refresh since the
    /// snapshot applied last.
    fn unchanged(&self, snapshot: &Snapshot) -> Vec<bool> {
        // A merged snapshot (`[[sources]]`) comes after any source's refresh: a queue whose
        // source did not refresh since adds no sample, so each sparkline is its own source's
        // pace.
        let previous = self.snapshot.as_ref();
        snapshot
            .queues
            .iter()
            .map(|q| {
                q.source.is_some()
                    && previous.is_some_and(|p| {
                        p.queues
                            .iter()
                            .any(|o| o.key() == q.key() && o.refreshed_at == q.refreshed_at)
                    })
            })
            .collect()
    }

    /// Makes `snapshot` and its analysis the current ones and samples the sparklines.
    fn install(&mut self, snapshot: Snapshot, views: Vec<QueueView>, unchanged: &[bool]) {
        self.views = views;
        self.generation = next_generation();
        self.add_policy_items(&snapshot);
        self.keep_listings(&snapshot);
        for ((q, v), &unchanged) in snapshot.queues.iter().zip(&self.views).zip(unchanged) {
            if unchanged {
                continue;
            }
            for u in &v.usage {
                let h = self
                    .history
                    .entry((q.key(), u.share.clone(), u.instance_type.clone()))
                    .or_default();
                if h.len() == HISTORY_LEN {
                    h.pop_front();
                }
                h.push_back(u.used);
            }
        }
        self.snapshot = Some(snapshot);
    }

    /// A recorded snapshot for time travel: its analysis, the journal's preemption record as
    /// far as it goes then, and sparklines from the usage samples before it (never the live
    /// session's).
    pub fn past(
        snapshot: Snapshot,
        loop_rule: LoopRule,
        recorded: Recorded,
        usage: impl IntoIterator<Item = ((String, String, String), Vec<u32>)>,
    ) -> Self {
        let mut d = Self {
            loop_rule,
            recorded,
            ..Self::default()
        };
        d.apply(snapshot);
        d.history = usage
            .into_iter()
            .map(|(k, mut v)| {
                if v.len() > HISTORY_LEN {
                    v.drain(..v.len() - HISTORY_LEN);
                }
                (k, v.into())
            })
            .collect();
        d
    }

    /// Replaces the policy's attention items of `queue` (from its conformance asked for as
    /// number `asked`, see [`super::policy`]) and shows them in its view. An answer asked for
    /// before the one shown is older and changes nothing; `false` then.
    pub fn set_policy_items(&mut self, queue: &str, asked: u64, items: Vec<Attention>) -> bool {
        if self.policy_asked.get(queue).is_some_and(|&a| a > asked) {
            return false;
        }
        self.policy_asked.insert(queue.to_string(), asked);
        if items.is_empty() {
            self.policy_items.remove(queue);
        } else {
            self.policy_items.insert(queue.to_string(), items);
        }
        if let Some(s) = self.snapshot.take() {
            self.add_policy_items(&s);
            self.snapshot = Some(s);
        }
        true
    }

    /// Each view's attention with its queue's policy items in place of any older ones, in the
    /// order of urgency.
    fn add_policy_items(&mut self, snapshot: &Snapshot) {
        for (q, v) in snapshot.queues.iter().zip(self.views.iter_mut()) {
            v.attention
                .retain(|a| a.kind != analysis::AttentionKind::PolicyBreach);
            if let Some(items) = self.policy_items.get(&q.key()) {
                v.attention.extend(items.iter().cloned());
                // Stable: each kind keeps its own order.
                v.attention.sort_by_key(|a| a.kind);
            }
        }
    }

    /// Replaces the journal's preemption record of `queue` and re-derives its view.
    pub fn set_recorded(&mut self, queue: &str, recorded: Vec<RecordedPreemptions>) {
        Arc::make_mut(&mut self.recorded).insert(queue.to_string(), recorded);
        self.recorded_version += 1;
        if let Some(s) = &self.snapshot {
            for (q, v) in s.queues.iter().zip(self.views.iter_mut()) {
                if q.key() == queue {
                    *v = QueueView::derive(q, &self.loop_rule, self.recorded.get(queue));
                }
            }
        }
        // The view derived again has the analysis' own items only: the policy's go back in.
        if let Some(s) = self.snapshot.take() {
            self.add_policy_items(&s);
            self.snapshot = Some(s);
        }
    }

    pub fn queues(&self) -> &[QueueSnapshot] {
        self.snapshot.as_ref().map_or(&[], |s| s.queues.as_slice())
    }

    /// The queue of key `name` ([`quotatop_model::queue_key`]; else the first queue of that
    /// name), or the first one, with its analysis.
    pub fn queue(&self, name: Option<&str>) -> Option<(&QueueSnapshot, &QueueView)> {
        let queues = self.queues();
        let i = queue_position(queues, name)?;
        Some((queues.get(i)?, self.views.get(i)?))
    }

    pub fn job<'a>(&'a self, queue: Option<&str>, id: &str) -> Option<&'a TrackedJob> {
        let (q, v) = self.queue(queue)?;
        v.job_index.get(&q.jobs, id).and_then(|i| q.jobs.get(i))
    }

    pub fn history(&self, queue: &str, share: &str, ty: &str) -> Option<&VecDeque<u32>> {
        self.history
            .get(&(queue.to_string(), share.to_string(), ty.to_string()))
    }
}

#[cfg(test)]
mod tests;
