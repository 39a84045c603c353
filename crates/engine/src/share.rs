use std::collections::{BTreeSet, HashMap};

use quotatop_model::QuotaShare;

use super::policy::QueueKey;

/// A share's configuration and its live accounting, per interned instance type.
pub(crate) struct ShareRec {
    pub spec: QuotaShare,
    /// The accounting per interned instance type (index = the type's index).
    pub slots: Vec<TypeSlot>,
    /// RUNNABLE jobs that can never run as configured.
    pub misconfigured: BTreeSet<u32>,
    pub deleted: bool,
}

/// A share's accounting of one instance type.
#[derive(Default, Clone)]
pub(crate) struct TypeSlot {
    /// Own limit (0 when the type is not among its limits).
    pub own: u32,
    /// Instances held by its SCHEDULED/STARTING/RUNNING jobs (including those being preempted).
    pub used: u32,
    /// The part of `used` held by jobs whose preemption is in progress.
    pub releasing: u32,
    /// RUNNABLE jobs in dispatch order.
    pub queue: BTreeSet<QueueKey>,
    /// Jobs holding capacity, in dispatch order: (dispatch sequence, job).
    pub running: BTreeSet<(u64, u32)>,
}

impl ShareRec {
    pub fn new(spec: QuotaShare, types: &HashMap<String, usize>, n: usize) -> Self {
        let mut rec = Self {
            spec,
            slots: vec![TypeSlot::default(); n],
            misconfigured: BTreeSet::new(),
            deleted: false,
        };
        rec.refresh_own(types);
        rec
    }

    pub fn add_type(&mut self) {
        self.slots.push(TypeSlot::default());
    }

    pub fn refresh_own(&mut self, types: &HashMap<String, usize>) {
        for slot in &mut self.slots {
            slot.own = 0;
        }
        for l in &self.spec.capacity_limits {
            if let Some(slot) = types
                .get(&l.instance_type)
                .and_then(|&t| self.slots.get_mut(t))
            {
                slot.own = l.max_capacity;
            }
        }
    }

    /// The accounting of interned type `ty`.
    #[expect(
        clippy::indexing_slicing,
        reason = "`ty` is an interned type index: `Engine::intern` adds a slot to every share \
                  when it adds a type, a new share starts with one slot per type, and types are \
                  never removed"
    )]
    pub fn slot(&self, ty: usize) -> &TypeSlot {
        &self.slots[ty]
    }

    /// The accounting of interned type `ty`, to change.
    #[expect(
        clippy::indexing_slicing,
        reason = "`ty` is an interned type index: `Engine::intern` adds a slot to every share \
                  when it adds a type, a new share starts with one slot per type, and types are \
                  never removed"
    )]
    pub fn slot_mut(&mut self, ty: usize) -> &mut TypeSlot {
        &mut self.slots[ty]
    }
}
