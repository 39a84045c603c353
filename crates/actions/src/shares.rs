//! Carrying out a confirmed quota-share plan (`quotatop shares apply`): per call, an intent
//! record (fsynced) in the audit log, the API call, an outcome record; the first failure stops
//! the run, and the report says what was applied, what failed and what was not attempted.

use std::collections::BTreeMap;
use std::future::Future;

use quotatop_analysis::shares_plan::{Step, describe, field_changes, field_text};
use quotatop_aws::batch::{BatchClient, ShareChange};
use quotatop_model::{QuotaShare, ShareState};
use quotatop_store::audit::{Action, AuditRecord, ChangeLog, Operator, Outcome, Verdict};

use super::{ActionError, ApiFailure};
use crate::apply::{intent_record, principal_or_why, record_outcome};

/// The calls a share plan needs; implemented by the Batch client ([`LiveShares`]) and by fakes.
pub trait SharesApi {
    /// Makes the step's call; returns the request id when the service gave one.
    fn run_step(
        &self,
        step: &Step,
    ) -> impl Future<Output = Result<Option<String>, ApiFailure>> + Send;

    /// The AWS principal the change is made as; `Ok(None)` when not known here.
    fn caller_identity(&self) -> impl Future<Output = Result<Option<String>, ApiFailure>> + Send {
        std::future::ready(Ok(None))
    }

    /// The queue's share `name` as it is now (`None`: no such share), read to see what a
    /// failed call did and whether a share changed since the plan.
    fn read_share(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<Option<QuotaShare>, ApiFailure>> + Send;
}

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
async fn read_back<A: SharesApi>(api: &A, step: &Step, error: String) -> Outcome {
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

/// Everything the audit records need besides the steps: the one change context of every
/// audited change, and the run that groups this plan's records.
#[derive(Debug, Clone)]
pub struct SharesContext {
    pub change: crate::ChangeContext,
    /// Groups this run's records (`audit list` shows it).
    pub run_id: String,
}

/// What happened to each step.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ApplyReport {
    /// The steps called, with what happened, in order (only the last can have failed): the
    /// API's answer, or, when it answered with an error, what the share read back showed.
    pub done: Vec<(Step, Outcome)>,
    /// The steps not attempted because an earlier one failed (or its intent could not be
    /// written).
    pub not_attempted: Vec<Step>,
    /// Why the run stopped before calling a step: the audit log refused its intent, or refused
    /// an outcome after the call.
    pub audit_error: Option<String>,
    /// The step not called because its share changed since the plan (or could not be read
    /// just before the call), and what changed; it is also in `not_attempted`.
    pub changed: Option<(Step, String)>,
}

impl ApplyReport {
    /// This report, the run stopped before `rest` (not attempted).
    fn stopped(mut self, rest: &[Step]) -> Self {
        self.not_attempted = rest.to_vec();
        self
    }

    /// Whether every step was called and succeeded.
    pub fn complete(&self) -> bool {
        self.not_attempted.is_empty()
            && self.audit_error.is_none()
            && self.changed.is_none()
            && self.done.iter().all(|(_, o)| landed(o))
    }
}

/// The intent record of step `i` of `steps`, with a new change id.
fn step_intent(ctx: &SharesContext, operator: &Operator, steps: &[Step], i: usize) -> AuditRecord {
    let step = &steps[i];
    AuditRecord {
        share: step.share().to_string(),
        preview: format!(
            "step {} of {}: {} {}",
            i + 1,
            steps.len(),
            step.verb(),
            step.share()
        ),
        action: Some(Action {
            call: step.call().to_string(),
            target: step.share().to_string(),
            detail: step.detail(),
            run_id: Some(ctx.run_id.clone()),
        }),
        ..intent_record(
            &ctx.change,
            operator.clone(),
            quotatop_store::audit::new_change_id(),
        )
    }
}

/// Applies the steps in order, each with an intent before and an outcome after its call;
/// stops at the first failure. Refuses in read-only mode before anything is written.
pub async fn apply_plan<A: SharesApi>(
    api: &A,
    log: &ChangeLog,
    ctx: &SharesContext,
    steps: &[Step],
) -> Result<ApplyReport, ActionError> {
    if ctx.change.read_only {
        return Err(ActionError::ReadOnly);
    }
    let mut operator = ctx.change.operator.clone();
    if operator.aws_principal.is_none() {
        operator.aws_principal = principal_or_why(api.caller_identity().await);
    }
    let mut report = ApplyReport::default();
    for (i, step) in steps.iter().enumerate() {
        let mut record = step_intent(ctx, &operator, steps, i);
        let change_id = record.change_id.clone();
        // Held from before the intent until after the outcome (`audit reconcile` leaves the
        // change alone while this writer lives).
        let in_flight = match log.begin_change(&change_id) {
            Ok(g) => g,
            Err(e) => {
                report.audit_error = Some(quotatop_model::error_chain(&e));
                return Ok(report.stopped(&steps[i..]));
            }
        };
        if let Err(e) = log.append(record.clone()) {
            report.audit_error = Some(format!(
                "could not write the intent, so {} {} was not called: {}",
                step.call(),
                step.share(),
                quotatop_model::error_chain(&e)
            ));
            return Ok(report.stopped(&steps[i..]));
        }
        // Compare, then swap: the share is read again just before its call, and the call is
        // made only if it is still as planned (another operator, or a second `shares apply`
        // from another host, may have changed it since). The refusal is the intent's outcome.
        let changed = match api.read_share(step.share()).await {
            Ok(live) => changed_since_plan(step, live.as_ref()),
            Err(why) => Some(format!("it could not be read just before the call ({why})")),
        };
        if let Some(what) = changed {
            let what = format!("{} changed since the plan: {what}", step.share());
            record_outcome(
                &mut record,
                Outcome::Failed {
                    error: format!("not called: {what}"),
                },
            );
            let written = log.append(record);
            drop(in_flight);
            if let Err(e) = written {
                report.audit_error = Some(format!(
                    "{} {} was not called, and its outcome could not be written to the audit log: {}",
                    step.call(),
                    step.share(),
                    quotatop_model::error_chain(&e)
                ));
            }
            report.changed = Some((step.clone(), what));
            return Ok(report.stopped(&steps[i..]));
        }
        let outcome = match api.run_step(step).await {
            Ok(request_id) => Outcome::Succeeded { request_id },
            // An error is not proof that nothing happened: a call whose answer was lost is
            // retried and meets its own change ("already exists"). Read back what is true.
            Err(ApiFailure(error)) => read_back(api, step, error).await,
        };
        record_outcome(&mut record, outcome.clone());
        let written = log.append(record);
        drop(in_flight);
        let failed = !landed(&outcome);
        report.done.push((step.clone(), outcome));
        if let Err(e) = written {
            report.audit_error = Some(format!(
                "{} {} was called, but its outcome could not be written to the audit log: {}",
                step.call(),
                step.share(),
                quotatop_model::error_chain(&e)
            ));
            return Ok(report.stopped(&steps[i + 1..]));
        }
        if failed {
            return Ok(report.stopped(&steps[i + 1..]));
        }
    }
    Ok(report)
}

/// The Batch client on one queue, with the ARNs of its live shares.
pub struct LiveShares<'a> {
    pub client: &'a BatchClient,
    pub queue: String,
    /// Share name → ARN.
    pub arns: BTreeMap<String, String>,
}

impl LiveShares<'_> {
    fn arn(&self, name: &str) -> Result<&str, ApiFailure> {
        self.arns
            .get(name)
            .map(String::as_str)
            .ok_or_else(|| ApiFailure(format!("no ARN known for quota share {name}")))
    }
}

/// The UpdateQuotaShare fields of an update step: only those that change.
pub fn share_change(step: &Step) -> ShareChange {
    match step {
        Step::Update { after, fields, .. } => {
            let has = |f: &str| fields.iter().any(|c| c.field == f);
            ShareChange {
                capacity_limits: has("capacityLimits").then(|| after.capacity_limits.clone()),
                sharing: (has("strategy") || has("borrowLimit")).then_some(after.sharing),
                in_share_preemption: has("inSharePreemption")
                    .then(|| after.in_share_preemption.enabled()),
                state: has("state").then_some(after.state),
            }
        }
        Step::Disable(_) => ShareChange {
            state: Some(ShareState::Disabled),
            ..ShareChange::default()
        },
        Step::Create(_) | Step::Delete(_) => ShareChange::default(),
    }
}

impl SharesApi for LiveShares<'_> {
    async fn run_step(&self, step: &Step) -> Result<Option<String>, ApiFailure> {
        let fail = |e: quotatop_aws::batch::BatchError| ApiFailure(e.to_string());
        let id = match step {
            Step::Create(s) => self
                .client
                .create_quota_share(&self.queue, s)
                .await
                .map_err(fail)?,
            Step::Update { .. } | Step::Disable(_) => self
                .client
                .update_quota_share(self.arn(step.share())?, &share_change(step))
                .await
                .map_err(fail)?,
            Step::Delete(_) => self
                .client
                .delete_quota_share(self.arn(step.share())?)
                .await
                .map_err(fail)?,
        };
        Ok(Some(id).filter(|i| !i.is_empty()))
    }

    async fn caller_identity(&self) -> Result<Option<String>, ApiFailure> {
        self.client
            .caller_identity()
            .await
            .map(Some)
            .map_err(|e| ApiFailure(e.to_string()))
    }

    async fn read_share(&self, name: &str) -> Result<Option<QuotaShare>, ApiFailure> {
        let live = self
            .client
            .list_live_shares(&self.queue)
            .await
            .map_err(|e| ApiFailure(e.to_string()))?;
        Ok(live
            .into_iter()
            .find(|s| s.share.name == name)
            .map(|s| s.share))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quotatop_analysis::shares_plan::plan;
    use quotatop_model::{CapacityLimit, QuotaShare, SharingConfig};
    use quotatop_store::audit::{AuditLog, AwsContext, Operator, RecordKind, read_records};
    use std::sync::Mutex;

    struct Fake {
        fail_on: usize,
        /// A failed call lands all the same (its answer was lost).
        lands_anyway: bool,
        calls: Mutex<Vec<String>>,
        /// The audit log, to see what is on disk when a call is made.
        log: Option<std::path::PathBuf>,
        /// The queue's shares: what a read finds; a call that lands changes them.
        live: Mutex<Vec<QuotaShare>>,
        /// Put in place by someone else just after the first call.
        meddle: Option<QuotaShare>,
    }

    fn fake(fail_on: usize, log: Option<std::path::PathBuf>, live: Vec<QuotaShare>) -> Fake {
        Fake {
            fail_on,
            lands_anyway: false,
            calls: Mutex::new(Vec::new()),
            log,
            live: Mutex::new(live),
            meddle: None,
        }
    }

    fn put(live: &mut Vec<QuotaShare>, s: QuotaShare) {
        live.retain(|l| l.name != s.name);
        live.push(s);
    }

    impl SharesApi for Fake {
        fn run_step(
            &self,
            step: &Step,
        ) -> impl Future<Output = Result<Option<String>, ApiFailure>> + Send {
            let mut calls = self.calls.lock().unwrap();
            // The step's intent must already be on disk when the API is called.
            let on_disk = self
                .log
                .as_ref()
                .map(|p| read_records(p).map(|r| r.len()).unwrap_or(0));
            calls.push(match on_disk {
                Some(n) => format!("{} {} @{n}", step.call(), step.share()),
                None => format!("{} {}", step.call(), step.share()),
            });
            let fails = calls.len() == self.fail_on;
            let mut live = self.live.lock().unwrap();
            if !fails || self.lands_anyway {
                match step {
                    Step::Create(s) => put(&mut live, s.clone()),
                    Step::Update { after, .. } => put(&mut live, after.clone()),
                    Step::Disable(s) => {
                        let mut d = s.clone();
                        d.state = ShareState::Disabled;
                        put(&mut live, d);
                    }
                    Step::Delete(s) => live.retain(|l| l.name != s.name),
                }
            }
            if calls.len() == 1
                && let Some(m) = &self.meddle
            {
                put(&mut live, m.clone());
            }
            let r = if fails {
                Err(ApiFailure("ServerException: boom".into()))
            } else {
                Ok(Some(format!("req-{}", calls.len())))
            };
            std::future::ready(r)
        }

        fn read_share(
            &self,
            name: &str,
        ) -> impl Future<Output = Result<Option<QuotaShare>, ApiFailure>> + Send {
            let live = self.live.lock().unwrap();
            std::future::ready(Ok(live.iter().find(|s| s.name == name).cloned()))
        }
    }

    fn share(name: &str, n: u32) -> QuotaShare {
        QuotaShare::new(
            name,
            vec![CapacityLimit::new("ml.p4d.24xlarge", n)],
            SharingConfig::lend(),
        )
    }

    fn ctx(read_only: bool) -> SharesContext {
        SharesContext {
            change: crate::ChangeContext {
                operator: Operator {
                    user: "u".into(),
                    host: "h".into(),
                    ..Default::default()
                },
                aws: AwsContext::default(),
                queue: "q".into(),
                justification: "rebalance".into(),
                change_record: Some("CHG-1".into()),
                read_only,
                policy: None,
                class_policy: None,
            },
            run_id: "run-1".into(),
        }
    }

    fn temp() -> (tempfile::TempDir, std::path::PathBuf) {
        // Removed when the test ends: the directory is held beside the path.
        let dir = tempfile::Builder::new()
            .prefix("quotatop-shares-apply-")
            .tempdir()
            .unwrap();
        let path = dir.path().join("audit.jsonl");
        (dir, path)
    }

    fn block<F: Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn a_failure_stops_the_run_and_the_log_says_what_was_done() {
        let steps = plan(
            &[share("a", 1), share("old", 1)],
            &[share("a", 2), share("new", 1)],
        );
        assert_eq!(steps.len(), 4);
        let (_dir, path) = temp();
        let api = fake(2, Some(path.clone()), vec![share("a", 1), share("old", 1)]);
        let r = block(apply_plan(
            &api,
            &AuditLog::new(&path).into(),
            &ctx(false),
            &steps,
        ))
        .unwrap();
        assert!(!r.complete());
        assert_eq!(r.done.len(), 2);
        assert!(matches!(r.done[0].1, Outcome::Succeeded { .. }));
        assert!(matches!(
            &r.done[1].1,
            Outcome::Reconciled { verdict: Verdict::DidNotLand, call_error: Some(e), observed: Some(o), .. }
                if e.contains("boom") && o.ends_with("state ENABLED")
        ));
        assert_eq!(r.not_attempted, steps[2..].to_vec());
        assert_eq!(
            api.calls.lock().unwrap().as_slice(),
            &["UpdateQuotaShare a @1", "UpdateQuotaShare old @3"]
        );
        let recs: Vec<AuditRecord> = read_records(&path)
            .unwrap()
            .into_iter()
            .map(|r| r.1)
            .collect();
        assert_eq!(recs.len(), 4);
        let kinds: Vec<_> = recs.iter().map(|r| r.kind).collect();
        assert_eq!(
            kinds,
            [
                RecordKind::Intent,
                RecordKind::Outcome,
                RecordKind::Intent,
                RecordKind::Outcome
            ]
        );
        let a = recs[0].action.as_ref().unwrap();
        assert_eq!(a.call, "UpdateQuotaShare");
        assert_eq!(a.run_id.as_deref(), Some("run-1"));
        assert_eq!(
            a.detail,
            "capacityLimits: ml.p4d.24xlarge 1 -> ml.p4d.24xlarge 2"
        );
        assert!(matches!(
            recs[3].outcome,
            Some(Outcome::Reconciled {
                verdict: Verdict::DidNotLand,
                ..
            })
        ));
        assert_eq!(
            recs[2].action.as_ref().unwrap().detail,
            "state: ENABLED -> DISABLED"
        );
    }

    #[test]
    fn a_call_that_failed_but_landed_is_recorded_as_landed_and_the_run_goes_on() {
        // The create's answer was lost; the SDK's retry met "already exists". The share is
        // there as planned, so the change happened.
        let steps = plan(&[], &[share("new", 1), share("next", 2)]);
        let (_dir, path) = temp();
        let api = Fake {
            lands_anyway: true,
            ..fake(1, None, Vec::new())
        };
        let r = block(apply_plan(
            &api,
            &AuditLog::new(&path).into(),
            &ctx(false),
            &steps,
        ))
        .unwrap();
        assert!(r.complete(), "{r:?}");
        assert_eq!(r.done.len(), 2);
        assert!(matches!(
            &r.done[0].1,
            Outcome::Reconciled { verdict: Verdict::Landed, call_error: Some(e), .. } if e.contains("boom")
        ));
        let recs = read_records(&path).unwrap();
        assert!(matches!(
            recs[1].1.outcome,
            Some(Outcome::Reconciled {
                verdict: Verdict::Landed,
                ..
            })
        ));
        // Configured otherwise than planned: not proof either way.
        let mut other = share("new", 3);
        other.name = "new".into();
        assert_eq!(
            judge("CreateQuotaShare", &steps[0].detail(), Some(&other)),
            Verdict::Undecidable
        );
        assert_eq!(
            judge("CreateQuotaShare", &steps[0].detail(), None),
            Verdict::DidNotLand
        );
    }

    #[test]
    fn a_share_changed_since_the_plan_is_not_called_and_the_audit_says_what_changed() {
        let steps = plan(
            &[share("a", 1), share("b", 1)],
            &[share("a", 2), share("b", 2)],
        );
        let (_dir, path) = temp();
        // Someone sets b to 5 while a's call is under way.
        let api = Fake {
            meddle: Some(share("b", 5)),
            ..fake(0, None, vec![share("a", 1), share("b", 1)])
        };
        let r = block(apply_plan(
            &api,
            &AuditLog::new(&path).into(),
            &ctx(false),
            &steps,
        ))
        .unwrap();
        assert!(!r.complete());
        assert_eq!(
            api.calls.lock().unwrap().as_slice(),
            &["UpdateQuotaShare a"]
        );
        let (step, what) = r.changed.clone().unwrap();
        assert_eq!(step, steps[1]);
        assert_eq!(
            what,
            "b changed since the plan: capacityLimits planned from ml.p4d.24xlarge 1, now ml.p4d.24xlarge 5"
        );
        assert_eq!(r.not_attempted, steps[1..].to_vec());
        // b keeps the other writer's value, and the log pairs b's intent with the refusal.
        let live = api.live.lock().unwrap().clone();
        assert!(live.contains(&share("b", 5)), "{live:?}");
        let recs = read_records(&path).unwrap();
        assert_eq!(recs.len(), 4);
        assert!(matches!(
            &recs[3].1.outcome,
            Some(Outcome::Failed { error }) if error == &format!("not called: {what}")
        ));
        // A create meets a share that appeared; a delete one already gone.
        assert!(
            changed_since_plan(&plan(&[], &[share("c", 1)])[0], Some(&share("c", 1)))
                .unwrap()
                .starts_with("it exists now")
        );
        let gone = plan(&[share("d", 1)], &[]);
        assert_eq!(
            changed_since_plan(&gone[1], None).as_deref(),
            Some("it no longer exists")
        );
        // The delete after the run's own disable: the state alone differs, which is expected.
        let mut disabled = share("d", 1);
        disabled.state = ShareState::Disabled;
        assert_eq!(changed_since_plan(&gone[1], Some(&disabled)), None);
        assert!(changed_since_plan(&gone[0], Some(&disabled)).is_some());
    }

    #[test]
    fn read_back_judges_updates_and_deletes_field_by_field() {
        let before = share("a", 1);
        let mut after = share("a", 2);
        after.in_share_preemption = quotatop_model::InSharePreemption::Enabled;
        let steps = plan(std::slice::from_ref(&before), std::slice::from_ref(&after));
        let d = steps[0].detail();
        assert_eq!(judge("UpdateQuotaShare", &d, Some(&after)), Verdict::Landed);
        assert_eq!(
            judge("UpdateQuotaShare", &d, Some(&before)),
            Verdict::DidNotLand
        );
        // Half of it: someone else changed one field.
        let mut half = before.clone();
        half.in_share_preemption = quotatop_model::InSharePreemption::Enabled;
        assert_eq!(
            judge("UpdateQuotaShare", &d, Some(&half)),
            Verdict::Undecidable
        );
        assert_eq!(judge("UpdateQuotaShare", &d, None), Verdict::Undecidable);
        let gone = plan(std::slice::from_ref(&before), &[]);
        let del = gone.last().unwrap();
        assert_eq!(judge(del.call(), &del.detail(), None), Verdict::Landed);
        assert_eq!(
            judge(del.call(), &del.detail(), Some(&before)),
            Verdict::DidNotLand
        );
    }

    #[test]
    fn read_only_refuses_before_writing() {
        let (_dir, path) = temp();
        let api = fake(0, None, Vec::new());
        let steps = plan(&[], &[share("a", 1)]);
        let e = block(apply_plan(
            &api,
            &AuditLog::new(&path).into(),
            &ctx(true),
            &steps,
        ))
        .unwrap_err();
        assert!(matches!(e, ActionError::ReadOnly));
        assert!(api.calls.lock().unwrap().is_empty() && !path.exists());
    }

    #[test]
    fn update_sends_only_the_changed_fields() {
        let mut after = share("a", 1);
        after.in_share_preemption = quotatop_model::InSharePreemption::Enabled;
        let steps = plan(&[share("a", 1)], &[after]);
        let c = share_change(&steps[0]);
        assert_eq!(c.in_share_preemption, Some(true));
        assert!(c.capacity_limits.is_none() && c.sharing.is_none() && c.state.is_none());
    }
}
