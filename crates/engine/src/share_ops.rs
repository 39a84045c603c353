//! Creating, updating and deleting quota shares, and what they use.

use quotatop_model::QuotaShare;

use super::share::ShareRec;
use super::types::{validate_limits, validate_share_name, validate_sharing};
use super::{Engine, EngineError, EventReason, ShareUpdate, ShareUsage, TypeUsage};

impl Engine {
    pub fn create_share(&mut self, share: QuotaShare) -> Result<(), EngineError> {
        validate_share_name(&share.name)?;
        validate_limits(&share.capacity_limits)?;
        validate_sharing(&share.sharing)?;
        if self.share_index.contains_key(&share.name) {
            return Err(EngineError::DuplicateShare(share.name));
        }
        if self.share_index.len() >= quotatop_model::MAX_SHARES_PER_QUEUE {
            return Err(EngineError::TooManyShares {
                max: quotatop_model::MAX_SHARES_PER_QUEUE,
            });
        }
        for l in &share.capacity_limits {
            self.intern(&l.instance_type);
        }
        let idx = self.shares.len();
        let rec = ShareRec::new(share, &self.type_index, self.types.len());
        self.share_index.insert(rec.spec.name.clone(), idx);
        self.shares.push(rec);
        self.reevaluate_misconfigurations();
        self.dirty = true;
        self.settle()?;
        Ok(())
    }

    /// Partial update; lowering a limit (or taking away borrowing) may preempt the share's jobs.
    pub fn update_share(&mut self, name: &str, update: ShareUpdate) -> Result<(), EngineError> {
        let s = self.share_idx(name)?;
        if let Some(limits) = &update.capacity_limits {
            validate_limits(limits)?;
        }
        let old = self.share_rec(s).spec.sharing;
        let mut sharing = old;
        if let Some(new) = update.sharing {
            // A partial update keeps what it does not name: a borrowing strategy given without a
            // borrow limit keeps the share's current limit (unlimited if it did not borrow).
            sharing = new;
            if sharing.strategy.borrows() && sharing.borrow_limit.is_none() {
                sharing.borrow_limit = Some(
                    old.borrow_limit
                        .filter(|_| old.strategy.borrows())
                        .unwrap_or(quotatop_model::UNLIMITED_BORROW),
                );
            }
        }
        validate_sharing(&sharing)?;
        if let Some(limits) = update.capacity_limits {
            for l in &limits {
                self.intern(&l.instance_type);
            }
            self.share_rec_mut(s).spec.capacity_limits = limits;
            self.refresh_own(s);
        }
        let share = self.share_rec_mut(s);
        share.spec.sharing = sharing;
        if let Some(p) = update.in_share_preemption {
            share.spec.in_share_preemption = p;
        }
        if let Some(st) = update.state {
            share.spec.state = st;
        }
        self.enforce_limits(s);
        self.reevaluate_misconfigurations();
        self.dirty = true;
        self.settle()?;
        Ok(())
    }

    /// Deletes a DISABLED share; its unfinished jobs are terminated (FAILED, `isTerminated`), as
    /// TerminateServiceJob would.
    pub fn delete_share(&mut self, name: &str) -> Result<(), EngineError> {
        let s = self.share_idx(name)?;
        if self.share_rec(s).spec.state != quotatop_model::ShareState::Disabled {
            return Err(EngineError::ShareNotDisabled(name.to_string()));
        }
        let ids: Vec<u32> = (0..self.jobs.len() as u32)
            .filter(|&j| {
                let r = self.rec(j);
                r.share == s && !r.status.is_terminal()
            })
            .collect();
        for j in ids {
            self.rec_mut(j).terminated = true;
            self.finish_failed(
                j,
                "Quota share deleted".to_string(),
                EventReason::ShareDeleted,
            );
        }
        self.share_rec_mut(s).deleted = true;
        self.share_index.remove(name);
        self.reevaluate_misconfigurations();
        self.dirty = true;
        self.settle()?;
        Ok(())
    }

    /// Share `s`'s own limits per type, from its capacity limits.
    fn refresh_own(&mut self, s: usize) {
        // `shares` and `type_index` are two fields: borrowed apart, not through `share_rec_mut`.
        let Self {
            shares, type_index, ..
        } = self;
        if let Some(share) = shares.get_mut(s) {
            share.refresh_own(type_index);
        }
    }

    pub(super) fn share_idx(&self, name: &str) -> Result<usize, EngineError> {
        self.share_index
            .get(name)
            .copied()
            .ok_or_else(|| EngineError::UnknownShare(name.to_string()))
    }

    /// Live shares in creation order.
    pub fn shares(&self) -> Vec<QuotaShare> {
        self.live_shares().map(|s| s.spec.clone()).collect()
    }

    pub fn share(&self, name: &str) -> Option<&QuotaShare> {
        self.share_index.get(name).map(|&i| &self.share_rec(i).spec)
    }

    pub(super) fn live_shares(&self) -> impl Iterator<Item = &ShareRec> {
        self.shares.iter().filter(|s| !s.deleted)
    }

    /// Usage of every live share for every instance type it has a limit for or uses.
    pub fn usage(&self) -> Vec<ShareUsage> {
        self.live_shares()
            .map(|s| ShareUsage {
                share: s.spec.clone(),
                usage: self
                    .types
                    .iter()
                    .zip(&s.slots)
                    .filter(|(_, slot)| slot.own > 0 || slot.used > 0)
                    .map(|(ty, slot)| TypeUsage {
                        instance_type: ty.clone(),
                        limit: slot.own,
                        used: slot.used,
                        borrowed: slot.used.saturating_sub(slot.own),
                    })
                    .collect(),
            })
            .collect()
    }

    /// Instances of each type held across the queue.
    pub fn total_usage(&self) -> Vec<(String, u32)> {
        self.types
            .iter()
            .enumerate()
            .map(|(u, ty)| {
                let used = self.live_shares().map(|s| s.slot(u).used).sum();
                (ty.clone(), used)
            })
            .filter(|(_, used)| *used > 0)
            .collect()
    }
}
