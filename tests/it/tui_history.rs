//! History in the console through the real loop and a real journal file: time travel (step
//! back and forth through the recorded snapshots, `:at`, back to live, clearly marked as past,
//! live data and sparklines kept apart) and the Preemptions screen widened by the journal.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::tui_support::{NOW, Step, options, screen_text, snapshot, typed};
use insta::assert_snapshot;
use quotatop::services::JournalReader;
use quotatop_model::{JobStatus, Millis, Snapshot};
use quotatop_store::journal::{Journal, JournalConfig};
use quotatop_tui::data::HISTORY_LEN;
use quotatop_tui::effects::Services;
use quotatop_tui::screen::Kind;
use quotatop_tui::theme::Role;
use quotatop_tui::{App, AppOptions, History, StatusInfo};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

const MIN: Millis = 60_000;

/// The fixture as it was `minutes` ago (local and service clocks moved back alike).
fn ago(minutes: i64, sequence: u64) -> Snapshot {
    let mut s = snapshot();
    let t = NOW - minutes * MIN;
    s.taken_at = t;
    s.sequence = sequence;
    for q in &mut s.queues {
        q.server_time = Some(t);
        q.refreshed_at = Some(t);
    }
    s
}

/// 20 and 10 minutes ago. Twenty minutes ago the queue also had `retired-sweep`, preempted
/// three times and since gone from the listing (the live fixture does not have it).
fn recorded() -> [Snapshot; 2] {
    let mut early = ago(20, 1);
    let q = &mut early.queues[0];
    let mut retired = q
        .jobs
        .iter()
        .find(|j| j.job.name == "video-pretrain")
        .cloned()
        .unwrap();
    std::sync::Arc::make_mut(&mut retired.job).id = "retired-0000".into();
    std::sync::Arc::make_mut(&mut retired.job).name = "retired-sweep".into();
    retired.arn = "arn:aws:batch:us-east-1:123456789012:service-job/retired-0000".into();
    std::sync::Arc::make_mut(&mut retired.job).status = JobStatus::Runnable;
    if let Some(p) = &mut std::sync::Arc::make_mut(&mut retired.job).preemption {
        p.recent_preempted_attempts.truncate(3);
        p.preempted_attempt_count = 3;
    }
    q.jobs.push(retired);
    [early, ago(10, 2)]
}

fn journal(dir: &Path) -> PathBuf {
    let path = dir.join("journal.sqlite3");
    let cfg = JournalConfig {
        snapshot_interval_ms: 1,
        ..JournalConfig::default()
    };
    let mut j = Journal::open(&path, cfg).unwrap();
    for s in recorded() {
        j.record(&s).unwrap();
    }
    path
}

fn services(path: PathBuf) -> Services {
    Services {
        history: Some(Arc::new(JournalReader {
            location: path.into(),
            spark_len: HISTORY_LEN,
        })),
        ..Services::default()
    }
}

/// What the script does, in order, each step given time for the background reads it starts.
/// The real loop on a `TestBackend`: the live fixture first, then the steps.
async fn drive(
    width: u16,
    height: u16,
    opts: AppOptions,
    services: Services,
    steps: Vec<Step>,
) -> (Terminal<TestBackend>, App) {
    crate::tui_support::drive_steps(width, height, opts, services, snapshot(), steps).await
}

/// [`drive`] with the fixture's options and one run of keys.
async fn keys(
    width: u16,
    height: u16,
    services: Services,
    keys: &'static str,
) -> (Terminal<TestBackend>, App) {
    drive(width, height, options(), services, vec![Step::Keys(keys)]).await
}

fn line(t: &Terminal<TestBackend>, y: usize) -> String {
    screen_text(t)
        .lines()
        .nth(y)
        .unwrap_or_default()
        .to_string()
}

#[tokio::test]
async fn stepping_back_shows_the_recorded_snapshot_marked_as_past() {
    let dir = tempfile::tempdir().unwrap();
    let (t, app) = keys(110, 30, services(journal(dir.path())), "[").await;
    // The newest recorded snapshot before the live one: 10 minutes ago, 2 of 2.
    assert_eq!(app.past_at(), Some(NOW - 10 * MIN));
    let top = line(&t, 0);
    assert!(top.contains("PAST 2026-02-02 02:30:00Z"), "{top}");
    let second = line(&t, 1);
    assert!(second.contains("recorded 10m"), "{second}");
    assert!(second.contains("(2/2)"), "{second}");
    assert!(second.contains("[ older ] newer L live"), "{second}");
    // The badge and every screen border are drawn in the past role.
    let theme = app.theme();
    let buf = t.backend().buffer();
    let badge_x = top.find("PAST").unwrap() as u16;
    let badge = buf[(badge_x, 0)].style();
    let past = theme.style(Role::Past);
    assert_eq!((badge.fg, badge.bg), (past.fg, past.bg));
    assert_eq!(buf[(0, 2)].symbol(), "┌");
    // Borders take the badge's colour as foreground only, so titles on them stay readable.
    let border = buf[(0, 2)].style();
    assert_eq!(border.fg, past.bg);
    assert_ne!(border.fg, theme.style(Role::Border).fg);
    assert_ne!(buf[(1, 2)].style().bg, past.bg);
    assert_snapshot!(t.backend());

    // At 80 columns the badge and the way back still show.
    let (t, _) = keys(
        80,
        24,
        services(journal(tempfile::tempdir().unwrap().path())),
        "[",
    )
    .await;
    assert!(
        line(&t, 0).starts_with(" PAST 2026-02-02 02:30:00Z"),
        "{}",
        line(&t, 0)
    );
    assert!(line(&t, 1).contains("L live"), "{}", line(&t, 1));
}

#[tokio::test]
async fn stepping_through_history_and_back_to_live() {
    let dir = tempfile::tempdir().unwrap();
    let path = journal(dir.path());
    // Two steps back: the oldest; a third finds nothing older and stays.
    let (t, app) = keys(100, 30, services(path.clone()), "[[[").await;
    assert_eq!(app.past_at(), Some(NOW - 20 * MIN));
    assert!(line(&t, 1).contains("(1/2)"));
    assert!(screen_text(&t).contains("oldest recorded snapshot"));
    // The past view has what was there then: retired-sweep is in its job list.
    assert!(app.shown().job(None, "retired-0000").is_some());
    assert!(app.live_data().job(None, "retired-0000").is_none());
    // Forward again, then past the newest: live, and said so.
    let (t, app) = keys(100, 30, services(path.clone()), "[[]").await;
    assert_eq!(app.past_at(), Some(NOW - 10 * MIN));
    assert!(line(&t, 1).contains("(2/2)"));
    let (t, app) = keys(100, 30, services(path.clone()), "[]").await;
    assert_eq!(app.past_at(), None);
    assert!(!line(&t, 0).contains("PAST"));
    assert!(
        screen_text(&t).contains("live again"),
        "{}",
        screen_text(&t)
    );
    // L leaves from anywhere.
    let (_, app) = keys(100, 30, services(path), "[[L").await;
    assert_eq!(app.past_at(), None);
}

#[tokio::test]
async fn at_goes_to_the_snapshot_in_force_then() {
    let dir = tempfile::tempdir().unwrap();
    let path = journal(dir.path());
    // The clock says NOW + 1 s: 15 minutes ago the 20-minute-old snapshot was in force.
    let (_, app) = keys(100, 30, services(path.clone()), ":at 15m\n").await;
    assert_eq!(app.past_at(), Some(NOW - 20 * MIN));
    let (_, app) = keys(
        100,
        30,
        services(path.clone()),
        ":at 2026-02-02T02:35:00Z\n",
    )
    .await;
    assert_eq!(app.past_at(), Some(NOW - 10 * MIN));
    // Before anything was recorded: the oldest kept, and said so.
    let (t, app) = keys(100, 30, services(path.clone()), ":at 3d\n").await;
    assert_eq!(app.past_at(), Some(NOW - 20 * MIN));
    assert!(screen_text(&t).contains("the journal goes back only to"));
    // A time not yet past is the live data.
    let (_, app) = keys(
        100,
        30,
        services(path.clone()),
        "[:at 2030-01-01T00:00:00Z\n",
    )
    .await;
    assert_eq!(app.past_at(), None);
    let (t, app) = keys(100, 30, services(path), ":at soon\n").await;
    assert_eq!(app.past_at(), None);
    assert!(screen_text(&t).contains("bad duration"));
}

/// Live snapshots keep arriving while the console shows the past: the screens stay on the
/// past, the live data and its sparkline history take the new snapshot, and the past's
/// sparklines come from the journal's usage samples, never from the live session.
#[tokio::test]
async fn live_data_keeps_updating_underneath_and_stays_apart() {
    let dir = tempfile::tempdir().unwrap();
    let mut newer = snapshot();
    newer.taken_at += 5_000;
    newer.sequence += 1;
    newer.queues[0]
        .jobs
        .retain(|j| j.job.name != "video-pretrain");
    let (t, app) = drive(
        110,
        30,
        options(),
        services(journal(dir.path())),
        vec![Step::Keys("["), Step::Live(newer), Step::Keys("2")],
    )
    .await;
    assert_eq!(app.past_at(), Some(NOW - 10 * MIN));
    assert_eq!(app.screen_kind(), Kind::Jobs);
    // The Jobs screen shows the past (video-pretrain was there 10 minutes ago) …
    assert!(screen_text(&t).contains("video-pretrain"));
    // … while the live data moved on.
    assert_eq!(app.live_data().snapshot.as_ref().unwrap().sequence, 8);
    assert!(
        app.live_data()
            .queue(None)
            .unwrap()
            .0
            .jobs
            .iter()
            .all(|j| j.job.name != "video-pretrain")
    );
    // Two live snapshots: two samples per live series; the past's series are the journal's.
    let key = |d: &quotatop_tui::data::Data| {
        d.history("ml-training", "research", "ml.p4d.24xlarge")
            .map(|h| h.len())
    };
    assert_eq!(key(app.live_data()), Some(2));
    assert_eq!(
        key(app.shown()),
        Some(2),
        "one usage sample per recorded snapshot"
    );
    // And going live shows the newest live data at once.
    let (t, app) = keys(
        110,
        30,
        services(journal(tempfile::tempdir().unwrap().path())),
        "[2L",
    )
    .await;
    assert_eq!(app.past_at(), None);
    assert!(screen_text(&t).contains("video-pretrain"));
}

#[tokio::test]
async fn priority_changes_are_refused_in_the_past() {
    let dir = tempfile::tempdir().unwrap();
    let (t, app) = keys(110, 30, services(journal(dir.path())), "2[p").await;
    assert!(app.dialog().is_none());
    assert!(
        screen_text(&t).contains("you are looking at the past"),
        "{}",
        screen_text(&t)
    );
}

#[tokio::test]
async fn without_history_time_travel_says_why() {
    let mut opts = options();
    opts.status = StatusInfo {
        history: History::Off,
        ..StatusInfo::default()
    };
    let (t, app) = drive(100, 30, opts, Services::default(), vec![Step::Keys("[")]).await;
    assert_eq!(app.past_at(), None);
    assert!(screen_text(&t).contains("time travel needs history"));
}

/// The Preemptions screen reads the journal: retired-sweep, gone from the API's listing, is
/// there (flagged `journal`), and the title names both sources.
#[tokio::test]
async fn preemptions_screen_adds_the_journal_history() {
    let dir = tempfile::tempdir().unwrap();
    let (t, app) = keys(120, 30, services(journal(dir.path())), "3").await;
    let text = screen_text(&t);
    assert!(text.contains("API + journal history"), "{text}");
    // The figure says what it is: the held time of the preempted attempts recorded (not the
    // Scorecard's waste, which is lost + restart overhead over the Scorecard's window).
    assert!(text.contains("GPU-h held by preempted attempts"), "{text}");
    let row = text
        .lines()
        .find(|l| l.contains("retired-sweep"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(row.contains("journal"), "{row}");
    let (_, v) = app.shown().queue(None).unwrap();
    let retired = v
        .preemptions
        .iter()
        .find(|f| f.job_id == "retired-0000")
        .unwrap();
    assert!(retired.journal_only);
    assert_eq!(retired.count, 3);
    // A job in both keeps its count (the journal saw the same four attempts the API shows).
    let video = v
        .preemptions
        .iter()
        .find(|f| f.name == "video-pretrain")
        .unwrap();
    assert_eq!((video.count, video.journal_only), (4, false));
}

/// A journal that breaks mid-session: the status bar says so, the reason is shown, and time
/// travel is refused from then on (the console itself goes on).
#[tokio::test]
async fn a_journal_that_breaks_is_shown_as_unavailable() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = services(journal(dir.path()));
    s.journal_state = Some(Arc::new(|| Some("disk I/O error".to_string())));
    let (t, app) = keys(120, 30, s, "[").await;
    assert_eq!(app.past_at(), None);
    let text = screen_text(&t);
    assert!(line(&t, 1).contains("history unavailable"), "{text}");
    assert!(text.contains("time travel needs history"), "{text}");
}

/// Keys pressed faster than the journal answers are kept: two quick `[` go two steps back.
#[tokio::test]
async fn quick_steps_are_not_lost() {
    let dir = tempfile::tempdir().unwrap();
    let (_, app) = crate::tui_support::run_services(
        100,
        30,
        options(),
        snapshot(),
        typed("[["),
        services(journal(dir.path())),
    )
    .await;
    assert_eq!(app.past_at(), Some(NOW - 20 * MIN));
}

/// The Scorecard while travelling covers the window ending at the recorded snapshot, even when
/// a live computation was still running as the step landed.
#[tokio::test]
async fn the_scorecard_in_the_past_ends_at_the_recorded_time() {
    let dir = tempfile::tempdir().unwrap();
    let path = journal(dir.path());
    let mut s = services(path.clone());
    s.scorecard = Some(quotatop::services::journal_scorecard(
        path,
        Default::default(),
    ));
    let (t, app) =
        crate::tui_support::run_services(110, 30, options(), snapshot(), typed("4["), s).await;
    assert_eq!(app.past_at(), Some(NOW - 10 * MIN));
    let quotatop_tui::scorecard::ScorecardState::Ready(view) = app.scorecard() else {
        panic!("{:?}\n{}", app.scorecard(), screen_text(&t));
    };
    // The recorded snapshot's service time is its taken_at in this fixture.
    assert_eq!(view.card.window.end, NOW - 10 * MIN + 1);
    assert!(
        line(&t, 2).contains("to 2026-02-02 02:30:00Z"),
        "{}",
        line(&t, 2)
    );
}

/// Records the changes the dialog submits and answers success.
struct Recorder(std::sync::Mutex<Vec<quotatop_tui::effects::ChangeRequest>>);

impl quotatop_tui::effects::ChangeRunner for Recorder {
    fn apply(
        &self,
        req: quotatop_tui::effects::ChangeRequest,
    ) -> quotatop_tui::effects::BoxFuture<quotatop_tui::effects::ChangeResult> {
        let result = quotatop_tui::effects::ChangeResult {
            job_id: req.preview.job_id.clone(),
            job_name: req.preview.job_name.clone(),
            new_priority: req.preview.new_priority,
            result: Ok(quotatop_tui::effects::ChangeOutcome::Succeeded { request_id: None }),
            warning: None,
            audit_log: None,
        };
        self.0.lock().unwrap().push(req);
        Box::pin(async move { result })
    }
}

/// The live fixture one refresh later, with an urgent job queued in research (ahead of any
/// priority below 9000).
fn with_urgent_job() -> Snapshot {
    let mut changed = snapshot();
    changed.sequence += 1;
    changed.taken_at += 1_000;
    let q = &mut changed.queues[0];
    let mut urgent = q
        .jobs
        .iter()
        .find(|j| j.job.name == "research-sweep-04")
        .cloned()
        .unwrap();
    std::sync::Arc::make_mut(&mut urgent.job).id = "urgent-0001".into();
    std::sync::Arc::make_mut(&mut urgent.job).name = "urgent-eval".into();
    urgent.arn = "arn:aws:batch:us-east-1:123456789012:service-job/urgent-0001".into();
    std::sync::Arc::make_mut(&mut urgent.job).priority = 9_000;
    q.jobs.push(urgent);
    changed
}

/// Services whose priority changes are only recorded.
fn recording() -> (Arc<Recorder>, Services) {
    let recorder = Arc::new(Recorder(std::sync::Mutex::new(Vec::new())));
    let services = Services {
        changes: Some(recorder.clone() as Arc<dyn quotatop_tui::effects::ChangeRunner>),
        ..Services::default()
    };
    (recorder, services)
}

/// A preview left open while the queue changes is not applied as shown: Enter first shows the
/// new prediction, and only the next Enter applies it. After the change the dialog shows the
/// new priority as current.
#[tokio::test]
async fn a_stale_preview_is_shown_again_before_it_is_applied() {
    let open = ":job research-sweep-04\np50\tincident 4711 rerun\n";
    let (recorder, services) = recording();
    let (t, app) = drive(
        110,
        34,
        options(),
        services,
        vec![
            Step::Keys(open),
            Step::Live(with_urgent_job()),
            Step::Keys("\n"),
        ],
    )
    .await;
    assert!(recorder.0.lock().unwrap().is_empty(), "nothing applied yet");
    let text = screen_text(&t);
    assert!(
        text.contains("the prediction changed since you read it"),
        "{text}"
    );
    assert!(text.contains("position was 2 → 1, now 3 → 2"), "{text}");
    assert!(app.dialog().is_some());

    // Same again, then Enter on the new preview applies it.
    let (recorder, services) = recording();
    let (t, _) = drive(
        110,
        34,
        options(),
        services,
        vec![
            Step::Keys(open),
            Step::Live(with_urgent_job()),
            Step::Keys("\n\n"),
        ],
    )
    .await;
    let sent = recorder.0.lock().unwrap();
    assert_eq!(sent.len(), 1);
    // What was applied is the new prediction: one more job ahead in the share now.
    let p = &sent[0].preview;
    assert_eq!(p.new_priority, 50);
    assert_eq!(p.new_position, Some(2), "{p:?}");
    let text = screen_text(&t);
    assert!(text.contains("current priority 50"), "{text}");
}

/// `:at` with a time of day reads it on the data's clock, the one the PAST badge shows, even
/// when the service's clock and this machine's disagree (here the service runs 5 h behind).
#[tokio::test]
async fn at_a_time_of_day_uses_the_data_clock() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite3");
    let cfg = JournalConfig {
        snapshot_interval_ms: 1,
        ..JournalConfig::default()
    };
    let mut j = Journal::open(&path, cfg).unwrap();
    for mut s in recorded() {
        for q in &mut s.queues {
            q.server_time = q.server_time.map(|t| t - 5 * 60 * MIN + 250);
        }
        j.record(&s).unwrap();
    }
    drop(j);
    // 02:30 local is 21:30 (the day before) on the service's clock.
    let (t, app) = keys(
        110,
        30,
        services(path.clone()),
        ":at 2026-02-01T21:31:00Z\n",
    )
    .await;
    assert_eq!(app.past_at(), Some(NOW - 10 * MIN));
    assert!(
        line(&t, 0).starts_with(" PAST 2026-02-01 21:30:00Z"),
        "{}",
        line(&t, 0)
    );
    // The badge's own time (shown to the second; the data's is to the millisecond) finds
    // that snapshot.
    let (_, app) = keys(
        110,
        30,
        services(path.clone()),
        ":at 2026-02-01T21:30:00Z\n",
    )
    .await;
    assert_eq!(app.past_at(), Some(NOW - 10 * MIN));
    // Before the data's first time: the oldest, and the message names the badge's clock.
    let (t, app) = keys(110, 30, services(path), ":at 2026-02-01T12:00:00Z\n").await;
    assert_eq!(app.past_at(), Some(NOW - 20 * MIN));
    assert!(
        screen_text(&t).contains("goes back only to 2026-02-01 21:20:00Z"),
        "{}",
        screen_text(&t)
    );
}

/// At 80 columns the Jobs screen has no reason column; a job the service refuses to place is
/// still marked.
#[tokio::test]
async fn narrow_jobs_screen_marks_misconfigured_jobs() {
    let (t, _) = crate::tui_support::run(80, 24, options(), typed("2/MISCONF\n")).await;
    let text = screen_text(&t);
    assert!(text.contains("MISCONFIG"), "{text}");
}

/// Job detail says when it lists fewer preempted attempts than the job had.
#[tokio::test]
async fn job_detail_says_when_older_attempts_are_not_kept() {
    let mut s = snapshot();
    if let Some(j) = s.queues[0]
        .jobs
        .iter_mut()
        .find(|j| j.job.name == "video-pretrain")
        && let Some(p) = &mut std::sync::Arc::make_mut(&mut j.job).preemption
    {
        p.preempted_attempt_count = 6;
    }
    // Tall enough for the "why it waits" section above the attempts.
    let (t, _) =
        crate::tui_support::run_with(110, 60, options(), vec![s], typed(":job video-pretrain\n"))
            .await;
    let text = screen_text(&t);
    assert!(text.contains("Preemptions (6)"), "{text}");
    assert!(
        text.contains("2 older preempted attempt(s) not listed"),
        "{text}"
    );
}

/// The attempts pane scrolls: Tab moves the focus to it, and End reaches the oldest attempt of
/// a job with more attempts than the pane has rows. Moving in the jobs list again resets it.
#[tokio::test]
async fn the_attempts_pane_scrolls() {
    let mut s = snapshot();
    if let Some(j) = s.queues[0]
        .jobs
        .iter_mut()
        .find(|j| j.job.name == "video-pretrain")
        && let Some(p) = &mut std::sync::Arc::make_mut(&mut j.job).preemption
    {
        let base = p.recent_preempted_attempts[0].clone();
        p.recent_preempted_attempts = (0..12)
            .map(|i| quotatop_model::PreemptedAttempt {
                resource_id: format!("attempt-{i:02}"),
                started_at: Some(NOW - (i + 2) * 10 * MIN),
                stopped_at: NOW - (i + 1) * 10 * MIN - 7_000 - i * 1_000,
                ..base.clone()
            })
            .collect();
        p.preempted_attempt_count = 12;
    }
    // The oldest attempt stopped at NOW - 120 min - 18 s: 00:39:42.
    let oldest = "2026-02-02 00:39:42Z";
    let (t, _) =
        crate::tui_support::run_with(110, 24, options(), vec![s.clone()], typed("3")).await;
    assert!(!screen_text(&t).contains(oldest), "{}", screen_text(&t));
    let (t, _) =
        crate::tui_support::run_with(110, 24, options(), vec![s.clone()], typed("3\tG")).await;
    assert!(screen_text(&t).contains(oldest), "{}", screen_text(&t));
    // Back in the jobs list, moving resets the pane to the newest attempts.
    let (t, _) = crate::tui_support::run_with(110, 24, options(), vec![s], typed("3\tG\tjk")).await;
    assert!(!screen_text(&t).contains(oldest), "{}", screen_text(&t));
}

/// Issue 16: `:at HH:MM[:SS]` is today on the data's clock (the fixture's data is at 02:40Z).
#[tokio::test]
async fn at_a_bare_time_of_day_is_today() {
    let dir = tempfile::tempdir().unwrap();
    let path = journal(dir.path());
    let (t, app) = keys(100, 30, services(path.clone()), ":at 02:35\n").await;
    assert_eq!(app.past_at(), Some(NOW - 10 * MIN), "{}", screen_text(&t));
    let (_, app) = keys(100, 30, services(path.clone()), ":at 02:35:00\n").await;
    assert_eq!(app.past_at(), Some(NOW - 10 * MIN));
    // Later today than the data: live.
    let (_, app) = keys(100, 30, services(path), "[:at 23:00\n").await;
    assert_eq!(app.past_at(), None);
}
