//! "Why is this job not running?": the answer for a waiting job (SUBMITTED, PENDING, RUNNABLE)
//! in words, from the engine's own rules run over the snapshot: the engine's scheduling pass
//! (`engine::placement::pass`, over the state the priority preview builds) says what the next
//! pass does with the job, `engine::policy` says whether it can run at all; this module says why
//! and what would change it. Nothing is invented: what the snapshot does not tell (when a
//! running job ends) is said to be unknown.

mod change;
mod words;

use crate::{self as analysis, preview};
use quotatop_engine::{Misconfiguration, PreemptionKind, queue_key};
use quotatop_engine::{Placement, TypeView};
use quotatop_model::{JobStatus, QueueSnapshot, QuotaShare, ServiceJob};

use words::{id_of, key_of, kind_words, name_of, names, no_room_reason, standing};
pub use words::{misconfiguration, misconfiguration_words};

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
    let Some((s, share)) = q
        .shares
        .iter()
        .enumerate()
        .find(|(_, sh)| sh.name == j.share)
    else {
        out.headline = format!(
            "Its share {} is not in the data: nothing more can be said",
            j.share
        );
        return Some(out);
    };
    let mis = misconfiguration(q, share, ty, j.instance_count);
    let reported = j.misconfiguration().is_some();
    if j.status == JobStatus::Runnable && reported {
        misconfigured(q, j, share, mis, &mut out);
        return Some(out);
    }
    let pass = match preview::next_pass(q, ty) {
        Ok(pass) => pass,
        Err(e) => {
            out.headline =
                format!("quotatop cannot explain this wait: {e}; this is a fault in quotatop");
            return Some(out);
        }
    };
    // Its share's waiting jobs of its type, in dispatch order (as the console lists them).
    let queue: Vec<analysis::QueuedJob> = analysis::share_queue(q, &j.share)
        .into_iter()
        .filter(|w| w.instance_type == ty && !w.misconfigured)
        .collect();
    let asked = change::Asked {
        q,
        j,
        share,
        s,
        state: &pass.state,
        queue: &queue,
        pos: queue.iter().position(|w| w.job_id == j.id),
    };
    if j.status != JobStatus::Runnable {
        not_queued_yet(&asked, index as u32, mis, &mut out);
        return Some(out);
    }
    out.facts.push(position(&asked));
    out.facts
        .extend(standing(q, &pass.state, s, ty, j.instance_count));
    decide(&asked, index as u32, &pass.decisions, &mut out);
    if out.verdict != Verdict::Dispatches {
        out.changes = change::what_would_change(&asked, &out.verdict);
    }
    Some(out)
}

/// A RUNNABLE job the service says cannot run as configured: why, from the limits shown.
fn misconfigured(
    q: &QueueSnapshot,
    j: &ServiceJob,
    share: &QuotaShare,
    mis: Option<Misconfiguration>,
    out: &mut Why,
) {
    let ty = j.instance_type.as_str();
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
}

/// A SUBMITTED or PENDING job: where it will stand once RUNNABLE.
fn not_queued_yet(
    asked: &change::Asked<'_>,
    index: u32,
    mis: Option<Misconfiguration>,
    out: &mut Why,
) {
    let change::Asked {
        q,
        j,
        share,
        s,
        state,
        queue,
        ..
    } = *asked;
    let ty = j.instance_type.as_str();
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
        let mine = queue_key(j.priority, j.created_at, index);
        let ahead = queue
            .iter()
            .filter_map(|w| key_of(q, &w.job_id))
            .filter(|&(p, c, i)| queue_key(p, c, i) < mine)
            .count();
        out.facts.push(format!(
            "once RUNNABLE it joins share {}'s queue for {ty} behind {ahead} waiting job(s)",
            j.share
        ));
    }
    out.facts
        .extend(standing(q, state, s, ty, j.instance_count));
}

/// Its place in its share's queue for its type, and the job right ahead of it.
fn position(asked: &change::Asked<'_>) -> String {
    let change::Asked { j, queue, pos, .. } = *asked;
    let ty = j.instance_type.as_str();
    let mut position = match pos {
        Some(p) => format!(
            "position {} of {} in share {}'s queue for {ty}",
            p + 1,
            queue.len(),
            j.share
        ),
        None => format!("not in share {}'s queue for {ty}", j.share),
    };
    if let Some(a) = pos
        .and_then(|p| p.checked_sub(1))
        .and_then(|p| queue.get(p))
    {
        position.push_str(&format!(
            "; next ahead: {} (priority {})",
            a.name,
            a.priority
                .map_or_else(|| "unknown".to_string(), |p| p.to_string())
        ));
    }
    position
}

/// What the next pass decides for job `me`, in each order of tied jobs (`decisions`): the
/// verdict and headline, and whether every order agrees.
fn decide(asked: &change::Asked<'_>, me: u32, decisions: &[Vec<(u32, Placement)>], out: &mut Why) {
    let change::Asked { q, j, s, state, .. } = *asked;
    let ty = j.instance_type.as_str();
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
    let first = decisions.first();
    out.settled = decisions
        .iter()
        .all(|d| first.is_some_and(|f| outcome(d) == outcome(f)));
    let preempting: Vec<u32> = state
        .holders
        .iter()
        .flatten()
        .filter(|h| h.preempting)
        .map(|h| h.id)
        .collect();
    match first.map(decided) {
        Some(Some(Placement::Dispatch)) => {
            out.verdict = Verdict::Dispatches;
            out.headline =
                "It fits: the next scheduling pass dispatches it (it should start within seconds)"
                    .to_string();
        }
        Some(Some(Placement::AwaitRelease)) => {
            awaits_release(
                q,
                first.map_or(&[][..], Vec::as_slice),
                me,
                &preempting,
                out,
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
                blocked_behind(asked, b, how, out);
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
}

/// Waits for capacity being given back: preemptions in progress now, and those started earlier
/// in the same pass (`first`) for jobs placed before job `me`.
fn awaits_release(
    q: &QueueSnapshot,
    first: &[(u32, Placement)],
    me: u32,
    preempting: &[u32],
    out: &mut Why,
) {
    let releasing_names: Vec<String> = preempting.iter().map(|&i| name_of(q, i)).collect();
    // In progress now, and started earlier in the same pass for jobs placed before it.
    let started: Vec<u32> = first
        .iter()
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

/// Blocked behind job `b` of its share's queue, which the pass places `how`.
fn blocked_behind(asked: &change::Asked<'_>, b: u32, how: Placement, out: &mut Why) {
    let change::Asked { q, j, s, state, .. } = *asked;
    let ty = j.instance_type.as_str();
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

#[cfg(test)]
mod tests;
