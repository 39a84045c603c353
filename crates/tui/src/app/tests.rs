use super::*;
use crate::AppOptions;
use crossterm::event::{KeyCode, KeyModifiers};

fn app(store: Option<&str>) -> App {
    App::new(AppOptions {
        theme: Theme::dark(),
        no_color: false,
        theme_dir: None,
        keymap: KeyMap::default(),
        status: StatusInfo {
            store: store.map(str::to_string),
            ..StatusInfo::default()
        },
        queue: None,
        loop_rule: LoopRule::default(),
        clock: Box::new(|| 1_000_000),
        warnings: Vec::new(),
        door: Default::default(),
        storage_price: Default::default(),
    })
}

fn flash_after_loss(mut app: App) -> String {
    app.update(Msg::JournalState(Some("connection refused".into())));
    app.flash.map(|f| f.text).unwrap_or_default()
}

/// A console writing its journal goes on without recording; one following a store says
/// the store is unreachable, which snapshot it shows (its time) and that it retries.
#[test]
fn losing_the_store_says_what_a_follower_shows() {
    let own = flash_after_loss(app(None));
    assert_eq!(
        own,
        "history unavailable: connection refused; the console goes on without recording"
    );
    let mut follower = app(Some("postgresql://q@127.0.0.1:5432/q"));
    assert_eq!(
        flash_after_loss(app(Some("postgresql://q@127.0.0.1:5432/q"))),
        "store unreachable: connection refused; no snapshot yet, retrying"
    );
    follower.update(Msg::Snapshot(Box::new(Snapshot {
        taken_at: 3_723_000,
        ..Snapshot::default()
    })));
    assert_eq!(
        flash_after_loss(follower),
        "store unreachable: connection refused; showing the last snapshot from 01:02:03, retrying"
    );
}

/// Leaving a log pane tells the runner to stop its work (a follow's read under way); a pane
/// still open below another keeps it.
#[test]
fn closing_a_log_pane_forgets_its_work() {
    let mut a = app(None);
    a.push(Box::new(crate::logs::LogPane::new(
        "q".into(),
        "j-1".into(),
    )));
    a.take_effects();
    a.update(Msg::Key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE)));
    let forgot = a
        .take_effects()
        .iter()
        .filter(|e| matches!(e, Effect::Forget(Kind::Logs)))
        .count();
    assert_eq!(forgot, 1);
    // Nothing closed: nothing forgotten.
    a.update(Msg::Key(KeyEvent::new(KeyCode::Down, KeyModifiers::NONE)));
    assert!(
        !a.take_effects()
            .iter()
            .any(|e| matches!(e, Effect::Forget(_)))
    );
}
