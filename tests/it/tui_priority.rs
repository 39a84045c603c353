//! The console's priority dialog: validation as typed, the preview, read-only refusal, and the
//! confirmed change reaching a fake API and the audit log through the event loop's task.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use crate::tui_support::{P4D, options, run, run_services, run_with, screen_text, snapshot, typed};
use insta::assert_snapshot;
use quotatop::services::ApiRunner;
use quotatop_actions::{ApiFailure, JobTagger, PriorityApi};
use quotatop_model::{CapacityLimit, Snapshot};
use quotatop_store::audit::{AuditLog, AwsContext, Operator, Outcome, RecordKind, read_records};
use quotatop_tui::StatusInfo;
use quotatop_tui::effects::Services;
use quotatop_tui::priority::Step;

/// The fixture with the p4d pool full: research (in-share preemption on) holds all 6 of its
/// instances, prod its one, nlp no longer has p4d: nothing idle to borrow, so a raised research
/// job can only start by preempting a lower-priority research job.
pub fn full_pool() -> Snapshot {
    let mut s = snapshot();
    let q = &mut s.queues[0];
    for c in &mut q.environment.capacity {
        if c.instance_type == P4D {
            *c = CapacityLimit::new(P4D, 7);
        }
    }
    for share in &mut q.shares {
        match share.name.as_str() {
            "research" => share.capacity_limits = vec![CapacityLimit::new(P4D, 6)],
            "prod" => share.capacity_limits = vec![CapacityLimit::new(P4D, 1)],
            "nlp" => share.capacity_limits.retain(|c| c.instance_type != P4D),
            _ => {}
        }
    }
    s
}

/// Opens research-sweep-04 (RUNNABLE, priority 1, in research, which has in-share preemption).
const OPEN: &str = ":job research-sweep-04\np";

#[derive(Clone)]
struct FakeApi {
    result: Result<Option<String>, ApiFailure>,
    calls: Arc<Mutex<Vec<(String, u32)>>>,
}

impl PriorityApi for FakeApi {
    fn update_priority(
        &self,
        job_id: &str,
        priority: u32,
    ) -> impl Future<Output = Result<Option<String>, ApiFailure>> + Send {
        self.calls
            .lock()
            .unwrap()
            .push((job_id.to_string(), priority));
        let r = self.result.clone();
        async move { r }
    }
}

fn services(api: &FakeApi, log: &std::path::Path) -> Services {
    Services {
        changes: Some(Arc::new(ApiRunner {
            api: Arc::new(api.clone()),
            log: AuditLog::new(log).into(),
            operator: Operator {
                user: "oncall".into(),
                host: "console-host".into(),
                ..Default::default()
            },
            aws: AwsContext::default(),
            read_only: false,
            policy: None,
            tagger: None,
            rules: Default::default(),
        })),
        actions: None,
        refresh: None,
        scorecard: None,
        history: None,
        journal_state: None,
    }
}

#[tokio::test]
async fn dialog_opens_on_a_job_with_its_current_priority() {
    let (t, app) = run(100, 30, options(), typed(OPEN)).await;
    let d = app.dialog().expect("dialog open");
    assert_eq!(d.step, Step::Edit);
    let s = screen_text(&t);
    assert!(s.contains("Change priority"), "{s}");
    assert!(s.contains("current priority 1"), "{s}");
}

#[tokio::test]
async fn dialog_preview_names_the_preempted_job_and_hours_at_risk() {
    let script = format!("{OPEN}50\tincident 4711: paper deadline\n");
    let (t, app) = run_with(100, 30, options(), vec![full_pool()], typed(&script)).await;
    let d = app.dialog().expect("dialog open");
    assert!(matches!(d.step, Step::Preview(_)), "{:?}", d.step);
    let s = screen_text(&t);
    assert!(s.contains("in-share preemption"), "{s}");
    assert!(s.contains("instance-hours at risk"), "{s}");
    assert_snapshot!(t.backend());
}

#[tokio::test]
async fn typing_validation_messages() {
    for (typed_text, expect) in [
        ("abc", "\"abc\" is not a whole number"),
        ("12000", "12000 is out of range: enter 0 to 9999"),
        ("-3", "-3 is out of range"),
    ] {
        let (t, app) = run(100, 30, options(), typed(&format!("{OPEN}{typed_text}"))).await;
        assert_eq!(app.dialog().unwrap().step, Step::Edit);
        let s = screen_text(&t);
        assert!(s.contains(expect), "{typed_text}: {s}");
    }
    // Empty: shown when Enter asks for the preview.
    let (t, app) = run(100, 30, options(), typed(&format!("{OPEN}\n"))).await;
    assert_eq!(app.dialog().unwrap().step, Step::Edit);
    assert!(screen_text(&t).contains("enter a priority between 0 and 9999"));
}

#[tokio::test]
async fn justification_is_required() {
    let (t, app) = run(100, 30, options(), typed(&format!("{OPEN}50\n"))).await;
    assert_eq!(app.dialog().unwrap().step, Step::Edit);
    assert!(screen_text(&t).contains("a justification is required"));
}

#[tokio::test]
async fn large_change_needs_a_change_record() {
    let (t, app) = run(
        100,
        30,
        options(),
        typed(&format!("{OPEN}2000\tpaper deadline today\n")),
    )
    .await;
    assert_eq!(app.dialog().unwrap().step, Step::Edit);
    let s = screen_text(&t);
    assert!(s.contains("a change-record id is required"), "{s}");
    assert!(
        s.contains("required: "),
        "the field says it is required: {s}"
    );
    // With one, the preview follows.
    let (_, app) = run(
        100,
        30,
        options(),
        typed(&format!("{OPEN}2000\tpaper deadline today\tCHG-1\n")),
    )
    .await;
    assert!(matches!(app.dialog().unwrap().step, Step::Preview(_)));
}

#[tokio::test]
async fn read_only_refuses_and_shows_why() {
    let mut opts = options();
    opts.status = StatusInfo {
        read_only: true,
        read_only_from: Some("the environment variable QUOTATOP_READ_ONLY=1".into()),
        ..StatusInfo::default()
    };
    let (t, app) = run(140, 30, opts, typed(OPEN)).await;
    assert!(app.dialog().is_none());
    let s = screen_text(&t);
    assert!(
        s.contains("read-only mode: priority changes are disabled"),
        "{s}"
    );
    // Issue 29 §2.16: it names what set read-only mode.
    assert!(
        s.contains("set by the environment variable QUOTATOP_READ_ONLY=1"),
        "{s}"
    );
    assert!(s.contains("READ-ONLY"), "{s}");
}

/// Issue 29 §2.16: "ok" is not a justification: the dialog stays on the edit step and says
/// how many characters are needed and which setting asks for them.
#[tokio::test]
async fn a_short_justification_is_refused_with_the_minimum() {
    let (t, app) = run(120, 30, options(), typed(&format!("{OPEN}50\tok\n"))).await;
    let s = screen_text(&t);
    assert!(
        matches!(app.dialog().map(|d| &d.step), Some(Step::Edit)),
        "{s}"
    );
    assert!(s.contains("at least 15"), "{s}");
}

#[tokio::test]
async fn finished_job_is_refused() {
    let (t, app) = run(100, 30, options(), typed(":job regulated-review\np")).await;
    assert!(app.dialog().is_none());
    assert!(screen_text(&t).contains("has already finished"));
}

#[tokio::test]
async fn confirmed_change_reaches_the_api_and_the_audit_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.jsonl");
    let api = FakeApi {
        result: Ok(Some("req-123".into())),
        calls: Arc::new(Mutex::new(Vec::new())),
    };
    let script = format!("{OPEN}50\tincident 4711 rerun\n\n");
    let (t, app) = run_services(
        100,
        30,
        options(),
        full_pool(),
        typed(&script),
        services(&api, &log),
    )
    .await;
    let calls = api.calls.lock().unwrap().clone();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].1, 50);
    assert!(calls[0].0.ends_with("000000000003"), "{calls:?}");
    let recs = read_records(&log).unwrap();
    assert_eq!(recs.len(), 2, "intent + outcome");
    assert_eq!(recs[0].1.kind, RecordKind::Intent);
    assert_eq!(recs[0].1.justification, "incident 4711 rerun");
    assert_eq!(recs[0].1.new_priority, 50);
    assert!(recs[0].1.preview.contains("in-share preemption"));
    assert_eq!(recs[1].1.kind, RecordKind::Outcome);
    assert_eq!(
        recs[1].1.outcome,
        Some(Outcome::Succeeded {
            request_id: Some("req-123".into())
        })
    );
    assert!(matches!(
        app.dialog().unwrap().step,
        Step::Done { error: false, .. }
    ));
    assert!(screen_text(&t).contains("request req-123"));
}

#[tokio::test]
async fn api_error_is_shown_plainly_and_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.jsonl");
    let api = FakeApi {
        result: Err(ApiFailure(
            "ClientException: job research-sweep-04 is not in a state to update".into(),
        )),
        calls: Arc::new(Mutex::new(Vec::new())),
    };
    let script = format!("{OPEN}50\tincident 4711 rerun\n\n");
    let (t, app) = run_services(
        100,
        30,
        options(),
        snapshot(),
        typed(&script),
        services(&api, &log),
    )
    .await;
    assert!(matches!(
        app.dialog().unwrap().step,
        Step::Done { error: true, .. }
    ));
    let s = screen_text(&t);
    assert!(s.contains("ClientException"), "{s}");
    let recs = read_records(&log).unwrap();
    assert!(matches!(recs[1].1.outcome, Some(Outcome::Failed { .. })));
}

#[tokio::test]
async fn without_an_api_the_console_says_so() {
    let script = format!("{OPEN}50\tincident 4711 rerun\n\n");
    let (t, _) = run(100, 30, options(), typed(&script)).await;
    assert!(screen_text(&t).contains("no API connection"));
}

#[tokio::test]
async fn esc_in_the_preview_returns_to_editing_and_esc_closes() {
    let script = format!("{OPEN}50\twhy: paper deadline\n\x1b");
    let (_, app) = run(100, 30, options(), typed(&script)).await;
    assert_eq!(app.dialog().unwrap().step, Step::Edit);
    let (_, app) = run(100, 30, options(), typed(&format!("{script}\x1b"))).await;
    assert!(app.dialog().is_none());
}

/// Records the tags it is asked to put; fails when told to.
struct FakeTagger {
    fail: bool,
    calls: Mutex<Vec<(String, BTreeMap<String, String>)>>,
}

impl JobTagger for FakeTagger {
    fn tag_job(
        &self,
        arn: String,
        tags: BTreeMap<String, String>,
    ) -> Pin<Box<dyn Future<Output = Result<(), ApiFailure>> + Send + '_>> {
        self.calls.lock().unwrap().push((arn, tags));
        let fail = self.fail;
        Box::pin(async move {
            if fail {
                Err(ApiFailure(
                    "AccessDeniedException: not allowed to tag".to_string(),
                ))
            } else {
                Ok(())
            }
        })
    }
}

/// `--tag-justification` in the console: a change that was made is tagged with the
/// justification; a failed tag is reported, and the change stands.
#[tokio::test]
async fn tag_justification_tags_the_changed_job() {
    for fail in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("audit.jsonl");
        let api = FakeApi {
            result: Ok(Some("req-9".into())),
            calls: Arc::new(Mutex::new(Vec::new())),
        };
        let tagger = Arc::new(FakeTagger {
            fail,
            calls: Mutex::new(Vec::new()),
        });
        let mut s = services(&api, &log);
        s.changes = Some(Arc::new(ApiRunner {
            api: Arc::new(api.clone()),
            log: AuditLog::new(&log).into(),
            operator: Operator {
                user: "oncall".into(),
                host: "console-host".into(),
                ..Default::default()
            },
            aws: AwsContext::default(),
            read_only: false,
            policy: None,
            tagger: Some(tagger.clone() as Arc<dyn JobTagger>),
            rules: Default::default(),
        }));
        let script = format!("{OPEN}50\tincident 4711 rerun\n\n");
        let (t, _) = run_services(100, 30, options(), full_pool(), typed(&script), s).await;
        let calls = tagger.calls.lock().unwrap().clone();
        assert_eq!(calls.len(), 1);
        assert!(calls[0].0.contains("service-job/"), "{calls:?}");
        assert_eq!(
            calls[0].1["quotatop:priority-change"],
            "1->50 by oncall: incident 4711 rerun"
        );
        let head = quotatop_store::audit::verify(&log).unwrap();
        assert_eq!(
            calls[0].1["quotatop:audit-head"],
            format!("2:{}", head.hash)
        );
        let text = screen_text(&t);
        if fail {
            assert!(text.contains("tagging the job failed"), "{text}");
        } else {
            assert!(text.contains("request req-9"), "{text}");
        }
        // Either way the change was made and audited.
        assert_eq!(read_records(&log).unwrap().len(), 2);
    }
}

/// The console's dialog checks the class policy when the change is confirmed: a move into a
/// class the operator may not use is refused with the rule and reaches neither the API nor the
/// audit log; under a policy that allows it, the intent records the classes and the hash.
#[tokio::test]
async fn the_class_policy_refuses_or_stamps_a_console_change() {
    let policy_text = |operators: &str| {
        format!(
            "version = 1\n[[class]]\nname = \"sweep\"\npriority = [0, 9]\nshares = [\"research\"]\n\
             [[class]]\nname = \"paper\"\npriority = [10, 999]\nshares = [\"research\"]\noperators = [{operators}]\n"
        )
    };
    let script = format!("{OPEN}50\tincident 4711 rerun\n\n");
    for (operators, allowed) in [("\"nobody\"", false), ("\"oncall\"", true)] {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("audit.jsonl");
        let api = FakeApi {
            result: Ok(Some("req-9".into())),
            calls: Arc::new(Mutex::new(Vec::new())),
        };
        let text = policy_text(operators);
        let policy = quotatop_policy::parse(&text, "policy.toml").unwrap();
        let mut s = services(&api, &log);
        s.changes = Some(Arc::new(ApiRunner {
            api: Arc::new(api.clone()),
            log: AuditLog::new(&log).into(),
            operator: Operator {
                user: "oncall".into(),
                host: "console-host".into(),
                ..Default::default()
            },
            aws: AwsContext::default(),
            read_only: false,
            policy: None,
            tagger: None,
            rules: quotatop_analysis::gate::Rules {
                classes: quotatop_analysis::gate::Classes::Policy(Arc::new(policy)),
                ..Default::default()
            },
        }));
        let (t, app) = run_services(200, 30, options(), full_pool(), typed(&script), s).await;
        let calls = api.calls.lock().unwrap().clone();
        let screen = screen_text(&t);
        if allowed {
            assert_eq!(calls.len(), 1, "{screen}");
            let recs = read_records(&log).unwrap();
            let stamp = recs[0].1.class_policy.clone().expect("class stamp");
            assert_eq!(stamp.hash, quotatop_policy::hash(&text));
            assert_eq!(
                (stamp.class_before.as_deref(), stamp.class_after.as_deref()),
                (Some("sweep"), Some("paper"))
            );
        } else {
            assert!(calls.is_empty(), "{calls:?}");
            assert!(read_records(&log).map(|r| r.is_empty()).unwrap_or(true));
            assert!(matches!(
                app.dialog().unwrap().step,
                Step::Done { error: true, .. }
            ));
            assert!(
                screen.contains("oncall may not move a job into class paper"),
                "{screen}"
            );
        }
    }
}

/// The dialog's header follows the job while it is open: a job that starts under it is not
/// still "status RUNNABLE" (issue 45 item 11).
#[tokio::test]
async fn the_dialogs_status_follows_the_job() {
    use crate::tui_support::{Step as Drive, drive_steps};
    let mut started = snapshot();
    started.sequence += 1;
    for t in started.queues[0]
        .jobs
        .iter_mut()
        .filter(|t| t.job.name == "research-sweep-04")
    {
        Arc::make_mut(&mut t.job).status = quotatop_model::JobStatus::Running;
    }
    let steps = vec![
        Drive::Keys(":job research-sweep-04\np"),
        Drive::Live(started),
        Drive::Keys(""),
    ];
    let (t, app) = drive_steps(140, 30, options(), Services::default(), snapshot(), steps).await;
    assert!(app.dialog().is_some(), "{}", screen_text(&t));
    let s = screen_text(&t);
    assert!(s.contains("status RUNNING"), "{s}");
    assert!(!s.contains("status RUNNABLE"), "{s}");
}
