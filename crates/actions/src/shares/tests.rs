//! Tests of `shares apply`: the run, its audit records and the read-back.

use super::live::share_change;
use super::*;
use quotatop_analysis::shares_plan::plan;
use quotatop_model::ShareState;
use quotatop_model::{CapacityLimit, QuotaShare, SharingConfig};
use quotatop_store::audit::Verdict;
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
            batch: None,
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
