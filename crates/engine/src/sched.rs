//! The scheduling pass: placing RUNNABLE jobs, borrowing, and preemption.

use quotatop_model::{Attempt, JobStatus};

use super::placement::{self, CapacityLedger, Head, Holder, Pass, TypeView, Victim};
use super::policy::{self, PreemptionKind, VictimFacts};
use super::{Engine, EngineError, EventReason, Rng};

/// The engine's state of one instance type, as victim selection sees it.
pub(crate) struct EngineView<'a> {
    engine: &'a Engine,
    ty: usize,
}

impl TypeView for EngineView<'_> {
    fn ledger(&self, projected: bool) -> CapacityLedger {
        self.engine.ledger(self.ty, projected)
    }
    fn holders(&self, s: usize) -> Vec<Holder> {
        let e = self.engine;
        e.share_rec(s)
            .slot(self.ty)
            .running
            .iter()
            .map(|&(_, j)| {
                let r = e.rec(j);
                Holder {
                    id: j,
                    order: j,
                    count: r.count,
                    priority: r.priority,
                    elapsed_ms: (e.now - r.attempt_start()).max(0),
                    preempting: r.preempting.is_some(),
                }
            })
            .collect()
    }
    fn in_share_preemption(&self, s: usize) -> bool {
        self.engine.share_rec(s).spec.in_share_preemption.enabled()
    }
    /// As the ledger's `own` and `used` of `s` say it (a deleted share owns nothing).
    fn fits_own(&self, s: usize, count: u32) -> bool {
        let share = self.engine.share_rec(s);
        let slot = share.slot(self.ty);
        let own = if share.deleted { 0 } else { slot.own };
        slot.used as u64 + count as u64 <= own as u64
    }
}

impl Pass for Engine {
    fn shares(&self) -> usize {
        self.shares.len()
    }
    fn types(&self) -> usize {
        self.types.len()
    }
    fn live(&self, s: usize) -> bool {
        !self.share_rec(s).deleted
    }
    fn borrows(&self, s: usize) -> bool {
        self.share_rec(s).spec.sharing.strategy.borrows()
    }
    fn head(&self, s: usize, ty: usize) -> Option<Head> {
        let &(_, _, j) = self.share_rec(s).slot(ty).queue.first()?;
        let r = self.rec(j);
        Some(Head {
            id: j,
            order: j,
            count: r.count,
            priority: r.priority,
            created_at: r.created_at,
        })
    }
    fn view(&self, ty: usize) -> impl TypeView + '_ {
        EngineView { engine: self, ty }
    }
    fn dispatch(&mut self, id: u32) {
        Engine::dispatch(self, id);
    }
    fn preempt(&mut self, v: &Victim) {
        Engine::preempt(self, v.id, v.kind);
    }
}

impl Engine {
    /// The ledger of type `ty`; `projected` leaves out capacity whose preemption is in progress.
    pub(super) fn ledger(&self, ty: usize, projected: bool) -> CapacityLedger {
        let n = self.shares.len();
        let mut l = CapacityLedger {
            own: Vec::with_capacity(n),
            used: Vec::with_capacity(n),
            lends: Vec::with_capacity(n),
            borrows: Vec::with_capacity(n),
            borrow_cap: Vec::with_capacity(n),
            env: self.env_of(ty),
        };
        for s in &self.shares {
            let live = !s.deleted;
            let slot = s.slot(ty);
            l.own.push(if live { slot.own } else { 0 });
            let used = slot.used - if projected { slot.releasing } else { 0 };
            l.used.push(used);
            l.lends.push(live && s.spec.sharing.strategy.lends());
            l.borrows.push(live && s.spec.sharing.strategy.borrows());
            l.borrow_cap.push(s.spec.sharing.borrow_cap(slot.own));
        }
        l
    }

    /// One scheduling pass over every share (see `policy` for the order).
    pub(super) fn schedule_pass(&mut self) -> Result<(), EngineError> {
        placement::pass(self).map_err(|e| EngineError::NoFixpoint {
            at: self.now,
            job: self.job_label(e.job),
            source: e,
        })
    }

    fn victim_facts(&self, j: u32, borrowed: u32) -> VictimFacts {
        let r = self.rec(j);
        VictimFacts {
            priority: r.priority,
            elapsed_ms: (self.now - r.attempt_start()).max(0),
            borrowed,
            job: j,
        }
    }

    /// After a share's limits or strategy changed: preempt what it may no longer hold.
    pub(super) fn enforce_limits(&mut self, s: usize) {
        for ty in 0..self.types.len() {
            let share = self.share_rec(s);
            let slot = share.slot(ty);
            let own = slot.own as u64;
            let allowed = own
                + share
                    .spec
                    .sharing
                    .borrow_cap(slot.own)
                    .map_or(u64::MAX / 2, |c| c as u64);
            let mut held = (slot.used - slot.releasing) as u64;
            if held <= allowed {
                continue;
            }
            let mut cands: Vec<VictimFacts> = slot
                .running
                .iter()
                .map(|&(_, v)| v)
                .filter(|&v| self.rec(v).preempting.is_none())
                .map(|v| self.victim_facts(v, 0))
                .collect();
            cands.sort_by_key(policy::in_share_victim_key);
            for v in cands {
                if held <= allowed {
                    break;
                }
                held -= self.rec(v.job).count as u64;
                self.preempt(v.job, PreemptionKind::LimitReduced);
            }
        }
    }

    /// RUNNABLE → SCHEDULED: the job takes its capacity and starts a new attempt.
    fn dispatch(&mut self, j: u32) {
        self.dequeue(j);
        self.dispatch_seq += 1;
        let seq = self.dispatch_seq;
        let now = self.now;
        let (s, ty, count) = {
            let r = self.rec(j);
            (r.share, r.ty, r.count)
        };
        let slot = self.share_rec_mut(s).slot_mut(ty);
        let before_borrowed = slot.used.saturating_sub(slot.own);
        slot.used += count;
        slot.running.insert((seq, j));
        let borrowed = slot.used.saturating_sub(slot.own) - before_borrowed;
        // Two draws in every mode, so the delays do not depend on the API view or the id stream.
        let (a, b) = (self.rng.next_u64(), self.rng.next_u64());
        let suffix = match self.ids.as_mut() {
            Some(ids) => ids.hex32(),
            None => Rng::hex32_of(a, b),
        };
        let resource = self.rec(j).api.as_deref().map(|api| {
            format!(
                "{}AWSBatch{}{}",
                self.config.training_job_arn_prefix,
                sanitize_name(&api.name),
                suffix
            )
        });
        let r = self.rec_mut(j);
        r.dispatch_seq = seq;
        r.scheduled_at = Some(now);
        r.started_at = None;
        r.reason = None;
        // Most jobs run once: grow by one attempt at a time rather than by the doubling default
        // (four at first), which a replay of 100k jobs pays for in tens of MB.
        if let (Some(api), Some(resource_id)) = (r.api.as_mut(), resource) {
            api.attempts.reserve_exact(1);
            api.attempts.push(Attempt {
                resource_id,
                started_at: None,
                stopped_at: None,
                status_reason: None,
            });
            api.work.reserve_exact(1);
            api.work.push(super::AttemptWork::default());
        }
        self.set_status(
            j,
            JobStatus::Scheduled,
            EventReason::Dispatched { borrowed },
        );
        let d = self.delay(self.config.delays.scheduled_ms);
        self.schedule(j, d);
    }

    /// Starts preempting a job: it keeps its capacity and status until the preemption delay
    /// has passed.
    fn preempt(&mut self, j: u32, kind: PreemptionKind) {
        if self.rec(j).preempting.is_some() {
            return;
        }
        *self.instant_preemptions.entry(j).or_default() += 1;
        self.stop_work(j, true);
        let now = self.now;
        let r = self.rec_mut(j);
        if let Some(w) = r.api.as_mut().and_then(|a| a.work.last_mut()) {
            w.preempted = true;
            w.stopped_at.get_or_insert(now);
        }
        r.preempting = Some(kind);
        r.generation += 1;
        r.reason = Some(std::borrow::Cow::Owned(kind.in_progress_reason()));
        let (s, ty, count, status) = (r.share, r.ty, r.count, r.status);
        self.share_rec_mut(s).slot_mut(ty).releasing += count;
        self.emit(
            j,
            Some(status),
            status,
            EventReason::PreemptionStarted(kind),
        );
        let d = self.delay(self.config.delays.preemption_ms);
        self.schedule(j, d);
    }
}

/// Training job names allow letters, digits and '-'.
fn sanitize_name(name: &str) -> String {
    name.chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .take(24)
        .collect()
}
