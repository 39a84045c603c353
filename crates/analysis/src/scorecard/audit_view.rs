//! The audit view of exceptions: priority changes per operator and share, and jobs raised
//! repeatedly. It takes plain [`PriorityChange`] records so that any source can feed it: the
//! audit log (`audit/`, who and why), the journal's observed changes (every change, whoever
//! made it), or both joined by [`join_changes`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use quotatop_model::Millis;

use super::input::Window;

/// One change of a job's `schedulingPriority`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PriorityChange {
    pub at: Millis,
    pub job_id: String,
    pub share: String,
    /// Who made it (`None` when unknown, e.g. a change seen by the poller but not in the audit).
    pub operator: Option<String>,
    pub old: u32,
    pub new: u32,
    pub change_record: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperatorChanges {
    pub operator: String,
    pub share: String,
    pub changes: usize,
    pub raises: usize,
    /// Changes without a change-record id.
    pub without_change_record: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RaisedJob {
    pub job_id: String,
    pub share: String,
    pub raises: usize,
    pub from: u32,
    pub to: u32,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditView {
    pub per_operator: Vec<OperatorChanges>,
    /// Jobs raised at least `min_raises` times in the window, most raised first.
    pub raised_repeatedly: Vec<RaisedJob>,
}

/// Joins the changes the poller observed with those the audit log records. An audited change
/// and an observed one are the same when they name the same job and the same old and new
/// priority (each observation is used once, the nearest in time); the joined change keeps the
/// observed time and takes the audit's operator and change record. Audited changes the poller
/// never saw (no journal then) are kept with the audit's time; observed changes no audit
/// record explains (made outside quotatop) keep an unknown operator. Sorted by time.
pub fn join_changes(
    observed: &[PriorityChange],
    audited: &[PriorityChange],
) -> Vec<PriorityChange> {
    let mut used = vec![false; observed.len()];
    let mut out = Vec::with_capacity(observed.len() + audited.len());
    for a in audited {
        // The first of the nearest, as `min_by_key` returns it.
        let m = used
            .iter_mut()
            .zip(observed)
            .filter(|(u, o)| !**u && o.job_id == a.job_id && o.old == a.old && o.new == a.new)
            .min_by_key(|(_, o)| (o.at - a.at).abs());
        match m {
            Some((used, o)) => {
                *used = true;
                out.push(PriorityChange {
                    operator: a.operator.clone(),
                    change_record: a.change_record.clone(),
                    ..o.clone()
                });
            }
            None => out.push(a.clone()),
        }
    }
    out.extend(
        observed
            .iter()
            .zip(&used)
            .filter(|(_, u)| !**u)
            .map(|(o, _)| o.clone()),
    );
    out.sort_by(|a, b| a.at.cmp(&b.at).then(a.job_id.cmp(&b.job_id)));
    out
}

/// Groups the changes inside `window`.
pub fn audit_view(changes: &[PriorityChange], window: Window, min_raises: usize) -> AuditView {
    let mut ops: BTreeMap<(String, String), OperatorChanges> = BTreeMap::new();
    let mut jobs: BTreeMap<String, RaisedJob> = BTreeMap::new();
    let mut sorted: Vec<&PriorityChange> =
        changes.iter().filter(|c| window.contains(c.at)).collect();
    sorted.sort_by_key(|c| c.at);
    for c in sorted {
        let operator = c
            .operator
            .clone()
            .unwrap_or_else(|| "(unknown)".to_string());
        let raised = c.new > c.old;
        let o = ops
            .entry((operator.clone(), c.share.clone()))
            .or_insert_with(|| OperatorChanges {
                operator,
                share: c.share.clone(),
                changes: 0,
                raises: 0,
                without_change_record: 0,
            });
        o.changes += 1;
        o.raises += usize::from(raised);
        o.without_change_record += usize::from(c.change_record.is_none());
        let j = jobs.entry(c.job_id.clone()).or_insert_with(|| RaisedJob {
            job_id: c.job_id.clone(),
            share: c.share.clone(),
            raises: 0,
            from: c.old,
            to: c.new,
        });
        j.raises += usize::from(raised);
        j.to = c.new;
    }
    let mut raised: Vec<RaisedJob> = jobs
        .into_values()
        .filter(|j| j.raises >= min_raises.max(1))
        .collect();
    raised.sort_by(|a, b| b.raises.cmp(&a.raises).then(a.job_id.cmp(&b.job_id)));
    AuditView {
        per_operator: ops.into_values().collect(),
        raised_repeatedly: raised,
    }
}

#[cfg(test)]
mod join_tests {
    use super::*;

    fn ch(at: Millis, job: &str, op: Option<&str>, old: u32, new: u32) -> PriorityChange {
        PriorityChange {
            at,
            job_id: job.into(),
            share: "research".into(),
            operator: op.map(String::from),
            old,
            new,
            change_record: op.map(|_| "CR-1".to_string()),
        }
    }

    #[test]
    fn audited_and_observed_changes_join_by_job_and_values() {
        let observed = vec![
            ch(1_000, "a", None, 10, 900),
            ch(5_000, "a", None, 900, 2_000),
            ch(7_000, "b", None, 1, 2),
        ];
        let audited = vec![
            // Same change as the first observation (the audit clock is a little earlier).
            ch(900, "a", Some("oncall@host"), 10, 900),
            // The poller was not running for this one.
            ch(3_000, "c", Some("oncall@host"), 5, 50),
        ];
        let joined = join_changes(&observed, &audited);
        let view: Vec<(Millis, &str, Option<&str>)> = joined
            .iter()
            .map(|c| (c.at, c.job_id.as_str(), c.operator.as_deref()))
            .collect();
        assert_eq!(
            view,
            [
                (1_000, "a", Some("oncall@host")),
                (3_000, "c", Some("oncall@host")),
                (5_000, "a", None),
                (7_000, "b", None),
            ]
        );
        assert_eq!(joined[0].change_record.as_deref(), Some("CR-1"));
        // Nothing is counted twice, nothing lost.
        assert_eq!(join_changes(&observed, &[]), observed);
        assert_eq!(join_changes(&[], &audited), audited);
    }
}
