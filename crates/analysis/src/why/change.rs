//! What would change an answer: the priority that puts the job first (and what the preview
//! says it then does), in-share preemption, and the capacity that frees next, as far as the
//! snapshot tells.

use crate::{self as analysis, preview};
use quotatop_engine::TypeState;
use quotatop_engine::queue_key;
use quotatop_model::{MAX_PRIORITY, QueueSnapshot, QuotaShare, ServiceJob};

use super::Verdict;
use super::words::{key_of, name_of, names};

/// The lowest priority that puts the job first among `ahead` (its share's waiting jobs of its
/// type ahead of it), by the engine's queue key; `None` when none up to the maximum does.
pub(super) fn priority_to_lead(
    job: (u32, i64, u32),
    ahead: impl IntoIterator<Item = (u32, i64, u32)>,
) -> Option<u32> {
    let ahead: Vec<(u32, i64, u32)> = ahead.into_iter().collect();
    let top = ahead.iter().map(|a| a.0).max()?;
    [top, top.saturating_add(1)]
        .into_iter()
        .filter(|&p| p >= job.0 && p <= MAX_PRIORITY)
        .find(|&p| {
            let key = queue_key(p, job.1, job.2);
            ahead.iter().all(|a| key < queue_key(a.0, a.1, a.2))
        })
}

/// The job a "why" is asked about, with what the next pass sees of it: the job `j` of share
/// `share` (index `s`) in `q`, the state of its instance type, its share's waiting jobs of
/// that type (`queue`, in dispatch order) and its place there (`pos`).
pub(super) struct Asked<'a> {
    pub q: &'a QueueSnapshot,
    pub j: &'a ServiceJob,
    pub share: &'a QuotaShare,
    pub s: usize,
    pub state: &'a TypeState,
    pub queue: &'a [analysis::QueuedJob],
    pub pos: Option<usize>,
}

/// What would change the answer `verdict` for the job asked about.
pub(super) fn what_would_change(asked: &Asked<'_>, verdict: &Verdict) -> Vec<String> {
    let Asked { q, j, .. } = *asked;
    let mut changes = Vec::new();
    if j.preemption_count() > 0
        && let Some(over) = analysis::over_own_limit(q, j)
    {
        // The cause of its preemptions first: no priority ends them.
        changes.push(format!("the cause of its preemptions: it {}", over.cause()));
        changes.extend(over.remedies());
    }
    changes.extend(priority_changes(asked, verdict));
    changes.extend(capacity_changes(asked));
    changes
}

/// The priority that puts it first (and what the preview says it then does), or whether a
/// higher one makes room by in-share preemption.
fn priority_changes(asked: &Asked<'_>, verdict: &Verdict) -> Vec<String> {
    let Asked {
        q,
        j,
        share,
        s,
        state,
        queue,
        pos,
    } = *asked;
    let ty = j.instance_type.as_str();
    let mut changes = Vec::new();
    let p = pos.unwrap_or(0);
    if p > 0
        && let Some(mine) = key_of(q, &j.id)
        && let Some(first) = queue.first()
    {
        let ahead = queue.iter().take(p).filter_map(|w| key_of(q, &w.job_id));
        match priority_to_lead(mine, ahead) {
            Some(lead) => {
                let effect = preview::preview(q, &j.id, lead)
                    .map(|pv| format!(" (preview: {})", pv.effect_text()))
                    .unwrap_or_default();
                changes.push(format!(
                    "priority {lead} puts it first in share {}'s queue for {ty}{effect}",
                    j.share
                ));
            }
            None => changes.push(format!(
                "no priority up to {MAX_PRIORITY} puts it ahead of {}",
                first.name
            )),
        }
    } else if matches!(verdict, Verdict::NoRoom) {
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
                .then(|| format!("priority {p} makes room (preview: {})", pv.effect_text()))
            });
            changes.push(found.unwrap_or_else(|| {
                format!(
                    "no priority makes room by in-share preemption: share {}'s lower-priority jobs do not hold enough",
                    j.share
                )
            }));
        } else {
            changes.push(format!(
                "a higher priority does not make room: in-share preemption is off for share {}",
                j.share
            ));
        }
    }
    changes
}

/// The capacity that frees next, as far as the snapshot tells.
fn capacity_changes(asked: &Asked<'_>) -> Vec<String> {
    let Asked { q, j, s, state, .. } = *asked;
    let mut changes = Vec::new();
    let ty = j.instance_type.as_str();
    let preempting: Vec<u32> = state
        .holders
        .iter()
        .flatten()
        .filter(|h| h.preempting)
        .map(|h| h.id)
        .collect();
    let releasing_names: Vec<String> = preempting.iter().map(|&i| name_of(q, i)).collect();
    // Whose end frees capacity it can use: its own share's jobs; others' too when it may
    // borrow, or fits its own limit (capacity lent out comes back).
    let l = &state.ledger;
    let anyone =
        l.borrows_of(s) || l.used_of(s) as u64 + j.instance_count as u64 <= l.own_of(s) as u64;
    let held: Vec<String> = state
        .holders
        .iter()
        .enumerate()
        .filter(|&(t, _)| anyone || t == s)
        .flat_map(|(_, hs)| hs)
        .filter(|h| !h.preempting)
        .map(|h| name_of(q, h.id))
        .collect();
    if !preempting.is_empty() {
        let n: u32 = state.releasing.iter().sum();
        changes.push(format!(
            "capacity freeing next: {n} {ty} being given back by the preemption of {}; when: unknown (the preemption delay is the service's)",
            names(&releasing_names)
        ));
    }
    if !held.is_empty() {
        changes.push(format!(
            "capacity freeing later: when one of the {} running {ty} job(s) ends ({}); when: unknown (the snapshot has no run-time limits)",
            held.len(),
            names(&held)
        ));
    }
    changes
}
