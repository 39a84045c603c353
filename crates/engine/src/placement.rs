//! Placing the job at the head of its share's queue for one instance type: dispatch it, let it
//! wait, or preempt which jobs to make room. Pure: it sees the capacity accounting of the type
//! ([`CapacityLedger`]) and the jobs holding the type ([`TypeView`]), nothing else.
//!
//! The scheduler decides with these functions, and the priority-change preview
//! (`quotatop_analysis::preview`) predicts with the same ones over a snapshot, so the two cannot
//! drift apart. The open choices (victim order, pass order) stay in [`super::policy`].

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};

use quotatop_model::Millis;

use super::policy::{self, PreemptionKind, VictimFacts};

/// The capacity accounting of one instance type across the shares (indexed by share): who
/// holds, lends and borrows how many instances. Not the GPU-time ledger of the scorecard
/// (`quotatop_analysis::scorecard::Ledger`), which accounts for GPU-hours per attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapacityLedger {
    /// Own limit per share (0 when the type is not among its limits).
    pub own: Vec<u32>,
    /// Instances held per share.
    pub used: Vec<u32>,
    pub lends: Vec<bool>,
    pub borrows: Vec<bool>,
    pub borrow_cap: Vec<Option<u32>>,
    /// The service environment's capacity of the type.
    pub env: u32,
}

impl CapacityLedger {
    /// Share `s`'s own limit (0 for a share the ledger does not hold).
    pub fn own_of(&self, s: usize) -> u32 {
        self.own.get(s).copied().unwrap_or(0)
    }

    /// Instances share `s` holds (0 for a share the ledger does not hold).
    pub fn used_of(&self, s: usize) -> u32 {
        self.used.get(s).copied().unwrap_or(0)
    }

    /// Whether share `s` lends (a share the ledger does not hold does not).
    pub fn lends_of(&self, s: usize) -> bool {
        self.lends.get(s).copied().unwrap_or(false)
    }

    /// Whether share `s` borrows (a share the ledger does not hold does not).
    pub fn borrows_of(&self, s: usize) -> bool {
        self.borrows.get(s).copied().unwrap_or(false)
    }

    /// Share `s`'s borrow limit, `None` when unlimited or when it does not borrow.
    pub fn borrow_cap_of(&self, s: usize) -> Option<u32> {
        self.borrow_cap.get(s).copied().flatten()
    }

    fn env_used(&self) -> u64 {
        self.used.iter().map(|&u| u as u64).sum()
    }

    /// Idle capacity of lending shares minus everything borrowed; negative when an owner has
    /// taken back capacity that is still lent out.
    fn pool(&self) -> i64 {
        self.own
            .iter()
            .zip(&self.used)
            .zip(&self.lends)
            .map(|((&own, &used), &lends)| pool_term(own as u64, used as u64, lends))
            .sum()
    }

    /// Can share `s` place `n` more instances now? A share the ledger does not hold places
    /// nothing.
    pub fn fits(&self, s: usize, n: u32) -> bool {
        let (Some(&used), Some(&own)) = (self.used.get(s), self.own.get(s)) else {
            return false;
        };
        let used = used as u64 + n as u64;
        let own = own as u64;
        if used > own {
            if self.borrows.get(s) != Some(&true) {
                return false;
            }
            if let Some(cap) = self.borrow_cap.get(s).copied().flatten()
                && used - own > cap as u64
            {
                return false;
            }
        }
        if self.env_used() + n as u64 > self.env as u64 {
            return false;
        }
        // The pool with `n` more held by `s`: only `s`'s term of the sum changes (no copy of
        // the ledger: this runs for every head job of every pass).
        let before = self.pool();
        let lends = self.lends_of(s);
        let after = before - pool_term(own, used - n as u64, lends) + pool_term(own, used, lends);
        after >= 0 || after >= before
    }

    /// This ledger with `reserved[s]` more instances held by each share `s`.
    pub fn with_reserved(mut self, reserved: &[u32]) -> Self {
        for (used, r) in self.used.iter_mut().zip(reserved) {
            *used += r;
        }
        self
    }
}

/// One share's term of [`CapacityLedger::pool`]: its idle capacity when it lends, less what it
/// holds beyond its own limit.
fn pool_term(own: u64, used: u64, lends: bool) -> i64 {
    let (own, used) = (own as i64, used as i64);
    let idle = if lends && used < own { own - used } else { 0 };
    idle - (used - own).max(0)
}

/// A job holding capacity of the type, as victim selection sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Holder {
    /// Who it is (the caller's handle, returned in [`Victim::id`]).
    pub id: u32,
    /// Submission order: the last tie-break of the victim keys (later submitted, larger).
    pub order: u32,
    pub count: u32,
    pub priority: u32,
    /// Time since its current attempt was scheduled (or started).
    pub elapsed_ms: Millis,
    /// Its preemption is already in progress.
    pub preempting: bool,
}

/// The state victim selection needs beyond the ledger, for one instance type.
pub trait TypeView {
    /// The ledger; `projected` leaves out capacity whose preemption is in progress.
    fn ledger(&self, projected: bool) -> CapacityLedger;
    /// The jobs of share `s` holding the type, in dispatch order.
    fn holders(&self, s: usize) -> Vec<Holder>;
    /// Whether share `s` preempts its own lower-priority jobs.
    fn in_share_preemption(&self, s: usize) -> bool;
    /// [`fits_own`] over `self.ledger(false)`, which a view may answer without building the
    /// ledger (the pass asks it for every head job).
    fn fits_own(&self, s: usize, count: u32) -> bool {
        fits_own(&self.ledger(false), s, count)
    }
}

impl<T: TypeView + ?Sized> TypeView for &T {
    fn ledger(&self, projected: bool) -> CapacityLedger {
        (**self).ledger(projected)
    }
    fn holders(&self, s: usize) -> Vec<Holder> {
        (**self).holders(s)
    }
    fn in_share_preemption(&self, s: usize) -> bool {
        (**self).in_share_preemption(s)
    }
    fn fits_own(&self, s: usize, count: u32) -> bool {
        (**self).fits_own(s, count)
    }
}

/// A job chosen for preemption.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Victim {
    pub id: u32,
    pub share: usize,
    pub count: u32,
    pub kind: PreemptionKind,
    pub facts: VictimFacts,
}

/// What becomes of the head job now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// It is dispatched.
    Dispatch,
    /// Preemptions already in progress will make room: it waits for them.
    AwaitRelease,
    /// These jobs are preempted, in this order, to make room; it waits for them.
    Preempt(Vec<Victim>),
    /// No room can be made now: it waits.
    Blocked,
}

/// Jobs of other shares that borrow the type, in victim order (`policy` rule 6).
pub fn cross_share_candidates<V: TypeView + ?Sized>(view: &V, s: usize) -> Vec<Victim> {
    let ledger = view.ledger(false);
    let mut cands: Vec<Victim> = Vec::new();
    for (t, (&own, &used)) in ledger.own.iter().zip(&ledger.used).enumerate() {
        if t == s || used <= own {
            continue;
        }
        let holders = view.holders(t);
        let counts: Vec<u32> = holders.iter().map(|h| h.count).collect();
        let borrowed = policy::borrowed_portions(own, &counts);
        for (h, &b) in holders.iter().zip(&borrowed) {
            if b > 0 && !h.preempting {
                cands.push(victim(h, t, b, PreemptionKind::CrossShare));
            }
        }
    }
    cands.sort_by_key(|v| policy::cross_share_victim_key(&v.facts));
    cands
}

/// Strictly lower-priority jobs of share `s` holding the type, in victim order, when in-share
/// preemption is enabled (`policy` rule 7).
pub fn in_share_candidates<V: TypeView + ?Sized>(view: &V, s: usize, priority: u32) -> Vec<Victim> {
    if !view.in_share_preemption(s) {
        return Vec::new();
    }
    let mut cands: Vec<Victim> = view
        .holders(s)
        .iter()
        .filter(|h| h.priority < priority && !h.preempting)
        .map(|h| victim(h, s, 0, PreemptionKind::InShare))
        .collect();
    cands.sort_by_key(|v| policy::in_share_victim_key(&v.facts));
    cands
}

fn victim(h: &Holder, share: usize, borrowed: u32, kind: PreemptionKind) -> Victim {
    Victim {
        id: h.id,
        share,
        count: h.count,
        kind,
        facts: VictimFacts {
            priority: h.priority,
            elapsed_ms: h.elapsed_ms,
            borrowed,
            job: h.order,
        },
    }
}

/// The shortest prefix of `victims` whose preemption makes room for `count` instances of share
/// `s` once the preemptions complete, on the `projected` ledger; `None` when even all of them
/// do not. Nothing is preempted unless it makes room.
pub fn make_room(
    projected: &CapacityLedger,
    s: usize,
    count: u32,
    victims: &[Victim],
) -> Option<usize> {
    let mut ledger = projected.clone();
    for (i, v) in victims.iter().enumerate() {
        if let Some(used) = ledger.used.get_mut(v.share) {
            *used -= v.count.min(*used);
        }
        if ledger.fits(s, count) {
            return Some(i + 1);
        }
    }
    None
}

fn preempt_or_block(
    projected: &CapacityLedger,
    s: usize,
    count: u32,
    mut victims: Vec<Victim>,
) -> Placement {
    match make_room(projected, s, count, &victims) {
        Some(n) => {
            victims.truncate(n);
            Placement::Preempt(victims)
        }
        None => Placement::Blocked,
    }
}

/// A head job that fits its share's own limit (`policy` rule 6): dispatched if there is room,
/// else it waits for capacity on its way back, else lent capacity is reclaimed by cross-share
/// preemption, then (where enabled) lower-priority jobs of its share are preempted.
pub fn place_own_fit<V: TypeView + ?Sized>(
    view: &V,
    s: usize,
    count: u32,
    priority: u32,
) -> Placement {
    if view.ledger(false).fits(s, count) {
        return Placement::Dispatch;
    }
    let projected = view.ledger(true);
    if projected.fits(s, count) {
        return Placement::AwaitRelease;
    }
    let mut victims = cross_share_candidates(view, s);
    victims.extend(in_share_candidates(view, s, priority));
    preempt_or_block(&projected, s, count, victims)
}

/// A head job beyond its share's own limit that cannot borrow (or could not borrow): only
/// in-share preemption can make room (`policy` rule 7).
pub fn place_in_share<V: TypeView + ?Sized>(
    view: &V,
    s: usize,
    count: u32,
    priority: u32,
) -> Placement {
    let projected = view.ledger(true);
    if projected.fits(s, count) {
        return Placement::AwaitRelease;
    }
    preempt_or_block(&projected, s, count, in_share_candidates(view, s, priority))
}

/// A head job that must borrow, in the FIFO phase (`policy` rules 3 and 4), with `reserved[t]`
/// instances of share `t` held back for its own jobs blocked earlier in the pass.
pub fn place_borrower<V: TypeView + ?Sized>(
    view: &V,
    reserved: &[u32],
    s: usize,
    count: u32,
    priority: u32,
) -> Placement {
    if view.ledger(false).with_reserved(reserved).fits(s, count) {
        return Placement::Dispatch;
    }
    if view.ledger(true).with_reserved(reserved).fits(s, count) {
        return Placement::AwaitRelease;
    }
    place_in_share(view, s, count, priority)
}

/// Whether `count` more instances keep share `s` within its own limit (the pass's first phase).
pub fn fits_own(ledger: &CapacityLedger, s: usize, count: u32) -> bool {
    match (ledger.used.get(s), ledger.own.get(s)) {
        (Some(&used), Some(&own)) => used as u64 + count as u64 <= own as u64,
        _ => false,
    }
}

/// The job at the head of a share's queue for one instance type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    pub id: u32,
    /// Submission order (ties of `created_at` in the borrowers' FIFO).
    pub order: u32,
    pub count: u32,
    pub priority: u32,
    pub created_at: Millis,
}

/// What a scheduling pass reads and changes: the engine's state, or a preview's copy of a
/// snapshot.
pub trait Pass {
    /// Shares (indices `0..shares()`), in creation order.
    fn shares(&self) -> usize;
    /// Instance types (indices `0..types()`).
    fn types(&self) -> usize;
    /// Whether share `s` takes part (a deleted share does not).
    fn live(&self, s: usize) -> bool;
    fn borrows(&self, s: usize) -> bool;
    /// Share `s`'s first RUNNABLE job of type `ty` in queue order.
    fn head(&self, s: usize, ty: usize) -> Option<Head>;
    /// The state victim selection sees for type `ty`.
    fn view(&self, ty: usize) -> impl TypeView + '_;
    /// RUNNABLE → SCHEDULED: job `id` (the head of its share's queue) takes its capacity.
    fn dispatch(&mut self, id: u32);
    /// Starts preempting a victim.
    fn preempt(&mut self, victim: &Victim);
    /// Told each placement decided, before it is carried out.
    fn decided(&mut self, _id: u32, _placement: &Placement) {}
}

/// A borrowing head job for the FIFO phase: oldest first.
type BorrowEntry = Reverse<(Millis, u32, u32, usize, usize)>;

fn carry_out<P: Pass + ?Sized>(p: &mut P, id: u32, placement: Placement) -> bool {
    p.decided(id, &placement);
    match placement {
        Placement::Dispatch => {
            p.dispatch(id);
            true
        }
        Placement::Preempt(victims) => {
            for v in &victims {
                p.preempt(v);
            }
            false
        }
        Placement::AwaitRelease | Placement::Blocked => false,
    }
}

/// One scheduling pass (`policy` rules 2, 3 and 6–7): first every share's head jobs that fit the
/// share's own limit (shares in creation order; a head that cannot be placed blocks its share's
/// queue of that type and holds its capacity back from borrowers), then the head jobs that must
/// borrow, across shares, oldest first.
///
/// A head that waits for room (or preempted to make it) can lose that room to a later share's
/// own job dispatched in the same pass; it is placed again at once, not only when the
/// preemptions it waits for complete. Each repeat follows a dispatch of a job not dispatched
/// before in this pass, and a pass makes no job RUNNABLE, so this ends: a job that is head of
/// its queue again after its dispatch breaks that, and is an error naming it instead of a loop.
pub fn pass<P: Pass + ?Sized>(p: &mut P) -> Result<(), NoFixpoint> {
    let mut dispatched = HashSet::new();
    while pass_once(p, &mut dispatched)? {}
    Ok(())
}

fn not_again(
    dispatched: &HashSet<u32>,
    job: u32,
    share: usize,
    ty: usize,
) -> Result<(), NoFixpoint> {
    if dispatched.contains(&job) {
        return Err(NoFixpoint { job, share, ty });
    }
    Ok(())
}

/// A scheduling pass that would not end: the job was dispatched, then offered again as the head
/// of its share's queue in the same pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "scheduling pass does not end: job #{job} (share #{share}, instance type #{ty}) is head of its queue again after being dispatched in the same pass"
)]
pub struct NoFixpoint {
    pub job: u32,
    pub share: usize,
    pub ty: usize,
}

/// One pass; `true` when a head of the first phase waits for room that a later dispatch of its
/// instance type in the same phase may have taken.
fn pass_once<P: Pass + ?Sized>(
    p: &mut P,
    dispatched: &mut HashSet<u32>,
) -> Result<bool, NoFixpoint> {
    let mut borrowers: BinaryHeap<BorrowEntry> = BinaryHeap::new();
    // Capacity that owners' jobs blocked in the first phase are waiting for (per share and
    // type): borrowers must not take it, or a reclaim could be undone at once.
    let (ns, nt) = (p.shares(), p.types());
    // reserved[ty][s]: instances of type `ty` held back for share `s`.
    let mut reserved = vec![vec![0u32; ns]; nt];
    let mut waiting = vec![false; nt];
    let mut again = false;
    for s in 0..ns {
        if !p.live(s) {
            continue;
        }
        for (ty, (waiting, reserved)) in waiting.iter_mut().zip(&mut reserved).enumerate() {
            while let Some(h) = p.head(s, ty) {
                not_again(dispatched, h.id, s, ty)?;
                let own_fit = p.view(ty).fits_own(s, h.count);
                if own_fit {
                    let placed = place_own_fit(&p.view(ty), s, h.count, h.priority);
                    let waits_for_room =
                        matches!(placed, Placement::AwaitRelease | Placement::Preempt(_));
                    if carry_out(p, h.id, placed) {
                        dispatched.insert(h.id);
                        again |= *waiting;
                    } else {
                        if let Some(r) = reserved.get_mut(s) {
                            *r += h.count;
                        }
                        *waiting |= waits_for_room;
                        break;
                    }
                } else {
                    if p.borrows(s) {
                        borrowers.push(Reverse((h.created_at, h.order, h.id, s, ty)));
                    } else {
                        let placed = place_in_share(&p.view(ty), s, h.count, h.priority);
                        carry_out(p, h.id, placed);
                    }
                    break;
                }
            }
        }
    }
    while let Some(Reverse((_, _, id, s, ty))) = borrowers.pop() {
        let Some(h) = p.head(s, ty).filter(|h| h.id == id) else {
            continue;
        };
        not_again(dispatched, h.id, s, ty)?;
        let held_back = reserved.get(ty).map_or(&[][..], Vec::as_slice);
        let placed = place_borrower(&p.view(ty), held_back, s, h.count, h.priority);
        if !carry_out(p, h.id, placed) {
            continue;
        }
        dispatched.insert(h.id);
        if let Some(next) = p.head(s, ty) {
            borrowers.push(Reverse((next.created_at, next.order, next.id, s, ty)));
        }
    }
    Ok(again)
}

/// A [`TypeView`] held in memory (what a preview builds from a snapshot).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeState {
    /// The ledger with every held instance, including those being preempted.
    pub ledger: CapacityLedger,
    /// Instances per share whose preemption is in progress.
    pub releasing: Vec<u32>,
    /// Per share: jobs holding the type in dispatch order.
    pub holders: Vec<Vec<Holder>>,
    pub in_share_preemption: Vec<bool>,
}

impl TypeView for TypeState {
    fn ledger(&self, projected: bool) -> CapacityLedger {
        let mut l = self.ledger.clone();
        if projected {
            for (u, r) in l.used.iter_mut().zip(&self.releasing) {
                *u = u.saturating_sub(*r);
            }
        }
        l
    }
    fn holders(&self, s: usize) -> Vec<Holder> {
        self.holders.get(s).cloned().unwrap_or_default()
    }
    fn in_share_preemption(&self, s: usize) -> bool {
        self.in_share_preemption.get(s).copied().unwrap_or(false)
    }
}
