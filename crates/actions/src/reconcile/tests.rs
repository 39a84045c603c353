use super::*;
use crate::ApiFailure;
use quotatop_model::{JobStatus, QuotaShare};
use quotatop_store::audit::{AuditLog, AwsContext, JobRef, RecordKind};
use std::collections::HashMap;
use std::future::Future;

struct Jobs(HashMap<String, Result<Option<u32>, ApiFailure>>);

impl JobLookup for Jobs {
    fn job_priority(
        &self,
        job_id: &str,
    ) -> impl Future<Output = Result<Option<u32>, ApiFailure>> + Send {
        let r = self.0.get(job_id).cloned().unwrap_or(Ok(None));
        async move { r }
    }
}

fn intent(job: &str, old: u32, new: u32) -> AuditRecord {
    AuditRecord {
        v: audit::SCHEME,
        seq: 0,
        time: "2026-11-30T10:00:00.000Z".into(),
        kind: RecordKind::Intent,
        change_id: audit::new_change_id(),
        operator: Operator {
            user: "alice".into(),
            host: "ops-1".into(),
            ..Default::default()
        },
        aws: AwsContext::default(),
        queue: "q".into(),
        share: "s".into(),
        job: JobRef {
            id: job.into(),
            name: format!("{job}-name"),
            arn: format!("arn:{job}"),
        },
        old_priority: old,
        new_priority: new,
        justification: "why".into(),
        change_record: None,
        preview: String::new(),
        outcome: None,
        policy: None,
        repair: None,
        action: None,
        class_policy: None,
        batch_id: None,
        prev_hash: String::new(),
        hash: String::new(),
    }
}

/// A lookup of shares, jobs by name and job states.
struct World {
    shares: Vec<QuotaShare>,
    named: HashMap<String, Vec<String>>,
    states: HashMap<String, (JobStatus, bool)>,
}

impl JobLookup for World {
    async fn job_priority(&self, _job_id: &str) -> Result<Option<u32>, ApiFailure> {
        Err(ApiFailure("no priorities here".to_string()))
    }

    fn share(
        &self,
        _queue: &str,
        name: &str,
    ) -> impl Future<Output = Result<Option<QuotaShare>, ApiFailure>> + Send {
        let r = self.shares.iter().find(|s| s.name == name).cloned();
        async move { Ok(r) }
    }

    fn jobs_named(
        &self,
        _queue: &str,
        name: &str,
    ) -> impl Future<Output = Result<Vec<String>, ApiFailure>> + Send {
        let r = self.named.get(name).cloned().unwrap_or_default();
        async move { Ok(r) }
    }

    fn job_state(
        &self,
        job_id: &str,
    ) -> impl Future<Output = Result<Option<(JobStatus, bool)>, ApiFailure>> + Send {
        let r = self.states.get(job_id).copied();
        async move { Ok(r) }
    }
}

fn action_intent(call: &str, target: &str, detail: &str) -> AuditRecord {
    let mut r = intent("", 0, 0);
    r.job = JobRef {
        id: String::new(),
        name: String::new(),
        arn: String::new(),
    };
    r.action = Some(quotatop_store::audit::Action {
        call: call.into(),
        target: target.into(),
        detail: detail.into(),
        run_id: Some("run".into()),
    });
    r
}

#[tokio::test]
async fn share_and_drill_intents_are_reconciled_and_counted_by_kind() {
    use quotatop_analysis::shares_plan::plan;
    use quotatop_model::{CapacityLimit, SharingConfig};
    let share = |name: &str, n: u32| {
        QuotaShare::new(
            name,
            vec![CapacityLimit::new("ml.p4d.24xlarge", n)],
            SharingConfig::lend(),
        )
    };
    let dir = tempfile::tempdir().unwrap();
    let log = AuditLog::new(dir.path().join("audit.jsonl"));
    // Killed between intent and outcome: a create that landed, an update that did not,
    // a delete that landed, a submission that landed, one that did not, a termination
    // whose jobs are terminated.
    let create = plan(&[], &[share("new", 2)]).remove(0);
    let update = plan(&[share("a", 1)], &[share("a", 3)]).remove(0);
    let delete = plan(&[share("old", 1)], &[]).remove(1);
    for step in [&create, &update, &delete] {
        log.append(action_intent(step.call(), step.share(), &step.detail()))
            .unwrap();
    }
    log.append(action_intent("SubmitServiceJob", "drill-1", "p4d x1"))
        .unwrap();
    log.append(action_intent("SubmitServiceJob", "drill-2", "p4d x1"))
        .unwrap();
    log.append(action_intent(
        "TerminateServiceJobs",
        "2 drill jobs",
        "drill over: j1, j2",
    ))
    .unwrap();
    let world = World {
        shares: vec![share("new", 2), share("a", 1)],
        named: HashMap::from([("drill-1".to_string(), vec!["j1".to_string()])]),
        states: HashMap::from([("j1".to_string(), (JobStatus::Failed, true))]),
    };
    let done = reconcile(
        &world,
        &log.clone().into(),
        &Operator::default(),
        &Target::default(),
    )
    .await
    .unwrap();
    let got: Vec<(String, Decision)> = done
        .iter()
        .map(|r| (r.kind.clone(), r.result.clone()))
        .collect();
    assert_eq!(
        got,
        vec![
            (
                "CreateQuotaShare".into(),
                Decision::Decided(Verdict::Landed, None)
            ),
            (
                "UpdateQuotaShare".into(),
                Decision::Decided(Verdict::DidNotLand, None)
            ),
            (
                "DeleteQuotaShare".into(),
                Decision::Decided(Verdict::Landed, None)
            ),
            (
                "SubmitServiceJob".into(),
                Decision::Decided(Verdict::Landed, None)
            ),
            (
                "SubmitServiceJob".into(),
                Decision::Decided(Verdict::DidNotLand, None)
            ),
            (
                "TerminateServiceJobs".into(),
                Decision::Decided(Verdict::Landed, None)
            ),
        ]
    );
    assert_eq!(
        tally_by_kind(&done),
        vec![
            ("CreateQuotaShare".to_string(), 1, 0),
            ("DeleteQuotaShare".to_string(), 1, 0),
            ("SubmitServiceJob".to_string(), 2, 0),
            ("TerminateServiceJobs".to_string(), 1, 0),
            ("UpdateQuotaShare".to_string(), 1, 0),
        ]
    );
    assert!(
        done[1]
            .line()
            .contains("UpdateQuotaShare a: did not land (read: capacityLimits ml.p4d.24xlarge 1"),
        "{}",
        done[1].line()
    );
    // Each has its outcome now; a second run has nothing to do.
    let changes = audit::changes(&audit::read_records(log.path()).unwrap());
    assert!(changes.iter().all(|c| !c.outcome_unknown()));
    assert!(changes[0].took_effect() && !changes[1].took_effect());
    let again = reconcile(
        &world,
        &log.clone().into(),
        &Operator::default(),
        &Target::default(),
    )
    .await
    .unwrap();
    assert!(again.is_empty());
}

/// A held call lands after reconcile said it had not: the next reconcile appends "landed
/// after all" (the first decision stays), the change takes effect, and a third reconcile
/// writes nothing; a "did not land" older than the window is not read again.
#[tokio::test]
async fn a_did_not_land_that_lands_later_is_corrected_by_an_appended_record() {
    let dir = tempfile::tempdir().unwrap();
    let log = AuditLog::new(dir.path().join("audit.jsonl"));
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let mut held = intent("held", 1, 50);
    held.time.clone_from(&now);
    let mut old = intent("old", 1, 60);
    old.time = "2026-01-01T00:00:00.000Z".into();
    log.append(held.clone()).unwrap();
    log.append(old).unwrap();
    let op = Operator {
        user: "bob".into(),
        ..Default::default()
    };
    let before = Jobs(HashMap::from([
        ("held".to_string(), Ok(Some(1))),
        ("old".to_string(), Ok(Some(1))),
    ]));
    let first = reconcile(&before, &log.clone().into(), &op, &Target::default())
        .await
        .unwrap();
    let results: Vec<_> = first.iter().map(|r| r.result.clone()).collect();
    assert_eq!(
        results,
        [
            Decision::Decided(Verdict::DidNotLand, Some(1)),
            Decision::Decided(Verdict::DidNotLand, Some(1))
        ]
    );
    // Both calls land now.
    let after = Jobs(HashMap::from([
        ("held".to_string(), Ok(Some(50))),
        ("old".to_string(), Ok(Some(60))),
    ]));
    let second = reconcile(&after, &log.clone().into(), &op, &Target::default())
        .await
        .unwrap();
    assert_eq!(second.len(), 1, "{second:?}");
    assert_eq!(second[0].job_id, "held");
    assert_eq!(
        second[0].result,
        Decision::Decided(Verdict::LandedLate, Some(50))
    );
    assert!(
        second[0].line().contains("landed after all"),
        "{}",
        second[0].line()
    );
    let records = audit::read_records(log.path()).unwrap();
    assert_eq!(
        records.len(),
        5,
        "two intents, two decisions, one correction"
    );
    let correction = &records[4].1;
    assert!(
        correction
            .justification
            .contains("landed after all (found not landed at "),
        "{}",
        correction.justification
    );
    let changes = audit::changes(&records);
    assert!(changes[0].took_effect());
    assert!(
        !changes[1].took_effect(),
        "outside the window: not read again"
    );
    assert_eq!(audit::verify(log.path()).map(|h| h.count), Ok(5));
    let third = reconcile(&after, &log.clone().into(), &op, &Target::default())
        .await
        .unwrap();
    assert!(third.is_empty(), "{third:?}");
    assert_eq!(audit::read_records(log.path()).unwrap().len(), 5);
}

/// Two reconciles at once (two threads, two opens of the log) that both find the change
/// landed after all write one correction between them.
#[test]
fn two_reconciles_at_once_write_one_correction() {
    fn block<F: Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }
    for round in 0..20 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let mut held = intent("held", 1, 50);
        held.time = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        AuditLog::new(&path).append(held).unwrap();
        let before = Jobs(HashMap::from([("held".to_string(), Ok(Some(1)))]));
        let op = Operator::default();
        block(reconcile(
            &before,
            &AuditLog::new(&path).into(),
            &op,
            &Target::default(),
        ))
        .unwrap();
        let results: Vec<Vec<Reconciled>> = std::thread::scope(|s| {
            let runs: Vec<_> = (0..2)
                .map(|_| {
                    s.spawn(|| {
                        let after = Jobs(HashMap::from([("held".to_string(), Ok(Some(50)))]));
                        let log = AuditLog::new(&path);
                        block(reconcile(
                            &after,
                            &log.clone().into(),
                            &Operator::default(),
                            &Target::default(),
                        ))
                        .unwrap()
                    })
                })
                .collect();
            runs.into_iter().map(|r| r.join().unwrap()).collect()
        });
        let corrections = results
            .iter()
            .flatten()
            .filter(|r| r.result == Decision::Decided(Verdict::LandedLate, Some(50)))
            .count();
        assert_eq!(corrections, 1, "round {round}: {results:?}");
        let records = audit::read_records(&path).unwrap();
        assert_eq!(
            records.len(),
            3,
            "intent, did not land, one landed after all"
        );
    }
}

#[test]
fn verdicts() {
    assert_eq!(Verdict::judge(Some(7), false, 7), Verdict::Landed);
    assert_eq!(Verdict::judge(Some(3), false, 7), Verdict::DidNotLand);
    assert_eq!(Verdict::judge(Some(7), true, 7), Verdict::Undecidable);
    assert_eq!(Verdict::judge(None, false, 7), Verdict::JobGone);
    assert_eq!(Verdict::judge(None, true, 7), Verdict::JobGone);
}

#[tokio::test]
async fn each_unknown_change_gets_one_outcome_and_landed_ones_take_effect() {
    let dir = tempfile::tempdir().unwrap();
    let log = AuditLog::new(dir.path().join("audit.jsonl"));
    // a: killed after its intent, landed. b: killed, did not land. c: killed, then a later
    // audited change d to the same job. e: killed, job gone. f: a change with an outcome.
    let a = log.append(intent("a", 1, 50)).unwrap();
    log.append(intent("b", 1, 60)).unwrap();
    log.append(intent("c", 1, 70)).unwrap();
    let d = log.append(intent("c", 70, 80)).unwrap();
    let mut d_out = d.clone();
    d_out.kind = RecordKind::Outcome;
    d_out.outcome = Some(Outcome::Succeeded { request_id: None });
    log.append(d_out).unwrap();
    log.append(intent("e", 1, 90)).unwrap();
    let jobs = Jobs(HashMap::from([
        ("a".to_string(), Ok(Some(50))),
        ("b".to_string(), Ok(Some(1))),
        ("c".to_string(), Ok(Some(80))),
        ("e".to_string(), Ok(None)),
    ]));
    let reconciler = Operator {
        user: "bob".into(),
        host: "ops-2".into(),
        ..Default::default()
    };
    let done = reconcile(&jobs, &log.clone().into(), &reconciler, &Target::default())
        .await
        .unwrap();
    let verdicts: Vec<_> = done
        .iter()
        .map(|r| (r.job_id.as_str(), r.result.clone()))
        .collect();
    assert_eq!(
        verdicts,
        [
            ("a", Decision::Decided(Verdict::Landed, Some(50))),
            ("b", Decision::Decided(Verdict::DidNotLand, Some(1))),
            ("c", Decision::Decided(Verdict::Undecidable, Some(80))),
            ("e", Decision::Decided(Verdict::JobGone, None)),
        ]
    );
    // The log still verifies, every change now has an outcome, and a's counts as made by
    // its intent's operator.
    audit::verify(log.path()).unwrap();
    let changes = audit::changes(&audit::read_records(log.path()).unwrap());
    assert!(changes.iter().all(|c| !c.outcome_unknown()));
    let took: Vec<_> = changes
        .iter()
        .filter(|c| c.took_effect())
        .map(|c| c.intent.change_id.clone())
        .collect();
    assert_eq!(took, [a.change_id.clone(), d.change_id.clone()]);
    let pcs = audit::priority_changes(&changes, "q");
    assert_eq!(pcs.len(), 2);
    assert_eq!(pcs[0].operator.as_deref(), Some("alice@ops-1"));
    // Nothing left to do the second time.
    assert!(
        reconcile(&jobs, &log.clone().into(), &reconciler, &Target::default())
            .await
            .unwrap()
            .is_empty()
    );
}

/// A change whose writer still holds its in-flight mark is left to it; once the writer is
/// gone, it is decided; an outcome written meanwhile wins.
#[tokio::test]
async fn in_flight_changes_are_left_alone_and_outcomes_never_doubled() {
    let dir = tempfile::tempdir().unwrap();
    let log = AuditLog::new(dir.path().join("audit.jsonl"));
    let mut rec = intent("a", 1, 50);
    let mark = log.begin_change(&rec.change_id).unwrap();
    rec = log.append(rec).unwrap();
    let jobs = Jobs(HashMap::from([("a".to_string(), Ok(Some(1)))]));
    let who = Operator::default();
    let done = reconcile(&jobs, &log.clone().into(), &who, &Target::default())
        .await
        .unwrap();
    assert_eq!(done[0].result, Decision::InFlight);
    // The writer finishes: its own outcome, then the mark goes.
    let mut out = rec.clone();
    out.kind = RecordKind::Outcome;
    out.outcome = Some(Outcome::Succeeded {
        request_id: Some("r-1".into()),
    });
    log.append(out.clone()).unwrap();
    drop(mark);
    assert!(
        reconcile(&jobs, &log.clone().into(), &who, &Target::default())
            .await
            .unwrap()
            .is_empty()
    );
    // A second outcome for the same change is refused under the lock.
    assert!(log.append_outcome_once(out).unwrap().is_none());
    // A writer that died without an outcome: its mark is released, the change decided.
    let rec2 = intent("a", 50, 60);
    {
        let _mark = log.begin_change(&rec2.change_id).unwrap();
        log.append(rec2).unwrap();
    }
    let done = reconcile(&jobs, &log.clone().into(), &who, &Target::default())
        .await
        .unwrap();
    assert_eq!(
        done[0].result,
        Decision::Decided(Verdict::DidNotLand, Some(1))
    );
}

/// A change made against another region, endpoint or account is left unknown, not
/// recorded as "job gone" by a client looking elsewhere.
#[tokio::test]
async fn changes_made_elsewhere_are_left_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let log = AuditLog::new(dir.path().join("audit.jsonl"));
    let mut rec = intent("a", 1, 50);
    rec.aws.region = Some("us-east-1".into());
    rec.aws.endpoint = Some("http://127.0.0.1:5566".into());
    rec.job.arn = "arn:aws:batch:us-east-1:123456789012:service-job/a".into();
    log.append(rec).unwrap();
    let jobs = Jobs(HashMap::new());
    let who = Operator::default();
    for (target, want) in [
        (
            Target {
                region: Some("eu-west-1".into()),
                endpoint: Some("http://127.0.0.1:5566".into()),
                account: None,
            },
            "region us-east-1",
        ),
        (
            Target {
                region: Some("us-east-1".into()),
                endpoint: Some("http://127.0.0.1:7777".into()),
                account: None,
            },
            "endpoint http://127.0.0.1:5566",
        ),
        (
            Target {
                region: Some("us-east-1".into()),
                endpoint: Some("http://127.0.0.1:5566".into()),
                account: Some("999999999999".into()),
            },
            "account 123456789012",
        ),
    ] {
        let done = reconcile(&jobs, &log.clone().into(), &who, &target)
            .await
            .unwrap();
        match &done[0].result {
            Decision::LeftUnknown(why) => assert!(why.contains(want), "{why}"),
            other => panic!("{other:?}"),
        }
    }
    let changes = audit::changes(&audit::read_records(log.path()).unwrap());
    assert!(changes[0].outcome_unknown());
}

#[test]
fn the_writers_own_outcome_wins_over_a_reconciled_one() {
    let dir = tempfile::tempdir().unwrap();
    let log = AuditLog::new(dir.path().join("audit.jsonl"));
    let rec = log.append(intent("a", 1, 50)).unwrap();
    let mut reconciled = rec.clone();
    reconciled.kind = RecordKind::Outcome;
    reconciled.outcome = Some(Outcome::Reconciled {
        verdict: Verdict::DidNotLand,
        observed_priority: Some(1),
        observed: None,
        call_error: None,
    });
    log.append(reconciled).unwrap();
    let mut own = rec.clone();
    own.kind = RecordKind::Outcome;
    own.outcome = Some(Outcome::Succeeded {
        request_id: Some("r-9".into()),
    });
    log.append(own).unwrap();
    let changes = audit::changes(&audit::read_records(log.path()).unwrap());
    assert_eq!(changes.len(), 1);
    assert!(changes[0].took_effect());
}

#[tokio::test]
async fn an_unreadable_job_is_left_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let log = AuditLog::new(dir.path().join("audit.jsonl"));
    log.append(intent("a", 1, 50)).unwrap();
    let jobs = Jobs(HashMap::from([(
        "a".to_string(),
        Err(ApiFailure("throttled".to_string())),
    )]));
    let done = reconcile(
        &jobs,
        &log.clone().into(),
        &Operator::default(),
        &Target::default(),
    )
    .await
    .unwrap();
    assert_eq!(
        done[0].result,
        Decision::LeftUnknown("cannot read the job: throttled".to_string())
    );
    assert!(done[0].line().contains("left unknown"));
    let changes = audit::changes(&audit::read_records(log.path()).unwrap());
    assert!(changes[0].outcome_unknown());
}

/// A termination landed only when every one of its jobs ended: one job still running means it
/// did not land; one finished on its own (not terminated) leaves it undecidable.
#[tokio::test]
async fn a_termination_lands_only_when_all_its_jobs_ended() {
    let world = |second: (JobStatus, bool)| World {
        shares: vec![],
        named: HashMap::new(),
        states: HashMap::from([
            ("j1".to_string(), (JobStatus::Failed, true)),
            ("j2".to_string(), second),
        ]),
    };
    let intent = action_intent("TerminateServiceJobs", "2 drill jobs", "drill over: j1, j2");
    for (second, want) in [
        ((JobStatus::Running, false), Verdict::DidNotLand),
        ((JobStatus::Succeeded, false), Verdict::Undecidable),
        ((JobStatus::Failed, true), Verdict::Landed),
    ] {
        let (got, _, seen) = read_back(&world(second), &intent, false).await.unwrap();
        assert_eq!(got, want, "j2 {second:?}: {seen:?}");
    }
}
