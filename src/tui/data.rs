//! What the console knows: the latest snapshot, what analysis derives from it (computed once per
//! snapshot, not per frame), and the usage history behind the sparklines.

use std::collections::{BTreeMap, HashMap, VecDeque};

use crate::analysis::{self, LoopRule, PreemptionFacts, QueuedJob, SharePreemptions, ShareUsage};
use crate::model::{QueueSnapshot, Snapshot, TrackedJob};

/// Samples kept per share and instance type (one per snapshot).
pub const HISTORY_LEN: usize = 120;

/// Analysis results for one queue.
#[derive(Debug, Clone, Default)]
pub struct QueueView {
    pub usage: Vec<ShareUsage>,
    pub dispatch: Vec<QueuedJob>,
    pub preemptions: Vec<PreemptionFacts>,
    pub share_preemptions: BTreeMap<String, SharePreemptions>,
    /// RUNNABLE jobs per share.
    pub runnable: BTreeMap<String, usize>,
    /// Job id → index in the queue snapshot's `jobs`.
    pub job_index: HashMap<String, usize>,
}

impl QueueView {
    fn derive(q: &QueueSnapshot, rule: &LoopRule) -> Self {
        let dispatch = analysis::dispatch_order(q);
        let mut runnable = BTreeMap::new();
        for j in &dispatch {
            *runnable.entry(j.share.clone()).or_insert(0) += 1;
        }
        Self {
            usage: analysis::share_usage(q),
            preemptions: analysis::preemptions(q, rule),
            share_preemptions: analysis::share_preemptions(q, rule),
            runnable,
            job_index: q
                .jobs
                .iter()
                .enumerate()
                .map(|(i, j)| (j.job.id.clone(), i))
                .collect(),
            dispatch,
        }
    }
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
}

impl Data {
    pub fn new(loop_rule: LoopRule) -> Self {
        Self {
            loop_rule,
            ..Self::default()
        }
    }

    pub fn apply(&mut self, snapshot: Snapshot) {
        self.views = snapshot
            .queues
            .iter()
            .map(|q| QueueView::derive(q, &self.loop_rule))
            .collect();
        for (q, v) in snapshot.queues.iter().zip(&self.views) {
            for u in &v.usage {
                let h = self
                    .history
                    .entry((q.name.clone(), u.share.clone(), u.instance_type.clone()))
                    .or_default();
                if h.len() == HISTORY_LEN {
                    h.pop_front();
                }
                h.push_back(u.used);
            }
        }
        self.snapshot = Some(snapshot);
    }

    pub fn queues(&self) -> &[QueueSnapshot] {
        self.snapshot.as_ref().map_or(&[], |s| s.queues.as_slice())
    }

    /// The queue named `name`, or the first one, with its analysis.
    pub fn queue(&self, name: Option<&str>) -> Option<(&QueueSnapshot, &QueueView)> {
        let queues = self.queues();
        let i = name
            .and_then(|n| queues.iter().position(|q| q.name == n))
            .or(if queues.is_empty() { None } else { Some(0) })?;
        Some((queues.get(i)?, self.views.get(i)?))
    }

    pub fn job<'a>(&'a self, queue: Option<&str>, id: &str) -> Option<&'a TrackedJob> {
        let (q, v) = self.queue(queue)?;
        v.job_index.get(id).and_then(|&i| q.jobs.get(i))
    }

    pub fn history(&self, queue: &str, share: &str, ty: &str) -> Option<&VecDeque<u32>> {
        self.history
            .get(&(queue.to_string(), share.to_string(), ty.to_string()))
    }
}
