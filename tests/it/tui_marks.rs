//! Marks and the dialogs acting on several jobs: marks kept by job id across a refresh, a
//! filter and a sort; `ctrl-k` on marked jobs with one failure reported per job; `ctrl-k`
//! refused in read-only mode and by the class policy; Ctrl-C cancelling the dialog only.

use std::sync::{Arc, Mutex};

use crate::tui_support::{
    Step, drive_steps, options, run, run_services, screen_text, snapshot, typed,
};
use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use quotatop_tui::effects::{
    ActRequest, ActResult, BoxFuture, ChangeOutcome, JobActions, JobResult, Services,
};
use quotatop_tui::job_act;
use quotatop_tui::{App, StatusInfo};

fn ctrl(c: char) -> Event {
    Event::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL))
}

fn keys(parts: &[Vec<Event>]) -> Vec<Event> {
    parts.concat()
}

/// The marked job ids of the first queue.
fn marked(app: &App) -> Vec<String> {
    let q = app.live_data().queues()[0].key();
    app.marks().of_queue(&q).map(str::to_string).collect()
}

fn name_of(app: &App, id: &str) -> String {
    app.live_data().queues()[0]
        .jobs
        .iter()
        .find(|t| t.job.id == id)
        .map(|t| t.job.name.clone())
        .unwrap_or_default()
}

/// Two jobs marked on Jobs stay marked (by id) after a new snapshot, a filter that hides one
/// and a sort; the title and the footer count them; `U` clears them.
#[tokio::test]
async fn marks_survive_a_refresh_a_filter_and_a_sort() {
    let steps = vec![
        Step::Keys("2  "),
        Step::Live(snapshot()),
        Step::Keys("/video-pretrain\ns"),
    ];
    let (t, app) = drive_steps(160, 30, options(), Services::default(), snapshot(), steps).await;
    let ids = marked(&app);
    assert_eq!(ids.len(), 2, "{ids:?}");
    let text = screen_text(&t);
    // The filter shows one job (not necessarily a marked one); the marks are all still there.
    assert!(text.contains("· 2 marked"), "{text}");
    assert!(text.contains(" 2 marked "), "footer: {text}");
    // The same two after clearing the filter, and `U` unmarks them.
    let (_, app) = drive_steps(
        160,
        30,
        options(),
        Services::default(),
        snapshot(),
        vec![
            Step::Keys("2  "),
            Step::Live(snapshot()),
            Step::Keys("/x\n\x1bU"),
        ],
    )
    .await;
    assert!(marked(&app).is_empty());
}

/// Marking all shown marks the filter's rows only.
#[tokio::test]
async fn mark_all_marks_the_rows_shown() {
    let script = keys(&[typed("2/research\n"), vec![ctrl(' ')]]);
    let (_, app) = run(160, 30, options(), script).await;
    let ids = marked(&app);
    let q = &app.live_data().queues()[0];
    let shown = q
        .jobs
        .iter()
        .filter(|t| t.job.name.contains("research") || t.job.share.contains("research"))
        .count();
    assert!(shown > 2 && shown < q.jobs.len());
    assert_eq!(ids.len(), shown, "{ids:?}");
}

/// A fake terminate service: fails the jobs whose name contains `fail`, records each request.
struct FakeActions {
    fail: &'static str,
    calls: Arc<Mutex<Vec<ActRequest>>>,
}

impl JobActions for FakeActions {
    fn run(&self, req: ActRequest) -> BoxFuture<ActResult> {
        self.calls.lock().unwrap().push(req.clone());
        let fail = self.fail;
        Box::pin(async move {
            let jobs = req
                .jobs
                .iter()
                .map(|j| JobResult {
                    job_id: j.id.clone(),
                    job_name: j.name.clone(),
                    result: if j.name.contains(fail) {
                        Ok(ChangeOutcome::Failed {
                            error: "ClientException: job already ended".into(),
                        })
                    } else {
                        Ok(ChangeOutcome::Succeeded {
                            request_id: Some("req-1".into()),
                        })
                    },
                    detail: None,
                })
                .collect();
            ActResult {
                act: req.act,
                jobs,
                audit_log: Some("/tmp/audit.jsonl".into()),
            }
        })
    }
}

fn with_actions(fail: &'static str) -> (Services, Arc<Mutex<Vec<ActRequest>>>) {
    let calls = Arc::new(Mutex::new(Vec::new()));
    let services = Services {
        actions: Some(Arc::new(FakeActions {
            fail,
            calls: Arc::clone(&calls),
        })),
        ..Services::default()
    };
    (services, calls)
}

/// Marks two jobs on Jobs, filtered to research: the first two rows of the filter.
fn mark_two_then_kill(rest: &str) -> Vec<Event> {
    keys(&[
        typed("2/research-sweep-0\n  "),
        vec![ctrl('k')],
        typed(rest),
    ])
}

/// `ctrl-k` on two marked jobs: one request with both and one justification; the
/// dialog lists each job's result, the failure named; the succeeded one is unmarked, the
/// failed one stays marked.
#[tokio::test]
async fn terminate_marked_jobs_reports_each_result_with_one_failure() {
    // Which two jobs the keys mark: learnt first, so the fake fails the first of them.
    let (t, app) = run(160, 30, options(), typed("2/research-sweep-0\n  ")).await;
    let ids = marked(&app);
    assert_eq!(ids.len(), 2, "{}", screen_text(&t));
    let failing: &'static str = Box::leak(name_of(&app, &ids[0]).into_boxed_str());
    let (services, calls) = with_actions(failing);
    let script = mark_two_then_kill("incident 4711: freeing p4d\n\n");
    let (t, app) = run_services(160, 40, options(), snapshot(), script, services).await;
    let text = screen_text(&t);
    let reqs = calls.lock().unwrap().clone();
    assert_eq!(reqs.len(), 1, "{text}");
    assert_eq!(reqs[0].jobs.len(), 2);
    assert_eq!(reqs[0].justification, "incident 4711: freeing p4d");
    let d = app.job_act().expect("the dialog shows the results");
    let job_act::Step::Done(done) = &d.step else {
        panic!("not done: {:?}\n{text}", d.step);
    };
    assert_eq!(done.len(), 2);
    assert!(
        text.contains("2 of 2 answered · 1 succeeded · 1 failed"),
        "{text}"
    );
    assert!(
        text.contains("failed: ClientException: job already ended"),
        "{text}"
    );
    assert!(text.contains("✓"), "{text}");
    // The failed job stays marked (to try again), the other is unmarked.
    assert_eq!(marked(&app), vec![ids[0].clone()]);
}

/// Read-only mode refuses `ctrl-k` before any dialog, in the words `p` uses.
#[tokio::test]
async fn ctrl_k_is_refused_in_read_only_mode() {
    let mut opts = options();
    opts.status = StatusInfo {
        read_only: true,
        ..StatusInfo::default()
    };
    let (services, calls) = with_actions("none");
    let script = keys(&[typed("2"), vec![ctrl('k')]]);
    let (t, app) = run_services(160, 30, opts, snapshot(), script, services).await;
    assert!(app.job_act().is_none());
    let text = screen_text(&t);
    assert!(
        text.contains("read-only mode: terminating jobs is disabled"),
        "{text}"
    );
    assert!(calls.lock().unwrap().is_empty());
}

/// The class policy decides who may terminate a class's jobs: refused before the preview, in
/// the one check's words, and nothing is sent. Ctrl-C then closes the dialog, not the console.
#[tokio::test]
async fn ctrl_k_is_refused_by_the_policy_and_ctrl_c_closes_the_dialog() {
    let text = "version = 1\n[[class]]\nname = \"sweep\"\npriority = [0, 9]\n\
                shares = [\"research\"]\nterminate = [\"nobody\"]\n";
    let policy = quotatop_policy::parse(text, "policy.toml").unwrap();
    let mut opts = options();
    opts.door = Arc::new(quotatop_analysis::gate::Door {
        rules: quotatop_analysis::gate::Rules {
            classes: quotatop_analysis::gate::Classes::Policy(Arc::new(policy)),
            ..Default::default()
        },
        who: vec!["oncall".into()],
    });
    let (services, calls) = with_actions("none");
    let script = mark_two_then_kill("incident 4711: freeing p4d\n");
    let (t, app) = run_services(160, 30, opts, snapshot(), script.clone(), services).await;
    let d = app.job_act().expect("dialog open");
    assert_eq!(d.step, job_act::Step::Edit);
    let screen = screen_text(&t);
    assert!(
        screen.contains("oncall may not terminate jobs of class sweep"),
        "{screen}"
    );
    assert!(
        screen.contains("refused by the policy policy.toml"),
        "{screen}"
    );
    assert!(calls.lock().unwrap().is_empty());
    // Ctrl-C over the typed justification asks once; again: the dialog goes, the console stays.
    let (services, _) = with_actions("none");
    let mut script = script;
    script.push(ctrl('c'));
    let (t, app) = run_services(160, 30, options(), snapshot(), script.clone(), services).await;
    assert!(app.job_act().is_some(), "{}", screen_text(&t));
    assert!(screen_text(&t).contains("ctrl-c again closes the dialog"));
    assert!(!app.should_quit());
    let (services, _) = with_actions("none");
    script.push(ctrl('c'));
    let (_, app) = run_services(160, 30, options(), snapshot(), script, services).await;
    assert!(app.job_act().is_none());
    assert!(!app.should_quit());
}

/// `space` is the Overview's expand key and Jobs' mark key: each screen gets its own action
/// (the key map resolves a shared key to the one the current screen offers).
#[tokio::test]
async fn space_expands_on_the_overview_and_marks_on_jobs() {
    let (t, app) = run(160, 30, options(), typed(" ")).await;
    let text = screen_text(&t);
    assert!(!text.contains("marks are made on"), "{text}");
    assert!(app.marks().is_empty());
    let (_, app) = run(160, 30, options(), typed("2 ")).await;
    assert_eq!(marked(&app).len(), 1);
}

/// A fake priority runner: fails the job named `fail`, records each request.
struct FakeChanges {
    fail: &'static str,
    calls: Arc<Mutex<Vec<quotatop_tui::effects::ChangeRequest>>>,
}

impl quotatop_tui::effects::ChangeRunner for FakeChanges {
    fn apply(
        &self,
        req: quotatop_tui::effects::ChangeRequest,
    ) -> BoxFuture<quotatop_tui::effects::ChangeResult> {
        self.calls.lock().unwrap().push(req.clone());
        let failed = req.preview.job_name == self.fail;
        Box::pin(async move {
            quotatop_tui::effects::ChangeResult {
                job_id: req.preview.job_id.clone(),
                job_name: req.preview.job_name.clone(),
                new_priority: req.preview.new_priority,
                result: Ok(if failed {
                    ChangeOutcome::Failed {
                        error: "ThrottlingException".into(),
                    }
                } else {
                    ChangeOutcome::Succeeded { request_id: None }
                }),
                warning: None,
                audit_log: None,
            }
        })
    }
}

/// `p` with two marks: one dialog, each job's preview listed, then one change per job with the
/// one justification, and each job's result (the failed one named).
#[tokio::test]
async fn p_on_marks_changes_each_job_and_reports_each_result() {
    let (_, app) = run(160, 30, options(), typed("2/research-sweep-0\n  ")).await;
    let ids = marked(&app);
    let failing: &'static str = Box::leak(name_of(&app, &ids[1]).into_boxed_str());
    let calls = Arc::new(Mutex::new(Vec::new()));
    let services = Services {
        changes: Some(Arc::new(FakeChanges {
            fail: failing,
            calls: Arc::clone(&calls),
        })),
        ..Services::default()
    };
    let script = typed("2/research-sweep-0\n  p7\tpaper deadline rerun\n");
    let (t, app) = run_services(160, 40, options(), snapshot(), script.clone(), services).await;
    let text = screen_text(&t);
    // One preview of the changes placed at once, above each job's own.
    assert!(
        text.contains("together: the next scheduling pass"),
        "{text}"
    );
    assert!(
        text.contains("each job's own change, computed alone"),
        "{text}"
    );
    assert!(calls.lock().unwrap().is_empty());
    let services = Services {
        changes: Some(Arc::new(FakeChanges {
            fail: failing,
            calls: Arc::clone(&calls),
        })),
        ..Services::default()
    };
    drop(app);
    let mut script = script;
    script.extend(typed("\n"));
    let (t, app) = run_services(160, 40, options(), snapshot(), script, services).await;
    let text = screen_text(&t);
    let reqs = calls.lock().unwrap().clone();
    assert_eq!(reqs.len(), 2, "{text}");
    assert!(
        reqs.iter()
            .all(|r| r.justification == "paper deadline rerun")
    );
    assert!(reqs.iter().all(|r| r.preview.new_priority == 7));
    // One action: both requests carry one batch id for their audit intents.
    let batch = reqs[0].batch.as_ref().expect("a batch").id.clone();
    assert!(
        reqs.iter().all(|r| r
            .batch
            .as_ref()
            .is_some_and(|b| b.preview.contains("together: the next scheduling pass"))),
        "the batch's record carries the combined effect"
    );
    assert!(
        reqs.iter()
            .all(|r| r.batch.as_ref().is_some_and(|b| b.id == batch))
    );
    let job_act::Step::Done(done) = &app.job_act().expect("results").step else {
        panic!("{text}");
    };
    assert_eq!(done.len(), 2);
    assert!(
        text.contains("2 of 2 answered · 1 succeeded · 1 failed"),
        "{text}"
    );
    assert!(text.contains("failed: ThrottlingException"), "{text}");
}
