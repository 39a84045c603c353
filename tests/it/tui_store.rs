//! A console following a shared store (`tui --store`): the status bar names the store (its URL
//! as given, without password, cleaned of control characters) and how old the recorder's
//! snapshot is, in place of "updated … ago".

use crate::tui_support::{options, run_services, screen_text, snapshot};
use quotatop_tui::StatusInfo;
use quotatop_tui::effects::Services;

#[tokio::test]
async fn the_status_bar_says_which_store_and_how_old_its_snapshot_is() {
    let mut opts = options();
    opts.status = StatusInfo {
        // A hostile database name: the escape sequence must not reach the terminal.
        store: Some("postgresql://team@db.internal:5432/quota\u{1b}[2Jtop".into()),
        ..StatusInfo::default()
    };
    // The snapshot was taken 3 s before the console's clock (tui_support's options).
    let (t, _) = run_services(160, 24, opts, snapshot(), vec![], Services::default()).await;
    let s = screen_text(&t);
    assert!(
        s.contains("store postgresql://team@db.internal:5432/quota"),
        "{s}"
    );
    assert!(s.contains("snapshot 3s old"), "{s}");
    assert!(!s.contains("updated"), "{s}");
    assert!(!s.contains('\u{1b}'), "{s}");
}

#[tokio::test]
async fn a_polling_console_says_updated_and_names_no_store() {
    let (t, _) = run_services(160, 24, options(), snapshot(), vec![], Services::default()).await;
    let s = screen_text(&t);
    assert!(s.contains("updated 3s ago"), "{s}");
    assert!(!s.contains("store "), "{s}");
}
