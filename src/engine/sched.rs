//! The scheduling pass: placing RUNNABLE jobs, borrowing, and preemption.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::model::{Attempt, JobStatus, Millis};

use super::policy::{self, PreemptionKind, VictimFacts};
use super::{Engine, EventReason};

/// The accounting of one instance type across the shares, as a scratch copy for what-ifs.
#[derive(Debug, Clone)]
pub(crate) struct Ledger {
    own: Vec<u32>,
    used: Vec<u32>,
    lends: Vec<bool>,
    borrows: Vec<bool>,
    borrow_cap: Vec<Option<u32>>,
    env: u32,
}

impl Ledger {
    fn env_used(&self) -> u64 {
        self.used.iter().map(|&u| u as u64).sum()
    }

    /// Idle capacity of lending shares minus everything borrowed; negative when an owner has
    /// taken back capacity that is still lent out.
    fn pool(&self) -> i64 {
        let mut pool = 0i64;
        for s in 0..self.own.len() {
            let (own, used) = (self.own[s] as i64, self.used[s] as i64);
            if self.lends[s] && used < own {
                pool += own - used;
            }
            if used > own {
                pool -= used - own;
            }
        }
        pool
    }

    /// Can share `s` place `n` more instances now?
    fn fits(&self, s: usize, n: u32) -> bool {
        let used = self.used[s] as u64 + n as u64;
        let own = self.own[s] as u64;
        if used > own {
            if !self.borrows[s] {
                return false;
            }
            if let Some(cap) = self.borrow_cap[s]
                && used - own > cap as u64
            {
                return false;
            }
        }
        if self.env_used() + n as u64 > self.env as u64 {
            return false;
        }
        let before = self.pool();
        let mut after = self.clone();
        after.used[s] += n;
        let after = after.pool();
        after >= 0 || after >= before
    }
}

/// A borrowing candidate for the FIFO phase: oldest first.
type BorrowEntry = Reverse<(Millis, u32, usize, usize)>;

impl Engine {
    /// The ledger of type `ty`; `projected` leaves out capacity whose preemption is in progress.
    fn ledger(&self, ty: usize, projected: bool) -> Ledger {
        let n = self.shares.len();
        let mut l = Ledger {
            own: Vec::with_capacity(n),
            used: Vec::with_capacity(n),
            lends: Vec::with_capacity(n),
            borrows: Vec::with_capacity(n),
            borrow_cap: Vec::with_capacity(n),
            env: self.env[ty],
        };
        for s in &self.shares {
            let live = !s.deleted;
            l.own.push(if live { s.own[ty] } else { 0 });
            let used = s.used[ty] - if projected { s.releasing[ty] } else { 0 };
            l.used.push(used);
            l.lends.push(live && s.spec.sharing.strategy.lends());
            l.borrows.push(live && s.spec.sharing.strategy.borrows());
            l.borrow_cap.push(s.spec.sharing.borrow_cap(s.own[ty]));
        }
        l
    }

    /// One scheduling pass over every share (see `policy` for the order).
    pub(super) fn schedule_pass(&mut self) {
        let mut borrowers: BinaryHeap<BorrowEntry> = BinaryHeap::new();
        // Capacity that owners' jobs blocked in the first phase are waiting for (per share and
        // type): borrowers must not take it, or a reclaim could be undone at once.
        let nt = self.types.len();
        let mut reserved = vec![0u32; self.shares.len() * nt];
        for s in 0..self.shares.len() {
            if self.shares[s].deleted {
                continue;
            }
            for ty in 0..self.types.len() {
                while let Some(&key) = self.shares[s].queues[ty].first() {
                    let j = key.2;
                    let count = self.jobs[j as usize].count;
                    let share = &self.shares[s];
                    if share.used[ty] as u64 + count as u64 <= share.own[ty] as u64 {
                        if !self.place_own_fit(s, ty, j) {
                            reserved[s * nt + ty] += count;
                            break;
                        }
                    } else {
                        if share.spec.sharing.strategy.borrows() {
                            borrowers.push(Reverse((self.jobs[j as usize].created_at, j, s, ty)));
                        } else {
                            self.try_in_share(s, ty, j);
                        }
                        break;
                    }
                }
            }
        }
        while let Some(Reverse((_, j, s, ty))) = borrowers.pop() {
            let count = self.jobs[j as usize].count;
            let with_reserved = |mut l: Ledger| {
                for (t, used) in l.used.iter_mut().enumerate() {
                    *used += reserved[t * nt + ty];
                }
                l
            };
            if with_reserved(self.ledger(ty, false)).fits(s, count) {
                self.dispatch(j);
                if let Some(&next) = self.shares[s].queues[ty].first() {
                    let created = self.jobs[next.2 as usize].created_at;
                    borrowers.push(Reverse((created, next.2, s, ty)));
                }
            } else if !with_reserved(self.ledger(ty, true)).fits(s, count) {
                self.try_in_share(s, ty, j);
            }
        }
    }

    /// A job that fits its share's own limit. Returns whether it was dispatched.
    fn place_own_fit(&mut self, s: usize, ty: usize, j: u32) -> bool {
        let count = self.jobs[j as usize].count;
        if self.ledger(ty, false).fits(s, count) {
            self.dispatch(j);
            return true;
        }
        if self.ledger(ty, true).fits(s, count) {
            // Capacity is already on its way back.
            return false;
        }
        let mut victims: Vec<(u32, PreemptionKind)> = self
            .cross_share_candidates(s, ty)
            .into_iter()
            .map(|v| (v, PreemptionKind::CrossShare))
            .collect();
        victims.extend(
            self.in_share_candidates(s, ty, j)
                .into_iter()
                .map(|v| (v, PreemptionKind::InShare)),
        );
        self.make_room(s, ty, count, &victims);
        false
    }

    fn try_in_share(&mut self, s: usize, ty: usize, j: u32) {
        let count = self.jobs[j as usize].count;
        if self.ledger(ty, true).fits(s, count) {
            return;
        }
        let victims: Vec<(u32, PreemptionKind)> = self
            .in_share_candidates(s, ty, j)
            .into_iter()
            .map(|v| (v, PreemptionKind::InShare))
            .collect();
        self.make_room(s, ty, count, &victims);
    }

    /// Preempts a prefix of `victims` if, and only if, that makes room for `count` instances
    /// of share `s` once the preemptions complete.
    fn make_room(&mut self, s: usize, ty: usize, count: u32, victims: &[(u32, PreemptionKind)]) {
        if victims.is_empty() {
            return;
        }
        let mut ledger = self.ledger(ty, true);
        let mut chosen = 0;
        let mut ok = false;
        for &(v, _) in victims {
            let r = &self.jobs[v as usize];
            ledger.used[r.share] -= r.count;
            chosen += 1;
            if ledger.fits(s, count) {
                ok = true;
                break;
            }
        }
        if ok {
            for &(v, kind) in &victims[..chosen] {
                self.preempt(v, kind);
            }
        }
    }

    fn victim_facts(&self, j: u32, borrowed: u32) -> VictimFacts {
        let r = &self.jobs[j as usize];
        VictimFacts {
            priority: r.priority,
            elapsed_ms: (self.now - r.attempt_start()).max(0),
            borrowed,
            job: j,
        }
    }

    /// Jobs of other shares that borrow type `ty`, in victim order.
    fn cross_share_candidates(&self, s: usize, ty: usize) -> Vec<u32> {
        let mut cands: Vec<VictimFacts> = Vec::new();
        for (t, share) in self.shares.iter().enumerate() {
            if t == s || share.deleted || share.used[ty] <= share.own[ty] {
                continue;
            }
            let jobs: Vec<u32> = share.running[ty].iter().map(|&(_, j)| j).collect();
            let counts: Vec<u32> = jobs.iter().map(|&j| self.jobs[j as usize].count).collect();
            let borrowed = policy::borrowed_portions(share.own[ty], &counts);
            for (&j, &b) in jobs.iter().zip(&borrowed) {
                if b > 0 && self.jobs[j as usize].preempting.is_none() {
                    cands.push(self.victim_facts(j, b));
                }
            }
        }
        cands.sort_by_key(policy::cross_share_victim_key);
        cands.into_iter().map(|v| v.job).collect()
    }

    /// Strictly lower-priority jobs of share `s` holding type `ty`, when in-share preemption is
    /// enabled.
    fn in_share_candidates(&self, s: usize, ty: usize, j: u32) -> Vec<u32> {
        let share = &self.shares[s];
        if !share.spec.in_share_preemption.enabled() {
            return Vec::new();
        }
        let priority = self.jobs[j as usize].priority;
        let mut cands: Vec<VictimFacts> = share.running[ty]
            .iter()
            .map(|&(_, v)| v)
            .filter(|&v| {
                let r = &self.jobs[v as usize];
                r.priority < priority && r.preempting.is_none()
            })
            .map(|v| self.victim_facts(v, 0))
            .collect();
        cands.sort_by_key(policy::in_share_victim_key);
        cands.into_iter().map(|v| v.job).collect()
    }

    /// After a share's limits or strategy changed: preempt what it may no longer hold.
    pub(super) fn enforce_limits(&mut self, s: usize) {
        for ty in 0..self.types.len() {
            let share = &self.shares[s];
            let own = share.own[ty] as u64;
            let allowed = own
                + share
                    .spec
                    .sharing
                    .borrow_cap(share.own[ty])
                    .map_or(u64::MAX / 2, |c| c as u64);
            let mut held = (share.used[ty] - share.releasing[ty]) as u64;
            if held <= allowed {
                continue;
            }
            let mut cands: Vec<VictimFacts> = share.running[ty]
                .iter()
                .map(|&(_, v)| v)
                .filter(|&v| self.jobs[v as usize].preempting.is_none())
                .map(|v| self.victim_facts(v, 0))
                .collect();
            cands.sort_by_key(policy::in_share_victim_key);
            for v in cands {
                if held <= allowed {
                    break;
                }
                held -= self.jobs[v.job as usize].count as u64;
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
            let r = &self.jobs[j as usize];
            (r.share, r.ty, r.count)
        };
        let share = &mut self.shares[s];
        let before_borrowed = share.used[ty].saturating_sub(share.own[ty]);
        share.used[ty] += count;
        share.running[ty].insert((seq, j));
        let borrowed = share.used[ty].saturating_sub(share.own[ty]) - before_borrowed;
        let resource = match self.jobs[j as usize].api.as_deref() {
            Some(api) => Some(format!(
                "{}AWSBatch{}{}",
                self.config.training_job_arn_prefix,
                sanitize_name(&api.name),
                self.rng.hex32()
            )),
            None => {
                // The same draws as a resource id, so a lean engine's delays are a full one's.
                self.rng.next_u64();
                self.rng.next_u64();
                None
            }
        };
        let r = &mut self.jobs[j as usize];
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
        if self.jobs[j as usize].preempting.is_some() {
            return;
        }
        self.stop_work(j, true);
        let r = &mut self.jobs[j as usize];
        r.preempting = Some(kind);
        r.generation += 1;
        r.reason = Some(std::borrow::Cow::Owned(kind.in_progress_reason()));
        let (s, ty, count, status) = (r.share, r.ty, r.count, r.status);
        self.shares[s].releasing[ty] += count;
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
