//! The priority dialog's re-check before applying, through the real loop with live snapshots
//! arriving between the preview and Enter: one Enter applies when only what does not matter
//! changed (jobs queued behind the job); a changed prediction (the victims) is shown, with what
//! changed, before anything is applied. Also what the preview and the result say: the
//! justification repeated, victims one per line, the audit log's path, and "as modelled"
//! against AWS.

use std::sync::{Arc, Mutex};

use crate::tui_priority::full_pool;
use crate::tui_support::{Step, options, screen_text};
use quotatop_model::{JobStatus, Snapshot, Source};
use quotatop_tui::App;
use quotatop_tui::effects::{
    BoxFuture, ChangeOutcome, ChangeRequest, ChangeResult, ChangeRunner, Services,
};
use quotatop_tui::priority::Step as DialogStep;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

/// Records the changes the dialog submits and answers success, recorded in `audit.jsonl`.
struct Recorder(Mutex<Vec<ChangeRequest>>);

impl ChangeRunner for Recorder {
    fn apply(&self, req: ChangeRequest) -> BoxFuture<ChangeResult> {
        let result = ChangeResult {
            job_id: req.preview.job_id.clone(),
            job_name: req.preview.job_name.clone(),
            new_priority: req.preview.new_priority,
            result: Ok(ChangeOutcome::Succeeded {
                request_id: Some("01c8a94c-b727-47f9-b3dc-b3ee2b927e37".into()),
            }),
            warning: None,
            audit_log: Some("/tmp/quotatop-demo-1/audit.jsonl".into()),
        };
        self.0.lock().unwrap().push(req);
        Box::pin(async move { result })
    }
}

/// The real loop on a `TestBackend`: `first` as the live data, then the steps, each handled
/// (and every read it started done) before the next. Returns what was applied.
async fn drive(
    width: u16,
    height: u16,
    first: Snapshot,
    steps: Vec<Step>,
) -> (Terminal<TestBackend>, App, Vec<ChangeRequest>) {
    let recorder = Arc::new(Recorder(Mutex::new(Vec::new())));
    let services = Services {
        changes: Some(recorder.clone() as Arc<dyn ChangeRunner>),
        ..Services::default()
    };
    let (terminal, app) =
        crate::tui_support::drive_steps(width, height, options(), services, first, steps).await;
    let sent = std::mem::take(&mut *recorder.0.lock().unwrap());
    (terminal, app, sent)
}

/// research-sweep-04 raised to 50 with a justification: the preview.
const OPEN: &str = ":job research-sweep-04\np50\tincident 4711: paper deadline\n";

/// `base` one refresh later (a minute on), edited by `f`.
fn later(base: &Snapshot, f: impl FnOnce(&mut Snapshot)) -> Snapshot {
    let mut s = base.clone();
    s.sequence += 1;
    s.taken_at += 60_000;
    for q in &mut s.queues {
        q.server_time = q.server_time.map(|t| t + 60_000);
    }
    f(&mut s);
    s
}

/// A copy of research-sweep-04 under a new name and id, with `priority` and `status`.
fn clone_job(
    s: &Snapshot,
    name: &str,
    n: u32,
    priority: u32,
    status: JobStatus,
) -> quotatop_model::TrackedJob {
    let mut j = s.queues[0]
        .jobs
        .iter()
        .find(|j| j.job.name == "research-sweep-04")
        .cloned()
        .unwrap();
    std::sync::Arc::make_mut(&mut j.job).id = format!("{name}-id");
    std::sync::Arc::make_mut(&mut j.job).name = name.into();
    j.arn = format!("arn:aws:batch:us-east-1:123456789012:service-job/{name}-id");
    std::sync::Arc::make_mut(&mut j.job).priority = priority;
    std::sync::Arc::make_mut(&mut j.job).status = status;
    std::sync::Arc::make_mut(&mut j.job).created_at += 30 * 60_000;
    std::sync::Arc::make_mut(&mut j.job).instance_count = n;
    j
}

/// Jobs queued behind the job between the preview and Enter (the queue grows from 2 to 5)
/// change nothing the operator decided on: one Enter applies the change.
#[tokio::test]
async fn jobs_arriving_behind_do_not_ask_again() {
    let first = full_pool();
    let grown = later(&first, |s| {
        for i in 0..3 {
            let j = clone_job(s, &format!("late-{i}"), 1, 0, JobStatus::Runnable);
            s.queues[0].jobs.push(j);
        }
    });
    let (t, app, sent) = drive(
        110,
        34,
        first,
        vec![Step::Keys(OPEN), Step::Live(grown), Step::Keys("\n")],
    )
    .await;
    assert_eq!(sent.len(), 1, "one Enter applied it: {}", screen_text(&t));
    // Applied with the new figures: the queue behind it is longer.
    assert_eq!(sent[0].preview.queue_length, 5);
    assert_eq!(sent[0].preview.new_position, Some(1));
    assert!(matches!(
        app.dialog().unwrap().step,
        DialogStep::Done { error: false, .. }
    ));
}

/// The victim changed between the preview and Enter (research-sweep-03 finished and a newer,
/// lower-priority job started in its place): nothing is applied, the dialog says which victim
/// came and which went and marks it; the next Enter applies the new prediction.
#[tokio::test]
async fn a_changed_victim_is_shown_before_anything_is_applied() {
    let first = full_pool();
    let swapped = later(&first, |s| {
        let q = &mut s.queues[0];
        let old = q
            .jobs
            .iter_mut()
            .find(|j| j.job.name == "research-sweep-03")
            .unwrap();
        std::sync::Arc::make_mut(&mut old.job).status = JobStatus::Succeeded;
        std::sync::Arc::make_mut(&mut old.job).stopped_at = q.server_time;
        let mut new = clone_job(s, "fresh-run", 2, 0, JobStatus::Running);
        std::sync::Arc::make_mut(&mut new.job).scheduled_at =
            s.queues[0].server_time.map(|t| t - 120_000);
        std::sync::Arc::make_mut(&mut new.job).started_at =
            s.queues[0].server_time.map(|t| t - 60_000);
        s.queues[0].jobs.push(new);
    });
    let steps = |enters: &'static str| {
        vec![
            Step::Keys(OPEN),
            Step::Live(swapped.clone()),
            Step::Keys(enters),
        ]
    };
    // Before: the preview names research-sweep-03.
    let (t, _, _) = drive(110, 34, first.clone(), vec![Step::Keys(OPEN)]).await;
    assert!(
        screen_text(&t).contains("- research-sweep-03"),
        "{}",
        screen_text(&t)
    );

    let (t, app, sent) = drive(110, 34, first.clone(), steps("\n")).await;
    let text = screen_text(&t);
    assert!(sent.is_empty(), "nothing applied: {text}");
    assert!(matches!(app.dialog().unwrap().step, DialogStep::Preview(_)));
    assert!(
        text.contains("the prediction changed since you read it"),
        "{text}"
    );
    assert!(
        text.contains("victims: now also fresh-run; no longer research-sweep-03"),
        "{text}"
    );
    assert!(
        text.contains("+ fresh-run"),
        "the new victim is marked: {text}"
    );

    let (_, _, sent) = drive(110, 34, first, steps("\n\n")).await;
    assert_eq!(sent.len(), 1);
    let victims: Vec<&str> = sent[0]
        .preview
        .preemptions
        .candidates
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(victims, ["fresh-run"]);
}

/// The preview repeats the justification; the result names the audit log's path.
#[tokio::test]
async fn the_preview_repeats_the_justification_and_the_result_names_the_log() {
    let (t, _, _) = drive(110, 34, full_pool(), vec![Step::Keys(OPEN)]).await;
    let text = screen_text(&t);
    assert!(
        text.contains("why      incident 4711: paper deadline"),
        "{text}"
    );
    let (t, _, sent) = drive(
        110,
        34,
        full_pool(),
        vec![Step::Keys(OPEN), Step::Keys("\n")],
    )
    .await;
    assert_eq!(sent.len(), 1);
    let text = screen_text(&t);
    // The path may wrap onto its own line in the dialog.
    assert!(
        text.contains("recorded in the audit log")
            && text.contains("/tmp/quotatop-demo-1/audit.jsonl"),
        "{text}"
    );
    // At 80 columns the result wraps at words onto more rows than its width alone says, and
    // the dialog still shows its last line.
    let (t, _, _) = drive(
        80,
        24,
        full_pool(),
        vec![Step::Keys(OPEN), Step::Keys("\n")],
    )
    .await;
    let text = screen_text(&t);
    assert!(text.contains("/tmp/quotatop-demo-1/audit.jsonl"), "{text}");
    assert!(text.contains("esc close"), "{text}");
}

/// Against AWS (no endpoint override, or one that is not the loopback emulator) the preview
/// says it is as modelled; against the emulator it does not.
#[tokio::test]
async fn against_aws_the_prediction_is_as_modelled() {
    for (endpoint, modelled) in [
        (None, true),
        (Some("https://batch.us-east-1.amazonaws.com"), true),
        (Some("http://127.0.0.1:4566"), false),
    ] {
        let mut s = full_pool();
        s.source = Source {
            endpoint: endpoint.map(str::to_string),
            ..Source::default()
        };
        let (t, _, _) = drive(110, 34, s, vec![Step::Keys(OPEN)]).await;
        let text = screen_text(&t);
        assert_eq!(
            text.contains("as modelled"),
            modelled,
            "{endpoint:?}: {text}"
        );
    }
}
