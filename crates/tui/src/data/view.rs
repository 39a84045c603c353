//! A queue's analysis as the console keeps it ([`QueueView`], derived once per snapshot) and the
//! job index it finds jobs by.

use std::collections::BTreeMap;
use std::sync::Arc;

use quotatop_analysis::{
    self as analysis, Attention, LoopRule, PreemptionFacts, QueuedJob, RecordedPreemptions,
    ShareBadges, SharePreemptions, ShareUsage,
};
use quotatop_model::{QueueSnapshot, ServiceJob, TrackedJob};

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
    pub(super) fn derive(
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
        let mut usage = analysis::share_usage(q);
        let attention = analysis::attention(q, &usage, &dispatch, &preemptions);
        let badges = analysis::share_badges(&usage, &attention);
        limitless_rows(q, &mut usage);
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

/// A row (no instance type, nothing used or limited) for each share that has none: one with
/// no capacity limits and no job holding capacity is still a share of the queue, listed.
fn limitless_rows(q: &QueueSnapshot, usage: &mut Vec<analysis::ShareUsage>) {
    for (i, share) in q.shares.iter().enumerate() {
        if usage.iter().any(|u| u.share == share.name) {
            continue;
        }
        // In share order: before the rows of the shares after it.
        let at = usage
            .iter()
            .position(|u| {
                q.shares
                    .iter()
                    .position(|s| s.name == u.share)
                    .is_some_and(|p| p > i)
            })
            .unwrap_or(usage.len());
        usage.insert(
            at,
            analysis::ShareUsage {
                share: share.name.clone(),
                instance_type: String::new(),
                strategy: share.sharing.strategy,
                limit: 0,
                used: 0,
                own_used: 0,
                borrowed: 0,
                idle: 0,
                lent: 0,
                borrowed_from: Vec::new(),
                lent_to: Vec::new(),
            },
        );
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
