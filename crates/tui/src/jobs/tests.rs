use super::*;
use crate::{App, Msg};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use quotatop_analysis::fixture;
use quotatop_model::{SharingConfig, Snapshot};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

fn key(code: KeyCode) -> Msg {
    Msg::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

/// A console showing one queue of 50 RUNNABLE jobs in share `a`, one with a reason.
fn app() -> (App, Terminal<TestBackend>) {
    let mut q = fixture::queue(&[("a", "ml.g5.12xlarge", 4, SharingConfig::lend())]);
    q.jobs = (0..50)
        .map(|i| {
            let mut j = fixture::job(
                &format!("job-{i:02}"),
                "a",
                "ml.g5.12xlarge",
                1,
                JobStatus::Runnable,
                1,
                i,
            );
            std::sync::Arc::make_mut(&mut j.job).status_reason =
                (i == 7).then(|| "a reason".to_string());
            j
        })
        .collect();
    let (app, terminal) = crate::test_app::with_queue(q, 160, 30);
    (app, terminal)
}

/// Three frames walk no row; then the screen shows `text`.
fn frames_walk_no_row(app: &mut App, terminal: &mut Terminal<TestBackend>, text: &str) {
    let before = screen::walks();
    for _ in 0..3 {
        let _ = terminal.draw(|f| app.draw(f));
    }
    assert_eq!(screen::walks(), before, "a frame walked every row");
    let shown: String = terminal
        .backend()
        .buffer()
        .content()
        .iter()
        .map(|c| c.symbol())
        .collect();
    assert!(shown.contains(text), "{shown}");
}

/// Drawing the Jobs screen does not walk every job (at 50,000 jobs that walk cost 17 ms a
/// frame): the column widths are computed with the rows, once per snapshot, sort or filter.
#[test]
fn jobs_frames_do_not_walk_every_job() {
    let (mut app, mut terminal) = app();
    app.update(key(KeyCode::Char('2')));
    assert_eq!(app.screen_kind(), Kind::Jobs);
    frames_walk_no_row(&mut app, &mut terminal, "a reason");
    // A new sort walks them once.
    let before = screen::walks();
    app.update(key(KeyCode::Char('s')));
    assert_eq!(screen::walks(), before + 1);
    frames_walk_no_row(&mut app, &mut terminal, "a reason");
}

/// The same for a share's queued jobs.
#[test]
fn share_frames_do_not_walk_every_queued_job() {
    let (mut app, mut terminal) = app();
    for _ in 0..3 {
        app.update(key(KeyCode::Enter));
        if app.screen_kind() == Kind::Share {
            break;
        }
        app.update(key(KeyCode::Char('1')));
        app.update(key(KeyCode::Down));
    }
    assert_eq!(app.screen_kind(), Kind::Share);
    frames_walk_no_row(&mut app, &mut terminal, "a reason");
}

/// Analyses derived off the UI thread may finish out of order: one older than the snapshot
/// applied last is dropped, so the screen never goes back to older data.
#[test]
fn an_older_prepared_snapshot_arriving_late_is_dropped() {
    let (mut app, _) = app();
    let with_jobs = |n: usize| {
        let mut q = fixture::queue(&[("a", "ml.g5.12xlarge", 4, SharingConfig::lend())]);
        q.jobs = (0..n)
            .map(|i| {
                let name = format!("late-{i}");
                fixture::job(&name, "a", "ml.g5.12xlarge", 1, JobStatus::Runnable, 1, 0)
            })
            .collect();
        Snapshot {
            queues: vec![q],
            ..Snapshot::default()
        }
    };
    let older = crate::data::Prepared::new(with_jobs(1), &app.derive_inputs(), 1);
    let newer = crate::data::Prepared::new(with_jobs(3), &app.derive_inputs(), 2);
    app.update(Msg::Prepared(Box::new(newer)));
    app.update(Msg::Prepared(Box::new(older)));
    assert_eq!(app.live_data().queues()[0].jobs.len(), 3);
}

/// A console on the Jobs screen of one queue of `n` jobs whose names, priorities and
/// creation times run in different orders, applied as the loop applies a snapshot: its
/// analysis and rows derived beforehand ([`crate::data::Prepared`]).
fn large(n: usize, order: u64) -> (App, Terminal<TestBackend>) {
    let (mut app, terminal) = app();
    app.update(key(KeyCode::Char('2')));
    let prepared = crate::data::Prepared::new(snapshot(n, 0), &app.derive_inputs(), order);
    app.update(Msg::Prepared(Box::new(prepared)));
    (app, terminal)
}

/// `n` jobs; `shift` changes every job's priority (another refresh of the same queue).
fn snapshot(n: usize, shift: usize) -> Snapshot {
    let mut q = fixture::queue(&[("a", "ml.g5.12xlarge", 4, SharingConfig::lend())]);
    q.jobs = (0..n)
        .map(|i| {
            let name = format!("big-{:05}", (i * 7919) % n);
            let priority = ((i + shift) * 31 % 97) as u32;
            fixture::job(&name, "a", "ml.g5.12xlarge", 1, JobStatus::Runnable, priority, i as i64)
        })
        .collect();
    Snapshot {
        queues: vec![q],
        ..Snapshot::default()
    }
}

fn rows(app: &App) -> Vec<usize> {
    app.current_list().map(|l| l.rows.clone()).unwrap_or_default()
}

/// The rows `key` gives on the live data, made directly.
fn expected(app: &App, key: RowsKey) -> Vec<usize> {
    let q = &app.live_data().queues()[0];
    JobRows::of(q.key(), &q.jobs, key).rows
}

fn shown(app: &mut App, terminal: &mut Terminal<TestBackend>) -> String {
    let _ = terminal.draw(|f| app.draw(f));
    terminal.backend().buffer().content().iter().map(|c| c.symbol()).collect()
}

/// The Jobs screen's work the last updates asked for: the newest (the runner cancels
/// older ones).
fn jobs_work(app: &mut App) -> Option<ScreenWork> {
    app.take_effects()
        .into_iter()
        .filter_map(|e| match e {
            Effect::Screen(w) if w.screen == Kind::Jobs => Some(w),
            _ => None,
        })
        .last()
}

/// A refresh's Jobs rows come made off the UI thread with its snapshot: applying it walks
/// no row here, and they are the rows the screen's filter and sort give.
#[test]
fn a_refresh_brings_its_jobs_rows_made_off_the_ui_thread() {
    let n = SORT_AT_ONCE * 3;
    let (mut app, _) = large(n, 1);
    // A sort of the user's own, made off the UI thread once.
    app.update(key(KeyCode::Char('s')));
    let work = jobs_work(&mut app).expect("the new sort is asked for off the UI thread");
    app.update(Msg::Done(work.run(&crate::effects::ScreenServices::default())));
    let wanted = app.current_list().map(ListState::rows_key).unwrap_or_default();
    assert_eq!(wanted.sort.column, 1);
    let prepared = crate::data::Prepared::new(snapshot(n, 5), &app.derive_inputs(), 2);
    let before = screen::walks();
    app.update(Msg::Prepared(Box::new(prepared)));
    assert_eq!(screen::walks(), before, "the rows were made on the UI thread");
    assert!(jobs_work(&mut app).is_none());
    assert_eq!(rows(&app), expected(&app, wanted));
    assert_eq!(rows(&app).len(), n);
}

/// A new sort of a large queue is made off the UI thread: until it comes, the rows on
/// screen stay (a key acts on them at once) and the title says "sorting…"; then the
/// sorted rows show from the top.
#[test]
fn a_new_sort_of_a_large_queue_is_made_off_the_ui_thread() {
    let (mut app, mut terminal) = large(SORT_AT_ONCE * 3, 1);
    let before_rows = rows(&app);
    assert_eq!(before_rows, expected(&app, first_rows_key()));
    assert!(!shown(&mut app, &mut terminal).contains("sorting…"));
    let walks = screen::walks();
    app.update(key(KeyCode::Char('s')));
    assert_eq!(screen::walks(), walks, "sorted on the UI thread");
    assert_eq!(rows(&app), before_rows);
    assert!(shown(&mut app, &mut terminal).contains("sorting…"));
    let work = jobs_work(&mut app).expect("the sort asked for off the UI thread");
    app.update(key(KeyCode::Down));
    assert_eq!(app.current_list().map(|l| l.selected), Some(1));
    app.update(Msg::Done(work.run(&crate::effects::ScreenServices::default())));
    let key = app.current_list().map(ListState::rows_key).unwrap_or_default();
    assert_eq!(key.sort.column, 1);
    assert_eq!(rows(&app), expected(&app, key));
    assert_ne!(rows(&app), before_rows);
    assert_eq!(app.current_list().map(|l| l.selected), Some(0));
    assert!(!shown(&mut app, &mut terminal).contains("sorting…"));
}

/// Rows made for a snapshot replaced meanwhile index into jobs no longer shown: they are
/// not taken; the ones asked for the new snapshot are.
#[test]
fn rows_made_for_a_replaced_snapshot_are_not_taken() {
    let n = SORT_AT_ONCE * 3;
    let (mut app, _) = large(n, 1);
    let older_inputs = app.derive_inputs();
    app.update(key(KeyCode::Char('s')));
    let stale = jobs_work(&mut app).expect("the sort asked for");
    // A refresh derived before the sort key: its rows are by status.
    let prepared = crate::data::Prepared::new(snapshot(n / 2, 3), &older_inputs, 2);
    app.update(Msg::Prepared(Box::new(prepared)));
    let interim = rows(&app);
    assert_eq!(interim, expected(&app, first_rows_key()));
    let fresh = jobs_work(&mut app).expect("asked again for the new snapshot");
    app.update(Msg::Done(stale.run(&crate::effects::ScreenServices::default())));
    assert_eq!(rows(&app), interim, "rows of the replaced snapshot taken");
    app.update(Msg::Done(fresh.run(&crate::effects::ScreenServices::default())));
    let key = app.current_list().map(ListState::rows_key).unwrap_or_default();
    assert_eq!(rows(&app), expected(&app, key));
    assert_eq!(rows(&app).len(), n / 2);
}

/// A sort pressed while a refresh is derived: the refresh's rows come in the order shown
/// before (not another), titled "sorting…", until the new sort is made for it.
#[test]
fn a_sort_pressed_during_a_refresh_keeps_the_order_shown_until_it_is_made() {
    let n = SORT_AT_ONCE * 3;
    let (mut app, mut terminal) = large(n, 1);
    app.update(key(KeyCode::Char('s')));
    let work = jobs_work(&mut app).expect("the first sort asked for");
    app.update(Msg::Done(work.run(&crate::effects::ScreenServices::default())));
    let by_name = app.current_list().map(ListState::rows_key).unwrap_or_default();
    // The refresh is derived with the sort by name; then the user sorts again.
    let inputs = app.derive_inputs();
    app.update(key(KeyCode::Char('s')));
    let _ = jobs_work(&mut app);
    let prepared = crate::data::Prepared::new(snapshot(n, 9), &inputs, 2);
    app.update(Msg::Prepared(Box::new(prepared)));
    assert_eq!(rows(&app), expected(&app, by_name));
    assert!(shown(&mut app, &mut terminal).contains("sorting…"));
    let work = jobs_work(&mut app).expect("the new sort asked for the new snapshot");
    app.update(Msg::Done(work.run(&crate::effects::ScreenServices::default())));
    let by_share = app.current_list().map(ListState::rows_key).unwrap_or_default();
    assert_eq!(by_share.sort.column, 2);
    assert_eq!(rows(&app), expected(&app, by_share));
    assert!(!shown(&mut app, &mut terminal).contains("sorting…"));
}

/// A filter typed on a large queue is applied off the UI thread the same way.
#[test]
fn a_filter_on_a_large_queue_is_applied_off_the_ui_thread() {
    let (mut app, _) = large(SORT_AT_ONCE * 3, 1);
    app.update(key(KeyCode::Char('/')));
    for c in "big-0001".chars() {
        app.update(key(KeyCode::Char(c)));
    }
    app.update(key(KeyCode::Enter));
    let work = jobs_work(&mut app).expect("the filter asked for off the UI thread");
    app.update(Msg::Done(work.run(&crate::effects::ScreenServices::default())));
    let key = app.current_list().map(ListState::rows_key).unwrap_or_default();
    assert_eq!(key.filter.text, "big-0001");
    assert_eq!(rows(&app), expected(&app, key));
    assert_eq!(rows(&app).len(), 10);
}
