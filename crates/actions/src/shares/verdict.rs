//! The read-back's judgements: whether a share is still as its plan found it, whether a share
//! call took effect, and how `shares apply` words that.

use quotatop_analysis::shares_plan::{Step, describe, field_changes, field_text};
use quotatop_model::QuotaShare;
use quotatop_store::audit::{Outcome, Verdict};

use super::SharesApi;

/// What changed in `step`'s share since the plan was made, from the share read just before
/// the call (`None`: no such share); `None` when it is as the plan found it (compare-and-swap:
/// a step is only called on the share it was planned against).
pub fn changed_since_plan(step: &Step, live: Option<&QuotaShare>) -> Option<String> {
    let diff = |planned: &QuotaShare, now: &QuotaShare, skip_state: bool| {
        let d: Vec<String> = field_changes(planned, now)
            .into_iter()
            .filter(|f| !(skip_state && f.field == "state"))
            .map(|f| format!("{} planned from {}, now {}", f.field, f.before, f.after))
            .collect();
        (!d.is_empty()).then(|| d.join("; "))
    };
    match (step, live) {
        (Step::Create(_), None) => None,
        (Step::Create(_), Some(now)) => Some(format!("it exists now ({})", describe(now))),
        (_, None) => Some("it no longer exists".to_string()),
        (Step::Update { before, .. }, Some(now)) => diff(before, now, false),
        (Step::Disable(planned), Some(now)) => diff(planned, now, false),
        // Disabled by the step before it in this run: only the state may differ.
        (Step::Delete(planned), Some(now)) => diff(planned, now, true),
    }
}

/// Whether a share call (`call`, with the audit `detail` its step wrote) took effect, from the
/// share as read afterwards (`None`: no such share). One judgement for `shares apply`'s
/// read-back after a failed call and for `audit reconcile`:
/// - CreateQuotaShare: landed when the share exists as described, did not land when absent;
/// - UpdateQuotaShare: landed when every changed field has its new value, did not land when
///   every one still has its old value;
/// - DeleteQuotaShare: landed when the share is gone, did not land when it is still there;
/// - anything else (a share configured otherwise, a share gone under an update) is
///   undecidable.
pub fn judge(call: &str, detail: &str, live: Option<&QuotaShare>) -> Verdict {
    match (call, live) {
        ("CreateQuotaShare", None) => Verdict::DidNotLand,
        ("CreateQuotaShare", Some(s)) if describe(s) == detail => Verdict::Landed,
        ("DeleteQuotaShare", None) => Verdict::Landed,
        ("DeleteQuotaShare", Some(_)) => Verdict::DidNotLand,
        ("UpdateQuotaShare", Some(s)) => {
            let Some(fields) = update_fields(detail) else {
                return Verdict::Undecidable;
            };
            let all = |pick: fn(&(String, String, String)) -> &String| {
                fields
                    .iter()
                    .all(|f| field_text(s, &f.0).as_ref() == Some(pick(f)))
            };
            if all(|f| &f.2) {
                Verdict::Landed
            } else if all(|f| &f.1) {
                Verdict::DidNotLand
            } else {
                Verdict::Undecidable
            }
        }
        _ => Verdict::Undecidable,
    }
}

/// An update's detail (`field: before -> after; ...`) as (field, before, after); `None` when it
/// does not read so.
fn update_fields(detail: &str) -> Option<Vec<(String, String, String)>> {
    let fields: Option<Vec<_>> = detail
        .split("; ")
        .map(|part| {
            let (field, change) = part.split_once(": ")?;
            let (before, after) = change.split_once(" -> ")?;
            Some((field.to_string(), before.to_string(), after.to_string()))
        })
        .collect();
    fields.filter(|f| !f.is_empty())
}

/// How `shares apply` words a read-back's verdict.
pub fn verdict_words(v: Verdict) -> &'static str {
    match v {
        Verdict::Landed | Verdict::LandedLate => "landed (confirmed by read-back)",
        Verdict::DidNotLand => "did not land (confirmed by read-back)",
        Verdict::Undecidable | Verdict::JobGone => "unknown",
    }
}

/// Whether a step's outcome means the change is in place: the call succeeded, or it answered
/// with an error and the read-back found it had landed.
pub fn landed(o: &Outcome) -> bool {
    matches!(
        o,
        Outcome::Succeeded { .. }
            | Outcome::Reconciled {
                verdict: Verdict::Landed,
                ..
            }
    )
}

/// The outcome of a call that answered with `error`: the share read back and judged.
pub(super) async fn read_back<A: SharesApi>(api: &A, step: &Step, error: String) -> Outcome {
    let (verdict, observed) = match api.read_share(step.share()).await {
        Ok(live) => (
            judge(step.call(), &step.detail(), live.as_ref()),
            live.as_ref()
                .map(describe)
                .unwrap_or_else(|| "absent".to_string()),
        ),
        Err(why) => (
            Verdict::Undecidable,
            format!("could not read the share back: {why}"),
        ),
    };
    Outcome::Reconciled {
        verdict,
        observed_priority: None,
        observed: Some(observed),
        call_error: Some(error),
    }
}
