//! What the console knows: the latest snapshot, what analysis derives from it (computed once per
//! snapshot, not per frame), and the usage history behind the sparklines.
//!
//! A snapshot's analysis can be derived on any thread ([`Prepared`]) and then only swapped in
//! ([`Data::apply_prepared`]): the console's loop derives each live snapshot's on a blocking
//! thread (`event_loop`), and `console_scale` measures the two parts.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use quotatop_analysis::scorecard::StoredObjects;
use quotatop_analysis::{
    self as analysis, Attention, LoopRule, PreemptionFacts, QueuedJob, RecordedPreemptions,
    ShareBadges, SharePreemptions, ShareUsage,
};
use quotatop_model::{QueueSnapshot, ServiceJob, Snapshot, TrackedJob};

use super::jobs::{self, JobRows};
use super::list::RowsKey;

/// Samples kept per share and instance type (one per snapshot).
pub const HISTORY_LEN: usize = 120;

/// A queue's jobs in the snapshot's order, shared: work off the UI thread reads them while the
/// snapshot stays on it (8 bytes a job).
pub type SharedJobs = Arc<[Arc<ServiceJob>]>;

/// Analysis results for one queue.
#[derive(Debug, Clone, Default)]
pub struct QueueView {
    pub usage: Vec<ShareUsage>,
    pub dispatch: Vec<QueuedJob>,
    /// The API's preemption facts, widened by the journal's record when there is one.
    pub preemptions: Vec<PreemptionFacts>,
    /// `preemptions` includes the journal's history.
    pub with_history: bool,
    pub share_preemptions: BTreeMap<String, SharePreemptions>,
    /// RUNNABLE jobs per share.
    pub runnable: BTreeMap<String, usize>,
    /// Job id → index in the queue snapshot's `jobs`.
    pub job_index: JobIndex,
    /// What needs attention, most urgent first.
    pub attention: Vec<Attention>,
    /// Per share (only shares with a badge).
    pub badges: BTreeMap<String, ShareBadges>,
    /// The queue's jobs, for work off the UI thread ([`SharedJobs`]).
    pub jobs: SharedJobs,
}

impl QueueView {
    fn derive(
        q: &QueueSnapshot,
        rule: &LoopRule,
        recorded: Option<&Vec<RecordedPreemptions>>,
    ) -> Self {
        let dispatch = analysis::dispatch_order(q);
        let api = analysis::preemptions(q, rule);
        let preemptions = match recorded {
            Some(r) => analysis::with_history(&api, r, rule, analysis::now_of(q)),
            None => api,
        };
        let mut runnable = BTreeMap::new();
        for j in &dispatch {
            *runnable.entry(j.share.clone()).or_insert(0) += 1;
        }
        let usage = analysis::share_usage(q);
        let attention = analysis::attention(q, &usage, &dispatch, &preemptions);
        let badges = analysis::share_badges(&usage, &attention);
        Self {
            usage,
            attention,
            badges,
            preemptions,
            with_history: recorded.is_some(),
            share_preemptions: analysis::share_preemptions(q, rule),
            runnable,
            job_index: JobIndex::of(&q.jobs),
            dispatch,
            jobs: q.jobs.iter().map(|j| Arc::clone(&j.job)).collect(),
        }
    }
}

/// Job id → index in a queue snapshot's `jobs`: the indexes sorted by id, 4 bytes a job (a map
/// from ids held a copy of every id, about 100 bytes a job with its table).
#[derive(Debug, Clone, Default)]
pub struct JobIndex(Vec<u32>);

impl JobIndex {
    pub fn of(jobs: &[TrackedJob]) -> Self {
        let mut v: Vec<u32> = (0..jobs.len())
            .filter_map(|i| u32::try_from(i).ok())
            .collect();
        // Stable: of jobs sharing an id (never, from one poller) the last one is found, as a
        // map filled in order would keep it.
        v.sort_by(|&a, &b| Self::id(jobs, a).cmp(Self::id(jobs, b)));
        Self(v)
    }

    fn id(jobs: &[TrackedJob], i: u32) -> &str {
        jobs.get(i as usize).map_or("", |j| j.job.id.as_str())
    }

    /// The index in `jobs` (the slice this index was built from) of the job `id`.
    pub fn get(&self, jobs: &[TrackedJob], id: &str) -> Option<usize> {
        let end = self.0.partition_point(|&i| Self::id(jobs, i) <= id);
        let i = *self.0.get(end.checked_sub(1)?)?;
        (Self::id(jobs, i) == id).then_some(i as usize)
    }
}

/// The journal's preemption record per queue: shared with the analysis under way.
pub type Recorded = Arc<HashMap<String, Vec<RecordedPreemptions>>>;

/// What deriving a snapshot's analysis reads from the console's data ([`Data::inputs`]):
/// cheap to clone and to send to another thread.
#[derive(Debug, Clone)]
pub struct DeriveInputs {
    loop_rule: LoopRule,
    recorded: Recorded,
    /// [`Data::recorded`]'s version: a record replaced meanwhile makes the analysis stale.
    recorded_version: u64,
    /// The queue whose Jobs rows the open screens take ready-made ([`Data::queue`]'s name),
    /// and their filters and sorts ([`DeriveInputs::with_rows`]).
    rows_queue: Option<String>,
    rows_keys: Vec<RowsKey>,
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
    snapshot: Option<Snapshot>,
    /// Held only to be freed with it.
    _views: Vec<QueueView>,
    _rows: Vec<JobRows>,
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
    snapshot: Snapshot,
    views: Vec<QueueView>,
    /// The Jobs rows asked for ([`DeriveInputs::with_rows`]).
    rows: Vec<JobRows>,
    recorded_version: u64,
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

fn derive_views(
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

/// The price of checkpoint storage: `[prices] s3_gb_month` and the prices' currency.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StoragePrice {
    pub gb_month: Option<f64>,
    pub currency: Option<String>,
}

impl Data {
    /// The checkpoint storage of a job whose checkpoints were listed while the console ran:
    /// in words, with its cost ([`quotatop_analysis::scorecard::checkpoint_storage`]).
    pub fn checkpoint_storage(&self, queue: &str, job_id: &str) -> Option<String> {
        let stored = self.stored.get(&(queue.to_string(), job_id.to_string()))?;
        let s =
            quotatop_analysis::scorecard::checkpoint_storage(*stored, self.storage_price.gb_month);
        Some(s.text(self.storage_price.currency.as_deref()))
    }

    /// How long the attempt `attempt` (started at `started_at`) took to restore, when its log
    /// said it restored while the console ran ([`quotatop_analysis::scorecard::restore_time`]'s
    /// measured figure).
    pub fn measured_restore(
        &self,
        attempt: &str,
        started_at: quotatop_model::Millis,
    ) -> Option<quotatop_model::Millis> {
        let at = self.restored_at.get(attempt)?;
        Some(quotatop_analysis::scorecard::measured_restore_ms(
            started_at, *at,
        ))
    }

    /// Keeps each job's last checkpoint listing of `snapshot`, and the restores its attempts'
    /// logs said.
    fn keep_listings(&mut self, snapshot: &Snapshot) {
        for q in &snapshot.queues {
            for m in q.training.iter().flat_map(|e| &e.marks) {
                if let (Some(true), Some(at)) = (m.restored, m.restored_at) {
                    self.restored_at.insert(m.attempt.clone(), at);
                }
            }
            for e in &q.training {
                if let Some(l) = &e.listing {
                    self.stored.insert(
                        (q.key(), e.job_id.clone()),
                        StoredObjects::of_listing(l.objects.iter().map(|o| o.size), l.truncated),
                    );
                }
            }
        }
    }
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
mod tests {
    use super::*;
    use quotatop_analysis::fixture;
    use quotatop_model::{Fleet, SharingConfig, Source};

    /// Of the panel's and the Policy screen's conformance, the one asked for later wins, in
    /// whatever order they arrive: an older answer arriving last changes nothing.
    #[test]
    fn an_older_policy_answer_arriving_last_changes_nothing() {
        let item = |text: &str| Attention {
            kind: analysis::AttentionKind::PolicyBreach,
            target: analysis::AttentionTarget::Share("s".into()),
            share: "s".into(),
            text: text.into(),
            waiting_ms: None,
        };
        let mut d = Data::new(LoopRule::default());
        assert!(d.set_policy_items("q", 2, vec![item("3 jobs")]));
        assert!(!d.set_policy_items("q", 1, vec![item("1 job")]));
        assert_eq!(d.policy_items["q"], vec![item("3 jobs")]);
        // A newer answer with no breach clears them.
        assert!(d.set_policy_items("q", 3, Vec::new()));
        assert!(!d.policy_items.contains_key("q"));
    }

    /// The index finds every job at its position, the last of jobs sharing an id, and nothing
    /// for an unknown id.
    #[test]
    fn job_index_finds_each_job_by_id() {
        let ty = "ml.g5.12xlarge";
        let job =
            |name: &str| fixture::job(name, "a", ty, 1, quotatop_model::JobStatus::Runnable, 1, 0);
        let jobs = vec![job("c"), job("a"), job("b"), job("a"), job("d")];
        let index = JobIndex::of(&jobs);
        for (id, at) in [("id-c", 0), ("id-a", 3), ("id-b", 2), ("id-d", 4)] {
            assert_eq!(index.get(&jobs, id), Some(at), "{id}");
        }
        for id in ["", "id-", "id-aa", "id-e", "zz"] {
            assert_eq!(index.get(&jobs, id), None, "{id}");
        }
        assert_eq!(JobIndex::of(&[]).get(&[], "id-a"), None);
    }

    /// With sources, a merged snapshot after one source's refresh adds a sparkline sample to
    /// that source's queues only.
    #[test]
    fn each_sources_sparkline_advances_with_its_own_refreshes() {
        let queue = |at: i64| {
            let mut q =
                analysis::fixture::queue(&[("a", "ml.g5.12xlarge", 2, SharingConfig::lend())]);
            q.refreshed_at = Some(at);
            Snapshot {
                taken_at: at,
                queues: vec![q],
                ..Snapshot::default()
            }
        };
        let mut fleet = Fleet::new(vec![
            ("us".into(), Source::default()),
            ("eu".into(), Source::default()),
        ]);
        let mut data = Data::default();
        data.apply(fleet.update(0, queue(1_000)));
        data.apply(fleet.update(1, queue(1_100)));
        data.apply(fleet.update(0, queue(2_000)));
        let samples = |key: &str| {
            data.history
                .iter()
                .filter(|((q, _, _), _)| q == key)
                .map(|(_, h)| h.len())
                .max()
        };
        assert_eq!(samples("q@us"), Some(2));
        assert_eq!(samples("q@eu"), Some(1));
    }

    /// A snapshot analysed off the UI thread is swapped in as derived; when the journal's
    /// record of its queue arrived meanwhile, it is derived again with it (never shown without
    /// the history the console already has).
    #[test]
    fn a_prepared_snapshot_is_swapped_in_unless_the_record_changed_meanwhile() {
        let snapshot = |at: i64| Snapshot {
            taken_at: at,
            queues: vec![analysis::fixture::queue(&[(
                "a",
                "ml.g5.12xlarge",
                2,
                SharingConfig::lend(),
            )])],
            ..Snapshot::default()
        };
        let mut data = Data::default();
        data.apply(snapshot(1_000));
        let key = data.queues()[0].key();
        let prepared = Prepared::new(snapshot(2_000), &data.inputs(), 1);
        data.apply_prepared(prepared);
        let taken_at = |d: &Data| d.snapshot.as_ref().map(|s| s.taken_at);
        assert_eq!(taken_at(&data), Some(2_000));
        // The replaced snapshot is kept for the caller to free off the UI thread.
        let retired = data.take_retired().expect("the replaced snapshot");
        assert_eq!(retired.taken_at(), Some(1_000));
        assert!(data.take_retired().is_none());
        assert!(!data.views[0].with_history);
        let prepared = Prepared::new(snapshot(3_000), &data.inputs(), 2);
        data.set_recorded(&key, Vec::new());
        data.apply_prepared(prepared);
        assert_eq!(taken_at(&data), Some(3_000));
        assert!(
            data.views[0].with_history,
            "derived again with the record that came meanwhile"
        );
    }
}
