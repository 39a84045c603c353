//! A refresh's errors reach `:messages` whole, not only the status bar (cut to its width).

use crate::{App, Msg};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use quotatop_analysis::fixture;
use quotatop_model::{HealthState, PollHealth, SharingConfig, Snapshot};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

fn key(code: KeyCode) -> Msg {
    Msg::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

#[test]
fn a_refresh_s_errors_are_kept_in_messages_once_each() {
    let mut q = fixture::queue(&[("alpha", "ml.g5.12xlarge", 4, SharingConfig::lend())]);
    q.stale_reason = Some("queue discovery failed: DescribeJobQueues timed out".into());
    let expired = "ListServiceJobs: credentials expired — refresh them (aws sso login, a new session token, or your credential process; ExpiredTokenException: The security token included in the request is expired)";
    let snap = Snapshot {
        queues: vec![q],
        health: PollHealth {
            state: HealthState::Expired,
            last_error: Some(expired.into()),
            ..PollHealth::default()
        },
        ..Snapshot::default()
    };
    let mut app = App::new(crate::test_app::options());
    // Three refreshes with the same errors: each is kept once.
    for _ in 0..3 {
        app.update(Msg::Snapshot(Box::new(snap.clone())));
    }
    app.update(key(KeyCode::Char(':')));
    for c in "messages".chars() {
        app.update(key(KeyCode::Char(c)));
    }
    app.update(key(KeyCode::Enter));
    assert!(app.messages_open());
    let Ok(mut terminal) = Terminal::new(TestBackend::new(100, 30)) else {
        panic!("test backend");
    };
    let _ = terminal.draw(|f| app.draw(f));
    let buf = terminal.backend().buffer();
    let w = usize::from(buf.area.width);
    let text: String = buf
        .content()
        .chunks(w)
        .map(|row| {
            let l: String = row.iter().map(|c| c.symbol()).collect();
            l.trim_matches(|c: char| c == '│' || c.is_whitespace())
                .to_string()
                + " "
        })
        .collect();
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("Messages (2)"), "{flat}");
    assert!(
        flat.contains("credentials expired — refresh them")
            && flat.contains("The security token included in the request is expired"),
        "{flat}"
    );
    assert!(
        flat.contains("stale: queue discovery failed: DescribeJobQueues timed out"),
        "{flat}"
    );
    assert!(!flat.contains("no messages"), "{flat}");
}
