//! The audit view of exceptions: priority changes per operator and share, and jobs raised
//! repeatedly. It takes plain [`PriorityChange`] records so that any source can feed it: the
//! audit log (`audit/`, JSON lines) once it lands, or the journal's observed priority changes.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::model::Millis;

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

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditView {
    pub per_operator: Vec<OperatorChanges>,
    /// Jobs raised at least `min_raises` times in the window, most raised first.
    pub raised_repeatedly: Vec<RaisedJob>,
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
