//! The prediction itself: the snapshot's instance type in the engine's terms, the engine's
//! scheduling pass run over it in every order of tied jobs, and what the passes agree on.

use std::collections::{BTreeMap, HashMap, VecDeque};

use crate as analysis;
use quotatop_engine::PreemptionKind;
use quotatop_engine::{
    CapacityLedger, Head, Holder, NoFixpoint, Pass, Placement, TypeState, TypeView, Victim,
    placement_pass,
};
use quotatop_model::{JobStatus, Millis, QueueSnapshot, TrackedJob};

use super::{Candidate, MAX_ORDERS, Prediction, Preemptions};

fn preempting(t: &TrackedJob) -> bool {
    t.job
        .status_reason
        .as_deref()
        .is_some_and(|s| s.starts_with("PREEMPTION_IN_PROGRESS"))
}

/// The instance type's state in `q`, in the engine's terms, with the tie orders to try.
struct Built {
    state: TypeState,
    /// Per share, its RUNNABLE jobs of the type (queue order is set per tie order).
    queues: Vec<Vec<Head>>,
    /// Jobs created in the same millisecond: (job indices, their order values ascending).
    created_ties: Vec<(Vec<u32>, Vec<u32>)>,
    /// Per share, runs of jobs dispatched in the same millisecond: (share, start, length).
    dispatch_ties: Vec<(usize, usize, usize)>,
}

fn misconfigured(t: &TrackedJob) -> bool {
    t.job.misconfiguration().is_some()
}

/// The ledger of type `ty` with nothing held yet: the shares' limits and strategies, and the
/// environment's capacity (unlimited when the snapshot does not know it).
fn empty_ledger(q: &QueueSnapshot, ty: &str) -> CapacityLedger {
    let env = if q.environment.capacity.is_empty() {
        u32::MAX
    } else {
        q.environment.capacity_for(ty)
    };
    let n = q.shares.len();
    let mut ledger = CapacityLedger {
        own: Vec::with_capacity(n),
        used: vec![0; n],
        lends: Vec::with_capacity(n),
        borrows: Vec::with_capacity(n),
        borrow_cap: Vec::with_capacity(n),
        env,
    };
    for sh in &q.shares {
        let own = sh.limit_for(ty);
        ledger.own.push(own);
        ledger.lends.push(sh.sharing.strategy.lends());
        ledger.borrows.push(sh.sharing.strategy.borrows());
        ledger.borrow_cap.push(sh.sharing.borrow_cap(own));
    }
    ledger
}

/// Sorts each share's holders into dispatch order (by dispatch time, then the queue order a
/// pass dispatches in) and returns the runs dispatched in the same millisecond: (share, start,
/// length).
fn dispatch_ties(q: &QueueSnapshot, holders: &mut [Vec<Holder>]) -> Vec<(usize, usize, usize)> {
    let dispatched = |h: &Holder| {
        q.jobs.get(h.id as usize).map(|t| {
            let j = &t.job;
            quotatop_model::held_from(j.scheduled_at, j.started_at).unwrap_or(j.created_at)
        })
    };
    let mut ties = Vec::new();
    for (s, hs) in holders.iter_mut().enumerate() {
        hs.sort_by_key(|h| (dispatched(h), std::cmp::Reverse(h.priority), h.order));
        let mut start = 0;
        for run in hs.chunk_by(|a, b| dispatched(a) == dispatched(b)) {
            if run.len() > 1 {
                ties.push((s, start, run.len()));
            }
            start += run.len();
        }
    }
    ties
}

/// The jobs of type `ty` that hold capacity or wait, in submission order (by creation time;
/// ties are tried in every order): (job index, share index, job). A job's order value is its
/// place in this list.
fn jobs_of_type<'a>(q: &'a QueueSnapshot, ty: &str) -> Vec<(usize, usize, &'a TrackedJob)> {
    let share_of: HashMap<&str, usize> = q
        .shares
        .iter()
        .enumerate()
        .map(|(i, s)| (s.name.as_str(), i))
        .collect();
    let mut jobs: Vec<(usize, usize, &TrackedJob)> = q
        .jobs
        .iter()
        .enumerate()
        .filter(|(_, t)| {
            t.job.instance_type == ty
                && (t.job.status.holds_capacity()
                    || (t.job.status == JobStatus::Runnable && !misconfigured(t)))
        })
        .filter_map(|(i, t)| share_of.get(t.job.share.as_str()).map(|&s| (i, s, t)))
        .collect();
    jobs.sort_by_key(|&(i, _, t)| (t.job.created_at, i));
    jobs
}

/// Jobs created in the same millisecond: (job indices, their order values ascending).
fn created_ties(jobs: &[(usize, usize, &TrackedJob)]) -> Vec<(Vec<u32>, Vec<u32>)> {
    let mut by_created: BTreeMap<Millis, (Vec<u32>, Vec<u32>)> = BTreeMap::new();
    for (order, &(i, _, t)) in jobs.iter().enumerate() {
        let (ids, vals) = by_created.entry(t.job.created_at).or_default();
        ids.push(i as u32);
        vals.push(order as u32);
    }
    by_created
        .into_values()
        .filter(|(ids, _)| ids.len() > 1)
        .collect()
}

fn build(q: &QueueSnapshot, ty: &str, now: Millis) -> Built {
    let n = q.shares.len();
    let mut ledger = empty_ledger(q, ty);
    let jobs = jobs_of_type(q, ty);
    let created_ties = created_ties(&jobs);
    let mut releasing = vec![0u32; n];
    let mut holders: Vec<Vec<Holder>> = vec![Vec::new(); n];
    let mut queues: Vec<Vec<Head>> = vec![Vec::new(); n];
    let in_share_preemption = q
        .shares
        .iter()
        .map(|sh| sh.in_share_preemption.enabled())
        .collect();
    for (order, &(i, s, t)) in jobs.iter().enumerate() {
        let j = &t.job;
        if j.status == JobStatus::Runnable {
            if let Some(queue) = queues.get_mut(s) {
                queue.push(Head {
                    id: i as u32,
                    order: order as u32,
                    count: j.instance_count,
                    priority: j.priority,
                    created_at: j.created_at,
                });
            }
            continue;
        }
        if let Some(used) = ledger.used.get_mut(s) {
            *used += j.instance_count;
        }
        if preempting(t)
            && let Some(r) = releasing.get_mut(s)
        {
            *r += j.instance_count;
        }
        // The engine's elapsed time (`JobRec::attempt_start`): one definition of the start.
        let start =
            quotatop_model::attempt_start(j.started_at, j.scheduled_at).unwrap_or(j.created_at);
        if let Some(held) = holders.get_mut(s) {
            held.push(Holder {
                id: i as u32,
                order: order as u32,
                count: j.instance_count,
                priority: j.priority,
                elapsed_ms: (now - start).max(0),
                preempting: preempting(t),
            });
        }
    }
    let dispatch_ties = dispatch_ties(q, &mut holders);
    Built {
        state: TypeState {
            ledger,
            releasing,
            holders,
            in_share_preemption,
        },
        queues,
        created_ties,
        dispatch_ties,
    }
}

fn permutations(n: usize) -> Vec<Vec<usize>> {
    if n <= 1 {
        return vec![(0..n).collect()];
    }
    let mut out = Vec::new();
    for p in permutations(n - 1) {
        for k in 0..=p.len() {
            let mut q = p.clone();
            q.insert(k, n - 1);
            out.push(q);
        }
    }
    // The identity (the likeliest order) first.
    out.sort();
    out
}

/// For ties of these sizes: the orders tried per tie (every permutation when `all`, else the
/// likeliest and its reverse), and the combinations to run (one pick per tie).
fn tie_orders(sizes: &[usize], all: bool) -> (Vec<Vec<Vec<usize>>>, Vec<Vec<usize>>) {
    let choices: Vec<Vec<Vec<usize>>> = sizes
        .iter()
        .map(|&n| {
            if all {
                permutations(n)
            } else {
                vec![(0..n).collect(), (0..n).rev().collect()]
            }
        })
        .collect();
    let combos: Vec<Vec<usize>> = if all {
        let mut combos = vec![Vec::new()];
        for c in &choices {
            combos = combos
                .into_iter()
                .flat_map(|prefix| {
                    (0..c.len()).map(move |k| {
                        let mut p = prefix.clone();
                        p.push(k);
                        p
                    })
                })
                .collect();
        }
        combos
    } else {
        vec![vec![0; sizes.len()], vec![1; sizes.len()]]
    };
    (choices, combos)
}

/// Every state the snapshot cannot tell apart: each order of the tied jobs (the likeliest
/// first), or the likeliest and its reverse when there are too many.
fn orders(b: &Built) -> (Vec<SnapshotPass>, bool) {
    let sizes: Vec<usize> = b
        .created_ties
        .iter()
        .map(|(ids, _)| ids.len())
        .chain(b.dispatch_ties.iter().map(|d| d.2))
        .collect();
    let mut total: usize = 1;
    for &n in &sizes {
        let orders = (1..=n).fold(1usize, |f, k| f.saturating_mul(k));
        total = total.saturating_mul(orders);
    }
    let all = total <= MAX_ORDERS;
    let (choices, combos) = tie_orders(&sizes, all);
    let passes = combos
        .iter()
        .map(|combo| {
            let mut state = b.state.clone();
            let mut queues = b.queues.clone();
            let mut new_order: HashMap<u32, u32> = HashMap::new();
            // The permutation this combination picks for each tie, created ties first.
            let mut perms = choices
                .iter()
                .zip(combo)
                .map(|(c, &k)| c.get(k).map_or(&[][..], Vec::as_slice));
            for ((ids, vals), perm) in b.created_ties.iter().zip(perms.by_ref()) {
                for (id, &p) in ids.iter().zip(perm) {
                    if let Some(&v) = vals.get(p) {
                        new_order.insert(*id, v);
                    }
                }
            }
            for (&(s, start, len), perm) in b.dispatch_ties.iter().zip(perms) {
                let Some(run) = state
                    .holders
                    .get_mut(s)
                    .and_then(|hs| hs.get_mut(start..start + len))
                else {
                    continue;
                };
                let seg: Vec<Holder> = run.to_vec();
                for (slot, &p) in run.iter_mut().zip(perm) {
                    if let Some(&h) = seg.get(p) {
                        *slot = h;
                    }
                }
            }
            for h in state.holders.iter_mut().flatten() {
                if let Some(&o) = new_order.get(&h.id) {
                    h.order = o;
                }
            }
            for h in queues.iter_mut().flatten() {
                if let Some(&o) = new_order.get(&h.id) {
                    h.order = o;
                }
            }
            for q in &mut queues {
                q.sort_by_key(|h| (std::cmp::Reverse(h.priority), h.created_at, h.order));
            }
            SnapshotPass {
                state,
                queues: queues.into_iter().map(VecDeque::from).collect(),
                target: u32::MAX,
                target_placement: None,
                target_borrowed: None,
                victims: Vec::new(),
                decisions: Vec::new(),
            }
        })
        .collect();
    (passes, all)
}

/// One instance type of a snapshot as the engine's scheduling pass sees it, recording what the
/// pass does.
struct SnapshotPass {
    state: TypeState,
    queues: Vec<VecDeque<Head>>,
    target: u32,
    target_placement: Option<Placement>,
    /// Instances borrowed when the target is dispatched.
    target_borrowed: Option<u32>,
    victims: Vec<Victim>,
    /// Every placement the pass decided, by job index, in the order decided.
    decisions: Vec<(u32, Placement)>,
}

impl Pass for SnapshotPass {
    fn shares(&self) -> usize {
        self.queues.len()
    }
    fn types(&self) -> usize {
        1
    }
    fn live(&self, _s: usize) -> bool {
        true
    }
    fn borrows(&self, s: usize) -> bool {
        self.state.ledger.borrows_of(s)
    }
    fn head(&self, s: usize, _ty: usize) -> Option<Head> {
        self.queues.get(s)?.front().copied()
    }
    fn view(&self, _ty: usize) -> impl TypeView + '_ {
        &self.state
    }
    fn dispatch(&mut self, id: u32) {
        let Some(s) = self
            .queues
            .iter()
            .position(|q| q.front().is_some_and(|h| h.id == id))
        else {
            return;
        };
        let Some(h) = self.queues.get_mut(s).and_then(VecDeque::pop_front) else {
            return;
        };
        let ledger = &mut self.state.ledger;
        let (own, used) = (ledger.own_of(s), ledger.used_of(s));
        if id == self.target {
            self.target_borrowed =
                Some((used + h.count).saturating_sub(own) - used.saturating_sub(own));
        }
        if let Some(used) = ledger.used.get_mut(s) {
            *used += h.count;
        }
        if let Some(held) = self.state.holders.get_mut(s) {
            held.push(Holder {
                id,
                order: h.order,
                count: h.count,
                priority: h.priority,
                elapsed_ms: 0,
                preempting: false,
            });
        }
    }
    fn preempt(&mut self, v: &Victim) {
        if let Some(h) = self
            .state
            .holders
            .get_mut(v.share)
            .and_then(|hs| hs.iter_mut().find(|h| h.id == v.id && !h.preempting))
        {
            h.preempting = true;
            if let Some(r) = self.state.releasing.get_mut(v.share) {
                *r += v.count;
            }
            self.victims.push(*v);
        }
    }
    fn decided(&mut self, id: u32, placement: &Placement) {
        self.decisions.push((id, placement.clone()));
        if id == self.target {
            self.target_placement = Some(placement.clone());
        }
    }
}

/// What the engine's next scheduling pass does with the job at its new priority: the pass over
/// its instance type (`engine::placement::pass`), in every order of tied jobs.
pub(super) fn predict(
    q: &QueueSnapshot,
    job_id: &str,
    queue: &[analysis::QueuedJob],
) -> Result<(Prediction, Preemptions, bool), NoFixpoint> {
    let none = Preemptions::default();
    let Some((index, job)) = q
        .jobs
        .iter()
        .enumerate()
        .find(|(_, j)| j.job.id == job_id)
        .map(|(i, j)| (i, &j.job))
    else {
        return Ok((Prediction::WaitsForCapacity, none, false));
    };
    // Head-of-line: only the first waiting job of its instance type in its share moves now.
    let ahead = queue
        .iter()
        .take_while(|j| j.job_id != job.id)
        .filter(|j| j.instance_type == job.instance_type && !j.misconfigured)
        .count();
    if !q.shares.iter().any(|sh| sh.name == job.share) {
        return Ok((Prediction::WaitsForCapacity, none, false));
    }
    let now = analysis::now_of(q).unwrap_or(0);
    let built = build(q, &job.instance_type, now);
    let (mut outcomes, every_order) = orders(&built);
    for o in &mut outcomes {
        o.target = index as u32;
        placement_pass(o)?;
    }
    let preemptions = preemptions_of(q, &built, &outcomes, every_order, now);
    let Some(first) = outcomes.first() else {
        return Ok((Prediction::WaitsForCapacity, preemptions, false));
    };
    let prediction = prediction_of(first, ahead, &preemptions);
    let awaits = matches!(first.target_placement, Some(Placement::AwaitRelease));
    Ok((prediction, preemptions, awaits))
}

/// Who the passes preempt: the likeliest order's victims first, then any other order's, and
/// when not every order was tried, any job the API cannot tell from a victim.
fn preemptions_of(
    q: &QueueSnapshot,
    built: &Built,
    outcomes: &[SnapshotPass],
    every_order: bool,
    now: Millis,
) -> Preemptions {
    let mut ids: Vec<(u32, PreemptionKind)> = Vec::new();
    let (mut min, mut max) = (usize::MAX, 0);
    for o in outcomes {
        min = min.min(o.victims.len());
        max = max.max(o.victims.len());
        for v in &o.victims {
            if !ids.contains(&(v.id, v.kind)) {
                ids.push((v.id, v.kind));
            }
        }
    }
    if !every_order {
        add_lookalikes(q, built, &mut ids);
    }
    let candidates: Vec<Candidate> = ids
        .iter()
        .filter_map(|&(id, kind)| Some(candidate(q.jobs.get(id as usize)?, now, kind)))
        .collect();
    Preemptions {
        candidates,
        min: if outcomes.is_empty() { 0 } else { min },
        max,
    }
}

/// Not every order was tried: any job the API cannot tell from a victim (same share, priority,
/// creation and start) may be preempted instead.
fn add_lookalikes(q: &QueueSnapshot, built: &Built, ids: &mut Vec<(u32, PreemptionKind)>) {
    let alike = |a: &TrackedJob, b: &TrackedJob| {
        let (a, b) = (&a.job, &b.job);
        (
            a.share.as_str(),
            a.priority,
            a.created_at,
            a.started_at,
            a.scheduled_at,
        ) == (
            b.share.as_str(),
            b.priority,
            b.created_at,
            b.started_at,
            b.scheduled_at,
        )
    };
    for (id, kind) in ids.clone() {
        let Some(v) = q.jobs.get(id as usize) else {
            continue;
        };
        for h in built.state.holders.iter().flatten() {
            let Some(other) = q.jobs.get(h.id as usize) else {
                continue;
            };
            if !h.preempting && alike(v, other) && !ids.contains(&(h.id, kind)) {
                ids.push((h.id, kind));
            }
        }
    }
}

/// What the likeliest order's pass does with the target. A job that stays behind others does
/// not move, but the pass still runs: lowering the head job lets the next one try its luck,
/// whose preemptions are listed.
fn prediction_of(first: &SnapshotPass, ahead: usize, preemptions: &Preemptions) -> Prediction {
    match (&first.target_placement, first.target_borrowed) {
        _ if ahead > 0 => Prediction::Waits { ahead },
        (Some(Placement::Dispatch), Some(0)) => Prediction::RunsOnOwnCapacity,
        (Some(Placement::Dispatch), Some(instances)) => Prediction::Borrows { instances },
        (Some(Placement::Preempt(v)), _)
            if v.iter().all(|v| v.kind == PreemptionKind::CrossShare) =>
        {
            Prediction::ReclaimsLent {
                instances: v.iter().map(|v| v.count).sum(),
            }
        }
        (Some(Placement::Preempt(_)), _) => Prediction::Preempts(preemptions.candidates.clone()),
        _ => Prediction::WaitsForCapacity,
    }
}

pub(super) fn candidate(t: &TrackedJob, now: Millis, kind: PreemptionKind) -> Candidate {
    let j = &t.job;
    let start = quotatop_model::attempt_start(j.started_at, j.scheduled_at).unwrap_or(now);
    let running_ms = (now - start).max(0);
    Candidate {
        job_id: j.id.clone(),
        name: j.name.clone(),
        share: j.share.clone(),
        priority: j.priority,
        instance_type: j.instance_type.clone(),
        instance_count: j.instance_count,
        running_ms,
        instance_hours_at_risk: running_ms as f64 / 3_600_000.0 * j.instance_count as f64,
        kind,
    }
}

/// The next scheduling pass over one instance type of a snapshot, at the jobs' current
/// priorities (what `analysis::why` explains).
pub(crate) struct NextPass {
    /// The type's state before the pass: shares indexed as in `q.shares`, jobs by their index
    /// in `q.jobs`.
    pub state: TypeState,
    /// Per order of tied jobs tried (the likeliest first): each placement the pass decided, by
    /// job index, in the order decided.
    pub decisions: Vec<Vec<(u32, Placement)>>,
}

/// Runs the engine's scheduling pass over instance type `ty` of `q` in every order of tied jobs
/// the snapshot cannot settle.
pub(crate) fn next_pass(q: &QueueSnapshot, ty: &str) -> Result<NextPass, NoFixpoint> {
    let now = analysis::now_of(q).unwrap_or(0);
    let built = build(q, ty, now);
    let (mut passes, _) = orders(&built);
    for p in &mut passes {
        placement_pass(p)?;
    }
    Ok(NextPass {
        state: built.state,
        decisions: passes.into_iter().map(|p| p.decisions).collect(),
    })
}
