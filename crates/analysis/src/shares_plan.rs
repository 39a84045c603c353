//! The plan of a quota-share change: the live shares against a proposed set, as the API calls
//! that take one to the other (`quotatop shares plan / apply`), field by field.

use quotatop_model::{CapacityLimit, QuotaShare, ShareState};

/// When a quota-share change needs a change-record id (`[shares]` in the config file).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SharesPolicy {
    /// Any limit change (a share created or deleted, its capacity limits, strategy or borrow
    /// limit changed) needs `--change-record`.
    pub change_record_for_limits: bool,
}

impl Default for SharesPolicy {
    fn default() -> Self {
        Self {
            change_record_for_limits: true,
        }
    }
}

impl SharesPolicy {
    /// The policy as the audit record keeps it, with where it came from.
    pub fn describe(&self, source: &str) -> String {
        format!(
            "shares.change_record_for_limits={} ({source})",
            self.change_record_for_limits
        )
    }

    /// Why the plan needs a change record it was not given, naming the steps; `None` when it
    /// may go ahead.
    pub fn missing_change_record(
        &self,
        steps: &[Step],
        change_record: Option<&str>,
    ) -> Option<String> {
        if !self.change_record_for_limits || change_record.is_some_and(|c| !c.trim().is_empty()) {
            return None;
        }
        let limits: Vec<String> = steps
            .iter()
            .filter(|s| s.changes_limits())
            .map(|s| format!("{} {}", s.verb(), s.share()))
            .collect();
        (!limits.is_empty()).then(|| {
            format!(
                "a change record is required for limit changes ({}): pass --change-record (policy [shares] change_record_for_limits)",
                limits.join(", ")
            )
        })
    }
}

/// One field an update changes, in the API's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldChange {
    /// `capacityLimits`, `strategy`, `borrowLimit`, `inSharePreemption`, `state`.
    pub field: &'static str,
    pub before: String,
    pub after: String,
}

/// One API call of the plan.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// CreateQuotaShare.
    Create(QuotaShare),
    /// UpdateQuotaShare with the changed fields (`after` is the whole share as it will be).
    Update {
        before: QuotaShare,
        after: QuotaShare,
        fields: Vec<FieldChange>,
    },
    /// UpdateQuotaShare to DISABLED, before deleting a share the file no longer has.
    Disable(QuotaShare),
    /// DeleteQuotaShare (terminates the share's jobs).
    Delete(QuotaShare),
}

impl Step {
    /// The API operation.
    pub fn call(&self) -> &'static str {
        match self {
            Step::Create(_) => "CreateQuotaShare",
            Step::Update { .. } | Step::Disable(_) => "UpdateQuotaShare",
            Step::Delete(_) => "DeleteQuotaShare",
        }
    }

    /// The share acted on.
    pub fn share(&self) -> &str {
        match self {
            Step::Create(s) | Step::Disable(s) | Step::Delete(s) => &s.name,
            Step::Update { after, .. } => &after.name,
        }
    }

    /// What the plan calls the step: `create`, `update`, `disable`, `delete`.
    pub fn verb(&self) -> &'static str {
        match self {
            Step::Create(_) => "create",
            Step::Update { .. } => "update",
            Step::Disable(_) => "disable",
            Step::Delete(_) => "delete",
        }
    }

    /// Whether the step changes what a share may hold: a share created or deleted, or its
    /// capacity limits, strategy or borrow limit changed (the change-record policy's "limit
    /// change").
    pub fn changes_limits(&self) -> bool {
        match self {
            Step::Create(_) | Step::Delete(_) => true,
            Step::Disable(_) => false,
            Step::Update { fields, .. } => fields
                .iter()
                .any(|f| matches!(f.field, "capacityLimits" | "strategy" | "borrowLimit")),
        }
    }

    /// The values that matter, in words (the audit record's `detail`).
    pub fn detail(&self) -> String {
        match self {
            Step::Create(s) => describe(s),
            Step::Update { fields, .. } => fields
                .iter()
                .map(|f| format!("{}: {} -> {}", f.field, f.before, f.after))
                .collect::<Vec<_>>()
                .join("; "),
            Step::Disable(_) => "state: ENABLED -> DISABLED".to_string(),
            Step::Delete(s) => format!("deleted (was {})", describe(s)),
        }
    }
}

/// `ml.g5.2xlarge 4, ml.p4d.24xlarge 2` (instance-type order).
pub fn limits_text(ls: &[CapacityLimit]) -> String {
    let mut v: Vec<&CapacityLimit> = ls.iter().collect();
    v.sort_by(|a, b| a.instance_type.cmp(&b.instance_type));
    if v.is_empty() {
        return "(none)".to_string();
    }
    v.iter()
        .map(|l| format!("{} {}", l.instance_type, l.max_capacity))
        .collect::<Vec<_>>()
        .join(", ")
}

fn borrow_text(s: &QuotaShare) -> String {
    match s.sharing.borrow_limit {
        _ if !s.sharing.strategy.borrows() && s.sharing.borrow_limit.is_none() => "-".to_string(),
        Some(quotatop_model::UNLIMITED_BORROW) | None => "-1 (unlimited)".to_string(),
        Some(p) => format!("{p}%"),
    }
}

/// A share in one line: `capacityLimits ml.p4d.24xlarge 4; LEND_AND_BORROW borrowLimit 200%;
/// inSharePreemption ENABLED; ENABLED`.
pub fn describe(s: &QuotaShare) -> String {
    let mut out = format!(
        "capacityLimits {}; strategy {}",
        limits_text(&s.capacity_limits),
        s.sharing.strategy.as_str()
    );
    if s.sharing.strategy.borrows() {
        out.push_str(&format!(" borrowLimit {}", borrow_text(s)));
    }
    out.push_str(&format!(
        "; inSharePreemption {}; state {}",
        s.in_share_preemption.as_str(),
        s.state.as_str()
    ));
    out
}

/// One field of a share as [`FieldChange`] words it (`capacityLimits`, `strategy`,
/// `borrowLimit`, `inSharePreemption`, `state`); `None` for any other name.
pub fn field_text(s: &QuotaShare, field: &str) -> Option<String> {
    Some(match field {
        "capacityLimits" => limits_text(&s.capacity_limits),
        "strategy" => s.sharing.strategy.as_str().to_string(),
        "borrowLimit" => borrow_text(s),
        "inSharePreemption" => s.in_share_preemption.as_str().to_string(),
        "state" => s.state.as_str().to_string(),
        _ => return None,
    })
}

/// The fields of `after` that differ from `before`.
pub fn field_changes(before: &QuotaShare, after: &QuotaShare) -> Vec<FieldChange> {
    let mut out = Vec::new();
    let sorted = |ls: &[CapacityLimit]| {
        let mut v = ls.to_vec();
        v.sort_by(|a, b| a.instance_type.cmp(&b.instance_type));
        v
    };
    if sorted(&before.capacity_limits) != sorted(&after.capacity_limits) {
        out.push(FieldChange {
            field: "capacityLimits",
            before: limits_text(&before.capacity_limits),
            after: limits_text(&after.capacity_limits),
        });
    }
    if before.sharing.strategy != after.sharing.strategy {
        out.push(FieldChange {
            field: "strategy",
            before: before.sharing.strategy.as_str().to_string(),
            after: after.sharing.strategy.as_str().to_string(),
        });
    }
    if borrow_text(before) != borrow_text(after) {
        out.push(FieldChange {
            field: "borrowLimit",
            before: borrow_text(before),
            after: borrow_text(after),
        });
    }
    if before.in_share_preemption != after.in_share_preemption {
        out.push(FieldChange {
            field: "inSharePreemption",
            before: before.in_share_preemption.as_str().to_string(),
            after: after.in_share_preemption.as_str().to_string(),
        });
    }
    if before.state != after.state {
        out.push(FieldChange {
            field: "state",
            before: before.state.as_str().to_string(),
            after: after.state.as_str().to_string(),
        });
    }
    out
}

/// The calls that take `live` to `proposed`, in the order they are made: updates, then the
/// shares the proposal no longer has (disabled first unless already, then deleted: AWS deletes
/// only a disabled share), then new shares (so a rename never needs a 21st share).
pub fn plan(live: &[QuotaShare], proposed: &[QuotaShare]) -> Vec<Step> {
    let mut updates = Vec::new();
    let mut removals = Vec::new();
    let mut creates = Vec::new();
    for p in proposed {
        match live.iter().find(|l| l.name == p.name) {
            Some(l) => {
                let fields = field_changes(l, p);
                if !fields.is_empty() {
                    updates.push(Step::Update {
                        before: l.clone(),
                        after: p.clone(),
                        fields,
                    });
                }
            }
            None => creates.push(Step::Create(p.clone())),
        }
    }
    for l in live {
        if !proposed.iter().any(|p| p.name == l.name) {
            if l.state != ShareState::Disabled {
                removals.push(Step::Disable(l.clone()));
            }
            removals.push(Step::Delete(l.clone()));
        }
    }
    updates.into_iter().chain(removals).chain(creates).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use quotatop_model::SharingConfig;

    const P4: &str = "ml.p4d.24xlarge";

    fn share(name: &str, n: u32, sharing: SharingConfig) -> QuotaShare {
        QuotaShare::new(name, vec![CapacityLimit::new(P4, n)], sharing)
    }

    #[test]
    fn same_shares_need_no_call_whatever_the_limit_order() {
        let mut a = share("a", 4, SharingConfig::lend());
        a.capacity_limits
            .push(CapacityLimit::new("ml.g5.2xlarge", 2));
        let mut b = a.clone();
        b.capacity_limits.reverse();
        assert!(plan(&[a], &[b]).is_empty());
    }

    #[test]
    fn updates_then_disable_and_delete_then_creates_field_by_field() {
        let live = vec![
            share("a", 4, SharingConfig::lend()),
            share("old", 2, SharingConfig::reserve()),
        ];
        let proposed = vec![
            share("a", 6, SharingConfig::lend_and_borrow(50)).with_in_share_preemption(true),
            share("new", 2, SharingConfig::reserve()),
        ];
        let steps = plan(&live, &proposed);
        let verbs: Vec<(&str, &str)> = steps.iter().map(|s| (s.verb(), s.share())).collect();
        assert_eq!(
            verbs,
            vec![
                ("update", "a"),
                ("disable", "old"),
                ("delete", "old"),
                ("create", "new")
            ]
        );
        assert_eq!(
            steps[0].detail(),
            "capacityLimits: ml.p4d.24xlarge 4 -> ml.p4d.24xlarge 6; strategy: LEND -> LEND_AND_BORROW; \
             borrowLimit: - -> 50%; inSharePreemption: DISABLED -> ENABLED"
        );
        assert!(steps[0].changes_limits() && !steps[1].changes_limits());
        assert!(steps[2].changes_limits() && steps[3].changes_limits());
        let only_preemption = plan(
            &live[..1],
            &[share("a", 4, SharingConfig::lend()).with_in_share_preemption(true)],
        );
        assert!(!only_preemption[0].changes_limits());
    }

    #[test]
    fn a_disabled_share_is_deleted_without_disabling_again() {
        let mut old = share("old", 2, SharingConfig::reserve());
        old.state = ShareState::Disabled;
        let steps = plan(&[old], &[]);
        assert_eq!(steps.len(), 1);
        assert_eq!(steps[0].call(), "DeleteQuotaShare");
    }
}
