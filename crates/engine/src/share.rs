use std::collections::{BTreeSet, HashMap};

use quotatop_model::QuotaShare;

use super::policy::QueueKey;

/// A share's configuration and its live accounting, per interned instance type.
pub(crate) struct ShareRec {
    pub spec: QuotaShare,
    /// Own limit per type (0 when the type is not among its limits).
    pub own: Vec<u32>,
    /// Instances held by its SCHEDULED/STARTING/RUNNING jobs (including those being preempted).
    pub used: Vec<u32>,
    /// The part of `used` held by jobs whose preemption is in progress.
    pub releasing: Vec<u32>,
    /// RUNNABLE jobs per type in dispatch order.
    pub queues: Vec<BTreeSet<QueueKey>>,
    /// Jobs holding capacity per type, in dispatch order: (dispatch sequence, job).
    pub running: Vec<BTreeSet<(u64, u32)>>,
    /// RUNNABLE jobs that can never run as configured.
    pub misconfigured: BTreeSet<u32>,
    pub deleted: bool,
}

impl ShareRec {
    pub fn new(spec: QuotaShare, types: &HashMap<String, usize>, n: usize) -> Self {
        let mut rec = Self {
            spec,
            own: vec![0; n],
            used: vec![0; n],
            releasing: vec![0; n],
            queues: vec![BTreeSet::new(); n],
            running: vec![BTreeSet::new(); n],
            misconfigured: BTreeSet::new(),
            deleted: false,
        };
        rec.refresh_own(types, n);
        rec
    }

    pub fn add_type(&mut self) {
        self.own.push(0);
        self.used.push(0);
        self.releasing.push(0);
        self.queues.push(BTreeSet::new());
        self.running.push(BTreeSet::new());
    }

    pub fn refresh_own(&mut self, types: &HashMap<String, usize>, n: usize) {
        self.own = vec![0; n];
        for l in &self.spec.capacity_limits {
            if let Some(&t) = types.get(&l.instance_type) {
                self.own[t] = l.max_capacity;
            }
        }
    }
}
