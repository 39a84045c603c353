//! The facts behind an answer, in words: the engine's misconfiguration check over the
//! snapshot's configuration, the share's standing and borrowing, why no room can be made.

use quotatop_engine::{CapacityLedger, TypeState};
use quotatop_engine::{Misconfiguration, PreemptionKind};
use quotatop_model::{QueueSnapshot, QuotaShare, SharingStrategy};

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
pub(super) fn lendable_elsewhere(q: &QueueSnapshot, share: &str, ty: &str) -> u64 {
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
    quotatop_engine::misconfiguration(
        count,
        share.limit_for(ty),
        &share.sharing,
        lendable_elsewhere(q, &share.name, ty),
        environment(q, ty),
    )
}

/// A misconfiguration in words, and what would lift it: the one wording of the Overview's
/// attention panel and Job detail's "why it waits".
pub fn misconfiguration_words(
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

pub(super) fn name_of(q: &QueueSnapshot, index: u32) -> String {
    q.jobs
        .get(index as usize)
        .map_or_else(|| "?".to_string(), |t| t.job.name.clone())
}

pub(super) fn id_of(q: &QueueSnapshot, index: u32) -> String {
    q.jobs
        .get(index as usize)
        .map_or_else(String::new, |t| t.job.id.clone())
}

/// Up to three names, then "and N more".
pub(super) fn names(list: &[String]) -> String {
    let mut s = list.iter().take(3).cloned().collect::<Vec<_>>().join(", ");
    if list.len() > 3 {
        s.push_str(&format!(" and {} more", list.len() - 3));
    }
    s
}

pub(super) fn kind_words(k: PreemptionKind) -> &'static str {
    match k {
        PreemptionKind::CrossShare => "cross-share",
        PreemptionKind::InShare => "in-share",
        PreemptionKind::LimitReduced => "limit reduced",
    }
}

/// The share's use of the type against its limit, and what it may borrow, against the job's
/// need of `need` instances.
pub(super) fn standing(
    q: &QueueSnapshot,
    state: &TypeState,
    s: usize,
    ty: &str,
    need: u32,
) -> Vec<String> {
    let Some(share) = q.shares.get(s) else {
        return Vec::new();
    };
    let l = &state.ledger;
    let (own, used) = (l.own_of(s), l.used_of(s));
    let mut use_line = format!(
        "share {} holds {used} of its limit of {own} {ty}",
        share.name
    );
    if used > own {
        use_line.push_str(&format!(" ({} borrowed)", used - own));
    }
    let releasing = state.releasing.get(s).copied().unwrap_or(0);
    if releasing > 0 {
        use_line.push_str(&format!(
            ", {releasing} of them being given back by preemption"
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
    out.insert(0, need_line(q, l, s, ty, need, env_used));
    let limits: u64 = l.own.iter().map(|&o| o as u64).sum();
    if l.env != u32::MAX && limits > l.env as u64 {
        out.push(format!(
            "the shares' limits add up to {limits} {ty}, more than the environment's {}: a share can be short of its own limit while the others use theirs",
            l.env
        ));
    }
    out
}

/// The borrowing pool of one type (`policy` rule 4): what lending shares leave unused, what
/// borrowing shares hold beyond their limits, and the difference.
pub(super) struct Borrowable {
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

/// The job's need against what is free for it now: room in its own limit, plus what it may
/// borrow, within what the environment has idle.
fn need_line(
    q: &QueueSnapshot,
    l: &CapacityLedger,
    s: usize,
    ty: &str,
    need: u32,
    env_used: u64,
) -> String {
    let own_room = (l.own_of(s) as u64).saturating_sub(l.used_of(s) as u64);
    let to_borrow = if l.borrows_of(s) {
        let borrowed = (l.used_of(s) as u64).saturating_sub(l.own_of(s) as u64);
        let cap = l
            .borrow_cap_of(s)
            .map_or(u64::MAX, |c| (c as u64).saturating_sub(borrowed));
        borrowable(q, l, s).left().min(cap)
    } else {
        0
    };
    let env_idle = if l.env == u32::MAX {
        u64::MAX
    } else {
        (l.env as u64).saturating_sub(env_used)
    };
    let free = (own_room + to_borrow).min(env_idle);
    let idle = if env_idle == u64::MAX {
        String::new()
    } else {
        format!(", {env_idle} idle in the environment")
    };
    let verdict = if free >= need as u64 {
        "enough"
    } else {
        "not enough"
    };
    format!(
        "it needs {need} {ty}; free for it now: {free} ({own_room} within its share's limit, {to_borrow} to borrow{idle}): {verdict}"
    )
}

pub(super) fn borrowable(q: &QueueSnapshot, l: &CapacityLedger, s: usize) -> Borrowable {
    let mut b = Borrowable {
        unused: Vec::new(),
        unused_total: 0,
        lent: Vec::new(),
        lent_total: 0,
    };
    for (t, o) in q.shares.iter().enumerate().take(l.own.len()) {
        if t != s && l.lends_of(t) && l.used_of(t) < l.own_of(t) {
            let n = l.own_of(t) - l.used_of(t);
            b.unused_total += n as u64;
            b.unused.push(format!("{} {n}", o.name));
        }
        if l.used_of(t) > l.own_of(t) {
            let n = l.used_of(t) - l.own_of(t);
            b.lent_total += n as u64;
            b.lent.push(format!("to {} {n}", o.name));
        }
    }
    b
}

/// Why the head job cannot be placed, from the ledger (`engine::placement::CapacityLedger::fits`).
pub(super) fn no_room_reason(
    q: &QueueSnapshot,
    state: &TypeState,
    s: usize,
    ty: &str,
    count: u32,
) -> String {
    let l = &state.ledger;
    let (own, used) = (l.own_of(s) as u64, l.used_of(s) as u64);
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
    if !l.borrows_of(s) {
        return format!(
            "share {name} would go over its limit of {own} ({used} held + {count}) and does not borrow"
        );
    }
    if let Some(cap) = l.borrow_cap_of(s)
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

/// A job of `q` by id: its (priority, created, submission order) as the engine's queue key
/// takes them (the snapshot's order stands for submission order).
pub(super) fn key_of(q: &QueueSnapshot, id: &str) -> Option<(u32, i64, u32)> {
    q.jobs
        .iter()
        .enumerate()
        .find(|(_, t)| t.job.id == id)
        .map(|(i, t)| (t.job.priority, t.job.created_at, i as u32))
}
