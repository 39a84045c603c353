//! "Why is this job not running?": the answer for a waiting job (SUBMITTED, PENDING, RUNNABLE)
//! in words, from the engine's own rules run over the snapshot: the engine's scheduling pass
//! (`engine::placement::pass`, over the state the priority preview builds) says what the next
//! pass does with the job, `engine::policy` says whether it can run at all; this module says why
//! and what would change it. Nothing is invented: what the snapshot does not tell (when a
//! running job ends) is said to be unknown.

use crate::analysis::{self, preview};
use crate::engine::placement::{Placement, TypeState, TypeView};
use crate::engine::policy::{self, Misconfiguration, PreemptionKind};
use crate::model::{JobStatus, MAX_PRIORITY, QueueSnapshot, QuotaShare, SharingStrategy};

/// What the next scheduling pass does with the job, or why it has no turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// SUBMITTED or PENDING: the service has not queued it yet.
    NotQueuedYet,
    /// It can never be placed as configured (`None`: the service says so, but the snapshot's
    /// configuration no longer shows why).
    Misconfigured(Option<Misconfiguration>),
    /// It fits: the next pass dispatches it.
    Dispatches,
    /// At the head of its queue, it waits for capacity that preemptions in progress give back
    /// (these jobs, by id).
    AwaitsRelease(Vec<String>),
    /// The next pass preempts these jobs (by id) to make room for it.
    Preempts(Vec<(String, PreemptionKind)>),
    /// A job ahead of it in its share's queue for its instance type (by id) cannot be placed,
    /// and blocks it (head-of-line blocking, `policy` rule 2).
    BlockedBehind(String),
    /// At the head of its queue, but no room can be made now.
    NoRoom,
    /// Its share is not in the snapshot.
    UnknownShare,
}

/// The answer for one waiting job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Why {
    pub job_id: String,
    pub verdict: Verdict,
    /// The answer in one sentence.
    pub headline: String,
    /// The facts behind it: queue position, the share's use and borrowing, lenders' idle
    /// capacity.
    pub facts: Vec<String>,
    /// What would change it: priority, capacity freeing, configuration.
    pub changes: Vec<String>,
    /// False when jobs created or dispatched in the same millisecond (which the API does not
    /// order) could change the answer: it is then the likeliest order's.
    pub settled: bool,
}

impl Why {
    /// The answer as lines of text (untrusted names included as they are: clean before
    /// drawing).
    pub fn lines(&self) -> Vec<String> {
        let mut out = vec![self.headline.clone()];
        out.extend(self.facts.iter().map(|f| format!("· {f}")));
        if !self.settled {
            out.push(
                "· jobs created or dispatched in the same millisecond have no published order: this is the likeliest order's answer"
                    .to_string(),
            );
        }
        if !self.changes.is_empty() {
            out.push("What would change it:".to_string());
            out.extend(self.changes.iter().map(|c| format!("· {c}")));
        }
        out
    }
}

/// The idle capacity outside every share is used by nobody (`policy` rule 5); an environment
/// with no known capacity is taken as unlimited, as the preview does.
fn environment(q: &QueueSnapshot, ty: &str) -> u32 {
    if q.environment.capacity.is_empty() {
        u32::MAX
    } else {
        q.environment.capacity_for(ty)
    }
}

/// The sum of the limits for `ty` of every other share that lends.
fn lendable_elsewhere(q: &QueueSnapshot, share: &str, ty: &str) -> u64 {
    q.shares
        .iter()
        .filter(|o| o.name != share && o.sharing.strategy.lends())
        .map(|o| o.limit_for(ty) as u64)
        .sum()
}

/// What the engine's misconfiguration check (`policy::misconfiguration`) says of `count`
/// instances of `ty` in `share` with the snapshot's configuration.
pub fn misconfiguration(
    q: &QueueSnapshot,
    share: &QuotaShare,
    ty: &str,
    count: u32,
) -> Option<Misconfiguration> {
    policy::misconfiguration(
        count,
        share.limit_for(ty),
        &share.sharing,
        lendable_elsewhere(q, &share.name, ty),
        environment(q, ty),
    )
}

/// A misconfiguration in words, and what would lift it.
fn misconfiguration_words(
    q: &QueueSnapshot,
    share: &QuotaShare,
    ty: &str,
    n: u32,
    m: Misconfiguration,
) -> (String, String) {
    let own = share.limit_for(ty);
    let s = &share.name;
    match m {
        Misconfiguration::ExceedsShareLimit => (
            format!(
                "needs {n} {ty}; share {s} may hold at most {own} ({} shares do not borrow)",
                share.sharing.strategy.as_str()
            ),
            format!(
                "a limit of at least {n} {ty} for share {s} (or LEND_AND_BORROW with room to borrow), or a job of at most {own} instances"
            ),
        ),
        Misconfiguration::ExceedsShareAndBorrowLimit => {
            let cap = share.sharing.borrow_cap(own).unwrap_or(0);
            let pct = share.sharing.borrow_percent().unwrap_or(0);
            let needed = if own == 0 {
                format!("a limit for {ty} in share {s}")
            } else {
                let p = ((n - own) as u64 * 100).div_ceil(own as u64);
                format!("a borrow limit of at least {p}% for share {s} (or a larger limit)")
            };
            (
                format!(
                    "needs {n} {ty}; share {s} may hold at most {} (limit {own} + borrow {pct}%)",
                    own as u64 + cap as u64
                ),
                format!(
                    "{needed}, or a job of at most {} instances",
                    own as u64 + cap as u64
                ),
            )
        }
        Misconfiguration::ExceedsBorrowableCapacity => {
            let lendable = lendable_elsewhere(q, s, ty);
            (
                format!(
                    "needs {n} {ty}; share {s} has {own} of its own and the other shares lend at most {lendable}"
                ),
                format!(
                    "other shares lending {} more {ty}, or a job of at most {} instances",
                    n as u64 - own as u64 - lendable,
                    own as u64 + lendable
                ),
            )
        }
        Misconfiguration::ExceedsServiceEnvironment => {
            let env = environment(q, ty);
            (
                format!("needs {n} {ty}; the service environment has {env}"),
                format!(
                    "a service environment with at least {n} {ty}, or a job of at most {env} instances"
                ),
            )
        }
    }
}

fn name_of(q: &QueueSnapshot, index: u32) -> String {
    q.jobs
        .get(index as usize)
        .map_or_else(|| "?".to_string(), |t| t.job.name.clone())
}

fn id_of(q: &QueueSnapshot, index: u32) -> String {
    q.jobs
        .get(index as usize)
        .map_or_else(String::new, |t| t.job.id.clone())
}

/// Up to three names, then "and N more".
fn names(list: &[String]) -> String {
    let mut s = list.iter().take(3).cloned().collect::<Vec<_>>().join(", ");
    if list.len() > 3 {
        s.push_str(&format!(" and {} more", list.len() - 3));
    }
    s
}

fn kind_words(k: PreemptionKind) -> &'static str {
    match k {
        PreemptionKind::CrossShare => "cross-share",
        PreemptionKind::InShare => "in-share",
        PreemptionKind::LimitReduced => "limit reduced",
    }
}

/// The share's use of the type against its limit, and what it may borrow.
fn standing(q: &QueueSnapshot, state: &TypeState, s: usize, ty: &str) -> Vec<String> {
    let Some(share) = q.shares.get(s) else {
        return Vec::new();
    };
    let l = &state.ledger;
    let (own, used) = (l.own[s], l.used[s]);
    let mut use_line = format!(
        "share {} holds {used} of its limit of {own} {ty}",
        share.name
    );
    if used > own {
        use_line.push_str(&format!(" ({} borrowed)", used - own));
    }
    if state.releasing[s] > 0 {
        use_line.push_str(&format!(
            ", {} of them being given back by preemption",
            state.releasing[s]
        ));
    }
    let mut out = vec![use_line];
    out.push(match share.sharing.strategy {
        SharingStrategy::Reserve => "RESERVE: it neither lends nor borrows".to_string(),
        SharingStrategy::Lend => "LEND: it lends its idle capacity and never borrows".to_string(),
        SharingStrategy::LendAndBorrow => match share.sharing.borrow_cap(own) {
            None => "LEND_AND_BORROW: it may borrow without limit (borrow limit -1)".to_string(),
            Some(cap) => format!(
                "LEND_AND_BORROW: it may borrow up to {cap} {ty} (borrow limit {}%), {} now",
                share.sharing.borrow_percent().unwrap_or(0),
                used.saturating_sub(own)
            ),
        },
    });
    if share.sharing.strategy.borrows() {
        let b = borrowable(q, l, s);
        let mut line = if b.unused.is_empty() {
            format!("lending shares leave no {ty} unused")
        } else {
            format!(
                "lending shares leave {} {ty} unused ({})",
                b.unused_total,
                b.unused.join(", ")
            )
        };
        if b.lent_total > 0 {
            line.push_str(&format!(
                ", {} of it lent out ({})",
                b.lent_total,
                b.lent.join(", ")
            ));
        }
        line.push_str(&format!("; {} left to borrow", b.left()));
        out.push(line);
    }
    let env_used: u64 = l.used.iter().map(|&u| u as u64).sum();
    if l.env != u32::MAX && env_used >= l.env as u64 {
        out.push(format!(
            "the service environment's {} {ty} are all in use",
            l.env
        ));
    }
    out
}

/// The borrowing pool of one type (`policy` rule 4): what lending shares leave unused, what
/// borrowing shares hold beyond their limits, and the difference.
struct Borrowable {
    unused: Vec<String>,
    unused_total: u64,
    lent: Vec<String>,
    lent_total: u64,
}

impl Borrowable {
    fn left(&self) -> u64 {
        self.unused_total.saturating_sub(self.lent_total)
    }
}

fn borrowable(q: &QueueSnapshot, l: &crate::engine::placement::Ledger, s: usize) -> Borrowable {
    let mut b = Borrowable {
        unused: Vec::new(),
        unused_total: 0,
        lent: Vec::new(),
        lent_total: 0,
    };
    for (t, o) in q.shares.iter().enumerate().take(l.own.len()) {
        if t != s && l.lends[t] && l.used[t] < l.own[t] {
            let n = l.own[t] - l.used[t];
            b.unused_total += n as u64;
            b.unused.push(format!("{} {n}", o.name));
        }
        if l.used[t] > l.own[t] {
            let n = l.used[t] - l.own[t];
            b.lent_total += n as u64;
            b.lent.push(format!("to {} {n}", o.name));
        }
    }
    b
}

/// Why the head job cannot be placed, from the ledger (`engine::placement::Ledger::fits`).
fn no_room_reason(q: &QueueSnapshot, state: &TypeState, s: usize, ty: &str, count: u32) -> String {
    let l = &state.ledger;
    let (own, used) = (l.own[s] as u64, l.used[s] as u64);
    let env_used: u64 = l.used.iter().map(|&u| u as u64).sum();
    let name = q.shares.get(s).map_or("?", |sh| sh.name.as_str());
    if env_used + count as u64 > l.env as u64 {
        return format!(
            "the service environment has {} {ty}, {} in use",
            l.env, env_used
        );
    }
    if used + count as u64 <= own {
        return format!(
            "it fits share {name}'s own limit, but its idle capacity is lent out and no borrower can be preempted to make room"
        );
    }
    if !l.borrows[s] {
        return format!(
            "share {name} would go over its limit of {own} ({used} held + {count}) and does not borrow"
        );
    }
    if let Some(cap) = l.borrow_cap[s]
        && used + count as u64 > own + cap as u64
    {
        return format!(
            "share {name} would go over its limit plus borrow limit ({own} + {cap}; {used} held + {count})"
        );
    }
    if l.fits(s, count) {
        return "the idle capacity it would borrow is held back for other shares' jobs waiting for their own capacity (policy rule 3)".to_string();
    }
    let need = (used + count as u64).saturating_sub(own.max(used));
    match borrowable(q, l, s).left() {
        0 => format!("it must borrow {need} {ty} and nothing is left to borrow"),
        left => format!("it must borrow {need} {ty} and only {left} is left to borrow"),
    }
}

/// The lowest priority that puts the job first among `ahead` (its share's waiting jobs of its
/// type ahead of it), by the engine's queue key; `None` when none up to the maximum does.
fn priority_to_lead(
    job: (u32, i64, u32),
    ahead: impl IntoIterator<Item = (u32, i64, u32)>,
) -> Option<u32> {
    let ahead: Vec<(u32, i64, u32)> = ahead.into_iter().collect();
    let top = ahead.iter().map(|a| a.0).max()?;
    [top, top.saturating_add(1)]
        .into_iter()
        .filter(|&p| p >= job.0 && p <= MAX_PRIORITY)
        .find(|&p| {
            let key = policy::queue_key(p, job.1, job.2);
            ahead.iter().all(|a| key < policy::queue_key(a.0, a.1, a.2))
        })
}

/// The answer for job `job_id` (id or ARN) of `q`; `None` when it is not waiting (or not in
/// the snapshot).
pub fn why(q: &QueueSnapshot, job_id: &str) -> Option<Why> {
    let (index, t) = q
        .jobs
        .iter()
        .enumerate()
        .find(|(_, t)| t.job.id == job_id || t.arn == job_id)?;
    let j = &t.job;
    if !matches!(
        j.status,
        JobStatus::Submitted | JobStatus::Pending | JobStatus::Runnable
    ) {
        return None;
    }
    let ty = j.instance_type.as_str();
    let mut out = Why {
        job_id: j.id.clone(),
        verdict: Verdict::UnknownShare,
        headline: String::new(),
        facts: Vec::new(),
        changes: Vec::new(),
        settled: true,
    };
    let Some(s) = q.shares.iter().position(|sh| sh.name == j.share) else {
        out.headline = format!(
            "Its share {} is not in the data: nothing more can be said",
            j.share
        );
        return Some(out);
    };
    let share = &q.shares[s];
    let mis = misconfiguration(q, share, ty, j.instance_count);
    let reported = j
        .status_reason
        .as_deref()
        .is_some_and(|r| r.starts_with("MISCONFIGURATION"));
    if j.status == JobStatus::Runnable && reported {
        out.verdict = Verdict::Misconfigured(mis);
        match mis {
            Some(m) => {
                let (words, fix) = misconfiguration_words(q, share, ty, j.instance_count, m);
                out.headline = format!("It cannot run as configured: {words}");
                out.facts
                    .push("a misconfigured job waits on its own list whatever its priority; it never blocks others".to_string());
                out.changes.push(fix);
            }
            None => {
                out.headline = format!(
                    "The service says it cannot run as configured ({}), but the limits shown no longer say why: it should be re-checked at the next change of the shares",
                    j.status_reason.as_deref().unwrap_or_default()
                );
            }
        }
        return Some(out);
    }
    let pass = preview::next_pass(q, ty);
    let state = &pass.state;
    // Its share's waiting jobs of its type, in dispatch order (as the console lists them).
    let queue: Vec<analysis::QueuedJob> = analysis::share_queue(q, &j.share)
        .into_iter()
        .filter(|w| w.instance_type == ty && !w.misconfigured)
        .collect();
    let key_of = |id: &str| {
        q.jobs
            .iter()
            .enumerate()
            .find(|(_, t)| t.job.id == id)
            .map(|(i, t)| (t.job.priority, t.job.created_at, i as u32))
    };
    if j.status != JobStatus::Runnable {
        out.verdict = Verdict::NotQueuedYet;
        out.headline = format!(
            "Not in the queue yet ({}): the service takes a job through SUBMITTED and PENDING before it is RUNNABLE and can be placed",
            j.status
        );
        if let Some(m) = mis {
            let (words, fix) = misconfiguration_words(q, share, ty, j.instance_count, m);
            out.facts.push(format!(
                "once RUNNABLE it cannot run as configured: {words}"
            ));
            out.changes.push(fix);
        } else {
            let mine = policy::queue_key(j.priority, j.created_at, index as u32);
            let ahead = queue
                .iter()
                .filter_map(|w| key_of(&w.job_id))
                .filter(|&(p, c, i)| policy::queue_key(p, c, i) < mine)
                .count();
            out.facts.push(format!(
                "once RUNNABLE it joins share {}'s queue for {ty} behind {ahead} waiting job(s)",
                j.share
            ));
        }
        out.facts.extend(standing(q, state, s, ty));
        return Some(out);
    }

    let me = index as u32;
    let pos = queue.iter().position(|w| w.job_id == j.id);
    let mut position = match pos {
        Some(p) => format!(
            "position {} of {} in share {}'s queue for {ty}",
            p + 1,
            queue.len(),
            j.share
        ),
        None => format!("not in share {}'s queue for {ty}", j.share),
    };
    if let Some(p) = pos.filter(|&p| p > 0) {
        let a = &queue[p - 1];
        position.push_str(&format!(
            "; next ahead: {} (priority {})",
            a.name,
            a.priority
                .map_or_else(|| "unknown".to_string(), |p| p.to_string())
        ));
    }
    out.facts.push(position);
    out.facts.extend(standing(q, state, s, ty));

    // What the pass decides for this job, in each order of tied jobs.
    let decided = |d: &Vec<(u32, Placement)>| -> Option<Placement> {
        d.iter().find(|(id, _)| *id == me).map(|(_, p)| p.clone())
    };
    let blocker = |d: &Vec<(u32, Placement)>| -> Option<(u32, Placement)> {
        d.iter()
            .rev()
            .find(|(id, p)| {
                *p != Placement::Dispatch
                    && q.jobs
                        .get(*id as usize)
                        .is_some_and(|o| o.job.share == j.share)
            })
            .cloned()
    };
    let outcome = |d: &Vec<(u32, Placement)>| match decided(d) {
        Some(p) => (Some(p), None),
        None => (None, blocker(d).map(|b| b.0)),
    };
    let first = pass.decisions.first();
    out.settled = pass
        .decisions
        .iter()
        .all(|d| first.is_some_and(|f| outcome(d) == outcome(f)));
    let preempting: Vec<u32> = state
        .holders
        .iter()
        .flatten()
        .filter(|h| h.preempting)
        .map(|h| h.id)
        .collect();
    let releasing_names: Vec<String> = preempting.iter().map(|&i| name_of(q, i)).collect();
    match first.map(decided) {
        Some(Some(Placement::Dispatch)) => {
            out.verdict = Verdict::Dispatches;
            out.headline =
                "It fits: the next scheduling pass dispatches it (it should start within seconds)"
                    .to_string();
        }
        Some(Some(Placement::AwaitRelease)) => {
            // In progress now, and started earlier in the same pass for jobs placed before it.
            let started: Vec<u32> = first
                .into_iter()
                .flatten()
                .take_while(|(id, _)| *id != me)
                .filter_map(|(_, p)| match p {
                    Placement::Preempt(v) => Some(v.iter().map(|v| v.id).collect::<Vec<_>>()),
                    _ => None,
                })
                .flatten()
                .collect();
            let mut words = Vec::new();
            if !preempting.is_empty() {
                words.push(format!("{} in progress", names(&releasing_names)));
            }
            if !started.is_empty() {
                let list: Vec<String> = started.iter().map(|&i| name_of(q, i)).collect();
                words.push(format!(
                    "{} started by the same pass for jobs placed first",
                    names(&list)
                ));
            }
            out.verdict = Verdict::AwaitsRelease(
                preempting
                    .iter()
                    .chain(&started)
                    .map(|&i| id_of(q, i))
                    .collect(),
            );
            out.headline = format!(
                "Waits for capacity being given back: preemption of {}",
                words.join(", and of ")
            );
        }
        Some(Some(Placement::Preempt(victims))) => {
            out.verdict =
                Verdict::Preempts(victims.iter().map(|v| (id_of(q, v.id), v.kind)).collect());
            let list: Vec<String> = victims
                .iter()
                .map(|v| format!("{} ({})", name_of(q, v.id), kind_words(v.kind)))
                .collect();
            out.headline = format!(
                "The next scheduling pass preempts {} to make room for it",
                names(&list)
            );
        }
        Some(Some(Placement::Blocked)) => {
            out.verdict = Verdict::NoRoom;
            out.headline = format!(
                "First in its queue, but no room can be made now: {}",
                no_room_reason(q, state, s, ty, j.instance_count)
            );
        }
        Some(None) => match first.and_then(blocker) {
            Some((b, how)) => {
                out.verdict = Verdict::BlockedBehind(id_of(q, b));
                let bj = q.jobs.get(b as usize).map(|t| &t.job);
                let what = match how {
                    Placement::AwaitRelease => "waits for preemptions in progress".to_string(),
                    Placement::Preempt(v) => format!(
                        "the next pass preempts {} for it",
                        names(&v.iter().map(|v| name_of(q, v.id)).collect::<Vec<_>>())
                    ),
                    _ => "no room can be made for it now".to_string(),
                };
                out.headline = format!(
                    "Blocked behind {} (priority {}, {} × {ty}), which cannot be placed yet: {what}; a share's jobs of one instance type start in order (head-of-line blocking)",
                    name_of(q, b),
                    bj.map_or(0, |b| b.priority),
                    bj.map_or(0, |b| b.instance_count),
                );
                if state.ledger(false).fits(s, j.instance_count) {
                    out.facts.push(format!(
                        "its {} instance(s) would fit in the capacity idle now, but it waits its turn",
                        j.instance_count
                    ));
                }
            }
            None => {
                out.verdict = Verdict::NoRoom;
                out.headline = "Waits: the next pass does not reach it".to_string();
            }
        },
        None => {
            out.verdict = Verdict::NoRoom;
            out.headline = "Waits: the snapshot does not show enough to say more".to_string();
        }
    }

    // What would change it.
    if matches!(out.verdict, Verdict::Dispatches) {
        return Some(out);
    }
    let p = pos.unwrap_or(0);
    if p > 0
        && let Some(mine) = key_of(&j.id)
    {
        let ahead = queue[..p].iter().filter_map(|w| key_of(&w.job_id));
        match priority_to_lead(mine, ahead) {
            Some(lead) => {
                let effect = preview::preview(q, &j.id, lead)
                    .map(|pv| format!(": then it {}", pv.effect_text()))
                    .unwrap_or_default();
                out.changes.push(format!(
                    "priority {lead} puts it first in share {}'s queue for {ty}{effect}",
                    j.share
                ));
            }
            None => out.changes.push(format!(
                "no priority up to {MAX_PRIORITY} puts it ahead of {}",
                queue[0].name
            )),
        }
    } else if matches!(out.verdict, Verdict::NoRoom) {
        if share.in_share_preemption.enabled() {
            let mut prios: Vec<u32> = state
                .holders
                .get(s)
                .into_iter()
                .flatten()
                .filter(|h| !h.preempting && h.priority >= j.priority)
                .map(|h| h.priority.saturating_add(1))
                .filter(|&p| p <= MAX_PRIORITY)
                .collect();
            prios.sort_unstable();
            prios.dedup();
            let found = prios.into_iter().find_map(|p| {
                let pv = preview::preview(q, &j.id, p).ok()?;
                matches!(
                    pv.prediction,
                    analysis::Prediction::Preempts(_)
                        | analysis::Prediction::RunsOnOwnCapacity
                        | analysis::Prediction::Borrows { .. }
                )
                .then(|| format!("priority {p}: then it {}", pv.effect_text()))
            });
            out.changes.push(found.unwrap_or_else(|| {
                format!(
                    "no priority makes room by in-share preemption: share {}'s lower-priority jobs do not hold enough",
                    j.share
                )
            }));
        } else {
            out.changes.push(format!(
                "a higher priority does not make room: in-share preemption is off for share {}",
                j.share
            ));
        }
    }
    let held: Vec<String> = state
        .holders
        .iter()
        .flatten()
        .filter(|h| !h.preempting)
        .map(|h| name_of(q, h.id))
        .collect();
    if !preempting.is_empty() {
        let n: u32 = state.releasing.iter().sum();
        out.changes.push(format!(
            "capacity freeing next: {n} {ty} being given back by the preemption of {}; when: unknown (the preemption delay is the service's)",
            names(&releasing_names)
        ));
    }
    if !held.is_empty() {
        out.changes.push(format!(
            "capacity freeing later: when one of the {} running {ty} job(s) ends ({}); when: unknown (the snapshot has no run-time limits)",
            held.len(),
            names(&held)
        ));
    }
    Some(out)
}

#[cfg(test)]
#[path = "why_tests.rs"]
mod tests;
