//! Issue 16, "honest states" and the small ones, driven by keys: `:queue` and `Q` keep the
//! screen, `Q` with one queue says so, config warnings stay in `:messages`, footer hints per
//! screen.

use crate::tui_support::{options, run, run_with, screen_text, snapshot, typed};
use quotatop::tui::screen::Kind;

#[tokio::test]
async fn queue_command_keeps_the_current_screen() {
    let (t, app) = run(100, 24, options(), typed("2:queue inference\n")).await;
    assert_eq!(app.screen_kind(), Kind::Jobs, "{}", screen_text(&t));
    assert!(screen_text(&t).contains("inference"), "{}", screen_text(&t));
    let (_, app) = run(100, 24, options(), typed("3Q")).await;
    assert_eq!(app.screen_kind(), Kind::Preemptions);
}

#[tokio::test]
async fn next_queue_with_one_queue_says_so() {
    let mut s = snapshot();
    s.queues.truncate(1);
    let (t, _) = run_with(100, 24, options(), vec![s], typed("Q")).await;
    let text = screen_text(&t);
    assert!(text.contains("only one queue: ml-training"), "{text}");
}
